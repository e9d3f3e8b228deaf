"""Training on past the fit to convergence (train.converge_window, train.converge_tolerance;
issue 22 req. 1): the flatness rule, a run's convergence record beside its unchanged fit, ensemble
members converging on their own, the config's checks, and the converged rung of
fit.placements.ood_at_every_rung."""
import math
from pathlib import Path

import numpy as np
import pytest

from resharpen.experiments.set_complement.train import (converged_at, load_config, train,
                                                        train_group)

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "set_complement"
TARGET = 0.01


def tiny(name, **sets):
    base = ["task.vocab=8", "model.d_model=16", "train.steps=400", "train.warmup=0",
            "train.schedule=constant", "train.batch_size=32", "train.eval_every=10",
            "eval.per_length=16", "train.target=soft", f"fit.until_id_invalid_mass={TARGET}",
            "train.lr=1e-2", "train.bema_update_after=5"]
    config = load_config(CONFIGS / "base_sampled.toml", base + [f"{k}={v}" for k, v in sets.items()])
    config["name"] = name
    return config


def test_flat_is_a_small_relative_change_of_the_log_linear_trend_across_the_window():
    """m = m0 exp(-k t) changes by exactly exp(-k W) - 1 across a window of W steps."""
    steps = np.arange(0, 3001, 50)
    for factor, flat in ((0.95, True), (0.8, False), (1.05, True), (1.2, False)):
        k = -math.log(factor) / 1000
        trail = [(int(t), 1e-3 * math.exp(-k * t)) for t in steps]
        got, change = converged_at(trail, fit_step=500, window=1000, tolerance=0.1)
        assert got is flat and change == pytest.approx(factor - 1, rel=1e-9)
    trail = [(int(t), 1e-3) for t in steps]
    flat, change = converged_at(trail, 500, 1000, 0.1)
    assert flat is True and abs(change) < 1e-12
    # no window yet: the fit not reached, the window reaching before the fit, < 3 evaluations
    assert converged_at(trail, None, 1000, 0.1)[0] is False
    assert converged_at(trail, 2500, 1000, 0.1)[0] is False
    assert math.isnan(converged_at(trail, 2500, 1000, 0.1)[1])
    assert converged_at([(0, 1.0), (1000, 1.0), (2000, 1.0)], 0, 1000, 0.1)[0] is False


def test_a_run_trains_on_to_convergence_and_keeps_its_fit():
    """The run's weights, per-length records and summary are those of the same run stopped at
    the fit; summary.converged is the first evaluation at least a window past the fit whose
    window is flat (recomputed here from the history with numpy's own least squares); the ladder
    continues below the target."""
    window, tol = 60, 0.5
    config = tiny("c", **{"train.converge_window": window, "train.converge_tolerance": tol})
    result = train(config, progress=False)
    alone = train(tiny("f"), progress=False)
    s, done = result["summary"], result["summary"]["converged"]
    assert s["fit_step"] == alone["summary"]["fit_step"]
    for kind in ("raw", "ema", "bema"):
        assert s["by_weights"][kind]["ood_invalid_mass"] == \
            alone["summary"]["by_weights"][kind]["ood_invalid_mass"]
    assert done["converged"] is True and done["window"] == window and done["tolerance"] == tol
    trail = [(row["step"], row["fit_id_invalid_mass"]) for row in result["history"]]
    first = None
    for i, (t, _) in enumerate(trail):
        if t - window < s["fit_step"]:
            continue
        pts = np.array([(u, math.log(m)) for u, m in trail[:i + 1] if u > t - window])
        slope = np.linalg.lstsq(np.c_[pts[:, 0], np.ones(len(pts))], pts[:, 1], rcond=None)[0][0]
        if abs(math.exp(slope * window) - 1) < tol:
            first = t
            break
    assert done["step"] == first == s["steps_trained"] == trail[-1][0]
    assert done["id_invalid_mass"] == trail[-1][1]
    assert len(done["per_length"]) == 7 and math.isfinite(done["ood_invalid_mass"])
    rungs = [e["rung"] for e in s["ladder"]]
    assert rungs[0] == TARGET == 1e-2 and len(rungs) > 1 and max(rungs[1:]) < TARGET  # past it
    assert all(e["step"] > s["fit_step"] for e in s["ladder"][1:])
    assert "converged" not in alone["summary"]


