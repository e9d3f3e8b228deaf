"""OOD invalid mass of the raw, EMA and BEMA weights over training (mean ± std over runs), from
the placements sweep (:func:`~resharpen.paper_figs.set_complement.sweep_figures.sweep_figures`).
Claims shown: none (no sampled-label sweep decides a claim; the fit.* claims do).
"""
from __future__ import annotations

from pathlib import Path

DATA = ("resharpen sweep set_complement/placements --profile {profile} --workers 2",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.set_complement.sweep_figures import sweep_figures

    return sweep_figures(profile, outdir, "placements", ("averaging",))
