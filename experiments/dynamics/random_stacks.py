"""The paper's random-weight stacks (arXiv 2510.22026, section 5, as summarized in the notes).

d = 512, one head, beta = sqrt(d), a fresh random (Q, K, V) per layer with i.i.d. N(0, 1/d)
entries (Kaiming-style), and the discrete update of each scheme (resharpen.experiments.dynamics.discrete)
with step h = 1 per layer. Records per layer: the mean pairwise cosine similarity of the tokens
and, for the schemes with radii, the mean token norm. Tokens start i.i.d. uniform on the sphere
with radius 1.

With fresh weights, Pre-LN's update x+ = x + A adds a nearly independent vector each layer, so the
norm grows like sqrt(layers) rather than the weight-tied theory's r ~ t; ``tied=True`` uses
Q = K = V = I in every layer (the setting of the theorems), where the norm grows linearly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resharpen.experiments.dynamics.particles import Dynamics, off_diagonal_mean, uniform_sphere
from resharpen.experiments.dynamics.discrete import layer_update
from resharpen.theory.dynamics.speed import SCHEMES, check_beta, check_d, check_n, check_scheme


@dataclass(frozen=True)
class StackRun:
    scheme: str
    cosine: np.ndarray      # (layers + 1,) mean pairwise cosine similarity
    norm: np.ndarray        # (layers + 1,) mean token norm


def run_stacks(schemes=SCHEMES, *, n: int = 64, d: int = 512, layers: int = 64,
               beta: float | None = None, seed: int = 0, tied: bool = False,
               mix_fraction: float = 0.25, alpha0: float = 1.0,
               progress: bool = False) -> dict[str, StackRun]:
    """Random stacks of the given schemes on identical draws: the same seed gives the same tokens
    and, layer by layer, the same (Q, K, V) for every scheme (drawn once, applied to all).
    Mix-LN switches to Pre-LN after mix_fraction of the layers; nGPT uses a constant alpha0."""
    schemes = [check_scheme(s) for s in ([schemes] if isinstance(schemes, str) else schemes)]
    check_n(n), check_d(d)
    if int(layers) != layers or layers < 1:
        raise ValueError(f"layers must be an integer >= 1, got {layers}")
    if not 0 <= mix_fraction <= 1:
        raise ValueError(f"mix_fraction must lie in [0, 1], got {mix_fraction}")
    beta = float(np.sqrt(d)) if beta is None else check_beta(beta)
    tau = max(mix_fraction * layers, 1e-9)
    dyns = {s: Dynamics(s, beta, tau=tau, alpha0=alpha0) for s in schemes}
    x0 = uniform_sphere(n, d, seed)
    xs = {s: x0 for s in schemes}
    cos = {s: [] for s in schemes}
    norm = {s: [] for s in schemes}

    def record(s, x):
        u = x / np.linalg.norm(x, axis=1, keepdims=True)
        cos[s].append(float(off_diagonal_mean(u @ u.T)))
        norm[s].append(float(np.linalg.norm(x, axis=1).mean()))

    for s in schemes:
        record(s, x0)
    weights = np.random.default_rng([seed, 1])
    scale = 1.0 / np.sqrt(d)
    from resharpen.experiments.common.progress import track

    for layer in track(range(int(layers)), desc=f"random stacks d={d}", unit="layer",
                       enabled=progress):
        if tied:
            Q = K = V = None
        else:
            Q, K, V = (weights.standard_normal((d, d)) * scale for _ in range(3))
        for s in schemes:
            xs[s] = layer_update(xs[s], float(layer), 1.0, dyns[s], Q, K, V)
            record(s, xs[s])
    return {s: StackRun(s, np.array(cos[s]), np.array(norm[s])) for s in schemes}


def norm_growth_exponent(norm: np.ndarray, first: int = 8) -> float:
    """Least-squares slope of log |x_l| against log l over layers l >= first (1 = linear growth,
    1/2 = random-walk growth)."""
    layers = np.arange(len(norm))
    mask = layers >= first
    return float(np.polyfit(np.log(layers[mask]), np.log(norm[mask]), 1)[0])
