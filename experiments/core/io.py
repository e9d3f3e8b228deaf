"""Atomic file output: write to a temporary file in the same folder, then rename.

A reader (or a crash) never sees a half-written file: either the old content or the new. The
temporary file of ``name`` is ``.<name>.resharpen-<random>.tmp`` (:data:`TEMP_MARK`), so that the
clean-up after a killed writer (:func:`remove_stale_temporaries`) removes only files this package
wrote, for the names it writes, in the folders it writes them to."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable

TEMP_MARK = ".resharpen-"
"""What every temporary file of this package has after its target's name: ``.<name>.resharpen-``."""


def ensure_writable_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and parents) if needed; ValueError if it cannot be a writable folder."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"output folder {str(path)!r} cannot be created: {exc.strerror}") from None
    if not path.is_dir():
        raise ValueError(f"output path {str(path)!r} exists and is not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"output folder {str(path)!r} is not writable")
    return path


def check_writable_target(path: str | os.PathLike) -> Path:
    """ValueError unless ``path`` could be created as (or is) a writable folder; creates nothing.

    Used before long work so that a bad --out fails first, without leaving empty folders."""
    path = Path(path)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ValueError(f"output path {str(path)!r} is blocked: {str(probe)!r} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"output path {str(path)!r} is not writable ({str(probe)!r} is read-only)")
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    path = Path(path)
    ensure_writable_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_MARK}", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def remove_stale_temporaries(folder: str | os.PathLike, names: Iterable[str]) -> list[Path]:
    """Remove the temporary files a killed writer of ``folder/<name>`` left, for each of
    ``names`` (``.<name>.resharpen-*.tmp``), in ``folder`` only (not below it). Nothing else is
    touched, whoever wrote it. Returns what was removed."""
    folder = Path(folder)
    removed = []
    if not folder.is_dir():
        return removed
    for name in names:
        for stale in folder.glob(f".{glob_escape(name)}{TEMP_MARK}*.tmp"):
            if stale.is_file() and not stale.is_symlink():
                stale.unlink(missing_ok=True)
                removed.append(stale)
    return removed


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped (a file name used as a glob pattern)."""
    import glob

    return glob.escape(name)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: object) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def atomic_write_weights(path: str | os.PathLike, tensors: dict, metadata: dict[str, str]
                         ) -> Path:
    """Tensors {name: torch.Tensor} as a safetensors file with string ``metadata``, written
    atomically (safetensors' serialization, then :func:`atomic_write_bytes`)."""
    from safetensors.torch import save

    return atomic_write_bytes(path, save(tensors, metadata=metadata))
