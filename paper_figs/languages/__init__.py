"""Figures of the language slice."""
from __future__ import annotations

from pathlib import Path


def finished_grid(grid: str, profile: str, what: str) -> Path:
    """The folder of the language grid file ``grid`` (``experiments/configs/languages/<grid>``)
    under ``profile``, when its runs are finished (the full profile: when any is; there, when
    ``out/`` has none, the archive's copy, read in place);
    :class:`resharpen.paper_figs.MissingResults` naming the command that makes them otherwise."""
    from resharpen.experiments.training.archive import archived_sweep
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.languages.grid import GRID_DIR, default_root, load_grid
    from resharpen.paper_figs import MissingResults

    planned = load_grid(GRID_DIR / grid, profile)
    root = default_root(planned["name"])
    done = len(load_runs(root)) if root.exists() else 0
    archived = archived_sweep(planned["name"]) if profile == "full" and not done else None
    if archived is not None and load_runs(archived):
        return archived
    if done < len(planned["configs"]) and not (profile == "full" and done):
        raise MissingResults(f"no finished {what} in {root}",
                             f"resharpen langs run --grid experiments/configs/languages/{grid}"
                             f" --profile {profile}")
    return root
