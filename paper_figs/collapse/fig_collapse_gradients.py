"""Gradient contraction across layers (arXiv 2608.09417, Theorem 3.6, Figs 3-5).

Left: an exactly collapsed random-weight Post-Norm stack (n = d = 64, 24 layers, x4, attention
only): ||dL/dX_k|| per sublayer from autograd against the bound prod_{j >= k} c_j with
c_j = a_j sqrt(d)/|y_j|, and the Pre-Norm stack with the same weights' law. Right: per-layer
residual gradient norms at the end of training (relative to the last layer) for the runs of
fig_collapse_training: the collapsed Post-Norm run against the stable ones; third panel, the
per-sublayer factors c_k of Theorem 3.6 in the trained Post-Norm runs (median over the last 10%
of steps; c_k < 1 contracts). The trained panels need the sweep of fig_collapse_training on
disk (never trained here: skipped with the command otherwise). Shows claims
collapse.contraction_bound and collapse.training_collapse.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save, style

DATA = ("resharpen collapse train --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.collapse.backward import gradient_flow
    from resharpen.paper_figs.collapse.fig_collapse_training import line_style, run_label, runs

    trained = runs(profile)  # first: a missing sweep skips the figure before any work
    fig, (left, right, third) = plt.subplots(1, 3, figsize=(style.TEXT_WIDTH, 2.6))
    for norm in ("post", "pre"):
        color = style.placement_color(norm)
        r = gradient_flow(norm, n=64, d=64, depth=24, multiplier=4.0, mlp=None)
        k = np.arange(1, len(r["grad_x"]) + 1)
        left.semilogy(k, r["grad_x"] / r["grad_out"], color=color, marker=".",
                      label=f"{norm}-norm autograd")
        if norm == "post":
            bound = np.cumprod(r["factor"][::-1])[::-1]
            left.semilogy(k, bound, color=color, ls="--", label="post: prod of c_k (Thm 3.6)")
    left.set_xlabel("sublayer k")
    left.set_ylabel(r"$\|\partial L/\partial X_k\| / \|\partial L/\partial X_{out}\|$")
    left.set_title("exactly collapsed random stack (x4),\nn = d = 64, 24 layers",
                   fontsize=style.MIN_FONT)
    for res in trained:
        s = res["summary"]
        tail = res["history"][-max(1, len(res["history"]) // 10):]
        g = np.mean([np.asarray(x["resid_grad"]) / max(x["resid_grad"][-1], 1e-300)
                     for x in tail], axis=0)
        kw = line_style(trained, res)
        right.semilogy(np.arange(1, len(g) + 1), np.maximum(g, 1e-16), marker=".",
                       label=run_label(s), **kw)
        tail_c = [x["contraction"] for x in tail if x.get("contraction")]
        if tail_c:
            c = np.nanmedian(np.asarray(tail_c, dtype=float), axis=0)
            third.semilogy(np.arange(1, len(c) + 1), c, marker=".", label=run_label(s), **kw)
    style.hline(third, 1.0, lw=0.8, label="c_k = 1 (below: contracts)")
    third.set_xlabel("Post-Norm sublayer k\n(attention, SwiGLU alternating)")
    third.set_ylabel(r"$c_k = a_k\,|g|_{max}\sqrt{d}/\min_i|y_i|$")
    third.set_title("Theorem 3.6 factors, trained post-norm\n(median, last 10% of steps)",
                    fontsize=style.MIN_FONT)
    right.set_xlabel("layer l")
    right.set_ylabel(r"$\|\partial L/\partial X_l\| / \|\partial L/\partial X_L\|$")
    right.set_title("trained decoders, end of training\n(mean, last 10%; floored at 1e-16)",
                    fontsize=style.MIN_FONT)
    cfg = trained[0]["config"]
    fig.suptitle(f"Gradient contraction across layers; trained: {cfg['model']['n_layers']}-layer "
                 f"decoders, d = {cfg['model']['d_model']}, v = {cfg['task']['vocab']}, "
                 f"{profile} profile", fontsize=style.MIN_FONT + 1)
    for ax in (left, right, third):
        ax.tick_params(labelsize=style.MIN_FONT)
        ax.xaxis.label.set_size(style.MIN_FONT)
        ax.yaxis.label.set_size(style.MIN_FONT)
    fig.tight_layout(w_pad=0.5)
    for ax in (left, right, third):
        style.legend_below(ax)
    return save(fig, outdir, "fig_collapse_gradients", profile)
