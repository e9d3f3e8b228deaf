"""A finished run folder, read back: what :func:`resharpen.experiments.training.loop.save_run` wrote.

A run folder holds ``config.json`` (the validated config), ``metrics.jsonl`` (one row per logged
step), ``per_length.json`` (the exact per-length evaluation of every weight set),
``weights_raw.safetensors``, ``weights_ema.safetensors`` and ``weights_bema.safetensors`` (the
trained weights, each with the model config in its metadata; :meth:`Run.model` rebuilds the
Transformer) and ``summary.json`` (written last: its presence marks the run finished). A run
read in place in the archive of full-size results keeps its files compressed (``summary.json.gz``,
:mod:`resharpen.experiments.training.archive`); every reader here reads either form.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resharpen.experiments.common.io import check_folder_files, check_writable_target
from resharpen.experiments.common.stored import (NUMBER, read_json, read_jsonl, stored_exists,
                                                 stored_file)
from resharpen.experiments.training.schema import stored_config

if TYPE_CHECKING:
    import torch

    from resharpen.experiments.model.transformer import Transformer

WEIGHT_KINDS = ("raw", "ema", "bema")  # the weight sets of a run
WEIGHTS_FILE = "weights_{}.safetensors"  # the file of one weight set in a run folder
RUN_FILES = ("config.json", "provenance.json", "metrics.jsonl", "per_length.json",
             "summary.json", *(WEIGHTS_FILE.format(kind) for kind in WEIGHT_KINDS))
"""The files :func:`resharpen.experiments.training.loop.save_run` writes in a run folder."""
MEASURED_FILE = "measured_{}.json"
"""A table an analysis measured on a run's weights or per-length records (:func:`measured`)."""


def check_run_folder(folder: str | Path, what: str = "run folder",
                     config: dict | None = None) -> Path:
    """ValueError unless ``folder`` can take a run: absent, or a writable folder whose
    :data:`RUN_FILES` are absent or regular files, that holds no other kind of result (a sweep,
    a construction: :func:`~resharpen.experiments.common.folder_kinds.check_kind`) and, given
    the run's ``config``, no finished run of another config (retraining the same config replaces
    it with what it would be again; another config would lose it). Called before training, so a
    bad folder (or a FIFO, device or link at a run file) is refused before the work; creates
    nothing (the run is saved by :func:`resharpen.experiments.training.loop.save_run`, which
    makes the folder)."""
    from resharpen.experiments.common.folder_kinds import check_kind
    from resharpen.experiments.common.json_text import dumps_json, loads_json

    check_folder_files(folder, RUN_FILES, what)
    check_kind(folder, "run", what)
    finished = Path(folder) / "summary.json"
    if config is not None and stored_exists(finished) and stored_exists(Path(folder) / "config.json"):
        old = read_json(Path(folder) / "config.json", "run file")
        old = stored_config(old) if isinstance(old, dict) else old
        new = loads_json(dumps_json(config))
        if old != new:
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)) \
                if isinstance(old, dict) else ["config"]
            parts = (f"its {changed[0]} section differs" if len(changed) == 1
                     else f"its {', '.join(changed)} sections differ")
            raise ValueError(f"{what} {str(folder)!r} holds a finished run of another config "
                             f"({parts}): name another folder")
    return check_writable_target(folder, what)


