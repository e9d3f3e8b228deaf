"""Mid-run checkpoints: a run that lasts longer than a session (the Othello study's runs take
about an hour of CPU each, the language grid's capped runs minutes) continues, when the same
command runs again, from its last checkpoint instead of from step 1.

A checkpoint is one file, ``<folder>/<run name>.pt``, written atomically (a temporary file, then
a rename) at a record step at most every :data:`CHECKPOINT_SECONDS` seconds of training, and
removed by the sweep once the finished run is saved (:func:`remove_checkpoint`), so that a run
trained but not yet saved when the process died resumes from it rather than from step 1. It holds everything the next steps depend on, so that a
resumed run is the run that was never stopped, step for step and bit for bit on one machine
(``tests/core/test_checkpoint.py``):

* the training state (:meth:`resharpen.experiments.training.loop.TrainingState.resume_state`):
  the model, AdamW's moments, the schedule's step, the EMA and BEMA averagers (BEMA's theta_0
  and its inner EMA too) and the smoothed loss;
* the loop's history rows and its last step;
* the trainer's own state (``extra``): the data generators' states, the weights an own-fit run
  has kept, the run time so far;
* the run's config and the checkpoint format (:data:`FORMAT`), which must equal those of the
  run that reads it.

It is read with ``torch.load(weights_only=True)`` (torch >= 2.10): tensors and plain Python
values only, no code, so a planted file cannot execute anything. An unreadable file, another
config's or format's, or one whose tensors do not fit the run (:func:`fits`) is not used: the
run says so in one line on stderr and starts from step 1, and its first checkpoint replaces the
file. A resumed run lists the steps it resumed from in its summary (``resumed_from``). Nothing
but ``<run name>.pt`` files of the runs a sweep trains, and this package's temporary files, is
ever deleted.
"""
from __future__ import annotations

import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from resharpen.experiments.common.io import atomic_write_bytes, remove_stale_temporaries

CHECKPOINT_SECONDS = 300.0
"""The most training time between two checkpoints of a run (at record steps)."""
FORMAT = 1
"""The checkpoint layout's version: a file of another version is not used."""


@dataclass
class Checkpoint:
    """The checkpoint file of one run: ``folder/<config["name"]>.pt``. ``get_extra`` and
    ``set_extra`` save and restore the trainer's own state (plain values and tensors);
    ``every``: the seconds of training between two saves (0: at every record step; None:
    :data:`CHECKPOINT_SECONDS`, read when the run starts)."""

    folder: Path
    config: dict
    get_extra: Callable[[], dict] = field(default=lambda: {})
    set_extra: Callable[[dict], None] = field(default=lambda extra: None)
    every: float | None = None

    def __post_init__(self) -> None:
        if self.every is None:
            self.every = CHECKPOINT_SECONDS

    @property
    def path(self) -> Path:
        return Path(self.folder) / f"{self.config['name']}.pt"

    def load(self) -> dict | None:
        """The saved checkpoint of this run's config and :data:`FORMAT`, or None (none, or not
        usable: said on stderr). Removes the temporary files a killed save left."""
        remove_stale_temporaries(self.folder, [self.path.name])
        if not self.path.is_file() or self.path.is_symlink():
            return None
        import torch

        try:
            data = torch.load(self.path, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: start afresh
            return self._unused(f"it cannot be read ({type(exc).__name__})")
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return self._unused(f"it is not of checkpoint format {FORMAT}")
        if data.get("config") != self.config:
            return self._unused("it was written for another config")
        return data

    def _unused(self, why: str) -> None:
        print(f"checkpoint {str(self.path)!r} is not used: {why}; the run starts from step 1",
              file=sys.stderr)
        return None

    def save(self, step: int, state: dict, histories: list, smoothed: list) -> None:
        """Write the checkpoint after step ``step`` (atomically)."""
        import torch

        buffer = io.BytesIO()
        torch.save({"format": FORMAT, "config": self.config, "step": step, "state": state,
                    "histories": histories, "smoothed": smoothed,
                    "extra": self.get_extra()}, buffer)
        atomic_write_bytes(self.path, buffer.getvalue())

    def fits(self, saved: dict, current: dict) -> bool:
        """Whether a saved training state fits the run's current one: the model's tensors (the
        same names and shapes, :func:`same_layout`) and the same weight sets; else said on
        stderr."""
        if (isinstance(saved, dict) and same_layout(saved.get("model"), current["model"])
                and isinstance(saved.get("averagers"), dict)
                and saved["averagers"].keys() == current["averagers"].keys()):
            return True
        self._unused("its tensors do not fit this run's model (written by other code)")
        return False


def same_layout(a, b) -> bool:
    """Whether two nested dicts / lists / tensors have the same keys, lengths and tensor shapes
    (other values may differ)."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(same_layout(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))
                and len(a) == len(b) and all(same_layout(x, y) for x, y in zip(a, b)))
    return True


def remove_checkpoint(folder: str | Path, name: str) -> None:
    """Remove run ``name``'s checkpoint from ``folder`` (the run is finished and saved)."""
    path = Path(folder) / f"{name}.pt"
    if path.is_file() and not path.is_symlink():
        path.unlink()


__all__ = ["CHECKPOINT_SECONDS", "FORMAT", "Checkpoint", "same_layout", "remove_checkpoint"]
