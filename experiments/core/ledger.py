"""The claim ledger: every statement the package checks, with its source and its check.

A *claim* is a registered, re-runnable statement: an id, a source (an arXiv id with a theorem or
section, or "reconstructed"), a one-line statement, a kind (``symbolic`` | ``numeric`` |
``experiment``), a tolerance stated in words, and a check. The check is a function of the profile
(``quick`` or ``full``) returning an :class:`Outcome` (measured, expected, passed, detail).

An *erratum* is a claim whose check reproduces a counterexample to a paper's statement; it passes
when the counterexample is reproduced.

Claims are declared in one module per id prefix, in the experiment slice they belong to
(``resharpen.experiments.<slice>.claims*``); :func:`resharpen.claims.all_claims` imports them all.
This module is the ledger's machinery only: it imports no slice and no torch.
"""
from __future__ import annotations

import fnmatch
import importlib
import json
import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

KINDS = ("symbolic", "numeric", "experiment")
PROFILES = ("quick", "full")


@dataclass(frozen=True)
class Outcome:
    """What a check measured, what the theory expects, and whether they agree."""

    measured: object
    expected: object
    passed: bool
    detail: str = ""


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


def format_value(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)


def run_claim(c: Claim, profile: str) -> Record:
    """Run one check; an exception is recorded as ERROR with its message, never raised."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} is not one of {PROFILES}")
    start = time.perf_counter()
    try:
        outcome = c.check(profile)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"check of {c.id} returned {type(outcome).__name__}, not Outcome")
        status = "PASS" if outcome.passed else "FAIL"
        measured, expected, detail = outcome.measured, outcome.expected, outcome.detail
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
    summary = {s: sum(r.status == s for r in records) for s in ("PASS", "FAIL", "ERROR")}
    return json.dumps({"profile": profile, "summary": summary,
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
