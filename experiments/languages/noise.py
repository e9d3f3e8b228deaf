"""The noise hypothesis on the languages: the rows, gains and tests of
the noise grid (``experiments/configs/languages/noise.toml``), torch-free.

Every run of the grid trains one task with one training target, sampled k = 1, sampled k = 4 or
soft, for a fixed budget, and evaluates its raw, EMA and BEMA weights (one trajectory). The
label noise of a target, as a variance relative to k = 1, is ``1/k`` for k sampled labels (the
mean of k i.i.d. one-hot draws from p* has covariance (diag p* - p* p*^T) / k) and 0 for the
soft target p*: :func:`noise_level`.

For a run and an average w (ema | bema) the **gain** is

    g_w = log( OOD invalid mass of the raw weights / OOD invalid mass of w ),

> 0 when the average puts less mass on illegal tokens past the training length (paired within
the run: one trajectory). It is counted only at **matched fit**: the raw and the averaged
weights both end with an ID invalid mass (mean over lengths 1..L_train) at or below the task's
stated fit ``fit.until_id_invalid_mass`` and an ID total variation to the exact legal-next
distribution of at most ``LEARNED_TV`` = 0.1 (:func:`matched`).

The noise hypothesis (averaging helps because it cancels the noise of the iterate) predicts
that g_w is largest at k = 1 and shrinks toward soft. Its test, per task and average
(:func:`trend_tests`), is paired by seed: for every seed whose three runs (k = 1, 4, soft) are
all at matched fit, the least-squares slope of g_w on the noise level x in {1, 1/4, 0},

    b = sum_j (x_j - xbar)(g_j - gbar) / sum_j (x_j - xbar)^2,

then a one-sample t of the slopes against 0 (the paired t of b against zeros,
:func:`resharpen.experiments.ledger.stats.paired`, Wilcoxon beside it), one-sided b > 0. One
seed gives the same initialization and the same training sequences under every target, so b
holds the seed fixed. Fewer than ``stats.MIN_N`` such seeds is INCONCLUSIVE.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from resharpen.experiments.ledger import stats

AVERAGES = ("ema", "bema")
TARGETS = ("k1", "k4", "soft")


def noise_level(tag: str) -> float:
    """The label-noise variance of a target relative to one sampled label: 1/k for ``k<k>``, 0
    for ``soft``."""
    return 0.0 if tag == "soft" else 1.0 / int(tag[1:])


def run_row(config: dict, summary: dict) -> dict:
    """One row of a noise-grid run: task, seed, target tag and noise level, the stated fit and
    whether / at which record step the raw weights first reached it (``fit_step``, None when they
    never did) and the steps trained, and per weight set its ID and OOD invalid mass."""
    from resharpen.experiments.training.next_token_config import target_tag

    tag = target_tag(config["train"])
    row = {"run": config["name"], "task": config["task"]["name"],
           "seed": config["train"]["seed"], "target": tag, "noise": noise_level(tag),
           "level": config["fit"]["until_id_invalid_mass"],
           "fit_reached": summary.get("fit_reached"), "fit_step": summary.get("fit_step"),
           "steps": summary.get("steps_trained", config["train"]["steps"]),
           "window": 1.0 / (1.0 - config["train"]["ema_decay"]),
           "seconds": summary.get("seconds", math.nan)}
    for weights, s in summary["by_weights"].items():
        row[f"{weights}.id"] = s["id_invalid_mass"]
        row[f"{weights}.id_tv"] = s["id_tv"]
        row[f"{weights}.ood"] = s["ood_invalid_mass"]
    return row


def grid_rows(root: str | Path) -> list[dict]:
    """:func:`run_row` of every finished run of a noise-grid folder."""
    from resharpen.experiments.training.sweep import load_runs

    return [run_row(run["config"], run["summary"]) for run in load_runs(root)]


def at_fit(row: dict, weights: str) -> bool:
    """Whether ``weights`` end at or below the run's stated fit (ID invalid mass) with an ID
    total variation <= ``LEARNED_TV``."""
    from resharpen.experiments.languages.postnorm_controls import LEARNED_TV

    return row[f"{weights}.id"] <= row["level"] and row[f"{weights}.id_tv"] <= LEARNED_TV


def matched(row: dict, weights: str) -> bool:
    """Whether the raw weights and ``weights`` both end at or below the run's stated fit (ID
    invalid mass) with an ID total variation <= ``LEARNED_TV`` (not a model that avoids illegal
    tokens by predicting a few always-legal ones): the matched fit a gain is counted at."""
    return at_fit(row, "raw") and at_fit(row, weights)


def gain(row: dict, weights: str) -> float:
    """log(raw OOD invalid mass / ``weights`` OOD invalid mass); NaN when either is not > 0."""
    raw, avg = row["raw.ood"], row[f"{weights}.ood"]
    return math.log(raw / avg) if raw > 0 and avg > 0 else math.nan


def slope(x, y) -> float:
    """The least-squares slope of y on x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    dx = x - x.mean()
    return float((dx * (y - y.mean())).sum() / (dx * dx).sum())


