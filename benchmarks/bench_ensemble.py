"""Batched ensembles vs one model at a time: runs per minute, ratio, GFLOP/s vs the matmul peak.

    python benchmarks/bench_ensemble.py [--steps 40] [--threads 0] [--quick]
        [--batch B ...] [--k K ...] [--sweep-workers 2]

For per-model batch sizes 8, 32, 128 and the sweep's default 64, and K = 16, 64 models of the sweep's default shape
(one-layer attention-only, v = 64, d = 64, L_train = 16) it times ``steps`` training steps of

- sequential: an ordinary nn.Module + torch.optim.AdamW, one model after the other;
- batched: resharpen.experiments.set_complement.ensemble.Ensemble (the stacked forward, batched AdamW), eager;
- compiled: the same under torch.compile (forward + backward and the AdamW update);
- auto: the path resharpen.experiments.set_complement.ensemble.train_ensemble picks for that configuration;

and prints runs per minute (a "run" = set-up + the sweep's 2000 steps, from the measured set-up
time and per-step time; for the compiled path also its compilation, measured in this process:
cold on a fresh machine, from PyTorch's on-disk cache after that), the batched / sequential
and compiled / sequential ratios, the auto / sequential ratio, and the achieved training
GFLOP/s of the auto path's steps (analytic matmul FLOPs, resharpen.experiments.set_complement.ensemble.train_flops) as a
fraction of the measured fp32 matmul peak (a 1024 x 1024 x 1024 torch.mm with the same
threads). Times are the best of 3 repeats after a warm-up (like the peak, the attainable
speed: on a shared virtual machine single timings of the same step vary by up to 2x).

Last (not with ``--quick``), the sweep's layout: ``--sweep-workers`` (default 2, as
``resharpen sweep --workers 2``) processes with one thread each (``train.threads = 1``) each
train a K = 16 ensemble at the default batch, in lock-step (a barrier before every timed
part); in each of 3 windows all workers first measure their one-thread matmul peak at once,
then time their training steps at once, and the window's fraction is summed training GFLOP/s
over summed peaks: peak and work measured in the same minute, so the VM's drift cancels.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from resharpen.experiments.set_complement import ensemble as E
from resharpen.experiments.set_complement import train as T

BASE = Path(__file__).resolve().parents[1] / "experiments" / "configs" / "set_complement" / "base.toml"
SWEEP_STEPS = 2000
SWEEP_K = 16  # the ensemble size of the sweep configs (placements_grid.toml)


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


def time_run(path: str, cfg, train: dict, k: int, steps: int) -> float:
    """Seconds for one ``train_ensemble`` call: K models, ``steps`` steps on ``path``."""
    start = time.perf_counter()
    E.train_ensemble(cfg, list(range(k)), train=dict(train, steps=steps), train_len=16, path=path)
    return time.perf_counter() - start


def time_path(path: str, cfg, train: dict, k: int, steps: int) -> tuple[float, float, float]:
    """(seconds of first-call overhead beyond set-up, i.e. compilation; seconds of set-up;
    seconds per step) for K models on ``path``: a warm-up run of 1 step, then runs of 2 and
    ``2 + steps`` steps (each the best of 3); the difference is the per-step time, the rest is
    initialization and data set-up."""
    def run(n: int) -> float:
        return min(time_run(path, cfg, train, k, n) for _ in range(3))

    first = time_run(path, cfg, train, k, 1)
    short, long = run(2), run(2 + steps)
    per_step = max(long - short, 1e-9) / steps
    setup = max(short - 2 * per_step, 0.0)
    return max(first - setup - per_step, 0.0) if path == "compiled" else 0.0, setup, per_step


BARRIER_TIMEOUT = 600.0  # seconds a worker waits for the others before giving up
LAYOUT_WINDOWS = 3  # timing windows of the sweep layout
_BARRIER = None


def _set_barrier(barrier) -> None:
    global _BARRIER
    _BARRIER = barrier


def _layout_worker(args) -> list[tuple[float, float]]:
    """One sweep worker (one thread, the auto path) in LAYOUT_WINDOWS windows, every step in
    step with the other workers: its fp32 matmul peak (all workers measuring at once), then its
    training GFLOP/s from runs of 2 and 2 + steps steps. Returns (GFLOP/s, peak) per window. A
    failing worker breaks the barrier, so the others raise instead of waiting forever."""
    cfg, train, k, steps = args
    torch.set_num_threads(1)
    path = E.choose_path(train["batch_size"], 16, k, SWEEP_STEPS)

    def together(fn):
        _BARRIER.wait(timeout=BARRIER_TIMEOUT)
        return fn()

    def timed(n: int) -> float:
        return time_run(path, cfg, train, k, n)

    try:
        together(lambda: timed(1))  # warm-up, compilation
        windows = []
        for _ in range(LAYOUT_WINDOWS):
            peak = together(matmul_peak_gflops)
            short, long = together(lambda: timed(2)), together(lambda: timed(2 + steps))
            per_step = max(long - short, 1e-9) / steps
            windows.append((E.train_flops(cfg, train["batch_size"], 16) * k / per_step / 1e9,
                            peak))
        return windows
    except BaseException:
        _BARRIER.abort()
        raise


def sweep_layout(cfg, train: dict, k: int, steps: int, workers: int) -> list[tuple[float, float]]:
    """Per timing window: (summed training GFLOP/s, summed one-thread matmul peak) of
    ``workers`` processes training a K-model ensemble at once with one thread each, as
    ``resharpen sweep --workers N`` trains (``train.threads = 1``). Peak and training are
    measured in the same window, so the machine's drift (this VM's peak moves by up to 2x
    within minutes) cancels in their ratio."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    with ctx.Pool(workers, initializer=_set_barrier, initargs=(barrier,)) as pool:
        per_worker = pool.map(_layout_worker, [(cfg, train, k, steps)] * workers)
    return [tuple(map(sum, zip(*window))) for window in zip(*per_worker)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    parser.add_argument("--quick", action="store_true", help="batch 8 and 32, K = 16 only")
    parser.add_argument("--batch", type=int, nargs="+", default=None,
                        help="per-model batch sizes to time (default 8 32 64 128)")
    parser.add_argument("--k", type=int, nargs="+", default=None,
                        help="ensemble sizes to time (default 16 64)")
    parser.add_argument("--sweep-workers", type=int, default=2,
                        help="also time the sweep's layout: this many one-thread worker "
                             "processes training at once (0 = skip)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = T.load_config(BASE)
    cfg = T.sc_model_config(config)
    peak = matmul_peak_gflops()
    print(f"fp32 matmul peak {peak:.1f} GFLOP/s with {torch.get_num_threads()} threads; "
          f"model v={cfg.vocab} d={cfg.d_model} L_train=16, {args.steps} timed steps; "
          f"runs/min extrapolated to {SWEEP_STEPS}-step runs")
    print(f"{'batch':>5} {'K':>3} {'seq':>7} {'batched':>7} {'ratio':>5} {'compiled':>8} "
          f"{'ratio':>5} {'compile':>7} {'auto':>10} {'ratio':>5} {'GFLOP/s':>7} {'% peak':>6}"
          "   (runs/min; compile in s)")
    default_batch = config["train"]["batch_size"]  # the sweep's default configuration
    batches = args.batch or ((8, 32) if args.quick else tuple(sorted({8, 32, 128, default_batch})))
    ks = args.k or ((16,) if args.quick else (16, 64))
    for batch in batches:
        train = dict(config["train"], batch_size=batch, warmup=0)
        for k in ks:
            rate, per_step, compile_s = {}, {}, 0.0
            for path in ("sequential", "batched", "compiled"):
                compile_time, setup, per_step[path] = time_path(path, cfg, train, k, args.steps)
                compile_s = max(compile_s, compile_time)
                rate[path] = 60.0 / (compile_time + setup + per_step[path] * SWEEP_STEPS) * k
            auto = E.choose_path(batch, 16, k, SWEEP_STEPS)
            flops = E.train_flops(cfg, batch, 16) * k / per_step[auto] / 1e9
            seq = rate["sequential"]
            print(f"{batch:5d} {k:3d} {seq:7.1f} {rate['batched']:7.1f} {rate['batched'] / seq:5.2f} "
                  f"{rate['compiled']:8.1f} {rate['compiled'] / seq:5.2f} {compile_s:7.1f} "
                  f"{auto:>10} {rate[auto] / seq:5.2f} {flops:7.1f} {100 * flops / peak:5.1f}%"
                  + ("  <- sweep default" if batch == default_batch else ""), flush=True)
    layout = None
    if args.sweep_workers and not args.quick:
        layout = sweep_layout(cfg, dict(config["train"], warmup=0), SWEEP_K, args.steps,
                              args.sweep_workers)
    end_peak = matmul_peak_gflops()
    print(f"fp32 matmul peak re-measured after the table: {end_peak:.1f} GFLOP/s "
          "(the % column uses the first; a large drift means the machine was busy)")
    if layout:
        fractions = [rate / peak for rate, peak in layout]
        print(f"sweep layout: {args.sweep_workers} worker processes x 1 thread, each training "
              f"K = {SWEEP_K} models at batch {default_batch} "
              f"({E.choose_path(default_batch, 16, SWEEP_K, SWEEP_STEPS)} path); per window "
              "(training GFLOP/s summed over the workers / their one-thread peaks measured at "
              "once just before): " + ", ".join(
                  f"{rate:.1f}/{peak:.1f} = {100 * f:.1f}%" for (rate, peak), f in
                  zip(layout, fractions))
              + f"; median {100 * sorted(fractions)[len(fractions) // 2]:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
