"""Dropout whose masks are a function of (run seed, step, site, element): a counter-based
stream of uniforms from a 32-bit integer hash, with no generator state, so that a run draws the
same masks trained alone and as one of K members stacked by ``torch.func.vmap``
(:mod:`resharpen.experiments.training.engine`)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _mul32(x, c: int):
    """x * c mod 2^32 for x in [0, 2^32) (a Python int or an int64 tensor), with every partial
    product below 2^48: c is split into 16-bit halves, so int64 never overflows."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & 0xFFFFFFFF


def mix32(x):
    """A bijective 32-bit integer hash (Wellons' "lowbias32": xorshift-multiply, twice) of x in
    [0, 2^32), for Python ints and int64 tensors alike (same bits either way)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def dropout_key(seed: int, step: int) -> int:
    """The 32-bit key of a run's dropout masks at training step ``step``: a hash of (seed, step),
    the same for the run trained alone and as a member of an ensemble."""
    run = mix32(mix32(seed & 0xFFFFFFFF) ^ ((seed >> 32) & 0xFFFFFFFF))
    return mix32((run + step) & 0xFFFFFFFF)


def dropout_uniforms(key: torch.Tensor, site: int, shape: torch.Size) -> torch.Tensor:
    """Uniforms u in [0, 1) (float32, multiples of 2^-24) of shape ``shape``: element i of
    dropout site ``site`` under key k is u = mix32(i ^ mix32(k ^ mix32(site))) / 2^32 (top 24
    bits). A counter-based stream: no generator state, so a member inside ``vmap`` (a batched
    key) draws exactly the masks of the same run trained alone."""
    base = mix32(key ^ mix32(site))
    index = torch.arange(math.prod(shape), dtype=torch.int64).view(shape)
    return (mix32(index ^ base) >> 8).to(torch.float32) * 2.0 ** -24


class Dropout(nn.Module):
    """Inverted dropout at rate p: a unit is kept when its uniform u >= p and scaled by
    1/(1 - p). The uniforms come from :func:`dropout_uniforms` under the module's ``key``
    buffer, which the package's trainers set at every step to :func:`dropout_key` (run seed,
    step), so that a run's masks are the same whether it trains alone or as one of K stacked
    members (:mod:`resharpen.experiments.training.engine`); with no key set (``key`` < 0, a
    user's own loop) a lone model uses ``F.dropout``. The rate is a buffer too (not saved: the
    config holds it), so stacked members each train at their own rate."""

    def __init__(self, rate: float, site: int = 0):
        super().__init__()
        self.p = float(rate)
        self.site = int(site)
        self.register_buffer("rate", torch.tensor(self.p), persistent=False)
        self.register_buffer("key", torch.tensor(-1, dtype=torch.int64), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:  # the engine sets p to its members' largest rate
            return x
        stacked = torch._C._functorch.is_functorch_wrapped_tensor(self.rate)
        if not stacked and int(self.key) < 0:
            return F.dropout(x, self.p, True)
        keep = (dropout_uniforms(self.key, self.site, x.shape) >= self.rate).to(x.dtype)
        return x * keep / (1.0 - self.rate)
