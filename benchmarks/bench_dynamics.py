"""Time the hot paths of the normalization-dynamics module and print them against their budgets.

1. The six symmetric scalar ODEs (beta = 5, n = 256) to t = 2000: budget 2 s together.
2. A particle simulation of NA with n = d = 256 to t = 50: budget 60 s (Post-LN and Pre-LN).
3. One evaluation of the vectorized right-hand side against a per-particle Python loop.

Run: .venv/bin/python benchmarks/bench_dynamics.py  (timings are printed, never asserted).

BLAS runs single-threaded unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say otherwise: the
matrices here are small (256 x 256), and on a shared 2-core machine a multi-threaded BLAS that
competes with other processes was measured 5x slower on the particle simulation (44 ms instead of
8 ms per field evaluation at load 9).
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # before numpy is imported

import time  # noqa: E402

import numpy as np  # noqa: E402

from resharpen.experiments.dynamics import particles as P  # noqa: E402
from resharpen.theory.dynamics import speed as nd  # noqa: E402
from resharpen.theory.dynamics import ode  # noqa: E402


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def six_odes():
    return [ode.solve_symmetric(s, 5.0, 256, 2000.0) for s in nd.SCHEMES]


def loop_velocity(theta, r, beta):
    """Post-LN NA velocity one particle at a time (the reference the vectorized code replaces)."""
    out = np.empty_like(theta)
    for j in range(theta.shape[0]):
        w = np.exp(beta * theta @ theta[j] - beta * (theta @ theta[j]).max())
        a = (w / w.sum()) @ theta
        out[j] = a - (theta[j] @ a) * theta[j]
    return out


def main() -> None:
    print(f"BLAS threads: OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    nd.F_num(0.0, 1.0, 2)                      # build the lambdified twins outside the timing
    t_ode, _ = timed(six_odes, repeat=3)
    print(f"six symmetric ODEs to t=2000 (beta=5, n=256): {t_ode:7.3f} s  "
          f"budget 2 s  ratio {t_ode / 2:.3f}")
    theta0 = P.uniform_sphere(256, 256, seed=0)
    for scheme in ("postln", "preln"):
        t_sim, tr = timed(lambda: P.simulate(P.Dynamics(scheme, 1.0), theta0, 50.0, progress=True))
        print(f"particles n=d=256 to t=50 ({scheme}, beta=1): {t_sim:7.3f} s  budget 60 s  "
              f"ratio {t_sim / 60:.3f}  ({tr.nfev} field evaluations, "
              f"{1e3 * t_sim / tr.nfev:.2f} ms each)")
    r = np.ones(256)
    dyn = P.Dynamics("postln", 1.0)
    t_vec, v = timed(lambda: P.velocity(0.0, theta0, r, dyn)[0], repeat=5)
    t_loop, w = timed(lambda: loop_velocity(theta0, r, 1.0), repeat=2)
    assert np.allclose(v, w, atol=1e-12)
    print(f"one NA right-hand side, n=d=256: vectorized {1e3 * t_vec:.2f} ms, per-particle loop "
          f"{1e3 * t_loop:.2f} ms, speed-up {t_loop / t_vec:.1f}x")


if __name__ == "__main__":
    main()
