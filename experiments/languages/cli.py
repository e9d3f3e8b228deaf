"""``resharpen langs``: train on any task of the suite, run the task x norm x seed grid, report;
``resharpen tasks``: list the tasks, print samples, run perft, write Othello games.

    resharpen langs train dyck2 --set model.norm=post --set train.steps=500
    resharpen langs run --profile quick [--workers 2] [--backend ray --address auto]
    resharpen langs report out/sweeps/langs-quick
    resharpen langs compare out/sweeps/langs-paper out/sweeps/langs-paper-rope
    resharpen tasks sample dyck2 --count 2 --sets

Parsing imports nothing heavy: the handlers import the task registry, numpy and torch.
"""
from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Callable

from resharpen.experiments.common import limits
from resharpen.experiments.common.cli_args import (add_backend_options, PATH, PATTERN, UsageError,
                                                  bad_input, count, seed_int)
from resharpen.experiments.common.limits import add_max_memory
from resharpen.experiments.common.profiles import PROFILES
from resharpen.experiments.training.config import SWEEP_FIELDS
from resharpen.experiments.training.plugins import add_plugin_option, load_plugins

MAX_ENSEMBLE = SWEEP_FIELDS["ensemble"].hi
MAX_SAMPLES = 10**6  # tasks sample --count: sequences printed to the terminal
MAX_LENGTH = 10**6  # tasks sample --length (each task also has its own longest length)
MAX_PERFT_DEPTH = 9  # experiments/tasks/othello.perft's own limit
MAX_GAMES = 10**8  # tasks games --count (also bounded by --max-memory)


def add_langs(sub, figures: Callable[[Path], list[Path]] | None = None) -> None:
    """``resharpen langs``; ``figures(folder)`` draws a grid's per-task figures into
    ``folder/figs`` and returns the files written. The front (:mod:`resharpen.cli`) passes it:
    the figures belong to paper_figs, which the experiments do not import."""
    p = sub.add_parser("langs", help="train on the task suite (languages, Othello); grid; report")
    actions = p.add_subparsers(dest="action", required=True)
    t = actions.add_parser("train", help="train one model on one task and print its summary")
    t.add_argument("task", type=PATTERN, help="task name (see `resharpen tasks list`)")
    t.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.KEY=VALUE",
                   help="config override, e.g. model.norm=post (repeatable; the task is the "
                        "positional argument, not task.name)")
    t.add_argument("--out", default=None, type=PATH, help="run folder (default out/runs/<name>)")
    add_plugin_option(t)
    r = actions.add_parser("run", help="run or resume the task x norm x seed grid")
    r.add_argument("--grid", default=None, type=PATH,
                   help="grid TOML, or the name of a packaged grid "
                   "(languages/grid, languages/othello, languages/long; `resharpen configs`; "
                   "a file that exists wins; default languages/grid)")
    r.add_argument("--profile", choices=PROFILES, default="quick",
                   help="apply the grid file's [profile.<name>] tables: quick (the default, "
                        "minutes on 2 cores) or full")
    add_backend_options(r)
    r.add_argument("--only", action="append", metavar="TASK", type=PATTERN,
                   help="run only these tasks now")
    r.add_argument("--out", default=None, type=PATH,
                   help="grid folder (default out/sweeps/<name>)")
    r.add_argument("--ensemble", type=count(MAX_ENSEMBLE), default=None,
                   help="train up to this many runs of one task and placement (they differ in "
                        "seed) as one batched ensemble (default: the grid's sweep.ensemble; "
                        f"1 = every run alone; at most {MAX_ENSEMBLE})")
    r.add_argument("--no-report", action="store_true", help="skip the report")
    add_plugin_option(r)
    q = actions.add_parser("report", help="summary tables and per-task figures of a grid folder")
    q.add_argument("folder", type=PATH, help="grid folder, e.g. out/sweeps/langs-quick")
    q.add_argument("--no-figs", action="store_true", help="tables only")
    c = actions.add_parser("compare", help="two grids of the same tasks, schemes and seeds, "
                           "compared run by run (B - A, paired by seed, Holm over the cells)")
    c.add_argument("grid_a", type=PATH, help="grid folder A, e.g. out/sweeps/langs-paper")
    c.add_argument("grid_b", type=PATH, help="grid folder B, e.g. out/sweeps/langs-paper-rope")
    c.add_argument("--metric", default="ood_invalid_mass", type=PATTERN,
                   help="a column of the grid table (default ood_invalid_mass)")
    c.add_argument("--weights", choices=("raw", "ema", "bema"), default="raw",
                   help="the weight set compared: raw (the default), EMA or BEMA")
    p.set_defaults(handler=partial(run_langs, figures=figures))


