"""Issue 21, requirement 4: the noise grid (configs/languages/noise.toml) plans what it says, the
fit can be recorded without stopping, and the langtrain.noise.* claims decide PASS, FAIL and
INCONCLUSIVE on planted rows (no training there)."""
import math

import numpy as np
import pytest

from resharpen.experiments.training.next_token_config import make_config, stops_at_fit
from resharpen.experiments.languages.grid import GRID_DIR, load_grid
from resharpen.experiments.languages.noise import (TARGETS, gain, noise_level, seed_slopes,
                                                   slope, trend_tests)
from resharpen.experiments.ledger import stats

NOISE = GRID_DIR / "noise.toml"


@pytest.mark.parametrize("profile, tasks, seeds, steps, decay", [
    ("full", {"dyck2", "shuffle_dyck2", "anbn", "multiset_complement"}, 8, 3000, 0.995),
    ("quick", {"shuffle_dyck2"}, 6, 250, 0.98)])
def test_the_noise_grid_plans_tasks_x_targets_x_seeds(profile, tasks, seeds, steps, decay):
    planned = load_grid(NOISE, profile)
    configs = planned["configs"]
    assert planned["name"] == "langs-noise" + ("-quick" if profile == "quick" else "")
    assert len(configs) == len(tasks) * 3 * seeds  # soft's k = 4 grid point is its k = 1 run
    names = [c["name"] for c in configs]
    assert len(set(names)) == len(names)
    arms = {(c["task"]["name"], c["train"]["target"], c["train"]["labels_per_position"],
             c["train"]["seed"]) for c in configs}
    assert arms == {(t, kind, k, s) for t in tasks for s in range(seeds)
                    for kind, k in (("sampled", 1), ("sampled", 4), ("soft", 1))}
    for c in configs:
        tag = {"sampled": f"k{c['train']['labels_per_position']}", "soft": "soft"}[
            c["train"]["target"]]
        assert c["name"] == f"{c['task']['name']}-pre-{tag}-s{c['train']['seed']}"
        assert c["model"]["norm"] == "pre" and c["train"]["schedule"] == "constant"
        multiset = c["task"]["name"] == "multiset_complement"
        assert c["train"]["steps"] == (6000 if multiset else steps)
        assert c["train"]["batch_size"] == (128 if multiset else 32)
        assert c["train"]["ema_decay"] == decay
        # the EMA window fits several times into the run, and the fit is recorded, not a stop
        assert c["train"]["steps"] >= 5 / (1 - c["train"]["ema_decay"])
        assert c["fit"]["until_id_invalid_mass"] > 0 and c["fit"]["stop"] is False
        assert not stops_at_fit(c)
        if multiset:
            assert (c["task"]["vocab"], c["task"]["train_len"], c["task"]["eval_len"]) == (8, 8, 15)
            assert c["fit"]["until_id_invalid_mass"] == 0.01
        else:
            assert (c["task"]["train_len"], c["task"]["eval_len"]) == (20, 100)
            assert c["fit"]["until_id_invalid_mass"] == 0.02


def test_other_grids_keep_their_run_names_and_configs():
    """fit.stop is left out of a config at its default and a grid over one target names its
    runs <task>-<norm>-s<seed>, so folders written before either existed still resume."""
    for c in load_grid(GRID_DIR / "grid.toml", "quick")["configs"]:
        assert "stop" not in c["fit"] and stops_at_fit(c)
        assert c["name"] == f"{c['task']['name']}-{c['model']['norm']}-s{c['train']['seed']}"
    with pytest.raises(ValueError, match="fit.stop = false records the fit"):
        make_config({"fit": {"stop": False}})


def test_a_recorded_fit_trains_on_to_the_budget():
    """With fit.stop = false the run trains train.steps and records the step at which its raw
    weights first reached the fit: the step a stopping run ends at (constant rate, so the two
    trajectories agree up to it)."""
    from resharpen.experiments.training.next_token import train

    def config(steps: int, stop: bool) -> dict:
        return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                            "train": {"seed": 0, "lr": 1e-2, "steps": steps, "warmup": 5,
                                      "log_every": 20, "target": "soft",
                                      "schedule": "constant"},
                            "fit": {"until_id_invalid_mass": 0.02, "stop": stop},
                            "eval": {"count": 32}})

    stopped = train(config(400, True), progress=False)["summary"]
    assert stopped["fit_reached"] and stopped["steps_trained"] == stopped["fit_step"] < 400
    budget = stopped["fit_step"] + 60
    run = train(config(budget, False), progress=False)
    s = run["summary"]
    assert s["fit_reached"] and s["fit_step"] == stopped["fit_step"]
    assert s["steps_trained"] == budget == run["history"][-1]["step"]
    assert all("fit_id_invalid_mass" in row for row in run["history"])


# ----------------------------------------------------------------------------- the claims
def planted(trend: float, tasks=("anbn", "dyck2"), seeds=8, unfitted=0, spread=0.05,
            degenerate=0):
    """Noise-grid rows: raw OOD invalid mass 0.1 at every run; the EMA's and BEMA's OOD mass
    raw * exp(-(0.1 + trend * x + noise)) at label noise x (1, 1/4, 0), so the gain is
    0.1 + trend * x + noise; the first ``unfitted`` seeds' k = 4 runs end above the fit, and the
    first ``degenerate`` seeds' soft-target averages meet the invalid-mass fit only by predicting
    a few always-legal tokens (ID total variation 0.33)."""
    rng = np.random.default_rng(3)
    rows = []
    for task in tasks:
        for seed in range(seeds):
            for tag, x in (("k1", 1.0), ("k4", 0.25), ("soft", 0.0)):
                row = {"run": f"{task}-pre-{tag}-s{seed}", "task": task, "seed": seed,
                       "target": tag, "noise": x, "level": 0.02, "fit_reached": True,
                       "fit_step": 100, "steps": 600, "window": 100.0, "seconds": 1.0,
                       "raw.id": 0.005, "raw.ood": 0.1, "raw.id_tv": 0.02}
                for w in ("ema", "bema"):
                    g = 0.1 + trend * x + spread * rng.normal()
                    row[f"{w}.ood"] = 0.1 * math.exp(-g)
                    row[f"{w}.id"] = 0.05 if tag == "k4" and seed < unfitted else 0.004
                    row[f"{w}.id_tv"] = 0.33 if tag == "soft" and seed < degenerate else 0.03
                rows.append(row)
    return rows


