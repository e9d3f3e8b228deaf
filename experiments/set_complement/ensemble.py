"""K Set Complement models of one shape trained as one vectorized computation over stacked weights.

Model k is initialized exactly as :func:`resharpen.experiments.set_complement.train.train`
initializes a run with seed ``seeds[k]`` (``torch.manual_seed(seed)`` then ``Transformer(cfg)``),
draws its batches from its own generator (the trainer's), and gets its own learning rate, weight
decay and dropout rates.
The forward pass is :func:`resharpen.experiments.core.stacked_model.stacked_logits` (every op shared by the K
models); the loss is the sum of the K mean cross-entropies against the training target (sampled
labels, k labels or the soft target p*: :func:`resharpen.experiments.core.targets.per_model_cross_entropy`,
the same target as the trainer's, model k's extra labels drawn by its own run's generator), so
each model's gradient is its own. Gradient clipping is per model, and AdamW is applied to the stacked tensors with per-model
(lr, weight decay) in the same arithmetic as ``torch.optim.AdamW``; so a batched run equals the
K runs done one at a time up to float32 rounding (tests/set_complement/test_ensemble.py checks it
against the trainer). With dropout the masks are drawn for all models at once, so a batched run is a run of
the same distribution as the trainer's, not the same run.

``compile=True`` puts the loss (forward and backward) and the optimizer update through
``torch.compile``: the elementwise work (norms, softmax, masks, cross-entropy, the AdamW
arithmetic) is fused into a few loops around the matmuls. It costs a compilation of 3-20 s per
shape (cached on disk by PyTorch for later processes) and pays off over a run of thousands of
steps; the compiled and eager paths agree to float32 rounding (tests/set_complement/test_ensemble.py).

:func:`train_ensemble` chooses the path per configuration (``path="auto"``, :func:`choose_path`):
eager batched for small steps or short runs, compiled for long runs of larger steps, one model
at a time where both batched paths measured slower (benchmarks/bench_ensemble.py).
"""
from __future__ import annotations

from typing import Sequence

import torch

from resharpen.experiments.core.model import ModelConfig, Transformer
from resharpen.experiments.core.stacked_model import dropout_rates, stacked_logits
from resharpen.experiments.core.targets import Batch, label_generator, per_model_cross_entropy
from resharpen.experiments.core.train import fit, lr_factor, training_state
from resharpen.experiments.set_complement.train import sample_sequences, target_batches

# Measured crossovers (benchmarks/bench_ensemble.py, 2 threads, v = 64, d = 64, L = 16): the
# eager batched path wins up to 65536 tokens per step over all models (batch 64 x K 64) and
# loses at batch 128 x K 64 = 131072 (0.84-0.92x), where the compiled path still wins (1.2x);
# compiling pays for its 3-20 s and its per-call overhead from COMPILED_MIN_TOKENS tokens per
# step and COMPILE_MIN_STEPS steps on (at batch 8 x K 16 = 2048 it measured slower than eager).
BATCHED_MAX_TOKENS = 65536
COMPILED_MIN_TOKENS, COMPILED_MAX_TOKENS = 8192, 131072
COMPILE_MIN_STEPS = 1000
PATHS = ("auto", "sequential", "batched", "compiled")


def choose_path(batch_size: int, train_len: int, k: int, steps: int = 0) -> str:
    """``sequential``, ``batched`` or ``compiled`` (batched under torch.compile): the fastest
    path measured for K models of this step size over ``steps`` steps (one model is always
    trained by the ordinary trainer)."""
    tokens = batch_size * train_len * k
    if k == 1:
        return "sequential"
    if steps >= COMPILE_MIN_STEPS and COMPILED_MIN_TOKENS <= tokens <= COMPILED_MAX_TOKENS:
        return "compiled"
    return "batched" if tokens <= BATCHED_MAX_TOKENS else "sequential"


def compiled(fn):
    """``torch.compile(fn)`` for fixed shapes; every placement, width and K is its own graph, so
    the per-function recompile limit is raised from PyTorch's default of 8."""
    import torch._dynamo.config as dynamo_config

    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 64)
    return torch.compile(fn, dynamic=False)


def _per_model(values, k: int, name: str) -> list[float]:
    values = list(values) if isinstance(values, (list, tuple)) else [values] * k
    if len(values) != k:
        raise ValueError(f"{name} has {len(values)} entries for {k} models")
    return [float(v) for v in values]


