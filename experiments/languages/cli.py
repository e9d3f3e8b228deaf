"""``resharpen langs``: train on any task of the suite, run the task x norm x seed grid, report.

    resharpen langs train dyck2 --set model.norm=post --set train.steps=500
    resharpen langs run --profile quick [--workers 2] [--backend ray --address auto]
    resharpen langs report out/sweeps/langs-quick
"""
from __future__ import annotations

import sys
from pathlib import Path

PROFILES = ("quick", "full")


def _parse_sets(items: list[str]) -> dict:
    """``section.key=value`` strings -> {section: {key: value}}; values parsed as TOML scalars."""
    import tomllib

    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.count(".") != 1:
            raise ValueError(f"--set expects SECTION.KEY=VALUE, got {item!r}")
        section, name = key.split(".")
        try:
            parsed = tomllib.loads(f"x = {value}")["x"]
        except tomllib.TOMLDecodeError:
            parsed = value  # a bare word: a string
        out.setdefault(section, {})[name] = parsed
    return out


def add_langs(sub) -> None:
    from resharpen.experiments.core.cli_args import positive_int

    p = sub.add_parser("langs", help="train on the task suite (languages, Othello); grid; report")
    actions = p.add_subparsers(dest="action", required=True)
    t = actions.add_parser("train", help="train one model on one task and print its summary")
    t.add_argument("task", help="task name (see `resharpen tasks list`)")
    t.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.KEY=VALUE", help="config override, e.g. model.norm=post")
    t.add_argument("--out", default=None, help="run folder (default out/runs/<name>)")
    r = actions.add_parser("run", help="run or resume the task x norm x seed grid")
    r.add_argument("--grid", default=None, help="grid TOML (default "
                   "experiments/configs/languages/grid.toml)")
    r.add_argument("--profile", choices=PROFILES, default="quick")
    r.add_argument("--workers", type=positive_int, default=2)
    r.add_argument("--backend", choices=("local", "ray"), default="local")
    r.add_argument("--address", default=None, help="Ray address ('auto'); ray backend only")
    r.add_argument("--only", action="append", metavar="TASK", help="run only these tasks now")
    r.add_argument("--out", default=None, help="grid folder (default out/sweeps/<name>)")
    r.add_argument("--no-report", action="store_true", help="skip the report")
    q = actions.add_parser("report", help="summary tables and per-task figures of a grid folder")
    q.add_argument("folder", help="grid folder, e.g. out/sweeps/langs-quick")
    q.add_argument("--no-figs", action="store_true", help="tables only")
    p.set_defaults(handler=run_langs)


def run_langs(args) -> int:
    if args.action == "train":
        return _train(args)
    if args.action == "run":
        from resharpen.experiments.languages.grid import GRID_DIR, run_grid

        root = run_grid(args.grid or GRID_DIR / "grid.toml", out=args.out, workers=args.workers,
                        backend=args.backend, address=args.address, profile=args.profile,
                        only=args.only)
        print(f"grid folder {root}", file=sys.stderr)
        if args.no_report:
            return 0
        return _report(root, figures=True)
    return _report(Path(args.folder), figures=not args.no_figs)


def _report(root: Path, figures: bool) -> int:
    from resharpen.experiments.languages.grid import report

    text, _ = report(root)
    print(text)
    if figures:
        from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

        for path in figures_of(root, root / "figs"):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _train(args) -> int:
    from resharpen.experiments.core.io import ensure_writable_dir
    from resharpen.experiments.languages.train import WEIGHTS, make_config, train
    from resharpen.experiments.core.train import save_run

    overrides = _parse_sets(args.overrides)
    overrides.setdefault("task", {})["name"] = args.task
    config = make_config(overrides)
    folder = Path(args.out) if args.out else Path("out") / "runs" / config["name"]
    ensure_writable_dir(folder)
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
        print(f"{kind:8} {b['id_illegal_mass']:8.4f} {b['ood_illegal_mass']:8.4f} "
              f"{b['ood_tv']:8.4f} {b['ood_kl']:8.4f} {b['ood_top1_illegal']:8.4f} "
              f"{b['lg_score']:5d}")
    print(f"saved to {folder}", file=sys.stderr)
    return 0