def decide(rows):
    tests = stats.family([(w, label, result) for w in ("ema", "bema")
                          for label, result in trend_tests(w)(rows)])
    return {w: stats.decision(tests[w])[0] for w in tests}, tests


def test_slope_and_gain_are_their_definitions():
    assert slope([1.0, 0.25, 0.0], [3.0, 1.5, 1.0]) == pytest.approx(
        np.polyfit([1.0, 0.25, 0.0], [3.0, 1.5, 1.0], 1)[0], rel=1e-12)
    assert [noise_level(t) for t in TARGETS] == [1.0, 0.25, 0.0]
    row = {"raw.ood": 0.2, "ema.ood": 0.05}
    assert gain(row, "ema") == pytest.approx(math.log(4.0))


def test_planted_trends_pass_fail_or_stay_inconclusive():
    statuses, tests = decide(planted(trend=0.5))
    assert statuses == {"ema": "PASS", "bema": "PASS"}
    assert len([t for ts in tests.values() for t in ts]) == 4  # 2 tasks x 2 averages, one family
    slopes = seed_slopes(planted(trend=0.5, spread=0.0), "anbn", "ema")
    assert sorted(slopes) == list(range(8)) and all(s == pytest.approx(0.5) for s in slopes.values())
    assert decide(planted(trend=-0.5))[0] == {"ema": "FAIL", "bema": "FAIL"}  # the opposite
    assert decide(planted(trend=0.0, spread=0.3))[0] == {"ema": "INCONCLUSIVE",
                                                         "bema": "INCONCLUSIVE"}
    # four of eight seeds have a k = 4 run off the fit: 4 < stats.MIN_N seeds decide
    statuses, tests = decide(planted(trend=0.5, unfitted=4))
    assert statuses == {"ema": "INCONCLUSIVE", "bema": "INCONCLUSIVE"}
    assert "4 < 5 pairs" in stats.decision(tests["ema"])[1]
    # four seeds' soft-target averages are degenerate (invalid mass at the fit, TV 0.33): they
    # are not at matched fit either
    statuses, tests = decide(planted(trend=0.5, degenerate=4))
    assert statuses == {"ema": "INCONCLUSIVE", "bema": "INCONCLUSIVE"}
    assert "4 < 5 pairs" in stats.decision(tests["ema"])[1]


def test_the_claims_read_the_grid_and_say_what_they_decided_on(monkeypatch, tmp_path):
    import resharpen.experiments.languages.claims_train as module
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger import run_claim

    claims = {c.id: c for c in all_claims() if c.id.startswith("langtrain.noise.")}
    assert set(claims) == {"langtrain.noise.ema_gain_falls_with_k",
                           "langtrain.noise.bema_gain_falls_with_k"}
    monkeypatch.setattr(module, "noise_grid", lambda profile: (planted(trend=0.5), tmp_path))
    monkeypatch.setattr(module, "describe_runs", lambda root: "planted rows")
    out = run_claim(claims["langtrain.noise.ema_gain_falls_with_k"], "quick")
    assert out.status == "PASS"
    assert "anbn: ema gain slope on 1/k" in out.detail and "k = 1, 4, soft" in out.detail
    assert "family: 4 tests of the 2 langtrain.noise claims" in out.detail


def claims_by_id():
    from resharpen.claims import all_claims

    return {c.id: c for c in all_claims()}


def test_the_full_noise_grid_decides_only_when_every_run_has_finished(tmp_path, monkeypatch):
    """A part of the full noise grid (here one finished run of its 96) is reported as counts,
    never read as rows: the full profile does not decide on a part of its grid."""
    import resharpen.experiments.languages.claims_train as module
    import resharpen.experiments.languages.grid as grid
    from resharpen.experiments.ledger import run_claim

    run = tmp_path / "langs-noise" / "runs" / "dyck2-pre-k1-s0"
    run.mkdir(parents=True)
    monkeypatch.setattr(grid, "default_root", lambda name: tmp_path / "langs-noise")
    monkeypatch.setattr(grid, "load_runs", lambda root: [{"folder": run}])
    module._CACHE.pop(("noise", "full"), None)
    out = run_claim(claims_by_id()["langtrain.noise.bema_gain_falls_with_k"], "full")
    assert (out.status, out.measured) == ("INCONCLUSIVE", "1 of 96 runs finished")
    assert "1 of the full noise grid's 96 runs" in out.detail and "--profile full" in out.detail


def test_the_figure_draws_one_panel_per_task_from_the_rows(tmp_path):
    from resharpen.paper_figs import save
    from resharpen.paper_figs.languages.fig_langtrain_noise_gain import STEM, noise_figure

    fig = noise_figure(planted(trend=0.5, tasks=("anbn", "dyck2", "shuffle_dyck2")), "planted")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in panels] == ["anbn", "dyck2", "shuffle_dyck2"]
    assert "ema 8/8/8, bema 8/8/8" in panels[0].get_title()
    paths = save(fig, tmp_path, STEM)
    assert {p.name for p in paths} == {f"{STEM}.png", f"{STEM}.pdf"}