def run_langs(args, figures: Callable[[Path], list[Path]] | None = None) -> int:
    if args.action == "train":
        return _train(args)
    if args.action == "run":
        from resharpen.experiments.training.backends import check_backend
        from resharpen.experiments.training.config import sweep_folder
        from resharpen.experiments.training.sweep import REPORT_FILES
        from resharpen.experiments.common.io import check_folder_files, check_writable_target

        with bad_input():  # the backend, the grid file, --only and --out, before any write
            load_plugins(args.plugin)
            check_backend(args.backend, args.address)
            from resharpen.experiments.languages.grid import GRID_DIR, load_grid, run_grid

            grid = args.grid or GRID_DIR / "grid.toml"
            planned = load_grid(grid, args.profile)
            unknown = sorted(set(args.only or ()) - {c["task"]["name"] for c in planned["configs"]})
            if unknown:
                raise UsageError(f"--only {unknown[0]!r} is not a task of grid {planned['name']!r}")
            what = "--out" if args.out else "grid folder"
            folder = args.out or sweep_folder(planned["name"])
            # the report written after the runs: its files checked before them
            check_folder_files(folder, () if args.no_report else REPORT_FILES, what)
            from resharpen.experiments.common.folder_kinds import check_kind

            check_kind(folder, "sweep", what)
            check_writable_target(folder, what)
        root = run_grid(grid, out=args.out, workers=args.workers,
                        backend=args.backend, address=args.address, profile=args.profile,
                        only=args.only, ensemble=args.ensemble)
        print(f"grid folder {root}", file=sys.stderr)
        if args.no_report:
            return 0
        return _report(root, figures)
    if args.action == "compare":
        return _compare(args)
    return _report(Path(args.folder), None if args.no_figs else figures)


def check_task_grid(root: Path, required: bool = False) -> None:
    """UsageError unless ``root``'s sweep.json marks a task grid (when ``required``, also when
    it has none)."""
    from resharpen.experiments.common.stored import read_json

    marker = root / "sweep.json"
    if not marker.is_file():
        if required:
            raise UsageError(f"{str(root)!r} is not a task grid folder (no sweep.json; run: "
                             "resharpen langs run)")
        return
    kind = read_json(marker, "grid file")
    if not isinstance(kind, dict) or kind.get("kind") != "task_grid":
        raise UsageError(f"{str(root)!r} is not a task grid folder (its sweep.json is another "
                         "kind of sweep: a Set Complement sweep is reported by `resharpen "
                         "report`)")


def _compare(args) -> int:
    from resharpen.experiments.languages.compare_grids import compare_grids, compare_table

    with bad_input():  # both folders task grids with finished runs, the metric a column
        for folder in (args.grid_a, args.grid_b):
            check_task_grid(Path(folder), required=True)
        rows = compare_grids(args.grid_a, args.grid_b, args.metric, args.weights)
    print(compare_table(rows, args.grid_a, args.grid_b, args.metric))
    return 0


