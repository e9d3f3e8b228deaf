"""The CPU Othello study: invalid mass and KL(p* || p) after every move 1..59, per norm placement
(column, colour) and raw / EMA / BEMA weights (line style), mean over seeds; trained on 30-move
prefixes. Claims shown: langtrain.othello.ema_ood.

Reads out/sweeps/othello (full profile: run `resharpen langs run --grid
experiments/configs/languages/othello.toml --profile full` first, about half an hour on 2 cores)
or out/sweeps/othello-quick (quick profile: one seed, 2 layers, 200 steps). Never trains: skipped
with that command when the study is not on disk. Writes fig_langtrain_study_othello.png/.pdf.
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.core.sweep import load_runs
    from resharpen.experiments.languages.grid import GRID_DIR, default_root, load_grid
    from resharpen.paper_figs import MissingResults
    from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

    path = GRID_DIR / "othello.toml"
    planned = load_grid(path, profile)
    root = default_root(planned["name"])
    done = len(load_runs(root)) if root.exists() else 0
    if done < len(planned["configs"]) and not (profile == "full" and done):
        raise MissingResults(f"no finished Othello study in {root}",
                             f"resharpen langs run --grid experiments/configs/languages/othello.toml"
                             f" --profile {profile}")
    return figures_of(root, Path(outdir), prefix="fig_langtrain_study_", profile=profile)
