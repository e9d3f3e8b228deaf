"""The training core: one optimizer, one schedule, one step, one loop, used by every trainer
(Set Complement, the language and Othello tasks, the collapse demonstration).

Config. Every trainer reads the same ``[model]`` and ``[train]`` keys
(:mod:`resharpen.experiments.training.schema`, torch-free: :data:`MODEL_FIELDS`, :data:`TRAIN_FIELDS`; a trainer picks the keys it uses and its defaults with
:func:`resharpen.experiments.training.config.pick_fields`) and builds its model with
:func:`model_config`: the decoder of :mod:`resharpen.experiments.model.transformer` with learned
positions over ``max_len`` slots (``model.positional = "learned"``), rotary positions
(``"rope"``) or none (``"none"``).

Optimizer: AdamW (decoupled weight decay on matrices only, not on norm gains and biases),
betas (``train.beta1``, ``train.beta2``); or, with ``train.optimizer = "sgd"``, SGD with
momentum ``train.momentum`` (L2 decay on the same matrices). Schedule: the multiplier of ``train.lr`` at optimizer
step k (0-based) is

    (k + 1) / warmup                                 for k < warmup (linear warm-up), else
    r + (1 - r) * shape(p),  p = (k - warmup) / (steps - warmup) clipped to [0, 1],

with r = ``train.min_lr_ratio`` and shape(p) = (1 + cos(pi p)) / 2 (``cosine``) or 1 - p
(``linear``); ``constant`` is 1 after the warm-up. Step: the mean cross-entropy of a batch
against its training target (``train.target``: the sampled next token, k sampled labels, or the
soft target p*; :mod:`resharpen.experiments.training.targets`; positions whose label is ``ignore``
left out), backward, gradient-norm clipping at ``train.grad_clip`` (0 = off), the optimizer, the
scheme's step after it (nGPT: the weight vectors re-normalized; the others: nothing), the
schedule.

Averaging: a run tracks raw, EMA and BEMA weights on the same trajectory
(:mod:`resharpen.experiments.training.averaging`, ``train.ema_decay`` and ``train.bema_*``), or a
subset (``weights``).

Loop (:func:`fit`): ``steps`` steps of ``next_batch(step)``; at the record steps (every
``every`` steps and the last) it calls ``record(step, loss)``, the evaluation / logging hook of
the trainer, keeps the row it returns in the history, and asks the stopping rule ``stop(row)``
whether to end the run there (default: never; the stopping rule of every trainer,
``fit.until_id_invalid_mass``, is such a rule, with ``train.steps`` the cap).

Weights: :func:`weight_sets` copies a run's {raw, ema, bema} weights with the model config that
rebuilds them, and :func:`save_run` writes each as ``weights_<kind>.safetensors``
(:data:`WEIGHTS_FILE`) next to ``config.json``; ``resharpen.load_run(folder).model(kind)`` reads
one back.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from resharpen.experiments.training.averaging import bema_config, make_averager
from resharpen.experiments.model.dropout import dropout_key
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.runs import RUN_FILES, WEIGHT_KINDS, WEIGHTS_FILE
from resharpen.experiments.training.targets import Batch, cross_entropy

WEIGHTS = WEIGHT_KINDS  # raw, ema, bema
def model_config(config: dict, vocab: int, max_len: int) -> ModelConfig:
    """The ``ModelConfig`` of a validated config's ``[model]`` table for a vocabulary of
    ``vocab`` tokens and inputs of at most ``max_len`` tokens (the learned position slots;
    ``model.positional = "rope"``: rotary positions, any length)."""
    m = config["model"]
    return ModelConfig(
        vocab=vocab, d_model=m["d_model"], n_layers=m["n_layers"], n_heads=m["n_heads"],
        d_head=m["d_head"] or None, norm=m["norm"], norm_kind=m["norm_kind"],
        mlp=None if m["mlp"] == "none" else m["mlp"], d_mlp=m["d_mlp"] or None,
        max_len=max_len if m["positional"] == "learned" else None,
        rope=m["positional"] == "rope",
        attn_dropout=m["attn_dropout"], resid_dropout=m["resid_dropout"],
        init_std=m["init_std"], attn_out_scale=m.get("attn_out_scale", 1.0),
        embed_std=m.get("embed_std") or None,
        attn_out_multiplier=m.get("attn_out_multiplier", 1.0),
        norm_gain=m.get("norm_gain", "learned"))


def limit_threads(threads: int) -> None:
    """Run this process's numerics on ``threads`` threads (0: leave them): torch's intra-op
    pool and the BLAS/LAPACK pools numpy and scipy load (OpenBLAS, MKL; via threadpoolctl).

    Both, because an evaluation calls scipy too (post's effective K is a least-squares fit per
    evaluation): left at its default of one thread per core, OpenBLAS's spinning threads on a
    machine whose cores the sweep's workers already fill cost many times the CPU of one thread
    (benchmarks/bench_blas_threads.py prints the ratio; 27x median for the fit at v = 64, load 4
    on 2 cores)."""
    if not threads:
        return
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(threads)


def seeded_model(config: dict, vocab: int, max_len: int) -> Transformer:
    """The run's initial model: ``train.threads`` threads (:func:`limit_threads`; 0: unchanged),
    then ``torch.manual_seed(train.seed)`` and ``Transformer(model_config(...))``."""
    train = config["train"]
    limit_threads(train["threads"])
    torch.manual_seed(train["seed"])
    return Transformer(model_config(config, vocab, max_len))


def lr_factor(step: int, train: dict) -> float:
    """Multiplier of ``train.lr`` at optimizer step ``step`` (0-based); module docstring."""
    warmup, total, floor = train["warmup"], train["steps"], train["min_lr_ratio"]
    if warmup and step < warmup:
        return (step + 1) / warmup
    if train["schedule"] == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    progress = min(max(progress, 0.0), 1.0)
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if train["schedule"] == "cosine" \
        else 1.0 - progress
    return floor + (1.0 - floor) * shape


def make_optimizer(model: nn.Module, train: dict) -> torch.optim.Optimizer:
    """AdamW with ``train.weight_decay`` on the matrices (p.dim() >= 2) and none on the rest;
    with ``train.optimizer = "sgd"``, ``torch.optim.SGD`` with momentum ``train.momentum``
    (default 0.9) and that weight decay as an L2 term on the same matrices. AdamW runs as
    torch's fused kernel, SGD on its multi-tensor (``foreach``) path: the same update as the
    per-tensor loop, to float32 rounding, without its Python overhead per parameter
    (``benchmarks/bench_train_step.py``)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": train["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    kind = train.get("optimizer", "adamw")
    if kind == "sgd":
        return torch.optim.SGD([g for g in groups if g["params"]], lr=train["lr"],
                               momentum=train.get("momentum", 0.9), foreach=True)
    if kind != "adamw":
        raise ValueError(f"train.optimizer = {kind!r} is not one of adamw, sgd")
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=train["lr"],
                             betas=(train["beta1"], train["beta2"]), fused=True)


