"""Atomic file output: write to a temporary file in the same folder, then rename.

A reader (or a crash) never sees a half-written file: either the old content or the new."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: object) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
