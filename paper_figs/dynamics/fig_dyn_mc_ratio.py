"""Theorem 4.2 by Monte Carlo: max_j |A_j(0)| / (sqrt(log n / n) + log n / d) over a grid of (n, d)
at beta = 1, Q = K = V = I, uniform tokens (max over 3 seeds). Cells outside the theorem's range
e^sqrt(d) >= n log n >= d are blank. Right: mean |P A| / |A|, near 1, which is why Peri-LN and nGPT
move O(1) in the first layer. Claim shown: dyn.thm42.initial_velocity.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.dynamics.initial_velocity import initial_velocity_grid
from resharpen.paper_figs import save, style


def make(profile: str, outdir: Path) -> list[Path]:
    ns = [64, 128, 256, 512, 1024] + pick(profile, quick=[], full=[2048, 4096])
    ds = [32, 64, 128, 256, 512] + pick(profile, quick=[], full=[1024, 2048])
    valid = [(n, d) for n in ns for d in ds if math.exp(math.sqrt(d)) >= n * math.log(n) >= d]
    rows = initial_velocity_grid(valid, progress=True)
    ratio = np.full((len(ns), len(ds)), np.nan)
    proj = np.full_like(ratio, np.nan)
    for n, d, r, p in rows:
        ratio[ns.index(n), ds.index(d)] = r
        proj[ns.index(n), ds.index(d)] = p
    fig, axes = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 3.0))
    for ax, data, title, vmax in [(axes[0], ratio, r"$\mathrm{max}_j\,\|A_j(0)\|\,/\,(\sqrt{\log n/n}+\log n/d)$", None),
                                  (axes[1], proj, r"mean $\|PA\|$ / mean $\|A\|$", 1.0)]:
        im = ax.imshow(data, origin="lower", vmin=0, vmax=vmax, aspect="auto")
        ax.grid(False)
        for i in range(len(ns)):
            for j in range(len(ds)):
                if not np.isnan(data[i, j]):
                    ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center", fontsize=style.MIN_FONT,
                            color=style.ON_DARK if data[i, j] < 0.6 * np.nanmax(data)
                            else style.REFERENCE)
        ax.set_xticks(range(len(ds)), ds)
        ax.set_yticks(range(len(ns)), ns)
        ax.set(xlabel="d", ylabel="n")
        ax.set_title(title, pad=10, fontsize=style.MIN_FONT + 1)
        ax.tick_params(labelsize=style.MIN_FONT)
        fig.colorbar(im, ax=ax)
    fig.suptitle(r"Thm 4.2 Monte Carlo, $\beta=1$, $Q=K=V=I$, " f"{profile} profile\n"
                 r"(blank: outside $e^{\sqrt{d}}\geq n\log n\geq d$)", fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    return save(fig, outdir, "fig_dyn_mc_ratio", profile)