def next_token_loss(model: nn.Module, batch: torch.Tensor | Batch,
                    ignore: int | None = None) -> torch.Tensor:
    """Mean cross-entropy of the model on a batch against its training target
    (:func:`resharpen.experiments.training.targets.cross_entropy`); a plain tensor (B, S+1) is
    sequences scored against their next tokens. Positions whose label equals ``ignore`` (e.g. a
    PAD token) are left out of the mean."""
    batch = batch if isinstance(batch, Batch) else Batch(batch)
    return cross_entropy(model(batch.inputs), batch, ignore)


def train_step(model: nn.Module, optimizer, schedule, batch: torch.Tensor | Batch,
               grad_clip: float, ignore: int | None = None,
               after_backward: Callable[[], None] | None = None) -> float:
    """One step on a batch (sequences (B, S+1) or a :class:`~resharpen.experiments.training.targets.Batch`):
    :func:`next_token_loss`, backward, ``after_backward()`` (to read the gradients before
    clipping), gradient-norm clipping, the optimizer, the scheme's step after it
    (:func:`resharpen.experiments.model.transformer.after_optimizer_step`: nGPT puts its weight
    vectors back on the sphere), the schedule. Returns the loss."""
    loss = next_token_loss(model, batch, ignore)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if after_backward is not None:
        after_backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip, foreach=True)
    optimizer.step()
    if isinstance(model, Transformer):
        model.after_optimizer_step()  # the scheme's step (nGPT: weights back on the sphere)
    schedule.step()
    return loss.item()


