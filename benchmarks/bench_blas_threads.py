"""What one BLAS thread saves a small dense solve on a busy machine: ``scipy.linalg.lstsq`` of a
(2 v^2) x (3 v - 1) design, the problem post's effective K solved at every evaluation until the
lemma fit (:func:`resharpen.experiments.set_complement.compare.fit_lemma`) took its closed form
(issue 22: about 0.2 ms instead of about 90 ms at v = 64). Timed in CPU seconds of this process
with OpenBLAS/MKL limited to one thread and left at their default (one per core), the two
interleaved within each repeat; prints min / median / max over repeats of each and of their
ratio, with the load average before and after. The training code limits both pools to
``train.threads`` (:func:`resharpen.experiments.training.loop.limit_threads`).

    .venv/bin/python benchmarks/bench_blas_threads.py [--vocab 64] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def cpu_seconds(call) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    import scipy.linalg

    rng = np.random.default_rng(0)
    v = args.vocab
    design, target = rng.standard_normal((2 * v * v, 3 * v - 1)), rng.standard_normal(2 * v * v)

    def solve():
        return scipy.linalg.lstsq(design, target)
    default = max(pool["num_threads"] for pool in threadpool_info())
    print(f"v = {v}; BLAS pools {[p['internal_api'] for p in threadpool_info()]}, default "
          f"{default} threads; load {os.getloadavg()[0]:.2f}")
    one, many = [], []
    for _ in range(args.repeats):
        with threadpool_limits(1):
            one.append(cpu_seconds(solve))
        many.append(cpu_seconds(solve))
    ratios = [m / o for m, o in zip(many, one)]
    for name, xs in (("1 thread, CPU s", one), (f"{default} threads, CPU s", many),
                     ("ratio default / 1", ratios)):
        print(f"{name:>22}: min {min(xs):.4g}  median {statistics.median(xs):.4g}  "
              f"max {max(xs):.4g}")
    print(f"load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
