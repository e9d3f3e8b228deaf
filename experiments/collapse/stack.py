"""Random-weight causal stacks at initialization: per-layer token similarity (arXiv 2608.09417,
Stage I, Fig. 1 and App. F.2).

The stack is :class:`resharpen.experiments.model.transformer.Transformer`'s own blocks (single head, d_head = d,
RMSNorm without epsilon, unit gains, no positions), re-initialised with the paper's variances
times a multiplier k:

    W_Q, W_K, W_V, W_O, W1 (= W_gate), W3 (= W_in) ~ N(0, k / (3 d)),   W2 (= W_out) ~ N(0, k / (3 d_ff)),

so s = d sigma_W^2 = d^2 sigma_V^2 sigma_O^2 = k^2 / 9, xi = d d_ff sigma_2^2 sigma_3^2 = k^2 / 9
and v0 = d sigma_1^2 = k / 3. The input is an equal-correlation Gaussian state with t_sim = t0
(rows x_i = sqrt(rho0) z + sqrt(1 - rho0) g_i, then RMS-normalised), fed straight to the blocks.

The model's capture points give, for every sublayer, the residual X it acts on and its output
f(.), so Y = X + f(.): in Post-Norm X is the normalised block input, in Pre-Norm X is the
un-normalised residual (``hook_resid_pre`` for attention, ``hook_resid_mid`` for the FFN). The
measured one-step increments are compared with Delta_attn(s_l, t_sim(X)) and Delta_FFN, the
whole trajectory with :func:`resharpen.theory.collapse.recursion.recursion`, and the empirical mean of the
attention matrices with the prefix average C_n.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.theory.collapse.attention import delta_attn, prefix_average
from resharpen.theory.collapse.swiglu import delta_ffn

PLACEMENTS = ("post", "pre")
MLPS = (None, "swiglu")


MAX_MULTIPLIER = 1e6
"""The largest variance multiplier k of a stack (``collapse stack --multiplier``): k^2 / 9 is the
recursion's s and the weights' variance grows with k, so k = 1e300 overflows float64."""


@dataclass(frozen=True)
class StackConfig:
    """A random-weight stack: sequence length n, width d, depth, placement, FFN, multiplier."""

    n: int = 256
    d: int = 256
    depth: int = 48
    norm: str = "post"
    mlp: str | None = None
    multiplier: float = 1.0
    t0: float = 0.09
    d_ff: int | None = None  # default 3 d, as in the paper (1536 = 3 x 512)
    samples: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n", "d", "depth", "samples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.n < 2:
            raise ValueError(f"n must be >= 2 (t_sim needs two tokens), got {self.n}")
        if self.norm not in PLACEMENTS:
            raise ValueError(f"norm must be one of {PLACEMENTS}, got {self.norm!r}")
        if self.mlp not in MLPS:
            raise ValueError(f"mlp must be None or 'swiglu', got {self.mlp!r}")
        if not (math.isfinite(self.multiplier) and self.multiplier > 0):
            raise ValueError(f"variance multiplier must be finite and > 0, got {self.multiplier!r}")
        if self.multiplier > MAX_MULTIPLIER:
            raise ValueError(f"variance multiplier {self.multiplier:g} is too large: at most "
                             f"{MAX_MULTIPLIER:g} (k^2 enters the recursion and the weights' "
                             "variance; far beyond it the numbers overflow float64)")
        if not (1.0 / self.n <= self.t0 < 1.0):
            raise ValueError(f"t0 must lie in [1/n, 1) = [{1 / self.n:.4g}, 1), got {self.t0!r}")
        if self.d_ff is not None and (not isinstance(self.d_ff, int) or self.d_ff < 1):
            raise ValueError(f"d_ff must be a positive integer or None, got {self.d_ff!r}")

    @property
    def ffn_width(self) -> int:
        return self.d_ff if self.d_ff is not None else 3 * self.d

    @property
    def s(self) -> float:
        """d sigma_W^2 = d^2 (k/(3d))^2 = k^2/9."""
        return self.multiplier ** 2 / 9.0

    @property
    def xi(self) -> float:
        return self.multiplier ** 2 / 9.0

    @property
    def v0(self) -> float:
        return self.multiplier / 3.0


def build_stack(cfg: StackConfig, dtype: torch.dtype = torch.float64) -> Transformer:
    """The Transformer of ``cfg`` with the paper's initialization (see the module docstring)."""
    config = ModelConfig(vocab=2, d_model=cfg.d, n_layers=cfg.depth, n_heads=1, norm=cfg.norm,
                         norm_kind="rms", mlp=cfg.mlp, d_mlp=cfg.ffn_width, eps=0.0)
    with torch.device("meta"):  # shapes only: no draw from (and no change to) torch's global RNG
        model = Transformer(config)
    model = model.to_empty(device="cpu").to(dtype)
    gen = torch.Generator().manual_seed(cfg.seed)
    var_in = cfg.multiplier / (3.0 * cfg.d)
    var_out = cfg.multiplier / (3.0 * cfg.ffn_width)

    def draw(w: torch.Tensor, var: float) -> None:
        w.copy_(torch.randn(w.shape, generator=gen, dtype=dtype) * math.sqrt(var))

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gain"):
                p.fill_(1.0)
        for block in model.blocks:
            for w in (block.attn.W_Q, block.attn.W_K, block.attn.W_V, block.attn.W_O):
                draw(w, var_in)
            if block.mlp is not None:
                draw(block.mlp.W_in, var_in)
                draw(block.mlp.W_gate, var_in)
                draw(block.mlp.W_out, var_out)
        draw(model.W_E, 1.0 / cfg.d)  # unused by the stack (it is fed hidden states); drawn last
        draw(model.W_U, 1.0 / cfg.d)  # so that the block weights do not depend on them
    model.requires_grad_(False)
    return model


