"""What the training step's two shortcuts buy: the step as it was against the step as it is.

The work is one optimizer step of a v = 64 placement run (``fit_placements_v64.toml``: d = 128,
batch 64, sequences of 16 tokens, soft targets, BEMA and EMA updated every step), the raw
weights' forward, loss, backward, clipping, optimizer and averagers, one thread, no
evaluations. Two arms train side by side in one process on the same 50 batches, in alternating
blocks of ``--steps`` steps (so drift in the machine's speed falls on both):

- before: every position projected by W_Q, W_K, W_V; AdamW on torch's multi-tensor path;
- now: the first attention projects each distinct token once and gathers the rows back
  (:func:`resharpen.experiments.core.model.project`); AdamW as torch's fused kernel.

Prints ms per step of each arm and the ratio before / now per block pair, as min / median / max
over ``--repeats`` pairs, with the load average before and after.

    .venv/bin/python benchmarks/bench_train_step.py [--norm post] [--steps 100] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def arms(norm: str):
    """{arm: (training state, patch)}: the two states start from the same seeded weights."""
    import torch

    from resharpen.experiments.core import train as core_train
    from resharpen.experiments.core.config import CONFIG_DIR
    from resharpen.experiments.core.model import Transformer
    from resharpen.experiments.set_complement.config import load_config

    config = load_config(CONFIG_DIR / "set_complement" / "fit_placements_v64.toml",
                         [f"model.norm={norm}"])
    v, tr = config["task"]["vocab"], config["train"]
    fast = Transformer.token_rows

    def before() -> None:
        Transformer.token_rows = lambda self, tokens: None

    def now() -> None:
        Transformer.token_rows = fast

    fused_adamw = torch.optim.AdamW

    def multi_tensor_adamw(params, **kwargs):  # the AdamW the step used before
        return fused_adamw(params, **{**kwargs, "fused": None, "foreach": True})

    states = {}
    for name, patch in (("before", before), ("now", now)):
        torch.optim.AdamW = multi_tensor_adamw if name == "before" else fused_adamw
        try:
            model = core_train.seeded_model(config, vocab=v, max_len=v)
            states[name] = (core_train.members_state([model], [tr]), patch)
        finally:
            torch.optim.AdamW = fused_adamw
    assert states["before"][0].optimizer.defaults["foreach"] is True
    assert states["now"][0].optimizer.defaults["fused"] is True
    return config, states


def batches(config: dict, count: int = 50) -> list:
    from resharpen.experiments.set_complement.train import SetComplementStreams, target_batches

    v, tr = config["task"]["vocab"], config["train"]
    streams = SetComplementStreams(v, [tr["seed"]], tr["batch_size"],
                                   config["task"]["train_len"] + 1, count)
    make = target_batches(v, tr, None)
    return [make(streams.draw()[0]) for _ in range(count)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--norm", default="post",
                        choices=["none", "pre", "post", "attn_out", "peri"])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be >= 1")
    import torch

    torch.set_num_threads(1)
    config, states = arms(args.norm)
    data = batches(config)
    clip = config["train"]["grad_clip"]
    print(f"v = 64 {args.norm} training step, one thread, {args.steps} steps per block; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    step = {name: 0 for name in states}

    def block(name: str, steps: int) -> float:
        state, patch = states[name]
        patch()
        start = time.perf_counter()
        for _ in range(steps):
            step[name] += 1
            state.train_step(data[step[name] % len(data)], step[name], clip)
            state.update_averagers(step[name])
        return (time.perf_counter() - start) / steps * 1000

    for name in states:  # warm-up
        block(name, 10)
    times: dict[str, list[float]] = {name: [] for name in states}
    for _ in range(args.repeats):
        for name in states:
            times[name].append(block(name, args.steps))
    ratios = [b / n for b, n in zip(times["before"], times["now"])]
    for label, xs in (("before, ms/step", times["before"]), ("now, ms/step", times["now"]),
                      ("before / now", ratios)):
        print(f"{label:>16}: min {min(xs):.3g}  median {statistics.median(xs):.3g}  "
              f"max {max(xs):.3g}")
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
