"""The committed record of the mutation test (:mod:`.mutation`),
``experiments/configs/ledger/mutation.json``: the expected verdict of every claim and of each
(claim, function) pair, with the diagnoses of the survivors. Reading and checking it, its
mutation score, a run's regressions against it, and the record a run writes.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Iterable, Sequence

from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.ledger.perturbation import STEP
from resharpen.experiments.ledger.mutants import LADDER, LARGE_STEP, OPERATORS
from resharpen.experiments.ledger.mutation import (PAIR_VERDICTS, VERDICTS, Mutation,
                                                  MutationResult, Pair, kills, per_operator,
                                                  summary)

RECORD = Path(__file__).resolve().parents[1] / "configs" / "ledger" / "mutation.json"
"""The committed record of the expected verdict per claim (quick profile, step STEP)."""


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
    """The record file (JSON text) of the entries ``claims``, with the :func:`.mutation.summary`
    and :func:`.mutation.per_operator` of ``results`` and the :func:`mutation_score` of ``scored``."""
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
    the diagnoses of ``old``), with the run's :func:`.mutation.summary`, :func:`.mutation.per_operator` and
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
    """``python -m resharpen.experiments.ledger.mutation_record``: print
    :func:`record_score_text` of the committed record over the declared fast claims (read
    without importing a slice)."""
    from resharpen.experiments.ledger.declarations import all_declarations

    if argv if argv is not None else sys.argv[1:]:
        raise SystemExit("usage: python -m resharpen.experiments.ledger.mutation_record (prints "
                         "the plain rate and the mutation score of the committed record)")
    print(record_score_text(read_record(), [claim_id for claim_id, entry in
                                            all_declarations().items() if entry["cost"] == "fast"]))


if __name__ == "__main__":
    main()
