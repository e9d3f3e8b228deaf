"""The training claims are registered with their sources; the sampled-label effect claims are
not (no sampled-label run learns the task at the sweeps' budgets, so they could not decide: the
``fit.*`` claims decide the same questions on models trained to a fit).

Every claim's quick-profile status is tested in tests/core/test_registry.py."""
from resharpen.claims import all_claims


def claims():
    return {c.id: c for c in all_claims() if c.id.startswith("train.")}


def test_training_claims_are_registered_with_sources():
    found = claims()
    assert set(found) == {"train.bema.limits", "train.ensemble.batched_equals_sequential",
                          "train.noise.trace", "train.lengthgen.degrades"}
    for c in found.values():
        assert c.source and c.statement


def test_the_sampled_label_effects_are_not_claims():
    found = claims()
    for prefix in ("train.postnorm.", "train.ema.ood_kl", "train.bema.ood_kl", "train.dropout.",
                   "train.dispersion."):
        assert not [i for i in found if i.startswith(prefix)], prefix
