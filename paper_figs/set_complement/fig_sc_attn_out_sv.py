"""The attn_out margin beta g sqrt(d v / (s (v - s))) over s/v for several v (d = v - 1).

Shows claims sc.readout.attn_out and sc.readout.attn_out_minimum: the margin no longer decays
like 1/s; it is U-shaped in s/v with its minimum 2 beta g sqrt((v-1)/v) at s = v/2 (dotted)."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib import ticker
import numpy as np

from resharpen.paper_figs import save, style
from resharpen.theory.set_complement.formulas import readout_margins

STEMS = ("sc_attn_out_over_sv",)
"""The stems of the files this figure writes (read without importing it: paper_figs/__init__.py)."""
VOCABS = (8, 16, 64, 256, 1024)
STYLES = {8: dict(ls="-", marker="o"), 16: dict(ls="--", marker="s"), 64: dict(ls="-.", marker="^"),
          256: dict(ls=(0, (1, 1.5)), marker="D"), 1024: dict(ls=(0, (6, 2)), marker="v")}
"""Line style and marker per v: the curves for v >= 64 lie on one another (the margin depends
on s/v alone up to (v-1)/v), so they differ in dash and marker, not only in colour."""


def make(profile: str, outdir):
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.9))
    handles = []
    for vocab, colour in zip(VOCABS, style.sequence_colors(len(VOCABS))):
        lengths = np.arange(1, vocab)
        margin, _ = readout_margins("attn_out", vocab, lengths, 1.0, 1.0, 1.0, vocab - 1)
        # markers at every point for v <= 16, else at a few points spread along the curve
        every = 1 if vocab <= 16 else max(1, (vocab - 1) // 9)
        handles += ax.plot(lengths / vocab, margin, color=colour, ms=3.5, mfc="none", mew=0.8,
                           markevery=(VOCABS.index(vocab) * every // 5, every), lw=1.0,
                           label=f"v = {vocab}", **STYLES[vocab])
        style.hline(ax, 2 * np.sqrt((vocab - 1) / vocab), color=colour, ls=":", lw=0.8)
    handles.append(style.key("dotted: each v's minimum\n2 sqrt((v-1)/v) (1.87 to 2.00)",
                             ls=":", lw=0.8, color=style.MUTED))
    ax.annotate("minimum at s = v/2", xy=(0.5, 1.87), xytext=(0.62, 1.45), ha="left",
                va="center", fontsize=style.MIN_FONT, arrowprops=dict(arrowstyle="->", lw=0.6))
    ax.set(yscale="log", xlabel="s / v", ylabel="non-query margin (beta = g = 1)",
           ylim=(1.3, None), yticks=[2, 3, 5, 10, 20, 30])
    ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_title("attn_out readout, theory (no profile), d = v - 1, v = 8 to 1024:\n"
                 "U-shaped in s/v; v >= 64 coincide", fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    style.legend_below(ax, handles, ncol=2)
    return save(fig, outdir, STEMS[0])