def seed_slopes(rows: list[dict], task: str, weights: str) -> dict[int, float]:
    """{seed: slope of the gain on the noise level} over the seeds of ``task`` whose three runs
    (k = 1, 4, soft) are all at matched fit with finite gains."""
    by = {(r["seed"], r["target"]): r for r in rows if r["task"] == task}
    out = {}
    for seed in sorted({s for s, _ in by}):
        arms = [by.get((seed, t)) for t in TARGETS]
        if any(r is None or not matched(r, weights) for r in arms):
            continue
        gains = [gain(r, weights) for r in arms]
        if all(math.isfinite(g) for g in gains):
            out[seed] = slope([r["noise"] for r in arms], gains)
    return out


def trend_tests(weights: str):
    """rows -> per task, the test that the gain of ``weights`` grows with the label noise:
    one-sample t of the per-seed slopes (:func:`seed_slopes`) against 0, one-sided greater."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        out = []
        for task in sorted({r["task"] for r in rows}):
            slopes = list(seed_slopes(rows, task, weights).values())
            out.append((f"{task}: {weights} gain slope on 1/k",
                        stats.paired(slopes, [0.0] * len(slopes), "greater")))
        return out

    return tests


def gain_table(rows: list[dict], weights: str) -> list[dict]:
    """Per task and target: runs, runs at matched fit, and the mean and sample std of the gain
    over them (the figure's points), with the raw weights' OOD mass."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        for tag in TARGETS:
            arm = [r for r in rows if r["task"] == task and r["target"] == tag]
            if not arm:
                continue
            kept = [r for r in arm if matched(r, weights)]
            g = np.array([gain(r, weights) for r in kept], dtype=float)
            g = g[np.isfinite(g)]
            out.append({"task": task, "target": tag, "noise": noise_level(tag),
                        "weights": weights, "runs": len(arm), "matched": len(kept),
                        "gain_mean": float(g.mean()) if len(g) else math.nan,
                        "gain_std": float(g.std(ddof=1)) if len(g) > 1 else math.nan,
                        "gains": g.tolist(),
                        "raw_ood": float(np.mean([r["raw.ood"] for r in arm]))})
    return out


def fit_note(rows: list[dict]) -> str:
    """Whether and when the runs' raw weights reached the stated fit (recorded, not a stop), and
    how many raw / EMA / BEMA weights end at or below it, per task and target."""
    parts = []
    for task in sorted({r["task"] for r in rows}):
        for tag in TARGETS:
            arm = [r for r in rows if r["task"] == task and r["target"] == tag]
            if not arm:
                continue
            steps = [r["fit_step"] for r in arm if r["fit_step"] is not None]
            when = f"steps {min(steps)}-{max(steps)}" if steps else "never"
            ends = "/".join(str(sum(at_fit(r, w) for r in arm)) for w in ("raw", "ema", "bema"))
            parts.append(f"{task} {tag}: {len(steps)}/{len(arm)} reached fit {arm[0]['level']:g}"
                         f" ({when} of {max(r['steps'] for r in arm)}); at the end raw/EMA/BEMA "
                         f"{ends} at the fit (ID invalid mass and total variation)")
    return "; ".join(parts)


__all__ = ["AVERAGES", "TARGETS", "noise_level", "run_row", "grid_rows", "matched", "gain",
           "slope", "seed_slopes", "trend_tests", "gain_table", "fit_note", "at_fit"]
