"""The model's capture points: named identity modules (:class:`HookPoint`) whose activations
:meth:`~resharpen.experiments.model.transformer.Transformer.capture` reads (:class:`Capture`)
and :meth:`~resharpen.experiments.model.transformer.Transformer.run_with_hooks` reads or
replaces (:func:`editing_hook`), as TransformerLens's hook points."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn


class HookPoint(nn.Identity):
    """A named capture point: the identity map (no arithmetic, no parameters, no state_dict
    entry) whose input :meth:`~resharpen.experiments.model.transformer.Transformer.capture` reads with a forward hook and
    :meth:`~resharpen.experiments.model.transformer.Transformer.run_with_hooks` reads or replaces. The names of a block's points are
    :data:`HOOK_POINTS` (``blocks.<i>.<name>``); :meth:`~resharpen.experiments.model.transformer.Transformer.hook_points` lists a
    model's."""


HOOK_POINTS = ("hook_resid_pre", "hook_attn_in", "attn.hook_pattern", "hook_attn_out",
               "hook_attn_norm_out_input", "hook_attn_norm_out_output", "hook_resid_mid",
               "hook_mlp_in", "hook_mlp_out", "hook_mlp_norm_out_input",
               "hook_mlp_norm_out_output", "hook_resid_post")
"""The capture points of block i, ``blocks.<i>.<name>``, in the order they fire; the norm-output
points exist in placements with an output norm, the resid_mid and MLP points in models with an
MLP (:class:`~resharpen.experiments.model.transformer.Block` gives each one's mathematics)."""


class Capture(dict):
    """Capture-point name -> the tensor that last passed through it, filled by forward hooks
    while open. The tensors are the model's own (not copied, not detached), so
    ``torch.autograd.grad`` works on them; with ``retain_grad`` each one that requires grad also
    keeps its ``.grad`` after a backward pass. ``with`` closes it; so does :meth:`close`."""

    def __init__(self, points: dict[str, HookPoint], retain_grad: bool = False):
        super().__init__()
        self.retain_grad = retain_grad
        self._handles = [point.register_forward_hook(self._keeper(name))
                         for name, point in points.items()]

    def _keeper(self, name: str):
        def keep(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            if self.retain_grad and output.requires_grad:
                output.retain_grad()
            self[name] = output
        return keep

    def close(self) -> None:
        """Remove the hooks (the captured tensors stay)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


HookFn = Callable[[torch.Tensor, str], "torch.Tensor | None"]
"""A hook of :meth:`~resharpen.experiments.model.transformer.Transformer.run_with_hooks`: ``fn(activation, name)``, returning a replacement
of the activation or None."""


def editing_hook(name: str, fn: HookFn):
    """A forward hook on capture point ``name`` that calls ``fn(output, name)`` and returns its
    replacement (a forward hook's return value replaces the module's output)."""
    def hook(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor | None:
        replaced = fn(output, name)
        if replaced is None:
            return None
        if not isinstance(replaced, torch.Tensor) or replaced.shape != output.shape:
            got = (tuple(replaced.shape) if isinstance(replaced, torch.Tensor)
                   else type(replaced).__name__)
            raise ValueError(f"the hook at {name} returned {got}; a replacement must be a "
                             f"tensor of the activation's shape {tuple(output.shape)}, or None")
        return replaced
    return hook


def is_hooked(*modules: nn.Module) -> bool:
    """Whether a forward hook (or pre-hook), a module's own or a global one, can see the
    output of any of ``modules``."""
    from torch.nn.modules import module as torch_module
    return bool(torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks
                or any(m._forward_hooks or m._forward_pre_hooks for m in modules))
