"""The symmetric-start scalar ODE of arXiv 2510.22026 (Theorem 4.1), integrated and fitted.

With Q = K = V = I, an orthonormal start and equal radii, the pairwise inner product gamma(t) and
the common radius r(t) obey

    gamma' = F(gamma) / s(t, gamma, r),      r' = (Table 2 radial velocity)(gamma),

with F, <theta, A> and |A| from resharpen.theory.dynamics.speed. The state is u = log(1 - gamma), so that
u' = G(gamma)/s with G = -F/(1 - gamma) stays O(1) as gamma -> 1 and nothing cancels; then
log gamma' = u + log(-G) - log s is exact to rounding even when 1 - gamma underflows.

fit_terminal_exponent reads the terminal law off log gamma': a slope in t (exponential), in log t
(power law) or in sqrt(t + 1) after removing the 1/sqrt(t + 1) prefactor (sqrt-scaling).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from resharpen.theory.dynamics.speed import (RATE_KINDS, A_norm_num, G_num, check_alpha_schedule,
                                  check_beta, check_horizon, check_n, check_positive,
                                  check_scheme, theta_A_num)


@dataclass(frozen=True)
class SymmetricSolution:
    """The equiangular ODE solved on a grid: gamma, u = log(1 - gamma), radius, log gamma'."""

    scheme: str
    t: np.ndarray
    u: np.ndarray
    r: np.ndarray
    log_gamma_dot: np.ndarray

    @property
    def gamma(self) -> np.ndarray:
        return -np.expm1(self.u)

    @property
    def gamma_dot(self) -> np.ndarray:
        return np.exp(self.log_gamma_dot)


def alpha_at(t_, alpha0_: float, schedule: str):
    return alpha0_ if schedule == "const" else alpha0_ / (np.asarray(t_) + 1.0)


def symmetric_speed(scheme, t_, g, r, beta_, n_, tau=2.0, alpha0_=1.0, alpha_schedule="const"):
    """s(t) along the symmetric solution (numeric)."""
    if scheme == "postln":
        return np.ones_like(np.asarray(g, dtype=float))
    if scheme == "preln":
        return r
    if scheme == "mixln":
        return np.where(np.asarray(t_) <= tau, 1.0, r)
    if scheme == "periln":
        return r * A_norm_num(g, beta_, n_)
    if scheme == "ngpt":
        return A_norm_num(g, beta_, n_) / alpha_at(t_, alpha0_, alpha_schedule)
    return np.sqrt(np.asarray(t_) + 1.0) * np.ones_like(np.asarray(g, dtype=float))


def symmetric_radial_velocity(scheme, t_, g, beta_, n_, tau=2.0):
    if scheme == "preln" or (scheme == "mixln" and t_ > tau):
        return theta_A_num(g, beta_, n_)
    if scheme == "periln":
        return theta_A_num(g, beta_, n_) / A_norm_num(g, beta_, n_)
    return 0.0


