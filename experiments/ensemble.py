"""K models of one shape trained as one vectorized computation over stacked weights.

Model k is initialized exactly as :func:`experiments.train.train` initializes a run with seed
``seeds[k]`` (``torch.manual_seed(seed)`` then ``Transformer(cfg)``), draws its batches from its
own generator (the trainer's), and gets its own learning rate and weight decay. The forward pass
is ``vmap(functional_call(model, params_k, tokens_k))`` over the stacked parameters; the loss is
the sum of the K mean cross-entropies, so each model's gradient is its own. Gradient clipping is
per model, and AdamW is applied to the stacked tensors with per-model (lr, weight decay) in the
same arithmetic as ``torch.optim.AdamW`` (``torch._foreach_*`` over the parameter list); so a
batched run equals the K runs done one at a time up to float32 rounding (tests/test_ensemble.py
checks it against the trainer).

Dropout under vmap draws different masks per model (``randomness="different"``), which are not
the masks the sequential trainer would draw: with dropout the batched run is the same
*distribution* of runs, not the same runs.
EMA/BEMA are not applied to ensembles.

:func:`train_ensemble` chooses the path per configuration (``path="auto"``, :func:`choose_path`):
batched while the step is small (per-step overhead dominates), one model at a time when the
work is matmul-bound and the vectorized version was measured slower (benchmarks/bench_ensemble.py).
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from experiments.model import ModelConfig, Transformer
from experiments.train import lr_factor, sample_sequences

# Measured crossover (benchmarks/bench_ensemble.py, 2 threads, v = 64, d = 64, L = 16, quiet
# machine): the batched path wins (1.5-6.7x) up to 65536 tokens per step over all models
# (batch 64 x K 64) and loses (0.76-0.92x) at batch 128 x K 64 = 131072.
BATCHED_MAX_TOTAL_TOKENS = 65536


def choose_path(batch_size: int, train_len: int, k: int) -> str:
    """``batched`` or ``sequential``: the faster path measured for this configuration (one model
    is always trained by the ordinary trainer)."""
    fits = k > 1 and batch_size * train_len * k <= BATCHED_MAX_TOTAL_TOKENS
    return "batched" if fits else "sequential"


class _Unchecked(nn.Module):
    """The transformer's forward without the data-dependent token checks (not vmappable)."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        m = self.model
        x = F.embedding(tokens, m.W_E)
        if m.W_pos is not None:
            x = x + m.W_pos[: tokens.shape[-1]]
        for block in m.blocks:
            x, _ = block(x)
        return m.final_norm(x) @ m.W_U


def _per_model(values, k: int, name: str) -> list[float]:
    values = list(values) if isinstance(values, (list, tuple)) else [values] * k
    if len(values) != k:
        raise ValueError(f"{name} has {len(values)} entries for {k} models")
    return [float(v) for v in values]


class Ensemble:
    """Stacked parameters of K same-shape transformers with a batched AdamW."""

    def __init__(self, cfg: ModelConfig, seeds: Sequence[int], lr=1e-2, weight_decay=0.01,
                 betas=(0.9, 0.98), eps: float = 1e-8, grad_clip: float = 1.0):
        if not seeds:
            raise ValueError("an ensemble needs at least one seed")
        self.cfg, self.seeds, self.k = cfg, list(seeds), len(seeds)
        models = []
        for seed in self.seeds:
            torch.manual_seed(seed)
            models.append(Transformer(cfg))
        self.template = _Unchecked(models[0])
        self.params = {
            f"model.{n}": torch.stack([dict(m.named_parameters())[n].detach() for m in models])
            .requires_grad_(True) for n, _ in models[0].named_parameters()}
        self.decays = {n: p.dim() >= 3 for n, p in self.params.items()}  # matrices only
        shape = lambda p: (self.k,) + (1,) * (p.dim() - 1)  # noqa: E731
        lrs = torch.tensor(_per_model(lr, self.k, "lr"))
        wds = torch.tensor(_per_model(weight_decay, self.k, "weight_decay"))
        self.base_lr = {n: lrs.view(shape(p)) for n, p in self.params.items()}
        self.wd = {n: wds.view(shape(p)) for n, p in self.params.items()}
        self.betas, self.eps, self.grad_clip = betas, eps, grad_clip
        self.exp_avg = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.step_count = 0
        dropout = cfg.attn_dropout > 0 or cfg.resid_dropout > 0
        self._forward = vmap(lambda p, t: functional_call(self.template, p, (t,)),
                             randomness="different" if dropout else "error")

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (K, B, S) -> logits (K, B, S, v)."""
        return self._forward(self.params, tokens)

    def loss(self, seqs: torch.Tensor) -> torch.Tensor:
        """Sum over models of each model's mean next-token cross-entropy; seqs (K, B, S+1)."""
        logits = self.logits(seqs[..., :-1])
        per = F.cross_entropy(logits.flatten(1, 2).transpose(1, 2), seqs[..., 1:].flatten(1),
                              reduction="none").mean(1)
        return per.sum(), per.detach()

    @torch.no_grad()
    def step(self, lr_scale: float = 1.0) -> None:
        """Clip each model's gradient to ``grad_clip`` (as clip_grad_norm_), then AdamW, per
        model k with its own lr_k (times ``lr_scale``) and wd_k, at step t:
            m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,
            p <- p (1 - lr_k wd_k) - lr_k / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
        (weight decay on matrices only), each line one ``torch._foreach_*`` over all tensors."""
        names = list(self.params)
        params = [self.params[n] for n in names]
        grads = [p.grad for p in params]
        if self.grad_clip > 0:
            sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)
            coef = (self.grad_clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
            torch._foreach_mul_(grads, [coef.view((self.k,) + (1,) * (g.dim() - 1)) for g in grads])
        self.step_count += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.step_count, math.sqrt(1 - b2 ** self.step_count)
        lrs = [self.base_lr[n] * lr_scale for n in names]
        decayed = [i for i, n in enumerate(names) if self.decays[n]]
        torch._foreach_mul_([params[i] for i in decayed],
                            [1 - lrs[i] * self.wd[names[i]] for i in decayed])
        exp_avg = [self.exp_avg[n] for n in names]
        exp_avg_sq = [self.exp_avg_sq[n] for n in names]
        torch._foreach_lerp_(exp_avg, grads, 1 - b1)
        torch._foreach_mul_(exp_avg_sq, b2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - b2)
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, c2)
        torch._foreach_add_(denom, self.eps)
        update = torch._foreach_div(exp_avg, denom)
        torch._foreach_mul_(update, [lr / c1 for lr in lrs])
        torch._foreach_sub_(params, update)
        for p in params:
            p.grad = None

    def model(self, index: int) -> Transformer:
        """Model ``index`` as an ordinary Transformer (a copy of its weights)."""
        model = Transformer(self.cfg)
        state = {n.removeprefix("model."): p[index].detach().clone() for n, p in self.params.items()}
        model.load_state_dict(state)
        return model


