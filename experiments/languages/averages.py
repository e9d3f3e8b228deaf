"""The EMA/BEMA comparisons of the task-training grids and the Othello study: the analysis of
the ``langtrain.ema``, ``langtrain.bema`` and ``langtrain.othello`` claims (the claims
themselves are in :mod:`.claims_train`).

An average (EMA or BEMA weights) is compared with the raw weights of the same run, paired within
the run, on the OOD invalid mass, one test per task (the tasks' masses are on different scales),
over the runs whose raw weights learned the task in distribution
(:func:`.postnorm_controls.learned`) and whose raw and averaged weights both reached the run's
stated fit (:func:`.postnorm_controls.at_matched_fit`: matched fit, :func:`averaged_fitted`).
"""
from __future__ import annotations

import math

import numpy as np

from resharpen.experiments.ledger import stats
from resharpen.experiments.languages.postnorm_controls import (
    LEARNED_ID, LEARNED_TV, METRIC, at_matched_fit, learned, matched_bar, tasks_of)

CLAIMS_ANALYSIS = True

def unlearned_note(rows: list[dict]) -> str:
    """Which runs the fit rule left out, per task (for a claim's detail)."""
    kept = {r["run"] for r in learned(rows)}
    out = {}
    for r in rows:
        if r["weights"] == "raw" and r["run"] not in kept:
            out.setdefault(r["task"], []).append((r.get("id_invalid_mass", math.nan),
                                                  r.get("id_tv", math.nan)))
    bars = f"raw ID invalid mass <= {LEARNED_ID}, ID total variation <= {LEARNED_TV}"
    if not out:
        return f"every run learned its task in distribution ({bars})"
    parts = [f"{task} {len(v)} (ID {min(m for m, _ in v):.2g}-{max(m for m, _ in v):.2g}, "
             f"TV {min(t for _, t in v):.2g}-{max(t for _, t in v):.2g})"
             for task, v in sorted(out.items())]
    return (f"left out, not learned in distribution (not both {bars}): "
            f"{sum(map(len, out.values()))} of {len({r['run'] for r in rows})} runs: "
            + ", ".join(parts))


OTHELLO = ("othello", "othello6")


def averaged_tests(weights: str, othello_only: bool = False):
    """rows -> per task, the paired test (within each learned run) of ``weights`` (ema | bema)
    against raw: one test per task (tasks are on different scales; Holm across them), on the
    tasks with a learned run (:func:`postnorm_controls.tasks_of`: a task no run learned is
    outside the premise, listed in the detail)."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        rows = [r for r in learned(rows) if r["task"] in OTHELLO or not othello_only]
        by = {(r["run"], r["weights"]): r[METRIC] for r in rows}
        fitted = averaged_fitted(rows, weights)
        out = []
        for task in tasks_of(rows):
            runs = sorted({r["run"] for r in rows if r["task"] == task and r["run"] in fitted})
            out.append((f"{task}: {weights} - raw",
                        stats.compare({run: by[(run, weights)] for run in runs},
                                      {run: by[(run, "raw")] for run in runs}, "less")))
        return out

    return tests


def averaged_fitted(rows: list[dict], weights: str) -> set[str]:
    """The runs whose ``weights`` (ema | bema) and raw weights both reached the run's own fit
    (:func:`at_matched_fit`: its ID invalid mass and total variation bars): an averaged model
    compared out of distribution with its raw weights must fit the training lengths as well as
    they do, and they as well as it (matched fit; the OOD mass of these tasks rises with the ID
    mass, so a looser bar for either would compare two fits, and an average that only avoids
    illegal tokens by predicting a few always-legal ones has not learned the task). A run stopped
    at its raw fit before the average's window has passed leaves its average behind; a run whose
    raw weights end at the step cap short of the fit is left out even when its average reached
    it."""
    fitted = {(r["run"], r["weights"]) for r in rows if at_matched_fit(r)}
    return {run for run, kind in fitted if kind == weights and (run, "raw") in fitted}


def averaged_note(rows: list[dict], weights: str) -> str:
    """How many learned runs the averaged weights' own fit left out (for a claim's detail)."""
    runs = {r["run"] for r in learned(rows)}
    mine = [r for r in learned(rows) if r["weights"] == weights]
    kept = averaged_fitted(learned(rows), weights)
    if not mine:
        return ""
    ids = [r["id_invalid_mass"] for r in mine]
    bars = sorted({f"{matched_bar(r):g}" for r in mine})
    tvs = sorted({f"{r.get('fit_tv_target') or LEARNED_TV:g}" for r in mine})
    return (f"runs whose {weights} and raw weights both reached the run's fit (ID invalid "
            f"mass <= {', '.join(bars)} and ID total variation <= {', '.join(tvs)}, the run's "
            f"stated fit: matched fit): {len(kept)} of "
            f"{len(runs)} runs (their ID mass: mean {float(np.mean(ids)):.3g}, max "
            f"{max(ids):.3g}; the raw weights stop at the grid's fit, and an average whose "
            "window is not well inside the run lags behind)")


def per_task(rows: list[dict], weights: str, tasks) -> str:
    """Mean paired difference (``weights`` - raw) per task over its runs at matched fit
    (:func:`averaged_fitted`), for the detail."""
    rows = learned(rows)
    by = {(r["run"], r["weights"]): r[METRIC] for r in rows}
    fitted = averaged_fitted(rows, weights)
    out = []
    for task in tasks:
        runs = sorted({r["run"] for r in rows if r["task"] == task and r["run"] in fitted})
        d = np.array([by[(run, weights)] - by[(run, "raw")] for run in runs], dtype=float)
        out.append(f"{task} {np.nanmean(d):+.3g}" if len(d) else f"{task}: no run at matched fit")
    return "per task: " + ", ".join(out)
