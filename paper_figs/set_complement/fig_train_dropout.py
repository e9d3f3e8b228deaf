"""Attention dropout vs OOD KL(p*||p), coloured by the primary weights (raw, EMA, BEMA).
Claims shown: train.dropout.ood_kl.

Reads the random-search sweep: out/sweeps/random_search (full profile; run
`resharpen sweep experiments/configs/set_complement/random_search.toml` first) or
out/sweeps/random_search-quick (quick profile; run here if absent, under a minute).
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.set_complement.sweep_report import ensure_sweep, make_figures

    return make_figures(ensure_sweep(profile), Path(outdir), names=("dropout",))