@dataclass
class TrainingState:
    """One run's model, AdamW, schedule, weight averagers ({raw, ema, bema} or a subset) and
    the exponentially smoothed training loss: an ensemble of one for the training loop
    (:func:`fit_members`; K members: :class:`resharpen.experiments.training.engine.EnsembleState`,
    with the same methods)."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LambdaLR
    averagers: dict = field(default_factory=dict)
    smoothed_loss: float = float("nan")
    probe_points: tuple = ()  # capture points whose gradients each step records (``probed``)
    probed: object = None  # the last step's :class:`resharpen.experiments.model.probes.Probed`
    dropout_seed: int | None = None  # the run's seed, keying its dropout masks (None: no dropout)

    size = 1

    def lr(self, index: int = 0) -> float:
        """The learning rate of the next step."""
        return self.optimizer.param_groups[0]["lr"]

    def weights(self) -> dict[str, nn.Module]:
        """{raw, ema, bema} -> the module holding those weights."""
        return {kind: averager.module() for kind, averager in self.averagers.items()}

    def member_weights(self, index: int = 0) -> dict[str, nn.Module]:
        return self.weights()

    snapshot = member_weights  # the loop ends when the one run stops: no copy needed

    def train_step(self, batch, step: int, grad_clip: float, ignore: int | None = None,
                   after_backward: Callable[[], None] | None = None) -> list[float]:
        """:func:`train_step` on the model; the loss as a list of one. With ``probe_points``
        the step also records the activations and gradients there (``self.probed``,
        :mod:`resharpen.experiments.model.probes`), before ``after_backward`` runs. Dropout
        masks are keyed by (run seed, step) (:func:`~resharpen.experiments.model.dropout.dropout_key`),
        as in an ensemble."""
        if self.dropout_seed is not None:
            self.model.set_dropout_key(dropout_key(self.dropout_seed, step))
        try:
            return self._step(batch, step, grad_clip, ignore, after_backward)
        finally:
            if self.dropout_seed is not None:
                self.model.set_dropout_key(-1)

    def _step(self, batch, step, grad_clip, ignore, after_backward) -> list[float]:
        if not self.probe_points:
            return [train_step(self.model, self.optimizer, self.schedule, batch, grad_clip,
                               ignore, after_backward)]
        from resharpen.experiments.model.probes import Probed, probed, zero_probes

        inputs = batch.inputs if isinstance(batch, Batch) else batch[..., :-1]
        deltas = zero_probes(self.probe_points, (*inputs.shape, self.model.cfg.d_model))
        with probed(self.model, deltas) as values:
            self.probed = Probed(values, deltas, stacked_members=False)
            return [train_step(self.model, self.optimizer, self.schedule, batch, grad_clip,
                               ignore, after_backward)]

    def stacked_parameters(self) -> dict[str, tuple]:
        """{parameter name: (value, gradient or None)}, with a member axis of length 1."""
        return {name: (p.detach().unsqueeze(0), None if p.grad is None else p.grad.unsqueeze(0))
                for name, p in self.model.named_parameters()}

    def update_averagers(self, step: int) -> None:
        for averager in self.averagers.values():
            averager.update(self.model, step)

    def resume_state(self) -> dict:
        """Everything the next step depends on (a mid-run checkpoint,
        :mod:`resharpen.experiments.training.checkpoint`): the model, AdamW's state, the
        schedule's step and the averagers' state."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "schedule": self.schedule.state_dict(),
                "averagers": {kind: a.resume_state() for kind, a in self.averagers.items()}}

    def load_resume_state(self, saved: dict) -> None:
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.schedule.load_state_dict(saved["schedule"])
        for kind, averager in self.averagers.items():
            averager.load_resume_state(saved["averagers"][kind])


def training_state(model: nn.Module, train: dict, weights: tuple[str, ...] = WEIGHTS
                   ) -> TrainingState:
    """AdamW (:func:`make_optimizer`), the warm-up + decay schedule (:func:`lr_factor`) and the
    averagers of ``weights`` (raw, ema, bema) of a run."""
    optimizer = make_optimizer(model, train)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: lr_factor(k, train))
    makers = {"raw": lambda: make_averager("none", model),
              "ema": lambda: make_averager("ema", model, decay=train["ema_decay"]),
              "bema": lambda: make_averager("bema", model, bema=bema_config(train))}
    unknown = sorted(set(weights) - set(makers))
    if unknown:
        raise ValueError(f"weights {unknown[0]!r} is not one of {', '.join(WEIGHTS)}")
    seed = train["seed"] if isinstance(model, Transformer) and model.has_dropout() else None
    return TrainingState(model, optimizer, schedule, {kind: makers[kind]() for kind in weights},
                         dropout_seed=seed)