def test_ensemble_members_converge_on_their_own_as_they_would_alone():
    configs = [tiny("a", **{"train.seed": 0, "train.lr": 3e-2, "train.converge_window": 60,
                            "train.converge_tolerance": 0.5}),
               tiny("b", **{"train.seed": 1, "train.lr": 1e-2, "train.converge_window": 60,
                            "train.converge_tolerance": 0.5})]
    grouped = train_group(configs)
    for config, got in zip(configs, grouped):
        want = train(config, progress=False)["summary"]
        assert got["summary"]["converged"]["step"] == want["converged"]["step"]
        assert got["summary"]["fit_step"] == want["fit_step"]
        assert got["summary"]["converged"]["converged"] is True
    assert grouped[0]["summary"]["converged"]["step"] != grouped[1]["summary"]["converged"]["step"]


def test_a_run_that_meets_the_cap_first_says_so():
    result = train(tiny("n", **{"train.steps": 100, "train.converge_window": 60,
                                "train.converge_tolerance": 1e-6}), progress=False)
    done = result["summary"]["converged"]
    assert done["converged"] is False and done["step"] == 100
    missed = train(tiny("m", **{"train.steps": 30, "fit.until_id_invalid_mass": 1e-9,
                                "train.converge_window": 30}), progress=False)["summary"]
    assert missed["fit_reached"] is False and missed["converged"]["converged"] is False


def test_the_config_checks_of_the_convergence_keys():
    base = tiny("k")
    assert "converge_window" not in base["train"] and "converge_tolerance" not in base["train"]
    with pytest.raises(ValueError, match="converge_tolerance = 0.2 applies only"):
        tiny("t", **{"train.converge_tolerance": 0.2})
    with pytest.raises(ValueError, match="fewer than 3 evaluations"):
        tiny("w", **{"train.converge_window": 20})
    # no stopping rule, no fit to continue from: the keys are dropped (fixed-budget grids)
    off = tiny("o", **{"fit.until_id_invalid_mass": 0.0, "train.converge_window": 100})
    assert "converge_window" not in off["train"]


@pytest.mark.parametrize("sign, status", [(-1.0, "PASS"), (1.0, "FAIL")])
def test_the_converged_rung_decides_with_the_others(monkeypatch, tmp_path, sign, status):
    """fit.placements.ood_at_every_rung on made-up ladders: every placement below none at the
    rungs; at convergence below (PASS) or above (FAIL) none."""
    from resharpen.experiments.set_complement import claims_fit, fit_report
    from resharpen.experiments.set_complement import fit_sweep_tests

    rows = []
    for seed in range(6):
        for j, placement in enumerate(("none",) + fit_sweep_tests.LADDER_ARMS):
            base = 0.3 if placement == "none" else 0.1
            jitter = 0.002 * math.sin(1.7 * seed * (j + 1))  # paired differences vary by seed
            for rung in (1e-2, 1e-3):
                rows.append({"placement": placement, "seed": seed, "rung": rung, "id": rung,
                             "ood": base + jitter})
            at = 0.2 + jitter + (0.0 if placement == "none" else sign * 0.1)
            rows.append({"placement": placement, "seed": seed, "rung": fit_report.CONVERGED,
                         "id": 1e-4, "ood": at, "step": 2000})
    monkeypatch.setattr(fit_sweep_tests, "sweep_root", lambda name, profile: tmp_path)
    monkeypatch.setattr(fit_sweep_tests, "ladder_rows", lambda root: rows)
    monkeypatch.setattr(fit_sweep_tests, "convergence_note", lambda name, root: f"{name}: made up")
    assert fit_report.rung_order(r["rung"] for r in rows) == [1e-2, 1e-3, fit_report.CONVERGED]
    outcome = claims_fit.check_ood_at_every_rung("quick")
    assert "rung converged: post - none" in outcome.detail
    got = "PASS" if outcome.passed else ("INCONCLUSIVE" if outcome.inconclusive else "FAIL")
    assert got == status, outcome.detail


