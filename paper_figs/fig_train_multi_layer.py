"""The multi-layer model (2 layers, 4 heads, GELU MLPs, learned positions) per norm placement:
OOD invalid mass vs input length (mean ± std band over seeds) and the learned margins.
Claim shown: train.postnorm.multi_layer.

Reads the balanced placements x seeds grid out/sweeps/placements_multi_layer (full profile; run
`resharpen sweep experiments/configs/set_complement/placements_multi_layer.toml` first) or
out/sweeps/placements_multi_layer-quick (quick profile; run here if absent, under a minute).
"""
from __future__ import annotations

from pathlib import Path


def make(profile: str, outdir: Path) -> list[Path]:
    from experiments.sweep_report import ensure_sweep, make_figures

    root = ensure_sweep(profile, runs_quick=10, name="placements_multi_layer")
    return make_figures(root, Path(outdir), names=("placements", "margins"),
                        prefix="fig_train_multi_layer")
