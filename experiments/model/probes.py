"""Gradient probes: the loss's gradient with respect to the activation at named capture points,
for one model or for K stacked members in one backward pass.

At a capture point p (:meth:`resharpen.experiments.model.transformer.Transformer.hook_points`) with
activation a_p, a probe adds a zero tensor delta_p: the forward pass continues with
a_p + delta_p = a_p (adding 0.0 changes no value) and dL/d delta_p = dL/d a_p. The deltas are
inputs, so under ``torch.func.vmap`` they carry the member axis like the weights: one backward
pass of the members' summed loss fills every member's own gradient at every probed point, which
``retain_grad`` cannot do for a tensor inside vmap. The same mechanism serves one model, so the
numbers do not depend on the path.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn


def zero_probes(points, shape: tuple[int, ...], dtype=torch.float32) -> dict[str, torch.Tensor]:
    """{point: zeros(shape) that require grad}: the deltas of :func:`probed`."""
    return {name: torch.zeros(shape, dtype=dtype, requires_grad=True) for name in points}


@contextlib.contextmanager
def probed(module: nn.Module, deltas: dict[str, torch.Tensor]) -> Iterator[dict]:
    """While open, the capture point ``name`` of ``module`` outputs its activation plus
    ``deltas[name]``; yields the dict that receives each point's activation (the value, before
    the zero is added) as the forward pass runs. ValueError for a name that is not a capture
    point of the module."""
    points = module.hook_points()
    unknown = sorted(set(deltas) - set(points))
    if unknown:
        raise ValueError(f"probe point {unknown[0]!r} is not a capture point of this model; "
                         f"its points are {', '.join(points)}")
    captured: dict[str, torch.Tensor] = {}

    def adder(name: str, delta: torch.Tensor):
        def hook(mod: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
            captured[name] = output
            return output + delta
        return hook

    handles = [points[name].register_forward_hook(adder(name, delta))
               for name, delta in deltas.items()]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class Probed:
    """One step's probes: ``values`` {point: activation} and ``deltas`` {point: the zero input
    whose ``.grad`` is the loss's gradient there, once backward has run}; with a leading member
    axis for K stacked members (``stacked_members``)."""

    values: dict[str, torch.Tensor]
    deltas: dict[str, torch.Tensor]
    stacked_members: bool

    def stacked(self) -> tuple[dict, dict]:
        """({point: activations}, {point: gradients or None}), detached, with the member axis
        first (a single model's gain one of length 1)."""
        lift = (lambda t: t) if self.stacked_members else (lambda t: t.unsqueeze(0))
        values = {name: lift(v.detach()) for name, v in self.values.items()}
        grads = {name: None if d.grad is None else lift(d.grad) for name, d in self.deltas.items()}
        return values, grads


__all__ = ["zero_probes", "probed", "Probed"]
