"""The claim ledger: every statement the package checks, with its source and its check.

A *claim* is a registered, re-runnable statement: an id, a source (an arXiv id with a theorem or
section, or "reconstructed"), a one-line statement, a kind (``symbolic`` | ``numeric`` |
``experiment``), a tolerance stated in words, and a check. The check is a function of the profile
(``quick`` or ``full``) returning an :class:`Outcome` (measured, expected, passed, detail).

An *erratum* is a claim whose check reproduces a counterexample to a paper's statement; it passes
when the counterexample is reproduced.

Claims are declared in one module per id prefix, in the experiment slice they belong to
(``resharpen.experiments.<slice>.claims*``); :func:`resharpen.claims.all_claims` imports them all.
Every id appears literally in its module, and :func:`where` names the file and line of a claim,
of its check and of the derivations the check uses. This module is the ledger's machinery only:
it imports no slice and no torch.
"""
from __future__ import annotations

import dis
import fnmatch
import importlib
import inspect
import linecache
import math
import sys
import time
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from resharpen.experiments.core.profiles import PROFILES, check_profile  # noqa: F401 (PROFILES)

KINDS = ("symbolic", "numeric", "experiment")
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")
"""PASS and FAIL: the measurement agrees / disagrees with the expectation at the tolerance fixed
beforehand. INCONCLUSIVE: the data cannot decide (too few runs for the test's power, a tiny grid,
a standard error that is not finite); the detail says why and which command would decide it.
ERROR: the check itself raised."""


@dataclass(frozen=True)
class Outcome:
    """What a check measured, what the theory expects, and whether they agree."""

    measured: object
    expected: object
    passed: bool
    detail: str = ""
    inconclusive: str = ""  # why the data cannot decide, and the command that would ("" = it can)


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    kind: str
    tolerance: str
    check: Callable[[str], Outcome] = field(repr=False, compare=False)
    erratum: bool = False
    module: str = ""


@dataclass(frozen=True)
class Record:
    """One row of the ledger: the claim, its outcome and how long the check took."""

    id: str
    source: str
    statement: str
    kind: str
    tolerance: str
    erratum: bool
    measured: str
    expected: str
    status: str  # PASS | FAIL | ERROR
    detail: str
    seconds: float


_REGISTRY: dict[str, Claim] = {}


def claim(id: str, *, source: str, statement: str, kind: str, tolerance: str,
          erratum: bool = False) -> Callable:
    """Decorator registering ``check(profile) -> Outcome`` as the check of a claim."""
    if kind not in KINDS:
        raise ValueError(f"claim kind {kind!r} is not one of {KINDS}")

    def register(check: Callable[[str], Outcome]) -> Callable[[str], Outcome]:
        if id in _REGISTRY and _REGISTRY[id].module != check.__module__:
            raise ValueError(f"claim id {id!r} is registered twice "
                             f"({_REGISTRY[id].module} and {check.__module__})")
        _REGISTRY[id] = Claim(id, source, statement, kind, tolerance, check, erratum,
                              check.__module__)
        return check

    return register


def registered() -> list[Claim]:
    """Every claim registered so far, by id. The claim modules register on import; the whole
    ledger is :func:`resharpen.claims.all_claims`, which imports every slice's claim modules."""
    return sorted(_REGISTRY.values(), key=lambda c: c.id)


def select(claims: Iterable[Claim], patterns: Sequence[str] | None) -> list[Claim]:
    """Claims whose id matches any glob in ``patterns`` (all when None or empty).

    A pattern matching no claim is an error: a typo must not silently verify nothing."""
    claims = list(claims)
    if not patterns:
        return claims
    chosen = []
    for pattern in patterns:
        hits = [c for c in claims if fnmatch.fnmatchcase(c.id, pattern)]
        if not hits:
            raise ValueError(f"claim pattern {pattern!r} matches no claim; "
                             f"known ids look like {claims[0].id!r} (see `resharpen verify --list`)")
        chosen.extend(c for c in hits if c not in chosen)
    return sorted(chosen, key=lambda c: c.id)


