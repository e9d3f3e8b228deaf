"""Where to read a claim: ``resharpen verify --where ID``.

:func:`where` names the line of the claim's module that writes its id, the check, and every
derivation the check uses (the functions and classes of other ``resharpen`` modules it names,
followed through the helper functions of its own module and of the analysis modules of the
claims modules, :func:`is_claims_analysis`). The mutation test (:mod:`.mutation`) breaks those
derivations one at a time (:func:`derivations`).

:func:`reached` follows the same reading through every ``resharpen`` module, and
:func:`shared_functions` compares the two sides of a check: the theory and construction
functions that both a claim's declared derivation (``@claim(derived_by=...)``) and its
measurement reach (tests/core/test_expected_origin.py).
"""
from __future__ import annotations

import dis
import importlib
import inspect
import linecache
import sys
import types
from typing import Callable, Iterable, Iterator

from resharpen.experiments.ledger.registry import Claim
from resharpen.experiments.common.package_files import shown

_MACHINERY = ("resharpen.experiments.ledger.registry", "resharpen.experiments.ledger.runner",
              "resharpen.experiments.ledger.where", "resharpen.experiments.ledger.report",
              "resharpen.experiments.common.profiles")
"""Modules whose functions are the ledger's own machinery (``Outcome``, ``pick``), not derivations
a check uses. The statistics that decide (:mod:`.stats`) are listed as derivations; the mutation
test leaves them out (``mutants.NOT_SUBJECTS``)."""

CLAIMS_ANALYSIS = "CLAIMS_ANALYSIS"
"""The module attribute (set to True) that marks a module as the analysis of claims modules
(:func:`is_claims_analysis`)."""


def is_claims_analysis(module_name: str) -> bool:
    """Whether ``module_name`` is an analysis module of the claims modules: one that sets
    ``CLAIMS_ANALYSIS = True`` because it holds what a claims module's checks call to read their
    data, make their tests and format their details (sweep loaders, multiple-testing families,
    simulations whose numbers a check decides on). Its functions are read as the check's own
    code: followed through, never derivations themselves, so a check reads the same whether its
    helpers sit in the claims module or here."""
    module = sys.modules.get(module_name)
    return module is not None and getattr(module, CLAIMS_ANALYSIS, False) is True


def where(c: Claim) -> list[str]:
    """Where to read a claim: ``"path:line what"`` lines, paths relative to the package (``experiments/set_complement/claims.py``), the same from any folder.

    First the line of the claim's module where its id is written (for a check made by a factory,
    the line that calls the factory with that id), then the check function (its ``@claim`` line),
    then every derivation the check uses: the functions and classes of other ``resharpen``
    modules (theory, constructions, experiments) that its code names, directly or through the
    helper functions of its own module and of the claims' analysis modules
    (:func:`is_claims_analysis`), in the order they are first named."""
    check = inspect.unwrap(c.check)
    entries = []
    declared = _id_line(c)
    if declared is not None:
        entries.append((*declared, c.id))
    entries.append((*_source_line(check), f"{check.__module__}.{check.__qualname__}"))
    entries += [(*_source_line(obj), f"{obj.__module__}.{obj.__qualname__}")
                for obj in derivations(check)]
    lines: dict[tuple[str, int], list[str]] = {}
    for path, line, what in entries:
        lines.setdefault((path, line), []).append(what)
    return [f"{shown(path)}:{line} {', '.join(whats)}" for (path, line), whats in lines.items()]


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


def derivations(check: Callable) -> list[object]:
    """Functions and classes of other ``resharpen`` modules that ``check`` names, following the
    helper functions of the check's own module and of the claims' analysis modules (whose
    functions and classes are the check's own code, not derivations)."""
    home = check.__module__
    visited: set[types.CodeType] = set()
    found: list[object] = []

    def visit(function: types.FunctionType) -> None:
        if function.__code__ in visited:
            return
        visited.add(function.__code__)
        closure = _closure(function)
        for obj in _named_objects(function.__code__, function.__globals__, closure):
            obj = inspect.unwrap(obj) if callable(obj) else obj
            module = getattr(obj, "__module__", None) or ""
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            own = module == home or is_claims_analysis(module)
            if own and inspect.isfunction(obj):
                visit(obj)
            elif module.startswith("resharpen.") and module not in _MACHINERY \
                    and not own and obj not in found:
                found.append(obj)

    visit(check)
    return found


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")
_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")


def _closure(function: types.FunctionType) -> dict[str, object]:
    """The names a function closes over, with their values (an empty cell left out)."""
    closure = {}
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return closure


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


# ----------------------------------------------------------------------------- reach
SHARED_SCOPE = ("resharpen.theory.", "resharpen.constructions.")
"""The modules whose functions an expectation and its measurement must not share
(:func:`shared_functions`): the theory and the constructions."""
VALIDATORS = ("check_", "_check_")
"""Name prefixes of the argument validators of the theory modules (``check_n``, ``_check_t``):
they raise on a bad argument or return it as given, computing nothing, so both sides calling
one is not a shared derivation (:func:`shared_functions` leaves them out)."""


