"""Start-up time of the command line: `resharpen --help`, every `resharpen <cmd> --help`, and
the answer to a misspelt claim pattern or config name (exit 2 with a suggestion).

Each is run in a fresh interpreter (``python -m resharpen ...``, as the console script does),
``--repeats`` times; the median wall time is printed with its ratio to a 1 s budget, beside the time of a bare ``python -c pass`` (the interpreter's own start). Parsing
imports no torch, sympy, scipy, matplotlib or numpy (tests/core/test_cli.py checks that). Not
asserted anywhere; run as a script:

    .venv/bin/python benchmarks/bench_cli.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

BUDGET = 1.0  # seconds, for `resharpen --help` and `resharpen <cmd> --help`


MISSPELT = (["verify", "--only", "sc.theorm*"], ["verify", "--where", "sc.theorem.two_ovr_s"],
            ["train", "set_complement/fit_placement_v32"])
"""Misspelt arguments the command line answers with the closest known name (exit 2)."""


def median_seconds(argv: list[str], repeats: int, status: int = 0) -> float:
    """Median wall time of ``argv`` run to completion in a fresh process (output discarded),
    which must exit with ``status``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != status:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return statistics.median(times)


def commands() -> list[str]:
    from resharpen.cli import build_parser

    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (median)")
    args = parser.parse_args()
    python = [sys.executable]
    baseline = median_seconds(python + ["-c", "pass"], args.repeats)
    print(f"{'command':50s} {'median s':>9s} {'/ budget':>9s}")
    print(f"{'python -c pass (interpreter)':50s} {baseline:9.3f} {baseline / BUDGET:9.2f}")
    worst = 0.0
    for cmd in [[]] + [[c] for c in commands()]:
        seconds = median_seconds(python + ["-m", "resharpen", *cmd, "--help"], args.repeats)
        worst = max(worst, seconds)
        label = " ".join(["resharpen", *cmd, "--help"])
        print(f"{label:50s} {seconds:9.3f} {seconds / BUDGET:9.2f}")
    for cmd in MISSPELT:
        seconds = median_seconds(python + ["-m", "resharpen", *cmd], args.repeats, status=2)
        worst = max(worst, seconds)
        label = " ".join(["resharpen", *cmd])
        print(f"{label:50s} {seconds:9.3f} {seconds / BUDGET:9.2f}")
    print(f"slowest: {worst:.3f} s = {worst / BUDGET:.2f} x the {BUDGET:g} s budget "
          f"({'within' if worst < BUDGET else 'OVER'} budget)")


if __name__ == "__main__":
    main()
