"""The engine: K transformers of one shape trained at once, as the one model module vectorized.

Members. K :class:`~resharpen.experiments.model.transformer.Transformer` s of one shape and scheme are
stacked (``torch.func.stack_module_state``: parameter ``name`` becomes one tensor
(K, *shape)) and run as one computation, ``torch.func.vmap`` over
``torch.func.functional_call`` of the module itself (:class:`Members`): member k's logits are
``Transformer.forward`` with weights ``params[.][k]`` on its own tokens, so there is no second
forward pass to keep in step with the model. Members may differ in what only the start or the
optimizer sees: seed, ``init_std``, ``attn_out_scale``, learning rate, weight decay, EMA decay
(:data:`MEMBER_MODEL_KEYS`); everything else of the model config is shared.

Loss. The loss of member k is the lone model's loss
(:func:`resharpen.experiments.training.targets.cross_entropy`, the same training target and PAD
rule), vectorized over the members; the engine back-propagates their sum, so each member's
gradient is its own.

Optimizer (:func:`adamw_update`). AdamW with per-member learning rate and weight decay and
per-member gradient-norm clipping, on the stacked tensors with ``torch._foreach`` arithmetic.
``torch.optim.AdamW`` takes one learning rate per parameter group, and a stacked tensor holds K
members, so per-member rates need this one small function; it follows ``torch.optim.AdamW``'s
arithmetic (decoupled decay, bias corrections), and a member trained here equals the same model
trained alone with ``torch.optim.AdamW`` up to float32 rounding (tests/core/test_engine.py).
``train.optimizer = "sgd"`` takes SGD with momentum ``train.momentum`` instead
(:func:`sgd_update`, ``torch.optim.SGD``'s arithmetic, L2 decay on the matrices), shared by the
members of one ensemble (:func:`member_optimizer`).
benchmarks/bench_engine.py times it against ``torch.optim.AdamW`` on the same stacked tensors.
After the update the scheme's own step runs on the stack (nGPT's re-normalization of the weight
rows, :func:`resharpen.experiments.model.transformer.after_optimizer_step` if the scheme has one).

Averaging. Raw, EMA and BEMA weights are kept per member: the averagers of
:mod:`resharpen.experiments.training.averaging` follow the stacked module (EMA through
``torch.optim.swa_utils.AveragedModel`` with a per-member decay, BEMA elementwise), and
:meth:`EnsembleState.member_weights` unstacks member k's three weight sets into Transformers.

Dropout. Each member has its own rates (the module's dropout rates are buffers, stacked like
the weights) and its own masks: they are counter-based (:func:`resharpen.experiments.model.transformer.
dropout_uniforms`), keyed by the member's run seed and the step, so a member draws exactly the
masks of its lone run and equals it to float32 rounding, dropout included.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from torch.optim.swa_utils import AveragedModel

from resharpen.experiments.training.averaging import BEMA, Raw, bema_config
from resharpen.experiments.model.dropout import Dropout, dropout_key
from resharpen.experiments.model.transformer import (ModelConfig, Transformer, after_optimizer_step,
                                                     check_tokens)
from resharpen.experiments.model.probes import Probed, probed, zero_probes
from resharpen.experiments.training.targets import Batch, cross_entropy
from resharpen.experiments.training.schema import OPTIMIZERS

MEMBER_MODEL_KEYS = ("init_std", "attn_out_scale", "attn_dropout", "resid_dropout")
"""Model-config fields in which members of one ensemble may differ: the init scale (it acts at
the start) and the dropout rates (buffers of the module, stacked like the weights)."""


def shared_model_config(configs: Sequence[ModelConfig]) -> ModelConfig:
    """The first config, after checking that every config equals it except in
    :data:`MEMBER_MODEL_KEYS`; ValueError naming the first field that differs."""
    first = configs[0].to_dict()
    for other in configs[1:]:
        for key, value in other.to_dict().items():
            if key not in MEMBER_MODEL_KEYS and value != first[key]:
                raise ValueError(f"members of one ensemble share the model config except "
                                 f"{', '.join(MEMBER_MODEL_KEYS)}; model.{key} is {first[key]!r} "
                                 f"and {value!r}")
    return configs[0]


class Members(nn.Module):
    """K Transformers of one shape as stacked parameters; ``forward(tokens (K, B, S))`` returns
    the logits (K, B, S, v) of every member, ``vmap`` of the module's own forward.

    The stacked tensors are this module's parameters (``parameter(name)``), so optimizers and
    the averagers of :mod:`resharpen.experiments.training.averaging` see an ordinary module."""

    def __init__(self, models: Sequence[Transformer]):
        super().__init__()
        if not models:
            raise ValueError("an ensemble needs at least one model")
        self.cfg = shared_model_config([m.cfg for m in models])
        self.configs = [m.cfg for m in models]
        params, buffers = stack_module_state(list(models))
        self.names = list(params)
        self.stack = nn.ParameterList(nn.Parameter(params[n].detach().clone()) for n in self.names)
        # the members' buffers (their dropout rates), stacked; not weights: kept out of the
        # averagers and the optimizer
        self.__dict__["_buffers_stacked"] = {n: b.detach().clone() for n, b in buffers.items()}
        self.size = len(models)
        # the module whose forward runs on each member's weights: no storage of its own, and
        # kept out of this module's parameters (so not a registered submodule)
        self.__dict__["_shape"] = copy.deepcopy(models[0]).to("meta")
        self._shape.train(self.training)
        for name, module in self._shape.named_modules():  # dropout on if any member drops
            if isinstance(module, Dropout):
                module.p = max(m.get_submodule(name).p for m in models)

    def train(self, mode: bool = True) -> "Members":
        super().train(mode)
        self._shape.train(mode)
        return self

    def params(self) -> dict[str, torch.Tensor]:
        """{parameter name of the Transformer: stacked tensor (K, *shape)}."""
        return dict(zip(self.names, self.stack))

    def _call(self, params: dict, buffers: dict, tokens: torch.Tensor) -> torch.Tensor:
        return functional_call(self._shape, (params, buffers), (tokens,))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        self._check(tokens)
        return vmap(self._call, randomness="different")(self.params(), self._buffers_stacked,
                                                        tokens)

    def losses(self, batch: Batch, ignore: int | None = None,
               probes: dict[str, torch.Tensor] | None = None):
        """(K,): member k's mean cross-entropy on its part of the stacked ``batch`` against the
        training target (the lone model's loss, :func:`~resharpen.experiments.training.targets.cross_entropy`).
        With ``probes`` ({capture point: zeros (K, ...) that require grad},
        :mod:`resharpen.experiments.model.probes`): (losses, {point: activations (K, ...)}),
        and after the backward pass each probe's ``.grad`` holds every member's gradient there."""
        self._check(batch.inputs)
        fields = {name: value for name, value in (("tokens", batch.tokens),
                                                   ("extra_labels", batch.extra_labels),
                                                   ("soft", batch.soft)) if value is not None}

        def loss(params: dict, buffers: dict, parts: dict, deltas: dict):
            one = Batch(**parts)
            with probed(self._shape, deltas) as captured:
                value = cross_entropy(self._call(params, buffers, one.inputs), one, ignore)
            return value, dict(captured)

        values, captured = vmap(loss, randomness="different")(
            self.params(), self._buffers_stacked, fields, probes or {})
        return values if probes is None else (values, captured)

    def set_dropout_keys(self, keys: Sequence[int]) -> None:
        """Member k's dropout masks keyed by ``keys[k]`` (:class:`~resharpen.experiments.model.dropout.Dropout`)."""
        for name, buffer in self._buffers_stacked.items():
            if name.endswith(".key"):
                buffer.copy_(torch.tensor(list(keys), dtype=buffer.dtype))

    def _check(self, tokens: torch.Tensor) -> None:
        if tokens.dim() != 3 or tokens.shape[0] != self.size:
            raise ValueError(f"an ensemble of {self.size} takes tokens (K={self.size}, batch, "
                             f"seq), got shape {tuple(tokens.shape)}")
        check_tokens(tokens.flatten(0, 1), self.cfg.vocab, self.cfg.max_len)

    def member(self, index: int) -> Transformer:
        """Member ``index`` as an ordinary Transformer (a copy of its weights)."""
        return unstack(self.configs[index], self.params(), index)


def unstack(cfg: ModelConfig, stacked: dict[str, torch.Tensor], index: int) -> Transformer:
    """Transformer ``index`` of stacked weights {parameter name: (K, *shape)} (a copy)."""
    model = Transformer(cfg)
    model.load_state_dict({n: p[index].detach().clone() for n, p in stacked.items()})
    return model


@torch.no_grad()
def adamw_update(params: list, grads: list, exp_avg: list, exp_avg_sq: list, lrs: list,
                 decays: list, step: int, betas: tuple, eps: float, grad_clip: float) -> None:
    """One clipped AdamW step on stacked tensors (member axis first), in place.

    Per member k: g <- g * min(1, c / (|g_k| + 1e-6)) over all of member k's tensors (as
    ``clip_grad_norm_``), then at step t with lr_k (``lrs``, shaped to broadcast) and the
    decoupled weight-decay factor ``decays`` (1 - lr_k wd_k; 1 for gains):
        m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,
        p <- p decay_k - lr_k / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    k = params[0].shape[0]
    if grad_clip > 0:
        sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)
        coef = (grad_clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, [coef.view((k,) + (1,) * (g.dim() - 1)) for g in grads])
    b1, b2 = betas
    c1, c2 = 1 - b1 ** step, math.sqrt(1 - b2 ** step)
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


def per_member(values, k: int, name: str) -> list[float]:
    """A number or K numbers as a list of K floats (ValueError on another length)."""
    values = list(values) if isinstance(values, (list, tuple)) else [values] * k
    if len(values) != k:
        raise ValueError(f"{name} has {len(values)} entries for {k} members")
    return [float(v) for v in values]


def member_rates(members: "Members", lrs, weight_decays) -> tuple[list, list, list, list]:
    """(parameters, per-member learning rates, their tensors broadcast to each stacked
    parameter (K, 1, ...), the weight decays likewise: on the model's matrices only, as
    :func:`resharpen.experiments.training.loop.make_optimizer`, zero elsewhere): what the
    per-member optimizers share."""
    k = members.size
    params = list(members.stack)

    def shape(p):
        return (k,) + (1,) * (p.dim() - 1)

    rates = per_member(lrs, k, "lr")
    lr = torch.tensor(rates)
    wd = torch.tensor(per_member(weight_decays, k, "weight_decay"))
    return (params, rates, [lr.view(shape(p)) for p in params],
            [wd.view(shape(p)) if p.dim() >= 3 else torch.zeros(shape(p)) for p in params])


class MemberAdamW:
    """AdamW over a :class:`Members` stack with per-member learning rate and weight decay
    (decay on the model's matrices only, as :func:`resharpen.experiments.training.loop.make_optimizer`)
    and per-member clipping (:func:`adamw_update`)."""

    def __init__(self, members: Members, lrs, weight_decays, betas: tuple, eps: float = 1e-8,
                 grad_clip: float = 0.0):
        self.params, self.lrs, self.base_lr, self.wd = member_rates(members, lrs, weight_decays)
        self.betas, self.eps, self.grad_clip = tuple(betas), eps, grad_clip
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    @torch.no_grad()
    def step(self, lr_scale: float = 1.0) -> None:
        """One step at learning rates lr_k * ``lr_scale``; clears the gradients."""
        self.steps += 1
        lrs = [lr * lr_scale for lr in self.base_lr]
        decays = [1 - lr * wd for lr, wd in zip(lrs, self.wd)]
        for p in self.params:  # a parameter the loss does not reach gets a zero gradient
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        adamw_update(self.params, [p.grad for p in self.params], self.exp_avg, self.exp_avg_sq,
                     lrs, decays, self.steps, self.betas, self.eps, self.grad_clip)
        for p in self.params:
            p.grad = None


@torch.no_grad()
def sgd_update(params: list, grads: list, momentum_buf: list, lrs: list, decays: list,
               momentum: float, grad_clip: float) -> None:
    """One clipped SGD-with-momentum step on stacked tensors (member axis first), in place.

    Per member k: the gradient clipped as in :func:`adamw_update`, then with lr_k (``lrs``,
    shaped to broadcast), the L2 weight-decay coefficient ``decays`` (wd_k on matrices, 0 on
    gains) and momentum mu (``torch.optim.SGD``'s arithmetic, dampening 0, not Nesterov; the
    buffer starts at 0, so its first value is g as in torch):
        g <- g + wd_k p,   b <- mu b + g,   p <- p - lr_k b."""
    k = params[0].shape[0]
    if grad_clip > 0:
        sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)
        coef = (grad_clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, [coef.view((k,) + (1,) * (g.dim() - 1)) for g in grads])
    grads = torch._foreach_add(grads, torch._foreach_mul(params, decays))
    torch._foreach_mul_(momentum_buf, momentum)
    torch._foreach_add_(momentum_buf, grads)
    torch._foreach_sub_(params, torch._foreach_mul(momentum_buf, lrs))


class MemberSGD:
    """SGD with momentum over a :class:`Members` stack (``train.optimizer = "sgd"``): per-member
    learning rate and L2 weight decay (on the model's matrices only, as
    :func:`resharpen.experiments.training.loop.make_optimizer`), one momentum, per-member clipping
    (:func:`sgd_update`). The same interface as :class:`MemberAdamW`."""

    def __init__(self, members: Members, lrs, weight_decays, momentum: float,
                 grad_clip: float = 0.0):
        self.params, self.lrs, self.base_lr, self.wd = member_rates(members, lrs, weight_decays)
        self.momentum, self.grad_clip = float(momentum), grad_clip
        self.buf = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    @torch.no_grad()
    def step(self, lr_scale: float = 1.0) -> None:
        """One step at learning rates lr_k * ``lr_scale``; clears the gradients."""
        self.steps += 1
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        sgd_update(self.params, [p.grad for p in self.params], self.buf,
                   [lr * lr_scale for lr in self.base_lr], self.wd, self.momentum,
                   self.grad_clip)
        for p in self.params:
            p.grad = None


def member_optimizer(members: Members, trains: Sequence[dict]):
    """The optimizer ``trains[0]["optimizer"]`` names (default adamw) over ``members``, with each
    member's lr and weight decay; ValueError when the members' optimizer settings differ."""
    first = trains[0]
    kind = first.get("optimizer", "adamw")
    if kind not in OPTIMIZERS:
        raise ValueError(f"train.optimizer = {kind!r} is not one of {', '.join(OPTIMIZERS)}")
    for t in trains[1:]:
        for key, default in (("optimizer", "adamw"), ("momentum", 0.9)):
            if t.get(key, default) != first.get(key, default):
                raise ValueError(f"members of one ensemble share train.{key}; got "
                                 f"{first.get(key, default)!r} and {t.get(key, default)!r}")
    lrs, wds = [t["lr"] for t in trains], [t["weight_decay"] for t in trains]
    if kind == "sgd":
        return MemberSGD(members, lrs, wds, first.get("momentum", 0.9),
                         grad_clip=first["grad_clip"])
    return MemberAdamW(members, lrs, wds, (first["beta1"], first["beta2"]),
                       grad_clip=first["grad_clip"])


class StackedEMA:
    """EMA of a stack with a per-member decay d_k: theta_ema <- lerp(theta_ema, theta, 1 - d_k)
    (``torch.optim.swa_utils.AveragedModel`` with this ``multi_avg_fn``: the arithmetic of
    ``get_ema_multi_avg_fn``, per member). ``start`` (default 0: from the first step): the EMA
    begins at step ``start``, whose weights its first update copies (an EMA of a stationary
    stretch of training, without the weights before it); until then it holds the initial
    weights."""

    def __init__(self, members: Members, decays: Sequence[float], start: int = 0):
        self.start = start
        rates = 1.0 - torch.tensor(per_member(decays, members.size, "ema_decay"))

        def update(averaged: list, current: list, num_averaged) -> None:
            for ema, theta in zip(averaged, current):
                ema.lerp_(theta, rates.view((-1,) + (1,) * (ema.dim() - 1)).to(ema.dtype))

        self._averaged = AveragedModel(members, multi_avg_fn=update, use_buffers=True)

    @torch.no_grad()
    def update(self, members: Members, step: int) -> None:
        if step >= self.start:
            self._averaged.update_parameters(members)

    def module(self) -> Members:
        return self._averaged.module


@dataclass
class EnsembleState:
    """K members training together: the stack, its AdamW, the schedule's base settings and the
    averagers {raw, ema, bema} of the stack (a subset when asked). The interface the training
    loop (:func:`resharpen.experiments.training.loop.fit_members`) uses is the one of
    :class:`resharpen.experiments.training.loop.TrainingState`: ``size``, :meth:`train_step`,
    :meth:`update_averagers`, :meth:`lr`, :meth:`member_weights`, :meth:`snapshot`."""

    members: Members
    optimizer: "MemberAdamW | MemberSGD"
    lr_factor: Callable[[int], float]  # step (0-based) -> multiplier of every member's lr
    averagers: dict = field(default_factory=dict)
    smoothed_loss: list = field(default_factory=list)
    probe_points: tuple = ()  # capture points whose gradients each step records (``probed``)
    probed: Probed | None = None
    dropout_seeds: list | None = None  # the members' run seeds, keying their dropout masks

    @property
    def size(self) -> int:
        return self.members.size

    @property
    def model(self) -> Members:
        return self.members

    def train_step(self, batch: Batch, step: int, grad_clip: float, ignore: int | None = None,
                   after_backward=None) -> list[float]:
        """One step (``step`` 1-based) on a stacked batch: the members' losses, the backward of
        their sum, ``after_backward()``, the clipped per-member AdamW at the schedule's rate,
        the scheme's after-step. Returns the K losses. ``batch``: a stacked
        :class:`~resharpen.experiments.training.targets.Batch` or sequences (K, B, S+1)."""
        batch = batch if isinstance(batch, Batch) else Batch(batch)
        if self.dropout_seeds is not None:
            self.members.set_dropout_keys([dropout_key(seed, step) for seed in self.dropout_seeds])
        if self.probe_points:
            shape = (*batch.inputs.shape, self.members.cfg.d_model)
            deltas = zero_probes(self.probe_points, shape)
            losses, values = self.members.losses(batch, ignore, deltas)
            self.probed = Probed(values, deltas, stacked_members=True)
        else:
            losses = self.members.losses(batch, ignore)
        losses.sum().backward()
        if after_backward is not None:
            after_backward()
        self.optimizer.step(self.lr_factor(step - 1))
        with torch.no_grad():  # the scheme's step on the stack (nGPT: rows back on the sphere)
            after_optimizer_step(self.members.cfg, self.members.params())
        return losses.detach().tolist()

    def update_averagers(self, step: int) -> None:
        for averager in self.averagers.values():
            averager.update(self.members, step)

    def lr(self, index: int) -> float:
        """Member ``index``'s learning rate of the next step."""
        return self.optimizer.lrs[index] * self.lr_factor(self.optimizer.steps)

    def member_weights(self, index: int) -> dict[str, Transformer]:
        """{raw, ema, bema} -> member ``index``'s weights as Transformers (copies)."""
        return {kind: unstack(self.members.configs[index], averager.module().params(), index)
                for kind, averager in self.averagers.items()}

    snapshot = member_weights

    def stacked_parameters(self) -> dict[str, tuple]:
        """{parameter name: (the stacked raw weights (K, ...), their gradient or None)}."""
        return {name: (p.detach(), p.grad) for name, p in self.members.params().items()}


def ensemble_state(models: Sequence[Transformer], trains: Sequence[dict], lr_factor,
                   weights: tuple[str, ...] = ("raw", "ema", "bema")) -> EnsembleState:
    """The state of K members from their initial models and their ``[train]`` tables (lr,
    weight_decay and ema_decay per member; the optimizer (:func:`member_optimizer`), betas,
    momentum, clipping and the BEMA settings shared)."""

    members = Members(models)
    first = trains[0]
    optimizer = member_optimizer(members, trains)
    makers = {"raw": lambda: Raw(members),
              "ema": lambda: StackedEMA(members, [t["ema_decay"] for t in trains]),
              "bema": lambda: BEMA(members, bema_config(first))}
    dropout = any(model.has_dropout() for model in models)
    state = EnsembleState(members, optimizer, lr_factor,
                          {kind: makers[kind]() for kind in weights},
                          [float("nan")] * members.size,
                          dropout_seeds=[t["seed"] for t in trains] if dropout else None)
    return state


__all__ = ["MEMBER_MODEL_KEYS", "Members", "unstack", "adamw_update", "MemberAdamW",
           "sgd_update", "MemberSGD", "OPTIMIZERS", "member_optimizer",
           "StackedEMA", "EnsembleState", "ensemble_state", "per_member", "shared_model_config"]
