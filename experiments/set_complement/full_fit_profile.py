"""The full profile of the ``fit.*`` claims in one command: every training it reads, then the claims.

    python -m resharpen.experiments.set_complement.full_fit_profile [--workers 2] [--dry-run]

The ``fit.*`` claims read, in their full profile, eight full sweeps of
``experiments/configs/set_complement/`` and the EMA-window protocol (:data:`TRAININGS`); a claim
whose data is missing is INCONCLUSIVE and names the command that makes it. This module runs those
commands, each with one worker, ``--workers`` of them at a time (a slot takes the next command as
soon as it is free, the longest first: :data:`TRAININGS` is in that order, by their measured
wall times, docs/run_times.md), then ``resharpen verify --profile full --only 'fit.*'`` with
``--workers`` ledger workers, which writes ``out/ledger_fit_full.json``. Each command is the one a user would
type (``resharpen sweep FILE --workers 1``): it resumes what is finished and refuses a folder that
holds another sweep, so a second call trains only what is missing. Wall and CPU seconds of every
step go to ``out/fit_full_times.json`` and to the terminal, a line per step as it ends, with the
machine's load average at the start and the end (a time is comparable across days only with the
machine's speed beside it: docs/training.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.common.io import atomic_write_json

SWEEPS = CONFIG_DIR / "set_complement"
TRAININGS = (
    ("fit_placements_v64_lr1e-2", ["sweep", str(SWEEPS / "fit_placements_v64_lr1e-2.toml")]),
    ("fit_placements_v64", ["sweep", str(SWEEPS / "fit_placements_v64.toml")]),
    ("fit_noise_v32", ["sweep", str(SWEEPS / "fit_noise_v32.toml")]),
    ("fit_placements_v32_lr1e-2", ["sweep", str(SWEEPS / "fit_placements_v32_lr1e-2.toml")]),
    ("fit_placements_v32", ["sweep", str(SWEEPS / "fit_placements_v32.toml")]),
    ("fit_noise_window_v32", None),  # the EMA-window protocol (its own module)
    ("fit_noise_soft_v32", ["sweep", str(SWEEPS / "fit_noise_soft_v32.toml")]),
    ("fit_post_k_sweep_v32", ["sweep", str(SWEEPS / "fit_post_k_sweep_v32.toml")]),
    ("fit_dropout_v32", ["sweep", str(SWEEPS / "fit_dropout_v32.toml")]),
    ("fit_post_large_k_v32", ["sweep", str(SWEEPS / "fit_post_large_k_v32.toml")]),  # a figure's
)
"""(name, ``resharpen`` arguments) of every training the full ``fit.*`` claims read, longest
first, and the large-K post arm that only fig_fit_margins draws; None: ``python -m resharpen.experiments.set_complement.ema_window --profile full``."""
LEDGER = Path("out/ledger_fit_full.json")
TIMES = Path("out/fit_full_times.json")


def command(arguments: list[str] | None) -> list[str]:
    """The command line of one training (one worker, no progress bar), or of the claims."""
    if arguments is None:
        return [sys.executable, "-m", "resharpen.experiments.set_complement.ema_window",
                "--profile", "full", "--workers", "1"]
    return [sys.executable, "-m", "resharpen", *arguments, "--workers", "1"]


def verify_command(workers: int) -> list[str]:
    return [sys.executable, "-m", "resharpen", "verify", "--profile", "full", "--only", "fit.*",
            "--workers", str(workers), "--json", str(LEDGER)]


def run_step(name: str, argv: list[str]) -> dict:
    """Run one command with its output to ``out/fit_full_logs/NAME.log``; its wall seconds and
    exit status."""
    log = Path("out/fit_full_logs") / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    wall = time.perf_counter()
    with open(log, "w") as out:
        status = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "TQDM_DISABLE": "1"}).returncode
    return {"name": name, "status": status, "wall_s": round(time.perf_counter() - wall, 1),
            "log": str(log)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2,
                        help="commands at a time, and ledger workers (default 2)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    steps = [(name, command(arguments)) for name, arguments in TRAININGS]
    if args.dry_run:
        for _, line in steps + [("verify", verify_command(args.workers))]:
            print(" ".join(line))
        return 0
    start, cpu, load_start = time.perf_counter(), os.times(), os.getloadavg()
    results = []
    with ThreadPoolExecutor(args.workers) as pool:
        for future in as_completed([pool.submit(run_step, *step) for step in steps]):
            result = future.result()
            results.append(result)
            print(f"{result['name']}: exit {result['status']}, {result['wall_s']} s wall "
                  f"(done at {time.perf_counter() - start:.0f} s)", flush=True)
    verify = run_step("verify", verify_command(args.workers))
    end = os.times()
    total = round(time.perf_counter() - start, 1)
    cpu_s = round(end.children_user - cpu.children_user + end.children_system
                  - cpu.children_system, 1)
    print(f"verify: exit {verify['status']}, {verify['wall_s']} s wall; total {total} s wall, "
          f"{cpu_s} s CPU", flush=True)
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(TIMES, {"total_wall_s": total, "cpu_s": cpu_s, "workers": args.workers,
                              "load_start": list(load_start), "load_end": list(os.getloadavg()),
                              "steps": results + [verify]})
    return 1 if any(r["status"] != 0 for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
