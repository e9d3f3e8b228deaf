"""The task suite: formal languages with several legal next tokens, and Othello.

``get_task(name, **params)`` builds a task by name; ``TASKS`` lists the names with their family.
Every task follows :class:`resharpen.experiments.core.tasks.Task`: a vocabulary, a seeded sampler that
draws every token uniformly from the legal-next set of its prefix, the exact legal-next sets of
every prefix (``legal_next``) and the exact targets (``targets``, uniform over those sets), and a
membership oracle written independently of the sampler. docs/tasks.md defines every language.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from resharpen.experiments.core.tasks import Task, count_members, legal_next_disagreements, uniform_choice

# name -> (builder, family, keyword parameters the builder accepts)
_BUILDERS: dict[str, tuple[Callable[..., Task], str, tuple[str, ...]]] = {}


def _register(name: str, builder: Callable[..., Task], family: str, params: tuple[str, ...] = ()):
    _BUILDERS[name] = (builder, family, params)


def _languages() -> None:
    from resharpen.experiments.languages.complement import MultisetComplement, SetComplement
    from resharpen.experiments.languages.counter import Counting
    from resharpen.experiments.languages.dyck import Dyck, ShuffleDyck
    from resharpen.experiments.languages.tomita import Tomita

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
    from resharpen.experiments.languages.othello import Othello

    _register("othello", Othello, "game")


_languages()
_games()

TASKS: dict[str, str] = {name: family for name, (_, family, _) in _BUILDERS.items()}
"""Every registered task name and its family (regular, counter, context-free, finite, game)."""

LANGUAGES = tuple(name for name, family in TASKS.items() if family != "game")


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


__all__ = ["TASKS", "LANGUAGES", "Task", "get_task", "count_members",
           "legal_next_disagreements", "uniform_choice"]


# ---------------------------------------------------------------------------- command line
def add_tasks(sub) -> None:
    """``resharpen tasks``: list the tasks, print samples with their legal-next sets, run perft,
    or write random Othello games to a .npy file."""
    p = sub.add_parser("tasks", help="the task suite: list, sample, perft, othello games")
    actions = p.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every task with its family, vocabulary and longest length")
    s = actions.add_parser("sample", help="print sampled sequences (and their legal-next sets)")
    s.add_argument("name", help="task name (see `resharpen tasks list`)")
    s.add_argument("--count", type=int, default=4)
    s.add_argument("--length", type=int, default=16)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--param", action="append", default=[], metavar="KEY=INT",
                   help="task parameter, e.g. vocab=32 (repeatable)")
    s.add_argument("--sets", action="store_true", help="also print the legal-next set per prefix")
    q = actions.add_parser("perft", help="Othello perft from the initial position")
    q.add_argument("--depth", type=int, default=6)
    g = actions.add_parser("games", help="write random Othello games (int8, PAD = 0) to .npy")
    g.add_argument("--count", type=int, default=100_000)
    g.add_argument("--length", type=int, default=60)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True, help="output .npy file")
    p.set_defaults(handler=run_tasks)


def _parse_params(items: list[str]) -> dict[str, int]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param expects KEY=INT, got {item!r}")
        try:
            params[key] = int(value)
        except ValueError:
            raise ValueError(f"--param {key} expects an integer, got {value!r}") from None
    return params


def run_tasks(args) -> int:
    import io
    import sys
    import time

    import numpy as np

    if args.action == "list":
        for name, family in TASKS.items():
            task = get_task(name)
            longest = task.max_length if task.max_length is not None else "any"
            vocab = " ".join(task.vocab) if task.size <= 16 else f"{task.size} tokens"
            print(f"{name:20s} {family:13s} length {str(longest):>4s}  vocab {vocab}")
        return 0
    if args.action == "sample":
        task = get_task(args.name, **_parse_params(args.param))
        seqs = task.sample(args.count, args.length, args.seed)
        masks = task.legal_next(seqs) if args.sets else None
        for b, row in enumerate(seqs):
            print(task.decode(row))
            if masks is not None:
                first = " ".join(task.vocab[i] for i in np.flatnonzero(task.initial_legal()))
                print(f"  {'':>12s} -> {{{first}}}")
                for i in range(len(row)):
                    legal = " ".join(task.vocab[j] for j in np.flatnonzero(masks[b, i]))
                    print(f"  {task.decode(row[max(0, i - 11):i + 1]):>12s} -> {{{legal}}}")
        return 0
    if args.action == "perft":
        from resharpen.experiments.languages.othello import perft

        start = time.perf_counter()
        print(f"perft({args.depth}) = {perft(args.depth)}  ({time.perf_counter() - start:.2f} s)")
        return 0
    # games
    from pathlib import Path

    from resharpen.experiments.core.io import atomic_write_bytes, ensure_writable_dir

    ensure_writable_dir(Path(args.out).parent)
    task = get_task("othello")
    start = time.perf_counter()
    games = task.sample(args.count, args.length, args.seed).astype(np.int8)
    seconds = time.perf_counter() - start
    buffer = io.BytesIO()
    np.save(buffer, games)
    atomic_write_bytes(args.out, buffer.getvalue())
    print(f"wrote {args.count} games of up to {args.length} moves to {args.out} in {seconds:.1f} s "
          f"({args.count / seconds:.0f} games/s)", file=sys.stderr)
    return 0
