"""The mutants of the ledger's mutation test (:mod:`.mutation`): which functions of a claim's
check are mutated, and how.

For a claim, the *targets* are the
functions and classes of other ``resharpen`` modules that its check names (the derivations of
:func:`resharpen.experiments.ledger.where.where`, without the statistics that decide, NOT_SUBJECTS);
a class contributes the methods defined in its body. Each target is mutated by each operator of
:data:`OPERATORS`:

    up          x -> x (1 + step) + step  (floats, float/complex arrays and tensors, dtype
                                           kept; sympy expressions with Rational(1, 1000);
                                           ints + 1; bools negated; step = STEP = 1e-3)
    down        x -> x (1 - step) - step  (ints - 1; bools negated)
    swap        f(a, b, ...) -> f(b, a, ...)  (after self for a method; only when a and b are
                                           of one kind: one type, arrays of one shape)
    drop        the first ``a + b`` / ``a - b`` of the function's source -> ``a`` (recompiled)
    const       every call returns the value of the first call
  the ladder, run on a target only while no operator has killed it by a status change:
    up_large    x -> x (1 + 0.1) + 0.1    (LARGE_STEP; a value that holds a float)
    down_large  x -> x (1 - 0.1) - 0.1
    first       the first leaf alone (a field, an item; of a lone array: its first element)
                moved by x -> x (1 + 0.1) + 0.1  (:func:`.perturbation.perturb_one`)
    last        the last leaf alone, likewise

Why a ladder: a claim whose tolerance is wider than a 1e-3 move (a Monte Carlo mean, a fitted
rate at abs 0.01-0.05) survives ``up``/``down`` while its check is sound; at 0.1 every
tolerance of the ledger is crossed, so what survives the ladder is not a loose tolerance. Why
one leaf: ``up``/``down`` move every float of a returned structure by one affine map, a change
of units for a check that reads a ratio or a sign of differences within it; one field moved
alone is a wrong value such a check can see. Why ``swap`` of one kind only: swapping a size and
a rate, or an (n, d) pair of shapes, is a type or shape error (an exception), not a wrong value.

``up`` and ``down`` perturb recursively inside tuples, lists and dicts, and in the float/tensor
fields of dataclasses, plain objects and torch modules (their parameters and buffers, on a
copy); anything else (strings, paths, None, generators) is returned as it is. Integers move
only in a value that holds no float (a count, token ids): beside floats they are structure
(a vocabulary size, indices, a seed), and moving them would raise a shape error instead of
testing the check (:func:`.perturbation.perturb`). ``swap`` and ``drop`` that cannot apply (one positional
argument; no + or - term) are not run (:func:`applies`). A structural mutant is called beside
the original and a call counts as perturbed only when their values differ (a ``swap`` of
arguments of different kinds calls the original: not perturbed). An operator that never
perturbed a value has not mutated anything (an equivalent mutant on this check's inputs, or one
that does not apply: no argument pair, no + or - term).
The mutant replaces the target in its defining module and under every name a module bound it to
(``from x import f``), and the originals are restored afterwards.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.ledger.perturbation import STEP, holds_float, perturb, perturb_one
from resharpen.experiments.ledger.where import derivations

# STEP (perturbation.py): the move x -> x (1 +- STEP) +- STEP of a float (integers by 1) of
# ``up`` and ``down``, the default of ``step`` below; perturbation.py moves the values.

LARGE_STEP = 0.1
"""The second rung of the ladder: ``up_large``/``down_large`` move a float by
x -> x (1 +- LARGE_STEP) +- LARGE_STEP, and ``first``/``last`` move one leaf by
x -> x (1 + LARGE_STEP) + LARGE_STEP. A check of a Monte Carlo mean or a fitted rate has a
tolerance of 1e-2 to 5e-2, which a 1e-3 move cannot cross; a 0.1 move crosses every tolerance
of the ledger, so a survivor of it is an equivalent mutant or a blind spot, not a loose
tolerance. Fixed, not derived from a claim's declared tolerance (a text, not parsed)."""
NOT_SUBJECTS = ("resharpen.experiments.ledger.stats",)
"""Modules whose functions a check uses to decide, not to derive: a mutated p-value or verdict
says nothing about whether the check's measurement and expectation are independent."""


