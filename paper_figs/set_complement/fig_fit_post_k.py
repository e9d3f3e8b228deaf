"""Post's effective K over training and post's out-of-distribution invalid mass against it, on
the K sweep (``experiments/configs/set_complement/fit_post_k_sweep_v32.toml``: post with a fixed
attention-output multiplier ``model.attn_out_multiplier`` c and W_O's init scale
``model.attn_out_scale`` s, trained to the fit with soft targets; quick profile: its v = 16
quick sweep, stamped).

K = |c(E M)|_F / |c(E)|_F with M = c W_V W_O, read off the raw weights
(:func:`resharpen.experiments.set_complement.effective_k.post_K`): left, at every evaluation step
of each post run (the trainer's ``post_K`` history), mean over seeds per setting (c, s); right,
at the fit, post's raw OOD invalid mass per run against its K, with attn_out's OOD invalid mass
at the fit (mean ± sd over seeds, from the K sweep's attn_out arm if it has one, else from the
placement sweep ``fit_placements_v32`` of the same profile, same setting; attn_out does not
depend on K) as the reference. Never trains: a missing sweep skips the figure with the command
that runs it. Claims shown: fit.post.ood_falls_with_k (the Spearman correlation in the right
panel's title).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = (
    "resharpen sweep set_complement/fit_post_k_sweep_v32 --profile {profile} --workers 2",
    "resharpen sweep set_complement/fit_placements_v32 --profile {profile} --workers 2"
    " # optional: attn_out's runs, when the K sweep has none",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

SWEEP = "fit_post_k_sweep_v32"


def _runs(root: Path) -> list[dict]:
    from resharpen.experiments.common.stored import read_jsonl
    from resharpen.experiments.training.sweep import load_runs

    out = []
    for run in load_runs(root):
        config, summary = run["config"], run["summary"]
        history = read_jsonl(run["folder"] / "metrics.jsonl", "run history")
        out.append({"placement": config["model"]["norm"],
                    "scale": config["model"]["attn_out_scale"],
                    "multiplier": config["model"].get("attn_out_multiplier", 1.0),
                    "seed": config["train"]["seed"],
                    "vocab": config["task"]["vocab"], "reached": summary.get("fit_reached"),
                    "ood": summary["by_weights"]["raw"]["ood_invalid_mass"],
                    "steps": [h["step"] for h in history if "post_K" in h],
                    "K": [h["post_K"]["K"] for h in history if "post_K" in h]})
    return out


def make(profile: str, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.ledger import stats
    from resharpen.paper_figs import save, style
    from resharpen.paper_figs.results import MissingResults, set_complement_sweep

    root = set_complement_sweep(SWEEP, profile)
    runs = _runs(root)
    ensure_writable_dir(outdir)
    post = [r for r in runs if r["placement"] == "post" and r["reached"] and r["K"]]
    attn = [r["ood"] for r in runs if r["placement"] == "attn_out" and r["reached"]]
    if not attn:  # the placement sweep's attn_out arm (same setting and seeds)
        try:
            placed = _runs(set_complement_sweep("fit_placements_v32", profile))
            seeds = {r["seed"] for r in runs}
            attn = [r["ood"] for r in placed if r["placement"] == "attn_out" and r["reached"]
                    and r["seed"] in seeds]
        except MissingResults:
            attn = []
    settings = sorted({(r["multiplier"], r["scale"]) for r in post})
    colours = dict(zip(settings, style.sequence_colors(len(settings))))
    fig, (left, right) = plt.subplots(1, 2, figsize=(style.TEXT_WIDTH, 2.8))
    for scale in settings:
        mine = [r for r in post if (r["multiplier"], r["scale"]) == scale]
        length = min(len(r["K"]) for r in mine)  # runs stop at their own fit
        K = np.array([r["K"][:length] for r in mine])
        left.plot(mine[0]["steps"][:length], K.mean(0), "-", lw=1.2, color=colours[scale])
        left.plot(mine[0]["steps"][length - 1], K.mean(0)[-1], "o", ms=3, color=colours[scale])
        right.plot([r["K"][-1] for r in mine], [r["ood"] for r in mine], "o", ms=4,
                   color=colours[scale])
    if attn:
        mean, sd = float(np.mean(attn)), float(np.std(attn, ddof=1)) if len(attn) > 1 else 0.0
        style.hline(right, mean, ls="--")
        right.axhspan(mean - sd, mean + sd, color=style.placement_color("attn_out"), alpha=0.2)
    test = stats.spearman([r["K"][-1] for r in post], [r["ood"] for r in post], "less")
    vocab = post[0]["vocab"] if post else "?"
    left.set(xlabel="training step", ylabel="K = |c(E c W_V W_O)| / |c(E)|", yscale="log")
    left.set_title(f"v = {vocab}: post's K over training\n(mean over seeds per setting)",
                   fontsize=style.MIN_FONT)
    right.set(xlabel="K at the fit", ylabel="raw OOD invalid mass", xscale="log", yscale="log")
    right.set_title(f"v = {vocab}: post OOD vs K at the fit (n = {test.n})\nSpearman rho "
                    f"{test.rho:+.2f}, p {test.p:.2g}", fontsize=style.MIN_FONT)
    for ax, axis in ((left, left.yaxis), (right, right.xaxis), (right, right.yaxis)):
        axis.set_major_formatter(ticker.LogFormatter())  # 4, 6 rather than 4 x 10^0
        axis.set_minor_formatter(ticker.LogFormatter(minor_thresholds=(2, 0.5)))
        ax.tick_params(which="both", labelsize=style.MIN_FONT)
    keys = [style.key(f"post, multiplier {c:g}, init scale {scale:g}", marker="o", ms=3,
                      color=colours[(c, scale)]) for c, scale in settings]
    keys += [style.key("a dot on the left: the run's last evaluation (its fit)", marker="o",
                       ls="none", ms=3, color=style.MUTED),
             style.key("attn_out at the fit: mean (dashed) ± sd (band) over its seeds",
                       ls="--", lw=0.6)]
    fig.suptitle(f"Post-Norm's effective K, {profile} profile (raw weights)",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout(w_pad=1.0)
    style.legend_below(fig, keys, ncol=3)
    return save(fig, outdir, "fig_fit_post_k", profile)
