"""Figure 2 of arXiv 2608.09417: the de-averaging intervention P -> P - alpha C_n.

Curves: Delta_de(alpha) = (1-alpha)^2 s f1 / (1 + (1-alpha)^2 s f2) (Corollary 3.3) at n = 256
for several t and s; points: Monte Carlo of one random Post-Norm attention layer at n = d = 256
(mean +- 2 s.e. over independent draws of weights and input). Shows claim collapse.deaveraging_mc.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.paper_figs import save, style


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.collapse.stack import deaveraging_step
    from resharpen.theory.collapse.attention import delta_deaveraged

    alphas = np.linspace(0, 1, 101)
    points = np.linspace(0, 1, 6)
    samples = pick(profile, quick=8, full=64)
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    for k, color in zip((1.0, 2.0), style.sequence_colors(2)):
        s = k * k / 9
        for t, ls in ((0.1, ":"), (0.3, "-"), (0.6, "--")):
            ax.plot(alphas, delta_deaveraged(alphas, s, t, 256), color=color, ls=ls,
                    label=f"theory s={s:.2g}, t={t}")
        r = deaveraging_step(points, n=256, d=256, t0=0.3, multiplier=k, samples=samples, seed=1)
        ax.errorbar(points, r["measured"], yerr=2 * r["stderr"], fmt="o", color=color, ms=4,
                    capsize=2, label=f"MC s={s:.2g}, t={r['t_in']:.2f}")
    style.hline(ax, 0, color=style.MUTED, label="zero")
    ax.set_xlabel(r"de-averaging strength $\alpha$")
    ax.set_ylabel(r"$\Delta t_{sim}$ of one attention layer")
    ax.set_title(f"De-averaging removes the similarity step\n(n = d = 256, {profile} profile: "
                 f"{samples} samples; error bars: 2 standard errors)", fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    fig.tight_layout()
    style.legend_below(ax, ncol=2)
    return save(fig, outdir, "fig_collapse_deaveraging", profile)
