"""Random-weight attention stacks (d = 512, one head, beta = sqrt d, fresh random Q, K, V per layer).

Left: mean pairwise cosine similarity per layer for the six schemes' discrete updates. Right:
Pre-LN mean token norm against layer on log-log axes, fresh random weights (slope ~ 1/2) and
tied Q = K = V = I (slope ~ 1, the theory's r ~ t). Claims shown: dyn.stack.qualitative,
dyn.stack.preln_norm.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.dynamics.random_stacks import norm_growth_exponent, run_stacks
from resharpen.paper_figs import save, style
from resharpen.theory.dynamics import speed as nd


def make(profile: str, outdir: Path) -> list[Path]:
    n, layers = pick(profile, quick=(32, 64), full=(128, 256))
    runs = run_stacks(nd.SCHEMES, n=n, d=512, layers=layers, seed=0, progress=True)
    tied = run_stacks("preln", n=n, d=512, layers=layers, seed=0, tied=True)["preln"]
    fig, axes = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 2.9))
    ell = np.arange(layers + 1)
    styles = {"postln": dict(lw=3.5, alpha=0.6), "mixln": dict(ls="--", lw=1.5)}
    for scheme, run in runs.items():
        axes[0].plot(ell, run.cosine, color=style.SCHEME_COLORS[scheme],
                     label=nd.SCHEME_LABELS[scheme],
                     **styles.get(scheme, dict(lw=1.5)))
    axes[0].set(xlabel="layer", ylabel="mean pairwise cosine similarity")
    axes[0].set_title(rf"random stacks: $d=512$, $n={n}$, $\beta=\sqrt{{d}}$, fresh QKV per layer"
                      + f"\n(Mix-LN = Post-LN for the first {layers // 4} layers; {profile} profile)",
                      fontsize=style.MIN_FONT)
    for run, label, color in [(runs["preln"], "fresh random weights", style.SCHEME_COLORS["preln"]),
                              (tied, "tied Q=K=V=I", style.MUTED)]:
        slope = norm_growth_exponent(run.norm, layers // 4)
        axes[1].loglog(ell[1:], run.norm[1:], color=color, label=f"{label}: slope {slope:.2f}")
    style.reference(axes[1], ell[1:], np.sqrt(ell[1:]), ls=":", label=r"$\sqrt{\ell}$")
    style.reference(axes[1], ell[1:], ell[1:], ls="--", alpha=0.5, label=r"$\ell$")
    axes[1].set(xscale="log", yscale="log")
    axes[1].set(xlabel="layer", ylabel="Pre-LN mean token norm")
    axes[1].set_title("Pre-LN norm growth", fontsize=style.MIN_FONT)
    for ax in axes:
        ax.tick_params(labelsize=style.MIN_FONT)
    fig.tight_layout()
    style.legend_below(axes[0], ncol=2)
    style.legend_below(axes[1])
    return save(fig, outdir, "fig_dyn_random_stacks", profile)
