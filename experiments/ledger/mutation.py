"""The mutation test of the ledger: does a claim's check notice when its derivations are wrong?

A check is *circular* when its expected value and its measurement come from the same function:
then a wrong function changes both alike and the check still passes. The mutation test finds
such checks by breaking the derivations one at a time, each by each operator of
:data:`.mutants.OPERATORS` (which functions are mutated, and how: :mod:`.mutants`).

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

The committed *record* (``experiments/configs/ledger/mutation.json``, :mod:`.mutation_record`)
holds the expected verdict of every claim, the seconds its unmutated quick check took, the
diagnosis of each survivor, and for every fast claim ``functions``: the verdict, operator
statuses and, for a survivor, diagnosis of each pair (a slow claim is recorded skipped by its
declared class). Every pair that is not killed says, beside its diagnosis, whether it is an
``equivalent`` mutant (no operator's mutant can change a correct check's status on this data,
apart from a stillborn one that raises on an invalid call); the record's ``score`` is the
standard mutation score over the pairs that are not (:func:`.mutation_record.mutation_score`),
beside the plain rate of ``summary``. :func:`.mutation_record.against_record` turns a run into
regressions. tests/core/test_mutation_record.py runs it over a declared sample of fast claims by
default and over every fast claim in the ``slow`` test. A run of a few claims (a claim added or
changed) is merged into the record by :func:`.mutation_record.updated_record` (``python -m
resharpen.regenerate``), which counts the summary lines over all the record's entries
(:func:`.mutation_record.results_of_record`).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.ledger.runner import run_claim
from resharpen.experiments.ledger.perturbation import STEP
from resharpen.experiments.ledger.mutants import (LADDER, LARGE_STEP, OPERATORS, Target,
                                                 clear_caches, applies, mutated, targets)

VERDICTS = ("killed", "survives", "untested", "skipped")
KILLING = ("FAIL", "ERROR", "TIMEOUT")
"""Statuses under a mutation that kill a (non-erratum) claim; an erratum is killed by any
status but PASS."""


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
    clear_caches()
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