@dataclass(frozen=True)
class Run:
    """One finished run: its folder, config, summary, per-length records and training history."""

    folder: Path
    config: dict
    summary: dict
    per_length: dict | list
    history: list[dict]

    def weights_path(self, weights: str = "raw") -> Path:
        """The safetensors file of weight set ``weights`` (raw, ema or bema)."""
        if not isinstance(weights, str):
            raise TypeError(f"weights must be one of {', '.join(WEIGHT_KINDS)}, got "
                            f"{type(weights).__name__} {weights!r}")
        if weights not in WEIGHT_KINDS:
            raise ValueError(f"weights {weights!r} is not one of {', '.join(WEIGHT_KINDS)}")
        from resharpen.experiments.training.archive import is_archived

        if is_archived(self.folder):
            raise ValueError(f"{self.folder} was restored from the archive (results/full): its "
                             "config and summary are kept, its weights are not; retrain it with "
                             "its sweep's command into another folder")
        return self.folder / WEIGHTS_FILE.format(weights)

    def model(self, weights: str = "raw", dtype: "torch.dtype | str | None" = None
              ) -> "Transformer":
        """The run's Transformer with its ``weights`` (raw, ema or bema) weights, in evaluation
        mode, as float32 (as trained) or ``dtype``: a floating torch dtype or its name
        (``torch.float64`` or ``"float64"`` for exact analysis; :data:`FLOAT_DTYPES`).
        ValueError if the folder keeps no such weights (runs saved before weights were kept), or
        if the file is not what a run writes (:func:`read_weights`: checked before anything of
        the model's size is allocated); every argument is checked first."""
        from resharpen.experiments.model.transformer import Transformer

        dtype = float_dtype(dtype)
        path = self.weights_path(weights)
        if not path.is_file():
            kept = [k for k in WEIGHT_KINDS if self.weights_path(k).is_file()]
            raise ValueError(f"run folder {str(self.folder)!r} has no {path.name} (weights kept: "
                             f"{', '.join(kept) or 'none'})")
        cfg, tensors = read_weights(path)
        model = Transformer(cfg)
        model.load_state_dict(tensors)
        if dtype is not None:
            model = model.to(dtype)
        return model.eval()


FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
"""The dtypes a run's model can be read as, by name (``Run.model(dtype="float64")``)."""


def float_dtype(dtype: "torch.dtype | str | None") -> "torch.dtype | None":
    """None, a floating torch dtype, or its name in :data:`FLOAT_DTYPES` (``"torch.float64"``
    too) -> the torch dtype. ValueError for another name or a non-floating dtype, TypeError for
    anything else."""
    import torch

    if dtype is None:
        return None
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
        if name not in FLOAT_DTYPES:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(FLOAT_DTYPES)}")
        return getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch dtype or its name (e.g. 'float64'), got "
                        f"{type(dtype).__name__} {dtype!r}")
    if not dtype.is_floating_point:
        raise ValueError(f"dtype {dtype} is not a floating dtype; allowed: "
                         f"{', '.join(FLOAT_DTYPES)}")
    return dtype


def read_weights(path: str | Path, max_memory: int | None = None):
    """(ModelConfig, {name: tensor}) of a run's safetensors weights file, checked in this order,
    each failure one ValueError naming the file:

    - the header: a safetensors file with the model config in its metadata (``model_config``);
    - the shapes: the config's Transformer, built on the meta device (no memory), must have
      exactly the file's tensor names and shapes, so metadata that claims d = 10^5 over small
      tensors is refused before a 40 GB model is allocated;
    - the memory: the tensors and the model built from them must fit
      (:func:`resharpen.experiments.common.limits.require`; a file that truly holds that much
      is refused when the machine does not have it);
    - the values: every tensor finite (no NaN or inf: a corrupt file or a run that diverged)."""
    import torch
    from safetensors import SafetensorError, safe_open

    from resharpen.experiments.common import limits
    from resharpen.experiments.model.transformer import ModelConfig, Transformer

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            shapes = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
        cfg = ModelConfig.from_dict(json.loads(metadata["model_config"]))
        with torch.device("meta"):
            expected = {name: tuple(t.shape) for name, t in Transformer(cfg).state_dict().items()}
    except (SafetensorError, OSError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not a weights file of a run: {exc!r}") from None
    if shapes != expected:
        wrong = sorted(set(shapes) ^ set(expected)) or sorted(
            n for n in shapes if shapes[n] != expected[n])
        name = wrong[0]
        raise ValueError(f"{path} does not hold the model its metadata describes (vocab "
                         f"{cfg.vocab}, d_model {cfg.d_model}, {cfg.n_layers} layer(s)): tensor "
                         f"{name!r} is {shapes.get(name, 'missing')} in the file, "
                         f"{expected.get(name, 'not a parameter')} in that model")
    numbers = sum(math.prod(shape) for shape in shapes.values())
    limits.require(2 * 8 * numbers + limits.INTERPRETER,
                   f"loading {path.name} ({numbers} parameters)", max_memory)
    try:
        with safe_open(str(path), framework="pt") as handle:
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"{path} is not a weights file of a run: {exc!r}") from None
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{path}: tensor {name!r} holds non-finite values (NaN or inf): the "
                             "file is corrupt or the run diverged; there is no model to read")
    return cfg, tensors


