"""The ledger's statuses against a committed baseline, the baseline against the claims' declared
statuses, and the INCONCLUSIVE status."""
import json

import pytest

from resharpen.cli import main
from resharpen.experiments import ledger
from resharpen.experiments.ledger import baseline


def record(claim_id, status):
    return ledger.Record(claim_id, "src", "stmt", "numeric", "tol", False, "1", "1", status, "d", 0.0)


def test_the_committed_quick_baseline_is_the_declared_statuses():
    """Each claim's quick status is declared once, with the claim (``expected_status``); the
    committed baseline holds the same statuses for the same claims, and a reason for each
    non-PASS."""
    from resharpen.claims import all_claims

    expected = baseline.read(baseline.default_path("quick"), "quick")
    disagree = baseline.against_declarations(expected, all_claims())
    assert not disagree, "\n".join(disagree)
    for claim_id, entry in expected.items():
        assert entry["status"] == "PASS" or entry["reason"], claim_id  # a known FAIL says why


def test_the_committed_baselines_reasons_are_the_quick_records():
    """A non-PASS entry's reason states what the committed quick record (results/quick/
    ledger.json) measured and expected, character for character: no number in the baseline
    comes from anywhere else. Written by hand here from the record's fields."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    records = {c["id"]: c for c in
               json.loads((root / "results" / "quick" / "ledger.json").read_text())["claims"]}
    stale = [claim_id for claim_id, entry in
             baseline.read(baseline.default_path("quick"), "quick").items()
             if entry["status"] != "PASS" and entry["reason"] !=
             ("measured " + records[claim_id]["measured"] + "; expected "
              + records[claim_id]["expected"])[:300]]
    assert not stale, f"{len(stale)} baseline reasons differ from the quick record: {stale[:5]}"


def test_against_declarations_names_every_disagreement():
    def declared(claim_id, status):
        return ledger.Claim(claim_id, "s", "s", "numeric", "t", lambda p: None,
                            expected_status=status)

    claims = [declared("a", "PASS"), declared("b", "FAIL"), declared("c", "PASS")]
    expected = {"a": {"status": "PASS", "reason": ""}, "b": {"status": "PASS", "reason": ""},
                "gone": {"status": "FAIL", "reason": "x"}}
    assert baseline.against_declarations(expected, claims) == [
        "b: declared FAIL, baseline PASS", "c: declared PASS, not in the baseline",
        "gone: in the baseline, not a registered claim"]


def test_differences_in_either_direction():
    expected = {"a": {"status": "PASS", "reason": ""}, "b": {"status": "FAIL", "reason": "known"},
                "c": {"status": "PASS", "reason": ""}}
    assert baseline.differences([record("a", "PASS"), record("b", "FAIL"), record("c", "PASS")],
                                expected) == []
    changed = baseline.differences([record("a", "FAIL"), record("b", "PASS"), record("d", "PASS")],
                                   expected)
    assert changed == ["a: PASS -> FAIL", "b: FAIL -> PASS (baseline: known)",
                       "d: PASS, not in the baseline (new claim)", "c: in the baseline, not run"]


def test_bad_baselines_name_the_file(tmp_path):
    path = tmp_path / "b.json"
    with pytest.raises(ValueError, match="no ledger baseline"):
        baseline.read(path, "quick")
    path.write_text("{")
    with pytest.raises(ValueError, match="is not a ledger baseline"):
        baseline.read(path, "quick")
    path.write_text(json.dumps({"profile": "full", "claims": {}}))
    with pytest.raises(ValueError, match="profile 'full'"):
        baseline.read(path, "quick")
    path.write_text(json.dumps({"profile": "quick", "claims": {"x": {"status": "MAYBE"}}}))
    with pytest.raises(ValueError, match="no valid status"):
        baseline.read(path, "quick")


def test_verify_baseline_exit_codes(tmp_path, capsys):
    assert main(["verify", "--only", "sc.metrics.closed_forms", "--baseline"]) == 0
    assert "matches the baseline" in capsys.readouterr().err
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"profile": "quick",
                                "claims": {"sc.metrics.closed_forms": {"status": "FAIL", "reason": "x"}}}))
    assert main(["verify", "--only", "sc.metrics.closed_forms", "--baseline", str(path)]) == 1
    assert "sc.metrics.closed_forms: FAIL -> PASS" in capsys.readouterr().err
    written = tmp_path / "new.json"
    assert main(["verify", "--only", "sc.metrics.closed_forms", "--write-baseline", str(written),
                 "--force"]) == 0
    assert json.loads(written.read_text())["claims"]["sc.metrics.closed_forms"]["status"] == "PASS"


def test_an_outcome_without_enough_data_is_inconclusive_not_fail():
    def check(profile):
        return ledger.Outcome(0.1, "< 0", passed=False, detail="n=2",
                              inconclusive="2 < 5 seeds; run `resharpen sweep X --profile full`")

    c = ledger.Claim("test.inconclusive", "src", "stmt", "experiment", "tol", check)
    r = ledger.run_claim(c, "quick")
    assert r.status == "INCONCLUSIVE" and "2 < 5 seeds" in r.detail and "resharpen sweep" in r.detail
    assert json.loads(ledger.to_json([r], "quick"))["summary"]["INCONCLUSIVE"] == 1
