"""The paper's random-weight stacks (arXiv 2510.22026, section 5, as summarized in the notes).

d = 512, one head, beta = sqrt(d), a fresh random (Q, K, V) per layer with i.i.d. N(0, 1/d)
entries (Kaiming-style), and the discrete update of each scheme (experiments.particles_discrete)
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

from experiments.particles import Dynamics, off_diagonal_mean, uniform_sphere
from experiments.particles_discrete import layer_update
from theory.norm_dynamics import SCHEMES, check_beta, check_d, check_n, check_scheme


@dataclass(frozen=True)
class StackRun:
    scheme: str
    cosine: np.ndarray      # (layers + 1,) mean pairwise cosine similarity
    norm: np.ndarray        # (layers + 1,) mean token norm


def run_stack(scheme: str, *, n: int = 64, d: int = 512, layers: int = 64, beta: float | None = None,
              seed: int = 0, tied: bool = False, mix_fraction: float = 0.25,
              alpha0: float = 1.0) -> StackRun:
    """One random stack. The same seed gives the same tokens and weights for every scheme, so the
    schemes are compared on identical draws. Mix-LN switches to Pre-LN after mix_fraction of the
    layers; nGPT uses a constant alpha0."""
    check_scheme(scheme), check_n(n), check_d(d)
    if int(layers) != layers or layers < 1:
        raise ValueError(f"layers must be an integer >= 1, got {layers}")
    if not 0 <= mix_fraction <= 1:
        raise ValueError(f"mix_fraction must lie in [0, 1], got {mix_fraction}")
    beta = float(np.sqrt(d)) if beta is None else check_beta(beta)
    tau = max(mix_fraction * layers, 1e-9)
    dyn = Dynamics(scheme, beta, tau=tau, alpha0=alpha0)
    x = uniform_sphere(n, d, seed)
    weights = np.random.default_rng([seed, 1])
    cos, norm = [], []

    def record(x):
        u = x / np.linalg.norm(x, axis=1, keepdims=True)
        cos.append(float(off_diagonal_mean(u @ u.T)))
        norm.append(float(np.linalg.norm(x, axis=1).mean()))

    record(x)
    scale = 1.0 / np.sqrt(d)
    for layer in range(int(layers)):
        if tied:
            Q = K = V = None
        else:
            Q, K, V = (weights.standard_normal((d, d)) * scale for _ in range(3))
        x = layer_update(x, float(layer), 1.0, dyn, Q, K, V)
        record(x)
    return StackRun(scheme, np.array(cos), np.array(norm))


def run_all_stacks(*, n: int = 64, d: int = 512, layers: int = 64, seed: int = 0,
                   tied: bool = False, progress: bool = True) -> dict[str, StackRun]:
    from tqdm import tqdm

    return {s: run_stack(s, n=n, d=d, layers=layers, seed=seed, tied=tied)
            for s in tqdm(SCHEMES, desc="random stacks", unit="scheme", disable=not progress or None)}


def norm_growth_exponent(norm: np.ndarray, first: int = 8) -> float:
    """Slope of log(|x_l| - |x_0| ... ) fitted as log |x_l| vs log l over layers >= first."""
    layers = np.arange(len(norm))
    mask = layers >= first
    return float(np.polyfit(np.log(layers[mask]), np.log(norm[mask]), 1)[0])
