"""``resharpen battery``: one normalization scheme through the package's experiments.

    resharpen battery --scheme my_norms.py:deepnet --out out/battery-deepnet --workers 2

Parsing imports nothing heavy: the handler imports torch when the battery runs.
"""
from __future__ import annotations

import sys

from resharpen.experiments.common.cli_args import MAX_WORKERS, PATH, bad_input, count


def add_battery(sub) -> None:
    from resharpen.experiments.battery.run import REFERENCES, SIZES

    p = sub.add_parser("battery", help="train and measure one normalization scheme (your own "
                                       "file's, or a registered one) beside the references")
    p.description = ("Trains the Set Complement fit grid and the language grid for the scheme "
                     f"beside {', '.join(REFERENCES)} (same seeds, each run "
                     "stopped at its config's fit), measures the similarity growth at "
                     "initialization and the first-layer displacement as the trained-dynamics "
                     "study does, and prints one table (OOD invalid mass at matched fit, paired "
                     "tests against each reference, the dynamics numbers), also written as "
                     "OUT/battery.md and OUT/battery.json. Rerun the same command to resume.")
    p.add_argument("--scheme", required=True, metavar="FILE.py:NAME",
                   help="the scheme NAME your Python file registers "
                        "(resharpen.experiments.model.schemes.register), an installed entry "
                        "point NAME of the group resharpen.schemes, or a registered scheme")
    p.add_argument("--out", required=True, metavar="DIR", type=PATH,
                   help="the battery folder: everything is written here, and a rerun resumes")
    p.add_argument("--profile", choices=tuple(SIZES), default="quick",
                   help="quick (default: minutes), full (hours) or tiny (under a minute: a "
                        "test, too small to decide)")
    p.add_argument("--workers", type=count(MAX_WORKERS), default=1,
                   help=f"train this many groups of runs at a time (default 1, at most "
                        f"{MAX_WORKERS})")
    p.set_defaults(handler=run_battery_cli)


def run_battery_cli(args) -> int:
    from resharpen.experiments.battery.run import prepare, run_battery
    from resharpen.experiments.battery.table import to_markdown

    with bad_input():  # the plug-in, the profile and the folder, before any work
        prepare(args.scheme, args.out, args.profile)
    result = run_battery(args.scheme, args.out, args.profile, args.workers)
    print(to_markdown(result))
    print(f"wrote {args.out}/battery.md and {args.out}/battery.json", file=sys.stderr)
    return 0
