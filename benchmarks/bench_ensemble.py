"""Batched ensembles vs one model at a time: runs per minute, ratio, GFLOP/s vs the matmul peak.

    python benchmarks/bench_ensemble.py [--steps 20] [--threads 0] [--quick]

For per-model batch sizes 8, 32, 128 and the sweep's default 64, and K = 16, 64 models of the sweep's default shape
(one-layer attention-only, v = 64, d = 64, L_train = 16) it times ``steps`` training steps of

- sequential: an ordinary nn.Module + torch.optim.AdamW, one model after the other;
- batched: experiments.ensemble.Ensemble (vmap over stacked weights, batched AdamW);
- auto: the path experiments.ensemble.train_ensemble picks for that configuration;

and prints runs per minute (a "run" = set-up + the sweep's 2000 steps, from the measured set-up
time and per-step time), the batched / sequential ratio, the auto / sequential ratio, and the
achieved training GFLOP/s of the steps (analytic matmul FLOPs, experiments.ensemble.train_flops)
as a fraction of the measured fp32 matmul peak (a 1024 x 1024 x 1024 torch.mm with the same
threads). Times are medians of 3 repeats after a warm-up; on a shared machine they are noisy.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from experiments import config as cfgmod  # noqa: E402
from experiments import ensemble as E  # noqa: E402
from experiments import train as T  # noqa: E402

BASE = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "set_complement" / "base.toml"
SWEEP_STEPS = 2000


def matmul_peak_gflops(n: int = 1024, repeats: int = 20) -> float:
    """Best of ``repeats`` n x n x n fp32 matmuls (the machine's attainable peak, not a mean)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / min(times) / 1e9


def time_path(path: str, cfg, train: dict, k: int, steps: int) -> tuple[float, float]:
    """(seconds of set-up, seconds per step) for K models on ``path``: a run of 2 steps and a
    run of ``2 + steps`` steps (each the median of 3 after a warm-up); the difference is the
    per-step time, the rest is initialization and data set-up."""
    def run(n: int) -> float:
        samples = []
        for _ in range(3):
            start = time.perf_counter()
            E.train_ensemble(cfg, list(range(k)), train=dict(train, steps=n), train_len=16,
                             path=path)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    E.train_ensemble(cfg, list(range(k)), train=dict(train, steps=1), train_len=16, path=path)
    short, long = run(2), run(2 + steps)
    per_step = max(long - short, 1e-9) / steps
    return max(short - 2 * per_step, 0.0), per_step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    parser.add_argument("--quick", action="store_true", help="batch 8 and 32, K = 16 only")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = cfgmod.load(BASE)
    cfg = T.model_config(config)
    peak = matmul_peak_gflops()
    print(f"fp32 matmul peak {peak:.1f} GFLOP/s with {torch.get_num_threads()} threads; "
          f"model v={cfg.vocab} d={cfg.d_model} L_train=16, {args.steps} timed steps; "
          f"runs/min extrapolated to {SWEEP_STEPS}-step runs")
    print(f"{'batch':>5} {'K':>3} {'seq runs/min':>12} {'batched':>9} {'ratio':>6} "
          f"{'auto path':>10} {'auto ratio':>10} {'GFLOP/s':>8} {'% peak':>7}")
    default_batch = config["train"]["batch_size"]  # the sweep's default configuration
    batches = (8, 32) if args.quick else tuple(sorted({8, 32, 128, default_batch}))
    ks = (16,) if args.quick else (16, 64)
    for batch in batches:
        train = dict(config["train"], batch_size=batch, warmup=0)
        for k in ks:
            seq_init, seq = time_path("sequential", cfg, train, k, args.steps)
            bat_init, bat = time_path("batched", cfg, train, k, args.steps)
            auto = E.choose_path(batch, 16, k)
            best = bat if auto == "batched" else seq
            flops = E.train_flops(cfg, batch, 16) * k
            per_min = lambda init, step: 60.0 / (init + step * SWEEP_STEPS) * k  # noqa: E731
            seq_rate, bat_rate = per_min(seq_init, seq), per_min(bat_init, bat)
            best_rate = bat_rate if auto == "batched" else seq_rate
            print(f"{batch:5d} {k:3d} {seq_rate:12.2f} {bat_rate:9.2f} {bat_rate / seq_rate:6.2f} "
                  f"{auto:>10} {best_rate / seq_rate:10.2f} {flops / best / 1e9:8.2f} "
                  f"{100 * flops / best / 1e9 / peak:6.1f}%"
                  + ("  <- sweep default" if batch == default_batch else ""), flush=True)
    print(f"fp32 matmul peak re-measured after the table: {matmul_peak_gflops():.1f} GFLOP/s "
          "(the % column uses the first; a large drift means the machine was busy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
