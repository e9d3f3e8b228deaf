"""The mutation test over the registry, against its committed record
(experiments/configs/ledger/mutation.json, read by ``mutation_record.read_record``).

What runs is declared, never measured: the default test mutates DEFAULT_SAMPLE (fast claims
named here, one or more per slice, every operator) and checks without running anything that the
record covers the registry by declared cost class; the ``slow`` test runs every fast claim (the
slow ones are recorded as skipped by their class). Either fails when a claim (or a (claim,
function) pair) the record has killed now survives, is killed only by an exception or is
untested, when no mutation perturbs it any more, or when a survivor has no diagnosis in the
record. After a change that kills a survivor or adds one on purpose, rerun the claim with
``make regenerate ARGS="--only ID"`` (``mutation_record.updated_record`` replaces its entry; a survivor
needs its diagnosis; docs/ledger.md has the list)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from resharpen.claims import all_claims
from resharpen.experiments.ledger import mutants, mutation, mutation_record
from resharpen.experiments.ledger.mutation import Mutation, MutationResult

DEFAULT_SAMPLE = ("lang.dyck1.counts", "sc.metrics.closed_forms", "dyn.radial.violation",
                  "collapse.rms_jacobian_formula", "collapse.collapsed_zero_gradients",
                  "train.bema.limits")
"""The claims the default test mutates: declared ``cost="fast"``, chosen by name (so coverage
does not change with machine load), one or more per slice, each with (claim, function) pairs in
the record; their 74 runs (the unmutated one, each operator that applies, and the ladder on
dyn.radial.violation x simulate, the one surviving pair) took 1.9 s of check time in the run
recorded in docs/ledger.md, and this test 11 s (each run a forked process) on the shared 2-core
machine at load 3-5."""


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
    lines = mutation_record.against_record(results, record)
    assert [line.split(":")[0] for line in lines] == ["a", "c", "new"], lines
    assert "killed -> survives" in lines[0] and "no diagnosis" in lines[2]


def test_read_record_rejects_a_survivor_without_diagnosis(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"claims": {"x": {"verdict": "survives", "seconds": 1.0}}}))
    with pytest.raises(ValueError, match="survivor 'x' has no diagnosis"):
        mutation_record.read_record(path)
    path.write_text(json.dumps({"claims": {"x": {"verdict": "dead", "seconds": 1.0}}}))
    with pytest.raises(ValueError, match="needs a verdict"):
        mutation_record.read_record(path)
    results = [_result("x", "survives"), _result("y", "killed")]
    written = json.loads(mutation_record.record_of(results, {"x": {"diagnosis": "slack"}}))
    assert written["claims"]["x"] == {"verdict": "survives", "seconds": 0.1, "diagnosis": "slack"}
    assert written["claims"]["y"] == {"verdict": "killed", "seconds": 0.1}


def test_a_skipped_claim_is_recorded_by_its_declared_class():
    """A claim the run skipped is recorded ``skipped`` with its reason; an earlier one-operator
    verdict is named in the note (not compared), an entry from a run of every operator (with
    per-function verdicts) is kept."""
    old = {"s": {"verdict": "killed", "seconds": 2.0},
           "k": {"verdict": "survives", "seconds": 3.0, "diagnosis": "slack",
                 "functions": {"resharpen.theory.x.f": {"verdict": "survives",
                                                        "diagnosis": "slack"}}}}
    results = [_result("s", "skipped", note="declared cost slow"),
               _result("k", "skipped", note="declared cost slow"),
               _result("n", "skipped", note="declared cost slow")]
    claims = json.loads(mutation_record.record_of(results, old))["claims"]
    assert claims["s"] == {"verdict": "skipped", "seconds": 2.0, "note": (
        "declared cost slow; the record before the per-function operators had killed (`up` "
        "only, not compared)")}
    assert claims["k"] == old["k"]
    assert claims["n"] == {"verdict": "skipped", "seconds": 0.0, "note": "declared cost slow"}
    assert mutation_record.against_record(results, claims) == []


def test_the_committed_record_is_well_formed():
    record = mutation_record.read_record()
    assert {e["verdict"] for e in record.values()} <= set(mutation.VERDICTS)
    assert sum(e["verdict"] == "killed" for e in record.values()) > 100


def test_pair_verdicts_are_recorded_and_compared(tmp_path):
    """A record entry with ``functions`` is compared per (claim, function) pair: a pair recorded
    killed that survives is a regression, as is a surviving pair without a diagnosis."""
    pair = mutation.Pair("resharpen.theory.x.f", "survives", {"up": "PASS", "down": "PASS"})
    result = dataclasses.replace(_result("p", "survives"), pairs=[pair])
    written = json.loads(mutation_record.record_of([result], {"p": {"diagnosis": "loose bound"}}))
    entry = written["claims"]["p"]
    assert entry["functions"] == {"resharpen.theory.x.f": {
        "verdict": "survives", "statuses": {"up": "PASS", "down": "PASS"}, "diagnosis": ""}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(written))
    with pytest.raises(ValueError, match="surviving pair .* has no diagnosis"):
        mutation_record.read_record(path)
    recorded = {"p": dict(entry, functions={"resharpen.theory.x.f": {"verdict": "killed"}})}
    lines = mutation_record.against_record([result], recorded)
    assert lines == ["p, resharpen.theory.x.f: killed -> survives {'up': 'PASS', "
                     "'down': 'PASS'}"], lines
    recorded["p"]["functions"]["resharpen.theory.x.f"] = {"verdict": "survives",
                                                          "diagnosis": "loose bound"}
    assert mutation_record.against_record([result], recorded) == []


def _check_against_record(claims, costs) -> None:
    record = mutation_record.read_record()
    results = mutation.run_mutations(claims, "quick", costs=costs)
    regressions = mutation_record.against_record(results, record)
    assert not regressions, "\n".join(regressions) + "\n\n" + mutation.format_table(
        [r for r in results if r.verdict != "skipped"])


def test_a_declared_sample_keeps_its_recorded_mutation_verdicts():
    """DEFAULT_SAMPLE under every operator, against the record."""
    from resharpen.experiments.ledger import select

    claims = select(all_claims(), list(DEFAULT_SAMPLE))
    assert all(c.cost == "fast" for c in claims)
    _check_against_record(claims, ("fast",))


def test_the_record_covers_the_registry_by_declared_cost_class():
    """Every claim of the registry has an entry and every entry a claim. A ``fast`` claim's
    entry is from a run under every operator: one verdict per function the check uses (exactly
    the current targets), unless it names none; a ``slow`` claim's entry is ``skipped`` by its
    declared cost class (or, for the four ``dyn.trained.*.trained`` claims run under every
    operator with ``--costs all`` in issue 25, that run's entry, kept). The summary line agrees
    with the pairs of the fast claims it summarizes."""
    record = mutation_record.read_record()
    claims = all_claims()
    assert sorted(record) == sorted(c.id for c in claims)
    counts = {v: 0 for v in mutation.PAIR_VERDICTS}
    scored = []  # (verdict, equivalent) of each fast claim's pair
    for c in claims:
        entry = record[c.id]
        if c.cost != "fast":  # skipped by its class, or kept from a run of every operator
            assert (entry["verdict"] == "skipped"
                    and entry["note"].startswith(f"declared cost {c.cost}")) \
                or entry.get("functions"), c.id
            continue
        assert entry["verdict"] != "skipped", c.id
        names = {t.name for t in mutants.targets(c)}
        assert set(entry.get("functions") or {}) == names, c.id
        for pair in (entry.get("functions") or {}).values():
            statuses = pair["statuses"]
            assert set(statuses) == set(mutants.OPERATORS), c.id
            counts[pair["verdict"]] += 1
            scored.append((pair["verdict"], pair.get("equivalent", False)))
            if pair["verdict"] in ("survives", "killed by an exception"):
                assert "equivalent" in pair, (c.id, "every pair not killed says whether it is "
                                                    "an equivalent mutant")
            # the ladder runs only while no operator before it has killed the pair by a status
            # change, so a ladder operator after a status kill is "not run"
            killed_at = [i for i, op in enumerate(mutants.OPERATORS)
                         if statuses[op] not in ("-", "not run", "ERROR", "TIMEOUT")
                         and mutation.kills(c, mutation_record.unmutated_status(entry), statuses[op])]
            if killed_at and pair["verdict"] == "killed":
                later = [op for op in list(mutants.OPERATORS)[killed_at[0] + 1:]
                         if op in mutants.LADDER]
                assert all(statuses[op] == "not run" for op in later), (c.id, statuses)
    total = sum(counts.values())
    tried = total - counts["untested"]
    data = json.loads(mutation_record.RECORD.read_text())
    assert data["step"] == mutation.STEP and data["large_step"] == mutants.LARGE_STEP
    assert data["ladder"] == list(mutants.LADDER)
    line = data["summary"]
    assert f"{counts['killed']} of {total} killed by a status change" in line, line
    assert f"of the {tried} pairs some operator perturbed" in line, line
    assert data["score"] == mutation_record.score_line(mutation_record.mutation_score(scored))


@pytest.mark.slow
def test_every_claim_keeps_its_recorded_mutation_verdict():
    """The whole record: every fast claim under every operator (the slow ones are recorded as
    skipped by their declared class), against its entry, and no function of a check without
    its recorded verdict."""
    record = mutation_record.read_record()
    results = mutation.run_mutations(all_claims(), "quick", costs=("fast",))
    regressions = mutation_record.against_record(results, record)
    for r in results:
        if r.verdict != "skipped":
            recorded = set(record[r.id].get("functions") or {})
            regressions += [f"{r.id}, {p.target}: not in the record" for p in r.pairs
                            if p.target not in recorded]
    assert not regressions, "\n".join(regressions) + "\n\n" + mutation.format_table(
        [r for r in results if r.verdict != "skipped"])


def test_mutation_score_leaves_out_only_the_pairs_diagnosed_equivalent():
    """killed / perturbed and killed / (perturbed - equivalent), computed by hand: an untested
    pair counts in neither; a pair killed only by an exception counts as not killed unless its
    diagnosis calls it equivalent; the flag on a killed pair changes nothing."""
    pairs = [("killed", False)] * 7 + [("killed", True), ("survives", True), ("survives", False),
                                       ("killed by an exception", True),
                                       ("killed by an exception", False), ("untested", True)]
    score = mutation_record.mutation_score(pairs)
    assert (score["perturbed"], score["killed"], score["equivalent"]) == (12, 8, 2)
    assert score["rate"] == 8 / 12 and score["score"] == 8 / 10
    assert "8 of the 10 perturbed pairs not diagnosed equivalent mutants = 80.0%" \
        in mutation_record.score_line(score)


def test_read_record_rejects_an_equivalent_flag_out_of_place(tmp_path):
    """``equivalent`` is a bool, beside a diagnosis, on a pair that was not killed."""
    for pair in ({"verdict": "killed", "statuses": {}, "equivalent": True},
                 {"verdict": "survives", "statuses": {}, "diagnosis": "d", "equivalent": "yes"},
                 {"verdict": "killed by an exception", "statuses": {}, "equivalent": False}):
        path = tmp_path / "record.json"
        path.write_text(json.dumps({"claims": {"x": {"verdict": "killed", "seconds": 0.1,
                                                     "functions": {"f": pair}}}}))
        with pytest.raises(ValueError, match="equivalent"):
            mutation_record.read_record(path)


def test_every_equivalent_pair_says_why_no_data_could_change_the_claim(tmp_path):
    """A pair flagged equivalent carries ``why_equivalent``, a sentence a reviewer can check,
    that does not rest on the data at hand (a check that cannot move on *this* data is weak or
    empty, not an equivalent mutant: flagged false); the record refuses a flag without it."""
    for claim_id, entry in mutation_record.read_record().items():
        for target, pair in (entry.get("functions") or {}).items():
            if pair.get("equivalent"):
                why = pair["why_equivalent"]
                assert "this data" not in why and "on this data" not in pair["diagnosis"], \
                    (claim_id, target)
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"claims": {"x": {"verdict": "survives", "seconds": 0.1,
                                                 "diagnosis": "d", "functions": {"f": {
                                                     "verdict": "survives", "statuses": {},
                                                     "diagnosis": "d", "equivalent": True}}}}}))
    with pytest.raises(ValueError, match="why_equivalent"):
        mutation_record.read_record(path)


def test_the_record_score_text_counts_the_given_claims():
    record = {"a": {"functions": {"f": {"verdict": "killed"}, "g": {"verdict": "untested"},
                                  "h": {"verdict": "survives", "equivalent": True}}},
              "b": {"functions": {"f": {"verdict": "survives", "equivalent": False}}}}
    text = mutation_record.record_score_text(record, ["a", "b"])
    assert "Of the 4 (claim, function) pairs" in text and "3 were perturbed" in text
    assert "1 of them were killed" in text and "the plain rate 33.3%" in text
    assert "1 / 2 = 50.0%" in text
    assert "1 / 1 = 100.0%" in mutation_record.record_score_text(record, ["a"])
