"""The mutation test of the ledger: does a claim's check notice when its derivations are wrong?

A check is *circular* when its expected value and its measurement come from the same function:
then a wrong function changes both alike and the check still passes. The mutation test finds
such checks by breaking the derivations one at a time. For a claim, the *targets* are the
functions and classes of other ``resharpen`` modules that its check names (the derivations of
:func:`resharpen.experiments.ledger.where.where`, without the statistics that decide, NOT_SUBJECTS);
a class contributes the methods defined in its body. A *mutation* replaces one target by a
wrapper that returns a perturbed value (step = 10^-3 unless asked otherwise),

    x  ->  x (1 + step) + step        (floats, float/complex arrays and tensors, dtype kept;
                                       sympy expressions with Rational(1, 1000))
    n  ->  n + 1                      (ints, integer arrays and tensors)
    b  ->  not b                      (bools, boolean arrays and tensors, sympy true/false)

recursively inside tuples, lists and dicts, and in the float/tensor fields of dataclasses, plain
objects and torch modules (their parameters and buffers, on a copy). Anything else (strings,
paths, None, generators) is returned as it is, and a wrapper that never perturbed a value has not
mutated anything. The wrapper replaces the target in its defining module and under every name a
module bound it to (``from x import f``), and the originals are restored afterwards.

The check is run once unmutated and once under each mutation, each in a forked child process, so
that no cache carries a mutated value into another run. A claim is

* **killed** when a mutation that perturbed a value turns its PASS into FAIL or ERROR (or a
  TIMEOUT; for an erratum: into anything but PASS): the check depends on that derivation. A kill
  by an exception only (a perturbed integer used as an index, say) is weaker evidence than a
  FAIL, and the summary counts those kills apart;
* **survives** when it stays PASS under every such mutation: its measurement and expectation
  move together (circular), or its tolerance is wider than the perturbation, or the mutated
  values never reach the comparison (for instance, every arm of an experiment scaled alike);
* **untested** when no mutation perturbed anything (no derivations, or none whose values can be
  perturbed), or when the unmutated check does not PASS to begin with;
* **skipped** when its unmutated check takes longer than the time budget.

A survivor is a prompt to read the check, not a verdict of circularity; the diagnosis of each
survivor is in docs/ledger.md.

The committed *record* (``experiments/configs/ledger/mutation.json``, :func:`read_record`) holds
the expected verdict of every claim at the default step, the seconds its unmutated quick check
took, and for each survivor its diagnosis. :func:`against_record` turns a run into regressions:
a claim the record has killed that now survives (or that no mutation perturbs any more), and a
survivor the record gives no diagnosis. tests/core/test_mutation_record.py runs it over the
registry (by default the claims declared ``cost="fast"`` whose recorded check took at most
0.4 s, every claim in the ``slow`` test).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import sys
import time
import types
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from resharpen.experiments.core.io import dumps_json
from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.ledger.runner import run_claim
from resharpen.experiments.ledger.where import _derivations

STEP = 1e-3
"""The perturbation x -> x (1 + STEP) + STEP of a float (integers move by 1), the default of
``step`` below; a larger step (``verify --mutate --step 0.1``) tells a loose tolerance from a
circular check among the survivors."""
VERDICTS = ("killed", "survives", "untested", "skipped")
KILLING = ("FAIL", "ERROR", "TIMEOUT")
"""Statuses under a mutation that kill a (non-erratum) claim; an erratum is killed by any
status but PASS."""
RECORD = Path(__file__).resolve().parents[1] / "configs" / "ledger" / "mutation.json"
"""The committed record of the expected verdict per claim (quick profile, step STEP)."""
NOT_SUBJECTS = ("resharpen.experiments.ledger.stats",)
"""Modules whose functions a check uses to decide, not to derive: a mutated p-value or verdict
says nothing about whether the check's measurement and expectation are independent."""


# ----------------------------------------------------------------------------- perturbation
class _Unchanged(Exception):
    """Raised inside :func:`perturb` for a value it does not perturb."""


def perturb(value: object, step: float = STEP) -> tuple[object, bool]:
    """(the perturbed value, whether anything in it was perturbed). Never modifies ``value``."""
    try:
        return _perturbed(value, step, depth=0), True
    except _Unchanged:
        return value, False


