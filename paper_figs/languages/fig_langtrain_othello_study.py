"""The CPU Othello study (6 x 6 board): invalid mass and KL(p* || p) after every move 1..32, for
the raw / EMA / BEMA weights (line style) of its Pre-LN runs, mean over seeds; trained on
20-move prefixes to the fit. Claims shown: langtrain.othello.ema_ood.

Reads out/sweeps/othello (full profile: run `resharpen langs run --grid
experiments/configs/languages/othello.toml --profile full` first, 8 runs of about an hour of CPU
each; else the archive's copy, results/full/sweeps/othello, through its curve table, as
fig_langtrain_curves) or out/sweeps/othello-quick (quick profile: one seed, 2 layers, 200
steps). Never trains: skipped with that command when the study is not on disk. Writes
fig_langtrain_study_othello6.png/.pdf.
"""
from __future__ import annotations

from pathlib import Path


STEMS = ("fig_langtrain_study_othello6",)
"""The stems of the files this figure writes (read without importing it: paper_figs/__init__.py)."""
DATA = (
    "resharpen langs run --grid experiments/configs/languages/othello.toml --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.languages import finished_grid
    from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

    root = finished_grid("othello.toml", profile, "Othello study")
    return figures_of(root, Path(outdir), prefix="fig_langtrain_study_", profile=profile)
