"""The training claims are registered, and the experiment claims decide with tests that fit each
sweep's design: placements against `none` on the raw weights (paired by seed when the placements
share seeds, else Welch), pre its own arm, EMA/BEMA paired within runs, Holm over the claims that
share a sweep (each direction, every planned test), only the runs that learned the task in
distribution deciding; three outcomes: the effect shown PASS, the opposite shown FAIL, too little
data or neither shown INCONCLUSIVE.

Every claim's quick-profile status is tested in tests/core/test_registry.py."""
import numpy as np
import pytest

from resharpen.claims import all_claims
from resharpen.experiments.ledger import stats
from resharpen.experiments.training.config import CONFIG_DIR, load_sweep
from resharpen.experiments.ledger import run_claim


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


def planted(runs_per_arm=6, *, shared_seeds=False, post=0.0, attn_out=0.0, pre=0.0,
            primary_post=0.0, ema=0.0, bema=0.0, dropout_slope=0.0, raw_id=0.01,
            unlearned_ema=0.0):
    """Sweep rows: raw OOD invalid mass 0.5 + (an effect per placement) + a small spread; the
    primary-weights column carries ``primary_post`` for post instead; EMA/BEMA move the raw
    OOD KL by ``ema``/``bema``. Every run's raw ID invalid mass is ``raw_id`` (learned: <=
    0.05), and ``unlearned_ema`` adds as many runs again, near chance (raw ID 0.4), whose EMA
    moves the KL by that much."""
    rng = np.random.default_rng(0)
    rows = []
    for norm, effect in (("none", 0.0), ("pre", pre), ("post", post), ("attn_out", attn_out)):
        for i in range(runs_per_arm):
            noise = 0.01 * rng.normal()
            dropout = [0.0, 0.1, 0.2, 0.3, 0.5][i % 5]
            kl = 1.0 + dropout_slope * dropout + 0.01 * rng.normal()
            rows.append({"run": f"{norm}-{i}", "model.norm": norm,
                         "train.seed": i if shared_seeds else 1000 * len(rows) + i,
                         "model.attn_dropout": dropout,
                         "raw.ood_invalid_mass": 0.5 + effect + noise,
                         "ood_invalid_mass": 0.5 + (primary_post if norm == "post" else effect)
                         + noise,
                         "raw.ood_kl": kl, "ema.ood_kl": kl + ema + 0.002 * rng.normal(),
                         "bema.ood_kl": kl + bema + 0.002 * rng.normal(),
                         "margin_exponent": (1.0 if norm == "none" else 0.3)
                         + 0.1 * rng.normal(),
                         "margin_exponent_attn_out_theory": 0.3, "raw.id_invalid_mass": raw_id})
    if unlearned_ema:
        rows += [dict(r, run=r["run"] + "-chance", **{"raw.id_invalid_mass": 0.4,
                                                      "ema.ood_kl": r["raw.ood_kl"] + unlearned_ema})
                 for r in list(rows)]
    return rows


@pytest.fixture
def C(monkeypatch):
    import resharpen.experiments.set_complement.claims_train as module

    def use(rows_by_sweep):
        monkeypatch.setattr(module, "_sweep_rows",
                            lambda name: (rows_by_sweep(name), module.Path(f"out/sweeps/{name}")))
    module.use = use
    return module


def status(claim_id):
    return run_claim(claims()[claim_id], "quick")


def test_generated_claims_read_their_own_sweep_and_weights(C):
    """The claims made in loops (Post-Norm per sweep, EMA/BEMA per sweep) each read the sweep of
    their table row and compare the right weights: on planted rows where only that sweep's
    Post-Norm runs (or that kind's weights) are better, only the claim for it passes."""
    C.use(lambda name: planted(post=-0.1 * (name == "long_runs"),
                               attn_out=-0.1 * (name == "long_runs"),
                               ema=-0.05 * (name == "long_runs"), bema=0.05))
    for cid, sweep, _, _ in C.POSTNORM_SWEEPS:  # no effect elsewhere: not a FAIL
        record = status(cid)
        assert record.status == ("PASS" if sweep == "long_runs" else "INCONCLUSIVE"), \
            (cid, record.detail)
        assert f"out/sweeps/{sweep}" in record.detail and "Holm-adjusted p=" in record.detail
    assert len(C.AVERAGING_CLAIMS) == 8
    for cid, kind, sweep, _ in C.AVERAGING_CLAIMS:  # BEMA worse everywhere: the opposite, FAIL
        record = status(cid)
        expected = ("FAIL" if kind == "bema" else
                    "PASS" if sweep == "long_runs" else "INCONCLUSIVE")
        assert record.status == expected, (cid, record.detail)
        assert f"out/sweeps/{sweep}" in record.detail and f"{kind} - raw: paired t" in record.detail


