"""The ledger's machinery: running, reporting, selecting and locating claims.

Every registered claim's metadata and quick-profile status are tested in test_registry.py.
"""
import pytest

from resharpen.claims import all_claims
from resharpen.experiments import ledger
from resharpen.experiments.common.profiles import PROFILES, pick
from resharpen.experiments.ledger.declarations import declare
from resharpen.experiments.ledger.registry import _REGISTRY

all_claims()


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", [c.id for c in all_claims() if c.id.startswith("sc.")])
def test_every_set_complement_claim_passes_full_profile(claim_id):
    (c,) = ledger.select(all_claims(), [claim_id])
    assert ledger.run_claim(c, "full").status == "PASS"


def test_a_failing_or_broken_check_is_reported_not_raised():
    def broken(profile):
        raise RuntimeError("boom")

    c = ledger.Claim("t.broken", "test", "a broken check", "numeric", "none", broken)
    record = ledger.run_claim(c, "quick")
    assert record.status == "ERROR" and "boom" in record.detail
    failing = ledger.Claim("t.fail", "test", "fails", "numeric", "none",
                           lambda p: ledger.Outcome(1.0, 0.0, False))
    assert ledger.run_claim(failing, "quick").status == "FAIL"
    md = ledger.to_markdown([record], "quick")
    assert "| t.broken |" in md and "0/1 PASS" in md


def test_one_profile_mechanism():
    assert PROFILES == ("quick", "full")
    assert pick("quick", quick=1, full=2) == 1 and pick("full", quick=1, full=2) == 2
    with pytest.raises(ValueError, match="'fast' is not one of"):
        pick("fast", quick=1, full=2)
    with pytest.raises(ValueError, match="profile 'fast'"):
        ledger.run_claim(all_claims()[0], "fast")


def test_where_locates_a_claim_declared_in_a_test():
    declare(__name__, ".".join(("t", "where", "here")), source="s", statement="s",  # the id's
            kind="numeric", tolerance="t", cost="fast", quick="PASS",  # quoted only below
            expected_from="statement", origin="s")

    @ledger.claim("t.where.here")
    def check_here(profile):
        return ledger.Outcome(0, 0, True)

    try:
        (c,) = [c for c in ledger.registered() if c.id == "t.where.here"]
        entries = ledger.where(c)
        assert entries[0].endswith("t.where.here, " + __name__ + "." + check_here.__qualname__)
        path, line = entries[0].split(" ")[0].rsplit(":", 1)
        assert '"t.where.here"' in open(path).read().splitlines()[int(line) - 1]
        assert entries[1:] == []  # it names no derivation
    finally:
        _REGISTRY.pop("t.where.here")


def test_registry_refuses_bad_declarations_and_unknown_patterns():
    good = dict(source="s", statement="s", kind="numeric", tolerance="t", cost="fast",
                quick="PASS", expected_from="statement", origin="s")
    with pytest.raises(ValueError, match="kind 'vibes' is not one of"):
        declare(__name__, "t.x", **{**good, "kind": "vibes"})
    with pytest.raises(ValueError, match="cost 'quick' is not one of"):
        declare(__name__, "t.x", **{**good, "cost": "quick"})
    with pytest.raises(ValueError, match="quick 'ERROR' is not one of"):
        declare(__name__, "t.x", **{**good, "quick": "ERROR"})
    with pytest.raises(ValueError, match="missing field.s. cost"):  # every claim declares its cost
        declare(__name__, "t.x", **{k: v for k, v in good.items() if k != "cost"})
    with pytest.raises(ValueError, match="unknown field.s. colour"):
        declare(__name__, "t.x", **good, colour="red")
    with pytest.raises(ValueError, match="names whose statement it shows false"):
        declare(__name__, "t.x", **good, erratum=True)  # an erratum says whose
    with pytest.raises(ValueError, match="names whose statement it shows false"):
        declare(__name__, "t.x", **good, erratum_of="paper")  # only an erratum does
    with pytest.raises(ValueError, match="erratum_of 'lore' is not one of"):
        declare(__name__, "t.x", **good, erratum=True, erratum_of="lore")
    with pytest.raises(ValueError, match="has no declaration"):
        ledger.claim("t.undeclared")(lambda profile: ledger.Outcome(0, 0, True))
    with pytest.raises(ValueError, match="matches no claim"):
        ledger.select(all_claims(), ["zzz.*"])


def test_parallel_run_gives_the_same_records_in_ledger_order():
    chosen = ledger.select(all_claims(), ["sc.readout.reconstruction_regression", "sc.lemma.*", "sc.rank.random"])
    serial = ledger.run_claims(chosen, "quick", workers=1)
    parallel = ledger.run_claims(chosen, "quick", workers=2)
    assert [r.id for r in parallel] == [c.id for c in chosen]
    assert [(r.measured, r.status) for r in serial] == [(r.measured, r.status) for r in parallel]
