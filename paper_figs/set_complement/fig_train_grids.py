"""The balanced placements x seeds grids, per norm placement: OOD invalid mass vs input length
(mean ± std band over seeds) and the learned margins.

- ``fig_train_grid_*``: the one-layer model, 16 seeds per placement, each placement trained as
  one batched ensemble (out/sweeps/placements_grid);
- ``fig_train_multi_layer_*``: the multi-layer model (2 layers, 4 heads, GELU MLPs, learned
  positions; out/sweeps/placements_multi_layer).

Reads out/sweeps/<name> (full profile) or out/sweeps/<name>-quick (quick profile); never trains:
skipped with the command (`resharpen sweep experiments/configs/set_complement/<name>.toml
--profile <profile>`) when a sweep is not on disk. Claims shown: none (no sampled-label sweep
decides a claim; the fit.* claims do).
"""
from __future__ import annotations

from pathlib import Path

STEMS = ("fig_train_grid_placements", "fig_train_grid_margins",
         "fig_train_multi_layer_placements", "fig_train_multi_layer_margins")
"""The files this figure writes: ``<prefix>_<figure>`` of each grid of GRIDS, for the figures
placements and margins (a literal, read without importing the module: paper_figs/__init__.py)."""
DATA = (
    "resharpen sweep set_complement/placements_grid --profile {profile} --workers 2",
    "resharpen sweep set_complement/placements_multi_layer --profile {profile} --workers 2",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""
GRIDS = (("placements_grid", "fig_train_grid"), ("placements_multi_layer", "fig_train_multi_layer"))


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.set_complement.sweep_figures import sweeps_figures

    return sweeps_figures(profile, outdir, GRIDS, ("placements", "margins"))