# ----------------------------------------------------------------------------- where
# Modules whose functions are the ledger's own machinery, not derivations a check uses.
_MACHINERY = (__name__, "resharpen.experiments.core.profiles")


def where(c: Claim) -> list[str]:
    """Where to read a claim: ``"path:line what"`` lines, paths relative to the working folder.

    First the line of the claim's module where its id is written (for a check made by a factory,
    the line that calls the factory with that id), then the check function (its ``@claim`` line),
    then every derivation the check uses: the functions and classes of other ``resharpen``
    modules (theory, constructions, experiments) that its code names, directly or through the
    helper functions of its own module, in the order they are first named."""
    check = inspect.unwrap(c.check)
    entries = []
    declared = _id_line(c)
    if declared is not None:
        entries.append((*declared, c.id))
    entries.append((*_source_line(check), f"{check.__module__}.{check.__qualname__}"))
    entries += [(*_source_line(obj), f"{obj.__module__}.{obj.__qualname__}")
                for obj in _derivations(check)]
    lines: dict[tuple[str, int], list[str]] = {}
    for path, line, what in entries:
        lines.setdefault((path, line), []).append(what)
    return [f"{_shown(path)}:{line} {', '.join(whats)}" for (path, line), whats in lines.items()]


def _source_line(obj: object) -> tuple[str, int]:
    """(file, first line) of a function (its first decorator's line) or a class."""
    path = inspect.getsourcefile(obj) or inspect.getfile(obj)
    if isinstance(obj, types.FunctionType):
        return path, obj.__code__.co_firstlineno
    return path, inspect.getsourcelines(obj)[1]


def _id_line(c: Claim) -> tuple[str, int] | None:
    """(file, line) of the first line of the claim's module that writes its id as a string."""
    module = sys.modules.get(c.module) or importlib.import_module(c.module)
    path = inspect.getsourcefile(module)
    if path is None:
        return None
    quoted = (f'"{c.id}"', f"'{c.id}'")
    for number, text in enumerate(linecache.getlines(path), start=1):
        if any(q in text for q in quoted):
            return path, number
    return None


def _shown(path: str) -> str:
    """``path`` relative to the working folder when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def _derivations(check: Callable) -> list[object]:
    """Functions and classes of other ``resharpen`` modules that ``check`` names, following the
    helper functions of the check's own module."""
    home = check.__module__
    visited: set[types.CodeType] = set()
    found: list[object] = []

    def visit(function: types.FunctionType) -> None:
        if function.__code__ in visited:
            return
        visited.add(function.__code__)
        cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
        closure = {}
        for name, cell in cells.items():
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        for obj in _named_objects(function.__code__, function.__globals__, closure):
            obj = inspect.unwrap(obj) if callable(obj) else obj
            module = getattr(obj, "__module__", None) or ""
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if module == home and inspect.isfunction(obj):
                visit(obj)
            elif module.startswith("resharpen.") and module not in _MACHINERY \
                    and module != home and obj not in found:
                found.append(obj)

    visit(check)
    return found


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")
_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")


def _named_objects(code: types.CodeType, globals_: dict, closure: dict) -> Iterator[object]:
    """Every object that ``code`` (and the code nested in it) names: globals, closure cells and
    names imported in the function, with one level of attribute access (``module.function``)."""
    bound = dict(closure)  # names the function binds to imported objects
    instructions = list(dis.get_instructions(code))
    module: types.ModuleType | None = None  # of the import statement being read
    imported: object = None  # what it imports, until it is stored under a name
    for i, ins in enumerate(instructions):
        if ins.opname == "IMPORT_NAME":
            imported = _module(ins.argval)
            module = imported
        elif ins.opname == "IMPORT_FROM" and module is not None:
            imported = getattr(module, ins.argval, None)
            if imported is None:
                imported = _module(f"{module.__name__}.{ins.argval}")
        elif ins.opname in _STORES and imported is not None:
            bound[ins.argval] = imported
            yield imported
            imported = None
        elif ins.opname in _LOADS:
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                obj = globals_.get(ins.argval)
            else:
                obj = bound.get(ins.argval)
            if obj is None:
                continue
            following = instructions[i + 1] if i + 1 < len(instructions) else None
            if inspect.ismodule(obj) and following is not None \
                    and following.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                obj = getattr(obj, following.argval, None)
            if obj is not None:
                yield obj
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _named_objects(const, globals_, bound)


