"""Figures 3-6 of arXiv 2608.09417 at CPU size: a Post-Norm collapse in training.

Loads the learning-rate sweep of resharpen.experiments.collapse.train from out/collapse_train:
top, training loss against L_freq (the stream's unigram entropy, dotted; the batch's own L_freq,
thin grey) for Post-Norm at each rate and Pre-Norm at the highest; middle, t_sim of the last
block's output; bottom, ||dL/dX_1|| / ||dL/dX_L|| on the residual stream (early-layer gradients
collapsing by orders of magnitude). Colour = placement, line style = learning rate; the detected
collapse step is marked. Shows claim collapse.training_collapse. Never trains: without the sweep
on disk the figure is skipped with the command (`resharpen collapse train --profile quick`, a
minute or two on 2 cores).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from resharpen.paper_figs import save, style

DATA = ("resharpen collapse train --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

RATE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))  # one per rate of the full sweep (5)


def runs(profile: str) -> list[dict]:
    """The finished runs of the sweep (MissingResults when any is not on disk)."""
    from resharpen.paper_figs.results import collapse_runs

    return collapse_runs(profile)


def line_style(results: list[dict], res: dict) -> dict:
    """Colour by placement, line style by the run's rank among its placement's rates."""
    s = res["summary"]
    rates = sorted({r["summary"]["lr"] for r in results if r["summary"]["norm"] == s["norm"]})
    return dict(color=style.placement_color(s["norm"]),
                ls=RATE_STYLES[rates.index(s["lr"]) % len(RATE_STYLES)])


def run_label(s: dict) -> str:
    return f"{s['norm']}-norm lr={s['lr']:g}" + (" (collapsed)" if s["collapsed"] else "")


def legend_keys(results: list[dict], references: list) -> list:
    """One legend for the three panels, under them: colour = placement, line style = learning
    rate (with the placements that collapsed at it), the collapse-step marks, and the reference
    lines of the loss panel (``references``, the drawn lines themselves)."""
    keys = [style.key(f"{norm}-norm", color=style.placement_color(norm), lw=2)
            for norm in dict.fromkeys(r["summary"]["norm"] for r in results)]
    rates = sorted({r["summary"]["lr"] for r in results})
    for rate in rates:
        collapsed = [r["summary"]["norm"] for r in results
                     if r["summary"]["lr"] == rate and r["summary"]["collapsed"]]
        first = next(r for r in results if r["summary"]["lr"] == rate)
        keys.append(style.key(f"lr = {rate:g}" + (f" ({', '.join(collapsed)} collapsed)"
                                                  if collapsed else ""),
                              ls=line_style(results, first)["ls"]))
    keys.append(style.key("collapse step detected (vertical, in the run's colour)", ls=":",
                          lw=0.8, color=style.MUTED))
    return keys + references


def make(profile: str, outdir: Path) -> list[Path]:
    results = runs(profile)
    fig, axes = plt.subplots(3, 1, figsize=(style.TEXT_WIDTH, 6.6), sharex=True)
    for res in results:
        m, s = res["history"], res["summary"]
        steps = [x["step"] for x in m]
        kw = line_style(results, res)
        axes[0].plot(steps, [x["loss"] for x in m], label=run_label(s), **kw)
        axes[1].plot(steps, [x["t_sim"] for x in m], **kw)
        ratio = [max(x["resid_grad"][0] / max(x["resid_grad"][-1], 1e-300), 1e-12) for x in m]
        axes[2].semilogy(steps, ratio, **kw)
        if s["collapsed"]:
            for ax in axes:
                style.vline(ax, s["collapse_step"], color=kw["color"], ls=":")
    first = results[0]
    references = axes[0].plot([x["step"] for x in first["history"]],
                              [x["l_freq"] for x in first["history"]], color=style.MUTED, lw=0.6,
                              label="batch L_freq (entropy of a batch's labels)")
    references.append(style.hline(axes[0], first["summary"]["l_freq_stream"], ls=":",
                                  label="stream L_freq (unigram entropy: a collapsed model's loss)"))
    references.append(style.hline(axes[0], first["summary"]["entropy_rate"], ls="-.", lw=0.8,
                                  label="Markov entropy rate (the best loss)"))
    axes[0].set_ylabel("loss (nats)")
    axes[0].set_title("training loss", fontsize=style.MIN_FONT + 1)
    axes[1].set_ylabel("t_sim, last block")
    axes[1].set_title("t_sim of the last block's output (1: every position alike)",
                      fontsize=style.MIN_FONT + 1)
    axes[2].set_ylabel(r"$\|\partial L/\partial X_1\| / \|\partial L/\partial X_L\|$")
    axes[2].set_title("first- over last-layer gradient norm on the residual stream "
                      "(floored at 1e-12)", fontsize=style.MIN_FONT + 1)
    axes[2].set_xlabel("step")
    for ax in axes:
        ax.tick_params(labelsize=style.MIN_FONT)
    cfg = first["config"]
    fig.suptitle(f"{cfg['model']['n_layers']}-layer decoders, d = {cfg['model']['d_model']}, "
                 f"v = {cfg['task']['vocab']}, Zipf-Markov stream, {profile} profile",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout(h_pad=0.8)
    style.legend_below(fig, legend_keys(results, references), ncol=2)
    return save(fig, outdir, "fig_collapse_training", profile)