def test_a_sweep_made_before_its_convergence_rule_is_inconclusive(monkeypatch, tmp_path):
    """A placement sweep whose file now trains on to convergence but whose runs on disk stopped
    at the fit cannot decide the converged rung: INCONCLUSIVE, naming the rerun."""
    from resharpen.experiments.set_complement import claims_fit
    from resharpen.experiments.set_complement import fit_sweep_tests

    assert fit_sweep_tests.planned_window("fit_placements_v32", "full") == 1000
    assert fit_sweep_tests.planned_window("fit_placements_v64_lr1e-2", "full") == 1000
    assert fit_sweep_tests.planned_window("fit_placements_v32_lr1e-2", "quick") == 0
    rows = [{"placement": p, "seed": s, "rung": 1e-2, "id": 1e-2, "ood": 0.1 + 0.01 * s}
            for p in ("none",) + fit_sweep_tests.LADDER_ARMS for s in range(6)]
    monkeypatch.setattr(fit_sweep_tests, "sweep_root", lambda name, profile: tmp_path)
    monkeypatch.setattr(fit_sweep_tests, "ladder_rows", lambda root: rows)
    monkeypatch.setattr(fit_sweep_tests, "convergence_note",
                        lambda name, root: f"{name}: no convergence rule (made up)")
    monkeypatch.setattr(fit_sweep_tests, "planned_window", lambda name, profile: 1000)
    outcome = claims_fit.check_ood_at_every_rung("quick")
    assert not outcome.passed and "converge_window" in outcome.inconclusive


def test_ladder_table_is_the_mean_and_sd_per_rung_and_placement(monkeypatch):
    """`resharpen report`'s OOD-against-fit table, on hand-made ladder rows: means and sample
    sds computed by hand, n where not every run reached the rung, "not reached" and "none
    converged" where none did."""
    from resharpen.experiments.training import sweep as core_sweep
    from resharpen.experiments.set_complement import fit_report

    runs = [{"config": {"model": {"norm": p}}} for p in ("post", "post", "none", "none")]
    rows = [{"placement": "none", "seed": 0, "rung": 1e-2, "ood": 0.4},
            {"placement": "none", "seed": 1, "rung": 1e-2, "ood": 0.2},
            {"placement": "post", "seed": 0, "rung": 1e-2, "ood": 0.3},
            {"placement": "post", "seed": 1, "rung": 1e-2, "ood": 0.1},
            {"placement": "post", "seed": 0, "rung": 1e-3, "ood": 0.05},
            {"placement": "post", "seed": 1, "rung": fit_report.CONVERGED, "ood": 0.02}]
    monkeypatch.setattr(fit_report, "ladder_rows", lambda root: rows)
    monkeypatch.setattr(core_sweep, "load_runs", lambda root: runs)
    lines = fit_report.ladder_table("sweep").splitlines()
    assert lines[0] == "| rung (ID invalid mass) | none | post |"
    # sd of (0.4, 0.2) and of (0.3, 0.1): sqrt(0.02) = 0.141
    assert lines[2] == "| 0.01 | 0.300 (0.141) | 0.200 (0.141) |"
    assert lines[3] == "| 0.001 | not reached | 0.050, n = 1 |"
    assert lines[4] == "| converged | none converged | 0.020, n = 1 |"
    assert len(lines) == 5