# ----------------------------------------------------------------------------- targets
@dataclass(frozen=True)
class Target:
    """One function (or method) to mutate: ``owner.attribute`` is where it is defined."""

    name: str  # module.qualname, as `resharpen verify --where` prints it
    owner: object = field(repr=False)  # the defining module, or the class of a method
    attribute: str = field(repr=False)


def targets(c: Claim) -> list[Target]:
    """The functions a claim's check uses, as mutation targets: each derivation function, and the
    methods defined in the body of each derivation class (``forward`` included, other dunder
    methods, properties and class methods not); the decision machinery (NOT_SUBJECTS) is not a
    target."""
    found = []
    for obj in derivations(inspect.unwrap(c.check)):
        if obj.__module__ in NOT_SUBJECTS:
            continue
        if inspect.isclass(obj):
            for attribute, member in vars(obj).items():
                if attribute.startswith("__") or not isinstance(member, (types.FunctionType,
                                                                          staticmethod)):
                    continue
                found.append(Target(f"{obj.__module__}.{obj.__qualname__}.{attribute}", obj,
                                    attribute))
        elif inspect.isfunction(obj):
            module = sys.modules.get(obj.__module__)
            names = [name for name, bound in vars(module).items()
                     if _unwrapped(bound) is obj] if module is not None else []
            if names:  # a function not bound in its module (a local one) cannot be replaced
                found.append(Target(f"{obj.__module__}.{obj.__qualname__}", module,
                                    obj.__name__ if obj.__name__ in names else names[0]))
    return found


class Counter:
    """How many calls of a mutated function returned a perturbed value, and how many did not."""

    def __init__(self) -> None:
        self.perturbed = 0
        self.unchanged = 0
        self.note = ""  # what a structural mutation changed (the term it dropped, say)


OPERATORS = {
    "up": "x -> x (1 + step) + step (n -> n + 1, b -> not b)",
    "down": "x -> x (1 - step) - step (n -> n - 1, b -> not b)",
    "swap": "the first two arguments swapped (after self for a method) when they are of one "
            "kind (same type; arrays and tensors of one shape)",
    "drop": "the first + or - term of the function's source dropped (a + b -> a)",
    "const": "the value of the first call returned by every call",
    "up_large": "x -> x (1 + 0.1) + 0.1 on a value that holds a float (ladder)",
    "down_large": "x -> x (1 - 0.1) - 0.1 on a value that holds a float (ladder)",
    "first": "only the first leaf (field, item; of a lone array or tensor: element) moved by "
             "x -> x (1 + 0.1) + 0.1 (ladder)",
    "last": "only the last leaf (field, item; of a lone array or tensor: element) moved by "
            "x -> x (1 + 0.1) + 0.1 (ladder)",
}
"""The mutation operators. ``up`` and ``down`` move a value in both directions (a one-sided bound
survives one of them only when it is loose); ``swap``, ``drop`` and ``const`` change the
function's structure. These five (BASE) run on every target. The LADDER (``up_large``,
``down_large``, ``first``, ``last``) runs, in this order, on a target only while it is not yet
killed by a status change (a pair's verdict is the same as if every operator ran: one kill by a
status change decides it) and only when ``up`` perturbed a value of it (the ladder moves the
leaves ``up`` moves, so otherwise it perturbs nothing); an operator not run is recorded
"not run". A call counts as perturbed only when the mutant's value differs from the original's
on that call (the structural operators run both), so a mutant equal to the original on every
input the check uses has not mutated anything (an equivalent mutant: untested, not a
survivor)."""
BASE = ("up", "down", "swap", "drop", "const")
LADDER = ("up_large", "down_large", "first", "last")


