"""Margin against length at v = 64 for the readouts none, attn_out and post (tight construction).

Shows claims sc.readout.none, sc.readout.attn_out, sc.readout.post and sc.theorem.two_over_s:
markers are measured on the float64 torch constructions, lines are resharpen.theory.set_complement.formulas; the
dashed 1/s and 2/s laws are drawn through the no-norm margin at s = 1 and s = 2."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from resharpen.constructions.set_complement import tight
from resharpen.experiments.set_complement.evaluate import per_position_metrics
from resharpen.paper_figs import save
from resharpen.theory.set_complement.formulas import readout_margins

VOCAB, LAM, BETA, GAIN = 64, 16.0, 1.0, 1.0


def measured_margins(norm: str, lam: float = LAM) -> np.ndarray:
    """Mean smallest invalid-token margin per length s = 1..v-1 (query included)."""
    built = tight(VOCAB, lam=lam, beta=BETA, norm=norm, gain=GAIN)
    metrics, _ = per_position_metrics(built.model, VOCAB, VOCAB - 1, per_length=8)
    return metrics["margin_nonquery_min"].nanmean(0).numpy()


def make(profile: str, outdir):
    lengths = np.arange(1, VOCAB)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = {"none": "C0", "attn_out": "C1", "post": "C2"}
    for norm, colour in styles.items():
        theory, _ = readout_margins(norm, VOCAB, lengths, LAM, BETA, GAIN, VOCAB - 1)
        label = {"none": "none: lambda/s", "attn_out": "attn_out: x + N(o)",
                 "post": f"post: N(x + o), K = {LAM / BETA:g}"}[norm]
        ax.plot(lengths[1:], theory[1:], color=colour, lw=1.5, label=label)
        ax.plot(lengths[1:], measured_margins(norm)[1:], "o", color=colour, ms=3, mfc="none")
    m1, m2 = LAM, LAM / 2
    ax.plot(lengths, m1 / lengths, "k--", lw=0.8, label="1/s law")
    ax.plot(lengths[1:], m2 * 2 / lengths[1:], "k:", lw=1.2, label="2/s law: (2/s) m_2")
    ax.set(xscale="log", yscale="log", xlabel="input length s", ylabel="non-query margin",
           title=f"Attention dispersion and resharpening (v = {VOCAB}, lambda = {LAM:g}, beta = g = 1)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, outdir, "sc_margins")