def next_token_losses(params: dict, cfg: ModelConfig, seqs: torch.Tensor, dropout,
                      extra_labels: torch.Tensor | None = None,
                      soft: torch.Tensor | None = None) -> tuple:
    """(sum over models, per-model (K,)) of each model's mean cross-entropy on its sequences
    seqs (K, B, S+1) against its target (the next tokens, with ``extra_labels`` (K, B, S, k-1)
    or the ``soft`` targets (K, B, S, v):
    :func:`resharpen.experiments.core.targets.per_model_cross_entropy`), in training mode
    (dropout at the per-model rates)."""
    logits = stacked_logits(params, cfg, seqs[..., :-1], training=True, dropout=dropout)
    per = per_model_cross_entropy(logits, seqs, extra_labels, soft)
    return per.sum(), per.detach()


@torch.no_grad()
def adamw_update(params: list, grads: list, exp_avg: list, exp_avg_sq: list, lrs: list,
                 decays: list, step: torch.Tensor, betas: tuple, eps: float,
                 grad_clip: float) -> None:
    """One clipped AdamW step on stacked tensors (model axis first), in place.

    Per model k: g <- g * min(1, c / (|g_k| + 1e-6)) over all of model k's tensors (as
    ``clip_grad_norm_``), then at step t with lr_k (``lrs``, shaped to broadcast) and the
    decoupled weight decay factor ``decays`` (1 - lr_k wd_k; 1 for gains):
        m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,
        p <- p decay_k - lr_k / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
    ``step`` is a tensor (so a compiled version does not recompile every step)."""
    k = params[0].shape[0]
    if grad_clip > 0:
        sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)
        coef = (grad_clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, [coef.view((k,) + (1,) * (g.dim() - 1)) for g in grads])
    b1, b2 = betas
    c1, c2 = 1 - b1 ** step, (1 - b2 ** step).sqrt()
    torch._foreach_mul_(params, decays)
    torch._foreach_lerp_(exp_avg, grads, 1 - b1)
    torch._foreach_mul_(exp_avg_sq, b2)
    torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - b2)
    denom = torch._foreach_sqrt(exp_avg_sq)
    torch._foreach_div_(denom, c2)
    torch._foreach_add_(denom, eps)
    update = torch._foreach_div(exp_avg, denom)
    torch._foreach_mul_(update, [lr / c1 for lr in lrs])
    torch._foreach_sub_(params, update)


class Ensemble:
    """Stacked parameters of K same-shape transformers with a batched, per-model AdamW.

    ``dropout = (attn rates, resid rates)`` (each a number or K numbers) overrides the config's
    dropout per model; ``compile`` compiles the loss and the update (module docstring)."""

    def __init__(self, cfg: ModelConfig, seeds: Sequence[int], lr=1e-2, weight_decay=0.01,
                 betas=(0.9, 0.98), eps: float = 1e-8, grad_clip: float = 1.0, dropout=None,
                 compile: bool = False):
        if not seeds:
            raise ValueError("an ensemble needs at least one seed")
        self.cfg, self.seeds, self.k = cfg, list(seeds), len(seeds)
        models = []
        for seed in self.seeds:
            torch.manual_seed(seed)
            models.append(Transformer(cfg))
        self.names = [n for n, _ in models[0].named_parameters()]
        self.params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                       .requires_grad_(True) for n in self.names}
        shape = lambda p: (self.k,) + (1,) * (p.dim() - 1)  # noqa: E731
        lrs = torch.tensor(_per_model(lr, self.k, "lr"))
        wds = torch.tensor(_per_model(weight_decay, self.k, "weight_decay"))
        self.base_lr = [lrs.view(shape(p)) for p in self.params.values()]
        # weight decay on matrices only (the trainer's param groups: p.dim() >= 2 per model)
        self.wd = [wds.view(shape(p)) if p.dim() >= 3 else torch.zeros(shape(p))
                   for p in self.params.values()]
        self.betas, self.eps, self.grad_clip = betas, eps, grad_clip
        self.exp_avg = [torch.zeros_like(p) for p in self.params.values()]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params.values()]
        self.step_count = 0
        self.dropout = dropout_rates(cfg, self.k, None if dropout is None else tuple(
            _per_model(r, self.k, "dropout") for r in dropout))
        self._losses = compiled(next_token_losses) if compile else next_token_losses
        self._update = compiled(adamw_update) if compile else adamw_update

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (K, B, S) -> logits (K, B, S, v), evaluation mode (no dropout)."""
        return stacked_logits(self.params, self.cfg, tokens)

    def loss(self, batch: torch.Tensor | Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Sum over models of each model's mean cross-entropy, and the K losses; ``batch``:
        sequences (K, B, S+1) scored against their next tokens, or a stacked
        :class:`~resharpen.experiments.core.targets.Batch` with the training target."""
        batch = batch if isinstance(batch, Batch) else Batch(batch)
        return self._losses(self.params, self.cfg, batch.tokens, self.dropout,
                            batch.extra_labels, batch.soft)

    @torch.no_grad()
    def step(self, lr_scale: float = 1.0) -> None:
        """Clip each model's gradient and take one AdamW step (:func:`adamw_update`) with
        learning rates lr_k * ``lr_scale``; clears the gradients."""
        params = list(self.params.values())
        self.step_count += 1
        lrs = [lr * lr_scale for lr in self.base_lr]
        decays = [1 - lr * wd for lr, wd in zip(lrs, self.wd)]
        self._update(params, [p.grad for p in params], self.exp_avg, self.exp_avg_sq, lrs,
                     decays, torch.tensor(float(self.step_count)), self.betas, self.eps,
                     self.grad_clip)
        for p in params:
            p.grad = None

    def model(self, index: int) -> Transformer:
        """Model ``index`` as an ordinary Transformer (a copy of its weights)."""
        return unstack(self.cfg, self.params, index)


