"""What a results folder holds, read from the files its writer leaves, so that no command
writes into a folder that holds another command's results.

Each writer of a folder names the kind it writes; a folder that already holds files marking
another kind is refused before any work, with one line naming what it holds (a run trained
into a sweep's folder would replace the sweep's provenance, a construction saved into a run's
folder its config). A file counts in its plain and its compressed form (the archive's
``.gz``)::

    run            summary.json, metrics.jsonl     (resharpen train, one run of a sweep)
    construction   weights.safetensors, report.json (resharpen construct, save_construction)
    sweep          sweep.json, table.jsonl         (resharpen sweep, langs run, archive restore)
    battery        battery_plan.json               (resharpen battery)
"""
from __future__ import annotations

import os
from pathlib import Path

from resharpen.experiments.common.stored import compressed_path

MARKERS = {"run": ("summary.json", "metrics.jsonl"),
           "construction": ("weights.safetensors", "report.json"),
           "sweep": ("sweep.json", "table.jsonl"),
           "battery": ("battery_plan.json",)}
"""The files that mark a folder as holding each kind of result."""
NAMES = {"run": "a training run", "construction": "a construction", "sweep": "a sweep or grid",
         "battery": "a battery"}


def held_kinds(folder: str | os.PathLike) -> dict[str, str]:
    """{kind: the first of its marker files found} for every kind ``folder`` holds."""
    folder = Path(folder)
    found = {}
    for kind, names in MARKERS.items():
        for name in names:
            if any(os.path.lexists(p) for p in (folder / name, compressed_path(folder / name))):
                # a link or FIFO at a marker's name counts: its reader refuses it later
                found[kind] = name
                break
    return found


def check_kind(folder: str | os.PathLike, kind: str, what: str = "output folder") -> Path:
    """ValueError when ``folder`` holds results of another kind than ``kind`` (:data:`MARKERS`); an absent or
    empty folder, or one of the same kind, passes. Creates and reads nothing else."""
    if kind not in MARKERS:
        raise ValueError(f"unknown folder kind {kind!r}; allowed: {', '.join(MARKERS)}")
    folder = Path(folder)
    if not os.path.isdir(folder):  # absent, a file, or a name the system refuses (said later)
        return folder
    for other, marker in held_kinds(folder).items():
        if other != kind:
            raise ValueError(f"{what} {str(folder)!r} holds {NAMES[other]} ({marker}), not "
                             f"{NAMES[kind]}: name another folder")
    return folder


__all__ = ["MARKERS", "held_kinds", "check_kind"]
