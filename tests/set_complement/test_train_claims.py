"""The training claims are registered, and the ones made from tables read their own sweeps.

Every claim's quick-profile status is tested in tests/core/test_registry.py."""
from resharpen.claims import all_claims
from resharpen.experiments.core.ledger import run_claim


def claims():
    return {c.id: c for c in all_claims() if c.id.startswith("train.")}


def test_training_claims_are_registered_with_sources():
    found = claims()
    for cid in ("train.bema.limits", "train.ensemble.batched_equals_sequential",
                "train.noise.trace", "train.postnorm.ood_invalid_mass", "train.dropout.ood_kl",
                "train.bema.ood_kl", "train.ema.ood_kl", "train.dispersion.margin_exponent",
                "train.lengthgen.degrades", "train.postnorm.random_search",
                "train.bema.ood_kl.fixed", "train.ema.ood_kl.fixed", "train.postnorm.balanced_grid",
                "train.postnorm.random_search_v32", "train.postnorm.long_runs",
                "train.bema.ood_kl.long", "train.ema.ood_kl.long", "train.postnorm.long_runs_v32",
                "train.bema.ood_kl.long_v32", "train.ema.ood_kl.long_v32"):
        assert cid in found and found[cid].source and found[cid].statement


def test_generated_claims_read_their_own_sweep_and_weights(monkeypatch):
    """The claims made in loops (Post-Norm per sweep, EMA/BEMA per sweep) each read the sweep
    of their table row and compare the right weights: on planted rows where only that
    sweep's post runs (or that kind's weights) are better, only the claim for it passes."""
    import resharpen.experiments.set_complement.claims_train as C

    def rows_for(name):
        better = name == "long_runs"
        return [{"model.norm": norm, "ood_invalid_mass": 0.5 - 0.1 * (better and norm == "post")
                 + 0.001 * i, "raw.ood_kl": 1.0 + 0.001 * i,
                 "ema.ood_kl": 1.0 + 0.001 * i - 0.1 * better,
                 "bema.ood_kl": 1.0 + 0.001 * i + 0.1}
                for i in range(6) for norm in ("none", "post")], name

    monkeypatch.setattr(C, "_sweep_rows", rows_for)
    found = claims()
    for cid, sweep, _ in C.POSTNORM_SWEEPS:
        record = run_claim(found[cid], "quick")
        assert (record.status == "PASS") == (sweep == "long_runs"), (cid, record.detail)
        assert sweep in record.detail
    assert len(C.AVERAGING_CLAIMS) == 8
    for cid, kind, sweep in C.AVERAGING_CLAIMS:
        record = run_claim(found[cid], "quick")
        assert (record.status == "PASS") == (kind == "ema" and sweep == "long_runs"), record.id
        assert sweep in record.detail and f"OOD KL({kind})" in record.detail
