"""What the particle claims of ``dyn.*`` (:mod:`.claims`) measure: the particle system NA of
arXiv 2510.22026 (:mod:`.particles`) against the symmetric-start scalar ODE, and its terminal
rates.

* :func:`symmetric_start_errors`: from an orthonormal start (all pairwise inner products
  gamma(0) = 0, radii 1) every pair stays equiangular, so the mean off-diagonal Gram entry is
  the ODE's gamma(t) and the radii its r(t); the errors max_t |mean_{j != k} <theta_j, theta_k>
  - gamma(t)|, max_t |r_j(t) - r(t)| and the spread max_t (max - min) of the off-diagonal entries.
* :func:`gamma_dot0_errors`: Theorem 4.1's gamma'(0), the mean over pairs of
  d/dt <theta_j, theta_k> from the exact vector field at t = 0, against its closed form.
* :func:`ode_terminal_exponent`, :func:`terminal_exponent`: the terminal rate of gamma'(t),
  the least-squares slope of log gamma' against t (an exponential rate), log t (a power) or
  sqrt t on a late time window, on the scalar ODE and on the particles.
* :func:`radius_over_time_gaps`: for the radial schemes r' = <theta, A> -> 1, so r(T)/T -> 1.
* :func:`discrete_orders`: the layer updates of step h converge to the flow at order 1:
  log2(err(h) / err(h/2)) -> 1.
"""
from __future__ import annotations

import math

import numpy as np

from resharpen.experiments.dynamics import particles as P
from resharpen.experiments.dynamics.algebra_checks import FIG_BETA, FIG_N
from resharpen.experiments.dynamics.discrete import run_layers
from resharpen.theory.dynamics import ode
from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""

ODE_HORIZON = 2000.0


def ode_terminal_exponent(scheme: str, schedule: str, beta=FIG_BETA, n=FIG_N,
                          horizon=ODE_HORIZON) -> float:
    """The terminal exponent of log gamma' of the symmetric ODE of ``scheme`` (nGPT: alpha
    ``schedule``), fitted on t in [horizon/2, horizon] by :func:`resharpen.theory.dynamics.ode.
    fit_terminal_exponent` with the scheme's rate kind."""
    t_eval = np.linspace(horizon / 2, horizon, 200)
    sol = ode.solve_symmetric(scheme, beta, n, horizon, alpha_schedule=schedule, t_eval=t_eval)
    return ode.fit_terminal_exponent(sol.t, sol.log_gamma_dot, nd.rate_kind(scheme, schedule),
                                    (horizon / 2, horizon))


def symmetric_start_errors(n: int, d: int, beta: float, T: float) -> tuple[dict, dict]:
    """({scheme: max |particle - ODE|}, {scheme: max pair spread}) of the particles from an
    orthonormal start (seed 1, tau = 1.5) against ``ode.solve_symmetric`` on 31 times in [0, T]:
    the error is the larger of the mean off-diagonal Gram entry against gamma(t) and the radii
    against r(t)."""
    t_eval = np.linspace(0.0, T, 31)
    errs, spreads = {}, {}
    for scheme in nd.SCHEMES:
        dyn = P.Dynamics(scheme, beta, tau=1.5)
        tr = P.simulate(dyn, P.orthonormal_start(n, d, seed=1), T, t_eval=t_eval, rtol=1e-10, atol=1e-13)
        G = tr.gram()
        off = G[:, ~np.eye(n, dtype=bool)]
        ref = ode.solve_symmetric(scheme, beta, n, T, tau=1.5, t_eval=tr.t)
        errs[scheme] = max(np.abs(off.mean(axis=1) - ref.gamma).max(),
                           np.abs(tr.r - ref.r[:, None]).max())
        spreads[scheme] = float((off.max(axis=1) - off.min(axis=1)).max())
    return errs, spreads


