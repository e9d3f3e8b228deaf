"""`python -m resharpen.regenerate` (`make regenerate`): after a claim's three files are edited,
one command brings every generated file up to date. What it decides is stale, how it merges a
run into each record, and that the committed records are what it would leave (nothing stale)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from resharpen import regenerate, verdicts
from resharpen.experiments.ledger import baseline, mutants, mutation, mutation_record
from resharpen.experiments.ledger.mutation import Mutation, MutationResult, Pair
from resharpen.experiments.ledger.registry import Record

DECLARED = {
    "a.fast": {"source": "s", "statement": "A", "kind": "numeric", "tolerance": "t",
               "cost": "fast", "quick": "PASS"},
    "b.slow": {"source": "s", "statement": "B", "kind": "experiment", "tolerance": "t",
               "cost": "slow", "quick": "FAIL"},
}


def _quick(claim_id: str, status: str, **fields) -> dict:
    entry = DECLARED[claim_id]
    return {"id": claim_id, **{f: entry[f] for f in regenerate.RECORD_FIELDS}, "erratum": False,
            "measured": "1", "expected": "1", "status": status, "detail": "", **fields}


def _record(status: str, claim_id: str = "a.fast", detail: str = "") -> Record:
    return Record(claim_id, "s", "A", "numeric", "t", False, "1", "1", status, detail, 0.1)


CURRENT = dict(
    baseline={"a.fast": {"status": "PASS", "reason": ""}, "b.slow": {"status": "FAIL",
                                                                     "reason": "why"}},
    quick={"a.fast": _quick("a.fast", "PASS"), "b.slow": _quick("b.slow", "FAIL")},
    record={"a.fast": {"verdict": "killed", "seconds": 0.1,
                       "functions": {"resharpen.theory.x.f": {"verdict": "killed"}}},
            "b.slow": {"verdict": "skipped", "seconds": 1.0, "note": "declared cost slow"}},
    functions={"a.fast": {"resharpen.theory.x.f"}})


def test_current_records_are_not_stale():
    assert regenerate.stale(DECLARED, **CURRENT) == {"baseline": [], "quick": [], "mutation": []}


@pytest.mark.parametrize("change, stale", [
    (dict(baseline={"b.slow": {"status": "FAIL", "reason": "why"}}), {"baseline": ["a.fast"]}),
    (dict(baseline={**CURRENT["baseline"], "a.fast": {"status": "FAIL", "reason": "x"}}),
     {"baseline": ["a.fast"]}),
    (dict(quick={"b.slow": _quick("b.slow", "FAIL")}), {"quick": ["a.fast"]}),
    (dict(quick={**CURRENT["quick"], "b.slow": _quick("b.slow", "FAIL", statement="old")}),
     {"quick": ["b.slow"]}),
    (dict(quick={**CURRENT["quick"], "a.fast": _quick("a.fast", "PASS", erratum=True)}),
     {"quick": ["a.fast"]}),
    (dict(record={"b.slow": CURRENT["record"]["b.slow"]}), {"mutation": ["a.fast"]}),
    (dict(functions={"a.fast": {"resharpen.theory.x.f", "resharpen.theory.x.g"}}),
     {"mutation": ["a.fast"]}),
    (dict(record={**CURRENT["record"], "a.fast": {"verdict": "skipped", "seconds": 0.0}}),
     {"mutation": ["a.fast"]}),
    (dict(record={**CURRENT["record"], "b.slow": {"verdict": "killed", "seconds": 1.0}}),
     {"mutation": ["b.slow"]}),
])
def test_a_missing_or_stale_entry_is_found(change, stale):
    """A claim missing from a record, or whose entry no longer agrees with its declaration (or,
    in the mutation record, with the functions its check uses), is stale in that record alone."""
    want = {"baseline": [], "quick": [], "mutation": [], **stale}
    assert regenerate.stale(DECLARED, **{**CURRENT, **change}) == want


def test_entries_of_claims_no_longer_declared_are_named():
    assert regenerate.undeclared(DECLARED, {"a.fast": {}, "gone.x": {}}, {"gone.y": {}}) == [
        "gone.x", "gone.y"]


def test_the_baseline_update_adds_replaces_and_drops(tmp_path):
    """Entries of the run are added or replaced, with a reason made from the record alone (what
    it measured and expected: an earlier hand-written reason is never kept, so no stale number
    survives), undeclared ones dropped, the rest kept."""
    path = tmp_path / "quick.json"
    path.write_text(json.dumps({"profile": "quick", "claims": {
        "a.fast": {"status": "FAIL", "reason": "old reason"},
        "b.slow": {"status": "FAIL", "reason": "why"},
        "gone.x": {"status": "PASS", "reason": ""}}}))
    ran = _record("INCONCLUSIVE", detail="too few runs\nmore")
    baseline.update(path, [ran], "quick", DECLARED)
    assert baseline.read(path, "quick") == {
        "a.fast": {"status": "INCONCLUSIVE",
                   "reason": f"measured {ran.measured}; expected {ran.expected}"},
        "b.slow": {"status": "FAIL", "reason": "why"}}


def test_the_quick_record_update_keeps_the_runs_provenance(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"profile": "quick", "summary": {},
                                "provenance": {"commit": "abc", "note": "one run"},
                                "claims": [_quick("b.slow", "FAIL"),
                                           {**_quick("a.fast", "PASS"), "id": "gone.x"}]}))
    verdicts.update_quick([{**_quick("a.fast", "PASS"), "seconds": 1.5}], DECLARED, path)
    data = json.loads(path.read_text())
    assert [c["id"] for c in data["claims"]] == ["a.fast", "b.slow"]
    assert "seconds" not in data["claims"][0]
    assert data["summary"] == {"PASS": 1, "FAIL": 1, "INCONCLUSIVE": 0, "ERROR": 0}
    assert data["provenance"]["commit"] == "abc"
    assert data["provenance"]["note"].startswith("one run; a.fast recorded alone afterwards")


def test_the_quick_record_names_the_commit_the_claims_ran_on(tmp_path):
    """The note's commit and dirty flag come from the provenance the run took before it wrote
    anything (``made``), not from the tree after its own writes."""
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"profile": "quick", "summary": {},
                                "provenance": {"commit": "abc"}, "claims": []}))
    verdicts.update_quick([_quick("a.fast", "PASS")], DECLARED, path,
                          made={"commit": "0123456789abcdef", "dirty": False})
    note = json.loads(path.read_text())["provenance"]["note"]
    assert "(commit 0123456; python -m resharpen.regenerate)" in note
    verdicts.update_quick([_quick("a.fast", "PASS")], DECLARED, path,
                          made={"commit": "fedcba9876543210", "dirty": True})
    note = json.loads(path.read_text())["provenance"]["note"]
    assert "(commit fedcba9 with uncommitted changes;" in note


def test_regenerate_takes_the_provenance_before_it_writes(monkeypatch, tmp_path):
    """``run_records`` takes the provenance before its first write: with a provenance that
    reports the tree dirty once the baseline is written, the quick record's note still names
    the clean tree the claims ran on."""
    from types import SimpleNamespace

    from resharpen import regenerate
    from resharpen.experiments import ledger
    from resharpen.experiments.common import provenance as provenance_module
    from resharpen.experiments.ledger import baseline, mutation_record
    from resharpen.experiments.ledger.declarations import all_declarations

    tree = {"dirty": False}
    record = SimpleNamespace(id="sc.theorem.two_over_s", status="PASS")
    monkeypatch.setattr(provenance_module, "provenance",
                        lambda profile=None: {"commit": "c0ffee0123", "dirty": tree["dirty"]})
    monkeypatch.setattr(regenerate, "stale", lambda *a: {"baseline": [record.id], "quick": [],
                                                        "mutation": []})
    monkeypatch.setattr(ledger, "run_claims", lambda claims, profile, workers, on_done: [record])
    monkeypatch.setattr(regenerate, "asdict", lambda r: {"id": r.id, "status": r.status})

    def write_baseline(*args):
        tree["dirty"] = True  # the baseline file now differs from the commit
        return tmp_path / "quick.json"

    noted = {}

    def write_quick(records, keep, made=None):
        noted.update(made or {})
        return tmp_path / "ledger.json"

    monkeypatch.setattr(baseline, "update", write_baseline)
    monkeypatch.setattr(verdicts, "update_quick", write_quick)
    monkeypatch.setattr(mutation_record, "read_record", lambda: {})
    regenerate.run_records(all_declarations(), None, 1, False)
    assert tree["dirty"] and noted == {"commit": "c0ffee0123", "dirty": False}


def _result(claim_id: str, verdict: str, statuses: dict | None = None,
            baseline_status: str = "PASS") -> MutationResult:
    """A result whose one pair has ``statuses`` (operator -> status, "-": nothing perturbed)."""
    if verdict == "skipped":
        return MutationResult(claim_id, False, "-", "-", 0.0, "skipped", [], [],
                              "declared cost slow")
    target = "resharpen.theory.x.f"
    mutations = [Mutation(target, s, 0 if s == "-" else 1, "-", "", 0.0, op)
                 for op, s in statuses.items()]
    result = MutationResult(claim_id, False, baseline_status, "-", 0.1, verdict, [], mutations,
                            "", [])
    pair = Pair(target, mutation.pair_verdict(result, baseline_status, mutations),
                {m.operator: m.status if m.perturbed else "-" for m in mutations})
    killed_by = [f"{m.target} {m.operator} ({m.status})" for m in mutations
                 if m.perturbed and mutation.kills(result, baseline_status, m.status)]
    return dataclasses.replace(result, pairs=[pair], killed_by=killed_by)


def test_the_record_summary_is_recomputed_from_its_entries(tmp_path):
    """A record written from a run and the results rebuilt from its entries give one summary,
    one per-operator table and one score; an update adds the new claim's entry, drops an
    undeclared one and counts the whole record."""
    operators = dict.fromkeys(mutants.OPERATORS, "-")
    results = [_result("a.fast", "killed", {**operators, "up": "FAIL", "down": "PASS"}),
               _result("b.slow", "skipped"),
               _result("gone.x", "survives", {**operators, "up": "PASS"})]
    text = mutation_record.record_of(results)
    data = json.loads(text)
    declared = {**DECLARED, "gone.x": DECLARED["a.fast"]}
    rebuilt = mutation_record.results_of_record(data["claims"], declared)
    assert mutation.summary(rebuilt) == data["summary"]
    assert mutation.per_operator(rebuilt) == data["per_operator"]
    data["claims"]["gone.x"]["diagnosis"] = "a loose bound"
    data["claims"]["gone.x"]["functions"]["resharpen.theory.x.f"]["diagnosis"] = "a loose bound"
    path = tmp_path / "mutation.json"
    path.write_text(json.dumps(data))
    new = _result("c.new", "killed", {**operators, "drop": "FAIL"})
    updated = json.loads(mutation_record.updated_record(
        [new], {**DECLARED, "c.new": DECLARED["a.fast"]}, path))
    assert list(updated["claims"]) == ["a.fast", "b.slow", "c.new"]
    assert updated["claims"]["a.fast"] == data["claims"]["a.fast"]
    assert updated["per_operator"]["drop"] == {"perturbed": 1, "killed": 1, "by an exception": 0}
    assert updated["per_operator"]["up"] == {"perturbed": 1, "killed": 1, "by an exception": 0}
    assert updated["summary"].startswith("2 of 2 claims killed, 0 survive, 0 untested")


def test_the_committed_records_hold_every_declared_claim_as_declared():
    """The quick baseline and the quick record of the verdict pages hold every declared claim,
    with its declared status and fields, and nothing else: what `make regenerate` leaves (the
    mutation record's coverage is tests/core/test_mutation_record.py's)."""
    from resharpen.experiments.ledger.declarations import all_declarations

    declared = all_declarations()
    found = regenerate.stale(declared, baseline.read(baseline.default_path("quick"), "quick"),
                             verdicts.read_records(verdicts.QUICK_LEDGER), {}, {})
    assert found["baseline"] == [] and found["quick"] == [], (
        f"{found}: run `make regenerate` (python -m resharpen.regenerate)")
    assert regenerate.undeclared(declared, verdicts.read_records(verdicts.QUICK_LEDGER)) == []


def test_every_writer_is_a_command_of_the_checkout():
    import importlib.util

    for what, arguments in regenerate.WRITERS:
        if arguments[0] == "-m":
            assert importlib.util.find_spec(arguments[1]), what
        else:
            assert (regenerate.ROOT / arguments[0]).is_file(), what
        assert arguments[-1] == "--write", what


def test_a_dry_run_names_what_would_run_and_writes_nothing(capsys):
    assert regenerate.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "run (quick baseline and record): none" in out
    assert "mutation test: none" in out and "no longer declared, dropped: none" in out
    assert all(f"python {' '.join(arguments)}" in out for _, arguments in regenerate.WRITERS)


def test_only_a_pattern_matching_no_claim_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        regenerate.main(["--dry-run", "--only", "no.such.claim"])
    assert stop.value.code == 2 and "no.such.claim" in capsys.readouterr().err


def test_every_writer_is_a_script_that_runs_as_a_program():
    """Each generated file's command is a file or module with a ``__main__`` entry: a writer
    that is not (a test file without one) would run, print nothing and write nothing."""
    import importlib.util
    from pathlib import Path

    from resharpen import regenerate

    for what, arguments in regenerate.WRITERS:
        path = Path(importlib.util.find_spec(arguments[1]).origin) if arguments[0] == "-m" \
            else regenerate.ROOT / arguments[0]
        assert path.is_file(), (what, path)
        assert 'if __name__ == "__main__":' in path.read_text(), (what, path)