def _wrapper(original: Callable, counter: Counter, step: float, which: str = "all") -> Callable:
    """``original`` with its value perturbed: every leaf (``which="all"``), only when the value
    holds a float (``"floats"``: the large steps, which on integers would repeat up and down),
    or one leaf (``"first"``, ``"last"``: :func:`.perturbation.perturb_one`)."""
    @functools.wraps(original)
    def mutated(*args, **kwargs):
        value = original(*args, **kwargs)
        if which in ("first", "last"):
            value, changed = perturb_one(value, step, which)
        elif which == "floats" and not holds_float(value, 0):
            changed = False
        else:
            value, changed = perturb(value, step)
        if changed:
            counter.perturbed += 1
        else:
            counter.unchanged += 1
        return value

    return mutated


def _same(a: object, b: object, depth: int = 0) -> bool:
    """Whether two values are equal: numbers (NaN equal to NaN), arrays and tensors by value,
    sympy by ``==``, containers, dataclasses and plain objects field by field (False when
    unsure, or deeper than 6 levels)."""
    if a is b:
        return True
    if depth > 6 or type(a) is not type(b):
        return False
    try:
        numpy = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(a, torch.Tensor):
            return a.shape == b.shape and a.dtype == b.dtype and bool(
                torch.equal(a.detach(), b.detach())
                or (a.is_floating_point() and torch.allclose(a.detach(), b.detach(), rtol=0,
                                                             atol=0, equal_nan=True)))
        if torch is not None and isinstance(a, torch.nn.Module):
            return _same(a.state_dict(), b.state_dict(), depth + 1)
        if numpy is not None and isinstance(a, (numpy.ndarray, numpy.generic)):
            a, b = numpy.asarray(a), numpy.asarray(b)
            if a.shape != b.shape:
                return False
            try:
                return bool(numpy.array_equal(a, b, equal_nan=True))
            except TypeError:  # a dtype without NaN
                return bool(numpy.array_equal(a, b))
        if isinstance(a, float):
            return a == b or (a != a and b != b)
        if isinstance(a, (tuple, list)):
            return len(a) == len(b) and all(_same(x, y, depth + 1) for x, y in zip(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k], depth + 1) for k in a)
        if isinstance(a, (str, bytes, int, complex, type(None))):
            return a == b
        sympy = sys.modules.get("sympy")
        if sympy is not None and isinstance(a, (sympy.Basic, sympy.MatrixBase)):
            return bool(a == b)
        if hasattr(a, "__dict__") and not callable(a):
            return _same(vars(a), vars(b), depth + 1)
        return bool(a == b)
    except Exception:  # a comparison that raises or is ambiguous
        return False


def _counted(original: Callable, mutant: Callable, counter: Counter) -> Callable:
    """Call ``mutant``; count the call perturbed when its value differs from ``original``'s on
    the same arguments (both are called: the arguments are not modified by the functions the
    ledger's checks use, and a difference is the only evidence of a mutation)."""
    @functools.wraps(original)
    def call(*args, **kwargs):
        value = mutant(*args, **kwargs)
        if _same(value, original(*args, **kwargs)):
            counter.unchanged += 1
        else:
            counter.perturbed += 1
        return value

    return call


def _swapped(original: Callable, method: bool) -> Callable:
    """``original`` with its first two positional arguments swapped when they are of one kind
    (:func:`of_one_kind`): a float for a float, an array for an array of the same shape; two of
    different kinds (a size and a rate, an (n, d) array and a vector) are left, since their swap
    is a type or shape error, not a wrong value."""
    first = 1 if method else 0

    def mutant(*args, **kwargs):
        if len(args) >= first + 2 and of_one_kind(args[first], args[first + 1]):
            args = (*args[:first], args[first + 1], args[first], *args[first + 2:])
        return original(*args, **kwargs)

    return mutant


