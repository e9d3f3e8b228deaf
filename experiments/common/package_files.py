"""Where the package's source files are, and how a reader is shown them.

The import package ``resharpen`` is assembled from five folders of the checkout (setup.py):
``resharpen/`` (the front) and the four top-level folders ``theory/``, ``constructions/``,
``experiments/`` and ``paper_figs/``, installed as ``resharpen.theory`` and so on. A file is
shown to a reader by its path inside the package, which is its module's name with ``/``
(``experiments/set_complement/claims.py``, ``cli.py``): the same from any working folder, in a
checkout and in an installed copy.
"""
from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

FOLDERS = ("theory", "constructions", "experiments", "paper_figs")
"""The top-level folders installed beneath ``resharpen``."""


@cache
def folder(top: str) -> Path:
    """The folder that holds ``resharpen.<top>`` (``resharpen`` itself for ``""``), found without
    importing anything but ``resharpen``."""
    if top == "":
        spec = importlib.util.find_spec("resharpen")
    elif top in FOLDERS:
        spec = importlib.util.find_spec(f"resharpen.{top}")
    else:
        raise ValueError(f"{top!r} is not a folder of the package (one of {', '.join(FOLDERS)})")
    return Path(spec.origin).resolve().parent


def package_file(relative: str | Path) -> Path:
    """The file at ``relative`` inside the package (``experiments/ledger/where.py``, ``cli.py``)."""
    parts = Path(relative).parts
    if parts and parts[0] in FOLDERS:
        return folder(parts[0]).joinpath(*parts[1:])
    return folder("").joinpath(*parts)


def module_file(module: str) -> Path:
    """The source file of a ``resharpen`` module (its ``__init__.py`` for a package), found
    without importing it."""
    parts = module.split(".")
    if parts[0] != "resharpen":
        raise ValueError(f"not a resharpen module: {module!r}")
    path = package_file(Path(*parts[1:])) if len(parts) > 1 else folder("")
    package = path / "__init__.py"
    return package if package.is_file() else path.with_suffix(".py")


def package_relative(path: str | Path) -> str:
    """``path`` (a file of the package) as the reader is shown it: relative to the package."""
    resolved = Path(path).resolve()
    for top in FOLDERS:
        try:
            return (Path(top) / resolved.relative_to(folder(top))).as_posix()
        except ValueError:
            continue
    try:
        return resolved.relative_to(folder("")).as_posix()
    except ValueError:
        raise ValueError(f"{path} is not a file of the resharpen package") from None


def shown(path: str | Path) -> str:
    """How a reader is shown ``path``: relative to the package for the package's own files
    (:func:`package_relative`), as given otherwise (a test's or a plug-in's file)."""
    try:
        return package_relative(path)
    except ValueError:
        return str(path)


def figure_files(root: str | Path | None = None) -> dict[str, Path]:
    """module name -> source file of every figure script: each ``<root>/<slice>/fig_*.py`` of
    a slice folder (one with an ``__init__.py``), sorted by module name; ``root`` defaults to
    the folder of ``resharpen.paper_figs``. Read from the files, nothing imported. ValueError
    when two slices hold one module name (``resharpen figs --only`` could not tell them
    apart)."""
    root = folder("paper_figs") if root is None else Path(root)
    found: dict[str, Path] = {}
    for path in sorted(root.glob("*/fig_*.py"), key=lambda p: (p.stem, p.parent.name)):
        if not (path.parent / "__init__.py").is_file():
            continue
        if path.stem in found:
            raise ValueError(f"figure module {path.stem} is in two slices: "
                             f"{found[path.stem].parent.name} and {path.parent.name}")
        found[path.stem] = path
    return found
