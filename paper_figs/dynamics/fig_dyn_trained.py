"""The dynamics papers inside trained transformers: attention-only models of every
scheme, at initialization and trained to a fit on tomita3 and dyck1.

Left and middle: mean pairwise cosine similarity of the token states against depth per scheme
(seed means), at init (left) and trained (middle, runs that reached the fit), for the deepest
model of the profile and the task dyck1; dashed grey, the theory's curve at init: arXiv
2608.09417's recursion t <- t + Delta_attn(s, t) with the Post-LN models' own s and initial t
(drawn in t_sim, its own variable, beside the measured Post-LN t_sim, dotted); thin dotted, per
scheme, arXiv 2510.22026's own discrete dynamics at the same n, d and depth (its section-5
random-weight stacks: one head, beta = sqrt(d), no MLP, tokens uniform on the sphere;
``experiments.dynamics.random_stacks.run_stacks``, seed 0), where Post-LN's and nGPT's
similarity rise fastest, against the models, where Post-LN's stays flat at init. Right: the
first-layer angular displacement per scheme Thm 4.2 orders, on its premise set unit_tokens
(tokens of radius R, the radius the norm projects to), at init (hollow) and trained (filled,
runs at the fit), against Thm 4.2's order sqrt(log n / n) + log n / d (constant 1, dashed), on
log axes. Claims shown: dyn.trained.first_layer_order.* (right panel, their own runs). The left
and middle panels are the package's own initialization and training, outside the premises of
the other init claims: dyn.trained.terminal_order.init is shown by fig_dyn_terminal and
dyn.trained.collapse_recursion.init by fig_collapse_trained. Never trains: without the sets on
disk the figure is skipped with the command that makes them.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import MissingResults, save, style

DATA = (
    "resharpen dynamics trained --profile {profile}",
    "resharpen dynamics trained --profile {profile} --premise-set unit_tokens",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

TASK = "dyck1"


def runs(profile: str) -> list[dict]:
    """The cached trained set (:func:`resharpen.paper_figs.results.trained_set`)."""
    from resharpen.paper_figs.results import trained_set

    return trained_set(profile)


def unit_token_runs(profile: str) -> list[dict]:
    """The premise set unit_tokens trained, each run with its init and trained measurements
    (MissingResults when not on disk)."""
    from resharpen.experiments.dynamics.premise_sets import premise_set

    try:
        return premise_set(profile, "unit_tokens", cached_only=True, trained=True)
    except LookupError as error:
        raise MissingResults(str(error), f"resharpen dynamics trained --profile {profile} "
                                         "--premise-set unit_tokens") from None


def _color(scheme: str) -> str:
    from resharpen.experiments.model.schemes import get

    # a scheme the dynamics paper names in its colour; none (no scheme there) as the reference
    return get(scheme).color if get(scheme).dynamics_name else style.REFERENCE


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.dynamics.trained import thm42_bound
    from resharpen.experiments.dynamics.trained_plan import SCHEMES, sizes
    from resharpen.experiments.dynamics.trained_checks import recursion_gaps

    data = runs(profile)
    unit = unit_token_runs(profile)
    unit_schemes = [s for s in SCHEMES if any(r["scheme"] == s for r in unit)]
    p = sizes(profile)
    depth = max(p.depths)
    fig, axes = plt.subplots(1, 3, figsize=(style.TEXT_WIDTH, 2.9))
    for ax, when in zip(axes[:2], ("init", "trained")):
        for scheme in SCHEMES:
            ms = [r[when] for r in data if (r["scheme"], r["task"], r["depth"]) ==
                  (scheme, TASK, depth) and (when == "init" or r["fit_reached"])]
            if not ms:
                continue
            cos = np.mean([m["cos"] for m in ms], axis=0)
            ax.plot(np.arange(len(cos)), cos, color=_color(scheme), lw=1.5,
                    label=f"{scheme} ({len(ms)} runs)")
        ax.set(xlabel="layer j (x_j enters block j)", ylabel="mean pairwise cosine",
               ylim=(-0.05, 1.05))
        ax.set_title(f"{TASK}, L={depth}, d={p.d_model}: {when}", fontsize=style.MIN_FONT)
    # the paper's own discrete dynamics (2510.22026 sec. 5: random-weight stacks, one head,
    # beta = sqrt(d), no MLP) with this set's n, d and depth, one thin line per scheme
    from resharpen.experiments.dynamics.random_stacks import run_stacks
    from resharpen.experiments.model.schemes import get

    paper = {norm: get(norm).dynamics_name for norm in SCHEMES if get(norm).dynamics_name}
    stacks = run_stacks(list(paper.values()), n=p.train_len, d=p.d_model, layers=depth, seed=0)
    for norm, key in paper.items():
        axes[0].plot(np.arange(depth + 1), stacks[key].cosine, color=_color(norm), lw=0.6,
                     ls=(0, (1, 1)), alpha=0.9)
    axes[0].plot([], [], color=style.MUTED, lw=0.6, ls=(0, (1, 1)),
                 label="2510.22026 random stack (thin, per scheme)")
    for row in recursion_gaps(data):
        if (row["scheme"], row["task"], row["depth"]) != ("post", TASK, depth):
            continue
        j = np.arange(1, 1 + len(row["predicted"]))
        axes[0].plot(j, row["predicted"], color=style.MUTED, ls="--", lw=1.2,
                     label="recursion (post, t_sim)")
        axes[0].plot(j, row["measured"], color=_color("post"), ls=":", lw=1.2,
                     label="post, measured t_sim")
    ax = axes[2]
    for i, scheme in enumerate(unit_schemes):
        for when, face in (("init", "none"), ("trained", _color(scheme))):
            vals = [r[when]["disp"][0] for r in unit if r["scheme"] == scheme
                    and r[when] is not None and (when == "init" or r["fit_reached"])]
            ax.scatter(np.full(len(vals), i) + (0.15 if when == "trained" else -0.15), vals,
                       s=12, facecolors=face, edgecolors=_color(scheme), lw=0.8)
    ax.axhline(thm42_bound(p.train_len, p.d_model), color=style.MUTED, ls="--", lw=1,
               label=f"Thm 4.2 order, n={p.train_len}, d={p.d_model}")
    ax.set_yscale("log")
    ax.set_ylim(top=4.0)
    ax.set_xticks(range(len(unit_schemes)), unit_schemes, rotation=45, fontsize=style.MIN_FONT)
    ax.set(ylabel="first-layer displacement (rad)")
    ax.set_title("first layer, tokens of radius R:\ninit (hollow), trained (filled)",
                 fontsize=style.MIN_FONT)
    style.finish_panels(fig, axes, {0: 1, 1: 1, 2: 1})
    return save(fig, outdir, "fig_dyn_trained", profile)
