"""The training figures of a Set Complement sweep folder (``resharpen report`` and the
``fig_train_*`` scripts): OOD invalid mass per placement, dropout vs OOD KL, learned margins vs
the theory, and raw / EMA / BEMA over training. The numbers come from the run folders
(:func:`resharpen.experiments.set_complement.sweep_report.runs_with_data`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from resharpen.experiments.common.io import ensure_writable_dir
from resharpen.experiments.training.sweep import read_table
from resharpen.experiments.set_complement.sweep_report import runs_with_data, summary_stats
from resharpen.experiments.set_complement.train import attn_out_margin
from resharpen.paper_figs import check_figure_files, save, style


def fig_placements(runs: list[dict], metric: str = "invalid_mass", profile: str | None = None):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    placements = sorted({r["config"]["model"]["norm"] for r in runs})
    for norm in placements:
        group = [r for r in runs if r["config"]["model"]["norm"] == norm]
        primary = [r["summary"]["primary"] for r in group]
        curves = np.array([[x[metric] for x in r["per_length"][p]] for r, p in zip(group, primary)])
        s = [x["length"] for x in group[0]["per_length"]["raw"]]
        mean, sd = _mean_sd(curves)
        colour = style.placement_color(norm)
        ax.plot(s, mean, color=colour, marker=style.PLACEMENT_MARKERS[norm], ms=3, mfc="none",
                label=f"{norm} (n={len(group)})")
        ax.fill_between(s, mean - sd, mean + sd, color=colour, alpha=0.15)
    c = runs[0]["config"]["task"]
    style.vline(ax, c["train_len"], label="L_train")
    style.reference(ax, s, np.array(s) / c["vocab"], lw=0.8, ls=":", label="s / v (no signal)")
    ax.set(xlabel="input length s", ylabel=f"{metric.replace('_', ' ')} (exact)")
    ax.set_title(f"{context(runs, profile)}: mean over the runs of a placement,\n"
                 "band ± sample std (primary weights)", fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    style.legend_below(ax, ncol=2)
    return fig


def fig_dropout(rows: list[dict], heading: str = ""):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    rng = np.random.default_rng(0)
    for kind, weights in (("none", "raw"), ("ema", "ema"), ("bema", "bema")):
        sel = [r for r in rows if r.get("train.ema", r["primary"].replace("raw", "none")) == kind]
        if not sel:
            continue
        x = np.array([r.get("model.attn_dropout", 0.0) for r in sel], dtype=float)
        ax.scatter(x + rng.uniform(-0.01, 0.01, len(x)), [r["ood_kl"] for r in sel], s=16,
                   marker=style.WEIGHT_MARKERS[weights], facecolors="none",
                   edgecolors=style.WEIGHT_COLORS[weights], linewidths=0.9,
                   label=f"{weights} (n={len(sel)})")
    ax.set(xlabel="attention dropout (jittered)", ylabel="OOD KL(p* || p)", yscale="log")
    ax.set_title(f"{heading}dropout vs OOD KL, one point per run,\nmarked by its primary weights",
                 fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    style.legend_below(ax, ncol=3)
    return fig


def fig_margins(runs: list[dict], profile: str | None = None):
    import matplotlib
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    v = runs[0]["config"]["task"]["vocab"]
    s = np.arange(2, v)
    for norm in sorted({r["config"]["model"]["norm"] for r in runs}):
        group = [r for r in runs if r["config"]["model"]["norm"] == norm]
        m = np.array([[x["margin_nonquery_min"] for x in r["per_length"][r["summary"]["primary"]]
                       if x["length"] >= 2] for r in group], dtype=float)
        a = summary_stats([r["summary"]["margin_exponent"] for r in group])["mean"]
        ax.plot(s, np.nanmean(m, 0), color=style.placement_color(norm),
                marker=style.PLACEMENT_MARKERS[norm], ms=3, mfc="none",
                label=f"learned, {norm} (fitted a = {a:.2f}, n = {len(group)})")
    m2 = float(np.nanmean([[x["margin_nonquery_min"] for x in r["per_length"][r["summary"]["primary"]]
                            if x["length"] == 2][0] for r in runs]))
    style.reference(ax, s, m2 * 2 / s, ls="--",
                    label=f"construction / theory, no norm: m_2 (2/s),\nm_2 = {m2:.2f} "
                          "(mean over all runs), a = 1")
    shape = attn_out_margin(v, s.astype(float))
    style.reference(ax, s, m2 * shape / shape[0], ls=":", lw=1.2, label="attn_out theory, same m_2")
    ax.set_xscale("log")
    ax.set_xticks([t for t in (2, 3, 5, 10, 20, 50, 100, 200, 500, 1000) if t < v])
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set(xlabel="input length s", ylabel="mean min non-query margin")
    ax.set_title(f"{context(runs, profile)}: learned margins (mean over the runs of a\n"
                 "placement, primary weights) vs the construction and the theory",
                 fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    style.hline(ax, 0, color=style.MUTED, label="zero margin")
    style.legend_below(ax)
    return fig


def _mean_sd(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample std (ddof = 1; 0 for a single run) over the runs (axis 0)."""
    sd = curves.std(0, ddof=1) if len(curves) > 1 else np.zeros(curves.shape[1:])
    return curves.mean(0), sd


WEIGHT_MARKERS = {"raw": "o", "ema": "s", "bema": "^"}
"""Weight set -> marker, so raw, EMA and BEMA differ in greyscale (with style.WEIGHT_STYLES)."""


