"""The mutation test over the registry, against its committed record
(experiments/configs/ledger/mutation.json, read by ``mutation.read_record``).

The default test runs every cheap claim; the ``slow`` test runs every claim. Either fails when a
claim the record has killed now survives (or no mutation perturbs it any more), or when a claim
survives without a diagnosis in the record. After a change that kills a survivor or adds one on
purpose, rerun ``resharpen verify --mutate --profile quick --max-seconds 1000 --json PATH`` and
update the claim's entry (a survivor needs its diagnosis; docs/ledger.md has the table)."""
from __future__ import annotations

import json

import pytest

from resharpen.claims import all_claims
from resharpen.experiments.ledger import mutation
from resharpen.experiments.ledger.mutation import Mutation, MutationResult

CHEAP_SECONDS = 0.4
"""A claim declared ``cost="fast"`` is cheap when its unmutated quick check took at most this
long in the recorded run: the mutation test of the 91 such claims (each check once per
derivation, each in a forked process) took about 31 s of check time there, within the default
suite's budget on a loaded 2-core machine."""


def _result(claim_id: str, verdict: str, baseline: str = "PASS", perturbed: int = 1,
            note: str = "") -> MutationResult:
    mutations = [Mutation("resharpen.theory.x.f", "PASS", perturbed, "-", "", 0.0)]
    return MutationResult(claim_id, False, baseline, "-", 0.1, verdict,
                          ["resharpen.theory.x.f (FAIL)"] if verdict == "killed" else [],
                          mutations, note)


def test_against_record_flags_lost_kills_and_undiagnosed_survivors():
    record = {"a": {"verdict": "killed", "seconds": 0.1},
              "b": {"verdict": "survives", "seconds": 0.1, "diagnosis": "a one-sided bound"},
              "c": {"verdict": "killed", "seconds": 0.1},
              "d": {"verdict": "killed", "seconds": 0.1},
              "e": {"verdict": "killed", "seconds": 0.1}}
    results = [_result("a", "survives"), _result("b", "survives"),
               _result("c", "untested", note="no mutation perturbed a value (f)", perturbed=0),
               _result("d", "untested", baseline="FAIL", note="unmutated check is FAIL"),
               _result("e", "skipped"), _result("new", "survives"), _result("new2", "killed")]
    lines = mutation.against_record(results, record)
    assert [line.split(":")[0] for line in lines] == ["a", "c", "new"], lines
    assert "killed -> survives" in lines[0] and "no diagnosis" in lines[2]


def test_read_record_rejects_a_survivor_without_diagnosis(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"claims": {"x": {"verdict": "survives", "seconds": 1.0}}}))
    with pytest.raises(ValueError, match="survivor 'x' has no diagnosis"):
        mutation.read_record(path)
    path.write_text(json.dumps({"claims": {"x": {"verdict": "dead", "seconds": 1.0}}}))
    with pytest.raises(ValueError, match="needs a verdict"):
        mutation.read_record(path)
    results = [_result("x", "survives"), _result("y", "killed")]
    written = json.loads(mutation.record_of(results, {"x": {"diagnosis": "slack"}}))
    assert written["claims"]["x"] == {"verdict": "survives", "seconds": 0.1, "diagnosis": "slack"}
    assert written["claims"]["y"] == {"verdict": "killed", "seconds": 0.1}


def test_the_committed_record_is_well_formed():
    record = mutation.read_record()
    assert {e["verdict"] for e in record.values()} <= set(mutation.VERDICTS)
    assert sum(e["verdict"] == "killed" for e in record.values()) > 100


def _check_against_record(claims, max_seconds: float | None, timings) -> None:
    record = mutation.read_record()
    results = mutation.run_mutations(claims, "quick", max_seconds=max_seconds, timings=timings)
    regressions = mutation.against_record(results, record)
    assert not regressions, "\n".join(regressions) + "\n\n" + mutation.format_table(
        [r for r in results if r.verdict != "skipped"])


def test_cheap_claims_keep_their_recorded_mutation_verdicts():
    """Every claim declared ``cost="fast"`` whose recorded unmutated quick check took at most
    CHEAP_SECONDS (a claim not in the record: as its run here takes). The claims that train or
    read trained runs in out/ are declared slow (their cost depends on what out/ holds)."""
    record = mutation.read_record()
    claims = [c for c in all_claims() if c.cost == "fast"]
    seconds = {claim_id: entry["seconds"] for claim_id, entry in record.items()}
    _check_against_record(claims, CHEAP_SECONDS, seconds)


@pytest.mark.slow
def test_every_claim_keeps_its_recorded_mutation_verdict():
    """The whole registry, no time budget (the experiment claims train their quick sweeps when
    out/ does not hold them)."""
    _check_against_record(all_claims(), None, None)