def resolve(name: str) -> object:
    """The object a ``"resharpen.<module>.<qualname>"`` name denotes (the longest importable
    module prefix, then attributes); ValueError when there is none."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = _module(".".join(parts[:cut]))
        if module is None:
            continue
        obj: object = module
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            break
        return inspect.unwrap(obj) if callable(obj) else obj
    raise ValueError(f"{name!r} names no importable resharpen function")


def reached(start: Callable, stop: Iterable[object] = ()) -> list[types.FunctionType]:
    """Every ``resharpen`` function that ``start`` reaches by name: the functions its code names
    (as :func:`derivations` reads them: globals, closure cells, imports in the body, one
    attribute of a module, nested code), then theirs, through every ``resharpen`` module but the
    ledger's machinery; a class counts by the functions, static and class methods and property
    getters of its body; the functions held in a module-level tuple, list or dict (a table of
    schemes, say) count as named. ``stop``: objects that the code of ``start``'s own module
    (``start`` and the helpers of its module and of the claims' analysis modules,
    :func:`is_claims_analysis`) does not enter or record (the declared derivation,
    when the measurement's reach is asked); reached from any other module they count, so a
    measurement that calls the derivation itself shares it. ``start`` itself is not recorded.

    The analysis is static: a function reached only through an argument (a callable passed in)
    or an instance's attribute is not seen unless some visited code names it."""
    stopped = {id(_unwrapped_safe(s)) for s in stop}
    home = getattr(_unwrapped_safe(start), "__module__", "")
    seen: set[int] = set()
    found: list[types.FunctionType] = []

    def functions_of(obj: object) -> list[types.FunctionType]:
        obj = _unwrapped_safe(obj)
        if isinstance(obj, types.FunctionType):
            return [obj]
        if inspect.isclass(obj):
            out = []
            for member in vars(obj).values():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                member = _unwrapped_safe(member)
                if isinstance(member, types.FunctionType):
                    out.append(member)
            return out
        if isinstance(obj, (tuple, list)):
            return [f for item in obj if isinstance(_unwrapped_safe(item), types.FunctionType)
                    for f in functions_of(item)]
        if isinstance(obj, dict):
            return [f for item in obj.values()
                    if isinstance(_unwrapped_safe(item), types.FunctionType)
                    for f in functions_of(item)]
        return []

    def visit(function: types.FunctionType, record: bool) -> None:
        if id(function) in seen:
            return
        module = getattr(function, "__module__", "") or ""
        if record and (not module.startswith("resharpen.") or module in _MACHINERY):
            return
        seen.add(id(function))
        if record:
            found.append(function)
        closure = _closure(function)
        at_home = module == home or is_claims_analysis(module)
        for obj in _named_objects(function.__code__, function.__globals__, closure):
            if at_home and id(_unwrapped_safe(obj)) in stopped:
                continue
            for f in functions_of(obj):
                if not (at_home and id(f) in stopped):
                    visit(f, True)

    visit(_unwrapped_safe(start), False)
    return found


def shared_functions(check: Callable, derivations: Iterable[object],
                     comparators: dict[object, Iterable[object]] | None = None) -> list[str]:
    """The theory and construction functions (:data:`SHARED_SCOPE`) that both sides of a check
    reach: the declared derivations (each one and what it reaches) and the rest of the check
    (what it reaches with the derivations stopped), argument validators (:data:`VALIDATORS`)
    left out. Empty when the expectation is independent of the measurement as far as the static
    reach sees.

    ``comparators``: {function: its measurement routes} for a helper that computes both sides
    and compares them (``report.construction_errors``: the prediction by the formulas, the
    measurement by building and running the model); the measurement side then reaches through
    the routes instead of the comparator, and the comparator's prediction counts as the
    derivation."""
    derivations = [_unwrapped_safe(d) for d in derivations]
    comparators = {_unwrapped_safe(k): [_unwrapped_safe(r) for r in v]
                   for k, v in (comparators or {}).items()}
    side: dict[int, types.FunctionType] = {}
    for d in derivations:
        for f in ([d] if isinstance(d, types.FunctionType) else []) + reached(d):
            side[id(f)] = f
    measurement = reached(check, stop=derivations + list(comparators))
    if any(id(f) in {id(c) for c in comparators} for f in reached(check)):
        for comparator, routes in comparators.items():
            for route in routes:
                measurement += [route] + reached(route)
    return sorted({f"{f.__module__}.{f.__qualname__}" for f in measurement
                   if id(f) in side and f.__module__.startswith(SHARED_SCOPE)
                   and not f.__name__.startswith(VALIDATORS)})


def _unwrapped_safe(obj: object) -> object:
    try:
        return inspect.unwrap(obj) if callable(obj) else obj
    except Exception:  # a cycle of __wrapped__, or attributes that raise
        return obj
