"""Particle simulator of the normalized attention dynamics (NA) of arXiv 2510.22026.

State: directions Theta in R^{n x d} (rows on S^{d-1}) and radii r in R^n. With

    A_j = sum_k softmax_k(beta <Q theta_j, K theta_k>) V theta_k,

the dynamics are theta_j' = P_{theta_j} A_j / s_j and r_j' as in Table 2 (see
:mod:`resharpen.theory.dynamics.speed` for the table). The right-hand side is vectorized over particles
(three matrix products per evaluation) and integrated in float64 with
``scipy.integrate.solve_ivp``. Radii are tracked for every scheme (they stay constant where the
table says r' = 0).

``speed_fn`` replaces the scheme's speed factor by a given function of time (sphere-constrained
dynamics theta' = P A / s(t)), which is what the time-change proposition is stated for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp

from resharpen.theory.dynamics.speed import (check_alpha_schedule, check_beta, check_horizon, check_n,
                                  check_positive, check_scheme)


@dataclass(frozen=True)
class Dynamics:
    """Everything that defines the vector field: scheme, beta and the Q, K, V matrices (None = I)."""

    scheme: str
    beta: float
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    tau: float = 2.0               # Mix-LN switch time
    alpha0: float = 1.0            # nGPT eigen learning rate
    alpha_schedule: str = "const"  # nGPT: alpha_t = alpha0 or alpha0 / (t + 1)
    speed_fn: Callable[[float], float] | None = field(default=None, compare=False)

    def __post_init__(self):
        check_scheme(self.scheme), check_beta(self.beta)
        check_positive("tau", self.tau), check_positive("alpha0", self.alpha0)
        check_alpha_schedule(self.alpha_schedule)

    def alpha(self, t: float) -> float:
        return self.alpha0 if self.alpha_schedule == "const" else self.alpha0 / (t + 1.0)


def _check_matrix(name: str, M: np.ndarray | None, d: int) -> None:
    if M is not None and np.shape(M) != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}) to match d = {d}, got {np.shape(M)}")


def attention(theta: np.ndarray, beta: float, Q=None, K=None, V=None) -> np.ndarray:
    """A = softmax(beta (Theta Q^T)(Theta K^T)^T) Theta V^T, row-wise softmax (max-subtracted)."""
    q = theta if Q is None else theta @ Q.T
    k = theta if K is None else theta @ K.T
    scores = beta * (q @ k.T)
    scores -= scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=1, keepdims=True)
    v = theta if V is None else theta @ V.T
    return w @ v


def velocity(t: float, theta: np.ndarray, r: np.ndarray, dyn: Dynamics):
    """(theta', r') of NA for the scheme (Table 2)."""
    A = attention(theta, dyn.beta, dyn.Q, dyn.K, dyn.V)
    radial = np.einsum("ij,ij->i", theta, A)                # <theta_j, A_j>
    PA = A - radial[:, None] * theta
    scheme = dyn.scheme
    r_dot = np.zeros_like(r)
    if dyn.speed_fn is not None:
        s = np.full_like(r, float(dyn.speed_fn(t)))
    elif scheme == "postln":
        s = np.ones_like(r)
    elif scheme == "preln" or (scheme == "mixln" and t > dyn.tau):
        s, r_dot = r, radial
    elif scheme == "mixln":
        s = np.ones_like(r)
    elif scheme == "periln":
        a = np.linalg.norm(A, axis=1)
        s, r_dot = r * a, radial / a
    elif scheme == "ngpt":
        s = np.linalg.norm(A, axis=1) / dyn.alpha(t)
    else:  # sqrt
        s = np.full_like(r, np.sqrt(t + 1.0))
    return PA / s[:, None], r_dot


@dataclass(frozen=True)
class Trajectory:
    t: np.ndarray          # (T,)
    theta: np.ndarray      # (T, n, d), rows renormalized to the sphere at output
    r: np.ndarray          # (T, n)
    dyn: Dynamics = field(repr=False)
    nfev: int = 0

    def gram(self) -> np.ndarray:
        return np.einsum("tid,tjd->tij", self.theta, self.theta)


def simulate(dyn: Dynamics, theta0: np.ndarray, t_end: float, *, r0=1.0,
             t_eval: np.ndarray | None = None, rtol: float = 1e-9, atol: float = 1e-12,
             method: str = "RK45", progress: bool = False) -> Trajectory:
    """Integrate NA from Theta(0) = theta0 (rows are normalized) and radii r0 to t_end."""
    theta0 = np.array(theta0, dtype=np.float64)
    if theta0.ndim != 2:
        raise ValueError(f"theta0 must be an (n, d) array, got shape {theta0.shape}")
    n, d = theta0.shape
    check_n(n), check_horizon(t_end)
    if d < 1:
        raise ValueError(f"d (dimension) must be an integer >= 1, got {d}")
    for name in ("Q", "K", "V"):
        _check_matrix(name, getattr(dyn, name), d)
    norms = np.linalg.norm(theta0, axis=1)
    if np.any(norms == 0):
        raise ValueError("theta0 has a zero row; every token needs a direction")
    theta0 = theta0 / norms[:, None]
    r0 = np.broadcast_to(np.asarray(r0, dtype=np.float64), (n,)).copy()
    if np.any(~np.isfinite(r0)) or np.any(r0 <= 0):
        raise ValueError(f"radii r0 must be finite and > 0, got min {r0.min()}")
    if t_eval is None:
        t_eval = np.linspace(0.0, t_end, 101)
    t_eval = np.asarray(t_eval, dtype=np.float64)

    from resharpen.experiments.common.progress import Meter

    bar = Meter(f"NA {dyn.scheme} n={n} d={d}", float(t_end), "t") if progress else None

    def rhs(t, y):
        theta = y[: n * d].reshape(n, d)
        th_dot, r_dot = velocity(t, theta, y[n * d:], dyn)
        if bar is not None and t > bar.done:  # the right-hand side is the hot path
            bar.update(t - bar.done)
        return np.concatenate([th_dot.ravel(), r_dot])

    y0 = np.concatenate([theta0.ravel(), r0])
    # Mix-LN's vector field jumps at tau: integrate each smooth piece separately.
    breaks = [0.0, t_end]
    if dyn.scheme == "mixln" and dyn.speed_fn is None and dyn.tau < t_end:
        breaks = [0.0, dyn.tau, t_end]
    ts, ys, nfev = [], [], 0
    try:
        for i, (a, b) in enumerate(zip(breaks[:-1], breaks[1:])):
            last = i == len(breaks) - 2
            inside = t_eval[(t_eval >= a) & ((t_eval <= b) if last else (t_eval < b))]
            sol = solve_ivp(rhs, (a, b), y0, method=method, rtol=rtol, atol=atol,
                            t_eval=inside if len(inside) else [b], dense_output=not last)
            if not sol.success:
                raise RuntimeError(f"NA integration failed ({dyn.scheme}): {sol.message}")
            if len(inside):
                ts.append(sol.t), ys.append(sol.y)
            nfev += sol.nfev
            if not last:
                y0 = sol.sol(b)
    finally:
        if bar is not None:
            bar.close()
    Y = np.concatenate(ys, axis=1).T
    theta = Y[:, : n * d].reshape(-1, n, d)
    theta = theta / np.linalg.norm(theta, axis=2, keepdims=True)
    return Trajectory(np.concatenate(ts), theta, Y[:, n * d:], dyn, nfev)


# ----------------------------------------------------------------------------- observables
def off_diagonal_mean(G: np.ndarray) -> np.ndarray:
    """Mean of the off-diagonal entries of (..., n, n) matrices."""
    n = G.shape[-1]
    return (G.sum(axis=(-2, -1)) - np.trace(G, axis1=-2, axis2=-1)) / (n * (n - 1))


def gamma_dot(theta: np.ndarray, r: np.ndarray, t: float, dyn: Dynamics) -> np.ndarray:
    """Pairwise d/dt <theta_j, theta_k> = <theta_j', theta_k> + <theta_j, theta_k'>, exact
    from the vector field (no finite differences)."""
    th_dot, _ = velocity(t, theta, r, dyn)
    M = th_dot @ theta.T
    return M + M.T


def variance(theta: np.ndarray) -> np.ndarray:
    """Var = (1/n) sum_k |theta_k - mean|^2 for (..., n, d) arrays (no 1 - |mean|^2 cancellation)."""
    centered = theta - theta.mean(axis=-2, keepdims=True)
    return np.einsum("...kd,...kd->...", centered, centered) / theta.shape[-2]


def variance_dot(theta: np.ndarray, r: np.ndarray, t: float, dyn: Dynamics) -> float:
    """d/dt Var = (2/n) sum_k <theta_k - mean, theta_k' - mean'>, exact from the vector field."""
    th_dot, _ = velocity(t, theta, r, dyn)
    c = theta - theta.mean(axis=0)
    cd = th_dot - th_dot.mean(axis=0)
    return float(2.0 * np.einsum("kd,kd->", c, cd) / theta.shape[0])


# ----------------------------------------------------------------------------- initial states
def orthonormal_start(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n orthonormal rows in R^d (needs d >= n): a random rotation of the first n basis vectors."""
    check_n(n)
    if d < n:
        raise ValueError(f"an orthonormal start needs d >= n, got d = {d} < n = {n}")
    rng = np.random.default_rng(seed)
    Qm, _ = np.linalg.qr(rng.standard_normal((d, n)))
    return Qm.T.copy()


def uniform_sphere(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n i.i.d. uniform points on S^{d-1} (normalized Gaussians)."""
    check_n(n)
    if d < 1:
        raise ValueError(f"d (dimension) must be an integer >= 1, got {d}")
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def local_cone(n: int, d: int, delta: float, seed: int = 0) -> np.ndarray:
    """n points with pairwise <theta_j, theta_k> >= 1 - delta (Thm 4.3's local cone): a uniform
    centre c plus offsets o_j orthogonal to c with |o_j|^2 <= eps^2 = delta/2, normalized. Then
    <theta_j, theta_k> = (1 + <o_j, o_k>)/sqrt((1 + |o_j|^2)(1 + |o_k|^2)) >= (1 - eps^2)/(1 + eps^2)
    >= 1 - 2 eps^2 = 1 - delta."""
    check_n(n)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(d)
    c /= np.linalg.norm(c)
    off = rng.standard_normal((n, d))
    off -= np.outer(off @ c, c)
    off *= (np.sqrt(delta / 2) * rng.uniform(0, 1, (n, 1))) / np.linalg.norm(off, axis=1, keepdims=True)
    x = c + off
    return x / np.linalg.norm(x, axis=1, keepdims=True)
