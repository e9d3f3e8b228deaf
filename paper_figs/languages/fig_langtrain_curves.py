"""Per task: illegal mass, KL(p* || p) and top-1 illegal rate vs prefix length, per norm
placement and raw / EMA / BEMA weights.
Claims shown: langtrain.ema.ood_illegal_mass, langtrain.postnorm.ood_illegal_mass.

One figure per task of the task-training grid (``fig_langtrain_<task>.png/.pdf``): three panels
(mean illegal mass and mean KL against the uniform-over-legal target, log scale; the fraction of
sequences whose top-1 token is illegal, linear), colour = norm
placement, line style = raw / EMA / BEMA weights, each line the mean over seeds with a band from
the smallest to the largest seed; the dashed vertical line is L_train.

Reads out/sweeps/langs (full profile: run `resharpen langs run --profile full` first), else
out/sweeps/langs-quick when complete (`resharpen langs run --profile quick`, ~9 min on 2 cores),
else (quick profile) the tiny grid of the claims, trained here in about half a minute.
"""
from __future__ import annotations

from pathlib import Path

COLORS = {"none": "tab:gray", "pre": "tab:blue", "post": "tab:red", "attn_out": "tab:green",
          "peri": "tab:purple"}
STYLES = {"raw": "-", "ema": "--", "bema": ":"}


def figures_of(root: Path, outdir: Path, prefix: str = "fig_langtrain_") -> list[Path]:
    """Write one figure per task of the grid folder ``root`` into ``outdir`` as
    ``<prefix><task>.png/.pdf``."""
    import matplotlib.pyplot as plt
    import numpy as np

    from resharpen.experiments.core.io import ensure_writable_dir
    from resharpen.experiments.languages.grid import per_length_curves
    from resharpen.paper_figs import save
    ensure_writable_dir(outdir)
    written: list[Path] = []
    for task, lines in sorted(per_length_curves(root).items()):
        fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
        train_len = next(iter(lines.values()))["train_len"]
        for (norm, weights), slot in sorted(lines.items()):
            x = slot["length"]
            for ax, metric in zip(axes, ("illegal_mass", "kl", "top1_illegal")):
                values = slot[metric]
                if metric != "top1_illegal":
                    values = np.clip(values, 1e-8, None)
                with np.errstate(all="ignore"):
                    mean = np.nanmean(values, axis=0)
                    lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
                ax.plot(x, mean, STYLES.get(weights, "-"), color=COLORS.get(norm, "k"),
                        lw=1.2, label=f"{norm} {weights} (n={len(values)})")
                if weights == "raw":
                    ax.fill_between(x, lo, hi, color=COLORS.get(norm, "k"), alpha=0.12, lw=0)
        labels = ("illegal mass  p(V \\ N(prefix))", "KL(p* || p)", "top-1 illegal rate")
        for ax, label in zip(axes, labels):
            ax.axvline(train_len, color="k", ls="--", lw=0.8)
            if ax is not axes[2]:
                ax.set_yscale("log")
            ax.set_xlabel("prefix length n (move index for Othello)")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        axes[2].legend(fontsize=6, ncol=3, loc="best")
        fig.suptitle(f"{task} ({Path(root).name}): mean over seeds (band: min-max over seeds, raw weights); "
                     f"dashed line: L_train = {train_len}", fontsize=9)
        written.extend(save(fig, outdir, f"{prefix}{task}"))
    return written


def make(profile: str, outdir: Path) -> list[Path]:
    """The best finished grid for the profile (the claims' choice: full, else a complete quick
    grid, else the tiny grid trained in seconds), so `make reproduce` stays short."""
    from resharpen.experiments.languages.claims_train import grid_rows

    _, root, _ = grid_rows(profile)
    return figures_of(root, Path(outdir))
