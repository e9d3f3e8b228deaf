"""Sweep analysis: grouped effects, rank regression, comparisons, the report and its figures."""
import json

import numpy as np
import pytest
from test_sweep import tiny_sweep  # pytest puts tests/ on sys.path (no package)

from resharpen.experiments.set_complement import sweep_report as R
from resharpen.cli import main
from resharpen.experiments.set_complement.sweep import run_sweep


def synthetic_rows(n=60, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        norm = ["none", "pre", "post", "attn_out"][i % 4]
        lr = float(np.exp(rng.uniform(np.log(1e-3), np.log(3e-2))))
        drop = float(rng.choice([0.0, 0.2, 0.5]))
        # OOD KL falls with dropout and with Post-Norm, and is unrelated to lr
        kl = 1.0 - 0.8 * drop - 0.3 * (norm in ("post", "attn_out")) + 0.05 * rng.normal()
        rows.append({"model.norm": norm, "train.lr": lr, "model.attn_dropout": drop,
                     "ood_kl": kl, "ood_invalid_mass": kl / 2, "lg_score": 3,
                     "raw.ood_kl": kl, "ema.ood_kl": kl - 0.01, "bema.ood_kl": kl + 0.02,
                     "raw.ood_invalid_mass": kl / 2, "ema.ood_invalid_mass": kl / 2,
                     "bema.ood_invalid_mass": kl / 2})
    return rows


def test_rank_regression_and_groups_recover_planted_effects():
    rows = synthetic_rows()
    factors = ["model.attn_dropout", "model.norm", "train.lr"]
    rr = R.rank_regression(rows, factors, "ood_kl")["coefficients"]
    assert rr["model.attn_dropout"] < -0.3
    assert abs(rr["train.lr"]) < 0.15
    assert rr["model.norm=post (vs attn_out)"] == pytest.approx(0.0, abs=0.3)
    assert rr["model.norm=none (vs attn_out)"] > 0.3
    effects = R.factor_effects(rows, factors, "ood_kl", categorical={"model.attn_dropout"})
    drop = effects["model.attn_dropout"]
    assert drop["0.0"]["mean"] > drop["0.2"]["mean"] > drop["0.5"]["mean"]
    assert len(effects["train.lr"]) == 3  # terciles, a partition of the runs
    assert sum(g["n"] for g in effects["train.lr"].values()) == len(rows)
    by_placement = R.placement_comparison(rows)["ood_kl"]
    assert "none" not in by_placement and {"post", "attn_out"} <= set(by_placement)
    assert by_placement["post"]["minus_none"]["mean_diff"] < -0.2  # against none alone
    assert by_placement["post"]["minus_none"]["test"].startswith("Welch")  # random seeds
    av = R.averaging_comparison(rows)["ood_kl"]
    assert av["ema_better_fraction"] == 1.0 and av["bema_better_fraction"] == 0.0
    assert av["ema_minus_raw"]["mean"] == pytest.approx(-0.01)


def test_report_on_a_real_tiny_sweep_writes_tables_and_figures(tmp_path):
    space = ('"model.norm" = { choice = ["none", "attn_out"] }\n'
             '"model.attn_dropout" = { choice = [0.0, 0.3] }\n'
             '"train.ema" = { choice = ["none", "ema", "bema"] }\n'
             '"train.seed" = { randint = [0, 1000] }\n')
    root = run_sweep(tiny_sweep(tmp_path, runs=4, space=space), out=tmp_path / "s", workers=1,
                     progress=False)
    assert main(["report", str(root)]) == 0
    text = (root / "report.md").read_text()
    assert "4 finished runs" in text and "Each placement against none" in text
    # 4 runs over two placements: each arm has fewer runs than its test needs, and says so
    assert "## Warnings: unbalanced arms" in text and "fewer than the 5 per arm" in text
    report = json.loads((root / "report.json").read_text())
    assert report["runs"] == 4 and "train.seed" not in report["factors"]
    for name in ("placements", "dropout", "margins", "averaging"):
        assert (root / "figs" / f"fig_train_{name}.png").stat().st_size > 1000
    assert main(["report", str(tmp_path / "nothing")]) == 2


def test_terciles_partition_runs_even_with_tied_or_close_values():
    """Each run lands in exactly one group: a numeric factor with few values (say a grid of
    EMA decays) is grouped per value, in numeric order; close values (bins whose edges print
    alike) still give three distinct bins; tied values are not counted twice."""
    rows = [{"train.ema_decay": d, "ood_kl": float(i)}
            for i, d in enumerate([0.999] * 8 + [0.99] * 8)]
    groups = R.factor_effects(rows, ["train.ema_decay"], "ood_kl")["train.ema_decay"]
    assert list(groups) == ["0.99", "0.999"] and [g["n"] for g in groups.values()] == [8, 8]
    close = np.random.default_rng(0).uniform(0.9990, 0.9995, size=30)
    tied = [1.0] * 12 + [2.0] * 4 + [3.0, 4.0, 5.0, 6.0]
    for values, bins in ((close, 3), (tied, 2)):  # ties leave T1 = [1, 1) empty
        rows = [{"x": float(v), "ood_kl": 0.0} for v in values]
        groups = R.factor_effects(rows, ["x"], "ood_kl")["x"]
        assert len(groups) == bins and sum(g["n"] for g in groups.values()) == len(values)


def test_missing_and_small_arms_are_warned_about():
    from resharpen.experiments.ledger.stats import MIN_N

    identity = {"space": {"model.norm": {"choice": ["none", "pre", "post"]}}}
    rows = [{"model.norm": "none"}] * MIN_N + [{"model.norm": "pre"}] * 2
    warnings = R.arm_warnings(rows, identity)
    assert len(warnings) == 2
    assert "arm 'pre' has 2 run(s), fewer than the 5 per arm" in warnings[0]
    assert "arm 'post' is missing" in warnings[1] and "left out of the comparison" in warnings[1]
    assert R.arm_warnings(rows, {"space": {"train.lr": {"uniform": [0, 1]}}}) == []
    full = [{"model.norm": p} for p in ("none", "pre", "post") for _ in range(MIN_N)]
    assert R.arm_warnings(full, identity) == []
    text = R.to_markdown({
        "sweep": "s", "runs": 7, "budget": {"vocab": 8, "train_len": 2, "steps": 1,
                                            "batch_size": 1}, "seconds_per_run": {"mean": 1.0},
        "warnings": warnings, "placements": {}, "averaging": {}, "effects": {
            m: {} for m in R.OOD_METRICS}, "rank_regression": {
            m: {"n": 0, "r2": float("nan"), "coefficients": {}} for m in R.OOD_METRICS}})
    assert "## Warnings: unbalanced arms" in text and "arm 'post' is missing" in text


def test_placements_sweep_grids_the_placement():
    """placements.toml enumerates the placement: every prefix of 5k runs is balanced, and its
    run count gives each arm the runs its test needs."""
    from collections import Counter

    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.ledger.stats import MIN_N
    from resharpen.experiments.set_complement.sweep import plan

    path = CONFIG_DIR / "set_complement" / "placements.toml"
    full = plan(path, profile="full")
    counts = Counter(c["model"]["norm"] for c in full["configs"])
    assert set(counts) == {"none", "pre", "post", "attn_out", "peri"}
    assert set(counts.values()) == {len(full["configs"]) // 5} and min(counts.values()) >= MIN_N
    quick = plan(path, runs=10, profile="quick")  # what the quick ledger trains
    assert set(Counter(c["model"]["norm"] for c in quick["configs"]).values()) == {2}


def test_the_figures_quick_sweep_is_the_one_the_command_line_makes(monkeypatch):
    """The quick sweep the figures read (random_search; ensure_sweep) is asked for with
    the file's own quick runs and ensembles, as `resharpen sweep set_complement/random_search
    --profile quick` asks for it: the two share one folder, so a different identity would make
    the second refuse the folder (it did: the claim trained 12 runs in ensembles of 8, the
    command 64 runs alone)."""
    from resharpen.experiments.set_complement import sweep as sweep_module
    from resharpen.experiments.set_complement.sweep import plan
    from resharpen.experiments.set_complement.sweep_report import ensure_sweep
    from resharpen.experiments.training.config import CONFIG_DIR

    asked = {}
    monkeypatch.setattr(sweep_module, "run_sweep", lambda path, **kw: asked.update(kw, path=path))
    ensure_sweep("quick", name="random_search")
    assert asked["path"] == CONFIG_DIR / "set_complement" / "random_search.toml"
    assert asked.get("runs") is None and asked.get("ensemble") is None  # the file's, as the CLI's
    settings = plan(asked["path"], None, "quick")["settings"]
    assert (len(plan(asked["path"], None, "quick")["configs"]), settings["ensemble"]) == (12, 8)
