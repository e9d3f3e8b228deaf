"""The mutation test of the ledger: does a claim's check notice when its derivations are wrong?

A check is *circular* when its expected value and its measurement come from the same function:
then a wrong function changes both alike and the check still passes. The mutation test finds
such checks by breaking the derivations one at a time. For a claim, the *targets* are the
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
                moved by x -> x (1 + 0.1) + 0.1  (:func:`perturb_one`)
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
testing the check (:func:`perturb`). ``swap`` and ``drop`` that cannot apply (one positional
argument; no + or - term) are not run (:func:`applies`). A structural mutant is called beside
the original and a call counts as perturbed only when their values differ (a ``swap`` of
arguments of different kinds calls the original: not perturbed). An operator that never
perturbed a value has not mutated anything (an equivalent mutant on this check's inputs, or one
that does not apply: no argument pair, no + or - term).
The mutant replaces the target in its defining module and under every name a module bound it to
(``from x import f``), and the originals are restored afterwards.

The check is run once unmutated and once under each (target, operator), each in a forked child
process, so that no cache carries a mutated value into another run. A mutation that perturbed a
value **kills** when it changes the status (:func:`kills`): a PASS into FAIL, ERROR or TIMEOUT
(an erratum: into anything but PASS); a FAIL or INCONCLUSIVE into any other status (every claim
is tested, whatever its unmutated status). Each **(claim, function) pair** gets a verdict
(PAIR_VERDICTS): killed (by a status change that is not an exception; by any operator, the
ladder's included), killed by an exception only (weaker evidence), survives (every perturbing
operator left the status), untested. The ladder skips a target already killed and one whose
``up`` perturbed nothing, which cannot change its verdict: recorded "not run". The
claim is killed when one pair is, survives when a mutation perturbed and none killed, untested
when nothing was perturbed or its unmutated check raised; **skipped** when its declared cost
class (``@claim(cost=...)``) is not among those run (never by a measured time).

A survivor is a prompt to read the check, not a verdict of circularity: its measurement and
expectation move together (circular), or its tolerance is wider than the perturbation, or the
mutated values never reach the comparison; the diagnosis of each is in docs/ledger.md.

The committed *record* (``experiments/configs/ledger/mutation.json``, :func:`read_record`) holds
the expected verdict of every claim, the seconds its unmutated quick check took, the diagnosis of
each survivor, and for every fast claim ``functions``: the verdict, operator statuses and, for
a survivor, diagnosis of each pair (a slow claim is recorded skipped by its declared class).
Every pair that is not killed says, beside its diagnosis, whether it is an ``equivalent``
mutant (no operator's mutant can change a correct check's status on this data, apart from a
stillborn one that raises on an invalid call); the record's ``score`` is the standard mutation
score over the pairs that are not (:func:`mutation_score`), beside the plain rate of ``summary``.
:func:`against_record` turns a run into regressions. tests/core/test_mutation_record.py runs it
over a declared sample of fast claims by default and over every fast claim in the ``slow``
test. A run of a few claims (a claim added or changed) is merged into the record by
:func:`updated_record` (``python -m resharpen.regenerate``), which counts the summary lines
over all the record's entries (:func:`results_of_record`).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import sys
import time
import types
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from resharpen.experiments.common.io import dumps_json
from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.ledger.runner import run_claim
from resharpen.experiments.ledger.perturbation import (STEP, holds_float,  # noqa: F401
                                                       perturb, perturb_one)
from resharpen.experiments.ledger.where import _derivations

# STEP (perturbation.py): the move x -> x (1 +- STEP) +- STEP of a float (integers by 1) of
# ``up`` and ``down``, the default of ``step`` below; perturbation.py moves the values.

LARGE_STEP = 0.1
"""The second rung of the ladder: ``up_large``/``down_large`` move a float by
x -> x (1 +- LARGE_STEP) +- LARGE_STEP, and ``first``/``last`` move one leaf by
x -> x (1 + LARGE_STEP) + LARGE_STEP. A check of a Monte Carlo mean or a fitted rate has a
tolerance of 1e-2 to 5e-2, which a 1e-3 move cannot cross; a 0.1 move crosses every tolerance
of the ledger, so a survivor of it is an equivalent mutant or a blind spot, not a loose
tolerance. Fixed, not derived from a claim's declared tolerance (a text, not parsed)."""
VERDICTS = ("killed", "survives", "untested", "skipped")
KILLING = ("FAIL", "ERROR", "TIMEOUT")
"""Statuses under a mutation that kill a (non-erratum) claim; an erratum is killed by any
status but PASS."""
RECORD = Path(__file__).resolve().parents[1] / "configs" / "ledger" / "mutation.json"
"""The committed record of the expected verdict per claim (quick profile, step STEP)."""
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
    for obj in _derivations(inspect.unwrap(c.check)):
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
    or one leaf (``"first"``, ``"last"``: :func:`perturb_one`)."""
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
    (:func:`_one_kind`): a float for a float, an array for an array of the same shape; two of
    different kinds (a size and a rate, an (n, d) array and a vector) are left, since their swap
    is a type or shape error, not a wrong value."""
    first = 1 if method else 0

    def mutant(*args, **kwargs):
        if len(args) >= first + 2 and _one_kind(args[first], args[first + 1]):
            args = (*args[:first], args[first + 1], args[first], *args[first + 2:])
        return original(*args, **kwargs)

    return mutant


