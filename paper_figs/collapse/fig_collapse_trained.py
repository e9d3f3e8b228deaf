"""arXiv 2608.09417 inside real transformers: the trained set of
resharpen.experiments.dynamics.trained (attention only, RMSNorm, every scheme, tomita3 and
dyck1).

Left: t_sim against depth at the paper's initialization, the data of
dyn.trained.collapse_recursion.init (premise set paper_init_many_seeds: 48 layers, 24 seeds per
task), for the Post-LN and Pre-LN models (means over the models, thick) over the recursion
t <- t + Delta_attn(s, t) run from each model's own s and initial t (means, thin with dots).
Right: the backward gain of every Post-LN norm (post, Mix-LN's Post-LN layers) against the mean
pairwise cosine of its layer's input, in the trained set at init (hollow) and trained to the fit
(filled), at the paper's initialization (premise set paper_init, 48 layers: crosses), which
dyn.trained.collapse_backward_gain.init reads, and that set trained (every run to its end, at
the fit or not: triangles), which dyn.trained.collapse_backward_gain.trained reads; the dotted
lines mark gain 1 and the
high-similarity threshold 0.9 of the claim. Never trains: without the trained set on disk the
figure is skipped with the command that makes it (the premise sets are read from out/ or, at
full size, the archive, never measured or trained here).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save, style

DATA = (
    "resharpen dynamics trained --profile {profile}",
    "resharpen verify --only dyn.trained.collapse_recursion.init --profile {profile}",
    "resharpen verify --only dyn.trained.collapse_backward_gain.init --profile {profile}",
    "resharpen verify --only dyn.trained.collapse_backward_gain.trained --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

DASHES = ("-", "--", "-.", ":")


def runs(profile: str) -> list[dict]:
    """The cached trained set (:func:`resharpen.paper_figs.results.trained_set`)."""
    from resharpen.paper_figs.results import trained_set

    return trained_set(profile)


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.dynamics.trained_checks import HIGH_SIMILARITY, recursion_gaps
    from resharpen.paper_figs.results import premise_runs

    data = runs(profile)
    rows = recursion_gaps(premise_runs(profile, "paper_init_many_seeds",
                                       "dyn.trained.collapse_recursion.init"))
    fig, axes = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 2.9))
    ax = axes[0]
    keys = sorted({(r["task"], r["depth"]) for r in rows})
    for row in rows:
        color = style.placement_color(row["scheme"])
        start = 1 if row["scheme"] == "post" else 0
        j = np.arange(start, start + len(row["measured"]))
        ls = DASHES[keys.index((row["task"], row["depth"])) % len(DASHES)]
        ax.plot(j, row["measured"], color=color, ls=ls, lw=1.5,
                label=f"{row['scheme']} {row['task']} L={row['depth']} ({row['models']} models, "
                      f"largest mean gap {row['gap']:.3f})")
        ax.plot(j, row["predicted"], color=color, ls=ls, lw=0.8, alpha=0.5, marker=".", ms=3)
    ax.set(xlabel="layer j", ylabel=r"$t_{sim}$ at init", ylim=(0, 1))
    ax.set_title("paper's init: measured (thick) vs recursion (thin, dots)",
                 fontsize=style.MIN_FONT)
    ax = axes[1]
    for scheme in ("post", "mixln"):
        color = style.placement_color(scheme)
        for when, face in (("init", "none"), ("trained", color)):
            points = [(r[when]["cos"][j], g["gain"]) for r in data if r["scheme"] == scheme
                      and r[when] is not None and (when == "init" or r["fit_reached"])
                      for j, layer in enumerate(r[when]["gains"] or []) for g in layer
                      if g["post"]]
            if points:
                c, g = np.asarray(points).T
                ax.scatter(c, g, s=10, facecolors=face, edgecolors=color, lw=0.7,
                           label=f"{scheme} {when} ({len(points)} norms)")
    paper = [(r["init"]["cos"][j], g["gain"]) for r in premise_runs(
                 profile, "paper_init", "dyn.trained.collapse_backward_gain.init")
             if r["scheme"] == "post" for j, layer in enumerate(r["init"]["gains"] or [])
             for g in layer if g["post"]]
    if paper:
        c, g = np.asarray(paper).T
        ax.scatter(c, g, s=8, marker="x", color=style.placement_color("post"), lw=0.5,
                   alpha=0.6, label=f"post, paper's init, L=48 ({len(paper)} norms)")
    for scheme in ("post", "mixln"):
        trained = [(r["trained"]["cos"][j], g["gain"]) for r in premise_runs(
                       profile, "paper_init", "dyn.trained.collapse_backward_gain.trained",
                       trained=True)
                   if r["scheme"] == scheme and r["trained"] is not None
                   for j, layer in enumerate(r["trained"]["gains"] or []) for g in layer
                   if g["post"]]
        if trained:
            c, g = np.asarray(trained).T
            ax.scatter(c, g, s=10, marker="^", color=style.placement_color(scheme), lw=0,
                       alpha=0.7, label=f"{scheme}, paper's init, trained ({len(trained)} norms)")
    ax.axhline(1.0, color=style.MUTED, ls=":", lw=1)
    ax.set_yscale("log")
    ax.axvline(HIGH_SIMILARITY, color=style.MUTED, ls=":", lw=1)
    ax.set(xlabel="input mean pairwise cosine of the layer", ylabel="Post-LN norm backward gain")
    ax.set_title("Post-LN norms: init (hollow), trained (filled),\npaper's init (x), "
                 "paper's init trained (triangles)",
                 fontsize=style.MIN_FONT)
    style.finish_panels(fig, axes, {0: 1, 1: 1})
    return save(fig, outdir, "fig_collapse_trained", profile)
