"""Margin against length at v = 64 for the readouts none, attn_out and post (tight construction).

Shows claims sc.readout.none, sc.readout.attn_out, sc.readout.post, sc.readout.post_limit and
sc.theorem.two_over_s: markers are measured on the float64 torch constructions, lines are
resharpen.theory.set_complement.formulas; the 1/s and 2/s laws (black, above the data) are drawn
through the no-norm margin at s = 1 and s = 2. What it shows: without a norm the margin decays as
lambda/s (32x from s = 2 to 63); attn_out's margin is U-shaped (down 2.9x to its minimum at
s = v/2, then up); classic post at K = 16 still falls 3.2x and follows attn_out only as K grows
(dashed: post at K = 256). Post-Norm does not stop the decay; it bounds it."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from resharpen.constructions.set_complement import tight
from resharpen.experiments.model.schemes import names
from resharpen.experiments.set_complement.evaluate import per_position_metrics
from resharpen.paper_figs import save, style
from resharpen.theory.set_complement.formulas import readout_margins
from resharpen.theory.set_complement.readouts import RESIDUAL_RULES

STEMS = ("sc_margins",)
"""The stems of the files this figure writes (read without importing it: paper_figs/__init__.py)."""
VOCAB, LAM, BETA, GAIN = 64, 16.0, 1.0, 1.0
LARGE_K = 256.0


def measured_margins(norm: str, lam: float = LAM) -> np.ndarray:
    """Mean smallest invalid-token margin per length s = 1..v-1 (query included)."""
    built = tight(VOCAB, lam=lam, beta=BETA, norm=norm, gain=GAIN)
    metrics, _ = per_position_metrics(built.model, VOCAB, VOCAB - 1, per_length=8)
    return metrics["margin_nonquery_min"].nanmean(0).numpy()


READOUTS = names(construction=True, final_norm=False, builtin=True)
"""The readouts drawn: the package's schemes with a hand construction and no final norm (none,
post, attn_out; pre's margin is post's at a rescaled K)."""


def make(profile: str, outdir):
    lengths = np.arange(1, VOCAB)
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.9))
    handles = []
    for norm in READOUTS:
        label = (f"{norm}: {RESIDUAL_RULES[norm]}" + (", lambda/s" if norm == "none" else "")
                 + (f", K = {LAM / BETA:g}" if norm == "post" else "") + " (theory)")
        colour = style.placement_color(norm)
        theory, _ = readout_margins(norm, VOCAB, lengths, LAM, BETA, GAIN, VOCAB - 1)
        # attn_out drawn wide, so the K = 256 post curve (dashed, on top of it) shows both
        handles += ax.plot(lengths[1:], theory[1:], color=colour, label=label,
                           lw=2.6 if norm == "attn_out" else 1.2)
        ax.plot(lengths[1:], measured_margins(norm)[1:], style.PLACEMENT_MARKERS[norm], color=colour, ms=3,
                mfc="none", mew=0.7)
    large, _ = readout_margins("post", VOCAB, lengths, LARGE_K * BETA, BETA, GAIN, VOCAB - 1)
    handles += ax.plot(lengths[1:], large[1:], ls=(0, (3, 2)), lw=1.2,
                       color=style.placement_color("post"),
                       label=f"post, K = {LARGE_K:g} (theory; on attn_out)")
    m1, m2 = LAM, LAM / 2
    handles += style.reference(ax, lengths, m1 / lengths, ls="--", lw=0.8,
                               label="1/s law through m_1 (on none)")
    handles += style.reference(ax, lengths[1:], m2 * 2 / lengths[1:], ls=(0, (1, 3)), lw=1.6,
                               label="2/s law: (2/s) m_2 (on none)")
    handles.append(style.key("markers: measured (float64 construction);\n"
                             "o none, triangle post, diamond attn_out",
                             marker="o", ls="none", mfc="none", ms=3))
    ax.set(xscale="log", yscale="log", xlabel="input length s", ylabel="non-query margin")
    ax.set_title(f"v = {VOCAB}, lambda = {LAM:g}, tight construction (exact: no profile)\n"
                 "none decays as 1/s; attn_out U-shaped; post falls 3x", fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    style.legend_below(ax, handles)
    return save(fig, outdir, STEMS[0])
