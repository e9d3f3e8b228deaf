"""Weight averaging: plain EMA (torch.optim.swa_utils) and bias-corrected EMA (BEMA).

EMA is PyTorch's own: ``AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))``,
theta_ema <- decay * theta_ema + (1 - decay) * theta after every step (the first update copies).

BEMA (Block & Zhang, arXiv 2508.00180, Algorithm 1; parameter names as in TRL's
``BEMACallback``). With burn-in tau, theta_0 = the weights at step tau, t = step - tau, and an
update every ``update_freq`` (phi) steps:

    beta_t  = max((rho + gamma t)^(-kappa), min_ema_multiplier)      EMA weight
    alpha_t = (rho + gamma t)^(-eta)                                 bias-correction weight
    EMA_t   = (1 - beta_t) EMA_{t-1} + beta_t theta_t                  (EMA_0 = theta_0)
    BEMA_t  = alpha_t (theta_t - theta_0) + EMA_t

Defaults (TRL): phi = 400, kappa = 0.5, eta = 0.2, rho = 10, tau = 0, gamma = 1,
min_ema_multiplier = 0. Before the burn-in ends the averaged weights are the raw weights.

Two limits, both tested: eta -> infinity (alpha_t -> 0) leaves the EMA_t part alone, which is a
plain EMA with the decaying weights beta_t; eta = 0 pins alpha_t = 1 (the full, undecayed
correction theta_t - theta_0 + EMA_t), which is *not* plain EMA. ``docs/sources/notes_2510.08341.md`` §3.6
says "eta = 0 gives plain EMA"; under the formula above that is the eta -> infinity limit, and
``kappa = 0`` (beta_t = 1) disables the EMA so BEMA_t = theta_t + alpha_t (theta_t - theta_0).

Every averager has the same three methods: ``update(model, step)`` after each optimizer step,
``module()`` returning an ``nn.Module`` to evaluate, and ``state_dict()``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from resharpen.experiments.training.schema import AVERAGING_KINDS


@dataclass(frozen=True)
class BEMAConfig:
    """BEMA hyper-parameters; defaults are TRL's ``BEMACallback`` defaults."""

    update_freq: int = 400  # phi
    ema_power: float = 0.5  # kappa
    bias_power: float = 0.2  # eta
    lag: float = 10.0  # rho
    update_after: int = 0  # tau (burn-in)
    multiplier: float = 1.0  # gamma
    min_ema_multiplier: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.update_freq, int) and self.update_freq >= 1):
            raise ValueError(f"BEMA update_freq must be an integer >= 1, got {self.update_freq!r}")
        if not (isinstance(self.update_after, int) and self.update_after >= 0):
            raise ValueError(f"BEMA update_after must be an integer >= 0, got {self.update_after!r}")
        if self.ema_power < 0 or self.bias_power < 0:
            raise ValueError(f"BEMA ema_power and bias_power must be >= 0, got "
                             f"{self.ema_power!r} and {self.bias_power!r}")
        if self.lag <= 0 or self.multiplier < 0:
            raise ValueError(f"BEMA lag must be > 0 and multiplier >= 0, got "
                             f"{self.lag!r} and {self.multiplier!r}")
        if not 0.0 <= self.min_ema_multiplier <= 1.0:
            raise ValueError(f"BEMA min_ema_multiplier must be in [0, 1], got "
                             f"{self.min_ema_multiplier!r}")

    def beta(self, t: int) -> float:
        return max((self.lag + self.multiplier * t) ** (-self.ema_power), self.min_ema_multiplier)

    def alpha(self, t: int) -> float:
        return (self.lag + self.multiplier * t) ** (-self.bias_power)


