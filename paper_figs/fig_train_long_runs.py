"""Convergence-length runs (12000 steps, none and post, 8 runs each): the raw, EMA and BEMA
weights' OOD invalid mass over training per placement, and OOD invalid mass vs input length.
Claims shown: train.postnorm.long_runs, train.bema.ood_kl.long, train.ema.ood_kl.long.

Reads out/sweeps/long_runs (full profile; run
`resharpen sweep experiments/configs/set_complement/long_runs.toml --workers 2` first, about
6 minutes) or out/sweeps/long_runs-quick (quick profile; run here if absent, under a minute).
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from experiments.sweep_report import ensure_sweep, make_figures

    return make_figures(ensure_sweep(profile, runs_quick=10, name="long_runs"), Path(outdir),
                        names=("averaging", "placements"), prefix="fig_train_long_runs")
