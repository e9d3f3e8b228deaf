"""What the base-rate claims ``dyn.base.*`` and ``dyn.erratum.survey_bound_t0`` (:mod:`.claims`)
measure: the equiangular rates of self-attention (SA) and unnormalized self-attention (USA) of
arXiv 2312.10794, against the scalar equations they come from.

Equiangular tokens (every pairwise inner product gamma) stay equiangular. Under SA the softmax
weights are a = e^beta/Z on the token itself and b = e^{beta gamma}/Z on each other one, so
gamma' = 2 b (1 - gamma)(1 + (n - 1) gamma); in u = log(1 - gamma),
u' = -2 e^{beta gamma} (1 + (n - 1) gamma) / (e^beta + (n - 1) e^{beta gamma}). Under USA the
weights are e^{beta <x_i, x_j>}/n and u' -> -2 e^beta as gamma -> 1.

* :func:`usa_rate_errors`: the slope of u on the late window of ``ode.solve_usa`` against
  -2 e^beta;
* :func:`survey_bound_slacks`: the survey's bound on 1 - gamma against the SA solution, the
  solution against the equation typed here, and the bound's log-slope against its printed rate
  -n/(n + e^{beta/2});
* :func:`survey_bound_t0_failures`: the (n, beta) where the t >= 0 form of the bound exceeds 1
  at t = 0 (lambda n e^beta / 2 < log 2).
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from resharpen.theory.dynamics import ode
from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def usa_rate_errors() -> float:
    """max over (beta, n) in (0.5, 4), (1, 8), (2, 16) of |slope / (-2 e^beta) - 1|, the slope
    of u = log(1 - gamma) fitted on [t_end/2, t_end], t_end = n + 40/(2 e^beta) (the transient
    lasts about n/2: the initial speed is 2/n)."""
    worst = 0.0
    for b, n in [(0.5, 4), (1.0, 8), (2.0, 16)]:
        rate = 2 * math.exp(b)
        t_end = n + 40.0 / rate        # the transient lasts ~ n/2 (initial speed 2/n)
        t, u = ode.solve_usa(b, n, t_end, t_eval=np.linspace(t_end / 2, t_end, 50))
        worst = max(worst, abs(np.polyfit(t, u, 1)[0] / -rate - 1))
    return worst


def survey_bound_slacks(betas, ns) -> tuple[float, tuple, float, float]:
    """(min of log(bound) - u over t in [t0, t0 + 20], t0 = n e^beta / 2, and over the grid
    ``betas`` x ``ns``; the (beta, n) attaining it; max |u - u_typed|; max |slope / -lambda - 1|)
    with u = log(1 - gamma) of ``ode.solve_symmetric``'s Post-LN solution, u_typed the SA
    equation of the module docstring integrated by scipy (DOP853), and lambda = n/(n +
    e^{beta/2}) the printed rate."""
    from scipy.integrate import solve_ivp

    bound = sp.lambdify((nd.beta_p, nd.n_p, nd.t_p), nd.sa_survey_bound(), "numpy")
    worst, at, solution_error, slope_error = np.inf, None, 0.0, 0.0
    for b in betas:
        for n in ns:
            t0 = n * math.exp(b) / 2
            t = np.linspace(t0, t0 + 20, 41)
            sol = ode.solve_symmetric("postln", b, n, t[-1], t_eval=np.concatenate([[0.0], t]))
            logged = bound(b, n, sol.t[1:])
            slack = float((logged - sol.u[1:]).min())
            if slack < worst:
                worst, at = slack, (b, n)

            def sa_field(_t: float, y: np.ndarray, b=b, n=n) -> list[float]:
                g = -math.expm1(y[0])
                w = math.exp(b * g)
                return [-2.0 * w * (1.0 + (n - 1) * g) / (math.exp(b) + (n - 1) * w)]

            typed = solve_ivp(sa_field, (0.0, t[-1]), [0.0], method="DOP853", t_eval=t,
                              rtol=1e-11, atol=1e-13)
            solution_error = max(solution_error, float(np.abs(typed.y[0] - sol.u[1:]).max())
                                 if typed.success else math.inf)
            rate = n / (n + math.exp(b / 2))
            slope = (logged[-1] - logged[0]) / (t[-1] - t[0])
            slope_error = max(slope_error, abs(slope / -rate - 1.0))
    return worst, at, solution_error, slope_error


def survey_bound_t0_failures() -> list[tuple[int, float]]:
    """The (n, beta) of n in {2, 3, 4} and 400 beta in [0.001, 2] where lambda n e^beta / 2 <
    log 2 (lambda = n/(n + e^{beta/2})): there the t >= 0 form of the bound exceeds 1 at t = 0."""
    return [(n, b) for n in (2, 3, 4) for b in np.linspace(0.001, 2, 400)
            if n / (n + math.exp(b / 2)) * n * math.exp(b) / 2 < math.log(2)]
