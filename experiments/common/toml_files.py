"""TOML, read in one place: config files, sweep files, claim declarations.

Python 3.11 has ``tomllib``; Python 3.10 (allowed by pyproject's requires-python) reads the same
format with ``tomli``, the same parser under another name (a dependency on Python < 3.11).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - python 3.10: the same parser, installed as tomli (pyproject)
    import tomli as tomllib

MAX_CONFIG_BYTES = 2**20
"""The largest config file read (1 MiB; the packaged ones have a few kB)."""


def read_toml(path: str | Path, what: str = "config file") -> dict:
    """The TOML file ``path`` as a dict; FileNotFoundError or ValueError naming it (``what``)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; name a TOML file")
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{what} {str(path)!r} has more than {MAX_CONFIG_BYTES} bytes: not a "
                         "config file")
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except RecursionError:
        raise ValueError(f"{what} {str(path)!r} nests its arrays or tables too deep to read (a "
                         "config nests a few levels)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text (a binary file?): byte "
                         f"{exc.object[exc.start]:#04x} at offset {exc.start}") from None
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r} cannot be read: {exc.strerror}") from None


def parse_value(text: str) -> Any:
    """A TOML scalar (``3``, ``1e-3``, ``true``, ``"post"``), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_toml(text: str, what: str) -> dict:
    """The TOML text ``text`` as a dict; ValueError naming ``what`` when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{what} is not valid TOML: {exc}") from None
