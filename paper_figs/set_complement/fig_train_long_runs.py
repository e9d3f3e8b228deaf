"""Convergence-length runs (12000 steps, none and post, 8 runs each) at v = 64 and v = 32: the
raw, EMA and BEMA weights' OOD invalid mass over training per placement, and OOD invalid mass
vs input length. Claims shown: none (no sampled-label sweep decides a claim; the fit.* claims do).

Reads out/sweeps/long_runs and out/sweeps/long_runs_v32 (full profile; run
`resharpen sweep experiments/configs/set_complement/long_runs.toml --workers 2` and the same
with long_runs_v32.toml first, a few minutes each) or their -quick versions (quick profile).
Never trains: skipped with the command when a sweep is not on disk.
"""
from __future__ import annotations

from pathlib import Path

STEMS = ("fig_train_long_runs_averaging", "fig_train_long_runs_placements",
         "fig_train_long_runs_v32_averaging", "fig_train_long_runs_v32_placements")
"""The files this figure writes: ``fig_train_<sweep>_<figure>`` of each sweep (a literal, read
without importing the module: paper_figs/__init__.py)."""
DATA = (
    "resharpen sweep set_complement/long_runs --profile {profile} --workers 2",
    "resharpen sweep set_complement/long_runs_v32 --profile {profile} --workers 2",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.set_complement.sweep_figures import sweeps_figures

    return sweeps_figures(profile, outdir, tuple((name, f"fig_train_{name}") for name in
                                                 ("long_runs", "long_runs_v32")),
                          ("averaging", "placements"))