def context(runs: list[dict], profile: str | None) -> str:
    """'v = 64, quick profile': what a title must say about the runs it draws (the profile is
    left out for a sweep that names none, such as a user's own)."""
    v = sorted({r["config"]["task"]["vocab"] for r in runs})
    vocab = "v = " + "/".join(str(x) for x in v)
    return vocab + (f", {profile} profile" if profile else "")


def fig_averaging(runs: list[dict], metric: str = "ood_invalid_mass", profile: str | None = None,
                  sweep: str = ""):
    """The raw, EMA and BEMA weights' ``metric`` over training, one panel per placement: mean
    ± sample std over the runs of that placement (the band is the spread of everything else
    the sweep varies: seeds, and in a search also lr, dropout, EMA decay). A panel uses the
    runs that share its most common evaluation schedule and says how many it left out. One
    legend under the panels; the title says v and the profile."""
    import matplotlib.pyplot as plt
    from collections import Counter

    placements = sorted({r["config"]["model"]["norm"] for r in runs})
    width = min(style.TEXT_WIDTH, style.COLUMN_WIDTH * len(placements))
    fig, axes = plt.subplots(1, len(placements), figsize=(width, 2.8), sharey=True,
                             squeeze=False)
    counts = {}
    for ax, norm in zip(axes[0], placements):
        schedules = {id(r): tuple(h["step"] for h in r["history"] if "raw" in h)
                     for r in runs if r["config"]["model"]["norm"] == norm}
        steps, _ = Counter(schedules.values()).most_common(1)[0]
        group = [r for r in runs if schedules.get(id(r)) == steps]
        for kind, colour in style.WEIGHT_COLORS.items():
            curves = np.array([[h[kind][metric] for h in r["history"] if "raw" in h]
                               for r in group])
            mean, sd = _mean_sd(curves)
            ax.plot(steps, mean, color=colour, marker=WEIGHT_MARKERS[kind], ms=3.5,
                    ls=style.WEIGHT_STYLES[kind], label=f"{kind} (n={len(curves)})")
            ax.fill_between(steps, mean - sd, mean + sd, color=colour, alpha=0.12)
        counts[norm] = len(group)
        left_out = len(schedules) - len(group)
        ax.set(xlabel="step")
        ax.set_title(f"{norm}\n(n = {len(group)} runs)" + (f"\n({left_out} on other "
                                                            "schedules left out)" if left_out else ""),
                     fontsize=style.MIN_FONT + 1)
        ax.tick_params(labelsize=style.MIN_FONT)
    axes[0][0].set_ylabel(metric.replace("_", " "))
    keys = [style.key(f"{kind} weights: mean over the runs", color=colour,
                      marker=WEIGHT_MARKERS[kind], ms=3.5, ls=style.WEIGHT_STYLES[kind])
            for kind, colour in style.WEIGHT_COLORS.items()]
    keys.append(style.key("band: ± sample std over the runs", lw=6, alpha=0.3,
                          color=style.MUTED))
    fig.suptitle(f"{context(runs, profile)}" + (f" (sweep {sweep})" if sweep else "")
                 + ": raw vs EMA vs BEMA weights over training",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    style.legend_below(fig, keys, ncol=2)
    return fig


def make_figures(root: Path, outdir: Path, names=("placements", "dropout", "margins",
                                                    "averaging"),
                 prefix: str = "fig_train", profile: str | None = None) -> list[Path]:
    """Draw the figures ``names`` of the sweep folder ``root`` into ``outdir`` as
    ``<prefix>_<name>.png/.pdf``; return the files. A quick sweep (``profile="quick"`` or a
    ``*-quick`` folder) is stamped as such."""
    check_figure_files(outdir, [f"{prefix}_{name}" for name in names])  # before any figure
    ensure_writable_dir(outdir)
    runs = runs_with_data(Path(root))
    rows = read_table(root)
    from resharpen.experiments.training.config import folder_profile
    quick = profile == "quick" or folder_profile(root) == "quick"
    named = "quick" if quick else profile
    builders = {"placements": lambda: fig_placements(runs, profile=named),
                "dropout": lambda: fig_dropout(rows, heading=context(runs, named) + ": "),
                "margins": lambda: fig_margins(runs, profile=named),
                "averaging": lambda: fig_averaging(runs, profile=named, sweep=Path(root).name)}
    paths = []
    for name in names:
        paths += save(builders[name](), outdir, f"{prefix}_{name}", "quick" if quick else None)
    return paths


def sweep_figures(profile: str, outdir: Path, sweep: str, names: tuple[str, ...],
                  prefix: str = "fig_train") -> list[Path]:
    """The figures ``names`` of the finished sweep ``experiments/configs/set_complement/<sweep>.toml``
    (``out/sweeps/<sweep>``, or ``<sweep>-quick`` in the quick profile, as the claims run it).
    Never trains: MissingResults with the command when the sweep is not on disk."""
    from resharpen.paper_figs.results import set_complement_sweep

    root = set_complement_sweep(sweep, profile)
    return make_figures(root, Path(outdir), names=names, prefix=prefix, profile=profile)


def sweeps_figures(profile: str, outdir: Path, sweeps: tuple[tuple[str, str], ...],
                   names: tuple[str, ...]) -> list[Path]:
    """:func:`sweep_figures` of several (sweep, prefix) pairs drawn as one figure script: every
    sweep is looked up first, so a missing one skips the script before it draws anything."""
    from resharpen.paper_figs.results import set_complement_sweep

    for sweep, _ in sweeps:
        set_complement_sweep(sweep, profile)
    return [path for sweep, prefix in sweeps
            for path in sweep_figures(profile, outdir, sweep, names, prefix=prefix)]


def report_figures(root: Path) -> list[Path]:
    """The four figures of ``resharpen report``, drawn into ``root/figs``."""
    return make_figures(Path(root), Path(root) / "figs")
