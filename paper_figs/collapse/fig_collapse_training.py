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


def make(profile: str, outdir: Path) -> list[Path]:
    results = runs(profile)
    fig, axes = plt.subplots(3, 1, figsize=(7, 8.5), sharex=True)
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
    axes[0].plot([x["step"] for x in first["history"]], [x["l_freq"] for x in first["history"]],
                 color=style.MUTED, lw=0.6, label="batch L_freq")
    style.hline(axes[0], first["summary"]["l_freq_stream"], ls=":", label="stream L_freq")
    style.hline(axes[0], first["summary"]["entropy_rate"], ls="-.", lw=0.8,
                label="Markov entropy rate")
    axes[0].set_ylabel("loss (nats)")
    axes[0].legend()
    axes[1].set_ylabel("t_sim, last block")
    axes[2].set_ylabel(r"$\|\partial L/\partial X_1\| / \|\partial L/\partial X_L\|$")
    axes[2].set_xlabel("step")
    cfg = first["config"]
    fig.suptitle(f"{cfg['model']['n_layers']}-layer decoders, d = {cfg['model']['d_model']}, "
                 "Zipf-Markov stream")
    fig.tight_layout()
    return save(fig, outdir, "fig_collapse_training", profile)
