"""Training demonstration of Post-Norm collapse at CPU size (arXiv 2608.09417, Sec. 4, Figs 3-6).

A deep decoder (:class:`resharpen.experiments.core.model.Transformer`, RMSNorm, SwiGLU with d_ff = 3 d, learned
positions, weights N(0, 1/(3 d)) as in the paper, the model's usual extra 1/sqrt(2 L) on the output
projections W_O and W_out) is trained with AdamW (0.9, 0.95), weight decay 0.1, gradient clipping 1.0 and a constant learning
rate without warmup on the Zipf-Markov stream of :mod:`resharpen.experiments.collapse.data`. Every step logs

    loss, L_freq(batch) (entropy of the batch's label frequencies), t_sim of the final hidden
    state and of every block's output, ||dL/dX_l|| on the residual stream entering every block,
    the parameter-gradient norm of every block and, for Post-Norm, Theorem 3.6's contraction
    factor c_k of every sublayer (:func:`contraction_factors`).

The paper's picture: at high learning rates Post-Norm collapses (t_sim -> 1, loss pinned to
L_freq, early-layer gradients falling by orders of magnitude), at low rates it trains; Pre-Norm
is the control. :func:`sweep` runs the grid; results go to ``out/collapse_train/<run>/``
(config.json, metrics.jsonl, summary.json, written atomically; finished runs are skipped).
This is a small self-contained loop, not the package's general trainer.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from resharpen.experiments.collapse.data import (markov_entropy_rate, sample_batch, stationary,
                                      zipf_markov_matrix)
from resharpen.experiments.collapse.detect import detect_collapse
from resharpen.experiments.core.model import ModelConfig, Transformer


@dataclass(frozen=True)
class TrainConfig:
    norm: str = "post"
    n_layers: int = 24
    d_model: int = 32
    n_heads: int = 2
    vocab: int = 64
    seq_len: int = 64
    batch: int = 8
    steps: int = 300
    lr: float = 1e-3
    weight_decay: float = 0.1
    clip: float = 1.0
    zipf: float = 1.2
    init_std: float | None = None  # None: the paper's 1/sqrt(3 d_model)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.norm not in ("post", "pre"):
            raise ValueError(f"norm must be 'post' or 'pre', got {self.norm!r}")
        for name in ("n_layers", "d_model", "n_heads", "seq_len", "batch", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.vocab < 2:
            raise ValueError(f"vocab must be >= 2, got {self.vocab}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        for name in ("lr", "clip", "std"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be finite and >= 0, got {self.weight_decay!r}")

    @property
    def std(self) -> float:
        return self.init_std if self.init_std is not None else 1.0 / math.sqrt(3 * self.d_model)

    @property
    def name(self) -> str:
        return f"{self.norm}_L{self.n_layers}_d{self.d_model}_lr{self.lr:g}_s{self.seed}"

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab=self.vocab, d_model=self.d_model, n_layers=self.n_layers,
                           n_heads=self.n_heads, norm=self.norm, norm_kind="rms", mlp="swiglu",
                           d_mlp=3 * self.d_model, max_len=self.seq_len, eps=1e-6,
                           init_std=self.std)


def batch_frequency_loss(labels: torch.Tensor, vocab: int) -> float:
    """L_freq of a batch: entropy (nats) of the label frequencies over all its positions."""
    p = torch.bincount(labels.reshape(-1), minlength=vocab).double() / labels.numel()
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def _t_sim(x: torch.Tensor) -> torch.Tensor:
    return (x.shape[-2] * x.mean(-2).pow(2).sum(-1) / x.pow(2).sum((-2, -1))).mean()


def contraction_factors(block_inputs: list, norm_io: list) -> list[float]:
    """Theorem 3.6's c_k = a_k max_i |g|_max sqrt(d)/|y_i| per Post-Norm sublayer k, with the
    sublayer gain a_k = ||dL/dX_k|| / ||dL/dY_k|| (X_k its residual input, Y_k = X_k + f_k(X_k),
    g the learned RMSNorm gain, which the paper's theory sets to 1), so that
    ||dL/dX_k|| <= c_k ||dL/dX_{k+1}||. Sublayer inputs alternate block input, attention-norm
    output."""
    factors = []
    for k, (y, out, gain) in enumerate(norm_io):
        x = block_inputs[k // 2] if k % 2 == 0 else norm_io[k - 1][1]
        if x.grad is None or y.grad is None or float(y.grad.norm()) == 0.0:
            factors.append(float("nan"))
            continue
        a = float(x.grad.norm() / y.grad.norm())
        jac = float(gain.abs().max() * math.sqrt(y.shape[-1]) / y.detach().norm(dim=-1).min())
        factors.append(a * jac)
    return factors


def train(cfg: TrainConfig, progress: bool = True) -> dict:
    """Train one run; return {"config", "metrics": list of per-step dicts, "summary"}."""
    torch.manual_seed(cfg.seed)
    model = Transformer(cfg.model_config())
    matrix = zipf_markov_matrix(cfg.vocab, cfg.zipf, seed=cfg.seed)
    rng = np.random.default_rng(cfg.seed + 1)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.95))
    residuals: list[torch.Tensor] = []

    def keep_input(module, args):
        args[0].retain_grad()
        residuals.append(args[0])

    handles = [b.register_forward_pre_hook(keep_input) for b in model.blocks]
    # Post-Norm: every sublayer's Y (input of its output norm) and the next X (its output)
    norm_io: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def keep_norm(module, args, output):
        args[0].retain_grad()
        output.retain_grad()
        norm_io.append((args[0], output, module.gain))

    if cfg.norm == "post":
        for b in model.blocks:
            handles.append(b.attn_norm_out.register_forward_hook(keep_norm))
            handles.append(b.mlp_norm_out.register_forward_hook(keep_norm))
    outputs: list[torch.Tensor] = []
    handles += [b.register_forward_hook(lambda m, a, o: outputs.append(o[0].detach()))
                for b in model.blocks]
    metrics = []
    iterator = range(cfg.steps)
    if progress:
        from tqdm import tqdm
        iterator = tqdm(iterator, desc=cfg.name, unit="step", disable=None, leave=False)
    start = time.perf_counter()
    for step in iterator:
        tokens = sample_batch(matrix, cfg.batch, cfg.seq_len, rng)
        inputs, labels = tokens[:, :-1], tokens[:, 1:]
        residuals.clear()
        outputs.clear()
        norm_io.clear()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            resid_grad = [float(r.grad.norm()) for r in residuals]
            block_grad = [float(torch.sqrt(sum(p.grad.pow(2).sum() for p in b.parameters()
                                               if p.grad is not None))) for b in model.blocks]
            layer_t = [float(_t_sim(o)) for o in outputs]
            factors = contraction_factors(residuals, norm_io) if cfg.norm == "post" else None
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        metrics.append({"step": step, "loss": float(loss.detach()),
                        "l_freq": batch_frequency_loss(labels, cfg.vocab),
                        "t_sim": layer_t[-1], "layer_t_sim": layer_t,
                        "resid_grad": resid_grad, "block_grad": block_grad,
                        "contraction": factors})
        if not math.isfinite(metrics[-1]["loss"]):
            break
    for h in handles:
        h.remove()
    return {"config": asdict(cfg), "metrics": metrics,
            "summary": summarize(cfg, metrics, matrix, time.perf_counter() - start)}


def stream_frequency_loss(matrix: np.ndarray) -> float:
    """L_freq of the whole stream: the entropy of its stationary unigram law (the loss of the
    best position-independent predictor in expectation; a batch's own L_freq is lower by the
    finite-sample bias of the plug-in entropy)."""
    pi = stationary(matrix)
    return float(-np.sum(pi * np.log(pi)))


def summarize(cfg: TrainConfig, metrics: list[dict], matrix: np.ndarray, seconds: float) -> dict:
    """Detection (against the stream's L_freq) plus end-of-run averages (last 10% of steps)."""
    steps = [m["step"] for m in metrics]
    l_stream = stream_frequency_loss(matrix)
    det = detect_collapse(steps, [m["t_sim"] for m in metrics], [m["loss"] for m in metrics],
                          [l_stream] * len(metrics))
    tail = metrics[-max(1, len(metrics) // 10):]
    grad_ratio = np.mean([m["resid_grad"][0] / max(m["resid_grad"][-1], 1e-300) for m in tail])
    factors = [m.get("contraction") for m in tail if m.get("contraction")]
    median_c = float(np.nanmedian(np.asarray(factors, dtype=float))) if factors else None
    return {"name": cfg.name, "norm": cfg.norm, "lr": cfg.lr,
            "collapsed": det.collapsed, "collapse_step": det.step if det.collapsed else None,
            "transient_collapse": None if det.collapsed else det.step,
            "recovered_step": det.recovered,
            "final_loss": float(np.mean([m["loss"] for m in tail])),
            "final_l_freq": float(np.mean([m["l_freq"] for m in tail])),
            "final_t_sim": float(np.mean([m["t_sim"] for m in tail])),
            "first_over_last_resid_grad": float(grad_ratio),
            "median_contraction": median_c,
            "l_freq_stream": l_stream, "entropy_rate": markov_entropy_rate(matrix),
            "seconds": round(seconds, 2)}


def run(cfg: TrainConfig, out: str | Path | None = None, progress: bool = True) -> dict:
    """Train, or load a finished run from ``out/<name>/summary.json``; write results atomically."""
    from resharpen.experiments.core.io import atomic_write_json, atomic_write_text, ensure_writable_dir

    folder = Path(out) / cfg.name if out is not None else None
    if folder is not None:
        ensure_writable_dir(folder)
        summary_path = folder / "summary.json"
        if summary_path.exists() and (folder / "config.json").exists():
            if json.loads((folder / "config.json").read_text()) == asdict(cfg):
                metrics = [json.loads(line) for line in
                           (folder / "metrics.jsonl").read_text().splitlines() if line]
                # the summary is derived data: recompute it so detection follows the code
                seconds = json.loads(summary_path.read_text()).get("seconds", 0.0)
                summary = summarize(cfg, metrics, zipf_markov_matrix(cfg.vocab, cfg.zipf,
                                                                     seed=cfg.seed), seconds)
                atomic_write_json(summary_path, summary)
                return {"config": asdict(cfg), "metrics": metrics, "summary": summary}
    result = train(cfg, progress=progress)
    if folder is not None:
        atomic_write_json(folder / "config.json", result["config"])
        atomic_write_text(folder / "metrics.jsonl",
                          "".join(json.dumps(m) + "\n" for m in result["metrics"]))
        atomic_write_json(folder / "summary.json", result["summary"])
    return result


PROFILES = {
    # quick: a few minutes on 2 CPU cores; full: deeper and longer
    "quick": dict(n_layers=24, seq_len=32, steps=80, lrs=(3e-3, 3e-2), norms=("post", "pre")),
    "full": dict(n_layers=48, steps=400, lrs=(1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
                 norms=("post", "pre")),
}


def sweep(profile: str = "quick", out: str | Path | None = "out/collapse_train",
          seed: int = 0, progress: bool = True, **overrides) -> list[dict]:
    """The learning-rate sweep of a profile, Post-Norm and Pre-Norm; returns the summaries."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    spec = {**PROFILES[profile], **overrides}
    lrs, norms = spec.pop("lrs"), spec.pop("norms")
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(f"unknown training settings {unknown}; allowed: {sorted(known)}")
    results = []
    for norm in norms:
        for lr in lrs:
            cfg = TrainConfig(norm=norm, lr=float(lr), seed=seed, **spec)
            results.append(run(cfg, out, progress=progress)["summary"])
    return results
