"""Thm 4.1 and 4.3's terminal forms in deep stacks near consensus, the data of
dyn.trained.terminal_order.init: the premise set terminal_depth (attention-only models of the
trained set's kind at arXiv 2608.09417's initialization with W_O twice as large, 48 layers, 12
seeds per task, both tasks), measured at init.

Left: 1 - cos against depth (log axis), the mean pairwise cosine of the token states, one thin
line per stack and the geometric mean per scheme (thick); a straight line is an exponential decay
(Post-LN's e^{-2t}), a curve flattening with depth a slowing one, a flat tail a plateau.
Right: for each scheme compared with Post-LN, the deceleration D = r_2 / r_1 of both stacks of
every pair inside the premise, read on the pair's common terminal window
(``trained_checks.terminal_pairs``), joined by a thin line, with D = 1 (exponential, dashed); the
tick gives how many pairs are inside. Claim shown: dyn.trained.terminal_order.init. Never
trains: the set is init only, read from the archive at full size, else measured (about a
minute).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save, style
from resharpen.paper_figs.results import premise_runs

DATA = ("resharpen verify --only dyn.trained.terminal_order.init --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.dynamics.trained_checks import TERMINAL_COSINE, terminal_pairs
    from resharpen.experiments.model.schemes import by_dynamics_name
    from resharpen.theory.dynamics.schemes import TERMINAL_FASTEST, TERMINAL_SLOWER

    schemes = [by_dynamics_name(n).name for n in (TERMINAL_FASTEST,) + TERMINAL_SLOWER]
    runs = premise_runs(profile, "terminal_depth", "dyn.trained.terminal_order.init")
    fig, axes = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 3.0),
                             gridspec_kw={"width_ratios": (1.6, 1)})
    ax = axes[0]
    for scheme in schemes:
        color = style.placement_color(scheme)
        gaps = np.asarray([1.0 - np.asarray(r["init"]["cos"]) for r in runs
                           if r["scheme"] == scheme])
        gaps = np.clip(gaps, 1e-16, None)  # float64 rounds 1 - cos near 1 to zero
        layers = np.arange(gaps.shape[1])
        for g in gaps:
            ax.plot(layers, g, color=color, lw=0.4, alpha=0.35)
        ax.plot(layers, np.exp(np.log(gaps).mean(axis=0)), color=color, lw=1.8,
                label=f"{scheme} ({len(gaps)} stacks)")
    ax.axhline(1.0 - TERMINAL_COSINE, color=style.MUTED, ls=":", lw=1)
    ax.set_yscale("log")
    ax.set(xlabel="layer j", ylabel="1 - mean pairwise cosine")
    ax.set_title(f"terminal_depth set at init (dotted: cosine {TERMINAL_COSINE:g})",
                 fontsize=style.MIN_FONT)
    ax = axes[1]
    sel = [{**r, "m": r["init"]} for r in runs]
    ticks = []
    for i, other in enumerate(schemes[1:]):
        inside = [p for p in terminal_pairs(sel, schemes[0], other).values() if p["inside"]]
        for p in inside:
            ax.plot([i - 0.12, i + 0.12], p["d"], color=style.MUTED, lw=0.4, alpha=0.6)
        for side, (scheme, dx) in enumerate(((schemes[0], -0.12), (other, 0.12))):
            ax.scatter(np.full(len(inside), i + dx), [p["d"][side] for p in inside], s=10,
                       color=style.placement_color(scheme), lw=0, zorder=3)
        ticks.append(f"{other}\n{len(inside)}/{len(terminal_pairs(sel, schemes[0], other))} "
                     "pairs")
    ax.axhline(1.0, color=style.MUTED, ls="--", lw=1, label="D = 1: exponential")
    ax.set_xticks(range(len(ticks)), ticks, fontsize=style.MIN_FONT)
    ax.set(ylabel="deceleration D = r_2 / r_1")
    ax.set_title("post (left) against each scheme, per pair\non their common window",
                 fontsize=style.MIN_FONT)
    style.finish_panels(fig, axes, {0: 2, 1: 1})
    return save(fig, outdir, "fig_dyn_terminal", profile)
