"""The attn_out margin beta g sqrt(d v / (s (v - s))) over s/v for several v (d = v - 1).

Shows claims sc.readout.attn_out and sc.readout.attn_out_minimum: the margin no longer decays
like 1/s; it is U-shaped in s/v with its minimum 2 beta g sqrt((v-1)/v) at s = v/2 (dotted)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save, style
from resharpen.theory.set_complement.formulas import readout_margins

VOCABS = (8, 16, 64, 256, 1024)


def make(profile: str, outdir):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for vocab, colour in zip(VOCABS, style.sequence_colors(len(VOCABS))):
        lengths = np.arange(1, vocab)
        margin, _ = readout_margins("attn_out", vocab, lengths, 1.0, 1.0, 1.0, vocab - 1)
        ax.plot(lengths / vocab, margin, "-o" if vocab <= 16 else "-", ms=3, color=colour,
                label=f"v = {vocab}")
        style.hline(ax, 2 * np.sqrt((vocab - 1) / vocab), color=colour, ls=":", lw=0.8)
    ax.set(yscale="log", xlabel="s / v", ylabel="non-query margin (beta = g = 1)",
           title="attn_out readout: U-shaped in s/v, minimum 2 sqrt((v-1)/v) at s = v/2")
    ax.legend()
    return save(fig, outdir, "sc_attn_out_over_sv")