def solve_symmetric(scheme: str, beta_: float, n_: int, t_end: float, *, r0_: float = 1.0,
                    tau: float = 2.0, alpha0_: float = 1.0, alpha_schedule: str = "const",
                    gamma0: float = 0.0, t_eval: np.ndarray | None = None, rtol: float = 1e-10,
                    atol: float = 1e-12) -> SymmetricSolution:
    """Integrate gamma' = F(gamma)/s, r' = (Table 2) in the state (u = log(1 - gamma), r).

    u' = G(gamma)/s has no cancellation as gamma -> 1; log gamma' = u + log(-G) - log s."""
    check_scheme(scheme), check_beta(beta_), check_n(n_), check_horizon(t_end)
    check_positive("r0", r0_), check_positive("alpha0", alpha0_), check_alpha_schedule(alpha_schedule)
    if scheme == "mixln":
        check_positive("tau", tau)
    if not -1.0 / (n_ - 1) < gamma0 < 1.0:
        raise ValueError(f"gamma0 must lie in (-1/(n-1), 1) = ({-1 / (n_ - 1):.4g}, 1), got {gamma0}")
    if t_eval is None:
        t_eval = np.unique(np.concatenate([[0.0], np.geomspace(1e-3, t_end, 400)]))
    t_eval = np.asarray(t_eval, dtype=np.float64)

    def rhs(t_, y):
        u, r = y
        g = -math.expm1(u)
        s = float(symmetric_speed(scheme, t_, g, r, beta_, n_, tau, alpha0_, alpha_schedule))
        return [float(G_num(g, beta_, n_)) / s,
                float(symmetric_radial_velocity(scheme, t_, g, beta_, n_, tau))]

    y0 = [math.log1p(-gamma0), r0_]
    # Mix-LN switches its speed factor at tau: integrate the two smooth pieces separately.
    breaks = [0.0, t_end] if scheme != "mixln" or tau >= t_end else [0.0, tau, t_end]
    ts, ys = [], []
    for a, b in zip(breaks[:-1], breaks[1:]):
        inside = t_eval[(t_eval >= a) & (t_eval <= b)] if b == breaks[-1] else \
            t_eval[(t_eval >= a) & (t_eval < b)]
        sol = solve_ivp(rhs, (a, b), y0, method="DOP853", rtol=rtol, atol=atol,
                        t_eval=inside if len(inside) else [b], dense_output=True)
        if not sol.success:
            raise RuntimeError(f"symmetric ODE failed for {scheme}: {sol.message}")
        if len(inside):
            ts.append(sol.t), ys.append(sol.y)
        y0 = list(sol.sol(b))
    tt = np.concatenate(ts)
    u, r = np.concatenate(ys, axis=1)
    g = -np.expm1(u)
    s = symmetric_speed(scheme, tt, g, r, beta_, n_, tau, alpha0_, alpha_schedule)
    log_gd = u + np.log(-G_num(g, beta_, n_)) - np.log(s)
    return SymmetricSolution(scheme, tt, u, r, log_gd)


def fit_terminal_exponent(t_: np.ndarray, log_gamma_dot: np.ndarray, kind: str,
                          window: tuple[float, float]) -> float:
    """Least-squares slope of the terminal law over t in window:
    exponential: log gamma' vs t; power: log gamma' vs log t;
    sqrt: log(sqrt(t+1) gamma') vs sqrt(t+1) (the law exp(-4 sqrt(t+1))/sqrt(t+1) of s = sqrt(t+1))."""
    if kind not in RATE_KINDS:
        raise ValueError(f"unknown rate kind {kind!r}; allowed: {', '.join(RATE_KINDS)}")
    lo, hi = window
    mask = (t_ >= lo) & (t_ <= hi) & np.isfinite(log_gamma_dot)
    if mask.sum() < 3:
        raise ValueError(f"fewer than 3 samples in the fit window {window}")
    tt, y = t_[mask], log_gamma_dot[mask]
    x = {"exponential": tt, "power": np.log(tt), "sqrt": np.sqrt(tt + 1.0)}[kind]
    if kind == "sqrt":
        y = y + 0.5 * np.log(tt + 1.0)
    return float(np.polyfit(x, y, 1)[0])


def solve_usa(beta_: float, n_: int, t_end: float, *, t_eval: np.ndarray | None = None,
              rtol: float = 1e-10, atol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Equiangular USA from rho(0) = 0 in u = log(1 - rho): returns (t, u)."""
    from resharpen.theory.dynamics.speed import usa_G_twin

    check_beta(beta_), check_n(n_), check_horizon(t_end)
    G = usa_G_twin()
    sol = solve_ivp(lambda t_, y: [float(G(-math.expm1(y[0]), beta_, n_))], (0.0, t_end), [0.0],
                    method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)
    if not sol.success:
        raise RuntimeError(f"USA ODE failed: {sol.message}")
    return sol.t, sol.y[0]