def train_ensemble(cfg: ModelConfig, seeds: Sequence[int], *, train: dict, train_len: int,
                   lr=None, weight_decay=None, path: str = "auto",
                   progress: bool = False) -> list[Transformer]:
    """Train one model per seed (per-model lr / weight decay optional) on the trainer's data.

    ``train`` is a validated ``[train]`` table (steps, batch_size, warmup, schedule, betas,
    grad_clip). ``path`` is ``batched``, ``sequential`` or ``auto`` (see the module docstring).
    Returns the trained models (raw weights)."""
    from tqdm import tqdm

    if path not in ("auto", "batched", "sequential"):
        raise ValueError(f"path {path!r} is not one of auto, batched, sequential")
    lr = train["lr"] if lr is None else lr
    weight_decay = train["weight_decay"] if weight_decay is None else weight_decay
    if path == "auto":
        path = choose_path(train["batch_size"], train_len, len(seeds))
    if path == "sequential":
        return [_train_one(cfg, seed, train, train_len, lr_k, wd_k)
                for seed, lr_k, wd_k in zip(seeds, _per_model(lr, len(seeds), "lr"),
                                            _per_model(weight_decay, len(seeds), "weight_decay"))]
    ens = Ensemble(cfg, seeds, lr=lr, weight_decay=weight_decay,
                   betas=(train["beta1"], train["beta2"]), grad_clip=train["grad_clip"])
    gens = [torch.Generator().manual_seed(s + 1_000_003) for s in seeds]
    stream = data_stream(gens, cfg.vocab, train_len + 1, train["batch_size"], train["steps"])
    for step in tqdm(range(train["steps"]), desc=f"ensemble K={len(seeds)}", disable=not progress):
        seqs = next(stream)
        total, _ = ens.loss(seqs)
        total.backward()
        ens.step(lr_factor(step, train))
    return [ens.model(i) for i in range(len(seeds))]


DATA_CHUNK = 64  # training steps of data drawn at once per model


def data_stream(gens, vocab: int, length: int, batch: int, steps: int):
    """Yield each step's (K, batch, length) tokens: model k's batches are exactly the ones
    ``sample_sequences(vocab, length, batch, gens[k])`` would give step after step (a CPU
    generator fills ``rand(n * batch, vocab)`` with the same numbers as n draws of
    ``rand(batch, vocab)``), drawn DATA_CHUNK steps at a time with one argsort for all models."""
    done = 0
    while done < steps:
        n = min(DATA_CHUNK, steps - done)
        keys = torch.stack([torch.rand(n * batch, vocab, generator=g) for g in gens])
        chunk = keys.argsort(dim=-1)[..., :length].reshape(len(gens), n, batch, length)
        for i in range(n):
            yield chunk[:, i]
        done += n


def _train_one(cfg: ModelConfig, seed: int, train: dict, train_len: int, lr: float,
               weight_decay: float) -> Transformer:
    """The sequential path: an ordinary module and torch.optim.AdamW (the trainer's loop)."""
    from experiments.train import make_optimizer, train_step

    torch.manual_seed(seed)
    model = Transformer(cfg)
    gen = torch.Generator().manual_seed(seed + 1_000_003)
    tr = dict(train, lr=lr, weight_decay=weight_decay)
    opt = make_optimizer(model, tr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr_factor(k, tr))
    for _ in range(train["steps"]):
        seqs = sample_sequences(cfg.vocab, train_len + 1, train["batch_size"], gen)
        train_step(model, opt, sched, seqs, train["grad_clip"])
    return model


def train_flops(cfg: ModelConfig, batch: int, seq: int) -> float:
    """Matmul FLOPs of one training step of one model (forward x 3 for forward + backward)."""
    d, h, dk, dv, v = cfg.d_model, cfg.n_heads, cfg.head_width, cfg.value_width, cfg.vocab
    per_layer = 2 * seq * d * h * (2 * dk + dv) + 2 * seq * seq * h * (dk + dv) \
        + 2 * seq * h * dv * d
    if cfg.mlp:
        per_layer += 2 * seq * d * cfg.mlp_width * (3 if cfg.mlp == "swiglu" else 2)
    forward = cfg.n_layers * per_layer + 2 * seq * d * v
    return 3.0 * forward * batch
