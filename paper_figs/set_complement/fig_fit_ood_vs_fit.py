"""Out-of-distribution invalid mass against in-distribution fit, per placement and optimizer
setting: the fit ladder of every run of the placement sweeps, one panel per
vocabulary size (full profile: ``fit_placements_v32.toml`` and ``fit_placements_v64.toml``,
AdamW lr 3e-3, init 0.1, with their ``_lr1e-2`` twins, lr 1e-2, init 0.02; trained to the fit
with soft targets; quick profile: the v32 files' v = 16 quick sweeps only, stamped). Each
panel's title gives its v, read from the runs.

At each rung (ID invalid mass 1e-2, 3e-3, 1e-3, ..., ``summary.ladder``: the first evaluation
of a run at or below it) a point is the mean over seeds of the raw weights' ID invalid mass
(x) and OOD invalid mass (y), with the seeds' min-max as bars; one line per placement, solid
for the first setting and dashed for the second. A placement whose curve moves with the
setting (post) has no single "OOD at matched fit"; none's does not move. A run trained on past
its fit (``train.converge_window``) that converged adds its point at convergence (ID invalid
mass flat over the window, ``summary.converged``): a hollow star per placement and setting at
the mean over the seeds that converged (not every seed does within the cap), joined to the
curve by a dotted line (only the full sweeps have it; the quick
ones stop at the fit). Never trains: a missing
sweep skips the figure with the command that runs it. Claim shown:
fit.placements.ood_at_every_rung.
"""
from __future__ import annotations

import numpy as np

from resharpen.experiments.model.schemes import FIRST

DATA = (
    "resharpen sweep set_complement/fit_placements_v32 --profile {profile} --workers 2",
    "resharpen sweep set_complement/fit_placements_v32_lr1e-2 --profile {profile} --workers 2",
    "resharpen sweep set_complement/fit_placements_v64 --profile {profile} --workers 2"
    " # full size only",
    "resharpen sweep set_complement/fit_placements_v64_lr1e-2 --profile {profile} --workers 2"
    " # full size only",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

SETTINGS = {"": ("-", "lr 3e-3, init 0.1"), "_lr1e-2": ("--", "lr 1e-2, init 0.02")}
"""File-name suffix: (line style, label) of the two optimizer settings."""
PLACEMENTS = FIRST
"""The placements drawn: the placement sweeps' (the registry's FIRST)."""


def make(profile: str, outdir):
    import matplotlib.pyplot as plt

    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.set_complement.fit_report import CONVERGED, ladder_rows
    from resharpen.paper_figs import save, style
    from resharpen.paper_figs.results import set_complement_sweep

    from resharpen.experiments.common.profiles import pick

    # the placement sweeps drawn, one panel each with its two settings
    panels = pick(profile, quick=("fit_placements_v32",),
                  full=("fit_placements_v32", "fit_placements_v64"))
    roots = {base + suffix: set_complement_sweep(base + suffix, profile)
             for base in panels for suffix in SETTINGS}
    data = {name: ladder_rows(root) for name, root in roots.items()}
    ensure_writable_dir(outdir)
    width = style.COLUMN_WIDTH if len(panels) == 1 else style.TEXT_WIDTH
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 2.8), squeeze=False)
    for ax, base in zip(axes[0], panels):
        vocab = load_runs(roots[base])[0]["config"]["task"]["vocab"]
        for suffix, (dash, _) in SETTINGS.items():
            draw_sweep(ax, data[base + suffix], dash, CONVERGED, style)
        format_axes(ax, style)
        ax.set_title(f"v = {vocab}: OOD against fit, per placement and setting",
                     fontsize=style.MIN_FONT + 1)
    keys = [style.key(p, marker=style.PLACEMENT_MARKERS[p], ms=3, color=style.placement_color(p))
            for p in PLACEMENTS]
    keys += [style.key(label, ls=dash, lw=1.0, color=style.MUTED)
             for dash, label in SETTINGS.values()]
    keys += [style.key("bars: min-max over seeds", ls="none", marker="|", color=style.MUTED)]
    if any(r["rung"] == CONVERGED for rows in data.values() for r in rows):
        keys += [style.key("at convergence (flat ID mass; mean of the seeds that converged)",
                           ls="none", marker="*", mfc="none", color=style.MUTED)]
    fig.tight_layout()
    style.legend_below(fig, keys, ncol=3 if len(panels) == 1 else 5)
    return save(fig, outdir, "fig_fit_ood_vs_fit", profile)


def draw_sweep(ax, rows, dash, converged, style) -> None:
    """One sweep's curves: per placement the mean (ID, OOD) over seeds at each rung with the
    seeds' OOD min-max as bars, and the hollow star at convergence joined by a dotted line."""
    for placement in PLACEMENTS:
        mine = [r for r in rows if r["placement"] == placement]
        done = [r for r in mine if r["rung"] == converged]
        mine = [r for r in mine if r["rung"] != converged]
        rungs = sorted({r["rung"] for r in mine}, reverse=True)
        x = [np.mean([r["id"] for r in mine if r["rung"] == g]) for g in rungs]
        ood = [[r["ood"] for r in mine if r["rung"] == g] for g in rungs]
        y = [np.mean(v) for v in ood]
        err = np.array([[m - min(v) for m, v in zip(y, ood)],
                        [max(v) - m for m, v in zip(y, ood)]])
        ax.errorbar(x, y, yerr=err, ls=dash, marker=style.PLACEMENT_MARKERS[placement],
                    ms=3, lw=1.0, capsize=1.5, color=style.placement_color(placement))
        if done and x:  # the point at convergence, after the last rung
            cx, cy = np.mean([r["id"] for r in done]), np.mean([r["ood"] for r in done])
            ax.plot([x[-1], cx], [y[-1], cy], ls=":", lw=0.8,
                    color=style.placement_color(placement))
            ax.plot([cx], [cy], ls="none", marker="*", ms=6, mfc="none",
                    color=style.placement_color(placement))


def format_axes(ax, style) -> None:
    from matplotlib import ticker

    ax.set(xscale="log", yscale="log", xlabel="ID invalid mass (the fit rung reached)",
           ylabel="raw OOD invalid mass")
    ax.invert_xaxis()  # training runs left to right
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xticks([1e-2, 3e-3, 1e-3, 3e-4, 1e-4],
                  ["1e-2", "3e-3", "1e-3", "3e-4", "1e-4"])  # the rungs
    ax.tick_params(which="both", labelsize=style.MIN_FONT)