def test_postnorm_arms_are_in_their_sweeps_search_space(C):
    from resharpen.experiments.set_complement.train import SCHEMA

    for _, sweep, arms, _ in C.POSTNORM_SWEEPS:
        _, _, space = load_sweep(CONFIG_DIR / "set_complement" / f"{sweep}.toml", SCHEMA)
        norms = next(iter(space["model.norm"].values()))
        assert C.CONTROL in norms and set(arms) <= set(norms), (sweep, norms)


def test_placements_are_paired_by_seed_only_when_they_share_seeds(C):
    C.use(lambda name: planted(shared_seeds=True, post=-0.05, attn_out=-0.05))
    record = status("train.postnorm.multi_layer")
    assert record.status == "PASS" and "post - none: paired t" in record.detail
    C.use(lambda name: planted(shared_seeds=False, post=-0.05, attn_out=-0.05))
    record = status("train.postnorm.multi_layer")
    assert record.status == "PASS" and "post - none: Welch t" in record.detail
    assert "df=" in record.detail and "n=6 vs 6" in record.detail


def test_pre_is_its_own_arm_and_raw_weights_decide(C):
    """A high `pre` is not pooled with the control (post = none fails, though post is below
    none and pre pooled), and an effect only in the primary weights does not count."""
    C.use(lambda name: planted(pre=0.2, primary_post=-0.1))
    record = status("train.postnorm.ood_invalid_mass")
    assert record.status == "INCONCLUSIVE", record.detail  # no raw effect: neither shown
    assert "pre - none (its own arm, not decided)" in record.detail


def test_too_little_data_is_inconclusive_with_the_command_that_decides(C):
    C.use(lambda name: planted(runs_per_arm=3, post=-0.1, attn_out=-0.1))
    record = status("train.postnorm.ood_invalid_mass")
    assert record.status == "INCONCLUSIVE"
    assert "3 < 5" in record.detail and "resharpen sweep" in record.detail


def test_holm_is_applied_across_the_claims_that_share_a_sweep(C):
    C.use(lambda name: planted(post=-0.01, attn_out=-0.008, ema=-0.001, bema=-0.002,
                               dropout_slope=-0.02))
    tests, _ = C.family("placements")
    assert sorted(tests) == ["train.bema.ood_kl.fixed", "train.dispersion.margin_exponent",
                             "train.ema.ood_kl.fixed", "train.postnorm.ood_invalid_mass"]
    flat = [t for claim_tests in tests.values() for t in claim_tests]
    assert len(flat) == 5
    assert [t.adjusted_p for t in flat] == pytest.approx(stats.holm([t.result.p for t in flat]))
    assert all(np.isfinite(t.adjusted_p) and t.adjusted_p >= t.result.p for t in flat)
    random_search, _ = C.family("random_search")
    assert "train.dropout.ood_kl" in random_search
    assert random_search["train.dropout.ood_kl"][0].result.test.startswith("Spearman")


def test_the_same_rule_both_ways_on_the_same_runs(C):
    """EMA and BEMA of the same runs: the effect shown is PASS, the opposite shown FAIL, no effect
    INCONCLUSIVE (more runs decide), never a FAIL for the absence of evidence."""
    C.use(lambda name: planted(ema=-0.05, bema=+0.05))
    assert status("train.ema.ood_kl.long").status == "PASS"
    assert status("train.bema.ood_kl.long").status == "FAIL"
    C.use(lambda name: planted(ema=0.0, bema=0.0))
    for cid in ("train.ema.ood_kl.long", "train.bema.ood_kl.long"):
        record = status(cid)
        assert record.status == "INCONCLUSIVE", record.detail
        assert "neither the effect nor the opposite" in record.detail
        assert "resharpen sweep" in record.detail


def test_only_runs_that_learned_the_task_decide(C):
    """Runs near chance in distribution are left out (and counted): a ten times larger opposite
    effect in them changes no verdict, and with no learned run every claim is INCONCLUSIVE."""
    C.use(lambda name: planted(ema=-0.05, unlearned_ema=+0.5))
    record = status("train.ema.ood_kl.long")
    assert record.status == "PASS" and "n=24" in record.detail, record.detail
    assert "24 of 48 runs learned the task in distribution" in record.detail
    C.use(lambda name: planted(ema=-0.05, bema=+0.05, post=-0.1, attn_out=-0.1, raw_id=0.4))
    for cid in ("train.ema.ood_kl.long", "train.bema.ood_kl.long", "train.postnorm.long_runs",
                "train.dropout.ood_kl"):
        record = status(cid)
        assert record.status == "INCONCLUSIVE", (cid, record.detail)
        assert "0 of 24 runs learned the task in distribution" in record.detail
