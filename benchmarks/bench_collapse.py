"""Throughput of the Post-Norm collapse stack simulation (experiments/collapse/stack.py).

Prints layer-samples per second and tokens per second of :func:`simulate` (the Transformer's
own blocks driven with forward hooks that measure t_sim per sublayer), against the bare block
loop without measurements (the hooks' overhead) and against float32 (the price of float64),
and the cost of the closure's recursion. Not asserted anywhere; run as a script:

    .venv/bin/python benchmarks/bench_collapse.py [--n 256] [--depth 12] [--samples 2]
"""
from __future__ import annotations

import argparse
import time

import torch

from resharpen.experiments.collapse.stack import StackConfig, build_stack, equal_correlation_input, simulate
from resharpen.theory.collapse.recursion import recursion


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--samples", type=int, default=2)
    args = parser.parse_args()
    cfg = StackConfig(n=args.n, d=args.n, depth=args.depth, samples=args.samples, mlp="swiglu")
    work = cfg.depth * cfg.samples

    t_sim = best_of(lambda: simulate(cfg))

    def bare(dtype):
        model = build_stack(cfg, dtype=dtype)
        x = equal_correlation_input(cfg.n, cfg.d, cfg.t0, cfg.samples, cfg.seed, dtype=dtype)

        def go():
            with torch.no_grad():
                h = x
                for block in model.blocks:
                    h, _ = block(h)
        return go

    t64, t32 = best_of(bare(torch.float64)), best_of(bare(torch.float32))
    t_build = best_of(lambda: build_stack(cfg))
    t_rec = best_of(lambda: recursion(cfg.n, 48, 0.09, 1 / 9, "post", xi=1 / 9), repeats=5)
    print(f"stack n = d = {cfg.n}, depth {cfg.depth}, {cfg.samples} samples, SwiGLU, "
          f"{torch.get_num_threads()} torch threads")
    rows = [("simulate (build + hooks + t_sim)", t_sim), ("  of which build_stack (init)", t_build),
            ("bare forward float64", t64), ("bare forward float32", t32)]
    for name, sec in rows:
        print(f"  {name:36s} {sec:8.3f} s  {work / sec:9.1f} layer-samples/s  "
              f"{work * cfg.n / sec:11.0f} tokens x layers/s")
    print(f"  measurement overhead  (simulate - build) / bare64 = {(t_sim - t_build) / t64:.2f}x")
    print(f"  float64 price         bare64 / bare32   = {t64 / t32:.2f}x")
    print(f"  recursion, 48 layers with FFN: {t_rec * 1e3:.2f} ms "
          f"({t_sim / t_rec:.0f}x cheaper than the simulation above)")


if __name__ == "__main__":
    main()
