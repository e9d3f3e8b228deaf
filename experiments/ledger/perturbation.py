"""Perturbing a value, for the mutants of the mutation test (:mod:`.mutants`): a
number moves by x -> x (1 + step) + step (integers by 1), and a container, array, tensor, torch
module, sympy expression, dataclass or plain object is rebuilt with its numbers moved, never
modified in place. :func:`perturb` moves every number of a value; :func:`perturb_one` moves one
leaf only (the first or the last), for checks that compare a value with itself. A value with
nothing to move is returned unchanged, with ``False``.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
import types

STEP = 1e-3
"""The default move x -> x (1 +- STEP) +- STEP of a float (integers move by 1)."""


class _Unchanged(Exception):
    """Raised inside :func:`perturb` for a value it does not perturb."""


def perturb(value: object, step: float = STEP) -> tuple[object, bool]:
    """(the perturbed value, whether anything in it was perturbed). Never modifies ``value``.

    Integers move by 1 only in a value that holds no floats (a count, a tuple of counts, an
    array of token ids): in one that does (a construction with its vocabulary size, a metrics
    dict beside its integer inputs, a config), the integers are its structure (sizes, indices,
    seeds) and are left, so that the mutant is a wrong value and not a shape error."""
    try:
        return _perturbed(value, step, 0, not holds_float(value, 0)), True
    except _Unchanged:
        return value, False


def holds_float(value: object, depth: int) -> bool:
    """Whether a float, complex, float array or float tensor (a torch module: a floating
    parameter or buffer) is among what :func:`_perturbed` would reach in ``value``."""
    if depth > 6 or isinstance(value, (bool, int, str, bytes, type(None))):
        return False
    if isinstance(value, (float, complex)):
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        return bool(numpy.issubdtype(numpy.asarray(value).dtype, numpy.inexact))
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            return value.is_floating_point() or value.is_complex()
        if isinstance(value, torch.nn.Module):
            return True
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return True
    if isinstance(value, (tuple, list)):
        return any(holds_float(x, depth + 1) for x in value)
    if isinstance(value, dict):
        return any(holds_float(x, depth + 1) for x in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(holds_float(getattr(value, f.name), depth + 1)
                   for f in dataclasses.fields(value) if f.init)
    if hasattr(value, "__dict__") and not callable(value) \
            and not isinstance(value, (type, types.ModuleType)):
        return any(holds_float(x, depth + 1) for name, x in vars(value).items()
                   if not name.startswith("__"))
    return False


def _perturbed(value: object, step: float, depth: int, ints: bool = True) -> object:
    """``value`` perturbed; ``ints``: whether integers (and integer arrays and tensors) move."""
    if depth > 6:
        raise _Unchanged
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        if not ints:
            raise _Unchanged
        return value + (1 if step > 0 else -1)
    if isinstance(value, (float, complex)):
        return value * (1 + step) + step
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        if not ints and numpy.issubdtype(numpy.asarray(value).dtype, numpy.integer):
            raise _Unchanged
        return _perturbed_array(value, step, numpy)
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            if not ints and not (value.is_floating_point() or value.is_complex()
                                 or value.dtype == torch.bool):
                raise _Unchanged
            return _perturbed_tensor(value, step, torch)
        if isinstance(value, torch.nn.Module):
            return _perturbed_module(value, step, torch)
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return _perturbed_sympy(value, step, sympy)
    if isinstance(value, (tuple, list)):
        return _perturbed_sequence(value, step, depth, ints)
    if isinstance(value, dict):
        return _perturbed_mapping(value, step, depth, ints)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _perturbed_dataclass(value, step, depth, ints)
    if hasattr(value, "__dict__") and not callable(value) \
            and not isinstance(value, (type, types.ModuleType)):
        return _perturbed_object(value, step, depth, ints)
    raise _Unchanged


def _perturbed_array(value, step, numpy):
    array = numpy.asarray(value)
    if array.dtype == bool:
        out = ~array
    elif numpy.issubdtype(array.dtype, numpy.integer):
        out = array + numpy.ones((), dtype=array.dtype) if step > 0 else \
            array - numpy.ones((), dtype=array.dtype)
    elif numpy.issubdtype(array.dtype, numpy.inexact):
        out = (array * (1 + step) + step).astype(array.dtype)
    else:
        raise _Unchanged
    return out[()] if isinstance(value, numpy.generic) else out


def _perturbed_tensor(value, step, torch):
    if value.dtype == torch.bool:
        return ~value
    if value.is_floating_point() or value.is_complex():
        return (value * (1 + step) + step).to(value.dtype)
    return value + 1 if step > 0 else value - 1


def _perturbed_module(module, step, torch):
    """A copy of a torch module with every floating parameter and buffer perturbed."""
    clone = copy.deepcopy(module)
    changed = False
    with torch.no_grad():
        for tensor in list(clone.parameters()) + list(clone.buffers()):
            if tensor.is_floating_point():
                tensor.mul_(1 + step).add_(step)
                changed = True
    if not changed:
        raise _Unchanged
    return clone


def _perturbed_sympy(value, step, sympy):
    exact = sympy.nsimplify(step)  # Rational(1, 1000) for the default step
    if isinstance(value, sympy.MatrixBase):
        return value.applyfunc(lambda x: x * (1 + exact) + exact)
    if value is sympy.true or value is sympy.false:
        return sympy.false if value is sympy.true else sympy.true
    if isinstance(value, sympy.core.relational.Relational):
        return value.func(value.lhs, _perturbed_sympy(value.rhs, step, sympy))
    if isinstance(value, sympy.logic.boolalg.Boolean) or not isinstance(value, sympy.Expr):
        raise _Unchanged
    return value * (1 + exact) + exact


def _perturbed_sequence(value, step, depth, ints=True):
    items, changed = [], False
    for item in value:
        try:
            items.append(_perturbed(item, step, depth + 1, ints))
            changed = True
        except _Unchanged:
            items.append(item)
    if not changed:
        raise _Unchanged
    if type(value) is list:
        return items
    if hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*items)
    return type(value)(items)


def _perturbed_mapping(value, step, depth, ints=True):
    out, changed = {}, False
    for key, item in value.items():
        try:
            out[key] = _perturbed(item, step, depth + 1, ints)
            changed = True
        except _Unchanged:
            out[key] = item
    if not changed:
        raise _Unchanged
    return _as_mapping_of(value, out)


def _as_mapping_of(value, out: dict):
    """``out`` as a mapping of ``value``'s type (a dict as it is); :class:`_Unchanged` when that
    type cannot be built from a dict."""
    if type(value) is dict:
        return out
    try:
        return type(value)(out)
    except TypeError:
        raise _Unchanged from None


def _perturbed_fields(pairs, step, depth, ints=True) -> dict:
    changed = {}
    for name, item in pairs:
        if name.startswith("__"):
            continue
        try:
            changed[name] = _perturbed(item, step, depth + 1, ints)
        except _Unchanged:
            pass
    if not changed:
        raise _Unchanged
    return changed


def _perturbed_dataclass(value, step, depth, ints=True):
    fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value) if f.init]
    try:
        return dataclasses.replace(value, **_perturbed_fields(fields, step, depth, ints))
    except (TypeError, ValueError):  # a field that validates its value, or init=False state
        raise _Unchanged from None


def _perturbed_object(value, step, depth, ints=True):
    changed = _perturbed_fields(list(vars(value).items()), step, depth, ints)
    try:
        clone = copy.copy(value)
        for name, item in changed.items():
            object.__setattr__(clone, name, item)
    except Exception:  # an object that refuses to be copied or set: not cheap, skip it
        raise _Unchanged from None
    return clone


def perturb_one(value: object, step: float, which: str = "first") -> tuple[object, bool]:
    """(``value`` with ONE of its leaves perturbed, whether anything was). ``which``: "first" or
    "last", in the order :func:`perturb` walks the value (items of a tuple, list or dict, the
    fields of a dataclass or object, the parameters of a torch module). A leaf is a number, an
    array, a tensor or a sympy expression; in a structure of several leaves the whole first (last)
    perturbable leaf moves by x -> x (1 + step) + step, every other leaf stays; a value that is
    one array or tensor of two or more elements moves in its first (last) element only; a lone
    number does not count (it is what ``up``/``up_large`` move). The integer rule of
    :func:`perturb` holds (integers move only in a value that holds no float).

    Why: ``up`` moves every float of a returned structure by one affine map, which is a change
    of units for a check that reads a ratio or a sign of differences within it (an exponential
    rate from a trajectory's times and radii, a normalized quantity): one field or one element
    moved alone is a wrong value such a check can see."""
    if which not in ("first", "last"):
        raise ValueError(f"which must be 'first' or 'last', got {which!r}")
    ints = not holds_float(value, 0)
    try:
        return _perturbed_one(value, step, 0, ints, which == "last", top=True), True
    except _Unchanged:
        return value, False


def _perturbed_one(value: object, step: float, depth: int, ints: bool, last: bool,
                   top: bool = False) -> object:
    if depth > 6:
        raise _Unchanged
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if numpy is not None and isinstance(value, numpy.ndarray) and value.size >= 2 and top:
        if not ints and not numpy.issubdtype(value.dtype, numpy.inexact):
            raise _Unchanged
        out = numpy.array(value, copy=True)
        flat = out.reshape(-1)
        index = flat.size - 1 if last else 0
        flat[index] = _perturbed_array(flat[index:index + 1], step, numpy)[0]
        return out
    if torch is not None and isinstance(value, torch.Tensor) and value.numel() >= 2 and top:
        if not ints and not (value.is_floating_point() or value.is_complex()):
            raise _Unchanged
        with torch.no_grad():
            out = value.detach().clone()
            flat = out.reshape(-1)
            index = flat.numel() - 1 if last else 0
            flat[index] = _perturbed_tensor(flat[index:index + 1], step, torch)[0]
        return out.requires_grad_(value.requires_grad) if out.is_floating_point() else out
    if torch is not None and isinstance(value, torch.nn.Module):
        clone = copy.deepcopy(value)
        tensors = [t for t in list(clone.parameters()) + list(clone.buffers())
                   if t.is_floating_point()]
        if not tensors:
            raise _Unchanged
        with torch.no_grad():
            tensor = tensors[-1 if last else 0]
            tensor.mul_(1 + step).add_(step)
        return clone
    if isinstance(value, (tuple, list)):
        i, item = _first_moved(list(enumerate(value)), step, depth, ints, last)
        items = list(value)
        items[i] = item
        if type(value) is list:
            return items
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        key, item = _first_moved(list(value.items()), step, depth, ints, last)
        return _as_mapping_of(value, {**value, key: item})
    structured = dataclasses.is_dataclass(value) and not isinstance(value, type)
    if structured or (hasattr(value, "__dict__") and not callable(value)
                      and not isinstance(value, (type, types.ModuleType))
                      and not _is_leaf(value)):
        names = [f.name for f in dataclasses.fields(value) if f.init] if structured else \
            [n for n in vars(value) if not n.startswith("__")]
        name, item = _first_moved([(n, getattr(value, n)) for n in names], step, depth, ints,
                                  last)
        try:
            if structured:
                return dataclasses.replace(value, **{name: item})
            clone = copy.copy(value)
            object.__setattr__(clone, name, item)
            return clone
        except Exception:  # a field that validates its value, or an object that refuses
            raise _Unchanged from None
    if top:  # a lone number, expression or one-element array: what up and up_large move
        raise _Unchanged
    return _perturbed(value, step, depth, ints)


def _first_moved(pairs: list, step: float, depth: int, ints: bool, last: bool) -> tuple:
    """The first (or, ``last``, the last) (key, value) pair of a structure whose value
    :func:`_perturbed_one` moves, as (key, moved value); :class:`_Unchanged` if none moves."""
    for key, item in (pairs[::-1] if last else pairs):
        try:
            return key, _perturbed_one(item, step, depth + 1, ints, last)
        except _Unchanged:
            continue
    raise _Unchanged


def _is_leaf(value: object) -> bool:
    """Whether :func:`_perturbed` treats ``value`` as one leaf (an array, tensor, module, sympy
    expression or number) rather than a structure of fields."""
    numpy, torch, sympy = (sys.modules.get(m) for m in ("numpy", "torch", "sympy"))
    kinds: tuple = (bool, int, float, complex)
    if numpy is not None:
        kinds += (numpy.ndarray, numpy.generic)
    if torch is not None:
        kinds += (torch.Tensor, torch.nn.Module)
    if sympy is not None:
        kinds += (sympy.Basic, sympy.MatrixBase)
    return isinstance(value, kinds)
