"""Plug-ins: a normalization scheme or a task defined outside the package, in the user's own
Python file or in an installed package, registered into the package's registries.

A plug-in is named by a spec:

* ``path/to/my_norms.py:NAME``: the file is imported under a private module name
  (``resharpen_plugin_<hash of its path>``, :func:`importlib.util.spec_from_file_location`) and
  must register, while it is imported, a scheme (:func:`resharpen.experiments.model.schemes.register`)
  or a task (:func:`resharpen.experiments.tasks.registry.register`) named ``NAME``;
* ``NAME``: the installed entry point ``NAME`` of the group ``resharpen.schemes`` or
  ``resharpen.tasks`` (:mod:`importlib.metadata`). Loading it imports its module, which
  registers ``NAME``; an entry point that points at a :class:`~resharpen.experiments.model.schemes.Scheme`
  the module did not register is registered here.

A missing file, a file that fails to import, or a ``NAME`` the plug-in did not register is a
ValueError naming it (the command line's one-line error). Loading a file twice imports it once.

The processes a sweep runs its runs in (the local pool's spawned workers, Ray's workers) import
the package afresh: :mod:`resharpen.experiments.training.backends` hands them :func:`loaded`, the
specs loaded here (each file by its absolute path), and each worker loads them before its run
(:func:`load_plugins`). On Ray every node must see the plug-in file at that path.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

SCHEME_GROUP = "resharpen.schemes"
TASK_GROUP = "resharpen.tasks"

_LOADED: dict[str, str] = {}
"""Canonical spec (``/absolute/file.py:NAME`` or ``NAME``) -> what it registered (``scheme`` or
``task``), in loading order: the specs a worker process must load too."""
_FILE_NAMES: dict[str, frozenset[tuple[str, str]]] = {}
"""Private module name -> the (kind, name) pairs its file registered when it was imported."""


def _registered() -> set[tuple[str, str]]:
    """Every registered (kind, name): ("scheme", name) and ("task", name)."""
    from resharpen.experiments.model.schemes import SCHEMES
    from resharpen.experiments.tasks.registry import TASKS

    return {("scheme", n) for n in SCHEMES} | {("task", n) for n in TASKS}


def split_spec(spec: str) -> tuple[str | None, str]:
    """(file or None, NAME) of a spec ``FILE.py:NAME`` or ``NAME``; ValueError for anything
    else (an empty part, a ``.py`` file without ``:NAME``)."""
    if not isinstance(spec, str):
        raise TypeError(f"a plug-in spec must be a string, got {type(spec).__name__}")
    source, colon, name = spec.rpartition(":")
    if not colon:
        source, name = None, spec
    if not name or (colon and not source) or name.endswith(".py"):
        raise ValueError(f"plug-in {spec!r} is not FILE.py:NAME (a scheme or task NAME that the "
                         "file registers) or the NAME of an installed entry point")
    return source, name


def _import_file(path: Path) -> frozenset[tuple[str, str]]:
    """Import the plug-in file ``path`` once under its private module name; the (kind, name)
    pairs it registered."""
    module_name = "resharpen_plugin_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if module_name in _FILE_NAMES:
        return _FILE_NAMES[module_name]
    before = _registered()
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # a dataclass or pickle in the file finds its module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise ValueError(f"plug-in file {str(path)!r} failed to import: {type(exc).__name__}: "
                         f"{exc}") from exc
    _FILE_NAMES[module_name] = frozenset(_registered() - before)
    return _FILE_NAMES[module_name]


def _load_file(source: str, name: str) -> tuple[str, str]:
    path = Path(source).expanduser()
    if not path.is_file():
        raise ValueError(f"plug-in file {source!r} does not exist" if not path.exists() else
                         f"plug-in file {source!r} is not a file")
    if path.suffix != ".py":
        raise ValueError(f"plug-in file {source!r} is not a Python file (.py)")
    path = path.resolve()
    added = _import_file(path)
    kinds = [kind for kind, registered in added if registered == name]
    if not kinds:
        found = ", ".join(f"{kind} {n!r}" for kind, n in sorted(added)) or "nothing"
        raise ValueError(f"plug-in file {source!r} registers no scheme or task named {name!r} "
                         f"(it registers {found}; a scheme by schemes.register(Scheme("
                         f"{name!r}, ...)), a task by registry.register({name!r}, ...))")
    return f"{path}:{name}", kinds[0]


def _load_entry_point(name: str) -> tuple[str, str]:
    from importlib.metadata import entry_points

    from resharpen.experiments.model.schemes import SCHEMES, Scheme, register

    found = [(group, point) for group in (SCHEME_GROUP, TASK_GROUP)
             for point in entry_points(group=group) if point.name == name]
    if not found:
        raise ValueError(f"plug-in {name!r} is neither FILE.py:NAME nor an installed entry point "
                         f"of the groups {SCHEME_GROUP} or {TASK_GROUP}")
    group, point = found[0]
    try:
        target = point.load()
    except Exception as exc:
        raise ValueError(f"entry point {name!r} ({point.value}) failed to load: "
                         f"{type(exc).__name__}: {exc}") from exc
    if group == SCHEME_GROUP and isinstance(target, Scheme) and target.name not in SCHEMES:
        register(target)
    kind = "scheme" if group == SCHEME_GROUP else "task"
    if (kind, name) not in _registered():
        raise ValueError(f"entry point {name!r} ({point.value}) of group {group} registers no "
                         f"{kind} named {name!r}")
    return name, kind


def load_plugin(spec: str) -> str:
    """Load the plug-in ``spec`` (``FILE.py:NAME`` or an entry point's ``NAME``; see the module
    docstring) and return the name it registered. ValueError when it cannot be loaded or does
    not register ``NAME``."""
    source, name = split_spec(spec)
    canonical, kind = _load_file(source, name) if source else _load_entry_point(name)
    _LOADED.setdefault(canonical, kind)
    return name


def load_plugins(specs) -> tuple[str, ...]:
    """:func:`load_plugin` of each spec (None or empty: none); the names registered."""
    return tuple(load_plugin(spec) for spec in specs or ())


def loaded() -> tuple[str, ...]:
    """The canonical specs loaded in this process, in order (files by absolute path)."""
    return tuple(_LOADED)


def add_plugin_option(parser) -> None:
    """``--plugin FILE.py:NAME`` (repeatable) on a subcommand's parser."""
    parser.add_argument("--plugin", action="append", default=[], metavar="FILE.py:NAME",
                        help="load a normalization scheme or task NAME that your Python file "
                             "registers (or the installed entry point NAME of the groups "
                             f"{SCHEME_GROUP}, {TASK_GROUP}) before reading the config; "
                             "repeatable")


__all__ = ["SCHEME_GROUP", "TASK_GROUP", "split_spec", "load_plugin", "load_plugins", "loaded",
           "add_plugin_option"]
