"""What the ``fit.*`` claims (:mod:`.claims_fit`) read and how they report it: the folder of a
sweep (the full one if finished, else the quick one run here), the per-length reports of its
runs, the setting line of a detail, the outcome of a claim whose full sweep is missing, and a
claim's share of its multiple-testing family (:class:`Part`, decided by
:func:`.fit_families.in_family`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.ledger import Outcome

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def sweep_root(name: str, profile: str) -> Path | None:
    """The folder of sweep ``name``: the full one if finished (None if not), the quick one run
    (or resumed) here on 2 local workers, once: claims running in parallel ledger workers wait
    for the one that runs it (:func:`~resharpen.experiments.training.sweep.exclusive`)."""
    from resharpen.experiments.training.config import (CONFIG_DIR, check_profile, result_folder,
                                                       sweep_folder)
    from resharpen.experiments.training.sweep import exclusive, read_table
    from resharpen.experiments.set_complement.sweep import run_sweep

    if check_profile(profile) == "full":
        root = sweep_folder(name)
        return root if (root / "table.jsonl").exists() and read_table(root) else None
    with exclusive(result_folder("sweeps", name, "quick")):  # claims in parallel workers share it
        return run_sweep(CONFIG_DIR / "set_complement" / f"{name}.toml", profile="quick",
                         workers=2, progress=False)


ALL_FULL = "`python -m resharpen.experiments.set_complement.full_fit_profile`"
"""The command that trains every full sweep of the ``fit.*`` claims, then runs them."""


def missing(name: str, expected: str) -> Outcome:
    """The outcome of a claim whose full sweep ``name`` is not in out/: INCONCLUSIVE, naming
    ``resharpen archive restore NAME`` when the archive holds it, else the command that trains
    it."""
    from resharpen.experiments.training.archive import archived_sweeps

    train = (f"`resharpen sweep experiments/configs/set_complement/{name}.toml --workers 2` "
             f"trains it (every full fit.* training: {ALL_FULL})")
    how = (f"`resharpen archive restore {name}` brings back its archived runs without training "
           f"(`resharpen archive restore`: every archived sweep), or {train}"
           if name in archived_sweeps() else train)
    return Outcome("no data", expected, passed=False,
                   inconclusive=f"no finished full sweep {name} in out/sweeps; {how}")


def placement_sweeps(profile: str) -> tuple[str, ...]:
    """The placement sweeps a claim decides on: v = 32 and v = 64 in full; in quick the v = 16
    quick profile of the v = 32 file (the v = 64 file's quick profile is the same model at
    another fit)."""
    return pick(profile, quick=("fit_placements_v32",),
                full=("fit_placements_v32", "fit_placements_v64"))


def placement_data(profile: str) -> tuple[list[tuple[str, Path, list[dict]]], str | None]:
    """([(sweep, folder, reports)], the first missing full sweep or None)."""
    data = []
    for name in placement_sweeps(profile):
        root = sweep_root(name, profile)
        if root is None:
            return data, name
        data.append((name, root, reports(root)))
    return data, None


def reports(root: Path) -> list[dict]:
    """The per-length report (raw weights) of every finished run of a sweep, cached per root."""
    from resharpen.experiments.set_complement.fit_report import sweep_reports

    key = str(root.resolve())
    if key not in _REPORTS:
        _REPORTS[key] = sweep_reports(root, "raw")
    return _REPORTS[key]


_REPORTS: dict[str, list[dict]] = {}


def setting(reps: list[dict], profile: str) -> str:
    """v, seeds, profile and fit of the runs a claim used."""
    vocab = sorted({r["vocab"] for r in reps})
    seeds = sorted({r["seed"] for r in reps})
    reached = sum(bool(r["fit_reached"]) for r in reps)
    return (f"v = {', '.join(map(str, vocab))}, seeds {seeds[0]}..{seeds[-1]}, profile {profile}"
            + (" (quick profile: decided on the v = 16 quick sweeps)" if profile == "quick"
               else "") + f"; {reached}/{len(reps)} runs reached the fit")


def by_seed(reps: list[dict], placement: str, value, reached_only: bool = True) -> dict:
    """``{seed: value(report)}`` of the runs of ``placement`` (that reached the fit)."""
    return {r["seed"]: value(r) for r in reps if r["placement"] == placement
            and (r["fit_reached"] or not reached_only)}


@dataclass
class Part:
    """A claim's share of its family: its tests ((label, result) pairs), the tests it only
    reports (``reported``: Holm-adjusted among themselves, not deciding), what it measured and
    expected, its detail lines, and the command that would decide it."""

    tests: list
    measured: str
    expected: str
    detail: list[str]
    decide_with: str
    reported: list = field(default_factory=list)


def decide(tests: list[tuple[str, object]], measured: str, expected: str, detail: list[str],
           decide_with: str, reported: list | None = None) -> Part:
    return Part(tests, measured, expected, detail, decide_with, reported or [])


def fmt(values) -> str:
    """mean +- sample sd (n) of the finite values, or "none"."""
    a = np.asarray(list(values), dtype=float)
    a = a[np.isfinite(a)]
    if not a.size:
        return "none"
    return f"{a.mean():.4g} +- {a.std(ddof=1) if a.size > 1 else 0.0:.2g} (n={a.size})"


def run_full(name: str) -> str:
    """The command that runs the full sweep ``name``."""
    return f"run `resharpen sweep experiments/configs/set_complement/{name}.toml --workers 2`"
