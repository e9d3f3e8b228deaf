"""A finished run folder, read back: what :func:`resharpen.experiments.core.train.save_run` wrote.

A run folder holds ``config.json`` (the validated config), ``metrics.jsonl`` (one row per logged
step), ``per_length.json`` (the exact per-length evaluation of every weight set) and
``summary.json`` (written last: its presence marks the run finished).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    """One finished run: its folder, config, summary, per-length records and training history."""

    folder: Path
    config: dict
    summary: dict
    per_length: dict | list
    history: list[dict]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path.parent} is not a finished run folder ({path.name} is missing)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def load_run(folder: str | Path) -> Run:
    """Read a finished run folder. ValueError names the missing or corrupt file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"run folder {str(folder)!r} does not exist")
    summary = _read_json(folder / "summary.json")
    config = _read_json(folder / "config.json")
    per_length = _read_json(folder / "per_length.json")
    history = []
    metrics = folder / "metrics.jsonl"
    if metrics.exists():
        for number, line in enumerate(metrics.read_text().splitlines(), start=1):
            if line.strip():
                try:
                    history.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{metrics}:{number} is not valid JSON: {exc}") from None
    return Run(folder, config, summary, per_length, history)
