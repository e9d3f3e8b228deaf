"""Where to read a claim: ``resharpen verify --where ID``.

:func:`where` names the line of the claim's module that writes its id, the check, and every
derivation the check uses (the functions and classes of other ``resharpen`` modules it names,
followed through the helper functions of its own module). The mutation test (:mod:`.mutation`)
breaks those derivations one at a time (:func:`_derivations`).
"""
from __future__ import annotations

import dis
import importlib
import inspect
import linecache
import sys
import types
from typing import Callable, Iterator

from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.core.io import shown_path

_MACHINERY = ("resharpen.experiments.ledger.registry", "resharpen.experiments.ledger.runner",
              "resharpen.experiments.ledger.where", "resharpen.experiments.ledger.report",
              "resharpen.experiments.core.profiles")
"""Modules whose functions are the ledger's own machinery (``Outcome``, ``pick``), not derivations
a check uses. The statistics that decide (:mod:`.stats`) are listed as derivations; the mutation
test leaves them out (``mutation.NOT_SUBJECTS``)."""


def where(c: Claim) -> list[str]:
    """Where to read a claim: ``"path:line what"`` lines, paths relative to the working folder.

    First the line of the claim's module where its id is written (for a check made by a factory,
    the line that calls the factory with that id), then the check function (its ``@claim`` line),
    then every derivation the check uses: the functions and classes of other ``resharpen``
    modules (theory, constructions, experiments) that its code names, directly or through the
    helper functions of its own module, in the order they are first named."""
    check = inspect.unwrap(c.check)
    entries = []
    declared = _id_line(c)
    if declared is not None:
        entries.append((*declared, c.id))
    entries.append((*_source_line(check), f"{check.__module__}.{check.__qualname__}"))
    entries += [(*_source_line(obj), f"{obj.__module__}.{obj.__qualname__}")
                for obj in _derivations(check)]
    lines: dict[tuple[str, int], list[str]] = {}
    for path, line, what in entries:
        lines.setdefault((path, line), []).append(what)
    return [f"{shown_path(path)}:{line} {', '.join(whats)}" for (path, line), whats in lines.items()]


def _source_line(obj: object) -> tuple[str, int]:
    """(file, first line) of a function (its first decorator's line) or a class."""
    path = inspect.getsourcefile(obj) or inspect.getfile(obj)
    if isinstance(obj, types.FunctionType):
        return path, obj.__code__.co_firstlineno
    return path, inspect.getsourcelines(obj)[1]


def _id_line(c: Claim) -> tuple[str, int] | None:
    """(file, line) of the first line of the claim's module that writes its id as a string."""
    module = sys.modules.get(c.module) or importlib.import_module(c.module)
    path = inspect.getsourcefile(module)
    if path is None:
        return None
    quoted = (f'"{c.id}"', f"'{c.id}'")
    for number, text in enumerate(linecache.getlines(path), start=1):
        if any(q in text for q in quoted):
            return path, number
    return None


def _derivations(check: Callable) -> list[object]:
    """Functions and classes of other ``resharpen`` modules that ``check`` names, following the
    helper functions of the check's own module."""
    home = check.__module__
    visited: set[types.CodeType] = set()
    found: list[object] = []

    def visit(function: types.FunctionType) -> None:
        if function.__code__ in visited:
            return
        visited.add(function.__code__)
        cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
        closure = {}
        for name, cell in cells.items():
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        for obj in _named_objects(function.__code__, function.__globals__, closure):
            obj = inspect.unwrap(obj) if callable(obj) else obj
            module = getattr(obj, "__module__", None) or ""
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if module == home and inspect.isfunction(obj):
                visit(obj)
            elif module.startswith("resharpen.") and module not in _MACHINERY \
                    and module != home and obj not in found:
                found.append(obj)

    visit(check)
    return found


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")
_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")


def _named_objects(code: types.CodeType, globals_: dict, closure: dict) -> Iterator[object]:
    """Every object that ``code`` (and the code nested in it) names: globals, closure cells and
    names imported in the function, with one level of attribute access (``module.function``)."""
    bound = dict(closure)  # names the function binds to imported objects
    instructions = list(dis.get_instructions(code))
    module: types.ModuleType | None = None  # of the import statement being read
    imported: object = None  # what it imports, until it is stored under a name
    for i, ins in enumerate(instructions):
        if ins.opname == "IMPORT_NAME":
            imported = _module(ins.argval)
            module = imported
        elif ins.opname == "IMPORT_FROM" and module is not None:
            imported = getattr(module, ins.argval, None)
            if imported is None:
                imported = _module(f"{module.__name__}.{ins.argval}")
        elif ins.opname in _STORES and imported is not None:
            bound[ins.argval] = imported
            yield imported
            imported = None
        elif ins.opname in _LOADS:
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                obj = globals_.get(ins.argval)
            else:
                obj = bound.get(ins.argval)
            if obj is None:
                continue
            following = instructions[i + 1] if i + 1 < len(instructions) else None
            if inspect.ismodule(obj) and following is not None \
                    and following.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                obj = getattr(obj, following.argval, None)
            if obj is not None:
                yield obj
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _named_objects(const, globals_, bound)


def _module(name: str) -> types.ModuleType | None:
    """The module ``name`` (imported if it is not yet), or None when it cannot be imported."""
    try:
        return sys.modules.get(name) or importlib.import_module(name)
    except (ImportError, ValueError):  # ValueError: a relative import's empty name
        return None