class BEMA:
    """Bias-corrected EMA of a module's floating-point parameters and buffers.

    Keeps theta_0 and EMA_t as detached copies and a full copy of the module holding BEMA_t,
    so ``module()`` can be evaluated like the raw model."""

    def __init__(self, model: nn.Module, config: BEMAConfig | None = None):
        self.config = config or BEMAConfig()
        self._averaged = copy.deepcopy(model)
        for p in self._averaged.parameters():
            p.requires_grad_(False)
        self._theta0: list[torch.Tensor] | None = None
        self._ema: list[torch.Tensor] | None = None
        self.last_t: int | None = None
        self._source: nn.Module | None = None  # the module whose tensors _current lists
        self._current: list[torch.Tensor] = []
        self._target: list[torch.Tensor] = []

    @staticmethod
    def _tensors(model: nn.Module) -> list[torch.Tensor]:
        return [t for t in list(model.parameters()) + list(model.buffers())
                if t.is_floating_point()]

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        """Call after optimizer step ``step`` (1-based: the weights after ``step`` updates)."""
        cfg = self.config
        if self._source is not model:  # the tensor lists, once per source module
            self._source, self._current = model, [t.detach() for t in self._tensors(model)]
            self._target = self._tensors(self._averaged)
        current, target = self._current, self._target
        if step < cfg.update_after:  # burn-in: the averaged weights are the raw weights
            for dst, src in zip(target, current):
                dst.copy_(src)
            return
        if self._theta0 is None:  # the first step at or after tau: snapshot theta_0
            self._theta0 = [src.clone() for src in current]
            self._ema = [src.clone() for src in current]
        t = step - cfg.update_after
        if t % cfg.update_freq:
            return
        beta, alpha = cfg.beta(t), cfg.alpha(t)
        # every tensor at once (torch's multi-tensor ops): EMA <- (1 - beta) EMA + beta theta,
        # BEMA <- EMA + alpha (theta - theta_0); on the CPU the same kernels tensor by tensor
        torch._foreach_mul_(self._ema, 1.0 - beta)
        torch._foreach_add_(self._ema, current, alpha=beta)
        correction = torch._foreach_sub(current, self._theta0)
        torch._foreach_mul_(correction, alpha)
        torch._foreach_add_(correction, self._ema)
        torch._foreach_copy_(target, correction)
        self.last_t = t

    def module(self) -> nn.Module:
        return self._averaged

    def state_dict(self) -> dict:
        return self._averaged.state_dict()

    def resume_state(self) -> dict:
        """Everything :meth:`update` reads besides the model: the averaged weights, theta_0, the
        inner EMA and the last step (a mid-run checkpoint, :mod:`.checkpoint`)."""
        return {"averaged": self._averaged.state_dict(), "theta0": self._theta0,
                "ema": self._ema, "last_t": self.last_t}

    def load_resume_state(self, saved: dict) -> None:
        self._averaged.load_state_dict(saved["averaged"])
        self._theta0, self._ema, self.last_t = saved["theta0"], saved["ema"], saved["last_t"]
        self._source = None  # the tensor lists are taken again at the next update


class EMA:
    """Plain EMA through ``torch.optim.swa_utils.AveragedModel`` (buffers averaged too)."""

    def __init__(self, model: nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"EMA decay must be in (0, 1), got {decay!r}")
        self.decay = decay
        self._averaged = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay),
                                       use_buffers=True)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        self._averaged.update_parameters(model)

    def module(self) -> nn.Module:
        return self._averaged.module

    def state_dict(self) -> dict:
        return self._averaged.module.state_dict()

    def resume_state(self) -> dict:
        """The averaged weights and the count of averaged steps (a mid-run checkpoint)."""
        return {"averaged": self._averaged.state_dict()}

    def load_resume_state(self, saved: dict) -> None:
        self._averaged.load_state_dict(saved["averaged"])


class Raw:
    """No averaging: ``module()`` is the model itself."""

    def __init__(self, model: nn.Module):
        self._model = model

    def update(self, model: nn.Module, step: int) -> None:
        pass

    def module(self) -> nn.Module:
        return self._model

    def state_dict(self) -> dict:
        return self._model.state_dict()

    def resume_state(self) -> dict:
        """Nothing: the raw weights are the model's, which a checkpoint holds itself."""
        return {}

    def load_resume_state(self, saved: dict) -> None:
        pass


def make_averager(kind: str, model: nn.Module, *, decay: float = 0.999,
                  bema: BEMAConfig | None = None):
    """``none`` | ``ema`` (swa_utils, constant ``decay``) | ``bema`` (``BEMAConfig``)."""
    if kind == "none":
        return Raw(model)
    if kind == "ema":
        return EMA(model, decay)
    if kind == "bema":
        return BEMA(model, bema)
    raise ValueError(f"averaging kind {kind!r} is not one of {', '.join(AVERAGING_KINDS)}")


def bema_config(train: dict) -> BEMAConfig:
    """The BEMA settings of a run config's ``[train]`` table (its ``bema_*`` keys)."""
    return BEMAConfig(update_freq=train["bema_update_freq"], ema_power=train["bema_ema_power"],
                      bias_power=train["bema_bias_power"], lag=train["bema_lag"],
                      update_after=train["bema_update_after"],
                      multiplier=train["bema_multiplier"])
