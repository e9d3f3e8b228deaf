"""The similarity trajectory of random-weight stacks against the recursion (arXiv 2608.09417,
Thm 3.2 and 3.4 iterated over depth): what the nine ``collapse.stack_*`` claims decide on.

Top row: the mean t_sim leaving each layer of independent random-weight stacks (solid) and the
recursion t <- t + Delta_attn (+ Delta_FFN) from each stack's own input, averaged (dashed), for
Post-Norm attention only, Post-Norm with SwiGLU and Pre-Norm with SwiGLU at init variances x1,
x2, x4. Bottom row: the paired gap g_l = mean_i (t_il - r_l(t0_i)) with its simultaneous 95% t
interval over the layers (Bonferroni), against the tolerance +-0.05: a claim passes when every
interval lies inside the band, fails when one lies wholly outside it
(:func:`resharpen.experiments.collapse.stack_checks.interval_status`). The stacks are the
claims' own (:func:`~resharpen.experiments.collapse.stack_checks.trajectory_config`): n = d =
256, 12 layers and 16 stacks (quick), 48 layers and 64 stacks (full: read from the archive's
table of them, or about 20 CPU minutes to compute). Shows claims collapse.stack_*.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save, style

MULTIPLIERS = (1.0, 2.0, 4.0)
COLORS = dict(zip(MULTIPLIERS, style.sequence_colors(len(MULTIPLIERS))))
PANELS = (("post", None, "Post-Norm, attention only"), ("post", "swiglu", "Post-Norm, SwiGLU"),
          ("pre", "swiglu", "Pre-Norm, SwiGLU"))


def data(profile: str) -> dict:
    """(norm, mlp, k) -> the claims' paired gaps (:func:`paired_gaps`) with their interval
    half-widths q se_l (``half``), the number of stacks and the width n: at full size from the
    archive's table when it holds the claims' current stacks
    (:mod:`resharpen.experiments.collapse.trajectory_table`), else computed."""
    from resharpen.experiments.collapse.trajectory_table import archived_rows, rows

    found = archived_rows(profile) or rows(profile)
    return {(r["norm"], r["mlp"], r["k"]): {
                **{key: np.asarray(r[key]) for key in ("gap", "se", "measured", "predicted")},
                "half": r["q"] * np.asarray(r["se"]), "samples": r["config"]["samples"],
                "n": r["config"]["n"]} for r in found}


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.collapse.stack_checks import TRAJECTORY_TOL

    results = data(profile)
    fig, axes = plt.subplots(2, 3, figsize=(style.TEXT_WIDTH, 4.6), sharex=True)
    for col, (norm, mlp, title) in enumerate(PANELS):
        top, bottom = axes[0, col], axes[1, col]
        for k in MULTIPLIERS:
            r = results[(norm, mlp, k)]
            layers = np.arange(1, len(r["gap"]) + 1)
            top.plot(layers, r["measured"], color=COLORS[k])
            top.plot(layers, r["predicted"], color=COLORS[k], ls="--", lw=1.2)
            dodge = 0.2 * (MULTIPLIERS.index(k) - 1)  # the three intervals side by side
            bottom.errorbar(layers + dodge, r["gap"], yerr=r["half"], color=COLORS[k], fmt="o-",
                            ms=2.5,
                            lw=1.0, capsize=1.5)
        for y in (-TRAJECTORY_TOL, TRAJECTORY_TOL):
            style.hline(bottom, y, ls=":")
        style.hline(bottom, 0, color=style.MUTED)
        top.set_title(title, fontsize=style.MIN_FONT + 1)
        top.set_ylabel(r"$t_{sim}$ leaving the layer" if col == 0 else "")
        bottom.set_ylabel("stacks minus recursion" if col == 0 else "")
        bottom.set_xlabel("layer")
        for ax in (top, bottom):
            ax.tick_params(labelsize=style.MIN_FONT)
            ax.xaxis.get_major_locator().set_params(integer=True)
    first = results[PANELS[0][:2] + (1.0,)]
    fig.suptitle(f"Similarity over depth at init: random stacks vs the recursion (n = d = "
                 f"{first['n']}, {first['samples']} stacks, {profile} profile)", fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    handles = [style.key(f"init variances x{k:g}", color=COLORS[k]) for k in MULTIPLIERS]
    handles += [style.key("stacks, mean t_sim"), style.key("recursion", ls="--"),
                style.key("gap, simultaneous 95% interval", marker="o", ms=3),
                style.key(f"tolerance ±{TRAJECTORY_TOL}", ls=":")]
    style.legend_below(fig, handles, ncol=4)
    return save(fig, outdir, "fig_collapse_trajectory", profile)
