"""OOD invalid mass of the raw, EMA and BEMA weights over training (mean ± std over runs).
Claims shown: train.bema.ood_kl, train.ema.ood_kl.

Reads the random-search sweep: out/sweeps/random_search (full profile; run
`resharpen sweep experiments/configs/set_complement/random_search.toml` first) or
out/sweeps/random_search-quick (quick profile; run here if absent, under a minute).
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from experiments.sweep_report import ensure_sweep, make_figures

    return make_figures(ensure_sweep(profile), Path(outdir), names=("averaging",))
