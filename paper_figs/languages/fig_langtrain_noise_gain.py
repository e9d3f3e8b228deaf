"""The noise hypothesis on the languages: the gain of EMA and BEMA over the raw weights against
the training target's label noise, one panel per task.
Claims shown: langtrain.noise.ema_gain_falls_with_k, langtrain.noise.bema_gain_falls_with_k.

x: the target, ordered by its label-noise variance 1/k (sampled k = 1 at 1, k = 4 at 1/4, soft
at 0); y: the gain log(raw / average) of the OOD invalid mass, paired within each run (> 0: the
average is better), one marker per run at matched fit (raw and averaged weights both at or below
the task's stated ID fit), a line through the mean per target; EMA and BEMA in their weight
colours and markers. The noise hypothesis predicts lines falling from k = 1 to soft. The panel
title says how many runs per target were at matched fit.

Reads the noise grid (``experiments/configs/languages/noise.toml``): out/sweeps/langs-noise
(full; else the archive's copy, results/full/sweeps/langs-noise: the runs' summaries are all it
reads) or out/sweeps/langs-noise-quick (quick, complete). Never trains: skipped with the command
when the grid is not on disk. Writes fig_langtrain_noise_gain.png/.pdf.
"""
from __future__ import annotations

from pathlib import Path

DATA = (
    "resharpen langs run --grid experiments/configs/languages/noise.toml --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

STEM = "fig_langtrain_noise_gain"


def noise_figure(rows: list[dict], grid: str, profile: str | None = None):
    """One panel per task: gain against the noise level, per average (EMA, BEMA)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from resharpen.experiments.languages.noise import AVERAGES, TARGETS, gain_table
    from resharpen.paper_figs import style

    tasks = sorted({r["task"] for r in rows})
    tables = {w: gain_table(rows, w) for w in AVERAGES}
    ncols = min(len(tasks), 2)
    nrows = -(-len(tasks) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(style.TEXT_WIDTH if ncols > 1 else 4.6,
                                                    2.7 * nrows + 0.4),
                             squeeze=False)
    for ax in axes.ravel()[len(tasks):]:
        ax.set_visible(False)
    offset = {"ema": -0.02, "bema": 0.02}
    for ax, task in zip(axes.ravel(), tasks):
        counts = []
        for weights in AVERAGES:
            entries = [e for e in tables[weights] if e["task"] == task]
            colour, marker = style.WEIGHT_COLORS[weights], style.WEIGHT_MARKERS[weights]
            for e in entries:
                x = np.full(len(e["gains"]), e["noise"] + offset[weights])
                ax.plot(x, e["gains"], ls="none", marker=marker, ms=3.5, mfc="none",
                        color=colour, alpha=0.8)
            means = [(e["noise"], e["gain_mean"]) for e in entries if np.isfinite(e["gain_mean"])]
            if means:
                xs, ys = zip(*sorted(means))
                ax.plot(xs, ys, ls=style.WEIGHT_STYLES[weights], color=colour, lw=1.2)
            counts.append(f"{weights} " + "/".join(str(e["matched"]) for e in entries))
        style.hline(ax, 0.0)
        ax.set_xticks([0.0, 0.25, 1.0], ["soft", "k=4", "k=1"])
        ax.set_xlim(-0.1, 1.1)
        ax.set_title(f"{task}\nruns at fit ({'/'.join(TARGETS)}): "
                     + ", ".join(counts), fontsize=style.MIN_FONT)
        ax.set_xlabel("label noise 1/k")
        ax.tick_params(labelsize=style.MIN_FONT)
    for ax in axes[:, 0]:
        ax.set_ylabel("log(raw / avg)\nOOD invalid mass")
    keys = [style.key(f"{w.upper()}: runs (markers), mean per target (line)",
                      color=style.WEIGHT_COLORS[w], ls=style.WEIGHT_STYLES[w],
                      marker=style.WEIGHT_MARKERS[w], mfc="none") for w in AVERAGES]
    keys.append(style.key("0: average = raw", color=style.REFERENCE, lw=0.8))
    fig.suptitle(f"Averaging gain vs label noise (grid {grid}" +
                 (f", {profile} profile" if profile else "") + ")", fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    style.legend_below(fig, keys, ncol=3 if ncols > 1 else 1)
    return fig


def figure_of(root: Path, outdir: Path, profile: str | None = None) -> list[Path]:
    """Write the figure of the noise-grid folder ``root`` into ``outdir``."""
    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.languages.noise import grid_rows
    from resharpen.paper_figs import save

    ensure_writable_dir(outdir)
    from resharpen.experiments.training.config import folder_profile
    quick = profile == "quick" or folder_profile(root) == "quick"
    fig = noise_figure(grid_rows(root), Path(root).name, "quick" if quick else profile)
    return save(fig, outdir, STEM, "quick" if quick else profile)


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.languages import finished_grid

    return figure_of(finished_grid("noise.toml", profile, "noise grid"), Path(outdir),
                     profile=profile)