def equal_correlation_input(n: int, d: int, t0: float, samples: int, seed: int,
                            dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(samples, n, d) Gaussian states with equal pairwise correlation rho0 = (n t0 - 1)/(n - 1),
    each row rescaled to norm sqrt(d)."""
    gen = torch.Generator().manual_seed(seed + 1_000_003)
    rho0 = (n * t0 - 1.0) / (n - 1.0)
    common = torch.randn(samples, 1, d, generator=gen, dtype=dtype)
    own = torch.randn(samples, n, d, generator=gen, dtype=dtype)
    x = math.sqrt(rho0) * common + math.sqrt(1.0 - rho0) * own
    return x * math.sqrt(d) / x.norm(dim=-1, keepdim=True)


def t_sim_torch(x: torch.Tensor) -> torch.Tensor:
    """t_sim over the last two axes (rows = tokens), batched."""
    return x.shape[-2] * x.mean(dim=-2).pow(2).sum(-1) / x.pow(2).sum((-2, -1))


def _sample_seed(cfg: StackConfig, index: int) -> int:
    return cfg.seed * 100_003 + index


@torch.no_grad()
def _simulate_one(cfg: StackConfig, index: int, keep_attention: bool, bar) -> dict:
    """One independent draw of weights and input; per-layer measurements as lists."""
    seed = _sample_seed(cfg, index)
    model = build_stack(replace(cfg, seed=seed))
    x = equal_correlation_input(cfg.n, cfg.d, cfg.t0, 1, seed)
    out: dict[str, list] = {"t0": [t_sim_torch(x).item()]}
    nd = cfg.n * cfg.d

    def record(prefix: str, x_in: torch.Tensor, y_out: torch.Tensor, amount: float, law) -> None:
        t_in = t_sim_torch(x_in).item()
        ratio = nd / x_in.pow(2).sum().item()  # n d / ||X||^2
        for key, value in ((f"t_in_{prefix}", t_in), (f"t_out_{prefix}", t_sim_torch(y_out).item()),
                           (f"amount_{prefix}", amount * ratio),
                           (f"theory_{prefix}", float(law(amount * ratio, t_in)))):
            out.setdefault(key, []).append(value)

    points = ["hook_resid_pre", "hook_attn_out"]
    points += ["hook_resid_mid", "hook_mlp_out"] if cfg.mlp else []
    points += ["attn.hook_pattern"] if keep_attention else []
    with model.capture(*(f"blocks.*.{point}" for point in points)) as cache:
        for layer, block in enumerate(model.blocks):
            x, _ = block(x)
            seen = {point: cache[f"blocks.{layer}.{point}"] for point in points}
            cache.clear()  # one layer's states at a time
            x_attn = seen["hook_resid_pre"]  # the residual X the sublayer acts on, Y = X + f(.)
            record("attn", x_attn, x_attn + seen["hook_attn_out"], cfg.s,
                   lambda a, t: delta_attn(a, min(max(t, 0.0), 1.0), cfg.n))
            if cfg.mlp:
                x_mlp = seen["hook_resid_mid"]
                record("mlp", x_mlp, x_mlp + seen["hook_mlp_out"], cfg.xi,
                       lambda a, t: delta_ffn(a, min(max(t, 1.0 / cfg.n), 1.0), cfg.n, v0=cfg.v0))
            out.setdefault("t_block", []).append(t_sim_torch(x).item())
            if keep_attention:  # sample 0, head 0
                out.setdefault("attention", []).append(seen["attn.hook_pattern"][0, 0].numpy())
            if bar is not None:
                bar.update(1)
    return out


def simulate(cfg: StackConfig, keep_attention: bool = False, progress: bool = False) -> dict:
    """Run ``cfg.samples`` independent stacks (each its own weights and input; the theory is an
    expectation over both) and return per-layer sample means as numpy arrays over layers.

    Keys: ``t_in_attn``, ``t_out_attn``, ``delta_attn`` (measured), ``amount_attn`` (the amount
    s_l = s n d/||X_l||^2), ``theory_attn`` (Delta_attn(s_l, t_in) per sample, averaged), the same
    for ``mlp`` when present (amount xi_l), ``t_block`` (t_sim of the residual leaving each
    block; Post-Norm: after the norm), ``t0`` (the mean input similarity), and per draw
    ``t_block_draws`` (samples, layers), for checks that pair each stack with a prediction from
    its own input (:func:`input_similarities`); it is the last key, so that the mutation test's
    last-leaf operator moves the trajectories alone; with ``keep_attention`` also ``mean_attention``
    (layers, n, n) and ``attention_var_trace`` (per layer, the summed entry-wise sample variance
    over draws, for the sampling-noise floor of the E[P] estimate)."""
    from resharpen.experiments.common.progress import Meter

    bar = Meter(f"stack {cfg.norm} x{cfg.multiplier:g}", cfg.samples * cfg.depth, "layer") \
        if progress else None
    draws, total, total_sq = [], 0.0, 0.0
    for i in range(cfg.samples):
        draw = _simulate_one(cfg, i, keep_attention, bar)
        if keep_attention:  # running sums: (layers, n, n) per draw, never all draws at once
            att = np.asarray(draw.pop("attention"))
            total, total_sq = total + att, total_sq + att * att
        draws.append(draw)
    if bar is not None:
        bar.close()
    result = {k: np.mean([np.asarray(d[k]) for d in draws], axis=0) for k in draws[0]}
    result["t0"] = float(result["t0"][0])
    if keep_attention:
        S = cfg.samples
        result["mean_attention"] = total / S
        result["attention_var_trace"] = (((total_sq - total * total / S) / (S - 1)).sum((-2, -1))
                                         if S > 1 else np.full(cfg.depth, np.nan))
    result["delta_attn"] = result["t_out_attn"] - result["t_in_attn"]
    if cfg.mlp:
        result["delta_mlp"] = result["t_out_mlp"] - result["t_in_mlp"]
    result["config"] = asdict(cfg)
    result["t_block_draws"] = np.asarray([d["t_block"] for d in draws], dtype=float)
    return result


def prefix_averaging_error(result: dict) -> dict:
    """Relative Frobenius distance of the empirical mean attention from C_n, per layer, split
    into sampling noise and systematic bias.

    With S samples, E||mean - C||^2 = ||E P - C||^2 + tr Var(P) / S, so
    bias^2 ~ ||mean - C||^2 - tr Var / S (clipped at 0) estimates the S -> infinity distance."""
    if "mean_attention" not in result:
        raise ValueError("simulate(..., keep_attention=True) is needed for the E[P] check")
    mean = result["mean_attention"]
    n = mean.shape[-1]
    C = prefix_average(n)
    c_norm = np.linalg.norm(C)
    samples = result["config"]["samples"]
    raw2 = np.sum((mean - C) ** 2, axis=(-2, -1))
    noise2 = result["attention_var_trace"] / samples
    return {"raw": np.sqrt(raw2) / c_norm, "noise": np.sqrt(noise2) / c_norm,
            "bias": np.sqrt(np.clip(raw2 - noise2, 0, None)) / c_norm, "samples": samples}


def _one_layer_draws(cfg: StackConfig):
    """(block, x) for ``cfg.samples`` independent draws of one block's weights and of the
    equal-correlation input: the theory's expectations are over both."""
    for i in range(cfg.samples):
        seed = _sample_seed(cfg, i)
        yield (build_stack(replace(cfg, seed=seed)).blocks[0],
               equal_correlation_input(cfg.n, cfg.d, cfg.t0, 1, seed))


def one_layer_config(n: int, d: int, t0: float, multiplier: float, samples: int, seed: int,
                     mlp: str | None = None) -> StackConfig:
    """The one-layer Post-Norm stack of the one-step checks (``samples`` independent draws)."""
    return StackConfig(n=n, d=d, depth=1, norm="post", mlp=mlp, multiplier=multiplier, t0=t0,
                       samples=samples, seed=seed)


def input_similarities(cfg: StackConfig) -> np.ndarray:
    """t_sim(X) of the input of each draw (samples,), the draws of :func:`_one_layer_draws` and
    of :func:`simulate` alike (the same seeds): the argument t of the theory's step, or the
    start of a stack's recursion, computed from the inputs alone (no block is built or run)."""
    return np.array([t_sim_torch(equal_correlation_input(cfg.n, cfg.d, cfg.t0, 1,
                                                         _sample_seed(cfg, i))).item()
                     for i in range(cfg.samples)])


@torch.no_grad()
def attention_steps(cfg: StackConfig, alphas) -> np.ndarray:
    """Monte Carlo of Corollary 3.3 on the first Post-Norm attention layer, per draw: with the
    layer's own softmax P, Y = X + (P - alpha C_n) X W_V W_O and the step t_sim(Y) - t_sim(X),
    shape (alphas, samples). Measurements only: the theory is not computed here."""
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    C = torch.as_tensor(prefix_average(cfg.n), dtype=torch.float64)
    steps = []
    for block, x in _one_layer_draws(cfg):
        _, probs = block.attn(x)
        values = x @ block.attn.W_V[0] @ block.attn.W_O[0]
        t = t_sim_torch(x)
        steps.append(torch.stack([t_sim_torch(x + (probs[:, 0] - a * C) @ values) - t
                                  for a in alphas]))
    return torch.cat(steps, dim=1).numpy()


@torch.no_grad()
def ffn_steps(cfg: StackConfig) -> np.ndarray:
    """Monte Carlo of Theorem 3.4 on one Post-Norm SwiGLU sublayer (``cfg.mlp`` = "swiglu") fed
    an equal-correlation state, per draw: t_sim(X + FFN(X)) - t_sim(X), shape (samples,).
    Measurements only: the theory is not computed here."""
    if cfg.mlp != "swiglu":
        raise ValueError(f"ffn_steps needs a SwiGLU stack (mlp='swiglu'), got mlp={cfg.mlp!r}")
    return np.array([(t_sim_torch(x + block.mlp(x)) - t_sim_torch(x)).item()
                     for block, x in _one_layer_draws(cfg)])


def deaveraging_step(alphas, n: int = 64, d: int = 64, t0: float = 0.2, multiplier: float = 1.0,
                     samples: int = 16, seed: int = 0) -> dict:
    """A summary of :func:`attention_steps` for figures: E t_sim(Y) - t_sim(X) per alpha (mean
    over independent draws of weights and input, and its standard error) beside the theory
    Delta_attn((1 - alpha)^2 s, t_sim(X)). At alpha = 0 this is Theorem 3.2's one-layer step.
    (The ledger's checks take the theory from theory/collapse themselves.)"""
    from resharpen.theory.collapse.attention import delta_deaveraged

    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    cfg = one_layer_config(n, d, t0, multiplier, samples, seed)
    steps, t_in = attention_steps(cfg, alphas), input_similarities(cfg)
    theory = np.mean([delta_deaveraged(alphas, cfg.s, float(t), n) for t in t_in], axis=0)
    return {"alpha": alphas, "measured": steps.mean(1),
            "stderr": steps.std(1) / np.sqrt(samples), "theory": theory,
            "t_in": float(t_in.mean()), "s": cfg.s}


def ffn_step(n: int = 256, d: int = 256, t0: float = 0.5, multiplier: float = 1.0,
             samples: int = 8, seed: int = 0) -> dict:
    """A summary of :func:`ffn_steps`: E t_sim(X + FFN(X)) - t_sim(X) (mean, standard error)
    beside Delta_FFN(xi, t)."""
    from resharpen.theory.collapse.swiglu import delta_ffn

    cfg = one_layer_config(n, d, t0, multiplier, samples, seed, mlp="swiglu")
    steps, t_in = ffn_steps(cfg), input_similarities(cfg)
    theory = np.mean([delta_ffn(cfg.xi, float(t), n, v0=cfg.v0) for t in t_in])
    return {"measured": float(steps.mean()), "stderr": float(steps.std(ddof=1) / np.sqrt(samples)),
            "theory": float(theory), "t_in": float(t_in.mean()), "xi": cfg.xi}


@torch.no_grad()
def row_norms_after_attention(cfg: StackConfig) -> np.ndarray:
    """E||Y_i||^2 by position i after one random causal attention layer (the sample mean over
    the draws of ``cfg``), Y = X + attention(X): the measurement of Lemma C.5 (its theory
    alpha + beta / i is :func:`resharpen.theory.collapse.attention.row_norm_profile`)."""
    norms = torch.cat([(x + block.attn(x)[0]).pow(2).sum(-1) for block, x in _one_layer_draws(cfg)])
    return norms.mean(0).numpy()
