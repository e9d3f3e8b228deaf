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


def _report(run, id_mass, ood_mass, vocab=16, train_len=4):
    return {"run": f"sweep/runs/{run}", "vocab": vocab, "train_len": train_len,
            "id_invalid_mass": id_mass, "ood_invalid_mass": ood_mass}


def test_length_generalization_is_decided_on_every_learned_run():
    """At v = 16, L_train 4 the uninformative mean s/v over s = 5..15 is 10/16 = 0.625: a learned
    run at OOD 0.3 passes (ratio 0.48), one at 0.7 breaks it (FAIL, even when another sweep has
    too few learned runs), unlearned runs (ID 0.1) do not count, and a sweep with fewer than 5
    learned runs and none broken is INCONCLUSIVE, with no nan printed."""
    from resharpen.experiments.set_complement.claims_train import lengthgen_outcome

    good = [_report(f"r{i}", 0.001, 0.3) for i in range(5)]
    unlearned = [_report("u", 0.1, 0.9)]
    out = lengthgen_outcome([("a", "five runs", good + unlearned)])
    assert out.passed and not out.inconclusive
    assert out.measured == "largest OOD / uninformative ratio 0.480 over 5 learned runs"
    assert "5 of 6 runs that learned" in out.detail

    bad = [_report("b", 0.001, 0.7)]
    out = lengthgen_outcome([("a", "five runs", good + bad), ("b", "one run", good[:1])])
    assert not out.passed and not out.inconclusive and "a b: ratio 1.120" in out.detail

    out = lengthgen_outcome([("a", "two runs", good[:2]), ("b", "none learned", unlearned)])
    assert not out.passed and "a: 2 of 2 runs learned" in out.inconclusive
    assert "b: 0 of 1 runs learned" in out.inconclusive
    assert "nan" not in (out.measured + out.detail + out.inconclusive).lower()
    out = lengthgen_outcome([("b", "none learned", unlearned)])
    assert out.measured == "no learned run" and out.inconclusive


def test_a_missing_full_sweep_names_the_archive_when_it_holds_the_sweep():
    """fit_placements_v32 is in the committed archive: restoring it comes first, then the command
    that trains it; a sweep the archive lacks names the training command only."""
    from resharpen.experiments.set_complement.fit_data import missing

    held = missing("fit_placements_v32", "x").inconclusive
    assert held.index("resharpen archive restore fit_placements_v32") \
        < held.index("resharpen sweep experiments/configs/set_complement/fit_placements_v32.toml")
    lacking = missing("fit_not_archived", "x").inconclusive
    assert "archive restore" not in lacking
    assert "resharpen sweep experiments/configs/set_complement/fit_not_archived.toml" in lacking