def members_state(models: list[nn.Module], trains: list[dict],
                  weights: tuple[str, ...] = WEIGHTS):
    """The training state of runs that train together: :func:`training_state` for one model,
    an :class:`resharpen.experiments.training.engine.EnsembleState` (the models stacked and
    vectorized) for several. ``trains``: each run's ``[train]`` table; the runs share the
    schedule (steps, warm-up, shape), betas, clipping and BEMA settings, and may differ in
    seed, lr, weight decay and EMA decay."""
    if len(models) == 1:
        return training_state(models[0], trains[0], weights)
    from resharpen.experiments.training.engine import ensemble_state

    unknown = sorted(set(weights) - set(WEIGHTS))
    if unknown:
        raise ValueError(f"weights {unknown[0]!r} is not one of {', '.join(WEIGHTS)}")
    first = trains[0]
    return ensemble_state(models, trains, lambda k: lr_factor(k, first), weights)


STACK_MAX_ACTIVATION = 65536
"""The largest per-member activation (batch x sequence x the widest of d_model and the MLP
width) at which stacking members pays (:func:`stacking_pays`), from benchmarks/bench_engine.py
on this 2-core machine: 128 x 64 (one-layer Set Complement, batch 8) 3.7-5.5x and 256 x 96 (the
collapse stacks) 2.0-2.3x faster per member; 1280 x 256 (the 2 x 64 language model, batch 32)
0.77-0.92x, slower: its elementwise work is memory-bound and stacking leaves the cache."""


def stacking_pays(cfg, batch: int, seq: int) -> bool:
    """Whether K runs of model config ``cfg`` at ``batch`` sequences of ``seq`` tokens train
    faster per member stacked (:mod:`resharpen.experiments.training.engine`) than one at a time:
    batch x seq x max(d_model, MLP width) <= :data:`STACK_MAX_ACTIVATION`. The slices'
    ``train_group`` trains the runs one at a time otherwise (the same numbers up to float32
    rounding), and records ``ensemble`` = K in a run's summary only when it was stacked."""
    width = max(cfg.d_model, cfg.mlp_width if cfg.mlp else 0)
    return batch * seq * width <= STACK_MAX_ACTIVATION


def is_record_step(step: int, every: int, steps: int) -> bool:
    """Steps (1-based) with a history row: every ``every`` steps (0: none) and the last."""
    return step == steps or bool(every and step % every == 0)


@dataclass
class Fitted:
    """What :func:`fit_members` returns: each member's history (the rows of ``record``) and
    its weights {raw, ema, bema} -> module at its end (the step its stopping rule fired, or the
    last step)."""

    histories: list[list[dict]]
    weights: list[dict]


