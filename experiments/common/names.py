"""The one safe-name rule for everything the package names on disk: runs, sweeps, grids, figures.

A name becomes one path component under the folder the user chose (``out/runs/<name>``, ...), so
it must not be able to leave that folder or collide with the package's own files: it is 1 to
:data:`MAX_LENGTH` characters of letters, digits, ``_``, ``-``, ``.`` and ``=``, and does not
start with ``.`` (no ``..``, no hidden files, no separators, no absolute paths). An explicit
``--out`` is taken as given; only names are checked.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

MAX_LENGTH = 120  # well under the usual 255-byte file-name limit, with room for suffixes
_SAFE = re.compile(r"[A-Za-z0-9_=-][A-Za-z0-9_.=-]*")


def check_name(name: object, what: str = "name") -> str:
    """``name`` if it is a safe single path component; ValueError saying why otherwise."""
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a string, got {type(name).__name__} {name!r}")
    if not name or len(name) > MAX_LENGTH:
        raise ValueError(f"{what} must have 1 to {MAX_LENGTH} characters, got {len(name)}")
    if not _SAFE.fullmatch(name):
        raise ValueError(f"{what} {name!r} may hold only letters, digits, '_', '-', '.', '=' and "
                         "must not start with '.' (it names a folder inside the output folder)")
    return name


def check_path(value: object, what: str) -> Path:
    """``value`` as a Path when it names a file or folder: TypeError unless it is a string or a
    path, ValueError for an empty or blank string (which pathlib would take as the working
    folder, so nothing is read from or written there unasked)."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path (a string or os.PathLike), got "
                        f"{type(value).__name__} {value!r}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{what} must name a file or folder, got {value!r} (for the working "
                         f"folder, give '.')")
    return Path(value)