RUN_CONFIG_SHAPE = {"task?": dict, "model?": dict, "train?": dict}
"""The shape of a run's config.json (:func:`~resharpen.experiments.common.stored.check_shape`): an
object whose sections, where present, are objects."""
SUMMARY_SHAPE = {"primary?": str, "seconds?": (NUMBER, type(None)), "by_weights?": dict}
"""The shape of a run's summary.json: an object; its weight sets, where present, an object."""
PER_LENGTH_SHAPE = (dict, list)
HISTORY_ROW_SHAPE = {"step?": NUMBER}
"""A metrics.jsonl row: an object whose step, where present, is a number."""


def _read_json(path: Path, shape: object = None):
    """A run file's JSON (:func:`~resharpen.experiments.common.stored.read_json`: a corrupt file is
    named with its line, a wrong shape with its field); a missing one means the folder is not a
    finished run."""
    try:
        return read_json(path, "run file", shape)
    except FileNotFoundError:
        raise ValueError(f"{path.parent} is not a finished run folder ({path.name} is missing)") from None


def measured(folder: str | Path, name: str, compute):
    """What an analysis measures on one run's weights or per-length records, kept in the run
    folder as ``measured_<name>.json`` the first time and read from there afterwards.

    The measurement (margins, attention uniformity, the readout's effective K...) is a function
    of the trained weights, which the archive of full-size results does not keep; kept as a small
    table beside them, it travels with the run into the archive, so that a claim or a figure is
    decided from the archive without the weights. Only the measurement is kept: the analysis
    that reads it (a fit, a test) runs anew each time. ``compute()`` returns JSON-ready data;
    on an archived run without the table it raises the run's "no weights" ValueError."""
    from resharpen.experiments.common.io import atomic_write_json
    from resharpen.experiments.common.names import check_name

    path = Path(folder) / MEASURED_FILE.format(check_name(name, "measurement name"))
    if stored_file(path).is_file():  # kept plain, or compressed in the archive
        return read_json(path, "measured run table")
    value = compute()
    atomic_write_json(path, value)
    return read_json(path, "measured run table")  # the same value whether computed or read


def load_run(folder: str | Path) -> Run:
    """Read a finished run folder. ValueError names the missing or corrupt file, or the file
    and field whose JSON is not of a run's shape; TypeError for a ``folder`` that is not a
    path."""
    from resharpen.experiments.common.names import check_path

    folder = check_path(folder, "run folder")
    if not folder.is_dir():
        raise ValueError(f"run folder {str(folder)!r} does not exist")
    summary = _read_json(folder / "summary.json", SUMMARY_SHAPE)
    config = stored_config(_read_json(folder / "config.json", RUN_CONFIG_SHAPE))
    from resharpen.experiments.training.archive import is_archived

    archived = is_archived(folder)  # from the archive: no per-length records, no weights
    per_length = {} if archived else _read_json(folder / "per_length.json", PER_LENGTH_SHAPE)
    metrics = folder / "metrics.jsonl"
    history = (read_jsonl(metrics, "run history", HISTORY_ROW_SHAPE) if stored_exists(metrics)
               else [])
    return Run(folder, config, summary, per_length, history)

