"""Attention dropout vs OOD KL(p*||p), each run marked (shape and colour) by its primary weights
(raw, EMA, BEMA), from the random-search sweep (:func:`~resharpen.paper_figs.set_complement.sweep_figures.sweep_figures`).
Claims shown: none (no sampled-label sweep decides a claim; the fit.* claims do).
"""
from __future__ import annotations

from pathlib import Path

DATA = ("resharpen sweep set_complement/random_search --profile {profile} --workers 2",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""


def make(profile: str, outdir: Path) -> list[Path]:
    from resharpen.paper_figs.set_complement.sweep_figures import sweep_figures

    return sweep_figures(profile, outdir, "random_search", ("dropout",))