def _report(root: Path, figures: Callable[[Path], list[Path]] | None) -> int:
    from resharpen.experiments.languages.grid import report, table_rows

    from resharpen.experiments.common.io import check_folder_files
    from resharpen.experiments.training.sweep import REPORT_FILES

    with bad_input():  # a grid folder (its sweep.json says so), its runs readable
        check_task_grid(root)
        check_folder_files(root, REPORT_FILES, "grid folder")
        if figures is not None:  # no figure through a link out of the folder
            from resharpen.experiments.common.io import check_within

            check_within(root, root / "figs", "figures folder")
        rows = table_rows(root)
    if not rows:
        raise UsageError(f"{str(root)!r} holds no finished runs: is it a grid folder? "
                         "(run: resharpen langs run)")
    text, _ = report(root)
    print(text)
    for path in figures(root) if figures is not None else []:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _train(args) -> int:
    from resharpen.experiments.training.config import parse_sets, run_folder
    from resharpen.experiments.training.next_token_config import make_config
    from resharpen.experiments.training.runs import check_run_folder

    with bad_input():  # the task, the overrides and the run folder, before torch
        load_plugins(args.plugin)
        overrides = parse_sets(args.overrides)
        if "name" in overrides.get("task", {}):  # it would be replaced by the positional task
            raise UsageError(f"--set task.name={overrides['task']['name']} has no effect: the "
                             f"task is the positional argument (langs train TASK, here "
                             f"{args.task!r})")
        overrides.setdefault("task", {})["name"] = args.task
        config = make_config(overrides)
        folder = Path(args.out) if args.out else run_folder(config["name"])
        # creates nothing: save_run makes the folder
        check_run_folder(folder, "--out" if args.out else "run folder", config)
    from resharpen.experiments.training.loop import WEIGHTS, save_run
    from resharpen.experiments.training.next_token import train

    result = train(config)
    save_run(result, folder)
    s, t = result["summary"], config["task"]
    print(f"{t['name']} norm={config['model']['norm']} L_train={t['train_len']} "
          f"L_eval={t['eval_len']} ({s['seconds']:.1f} s); ID = 1..{t['train_len']}, "
          f"OOD = {t['train_len'] + 1}..{t['eval_len']}")
    print(f"{'weights':8} {'ID ill':>8} {'OOD ill':>8} {'OOD TV':>8} {'OOD KL':>8} "
          f"{'OOD top1':>8} {'LG':>5}")
    for kind in WEIGHTS:
        b = s["by_weights"][kind]
        print(f"{kind:8} {b['id_invalid_mass']:8.4f} {b['ood_invalid_mass']:8.4f} "
              f"{b['ood_tv']:8.4f} {b['ood_kl']:8.4f} {b['ood_top1_invalid']:8.4f} "
              f"{b['lg_score']:5d}")
    print(f"saved to {folder}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- resharpen tasks
def add_tasks(sub) -> None:
    """``resharpen tasks``: list the tasks, print samples with their legal-next sets, run perft,
    or write random Othello games to a .npy file."""
    p = sub.add_parser("tasks", help="the task suite: list, sample, perft, othello games")
    actions = p.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every task with its family, vocabulary and longest length")
    s = actions.add_parser("sample", help="print sampled sequences (and their legal-next sets)")
    s.add_argument("name", type=PATTERN, help="task name (see `resharpen tasks list`)")
    s.add_argument("--count", type=count(MAX_SAMPLES), default=4,
                   help=f"sequences to print (default 4, at most {MAX_SAMPLES:,})")
    s.add_argument("--length", type=count(MAX_LENGTH), default=16,
                   help=f"tokens per sequence (default 16; at most {MAX_LENGTH:,} and the "
                        "task's longest)")
    s.add_argument("--seed", type=seed_int, default=0, help="seed of the samples (default 0)")
    s.add_argument("--param", action="append", default=[], metavar="KEY=INT",
                   help="task parameter, e.g. vocab=32 (repeatable)")
    s.add_argument("--sets", action="store_true", help="also print the legal-next set per prefix")
    add_max_memory(s)
    q = actions.add_parser("perft", help="Othello perft from the initial position")
    q.add_argument("--depth", type=count(MAX_PERFT_DEPTH, low=0), default=6,
                   help=f"plies from the initial position (default 6, at most {MAX_PERFT_DEPTH}: "
                        "the frontier is held in memory)")
    g = actions.add_parser("games", help="write random Othello games (int8, PAD = 0) to .npy")
    g.add_argument("--count", type=count(MAX_GAMES), default=100_000,
                   help=f"games to play (default 100,000, at most {MAX_GAMES:,})")
    g.add_argument("--length", type=count(60), default=60,
                   help="moves per game (default 60, at most 60)")
    g.add_argument("--seed", type=seed_int, default=0, help="seed of the games (default 0)")
    g.add_argument("--out", required=True, type=PATH, help="output .npy file")
    add_max_memory(g)
    p.set_defaults(handler=run_tasks)


def _parse_params(items: list[str]) -> dict[str, int]:
    """``KEY=INT`` strings -> {key: int}."""
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=INT, got {item!r}")
        try:
            params[key] = int(value)
        except ValueError:
            raise UsageError(f"--param {key} expects an integer, got {value!r}") from None
    return params


def _check_sample_args(task, count: int, length: int, seed: int) -> None:
    """The checks ``task.sample`` makes of its arguments (ValueError), made before sampling."""
    from resharpen.experiments.tasks.base import check_int, make_rng

    check_int("count", count, 1)
    task.check_length(length)
    make_rng(seed)


def run_tasks(args) -> int:
    import io
    import time

    import numpy as np

    from resharpen.experiments.tasks.registry import TASKS, get_task

    if args.action == "list":
        for name, family in TASKS.items():
            task = get_task(name)
            longest = task.max_length if task.max_length is not None else "any"
            vocab = " ".join(task.vocab) if task.size <= 16 else f"{task.size} tokens"
            print(f"{name:20s} {family:13s} length {str(longest):>4s}  vocab {vocab}")
        return 0
    if args.action == "sample":
        with bad_input():  # the task, its parameters, the count, length and seed
            task = get_task(args.name, **_parse_params(args.param))
            _check_sample_args(task, args.count, args.length, args.seed)
            limits.require(limits.sample_bytes(args.count, args.length, task.size, args.sets),
                           f"tasks sample --count {args.count} --length {args.length}",
                           args.max_memory)
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
        from resharpen.experiments.tasks.othello import perft

        start = time.perf_counter()
        with bad_input():  # perft checks its depth and runs in a moment
            leaves = perft(args.depth)
        print(f"perft({args.depth}) = {leaves}  ({time.perf_counter() - start:.2f} s)")
        return 0
    # games
    from resharpen.experiments.common.io import atomic_write_bytes, check_output_file

    task = get_task("othello")
    with bad_input():  # the output folder, the count, length and seed, before the games
        check_output_file(args.out, "--out")
        _check_sample_args(task, args.count, args.length, args.seed)
        limits.require(limits.sample_bytes(args.count, args.length, task.size),
                       f"tasks games --count {args.count} --length {args.length}", args.max_memory)
    start = time.perf_counter()
    games = task.sample(args.count, args.length, args.seed).astype(np.int8)
    seconds = time.perf_counter() - start
    buffer = io.BytesIO()
    np.save(buffer, games)
    atomic_write_bytes(args.out, buffer.getvalue())
    print(f"wrote {args.count} games of up to {args.length} moves to {args.out} in {seconds:.1f} s "
          f"({args.count / seconds:.0f} games/s)", file=sys.stderr)
    return 0
