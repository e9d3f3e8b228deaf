"""The task suite: formal languages with several legal next tokens, and Othello.

``get_task(name, **params)`` builds a task by name; ``TASKS`` lists the names with their family;
``register(name, builder, family)`` adds one (a task of the package is one file and one line
below; a researcher's own, one :func:`register` call in their file, loaded with ``--plugin``).
Every task follows :class:`resharpen.experiments.tasks.base.Task`: a vocabulary, a seeded sampler that
draws every token uniformly from the legal-next set of its prefix, the exact legal-next sets of
every prefix (``legal_next``) and the exact targets (``targets``, uniform over those sets), and a
membership oracle written independently of the sampler. docs/tasks.md defines every language.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from resharpen.experiments.tasks.base import Task, count_members, legal_next_disagreements, uniform_choice

# name -> (builder, family, keyword parameters the builder accepts)
_BUILDERS: dict[str, tuple[Callable[..., Task], str, tuple[str, ...]]] = {}


def _register(name: str, builder: Callable[..., Task], family: str, params: tuple[str, ...] = ()):
    _BUILDERS[name] = (builder, family, params)
    if "TASKS" in globals():  # after the package's own tasks: a plug-in's
        TASKS[name] = family


def _languages() -> None:
    from resharpen.experiments.tasks.set_complement import MultisetComplement, SetComplement
    from resharpen.experiments.tasks.counter import Counting
    from resharpen.experiments.tasks.dyck import Dyck, ShuffleDyck
    from resharpen.experiments.tasks.tomita import Tomita

    for k in (1, 2, 3):
        _register(f"dyck{k}", partial(Dyck, k), "counter" if k == 1 else "context-free")
    _register("shuffle_dyck2", partial(ShuffleDyck, 2), "counter")
    _register("anbn", partial(Counting, 2), "counter")
    _register("anbncn", partial(Counting, 3), "counter")
    for number in range(1, 8):
        _register(f"tomita{number}", partial(Tomita, number), "regular")
    _register("set_complement", SetComplement, "finite", ("vocab",))
    _register("multiset_complement", MultisetComplement, "finite", ("vocab", "k"))


def _games() -> None:
    from resharpen.experiments.tasks.othello import Othello

    _register("othello", Othello, "game")
    _register("othello6", partial(Othello, 6), "game")  # the 6 x 6 board: the CPU study


_languages()
_games()

TASKS: dict[str, str] = {name: family for name, (_, family, _) in _BUILDERS.items()}
"""Every registered task name and its family (regular, counter, context-free, finite, game)."""

LANGUAGES = tuple(name for name, family in TASKS.items() if family != "game")
"""The package's own languages (every family but games)."""


def register(name: str, builder: Callable[..., Task], family: str,
             params: tuple[str, ...] = (), *, replace: bool = False) -> Callable[..., Task]:
    """Add the task ``name``: ``builder(**params)`` returns a :class:`Task` (a class or a
    function), ``family`` is its family (regular, counter, context-free, finite, game or one of
    your own), ``params`` the keyword parameters it accepts. ValueError for a taken name (unless
    ``replace``) or a bad entry; returns ``builder``."""
    from resharpen.experiments.common.names import check_name

    check_name(name, "task name")
    if name in _BUILDERS and not replace:
        raise ValueError(f"a task named {name!r} is already registered")
    if not callable(builder):
        raise ValueError(f"task {name!r}: builder must be callable (a Task class or a function "
                         f"returning a Task), got {type(builder).__name__}")
    if not isinstance(family, str) or not family:
        raise ValueError(f"task {name!r}: family must be a non-empty string, got {family!r}")
    if isinstance(params, str) or not all(isinstance(p, str) for p in params):
        raise ValueError(f"task {name!r}: params must be a tuple of parameter names, got "
                         f"{params!r}")
    _register(name, builder, family, tuple(params))
    return builder


def get_task(name: str, **params) -> Task:
    """The task registered as ``name``, built with ``params`` (e.g. ``vocab=32`` for
    set_complement). ValueError for an unknown name or parameter."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(_BUILDERS))}")
    builder, _, allowed = _BUILDERS[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        accepted = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"task {name!r} has no parameter {unknown[0]!r}; it accepts: {accepted}")
    return builder(**params)


__all__ = ["TASKS", "LANGUAGES", "Task", "get_task", "register", "count_members",
           "legal_next_disagreements", "uniform_choice"]