def _perturbed(value: object, step: float, depth: int) -> object:
    if depth > 6:
        raise _Unchanged
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, (float, complex)):
        return value * (1 + step) + step
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        return _perturbed_array(value, step, numpy)
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            return _perturbed_tensor(value, step, torch)
        if isinstance(value, torch.nn.Module):
            return _perturbed_module(value, step, torch)
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        return _perturbed_sympy(value, step, sympy)
    if isinstance(value, (tuple, list)):
        return _perturbed_sequence(value, step, depth)
    if isinstance(value, dict):
        return _perturbed_mapping(value, step, depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _perturbed_dataclass(value, step, depth)
    if hasattr(value, "__dict__") and not callable(value) \
            and not isinstance(value, (type, types.ModuleType)):
        return _perturbed_object(value, step, depth)
    raise _Unchanged


def _perturbed_array(value, step, numpy):
    array = numpy.asarray(value)
    if array.dtype == bool:
        out = ~array
    elif numpy.issubdtype(array.dtype, numpy.integer):
        out = array + numpy.ones((), dtype=array.dtype)
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
    return value + 1


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


def _perturbed_sequence(value, step, depth):
    items, changed = [], False
    for item in value:
        try:
            items.append(_perturbed(item, step, depth + 1))
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


def _perturbed_mapping(value, step, depth):
    out, changed = {}, False
    for key, item in value.items():
        try:
            out[key] = _perturbed(item, step, depth + 1)
            changed = True
        except _Unchanged:
            out[key] = item
    if not changed:
        raise _Unchanged
    if type(value) is dict:
        return out
    try:
        return type(value)(out)
    except TypeError:
        raise _Unchanged from None


def _perturbed_fields(pairs, step, depth) -> dict:
    changed = {}
    for name, item in pairs:
        if name.startswith("__"):
            continue
        try:
            changed[name] = _perturbed(item, step, depth + 1)
        except _Unchanged:
            pass
    if not changed:
        raise _Unchanged
    return changed


def _perturbed_dataclass(value, step, depth):
    fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value) if f.init]
    try:
        return dataclasses.replace(value, **_perturbed_fields(fields, step, depth))
    except (TypeError, ValueError):  # a field that validates its value, or init=False state
        raise _Unchanged from None


def _perturbed_object(value, step, depth):
    changed = _perturbed_fields(list(vars(value).items()), step, depth)
    try:
        clone = copy.copy(value)
        for name, item in changed.items():
            object.__setattr__(clone, name, item)
    except Exception:  # an object that refuses to be copied or set: not cheap, skip it
        raise _Unchanged from None
    return clone


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


def _wrapper(original: Callable, counter: Counter, step: float) -> Callable:
    @functools.wraps(original)
    def mutated(*args, **kwargs):
        value, changed = perturb(original(*args, **kwargs), step)
        if changed:
            counter.perturbed += 1
        else:
            counter.unchanged += 1
        return value

    return mutated


@contextmanager
def mutated(target: Target, step: float = STEP) -> Iterator[Counter]:
    """Within the block, ``target`` returns perturbed values wherever it is looked up: in its
    defining module (or class) and under every module-level name bound to it; restored after."""
    counter = Counter()
    patches: list[tuple[object, str, object]] = []  # (namespace owner, attribute, original)
    raw = vars(target.owner)[target.attribute]
    patches.append((target.owner, target.attribute, raw))
    if isinstance(raw, staticmethod):
        replacement = staticmethod(_wrapper(raw.__func__, counter, step))
        function = _unwrapped(raw.__func__)
    else:
        replacement = _wrapper(raw, counter, step)
        function = _unwrapped(raw)
    if not inspect.isclass(target.owner):  # module-level names bound by `from x import f`
        with warnings.catch_warnings():  # reading a deprecated module attribute warns
            warnings.simplefilter("ignore")
            patches += _bindings(target.owner, raw, function)
    try:
        for owner, attribute, original in patches:
            if owner is target.owner and attribute == target.attribute:
                setattr(owner, attribute, replacement)
            else:
                setattr(owner, attribute, _wrapper(original, counter, step))
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
    """One run of a check with one target mutated."""

    target: str
    status: str  # PASS | FAIL | INCONCLUSIVE | ERROR | TIMEOUT
    perturbed: int  # calls that returned a perturbed value (0: nothing was mutated)
    measured: str
    detail: str
    seconds: float


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

    @property
    def tried(self) -> int:
        """Mutations that perturbed at least one value."""
        return sum(m.perturbed > 0 for m in self.mutations)


def _run(c: Claim, profile: str, target: Target | None, step: float) -> dict:
    """Run the check (mutated by ``target`` when given); a plain dict for the pipe."""
    _clear_caches()
    if target is None:
        record, perturbed = run_claim(c, profile), 0
    else:
        with mutated(target, step) as counter:
            record = run_claim(c, profile)
        perturbed = counter.perturbed
    return {"status": record.status, "perturbed": perturbed, "measured": record.measured,
            "detail": record.detail, "seconds": record.seconds}


