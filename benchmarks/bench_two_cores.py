"""What the second core adds to the full fit.* profile: one training process alone against two at once.

The work is the training loop of one v = 64 placement run (``fit_placements_v64.toml``, post,
d = 128, batch 64, no evaluations), ``--steps`` steps in a fresh process with one thread, as a
sweep worker runs it. Each repeat times it alone, then as two identical processes started
together. Prints the milliseconds per step (the process's CPU time over its steps, after a
warm-up of 20 steps) as min / median / max over repeats, and the throughput of two processes
over one (2 x alone / together: 2.0 when the cores do not share anything, 1.0 when the second
core adds nothing), with the load average before and after.

    .venv/bin/python benchmarks/bench_two_cores.py [--steps 300] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = """
import time, torch
from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.set_complement.config import load_config
from resharpen.experiments.set_complement.train import train_group
torch.set_num_threads(1)
config = load_config(CONFIG_DIR / "set_complement" / "fit_placements_v64.toml", sweep_file=True)
config["model"]["norm"] = "post"
config["train"].update(converge_window=0, eval_every=0, steps=20)
config["fit"]["until_id_invalid_mass"] = 0.0
train_group([config])
config["train"]["steps"] = {steps} + 20
start = time.process_time()
train_group([config])
print((time.process_time() - start) / {steps} * 1000)
"""


def run(count: int, steps: int) -> list[float]:
    """ms per step of each of ``count`` processes started together (warm-up subtracted)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    code = WORKER.format(steps=steps)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=env) for _ in range(count)]
    return [float(p.communicate()[0].split()[-1]) for p in procs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be >= 1")
    print(f"v = 64 post training step, {args.steps} steps per process; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    alone, together, ratios = [], [], []
    for _ in range(args.repeats):
        one = run(1, args.steps)[0]
        two = run(2, args.steps)
        alone.append(one)
        together.extend(two)
        ratios.append(2 * one / statistics.mean(two))
    for name, xs in (("alone, ms/step", alone), ("two at once, ms/step", together),
                     ("throughput two / one", ratios)):
        print(f"{name:>22}: min {min(xs):.3g}  median {statistics.median(xs):.3g}  "
              f"max {max(xs):.3g}")
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
