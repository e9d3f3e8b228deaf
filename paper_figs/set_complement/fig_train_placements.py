"""OOD invalid mass vs input length per norm placement (mean ± std band over runs).
Claims shown: train.postnorm.ood_invalid_mass, train.dispersion.margin_exponent.

Reads the placements sweep (five placements, fixed hyper-parameters, several seeds):
out/sweeps/placements (full profile; run
`resharpen sweep experiments/configs/set_complement/placements.toml` first) or
out/sweeps/placements-quick (quick profile; run here if absent, under a minute).
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.experiments.set_complement.sweep_report import ensure_sweep, make_figures

    return make_figures(ensure_sweep(profile, runs_quick=10, name="placements"), Path(outdir),
                        names=("placements",))
