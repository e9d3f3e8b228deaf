"""Invalid mass and KL(p*||p) against length at v = 64, with the training-length marker.

Shows claims sc.readout.none, sc.readout.attn_out, sc.readout.post and sc.metrics.closed_forms:
measured on the float64 constructions (markers) against the closed forms (lines). A model that is
as sharp as the others at L_train = v/4 (gains matched there) degrades faster past it
without a norm. The y-axis starts at 1e-4: the short lengths, where every model is near exact
(down to 1e-31), are not the region of interest."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from resharpen.constructions.set_complement import tight
from resharpen.experiments.model.schemes import names
from resharpen.experiments.set_complement.evaluate import per_position_metrics
from resharpen.experiments.set_complement.report import theory_metrics
from resharpen.paper_figs import save, style
from resharpen.theory.set_complement.formulas import readout_margins

STEMS = ("sc_invalid_mass",)
"""The stems of the files this figure writes (read without importing it: paper_figs/__init__.py)."""
VOCAB, LAM, BETA = 64, 64.0, 1.0
TRAIN_LENGTH = VOCAB // 4
FLOOR = 1e-4
"""The readouts drawn: the package's schemes with a hand construction and no final norm
(none, post, attn_out; pre's margin is post's at a rescaled K)."""


def matched_gain(norm: str) -> float:
    """The gain g at which the readout's non-query margin at s = L_train equals lambda/L_train
    (the no-norm margin there): all three models are equally sharp at the training length.
    Every normalized margin is linear in g (derived), so one evaluation at g = 1 suffices."""
    if norm == "none":
        return 1.0
    at_one, _ = readout_margins(norm, VOCAB, np.array([TRAIN_LENGTH]), LAM, BETA, 1.0, VOCAB - 1)
    return float(LAM / TRAIN_LENGTH / at_one[0])


def make(profile: str, outdir):
    lengths = np.arange(1, VOCAB)
    fig, axes = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 2.8))
    for norm in names(construction=True, final_norm=False, builtin=True):
        colour = style.placement_color(norm)
        gain = matched_gain(norm)
        metrics, _ = per_position_metrics(tight(VOCAB, LAM, BETA, norm, gain=gain).model, VOCAB,
                                          VOCAB - 1, per_length=8)
        nq, q = readout_margins(norm, VOCAB, lengths, LAM, BETA, gain, VOCAB - 1)
        theory = theory_metrics(VOCAB, lengths, nq, q)
        for ax, key in zip(axes, ("invalid_mass", "kl")):
            ax.plot(lengths, theory[key], color=colour, label=f"{norm} (g = {gain:.3g})")
            ax.plot(lengths, metrics[key].mean(0).numpy(), style.PLACEMENT_MARKERS[norm],
                    color=colour, ms=3, mfc="none", mew=0.7)
    for ax, label, top in zip(axes, ("invalid mass = TV(p, p*)", "KL(p* || p)"), (1.5, 5.0)):
        ax.set(yscale="log", xlabel="input length s", ylabel=label)
        ax.set_ylim(FLOOR, top)
        style.vline(ax, TRAIN_LENGTH)
        ax.text(TRAIN_LENGTH * 1.03, FLOOR * 2, "L_train = v/4", fontsize=style.MIN_FONT)
        ax.tick_params(labelsize=style.MIN_FONT)
    keys = [line for line in axes[0].get_lines() if not line.get_label().startswith("_")]
    keys.append(style.key("markers: measured on the float64 torch construction\n"
                          "(o none, triangle post, diamond attn_out); lines: theory",
                          marker="o", ls="none", ms=3, mfc="none"))
    fig.suptitle(f"Tight construction, v = {VOCAB}, lambda = {LAM:g} (exact: no profile), gains "
                 "matched at L_train:\npast it, no norm degrades fastest",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    style.legend_below(fig, keys, ncol=2, title="readout", title_fontsize=style.MIN_FONT)
    return save(fig, outdir, STEMS[0])
