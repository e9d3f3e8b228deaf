"""Theorem 4.2 of arXiv 2510.22026 by Monte Carlo: how fast tokens move at initialization.

With beta = 1, Q = K = V = I and theta_j i.i.d. uniform on S^{d-1}, in the range
e^{sqrt d} >= n log n >= d, the theorem bounds (with probability 1 - n^{-c}, Lean: c = 1, C = 128)

    max_j |A_j(0)| <= C (sqrt(log n / n) + log n / d).

Post-LN and Pre-LN tokens move at speed |P A| / s <= |A| (r0 = 1), which is small. Peri-LN
(|P A| / (r0 |A|)) and nGPT (alpha |P A| / |A|) move at speed |P A| / |A|, which is close to 1,
because A is nearly orthogonal to theta in high dimension.
"""
from __future__ import annotations

import math

import numpy as np

from resharpen.experiments.dynamics.particles import attention, uniform_sphere


def initial_velocity_grid(grid, seeds=(0, 1, 2), progress: bool = False):
    """Rows (n, d, ratio, projection): ratio = max over seeds and tokens of
    |A_j(0)| / (sqrt(log n/n) + log n/d), projection = mean over seeds of mean|PA| / mean|A|.
    ValueError for an (n, d) outside the theorem's range."""
    from resharpen.experiments.common.progress import track

    rows = []
    for n, d in track(list(grid), desc="Thm 4.2 Monte Carlo", unit="(n,d)", enabled=progress):
        if not (math.exp(math.sqrt(d)) >= n * math.log(n) >= d):
            raise ValueError(f"(n, d) = ({n}, {d}) violates e^sqrt(d) >= n log n >= d")
        ratio, proj = 0.0, []
        for seed in seeds:
            theta = uniform_sphere(n, d, seed=seed)
            A = attention(theta, 1.0)
            norms = np.linalg.norm(A, axis=1)
            PA = A - np.einsum("ij,ij->i", theta, A)[:, None] * theta
            ratio = max(ratio, norms.max() / (math.sqrt(math.log(n) / n) + math.log(n) / d))
            proj.append(np.linalg.norm(PA, axis=1).mean() / norms.mean())
        rows.append((n, d, float(ratio), float(np.mean(proj))))
    return rows