def _module(name: str) -> types.ModuleType | None:
    """The module ``name`` (imported if it is not yet), or None when it cannot be imported."""
    try:
        return sys.modules.get(name) or importlib.import_module(name)
    except (ImportError, ValueError):  # ValueError: a relative import's empty name
        return None


def format_value(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)


def run_claim(c: Claim, profile: str) -> Record:
    """Run one check; an exception is recorded as ERROR with its message, never raised."""
    check_profile(profile)
    start = time.perf_counter()
    try:
        outcome = c.check(profile)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"check of {c.id} returned {type(outcome).__name__}, not Outcome")
        status = "PASS" if outcome.passed else "FAIL"
        measured, expected, detail = outcome.measured, outcome.expected, outcome.detail
        if outcome.inconclusive:
            status = "INCONCLUSIVE"
            detail = f"{detail} | inconclusive: {outcome.inconclusive}" if detail else \
                f"inconclusive: {outcome.inconclusive}"
    except Exception as exc:  # the ledger reports broken checks rather than dying
        status, measured, expected = "ERROR", "-", "-"
        detail = f"{type(exc).__name__}: {exc} | {traceback.format_exc(limit=2).splitlines()[-1]}"
    return Record(c.id, c.source, c.statement, c.kind, c.tolerance, c.erratum,
                  format_value(measured), format_value(expected), status, detail,
                  round(time.perf_counter() - start, 3))


def _init_worker() -> None:
    """One BLAS/torch thread per worker process: the workers already use every core."""
    import os

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"


def _run_by_id(module: str, claim_id: str, profile: str) -> Record:
    """In a worker process: import the one module that declares the claim, then run it."""
    importlib.import_module(module)
    return run_claim(_REGISTRY[claim_id], profile)


def run_claims(claims: Sequence[Claim], profile: str, workers: int = 1,
               on_done: Callable[[Record], None] | None = None) -> list[Record]:
    """Run checks in ledger order, in this process (workers = 1) or a spawn process pool.

    Checks are independent and seeded, so the records do not depend on ``workers``."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 or len(claims) < 2:
        records = []
        for c in claims:
            records.append(run_claim(c, profile))
            if on_done:
                on_done(records[-1])
        return records
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")
    by_id: dict[str, Record] = {}
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker) as pool:
        # longest-first is unknown; submit in order, collect as they finish
        futures = {pool.submit(_run_by_id, c.module, c.id, profile): c.id for c in claims}
        for future in as_completed(futures):
            record = future.result()
            by_id[record.id] = record
            if on_done:
                on_done(record)
    return [by_id[c.id] for c in claims]


def to_json(records: Sequence[Record], profile: str) -> str:
    summary = {s: sum(r.status == s for r in records) for s in STATUSES}
    from resharpen.experiments.core.io import dumps_json

    return dumps_json({"profile": profile, "summary": summary,
                       "claims": [asdict(r) for r in records]}, indent=2)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: Sequence[Record], profile: str) -> str:
    lines = [f"Claim ledger, profile `{profile}`: "
             f"{sum(r.status == 'PASS' for r in records)}/{len(records)} PASS.", "",
             "| id | source | statement | measured | expected | tolerance | status |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        status = r.status + (" (erratum reproduced)" if r.erratum and r.status == "PASS" else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            r.id, r.source, r.statement, r.measured, r.expected, r.tolerance, status)) + " |")
    return "\n".join(lines) + "\n"
