"""Mid-run checkpoints: a run that lasts longer than a session (the Othello study's runs take
about an hour of CPU each, the language grid's capped runs minutes) continues, when the same
command runs again, from its last checkpoint instead of from step 1.

A checkpoint is one file, ``<folder>/<run name>.pt``, written atomically (a temporary file, then
a rename) at a record step at most every :data:`CHECKPOINT_SECONDS` seconds of training, and
removed when the run has finished. It holds everything the next steps depend on, so that a
resumed run is the run that was never stopped, step for step and bit for bit on one machine
(``tests/core/test_checkpoint.py``):

* the training state (:meth:`resharpen.experiments.training.loop.TrainingState.resume_state`):
  the model, AdamW's moments, the schedule's step, the EMA and BEMA averagers (BEMA's theta_0
  and its inner EMA too) and the smoothed loss;
* the loop's history rows and its last step;
* the trainer's own state (``extra``): the data generators' states, the weights an own-fit run
  has kept, the run time so far;
* the run's config, which must equal the config of the run that reads it: a checkpoint of
  another config is not used (and is replaced by the run's own).

It is read with ``torch.load(weights_only=True)``: tensors and plain Python values only, no
code, so a planted file cannot execute anything. An unreadable or foreign file is ignored and
the run starts from step 1; a file this package did not write is never deleted (only
``<run name>.pt`` files of a run this package trains, and its own temporary files).
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from resharpen.experiments.common.io import atomic_write_bytes, remove_stale_temporaries

CHECKPOINT_SECONDS = 300.0
"""The most training time between two checkpoints of a run (at record steps)."""


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
        """The saved checkpoint of this run's config, or None (none, unreadable, or another
        config's). Removes the temporary files a killed save left."""
        remove_stale_temporaries(self.folder, [self.path.name])
        if not self.path.is_file():
            return None
        try:
            data = torch.load(self.path, weights_only=True)
        except Exception:  # noqa: BLE001 - a truncated or foreign file: start afresh
            return None
        if not isinstance(data, dict) or data.get("config") != self.config:
            return None
        return data

    def save(self, step: int, state: dict, histories: list, smoothed: list) -> None:
        """Write the checkpoint after step ``step`` (atomically)."""
        buffer = io.BytesIO()
        torch.save({"config": self.config, "step": step, "state": state,
                    "histories": histories, "smoothed": smoothed,
                    "extra": self.get_extra()}, buffer)
        atomic_write_bytes(self.path, buffer.getvalue())

    def remove(self) -> None:
        """Remove the run's checkpoint (the run has finished)."""
        self.path.unlink(missing_ok=True)


__all__ = ["CHECKPOINT_SECONDS", "Checkpoint"]