def _one_kind(a: object, b: object, depth: int = 0) -> bool:
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
        return len(a) == len(b) and all(_one_kind(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_one_kind(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (str, bytes, bool, int, float, complex, type(None))):
        return True
    fields_a, fields_b = getattr(a, "__dict__", None), getattr(b, "__dict__", None)
    if isinstance(fields_a, dict) and isinstance(fields_b, dict) and not callable(a):
        return fields_a.keys() == fields_b.keys() and all(
            _one_kind(fields_a[k], fields_b[k], depth + 1) for k in fields_a)
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


def _clear_caches() -> None:
    """Clear every functools cache of a ``resharpen`` module: a cached value computed without
    the mutation would hide it."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("resharpen") or module is None:
            continue
        for obj in list(vars(module).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear):
                clear()


# ----------------------------------------------------------------------------- running
@dataclass(frozen=True)
class Mutation:
    """One run of a check with one target mutated by one operator."""

    target: str
    status: str  # PASS | FAIL | INCONCLUSIVE | ERROR | TIMEOUT
    perturbed: int  # calls that returned a perturbed value (0: nothing was mutated)
    measured: str
    detail: str
    seconds: float
    operator: str = "up"  # OPERATORS
    note: str = ""  # what a structural mutation changed


PAIR_VERDICTS = ("killed", "killed by an exception", "survives", "untested")
"""The verdict of one (claim, function) pair: killed by a status change (a FAIL, or for a claim
that does not PASS unmutated any other status); killed only by an ERROR or TIMEOUT; survives
(every operator that perturbed a value left the status as it was); untested (no operator
perturbed a value)."""


@dataclass(frozen=True)
class Pair:
    """The verdict of one (claim, mutated function) pair, and the status under each operator
    (``"-"``: the operator perturbed nothing or does not apply)."""

    target: str
    verdict: str  # PAIR_VERDICTS
    statuses: dict


@dataclass(frozen=True)
class MutationResult:
    """The mutation test of one claim."""

    id: str
    erratum: bool
    baseline: str  # the unmutated status
    baseline_measured: str
    baseline_seconds: float
    verdict: str  # killed | survives | untested | skipped
    killed_by: list[str]
    mutations: list[Mutation]
    note: str = ""
    pairs: list[Pair] = field(default_factory=list)

    @property
    def tried(self) -> int:
        """Mutations that perturbed at least one value."""
        return sum(m.perturbed > 0 for m in self.mutations)


def _run(c: Claim, profile: str, target: Target | None, step: float,
         operator: str = "up") -> dict:
    """Run the check (mutated by ``target`` and ``operator`` when given); a plain dict for the
    pipe."""
    _clear_caches()
    note = ""
    if target is None:
        record, perturbed = run_claim(c, profile), 0
    else:
        with mutated(target, step, operator) as counter:
            record = run_claim(c, profile)
        perturbed, note = counter.perturbed, counter.note
    return {"status": record.status, "perturbed": perturbed, "measured": record.measured,
            "detail": record.detail, "seconds": record.seconds, "note": note}


def _isolated(c: Claim, profile: str, target: Target | None, step: float,
              timeout: float, operator: str = "up") -> dict:
    """:func:`_run` in a forked child process, killed after ``timeout`` seconds."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            import torch

            torch.set_num_threads(1)
        except ImportError:
            pass
        try:
            send.send(_run(c, profile, target, step, operator))
        except Exception as exc:  # a result that does not pickle, say
            send.send({"status": "ERROR", "perturbed": 0, "measured": "-",
                       "detail": f"{type(exc).__name__}: {exc}", "seconds": 0.0, "note": ""})

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child
        # runs only this check; not a daemon, so that a check may start its own process pool
        # (a quick sweep it trains); the child is killed and joined below in any case
        process = context.Process(target=child, daemon=False)
        process.start()
    send.close()
    try:
        if receive.poll(timeout):
            result = receive.recv()
        else:
            result = {"status": "TIMEOUT", "perturbed": 1, "measured": "-",
                      "detail": f"no result within {timeout:g} s",
                      "seconds": round(time.perf_counter() - start, 3), "note": ""}
    except EOFError:  # the child died without a result
        result = {"status": "ERROR", "perturbed": 1, "measured": "-",
                  "detail": f"the child process died (exit code {process.exitcode})",
                  "seconds": round(time.perf_counter() - start, 3), "note": ""}
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receive.close()
    return result


def kills(c: Claim, baseline: str, status: str) -> bool:
    """Whether ``status`` under a mutation differs from the unmutated ``baseline`` in a way that
    shows the check depends on the mutated function: for a (non-erratum) claim that PASSes, a
    FAIL, ERROR or TIMEOUT (INCONCLUSIVE is not a disagreement); for an erratum that PASSes, any
    other status; for a claim that FAILs or is INCONCLUSIVE unmutated, any other status (a
    mutation may change it in either direction)."""
    if baseline == "PASS":
        return status != "PASS" if c.erratum else status in KILLING
    return status != baseline


def pair_verdict(c: Claim, baseline: str, mutations: Sequence[Mutation]) -> str:
    """The verdict (PAIR_VERDICTS) of one target from its mutations (one per operator)."""
    tried = [m for m in mutations if m.perturbed]
    if not tried:
        return "untested"
    killing = [m for m in tried if kills(c, baseline, m.status)]
    if any(m.status not in ("ERROR", "TIMEOUT") for m in killing):
        return "killed"
    return "killed by an exception" if killing else "survives"


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


def _ladder_not_needed(c: Claim, baseline: str, operator: str,
                       done: Sequence[Mutation]) -> str:
    """Why a LADDER operator need not run on a target (empty: it runs), from the mutations
    ``done`` on it so far: the target is already killed by a status change (its pair verdict
    cannot change), or ``up`` ran and perturbed no value (the ladder moves only what ``up``
    moves)."""
    if operator not in LADDER:
        return ""
    if pair_verdict(c, baseline, done) == "killed":
        return "not run: already killed by a status change"
    if any(m.operator == "up" and m.status != "not run" and not m.perturbed for m in done):
        return "not run: up perturbed no value"
    return ""


def mutate_claim(c: Claim, profile: str = "quick", *, step: float = STEP,
                 isolate: bool = True, timeout_factor: float = 10.0,
                 operators: Sequence[str] = tuple(OPERATORS)) -> MutationResult:
    """The mutation test of one claim: each target under each operator (see the module
    docstring for the verdicts), a verdict per (claim, function) pair and one for the claim.

    ``step``: the size of ``up`` and ``down``. ``isolate``: run each check in a forked child
    (the default; False runs in this process, for tests of checks without caches). A mutated
    run is stopped after ``timeout_factor`` times the unmutated run's time plus 30 s: TIMEOUT.
    A claim that does not PASS unmutated is tested too (a mutation must be able to change its
    status); one whose unmutated check raises is untested."""
    unknown = [o for o in operators if o not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown mutation operators {unknown}; one of {tuple(OPERATORS)}")

    def run(target: Target | None, timeout: float, operator: str = "up") -> dict:
        return _isolated(c, profile, target, step, timeout, operator) if isolate else \
            _run(c, profile, target, step, operator)

    base = run(None, 3600.0)
    common = dict(id=c.id, erratum=c.erratum, baseline=base["status"],
                  baseline_measured=base["measured"], baseline_seconds=base["seconds"])
    if base["status"] == "ERROR":
        return MutationResult(**common, verdict="untested", killed_by=[], mutations=[],
                              note="unmutated check is ERROR")
    found = targets(c)
    timeout = timeout_factor * base["seconds"] + 30.0
    mutations, pairs = [], []
    for target in found:
        mine = []
        for operator in operators:
            if not applies(target, operator):  # decided before forking: nothing to mutate
                mine.append(Mutation(target.name, "-", 0, "-", "operator does not apply", 0.0,
                                     operator, ""))
                continue
            reason = _ladder_not_needed(c, base["status"], operator, mine)
            if reason:
                mine.append(Mutation(target.name, "not run", 0, "-", reason, 0.0, operator, ""))
                continue
            result = run(target, timeout, operator)
            mine.append(Mutation(target.name, result["status"], result["perturbed"],
                                 result["measured"], result["detail"], result["seconds"],
                                 operator, result.get("note", "")))
        mutations += mine
        pairs.append(Pair(target.name, pair_verdict(c, base["status"], mine),
                          {m.operator: m.status if m.perturbed or m.status == "not run"
                           else "-" for m in mine}))
    killed_by = [f"{m.target} {m.operator} ({m.status})" for m in mutations
                 if m.perturbed and kills(c, base["status"], m.status)]
    if killed_by:
        verdict, note = "killed", ""
    elif any(m.perturbed for m in mutations):
        verdict, note = "survives", ""
    else:
        verdict = "untested"
        note = ("no derivations" if not found else
                "no mutation perturbed a value (" + ", ".join(
                    t.name.rsplit(".", 1)[-1] for t in found) + ")")
    if base["status"] != "PASS":
        note = "; ".join(x for x in (note, f"unmutated check is {base['status']}") if x)
    return MutationResult(**common, verdict=verdict, killed_by=killed_by, mutations=mutations,
                          note=note, pairs=pairs)


def run_mutations(claims: Sequence[Claim], profile: str = "quick", *, step: float = STEP,
                  costs: Sequence[str] = ("fast",), operators: Sequence[str] = tuple(OPERATORS),
                  on_done: Callable[[MutationResult], None] | None = None) \
        -> list[MutationResult]:
    """The mutation test of each claim, in order. What is skipped is decided by the cost class
    each claim declares (``@claim(cost=...)``), never by a measured time: a claim whose cost is
    not in ``costs`` is ``skipped`` (default: the ``fast`` claims run, the ``slow`` ones, which
    train or read sweeps, are skipped; ``costs=("fast", "slow")`` runs every claim)."""
    results = []
    for c in claims:
        if c.cost not in costs:
            result = MutationResult(c.id, c.erratum, "-", "-", 0.0, "skipped", [], [],
                                    f"declared cost {c.cost}")
        else:
            result = mutate_claim(c, profile, step=step, operators=operators)
        results.append(result)
        if on_done:
            on_done(result)
    return results


# ----------------------------------------------------------------------------- reporting
def summary(results: Sequence[MutationResult]) -> str:
    """``K of N claims killed, S survive, U untested`` (+ the kills by an exception or a timeout
    only, and the skipped claims)."""
    count = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    tested = count["killed"] + count["survives"] + count["untested"]
    line = (f"{count['killed']} of {tested} claims killed, {count['survives']} survive, "
            f"{count['untested']} untested")
    crashed = sum(r.verdict == "killed" and all(k.endswith(("(ERROR)", "(TIMEOUT)"))
                                                for k in r.killed_by) for r in results)
    if crashed:
        line += f"; {crashed} of the kills only by an ERROR or TIMEOUT, no FAIL"
    if count["skipped"]:
        line += f"; {count['skipped']} skipped (declared cost class not run)"
    pairs = [p for r in results for p in r.pairs]
    if pairs:
        by = {v: sum(p.verdict == v for p in pairs) for v in PAIR_VERDICTS}
        tried = len(pairs) - by["untested"]
        rate = (f" ({by['killed'] / tried:.1%} of the {tried} pairs some operator perturbed, "
                f"{by['killed'] / len(pairs):.1%} of all)") if tried else ""
        line += (f"; (claim, function) pairs: {by['killed']} of {len(pairs)} killed by a status "
                 f"change{rate}, {by['killed by an exception']} only by an exception, "
                 f"{by['survives']} survive, {by['untested']} untested")
    return line


def per_operator(results: Sequence[MutationResult]) -> dict[str, dict[str, int]]:
    """Per operator: the runs that perturbed a value, and of those the runs that killed by a
    status change (not an exception) and those that killed by an ERROR or TIMEOUT (over the
    claims run; a run of an operator that does not apply perturbs nothing)."""
    out = {}
    for operator in OPERATORS:
        runs = [(r, m) for r in results for m in r.mutations
                if m.operator == operator and m.perturbed]
        killing = [m for r, m in runs if kills(r, r.baseline, m.status)]  # r.erratum as c's
        out[operator] = {"perturbed": len(runs),
                         "killed": sum(m.status not in ("ERROR", "TIMEOUT") for m in killing),
                         "by an exception": sum(m.status in ("ERROR", "TIMEOUT")
                                                for m in killing)}
    return out


def format_pairs(results: Sequence[MutationResult]) -> str:
    """One line per (claim, function) pair: its verdict and the status under each operator."""
    lines = []
    for r in results:
        for p in r.pairs:
            statuses = " ".join(f"{op}:{status}" for op, status in p.statuses.items())
            lines.append(f"{r.id}  {_short(p.target)}  {p.verdict}  [{statuses}]")
    return "\n".join(lines)


def format_table(results: Sequence[MutationResult]) -> str:
    """id, mutations tried (that perturbed a value) / mutations run, killed by, verdict."""
    rows = [("id", "tried", "killed by", "verdict")]
    for r in results:
        killer = r.killed_by[0] + (f" +{len(r.killed_by) - 1}" if len(r.killed_by) > 1 else "") \
            if r.killed_by else "-"
        verdict = r.verdict + (f" ({r.note})" if r.note else "")
        rows.append((r.id, f"{r.tried}/{len(r.mutations)}", _short(killer), verdict))
    widths = [min(max(len(row[i]) for row in rows), cap) for i, cap in enumerate((46, 6, 56, 90))]
    lines = ["  ".join(str(x)[:w].ljust(w) for x, w in zip(row, widths)).rstrip()
             for row in rows]
    pairs = format_pairs(results)
    return "\n".join(lines + (["", "(claim, function) pairs:", pairs] if pairs else [])
                     + [summary(results)])


def _short(name: str) -> str:
    """``resharpen.theory.collapse.stack.simulate (FAIL)`` -> ``stack.simulate (FAIL)``."""
    head, _, tail = name.partition(" ")
    parts = head.split(".")
    module_end = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
    return ".".join(parts[max(module_end - 1, 0):]) + (f" {tail}" if tail else "")


def to_json(results: Sequence[MutationResult], profile: str, step: float = STEP) -> str:
    count = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    return dumps_json({"profile": profile, "perturbation": f"x -> x (1 +- {step:g}) +- {step:g}; "
                                                           "int +- 1; bool negated",
                       "ladder": f"x -> x (1 +- {LARGE_STEP:g}) +- {LARGE_STEP:g} "
                                 f"({', '.join(LADDER)}), while a target is not killed",
                       "operators": OPERATORS,
                       "summary": {**count, "line": summary(results)},
                       "claims": [{**asdict(r), "tried": r.tried} for r in results]},
                      indent=2)


# ----------------------------------------------------------------------------- the record
def read_record(path: str | Path = RECORD) -> dict[str, dict]:
    """The record's ``{id: {"verdict", "seconds", "note", "diagnosis", "functions"}}``;
    ValueError naming the file when it is not a record: a verdict not in VERDICTS, seconds that
    are not a number, a survivor without a diagnosis, or a ``functions`` entry (the verdict per
    (claim, function) pair; an older entry may have none) whose verdict is not
    in PAIR_VERDICTS or that survives without a diagnosis, or a pair flagged ``equivalent``
    without ``why_equivalent`` (why no data could change the claim's truth)."""
    path = Path(path)
    try:
        claims = json.loads(path.read_text())["claims"]
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a mutation record ({type(exc).__name__}: {exc})") \
            from None
    for claim_id, entry in claims.items():
        if not isinstance(entry, dict) or entry.get("verdict") not in VERDICTS \
                or not isinstance(entry.get("seconds"), (int, float)):
            raise ValueError(f"{path}: claim {claim_id!r} needs a verdict (one of {VERDICTS}) "
                             "and the seconds of its unmutated quick check")
        if entry["verdict"] == "survives" and not entry.get("diagnosis", "").strip():
            raise ValueError(f"{path}: survivor {claim_id!r} has no diagnosis")
        for target, pair in (entry.get("functions") or {}).items():
            if not isinstance(pair, dict) or pair.get("verdict") not in PAIR_VERDICTS:
                raise ValueError(f"{path}: {claim_id!r}, {target}: a function's verdict must be "
                                 f"one of {PAIR_VERDICTS}")
            if pair["verdict"] == "survives" and not pair.get("diagnosis", "").strip():
                raise ValueError(f"{path}: surviving pair ({claim_id!r}, {target}) has no "
                                 "diagnosis")
            if "equivalent" in pair and (
                    not isinstance(pair["equivalent"], bool)
                    or pair["verdict"] not in ("survives", "killed by an exception")
                    or not pair.get("diagnosis", "").strip()):
                raise ValueError(f"{path}: ({claim_id!r}, {target}): 'equivalent' is true or "
                                 "false, on a pair that survives or is killed only by an "
                                 "exception, beside its diagnosis")
            if pair.get("equivalent") and not pair.get("why_equivalent", "").strip():
                raise ValueError(f"{path}: ({claim_id!r}, {target}): a pair flagged equivalent "
                                 "needs 'why_equivalent', a sentence saying why no data could "
                                 "change the claim's truth under any mutant of the function")
    return claims


def mutation_score(pairs: Sequence[tuple[str, bool]]) -> dict[str, float | int]:
    """The mutation score of (verdict, equivalent) pairs, the standard one (killed over the
    mutants that are not equivalent; Jia & Harman, IEEE TSE 37(5), 2011) beside the plain rate:
    ``perturbed`` (pairs some operator perturbed: not untested), ``killed`` (by a status
    change), ``equivalent`` (pairs whose written diagnosis is an equivalent mutant: no operator's
    mutant can change a correct check's status on this data, apart from a stillborn one that
    raises on an invalid call, a start of the wrong shape or a token outside the vocabulary),
    ``rate`` = killed / perturbed and ``score`` = killed / (perturbed - equivalent). A pair
    killed only by an exception that is not diagnosed equivalent counts as not killed in both."""
    perturbed = sum(verdict != "untested" for verdict, _ in pairs)
    killed = sum(verdict == "killed" for verdict, _ in pairs)
    equivalent = sum(bool(eq) and verdict in ("survives", "killed by an exception")
                     for verdict, eq in pairs)
    live = perturbed - equivalent
    return {"perturbed": perturbed, "killed": killed, "equivalent": equivalent,
            "rate": killed / perturbed if perturbed else math.nan,
            "score": killed / live if live else math.nan}


def record_numbers(record: dict[str, dict], claim_ids: Iterable[str]) -> dict:
    """The pair counts of the record (:func:`read_record`) over the entries of ``claim_ids``
    (the fast claims of the registry: the ones its run mutated): ``pairs``, each verdict's
    count, and :func:`mutation_score` of their (verdict, equivalent) flags."""
    pairs = [(pair["verdict"], pair.get("equivalent", False)) for claim_id in claim_ids
             for pair in (record[claim_id].get("functions") or {}).values()]
    counts = {v: sum(verdict == v for verdict, _ in pairs) for v in PAIR_VERDICTS}
    return {"pairs": len(pairs), **counts, **mutation_score(pairs)}


def record_score_text(record: dict[str, dict], claim_ids: Iterable[str]) -> str:
    """The plain rate and the mutation score of the record, as the docs quote them (one
    sentence, computed by :func:`record_numbers`; docs/ledger.md and docs/results.md hold this
    text between markers and tests/core/test_mutation_record.py checks it)."""
    n = record_numbers(record, claim_ids)
    live = n["perturbed"] - n["equivalent"]
    return (f"Of the {n['pairs']} (claim, function) pairs of the fast claims, {n['perturbed']} "
            f"were perturbed by some operator; {n['killed']} of them were killed by a status "
            f"change, the plain rate {n['rate']:.1%} ({n['killed by an exception']} killed only "
            f"by an exception, {n['survives']} survive, {n['untested']} untested); the mutation "
            f"score, over the {live} perturbed pairs not diagnosed equivalent mutants "
            f"({n['equivalent']} are), is {n['killed']} / {live} = {n['score']:.1%}.")


def score_line(score: dict) -> str:
    """The record's line for :func:`mutation_score`."""
    return (f"mutation score {score['killed']} of the {score['perturbed'] - score['equivalent']} "
            f"perturbed pairs not diagnosed equivalent mutants = {score['score']:.1%} "
            f"({score['equivalent']} equivalent; {score['rate']:.1%} of all "
            f"{score['perturbed']} perturbed)")


def against_record(results: Sequence[MutationResult], record: dict[str, dict]) -> list[str]:
    """One line per regression of ``results`` against the record.

    Per claim: a claim recorded ``killed`` that survives, or whose unmutated check passes but no
    mutation perturbs a value any more; a survivor without a recorded diagnosis. Per (claim,
    function) pair, for a claim whose record entry has ``functions``: a pair recorded killed (by
    a status change) that now survives, is killed only by an exception or is untested, and a
    surviving pair without a diagnosis. Skipped claims
    are not compared, nor, for an entry without ``functions`` (written before every claim was
    mutated), a claim whose unmutated check does not PASS."""
    lines = []
    for r in results:
        if r.verdict == "skipped":
            continue
        entry = record.get(r.id, {})
        was, diagnosis = entry.get("verdict"), entry.get("diagnosis", "").strip()
        functions = entry.get("functions")
        if r.baseline != "PASS" and functions is None:
            continue
        if r.verdict == "survives" and was == "killed":
            lines.append(f"{r.id}: killed -> survives (every mutation of "
                         f"{', '.join(sorted({m.target for m in r.mutations if m.perturbed}))} "
                         "leaves its status)")
        elif r.verdict == "survives" and not diagnosis and not functions:
            lines.append(f"{r.id}: survives, and the record has no diagnosis (was "
                         f"{was or 'not recorded'})")
        elif r.verdict == "untested" and r.baseline == "PASS" and was == "killed":
            lines.append(f"{r.id}: killed -> untested ({r.note})")
        for p in r.pairs if functions is not None else []:
            old = functions.get(p.target, {})
            if p.verdict != "killed" and old.get("verdict") == "killed":
                lines.append(f"{r.id}, {p.target}: killed -> {p.verdict} {p.statuses}")
            elif p.verdict == "survives" and not old.get("diagnosis", "").strip():
                lines.append(f"{r.id}, {p.target}: survives {p.statuses}, and the record has "
                             "no diagnosis")
    return lines


def record_entry(r: MutationResult, before: dict) -> dict:
    """The record's entry of one claim's result ``r``, ``before`` its old entry ({} for a new
    claim): its verdict and unmutated seconds, the note of an untested or skipped claim, the
    verdict and operator statuses of each (claim, function) pair, and the diagnoses and
    ``equivalent`` flags kept from ``before`` (of a surviving claim or pair: empty for a new
    one, fill it in by hand). A skipped result keeps an old entry that has per-function verdicts
    (it was run under the operators with ``--costs all``); otherwise it is recorded ``skipped``
    with the reason (its declared cost class), the old verdict, if any, named in the note as an
    earlier one-operator verdict that nothing checks any more."""
    if r.verdict == "skipped":
        if before.get("functions"):
            return before
        note = r.note
        if before.get("verdict") not in (None, "skipped"):
            note += (f"; the record before the per-function operators had "
                     f"{before['verdict']} (`up` only, not compared)")
        return {"verdict": "skipped", "seconds": round(float(before.get("seconds", 0.0)), 3),
                "note": note}
    entry = {"verdict": r.verdict, "seconds": round(float(r.baseline_seconds), 3)}
    if r.note:
        entry["note"] = r.note
    if r.verdict == "survives" or before.get("diagnosis"):
        entry["diagnosis"] = before.get("diagnosis", "")
    if r.pairs:
        entry["functions"] = {}
        for p in r.pairs:
            pair = {"verdict": p.verdict, "statuses": p.statuses}
            was = (before.get("functions") or {}).get(p.target, {})
            kept = was.get("diagnosis", "")
            if p.verdict == "survives" or kept:
                pair["diagnosis"] = kept
            if "equivalent" in was and p.verdict in ("survives", "killed by an exception"):
                pair["equivalent"] = was["equivalent"]
                if was.get("why_equivalent"):
                    pair["why_equivalent"] = was["why_equivalent"]
            entry["functions"][p.target] = pair
    return entry


def _record_text(claims: dict[str, dict], results: Sequence[MutationResult],
                 scored: Sequence[tuple[str, bool]]) -> str:
    """The record file (JSON text) of the entries ``claims``, with the :func:`summary` and
    :func:`per_operator` of ``results`` and the :func:`mutation_score` of ``scored``."""
    return dumps_json({"profile": "quick", "step": STEP, "large_step": LARGE_STEP,
                       "ladder": list(LADDER), "operators": OPERATORS,
                       "summary": summary(results),
                       "score": score_line(mutation_score(scored)),
                       "per_operator": per_operator(results), "claims": claims},
                      indent=1, sort_keys=False) + "\n"


def _scored(entries: Iterable[dict]) -> list[tuple[str, bool]]:
    """(verdict, equivalent) of every (claim, function) pair of the record ``entries``."""
    return [(pair["verdict"], pair.get("equivalent", False)) for entry in entries
            for pair in (entry.get("functions") or {}).values()]


def record_of(results: Sequence[MutationResult], old: dict[str, dict] | None = None) -> str:
    """The record (JSON text) of a run: the entry of each claim (:func:`record_entry`, keeping
    the diagnoses of ``old``), with the run's :func:`summary`, :func:`per_operator` and
    :func:`mutation_score`."""
    old = old or {}
    claims = {r.id: record_entry(r, old.get(r.id, {})) for r in sorted(results, key=lambda r: r.id)}
    scored = _scored(claims[r.id] for r in results if r.verdict != "skipped")
    return _record_text(claims, results, scored)


def unmutated_status(entry: dict) -> str:
    """The unmutated status of a record entry: PASS unless its note names another."""
    for status in ("FAIL", "INCONCLUSIVE"):
        if f"unmutated check is {status}" in entry.get("note", ""):
            return status
    return "PASS"


def results_of_record(claims: dict[str, dict], declared: dict[str, dict]) -> list[MutationResult]:
    """The results a run of the default cost class (``verify --mutate``: the fast claims
    mutated, the slow ones skipped) gives for the record's entries ``claims``, rebuilt from their
    per-operator statuses (``"-"``: nothing perturbed; ``"not run"``: the ladder was not
    needed); ``declared`` (:func:`...declarations.all_declarations`) gives each claim's cost and
    erratum flag. The record's summary lines are computed from them."""
    results = []
    for claim_id, entry in claims.items():
        erratum = bool(declared[claim_id].get("erratum", False))
        if declared[claim_id]["cost"] != "fast":
            results.append(MutationResult(claim_id, erratum, "-", "-", 0.0, "skipped", [], [],
                                          f"declared cost {declared[claim_id]['cost']}"))
            continue
        base = unmutated_status(entry)
        pairs, mutations = [], []
        for target, pair in (entry.get("functions") or {}).items():
            pairs.append(Pair(target, pair["verdict"], pair["statuses"]))
            mutations += [Mutation(target, status, 1, "-", "", 0.0, operator)
                          for operator, status in pair["statuses"].items()
                          if status not in ("-", "not run")]
        result = MutationResult(claim_id, erratum, base, "-", float(entry["seconds"]),
                                entry["verdict"], [], mutations, entry.get("note", ""), pairs)
        killed_by = [f"{m.target} {m.operator} ({m.status})" for m in mutations
                     if kills(result, base, m.status)]
        results.append(dataclasses.replace(result, killed_by=killed_by))
    return results


def updated_record(results: Sequence[MutationResult], declared: dict[str, dict],
                   path: str | Path = RECORD) -> str:
    """The record at ``path`` (JSON text) with the entries of ``results`` added or replaced
    (:func:`record_entry`, keeping the diagnoses), the entries of claims not in ``declared`` (the
    claims no longer declared) dropped, every other entry as it was; entries sorted by id. Its
    summary, per-operator counts and score are those of the whole record
    (:func:`results_of_record`), not of ``results`` alone."""
    old = read_record(path)
    claims = {claim_id: entry for claim_id, entry in old.items() if claim_id in declared}
    claims.update({r.id: record_entry(r, old.get(r.id, {})) for r in results})
    claims = dict(sorted(claims.items()))
    replayed = results_of_record(claims, declared)
    scored = _scored(claims[r.id] for r in replayed if r.verdict != "skipped")
    return _record_text(claims, replayed, scored)


def main(argv: list[str] | None = None) -> None:
    """``python -m resharpen.experiments.ledger.mutation``: print :func:`record_score_text` of
    the committed record over the declared fast claims (read without importing a slice)."""
    from resharpen.experiments.ledger.declarations import all_declarations

    if argv if argv is not None else sys.argv[1:]:
        raise SystemExit("usage: python -m resharpen.experiments.ledger.mutation (prints the "
                         "plain rate and the mutation score of the committed record)")
    print(record_score_text(read_record(), [claim_id for claim_id, entry in
                                            all_declarations().items() if entry["cost"] == "fast"]))


if __name__ == "__main__":
    main()