def _isolated(c: Claim, profile: str, target: Target | None, step: float,
              timeout: float) -> dict:
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
            send.send(_run(c, profile, target, step))
        except Exception as exc:  # a result that does not pickle, say
            send.send({"status": "ERROR", "perturbed": 0, "measured": "-",
                       "detail": f"{type(exc).__name__}: {exc}", "seconds": 0.0})

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
                      "seconds": round(time.perf_counter() - start, 3)}
    except EOFError:  # the child died without a result
        result = {"status": "ERROR", "perturbed": 1, "measured": "-",
                  "detail": f"the child process died (exit code {process.exitcode})",
                  "seconds": round(time.perf_counter() - start, 3)}
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receive.close()
    return result


def mutate_claim(c: Claim, profile: str = "quick", *, step: float = STEP,
                 max_seconds: float | None = None, isolate: bool = True,
                 timeout_factor: float = 10.0) -> MutationResult:
    """The mutation test of one claim (see the module docstring for the verdicts).

    ``step``: the perturbation x -> x (1 + step) + step. ``max_seconds``: skip the mutations
    when the unmutated check took longer. ``isolate``: run each check in a forked child (the
    default; False runs in this process, for tests of checks without caches). A mutated run is
    stopped after ``timeout_factor`` times the unmutated run's time plus 30 s: TIMEOUT."""
    def run(target: Target | None, timeout: float) -> dict:
        return _isolated(c, profile, target, step, timeout) if isolate else \
            _run(c, profile, target, step)

    base = run(None, 3600.0)
    common = dict(id=c.id, erratum=c.erratum, baseline=base["status"],
                  baseline_measured=base["measured"], baseline_seconds=base["seconds"])
    if base["status"] != "PASS":
        return MutationResult(**common, verdict="untested", killed_by=[], mutations=[],
                              note=f"unmutated check is {base['status']}")
    if max_seconds is not None and base["seconds"] > max_seconds:
        return MutationResult(**common, verdict="skipped", killed_by=[], mutations=[],
                              note=f"quick run {base['seconds']:.1f} s > {max_seconds:g} s")
    found = targets(c)
    timeout = timeout_factor * base["seconds"] + 30.0
    mutations = []
    for target in found:
        result = run(target, timeout)
        mutations.append(Mutation(target.name, result["status"], result["perturbed"],
                                  result["measured"], result["detail"], result["seconds"]))
    killing = (lambda s: s != "PASS") if c.erratum else (lambda s: s in KILLING)
    killed_by = [f"{m.target} ({m.status})" for m in mutations
                 if m.perturbed and killing(m.status)]
    if killed_by:
        verdict, note = "killed", ""
    elif any(m.perturbed for m in mutations):
        verdict, note = "survives", ""
    else:
        verdict = "untested"
        note = ("no derivations" if not found else
                "no mutation perturbed a value (" + ", ".join(
                    m.target.rsplit(".", 1)[-1] for m in mutations) + ")")
    return MutationResult(**common, verdict=verdict, killed_by=killed_by, mutations=mutations,
                          note=note)


def skipped_by_timings(c: Claim, seconds: dict[str, float], max_seconds: float) \
        -> MutationResult | None:
    """A ``skipped`` result when a recorded ledger run of the claim took over ``max_seconds``."""
    took = seconds.get(c.id)
    if took is None or took <= max_seconds:
        return None
    return MutationResult(c.id, c.erratum, "-", "-", took, "skipped", [], [],
                          f"quick run {took:.1f} s > {max_seconds:g} s (recorded)")


def recorded_seconds(path: str) -> dict[str, float]:
    """{id: seconds} of a ledger JSON (``resharpen verify --json PATH``); ValueError when the
    file is not one."""
    try:
        data = json.loads(open(path).read())
        return {r["id"]: float(r["seconds"]) for r in data["claims"]}
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path!r} is not a ledger JSON with 'claims' and their 'seconds' "
                         f"(write one with `resharpen verify --json PATH`): {exc}") from None