def unstack(cfg: ModelConfig, stacked: dict[str, torch.Tensor], index: int) -> Transformer:
    """Transformer ``index`` of stacked weights {parameter name: (K, *shape)} (a copy)."""
    model = Transformer(cfg)
    model.load_state_dict({n: p[index].detach().clone() for n, p in stacked.items()})
    return model


def train_ensemble(cfg: ModelConfig, seeds: Sequence[int], *, train: dict, train_len: int,
                   lr=None, weight_decay=None, path: str = "auto",
                   progress: bool = False) -> list[Transformer]:
    """Train one model per seed (per-model lr / weight decay optional) on the trainer's data.

    ``train`` is a validated ``[train]`` table (steps, batch_size, warmup, schedule, betas,
    grad_clip, and the training target: ``target``, ``labels_per_position``; sampled with one
    label where absent). ``path`` is one of :data:`PATHS` (``auto``: :func:`choose_path`).
    Returns the trained models (raw weights)."""
    from tqdm import tqdm

    if path not in PATHS:
        raise ValueError(f"path {path!r} is not one of {', '.join(PATHS)}")
    lr = train["lr"] if lr is None else lr
    weight_decay = train["weight_decay"] if weight_decay is None else weight_decay
    if path == "auto":
        path = choose_path(train["batch_size"], train_len, len(seeds), train["steps"])
    if path == "sequential":
        return [_train_one(cfg, seed, train, train_len, lr_k, wd_k)
                for seed, lr_k, wd_k in zip(seeds, _per_model(lr, len(seeds), "lr"),
                                            _per_model(weight_decay, len(seeds), "weight_decay"))]
    ens = Ensemble(cfg, seeds, lr=lr, weight_decay=weight_decay,
                   betas=(train["beta1"], train["beta2"]), grad_clip=train["grad_clip"],
                   compile=path == "compiled")
    gens = [torch.Generator().manual_seed(s + 1_000_003) for s in seeds]
    stream = data_stream(gens, cfg.vocab, train_len + 1, train["batch_size"], train["steps"])
    batch = target_batches(cfg.vocab, train, [label_generator(s) for s in seeds])
    for step in tqdm(range(train["steps"]), desc=f"ensemble K={len(seeds)}", disable=not progress):
        total, _ = ens.loss(batch(next(stream)))
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
    """The sequential path: an ordinary module trained by the training core's loop."""
    torch.manual_seed(seed)
    model = Transformer(cfg)
    gen = torch.Generator().manual_seed(seed + 1_000_003)
    tr = dict(train, lr=lr, weight_decay=weight_decay)
    batch = target_batches(cfg.vocab, train, label_generator(seed))
    fit(training_state(model, tr, weights=("raw",)), tr,
        lambda step: batch(sample_sequences(cfg.vocab, train_len + 1, train["batch_size"], gen)),
        every=0, record=lambda step, loss: {}, progress=False)
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