def fit_members(state, train: dict, next_batch: Callable[[int], torch.Tensor], *, every: int,
                record: Callable[[int, int, float], dict],
                stop: Callable[[int, dict], bool] | None = None, ignore: int | None = None,
                after_backward: Callable[[], None] | None = None,
                raise_on_nonfinite: bool = False, smoothing: float = 0.02,
                names: list[str] | None = None, progress: bool = True,
                heartbeat: float | None = None, checkpoint=None) -> Fitted:
    """The training loop of every trainer: train the ``state.size`` members of ``state`` (one
    model, :class:`TrainingState`, or K stacked,
    :class:`resharpen.experiments.training.engine.EnsembleState`) for up to ``train.steps`` steps.

    Step ``step`` (1-based) trains on ``next_batch(step)`` (one batch, or the members' batches
    stacked on a leading axis), updates the averagers, then each member's smoothed loss
    l <- (1 - smoothing) l + smoothing loss. At a record step (:func:`is_record_step` with
    ``every``) ``record(member, step, loss)`` evaluates / logs member ``member`` and returns its
    history row, and the member ends there if ``stop(member, row)`` says so (the stopping rule;
    None = never): its weights are kept as they are at that step (``state.snapshot``) and it
    records no more rows; the loop ends when every member has ended or at the cap.
    ``raise_on_nonfinite``: a ValueError naming the run and step when a live member's loss is
    not finite. ``progress``: a bar on a terminal, a line per record step otherwise
    (:mod:`resharpen.experiments.common.progress`); without it, ``heartbeat`` seconds: a line
    at most that often once the run has lasted that long, in a log (not on a terminal).
    ``checkpoint`` (one model only, a :class:`~resharpen.experiments.training.checkpoint.Checkpoint`):
    the loop starts from the run's saved checkpoint when there is one, and saves one at a
    record step at most every ``checkpoint.every`` seconds."""
    from resharpen.experiments.common.progress import Progress, bar as progress_bar, fit_of

    k, steps = state.size, train["steps"]
    if checkpoint is not None and k != 1:
        raise ValueError("a mid-run checkpoint is kept for one model, not an ensemble")
    names = names or [""] * k
    histories: list[list[dict]] = [[] for _ in range(k)]
    ended: dict[int, dict] = {}
    smoothed = [float("nan")] * k
    first = 1
    resumed = _resume(state, checkpoint) if checkpoint is not None else None
    if resumed is not None:  # the run continues after its last checkpoint
        histories, smoothed, first = resumed
    last_save = time.perf_counter()
    desc = (f"train {names[0]}".strip() if k == 1 else f"ensemble of {k}")
    state.model.train()
    bar = progress_bar(range(first, steps + 1), desc=desc, unit="step", total=steps,
                       initial=first - 1, enabled=progress)
    lines = Progress(desc, steps, enabled=progress, initial=first - 1) \
        if progress or heartbeat is None else \
        Progress(desc, steps, min_interval=heartbeat, heartbeat=True, initial=first - 1)
    for step in bar:
        values = state.train_step(next_batch(step), step, train["grad_clip"], ignore,
                                  after_backward)
        state.update_averagers(step)
        for i, value in enumerate(values):
            if i in ended:
                continue
            if raise_on_nonfinite and not math.isfinite(value):
                raise ValueError(f"run {names[i]!r}: the loss is {value} at step {step}; "
                                 "lower train.lr")
            running = smoothed[i]
            smoothed[i] = value if running != running else \
                (1 - smoothing) * running + smoothing * value
        state.smoothed_loss = smoothed[0] if k == 1 else list(smoothed)
        if step % 50 == 0:
            bar.set_postfix(loss=f"{_mean(smoothed, ended):.4f}")
        if is_record_step(step, every, steps):
            for i in range(k):
                if i in ended:
                    continue
                histories[i].append(record(i, step, values[i]))
                if stop is not None and stop(i, histories[i][-1]):
                    ended[i] = state.snapshot(i)
            fits = [fit_of(h[-1]) for h in histories if h]
            fits = [f for f in fits if f is not None]
            if k == 1:
                tv = histories[0][-1].get("fit_id_tv") if histories[0] else None
                lines.line(step, loss=smoothed[0],
                           **{"ID invalid mass": fits[0] if fits else None, "ID TV": tv})
            else:
                lines.line(step, **{"mean loss": _mean(smoothed, ended),
                                    "worst ID fit": max(fits) if fits else None,
                                    "ended": f"{len(ended)}/{k}"})
            if len(ended) == k:
                break
            if checkpoint is not None and time.perf_counter() - last_save >= checkpoint.every:
                checkpoint.save(step, state.resume_state(), histories, smoothed)
                last_save = time.perf_counter()
    bar.close()
    return Fitted(histories, [ended[i] if i in ended else state.member_weights(i)
                              for i in range(k)])


def _resume(state, checkpoint) -> tuple[list, list, int] | None:
    """Load the run's checkpoint into ``state`` and the trainer's own state (``set_extra``);
    return (histories, smoothed losses, the next step), or None when there is no checkpoint it
    can use (:meth:`~resharpen.experiments.training.checkpoint.Checkpoint.load`, ``fits``)."""
    saved = checkpoint.load()
    if saved is None or not checkpoint.fits(saved["state"], state.resume_state()):
        return None
    try:
        state.load_resume_state(saved["state"])
        checkpoint.set_extra({**saved["extra"], "at_step": saved["step"]})
    except (KeyError, RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"checkpoint {str(checkpoint.path)!r} does not fit this run "
                         f"({type(exc).__name__}: {exc}); remove it to train the run from "
                         "step 1") from None
    state.smoothed_loss = saved["smoothed"][0]
    return saved["histories"], saved["smoothed"], saved["step"] + 1


def _mean(values: list[float], skip: dict) -> float:
    live = [v for i, v in enumerate(values) if i not in skip] or values
    return sum(live) / len(live)


