"""The ledger's statuses against a committed baseline, the baseline against the claims' declared
statuses, and the INCONCLUSIVE status."""
import json
from pathlib import Path

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


LEDGER_DOC = Path(__file__).resolve().parents[2] / "docs" / "ledger.md"
NON_PASS_START = "<!-- non-pass table: python tests/core/test_baseline.py --write -->"
NON_PASS_END = "<!-- end of the non-pass table -->"


def test_the_docs_list_every_non_pass_claim_of_the_baseline():
    """docs/ledger.md's table of every non-PASS claim is the committed quick baseline's (status
    and reason), so it cannot go stale: regenerate it with ``python tests/core/test_baseline.py
    --write`` after the baseline changes."""
    table = baseline.non_pass_table(baseline.read(baseline.default_path("quick"), "quick"))
    text = LEDGER_DOC.read_text()
    assert NON_PASS_START in text and NON_PASS_END in text
    assert text.split(NON_PASS_START, 1)[1].split(NON_PASS_END, 1)[0].strip() == table
    count = table.count("\n| `")
    assert f"The {count} claims that do not PASS" in text


def test_the_non_pass_table_escapes_pipes_and_skips_passes():
    table = baseline.non_pass_table({"a.b": {"status": "PASS", "reason": ""},
                                     "c.d": {"status": "FAIL", "reason": "x | y\n z"}})
    assert table.splitlines()[2:] == ["| `c.d` | FAIL | x \\| y z |"]


if __name__ == "__main__":
    import re
    import sys

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/core/test_baseline.py --write  (regenerates the "
                         "non-PASS table of docs/ledger.md from the quick baseline)")
    table = baseline.non_pass_table(baseline.read(baseline.default_path("quick"), "quick"))
    head, rest = LEDGER_DOC.read_text().split(NON_PASS_START, 1)
    head = re.sub(r"The \d+ claims that do not PASS", f"The {table.count(chr(10) + '| `')} "
                  "claims that do not PASS", head)
    LEDGER_DOC.write_text(f"{head}{NON_PASS_START}\n{table}\n{NON_PASS_END}"
                          f"{rest.split(NON_PASS_END, 1)[1]}")
    print(f"wrote {LEDGER_DOC}")
