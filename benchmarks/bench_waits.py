"""Where a user waits: whole commands, each in a fresh process, as ratios measured in one run.

    python benchmarks/bench_waits.py [--repeats 3] [--vocab 4000] [--claim sc.theorem.two_over_s]

1. ``resharpen verify --only CLAIM`` (one cheap claim) against ``python -c "import torch"``
   (the floor of any command that computes with torch).
2. ``resharpen construct --vocab V`` with its default ``--lengths log`` (the last position of
   about 130 log-spaced lengths) against ``--lengths all`` (every length, one full forward pass:
   the evaluation ``construct`` ran before ``--lengths``).
3. With ``--before PYTHON`` (an older checkout's interpreter), the same two commands of that
   code as one more arm of each comparison.

Each command runs ``--repeats`` times, the arms of a comparison interleaved within a repeat (a
change of the machine's load hits both), in a temporary working folder (nothing is written
elsewhere). For each arm: wall seconds and peak resident memory (the process's own, from
``wait4``) as min / median / max; for each comparison the ratio of the medians and the
per-repeat ratios min / median / max; the load average before and after. The machine is
shared, so read the ratios, not the seconds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(argv: list[str], cwd: str) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of ``argv`` run to completion; SystemExit if it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {err.strip()[-500:]}")
    return wall, usage.ru_maxrss * 1024


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return " / ".join(fmt.format(x) for x in (min(values), statistics.median(values),
                                              max(values)))


def compare(name: str, arms: dict[str, list[str]], repeats: int) -> None:
    """Run the ``arms`` (label -> argv) interleaved ``repeats`` times; print each, and the ratio
    of each arm to the last one (the reference)."""
    walls = {label: [] for label in arms}
    peaks = {label: [] for label in arms}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench_waits_") as cwd:
        for _ in range(repeats):
            for label, argv in arms.items():
                wall, peak = run(argv, cwd)
                walls[label].append(wall)
                peaks[label].append(peak)
    print(f"{name} (load {load:.2f} -> {os.getloadavg()[0]:.2f}; min / median / max of "
          f"{repeats})")
    for label in arms:
        print(f"  {label:28s} wall {spread(walls[label])} s   peak "
              f"{spread([p / 2**30 for p in peaks[label]])} GiB")
    *others, reference = arms
    for label in others:
        ratios = [a / b for a, b in zip(walls[label], walls[reference])]
        median = statistics.median(walls[label]) / statistics.median(walls[reference])
        print(f"  ratio {label} / {reference}: {median:.2f}x of the medians; per repeat "
              f"{spread(ratios)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--claim", default="sc.theorem.two_over_s")
    parser.add_argument("--only", choices=("verify", "construct"), default=None)
    parser.add_argument("--before", metavar="PYTHON", default=None,
                        help="the interpreter of an installed older checkout (e.g. another "
                             "clone's .venv/bin/python): its verify and construct run as one "
                             "more arm, today's code against that one in the same run")
    args = parser.parse_args()
    python = [sys.executable]
    print(f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    verify = ["-m", "resharpen", "verify", "--only", args.claim]
    construct = ["-m", "resharpen", "construct", "--vocab", str(args.vocab), "--json", "r.json"]
    if args.only in (None, "verify"):
        arms = {f"verify --only {args.claim}": python + verify}
        if args.before:
            arms["before: the same verify"] = [args.before] + verify
        arms["python -c 'import torch'"] = python + ["-c", "import torch"]
        compare(f"verify --only {args.claim} against import torch", arms, args.repeats)
    if args.only in (None, "construct"):
        arms = {"--lengths log (default)": python + construct}
        if args.before:
            arms["before: construct (every length)"] = [args.before] + construct
        arms["--lengths all"] = python + construct + ["--lengths", "all"]
        compare(f"construct --vocab {args.vocab} (tight, norm none)", arms, args.repeats)


if __name__ == "__main__":
    main()