def fit(state: TrainingState, train: dict, next_batch: Callable[[int], torch.Tensor], *,
        every: int, record: Callable[[int, float], dict],
        stop: Callable[[dict], bool] | None = None, ignore: int | None = None,
        after_backward: Callable[[], None] | None = None, raise_on_nonfinite: bool = False,
        smoothing: float = 0.02, name: str = "", progress: bool = True) -> list[dict]:
    """:func:`fit_members` for one model: ``record(step, loss)``, ``stop(row)``; returns the
    history."""
    fitted = fit_members(state, train, next_batch, every=every,
                         record=lambda i, step, loss: record(step, loss),
                         stop=None if stop is None else (lambda i, row: stop(row)),
                         ignore=ignore, after_backward=after_backward,
                         raise_on_nonfinite=raise_on_nonfinite, smoothing=smoothing,
                         names=[name], progress=progress)
    return fitted.histories[0]


@dataclass
class WeightSets:
    """A run's weights to keep: ``model_config`` (``ModelConfig.to_dict()``, which rebuilds the
    Transformer) and ``tensors`` {raw, ema, bema} -> state dict (CPU copies). Plain data, so a
    sweep worker can send it back to the process that writes the run folder."""

    model_config: dict
    tensors: dict[str, dict[str, torch.Tensor]]


def weight_sets(modules: dict[str, nn.Module]) -> WeightSets:
    """Copies of the weights of ``modules`` ({raw, ema, bema} -> Transformer of one config)."""
    configs = {kind: module.cfg for kind, module in modules.items()}
    if not configs or len(set(configs.values())) != 1:
        raise ValueError("weight_sets needs Transformers of one model config")
    tensors = {kind: {name: t.detach().to("cpu", copy=True).contiguous()
                      for name, t in module.state_dict().items()}
               for kind, module in modules.items()}
    return WeightSets(next(iter(configs.values())).to_dict(), tensors)


def save_run(result: dict, folder: str | Path, profile: str | None = None) -> Path:
    """Write a run folder: config.json, provenance.json (commit, dirty flag, versions,
    machine, ``profile``, time: :func:`resharpen.experiments.common.provenance.provenance`),
    metrics.jsonl (the history), per_length.json (when the run has one), the weights (when the
    result has ``weights``, a :class:`WeightSets`: ``weights_<kind>.safetensors`` per weight set,
    the model config in the file's metadata) and summary.json (its presence marks the run
    finished).

    The files are written, complete, into a staging folder beside ``folder``
    (:func:`~resharpen.experiments.common.io.staging_folder`), then moved in
    (:func:`~resharpen.experiments.common.io.commit_staged`): a new folder is renamed into
    place whole; a folder that held an earlier run loses its summary.json first and every run
    file of the earlier run is replaced or removed, so it never holds a finished mix of two
    runs. A write that fails (a full disk) happens while staging: the staging folder, and the
    run folder when this call created it, are removed (:func:`resharpen.experiments.common.io.
    undo_on_failure`), an earlier run in ``folder`` is left intact, and the error goes on."""
    import json

    from resharpen.experiments.common.io import (atomic_write_json, atomic_write_text,
                                                 atomic_write_weights, check_file_target,
                                                 commit_staged, ensure_writable_dir, staging_folder,
                                                 undo_on_failure)
    from resharpen.experiments.common.json_text import dumps_jsonl
    from resharpen.experiments.common.provenance import PROVENANCE_FILE, provenance

    with undo_on_failure(folder):
        folder = ensure_writable_dir(folder)
        real = folder.resolve()  # a link to a folder: staged beside its target (one file system)
        for name in RUN_FILES:  # before staging: a FIFO or a link at a run file is refused
            check_file_target(real / name, "run file")
        stage = staging_folder(real)
        atomic_write_json(stage / "config.json", result["config"])
        atomic_write_json(stage / PROVENANCE_FILE, provenance(profile))
        atomic_write_text(stage / "metrics.jsonl", dumps_jsonl(result["history"]))
        if "per_length" in result:
            atomic_write_json(stage / "per_length.json", result["per_length"])
        saved: WeightSets | None = result.get("weights")
        for kind, tensors in (saved.tensors.items() if saved is not None else ()):
            atomic_write_weights(stage / WEIGHTS_FILE.format(kind), tensors,
                                 {"model_config": json.dumps(saved.model_config),
                                  "weights": kind})
        atomic_write_json(stage / "summary.json", result["summary"])  # its presence = finished
        commit_staged(stage, real, "summary.json", RUN_FILES)
    return folder
