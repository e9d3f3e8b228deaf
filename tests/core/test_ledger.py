"""The claim registry, and the Set Complement claims run through it (quick profile)."""
import pytest

from resharpen.claims import all_claims
from resharpen.experiments.core import ledger

all_claims()
FAST_SC = ["sc.metrics.closed_forms", "sc.lemma.nullspace", "sc.lemma.logit_identity",
           "sc.theorem.balanced_condition", "sc.theorem.harmonic_symbolic", "sc.theorem.two_over_s",
           "sc.theorem.unbalanced_breaks_2_over_s", "sc.theorem.negative_beta",
           "sc.theorem.exact_all_lengths", "sc.theorem.dispersion_budget",
           "sc.theorem.dispersion_min_margin_erratum", "sc.model.decomposition", "sc.rank.random",
           "sc.readout.paper_numbers", "sc.readout.post_limit", "sc.readout.attn_out_minimum",
           "sc.construct.save_load", "sc.noise.trace_symbolic"]


@pytest.mark.parametrize("claim_id", FAST_SC)
def test_set_complement_claim_passes(claim_id):
    (c,) = ledger.select(all_claims(), [claim_id])
    record = ledger.run_claim(c, "quick")
    assert record.status == "PASS", record


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


def test_registry_refuses_bad_kind_and_unknown_patterns():
    with pytest.raises(ValueError, match="kind"):
        ledger.claim("t.x", source="s", statement="s", kind="vibes", tolerance="t")
    with pytest.raises(ValueError, match="matches no claim"):
        ledger.select(all_claims(), ["zzz.*"])


def test_parallel_run_gives_the_same_records_in_ledger_order():
    chosen = ledger.select(all_claims(), ["sc.readout.paper_numbers", "sc.lemma.*", "sc.rank.random"])
    serial = ledger.run_claims(chosen, "quick", workers=1)
    parallel = ledger.run_claims(chosen, "quick", workers=2)
    assert [r.id for r in parallel] == [c.id for c in chosen]
    assert [(r.measured, r.status) for r in serial] == [(r.measured, r.status) for r in parallel]
