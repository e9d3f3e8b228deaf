"""Start-up time of the command line: `resharpen --help` and every `resharpen <cmd> --help`.

Each is run in a fresh interpreter (``python -m resharpen ...``, as the console script does),
``--repeats`` times; the median wall time is printed with its ratio to the 1 s budget of
issue 12, beside the time of a bare ``python -c pass`` (the interpreter's own start). Parsing
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


def median_seconds(argv: list[str], repeats: int) -> float:
    """Median wall time of ``argv`` run to completion in a fresh process (output discarded)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
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
    print(f"{'command':34s} {'median s':>9s} {'/ budget':>9s}")
    print(f"{'python -c pass (interpreter)':34s} {baseline:9.3f} {baseline / BUDGET:9.2f}")
    worst = 0.0
    for cmd in [[]] + [[c] for c in commands()]:
        seconds = median_seconds(python + ["-m", "resharpen", *cmd, "--help"], args.repeats)
        worst = max(worst, seconds)
        label = " ".join(["resharpen", *cmd, "--help"])
        print(f"{label:34s} {seconds:9.3f} {seconds / BUDGET:9.2f}")
    print(f"slowest: {worst:.3f} s = {worst / BUDGET:.2f} x the {BUDGET:g} s budget "
          f"({'within' if worst < BUDGET else 'OVER'} budget)")


if __name__ == "__main__":
    main()
