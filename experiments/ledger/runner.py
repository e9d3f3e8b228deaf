"""Running claims: one check into a :class:`~.registry.Record`, or many, in this process or a
process pool.

A check that raises is recorded as ERROR with its message; it never stops the ledger. Checks are
independent and seeded, so the records do not depend on the number of workers.
"""
from __future__ import annotations

import importlib
import math
import time
import traceback
from typing import Callable, Sequence

from resharpen.experiments.common.profiles import check_profile
from resharpen.experiments.ledger.registry import _REGISTRY, Claim, MissingData, Outcome, Record


def format_value(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)


def run_claim(c: Claim, profile: str) -> Record:
    """Run one check; :class:`MissingData` is recorded as INCONCLUSIVE and any other exception
    as ERROR, with its message, never raised."""
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
    except MissingData as exc:  # the data is not there yet: too little to decide
        status, measured, expected = "INCONCLUSIVE", exc.measured, exc.expected
        detail = f"inconclusive: {exc}"
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