def gamma_dot0_errors(n: int, d: int, beta: float, r0: float, a0: float) -> dict:
    """{scheme: |simulated / symbolic - 1|} of gamma'(0): the mean off-diagonal entry of the
    exact d/dt Gram matrix at an orthonormal start (seed 2, radii ``r0``, nGPT alpha ``a0``)
    against ``speed.gamma_dot0_num``."""
    theta = P.orthonormal_start(n, d, seed=2)
    rel = {}
    for scheme in nd.SCHEMES:
        dyn = P.Dynamics(scheme, beta, alpha0=a0)
        G = P.gamma_dot(theta, np.full(n, r0), 0.0, dyn)
        sim = P.off_diagonal_mean(G)
        sym = nd.gamma_dot0_num(scheme, beta, n, r0, a0)
        rel[scheme] = abs(sim / sym - 1)
    return rel


def terminal_exponent(dyn: P.Dynamics, theta: np.ndarray, window: tuple[float, float],
                      kind: str) -> tuple[float, int]:
    """(fitted exponent, field evaluations): the particles from ``theta`` simulated to
    window[1], the mean pairwise gamma' taken exactly from the vector field at 21 times of
    ``window``, and the slope of its log fitted as ``kind``."""
    tr = P.simulate(dyn, theta, window[1], t_eval=np.linspace(*window, 21),
                    rtol=1e-10, atol=1e-14)
    gd = np.array([P.off_diagonal_mean(P.gamma_dot(tr.theta[i], tr.r[i], tr.t[i], dyn))
                   for i in range(len(tr.t))])
    return ode.fit_terminal_exponent(tr.t, np.log(gd), kind, window), tr.nfev


def radius_over_time_gaps(T: float) -> dict:
    """{radial scheme: max_j |r_j(T)/T - 1|} from a random cone (8 tokens in R^4, spread 0.5,
    seed 0, tau = 1)."""
    worst = {}
    for scheme in nd.RADIAL_SCHEMES:
        tr = P.simulate(P.Dynamics(scheme, 1.0, tau=1.0), P.local_cone(8, 4, 0.5, seed=0), T,
                        t_eval=[T], rtol=1e-10, atol=1e-12)
        worst[scheme] = float(np.abs(tr.r[-1] / T - 1).max())
    return worst


def discrete_orders(steps: list[float]) -> tuple[dict, bool]:
    """({scheme: log2(err(h_-2) / err(h_-1))}, every order in [0.9, 1.1] and every error below
    the one before): the layer updates of each step h of ``steps`` run to T = 2 against the flow
    (n = 6, d = 4, beta = 1.5, random Q, K and V = I + noise, tau = 1), the error the larger of
    the directions' and the radii's."""
    n, d, beta, T = 6, 4, 1.5, 2.0
    rng = np.random.default_rng(1)
    Q, K = (rng.standard_normal((d, d)) / 2 for _ in range(2))
    V = rng.standard_normal((d, d)) / 2 + np.eye(d)
    theta = P.uniform_sphere(n, d, seed=3)
    orders, ok = {}, True
    for scheme in nd.SCHEMES:
        dyn = P.Dynamics(scheme, beta, Q, K, V, tau=1.0)
        ref = P.simulate(dyn, theta, T, t_eval=[T], rtol=1e-11, atol=1e-13)
        errs = []
        for h in steps:
            _, th, r = run_layers(dyn, theta, h, int(round(T / h)))
            errs.append(max(np.abs(th[-1] - ref.theta[-1]).max(), np.abs(r[-1] - ref.r[-1]).max()))
        order = math.log2(errs[-2] / errs[-1])
        orders[scheme] = order
        ok &= 0.9 <= order <= 1.1 and all(a > b for a, b in zip(errs, errs[1:]))
    return orders, ok


def ode_exponential_and_power_fits(scheme: str) -> tuple[float, float]:
    """(exponential rate, log-log slope) of log gamma' of ``scheme``'s symmetric ODE at the
    figure's beta and n with constant alpha, both fitted on t in [1000, 2000]: a power law has
    rate -> 0 and a finite slope, an exponential a finite rate and a slope -> -infinity."""
    sol = ode.solve_symmetric(scheme, FIG_BETA, FIG_N, ODE_HORIZON,
                             t_eval=np.linspace(ODE_HORIZON / 2, ODE_HORIZON, 200))
    rate = ode.fit_terminal_exponent(sol.t, sol.log_gamma_dot, "exponential", (1000, 2000))
    slope = ode.fit_terminal_exponent(sol.t, sol.log_gamma_dot, "power", (1000, 2000))
    return rate, slope
