"""What the training step's shortcuts buy: the step without the newest one against the step as it is.

The work is one optimizer step of a v = 64 placement run (``fit_placements_v64.toml``: d = 128,
batch 64, sequences of 16 tokens, soft targets, BEMA and EMA updated every step), the raw
weights' forward, loss, backward, clipping, optimizer and averagers, one thread, no
evaluations. Two arms train side by side in one process on the same 50 batches, in alternating
blocks of ``--steps`` steps (so drift in the machine's speed falls on both):

- before: the first attention projects each distinct token once and gathers the rows back
  (:func:`resharpen.experiments.model.transformer.project`), then mixes the values and applies W_O at
  every position (the step of 2026-12-03 morning, ``Attention.fold_value_output = False``);
- now: one head folds W_V W_O into the token table, so no (batch x seq) x d x d product is left
  (:meth:`resharpen.experiments.model.transformer.Attention.forward`).

``--members K`` (K > 1): the same for K v = 32 models stacked as one ensemble
(``fit_placements_v32.toml``, seeds 0..K-1: the engine, :mod:`resharpen.experiments.training.engine`,
as the v = 32 sweeps train them), ms per ensemble step.

Prints ms per step and minor page faults per step of each arm and the ratio before / now per block
pair, as min / median / max over ``--repeats`` pairs, with the load average before and after.

    .venv/bin/python benchmarks/bench_train_step.py [--norm post] [--steps 100] [--repeats 5]
                                                    [--members 1]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

from resharpen.experiments.model.schemes import FIRST


def arms(norm: str, members: int):
    """{arm: (training state, fold)}: the two states start from the same seeded weights; one
    v = 64 model, or ``members`` > 1 v = 32 models (seeds 0..members-1) stacked as one ensemble
    (``fit_placements_v32.toml``, as its sweep trains them)."""
    from resharpen.experiments.training import loop as core_train
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.set_complement.config import load_config

    name = "fit_placements_v64.toml" if members == 1 else "fit_placements_v32.toml"
    configs = [load_config(CONFIG_DIR / "set_complement" / name,
                           [f"model.norm={norm}", f"train.seed={seed}"], sweep_file=True)
               for seed in range(members)]
    v = configs[0]["task"]["vocab"]
    states = {arm: (core_train.members_state(
        [core_train.seeded_model(c, vocab=v, max_len=v) for c in configs],
        [c["train"] for c in configs]), fold)
        for arm, fold in (("before", False), ("now", True))}
    return configs, states


def batches(configs: list, count: int = 50) -> list:
    from resharpen.experiments.set_complement.train import SetComplementStreams, target_batches

    first = configs[0]
    v, tr = first["task"]["vocab"], first["train"]
    streams = SetComplementStreams(v, [c["train"]["seed"] for c in configs], tr["batch_size"],
                                   first["task"]["train_len"] + 1, count)
    make = target_batches(v, tr, None)
    return [make(streams.draw()[0] if len(configs) == 1 else streams.draw())
            for _ in range(count)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--norm", default="post",
                        choices=FIRST)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--members", type=int, default=1,
                        help="1: one v = 64 model; K > 1: K v = 32 models as one ensemble")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.members < 1:
        parser.error("--steps, --repeats and --members must be >= 1")
    import torch

    from resharpen.experiments.model.transformer import Attention

    torch.set_num_threads(1)
    configs, states = arms(args.norm, args.members)
    data = batches(configs)
    clip = configs[0]["train"]["grad_clip"]
    what = ("v = 64" if args.members == 1 else
            f"v = 32, an ensemble of {args.members} (ms per ensemble step)")
    print(f"{what} {args.norm} training step, one thread, {args.steps} steps per block; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    step = {name: 0 for name in states}
    faults: dict[str, list[float]] = {name: [] for name in states}

    def block(name: str, steps: int) -> float:
        state, fold = states[name]
        Attention.fold_value_output = fold
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        for _ in range(steps):
            step[name] += 1
            state.train_step(data[step[name] % len(data)], step[name], clip)
            state.update_averagers(step[name])
        elapsed = (time.perf_counter() - start) / steps * 1000
        faults[name].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps)
        return elapsed

    try:
        for name in states:  # warm-up
            block(name, 10)
        for name in states:
            faults[name].clear()
        times: dict[str, list[float]] = {name: [] for name in states}
        for _ in range(args.repeats):
            for name in states:
                times[name].append(block(name, args.steps))
    finally:
        Attention.fold_value_output = True
    ratios = [b / n for b, n in zip(times["before"], times["now"])]
    for label, xs in (("before, ms/step", times["before"]), ("now, ms/step", times["now"]),
                      ("before / now", ratios), ("faults/step, before", faults["before"]),
                      ("faults/step, now", faults["now"])):
        print(f"{label:>20}: min {min(xs):.3g}  median {statistics.median(xs):.3g}  "
              f"max {max(xs):.3g}")
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