def run_mutations(claims: Sequence[Claim], profile: str = "quick", *, step: float = STEP,
                  max_seconds: float | None = 5.0, timings: dict[str, float] | None = None,
                  on_done: Callable[[MutationResult], None] | None = None) \
        -> list[MutationResult]:
    """The mutation test of each claim, in order. A claim is skipped when its quick run took
    over ``max_seconds``: as recorded in ``timings`` ({id: seconds} of a ledger run) when it is
    there, else as its unmutated run here took."""
    results = []
    for c in claims:
        recorded = timings is not None and c.id in timings
        result = skipped_by_timings(c, timings, max_seconds) \
            if recorded and max_seconds is not None else None
        if result is None:
            result = mutate_claim(c, profile, step=step,
                                  max_seconds=None if recorded else max_seconds)
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
        line += f"; {count['skipped']} skipped (quick run over the time budget)"
    return line


def format_table(results: Sequence[MutationResult]) -> str:
    """id, mutations tried (that perturbed a value) / targets, killed by, verdict."""
    rows = [("id", "tried", "killed by", "verdict")]
    for r in results:
        killer = r.killed_by[0] + (f" +{len(r.killed_by) - 1}" if len(r.killed_by) > 1 else "") \
            if r.killed_by else "-"
        verdict = r.verdict + (f" ({r.note})" if r.note else "")
        rows.append((r.id, f"{r.tried}/{len(r.mutations)}", _short(killer), verdict))
    widths = [min(max(len(row[i]) for row in rows), cap) for i, cap in enumerate((46, 6, 56, 90))]
    lines = ["  ".join(str(x)[:w].ljust(w) for x, w in zip(row, widths)).rstrip()
             for row in rows]
    return "\n".join(lines + [summary(results)])


def _short(name: str) -> str:
    """``resharpen.theory.collapse.stack.simulate (FAIL)`` -> ``stack.simulate (FAIL)``."""
    head, _, tail = name.partition(" ")
    parts = head.split(".")
    module_end = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
    return ".".join(parts[max(module_end - 1, 0):]) + (f" {tail}" if tail else "")


def to_json(results: Sequence[MutationResult], profile: str, step: float = STEP) -> str:
    count = {v: sum(r.verdict == v for r in results) for v in VERDICTS}
    return dumps_json({"profile": profile, "perturbation": f"x -> x (1 + {step:g}) + {step:g}; "
                                                           "int + 1; bool negated",
                       "summary": {**count, "line": summary(results)},
                       "claims": [{**asdict(r), "tried": r.tried} for r in results]},
                      indent=2)


# ----------------------------------------------------------------------------- the record
def read_record(path: str | Path = RECORD) -> dict[str, dict]:
    """The record's ``{id: {"verdict", "seconds", "diagnosis"}}``; ValueError naming the file
    when it is not a record: a verdict not in VERDICTS, seconds that are not a number, or a
    survivor without a diagnosis."""
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
    return claims


def against_record(results: Sequence[MutationResult], record: dict[str, dict]) -> list[str]:
    """One line per regression of ``results`` against the record: a claim recorded ``killed``
    that survives, or whose unmutated check passes but no mutation perturbs a value any more;
    a survivor without a recorded diagnosis (a new survivor). Skipped claims, and claims whose
    unmutated check does not PASS (the status baseline's business), are not compared."""
    lines = []
    for r in results:
        entry = record.get(r.id, {})
        was, diagnosis = entry.get("verdict"), entry.get("diagnosis", "").strip()
        if r.verdict == "survives" and was == "killed":
            lines.append(f"{r.id}: killed -> survives (every mutation of "
                         f"{', '.join(m.target for m in r.mutations if m.perturbed)} passes)")
        elif r.verdict == "survives" and not diagnosis:
            lines.append(f"{r.id}: survives, and the record has no diagnosis (was "
                         f"{was or 'not recorded'})")
        elif r.verdict == "untested" and r.baseline == "PASS" and was == "killed":
            lines.append(f"{r.id}: killed -> untested ({r.note})")
    return lines


def record_of(results: Sequence[MutationResult], old: dict[str, dict] | None = None) -> str:
    """The record (JSON text) of a run: each claim's verdict and unmutated seconds, the note of
    an untested or skipped claim, and the diagnosis kept from ``old`` (of a survivor: empty for
    a new one, fill it in by hand; of a skipped claim that survives when it is run)."""
    old = old or {}
    claims = {}
    for r in sorted(results, key=lambda r: r.id):
        entry = {"verdict": r.verdict, "seconds": round(float(r.baseline_seconds), 3)}
        if r.note:
            entry["note"] = r.note
        if r.verdict == "survives" or old.get(r.id, {}).get("diagnosis"):
            entry["diagnosis"] = old.get(r.id, {}).get("diagnosis", "")
        claims[r.id] = entry
    return dumps_json({"profile": "quick", "step": STEP, "summary": summary(results),
                       "claims": claims}, indent=1, sort_keys=False) + "\n"
