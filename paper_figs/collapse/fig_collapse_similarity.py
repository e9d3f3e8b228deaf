"""Figure 1 of arXiv 2608.09417: per-layer one-step change of token similarity at initialization.

Random-weight causal stacks (resharpen.experiments.collapse.stack), Post-Norm and Pre-Norm with SwiGLU,
sublayer init variances x1, x2, x4. Solid: measured E t_sim(Y) - t_sim(X) per layer; dashed: the
theory Delta_attn(s_l, t_l) and Delta_FFN(xi_l, t_l) at the measured input similarity t_l.
Shows claims collapse.attn_step_one_layer and collapse.swiglu_damping_in_stack (the steps along
the stack; the trajectory the
stack claims decide on is fig_collapse_trajectory).
Quick profile: n = d = 128, 16 layers, 2 samples; full: n = d = 256, 48 layers, 4 samples.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from resharpen.experiments.common.profiles import pick
from resharpen.paper_figs import save, style

MULTIPLIERS = (1.0, 2.0, 4.0)
COLORS = dict(zip(MULTIPLIERS, style.sequence_colors(len(MULTIPLIERS))))


def data(profile: str) -> dict:
    from resharpen.experiments.collapse.stack import StackConfig, simulate

    size = pick(profile, quick=dict(n=128, d=128, depth=16, samples=2),
                full=dict(n=256, d=256, depth=48, samples=4))
    return {(norm, k): simulate(StackConfig(norm=norm, mlp="swiglu", multiplier=k, seed=int(k),
                                            **size), progress=pick(profile, quick=False, full=True))
            for norm in ("post", "pre") for k in MULTIPLIERS}


def make(profile: str, outdir: Path) -> list[Path]:
    results = data(profile)
    fig, axes = plt.subplots(2, 2, figsize=(style.TEXT_WIDTH, 4.8), sharex=True)
    for row, norm in enumerate(("post", "pre")):
        for col, (key, title) in enumerate((("attn", "attention"), ("mlp", "SwiGLU"))):
            ax = axes[row, col]
            for k in MULTIPLIERS:
                r = results[(norm, k)]
                layers = range(1, len(r[f"delta_{key}"]) + 1)
                ax.plot(layers, r[f"delta_{key}"], color=COLORS[k], label=f"x{k:g} measured")
                ax.plot(layers, r[f"theory_{key}"], color=COLORS[k], ls="--", lw=1.2,
                        label=f"x{k:g} theory")
            style.hline(ax, 0, color=style.MUTED, label="zero")
            ax.set_title(f"{'Post' if norm == 'post' else 'Pre'}-Norm, {title} step",
                         fontsize=style.MIN_FONT + 1)
            ax.tick_params(labelsize=style.MIN_FONT)
            ax.set_ylabel(r"$\Delta t_{sim}$ per layer")
            if row == 1:
                ax.set_xlabel("layer")
    cfg = results[("post", 1.0)]["config"]
    fig.suptitle(f"Similarity step at init (n = d = {cfg['n']}, {cfg['samples']} sample(s), "
                 f"{profile} profile); solid: measured, dashed: theory at the measured t",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    style.legend_below(fig, [line for line in axes[0, 0].get_lines()
                             if not line.get_label().startswith("_")], ncol=4)
    return save(fig, outdir, "fig_collapse_similarity", profile)
