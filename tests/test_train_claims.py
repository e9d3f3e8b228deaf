"""The training claims are registered, and the fast numeric ones pass."""
import pytest

from theory.claims import discover, run_claim


def claims():
    return {c.id: c for c in discover() if c.id.startswith("train.")}


def test_training_claims_are_registered_with_sources():
    found = claims()
    for cid in ("train.bema.limits", "train.ensemble.batched_equals_sequential",
                "train.noise.trace", "train.postnorm.ood_invalid_mass", "train.dropout.ood_kl",
                "train.bema.ood_kl", "train.ema.ood_kl", "train.dispersion.margin_exponent",
                "train.lengthgen.degrades", "train.postnorm.random_search",
                "train.bema.ood_kl.fixed", "train.ema.ood_kl.fixed", "train.postnorm.balanced_grid"):
        assert cid in found and found[cid].source and found[cid].statement


@pytest.mark.parametrize("cid", ["train.bema.limits", "train.ensemble.batched_equals_sequential"])
def test_fast_numeric_claims_pass(cid):
    record = run_claim(claims()[cid], "quick")
    assert record.status == "PASS", record.detail
