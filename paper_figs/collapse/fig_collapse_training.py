"""Figures 3-6 of arXiv 2608.09417 at CPU size: a Post-Norm collapse in training.

Runs (or loads from out/collapse_train) the learning-rate sweep of resharpen.experiments.collapse.train:
top, training loss against L_freq (the stream's unigram entropy, dotted; the batch's own L_freq,
thin grey) for Post-Norm at each rate and Pre-Norm at the highest; middle, t_sim of the last
block's output; bottom, ||dL/dX_1|| / ||dL/dX_L|| on the residual stream (early-layer gradients
collapsing by orders of magnitude). The detected collapse step is marked. Shows claim
collapse.training_collapse. The first quick run trains 4 small models (about a minute or two on
2 cores); later runs reuse the saved results.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.paper_figs import save
def runs(profile: str) -> list[dict]:
    from resharpen.experiments.collapse.train import OUT, run, sweep_configs

    return [run(config, OUT) for config in sweep_configs(profile)]


def make(profile: str, outdir: Path) -> list[Path]:
    results = runs(profile)
    fig, axes = plt.subplots(3, 1, figsize=(7, 8.5), sharex=True)
    colors = plt.cm.viridis(np.linspace(0, 0.85, len(results)))
    for color, res in zip(colors, results):
        m, s = res["history"], res["summary"]
        steps = [x["step"] for x in m]
        label = f"{s['norm']}-norm lr={s['lr']:g}" + (" (collapsed)" if s["collapsed"] else "")
        ls = "-" if s["norm"] == "post" else "--"
        axes[0].plot(steps, [x["loss"] for x in m], color=color, ls=ls, label=label)
        axes[1].plot(steps, [x["t_sim"] for x in m], color=color, ls=ls)
        ratio = [max(x["resid_grad"][0] / max(x["resid_grad"][-1], 1e-300), 1e-12) for x in m]
        axes[2].semilogy(steps, ratio, color=color, ls=ls)
        if s["collapsed"]:
            for ax in axes:
                ax.axvline(s["collapse_step"], color=color, lw=0.8, ls=":")
    first = results[0]
    axes[0].plot([x["step"] for x in first["history"]], [x["l_freq"] for x in first["history"]],
                 color="grey", lw=0.6, label="batch L_freq")
    axes[0].axhline(first["summary"]["l_freq_stream"], color="k", ls=":", label="stream L_freq")
    axes[0].axhline(first["summary"]["entropy_rate"], color="k", ls="-.", lw=0.8,
                    label="Markov entropy rate")
    axes[0].set_ylabel("loss (nats)")
    axes[0].legend(fontsize=7)
    axes[1].set_ylabel("t_sim, last block")
    axes[2].set_ylabel(r"$\|\partial L/\partial X_1\| / \|\partial L/\partial X_L\|$")
    axes[2].set_xlabel("step")
    cfg = first["config"]
    fig.suptitle(f"{cfg['model']['n_layers']}-layer decoders, d = {cfg['model']['d_model']}, "
                 "Zipf-Markov stream",
                 fontsize=10)
    fig.tight_layout()
    return save(fig, outdir, "fig_collapse_training")
