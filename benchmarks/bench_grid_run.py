"""Where one run of the full language grid spends its time: the training step, the data (fresh
sequences and their exact legal-next sets), the stopping rule's fit checks, and the final float64
evaluation at every length.

One grid config (``languages/grid``, full profile; default ``dyck2-pre-s0``) is trained for
``--steps`` steps under ``cProfile`` with its stopping rule set out of reach, so every record
step runs the fit checks of the raw, EMA and BEMA weights (as a run that has not reached its fit
does); one torch thread. Prints each part's cumulative time and its share of the run. Not
asserted anywhere; run as a script:

    .venv/bin/python benchmarks/bench_grid_run.py [--run dyck2-pre-s0] [--steps 400]
"""
from __future__ import annotations

import argparse
import copy
import cProfile
import os
import pstats
import time

PARTS = {  # part -> (file suffix, function name) of the function whose cumulative time it is
    "training steps (forward, backward, AdamW)": ("training/loop.py", "train_step"),
    "data (sequences and legal-next sets)": ("training/next_token.py", "next_batch"),
    "fit checks at record steps (float64)": ("training/next_token.py", "record"),
}
"""The final evaluation is every call of ``evaluate`` but those the fit checks make."""


def cumulative(stats: dict, suffix: str, name: str) -> float:
    """The largest cumulative time of a function ``name`` defined in a file ending ``suffix``
    (the outermost, where one name is defined twice)."""
    return max((value[3] for (path, _, func), value in stats.items()
                if path.endswith(suffix) and func == name), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="dyck2-pre-s0", help="a run name of the full grid")
    parser.add_argument("--steps", type=int, default=400, help="training steps (default 400)")
    args = parser.parse_args()

    import torch

    from resharpen.experiments.languages.grid import load_grid
    from resharpen.experiments.training.next_token import train

    torch.set_num_threads(1)
    configs = {c["name"]: c for c in load_grid("languages/grid", "full")["configs"]}
    if args.run not in configs:
        raise SystemExit(f"no run {args.run!r} in the full grid")
    config = copy.deepcopy(configs[args.run])
    config["train"]["steps"] = args.steps
    config["fit"]["until_id_invalid_mass"] = 1e-12  # out of reach: every record step checks
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    train(config, progress=False)
    profile.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profile).stats
    print(f"{args.run}, {args.steps} steps, one thread, load {os.getloadavg()[0]:.2f}: "
          f"{total:.1f} s")
    parts = {part: cumulative(stats, *where) for part, where in PARTS.items()}
    parts["final evaluation, every length (float64)"] = (
        cumulative(stats, "training/next_token.py", "evaluate")
        - cumulative(stats, "training/next_token.py", "fit_measure"))
    accounted = 0.0
    for part, seconds in parts.items():
        accounted += seconds
        print(f"  {part:55s} {seconds:7.2f} s  {seconds / total:6.1%}")
    print(f"  {'the rest (model setup, copies, bookkeeping)':55s} {total - accounted:7.2f} s  "
          f"{(total - accounted) / total:6.1%}")


if __name__ == "__main__":
    main()
