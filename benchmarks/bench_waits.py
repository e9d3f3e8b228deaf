"""Where a user waits: whole commands, each in a fresh process, as ratios measured in one run.

    python benchmarks/bench_waits.py [--repeats 3] [--vocab 4000] [--claim ID ...]

1. ``resharpen verify --only CLAIM`` for one cheap claim of each kind, a symbolic (sympy) claim
   and a numeric theory claim (``--claim`` names others, repeatable), against
   ``python -c "import torch"`` (the floor of any command that computes with torch). The target
   is a ratio of at most 1.5 (:data:`TARGET`); a claim without a model imports no torch, so it
   can come in under 1. A claim on the torch model pays for torch itself and cannot.
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

TARGET = 1.5
"""The most a cheap claim's ``verify --only`` may take, in units of ``import torch``."""
CLAIMS = {"sc.metrics.closed_forms": "symbolic: sympy proves the metrics' closed forms",
          "sc.readout.reconstruction_regression": "numeric: the theory's numpy twin of the "
                                                  "readout margins"}
"""The default claims of the first comparison, one cheap claim of each kind, with a note."""


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


def compare(name: str, arms: dict[str, list[str]], repeats: int,
            target: float | None = None) -> None:
    """Run the ``arms`` (label -> argv) interleaved ``repeats`` times; print each, and the ratio
    of each arm to the last one (the reference), with whether the median of the per-repeat
    ratios is at most ``target`` when one is given."""
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
    width = max(len(label) for label in arms)
    for label in arms:
        print(f"  {label:{width}s} wall {spread(walls[label])} s   peak "
              f"{spread([p / 2**30 for p in peaks[label]])} GiB")
    *others, reference = arms
    for label in others:
        ratios = [a / b for a, b in zip(walls[label], walls[reference])]
        median = statistics.median(walls[label]) / statistics.median(walls[reference])
        verdict = "" if target is None else (
            f"; target <= {target:g}x {'met' if statistics.median(ratios) <= target else 'NOT met'}")
        print(f"  ratio {label} / {reference}: {median:.2f}x of the medians; per repeat "
              f"{spread(ratios)}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--claim", action="append", default=None, metavar="ID",
                        help="a claim to time instead of the defaults (repeatable); the "
                             "defaults: " + "; ".join(f"{c} ({note})" for c, note in CLAIMS.items()))
    parser.add_argument("--only", choices=("verify", "construct"), default=None)
    parser.add_argument("--before", metavar="PYTHON", default=None,
                        help="the interpreter of an installed older checkout (e.g. another "
                             "clone's .venv/bin/python): its verify and construct run as one "
                             "more arm, today's code against that one in the same run")
    args = parser.parse_args()
    python = [sys.executable]
    print(f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    construct = ["-m", "resharpen", "construct", "--vocab", str(args.vocab), "--json", "r.json"]
    if args.only in (None, "verify"):
        arms = {}
        for claim in args.claim or CLAIMS:
            verify = ["-m", "resharpen", "verify", "--only", claim]
            arms[f"verify --only {claim}"] = python + verify
            if args.before:
                arms[f"before: verify --only {claim}"] = [args.before] + verify
        arms["python -c 'import torch'"] = python + ["-c", "import torch"]
        for claim in args.claim or CLAIMS:
            print(f"{claim}: {CLAIMS.get(claim, 'named by --claim')}")
        compare("verify --only ONE_CLAIM against import torch", arms, args.repeats, TARGET)
    if args.only in (None, "construct"):
        arms = {"--lengths log (default)": python + construct}
        if args.before:
            arms["before: construct (every length)"] = [args.before] + construct
        arms["--lengths all"] = python + construct + ["--lengths", "all"]
        compare(f"construct --vocab {args.vocab} (tight, norm none)", arms, args.repeats)


if __name__ == "__main__":
    main()