def of_one_kind(a: object, b: object, depth: int = 0) -> bool:
    """Whether ``a`` and ``b`` have one type and one structure: arrays and tensors of one shape
    and dtype, tuples and lists of one length, dicts of one key set, dataclasses and plain
    objects field by field (their items of one kind, to 4 levels)."""
    if type(a) is not type(b):
        return False
    if depth > 4:
        return True
    shape_a, shape_b = getattr(a, "shape", None), getattr(b, "shape", None)
    if shape_a is not None or shape_b is not None:
        try:
            return tuple(shape_a or ()) == tuple(shape_b or ()) \
                and getattr(a, "dtype", None) == getattr(b, "dtype", None)
        except TypeError:  # a shape that is not a sequence
            return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(of_one_kind(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(of_one_kind(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (str, bytes, bool, int, float, complex, type(None))):
        return True
    fields_a, fields_b = getattr(a, "__dict__", None), getattr(b, "__dict__", None)
    if isinstance(fields_a, dict) and isinstance(fields_b, dict) and not callable(a):
        return fields_a.keys() == fields_b.keys() and all(
            of_one_kind(fields_a[k], fields_b[k], depth + 1) for k in fields_a)
    return True


def _constant(original: Callable) -> Callable:
    """``original`` returning the value of its first call on every call: a function that ignores
    its arguments. (Restricting it to calls of the first value's shape was measured: it turned
    two shape errors into survivors and lost a kill by a FAIL, sc.noise.autograd_trace x
    sample_inputs, whose check sees sequences of the wrong length; so it is not restricted.)"""
    first: list = []

    def mutant(*args, **kwargs):
        value = original(*args, **kwargs)
        if not first:
            first.append(value)
        return first[0]

    return mutant


def _dropped(original: Callable, counter: Counter) -> Callable | None:
    """``original`` recompiled from its source with the first ``a + b`` or ``a - b`` (in the order
    :func:`ast.walk` meets them) replaced by ``a``; None when there is none, the source is not
    available, or the function closes over variables (it could not be rebuilt alone)."""
    import ast
    import textwrap

    function = _unwrapped(original)
    if not isinstance(function, types.FunctionType) or function.__code__.co_freevars:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    definition = tree.body[0]
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    definition.decorator_list = []
    body = ast.Module(body=definition.body, type_ignores=[])
    target = next((node for node in ast.walk(body) if isinstance(node, ast.BinOp)
                   and isinstance(node.op, (ast.Add, ast.Sub))), None)
    if target is None:
        return None
    counter.note = f"dropped {'+' if isinstance(target.op, ast.Add) else '-'} " \
                   f"{ast.unparse(target.right)}"

    class Drop(ast.NodeTransformer):
        def visit_BinOp(self, node):
            return node.left if node is target else self.generic_visit(node)

    tree = ast.fix_missing_locations(Drop().visit(tree))
    namespace: dict = {}
    try:
        exec(compile(tree, inspect.getsourcefile(function) or "<mutant>", "exec"),
             function.__globals__, namespace)
    except Exception:  # a definition that needs its class (super()) or fails to rebuild
        return None
    mutant = namespace.get(function.__name__)
    if not isinstance(mutant, types.FunctionType):
        return None
    mutant.__defaults__, mutant.__kwdefaults__ = function.__defaults__, function.__kwdefaults__
    return mutant


def _replacement(original: Callable, counter: Counter, step: float, operator: str,
                 method: bool) -> Callable | None:
    """The mutant of ``original`` for ``operator`` (None: the operator does not apply)."""
    if operator == "up":
        return _wrapper(original, counter, abs(step))
    if operator == "down":
        return _wrapper(original, counter, -abs(step))
    if operator == "up_large":
        return _wrapper(original, counter, LARGE_STEP, "floats")
    if operator == "down_large":
        return _wrapper(original, counter, -LARGE_STEP, "floats")
    if operator in ("first", "last"):
        return _wrapper(original, counter, LARGE_STEP, operator)
    if operator == "swap":
        return _counted(original, _swapped(original, method), counter)
    if operator == "const":
        return _counted(original, _constant(original), counter)
    if operator == "drop":
        mutant = _dropped(original, counter)
        return None if mutant is None else _counted(original, mutant, counter)
    raise ValueError(f"unknown mutation operator {operator!r}; one of {tuple(OPERATORS)}")


@contextmanager
def mutated(target: Target, step: float = STEP, operator: str = "up") -> Iterator[Counter]:
    """Within the block, ``target`` is replaced by its mutant for ``operator`` (OPERATORS)
    wherever it is looked up: in its defining module (or class) and under every module-level
    name bound to it; restored after. An operator that does not apply (``drop`` on a function
    without a + or - term) leaves everything as it is (the counter stays at 0)."""
    counter = Counter()
    patches: list[tuple[object, str, object]] = []  # (namespace owner, attribute, original)
    raw = vars(target.owner)[target.attribute]
    is_static = isinstance(raw, staticmethod)
    plain = raw.__func__ if is_static else raw
    method = inspect.isclass(target.owner) and not is_static
    function = _unwrapped(plain)
    mutant = _replacement(plain, counter, step, operator, method)
    if mutant is None:
        yield counter
        return
    patches.append((target.owner, target.attribute, raw))
    if not inspect.isclass(target.owner):  # module-level names bound by `from x import f`
        with warnings.catch_warnings():  # reading a deprecated module attribute warns
            warnings.simplefilter("ignore")
            patches += _bindings(target.owner, raw, function)
    try:
        for owner, attribute, original in patches:
            if owner is target.owner and attribute == target.attribute:
                setattr(owner, attribute, staticmethod(mutant) if is_static else mutant)
            else:  # the same mutant (one memory for `const`) under every name
                setattr(owner, attribute, mutant)
        yield counter
    finally:
        for owner, attribute, original in reversed(patches):
            setattr(owner, attribute, original)


def _bindings(home: object, raw: object, function: object) -> list[tuple[object, str, object]]:
    """(module, name, bound object) of every other module's name bound to ``raw`` (or to the
    plain ``function`` it decorates, or to another decoration of it)."""
    found = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or module is home:
            continue
        for name, bound in list(namespace.items()):
            if bound is raw or bound is function or _wraps(bound, function):
                found.append((module, name, bound))
    return found


def _wraps(obj: object, function: object) -> bool:
    """Whether ``obj`` is a decorated ``function`` (a functools wrapper of it)."""
    try:
        return "__wrapped__" in getattr(obj, "__dict__", {}) and _unwrapped(obj) is function
    except Exception:  # an object whose attributes raise
        return False


def _unwrapped(obj: object) -> object:
    try:
        return inspect.unwrap(obj)
    except Exception:  # a cycle of __wrapped__, or an object whose attributes raise
        return obj


def clear_caches() -> None:
    """Clear every functools cache of a ``resharpen`` module: a cached value computed without
    the mutation would hide it."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("resharpen") or module is None:
            continue
        for obj in list(vars(module).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear):
                clear()


def applies(target: Target, operator: str) -> bool:
    """Whether ``operator`` can change ``target`` at all, decided without running the check:
    ``drop`` needs a ``+`` or ``-`` term in a function that can be rebuilt from its source
    (:func:`_dropped`), ``swap`` a signature that takes two positional arguments (after self for
    a method); ``up``, ``down`` and ``const`` always apply. A mutant that cannot apply perturbs
    no value, so running the check under it (one forked process) would only record "-"."""
    raw = vars(target.owner)[target.attribute]
    is_static = isinstance(raw, staticmethod)
    plain = raw.__func__ if is_static else raw
    if operator == "drop":
        return _dropped(plain, Counter()) is not None
    if operator == "swap":
        try:
            parameters = list(inspect.signature(plain).parameters.values())
        except (TypeError, ValueError):  # no signature: let the run decide
            return True
        if any(p.kind is p.VAR_POSITIONAL for p in parameters):
            return True
        positional = [p for p in parameters
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        method = inspect.isclass(target.owner) and not is_static
        return len(positional) - (1 if method else 0) >= 2
    return True
