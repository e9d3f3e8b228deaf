"""What the radial-bound claims ``dyn.radial.*`` (:mod:`.claims`) measure: the radial velocity
<theta_j, A_j> of the radial schemes against its lower bound.

With V = I and Q^T K = I, A_j = sum_k e^{beta <theta_j, theta_k>} theta_k / Z_j, so
<theta_j, A_j> = (e^beta + sum_{k != j} x_k e^{beta x_k}) / Z_j with x_k = <theta_j, theta_k>.
The corollary's bound: for n <= e^beta, <theta_j, A_j> >= (e^beta - n + 1) / (n e^beta)
(>= 1/(n e^beta) when it applies); the exact minimum over configurations puts the n - 1 others
at one inner product x* (``speed.min_radial_velocity``), and the minimum is negative once
(n - 1) max_x(-x e^{beta x}) > e^beta, i.e. n - 1 > beta e^{beta + 1} (beta >= 1).

* :func:`threshold_rows`: on n = 2, 3, ... the first n where the minimum falls below
  1/(n e^beta) and the first where it is negative, against e^beta and beta e^{beta + 1} + 1;
* :func:`random_config_slacks`: the bound's slack over random, antipode-bunched and
  minimizer-placed configurations, and Peri-LN's <theta, A>/|A| >= <theta, A>;
* :func:`violation`: a configuration at x* with n > e^beta, where <theta_0, A_0> < 0 and the
  Pre-LN radius shrinks.
"""
from __future__ import annotations

import math

import numpy as np

from resharpen.experiments.dynamics import particles as P
from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def threshold_rows(betas=(1.0, 2.0, 3.0)) -> tuple[list[str], bool]:
    """(one line per beta, every test holds): for n <= e^beta the minimum respects the bound;
    the first n below 1/(n e^beta) is above e^beta; the first negative n is within 1 of
    beta e^{beta + 1} + 1 (beta >= 1; e^{2 beta} + 1 below)."""
    rows, ok = [], True
    for b in betas:
        eb = math.exp(b)
        mins = {n: nd.min_radial_velocity(b, n)[0] for n in range(2, int(3 * b * math.e ** (b + 1)) + 3)}
        # the corollary: for n <= e^b the minimum respects the bound
        ok &= all(m >= (eb - n + 1) / (n * eb) - 1e-12 for n, m in mins.items() if n <= eb)
        first_below = min(n for n, m in mins.items() if m < 1 / (n * eb))
        first_negative = min(n for n, m in mins.items() if m < 0)
        predicted = b * math.e ** (b + 1) + 1 if b >= 1 else math.exp(2 * b) + 1
        ok &= first_below > eb and abs(first_negative - predicted) <= 1
        rows.append(f"beta={b:g}: e^b={eb:.1f}, bound fails from n={first_below}, "
                    f"negative from n={first_negative} (b e^(b+1)+1={predicted:.1f})")
    return rows, ok


def random_config_slacks(trials: int) -> tuple[float, float]:
    """(min over configurations of <theta_j, A_j> - bound (and of the bound - 1/(n e^beta)),
    min of <theta_j, A_j>/|A_j| - <theta_j, A_j>) over ``trials`` draws (seed 4): beta in
    [0.7, 5], n <= e^beta, d in {2, 3, 8, 32}; a third uniform, a third with the others
    bunched at token 0's antipode, a third with the others at the exact minimizer x*."""
    rng = np.random.default_rng(4)
    slack, peri_slack = np.inf, np.inf
    for i in range(trials):
        beta = float(rng.uniform(0.7, 5.0))
        n = int(rng.integers(2, max(2, math.floor(math.exp(beta))) + 1))
        d = int(rng.choice([2, 3, 8, 32]))
        theta = P.uniform_sphere(n, d, seed=int(rng.integers(2**31)))
        if i % 3 == 1:    # adversarial: others bunched near the antipode of token 0
            theta[1:] = -theta[0] + 0.3 * rng.standard_normal((n - 1, d))
        elif i % 3 == 2:  # others at the worst inner product x* of the exact minimization
            x = nd.min_radial_velocity(beta, n)[1]
            u = rng.standard_normal(d)
            u -= (u @ theta[0]) * theta[0]
            u /= max(np.linalg.norm(u), 1e-300)
            theta[1:] = x * theta[0] + math.sqrt(max(0.0, 1 - x * x)) * u if d > 1 else theta[1:]
        theta /= np.linalg.norm(theta, axis=1, keepdims=True)
        A = P.attention(theta, beta)
        radial = np.einsum("ij,ij->i", theta, A)
        bound = (math.exp(beta) - n + 1) / (n * math.exp(beta))
        slack = min(slack, float((radial - bound).min()), bound - 1 / (n * math.exp(beta)))
        peri_slack = min(peri_slack, float((radial / np.linalg.norm(A, axis=1) - radial).min()))
    return slack, peri_slack


def violation(beta: float, n: int, d: int) -> tuple[float, float, float, float]:
    """(<theta_0, A_0>, r_0(0.05) - r_0(0) under Pre-LN, the exact minimum, x*): token 0 at e_1
    and the n - 1 others on the circle <theta, e_1> = x* of R^3."""
    value, x = nd.min_radial_velocity(beta, n)
    theta = np.zeros((n, d))
    theta[0, 0] = 1.0
    angles = np.linspace(0, 2 * np.pi, n - 1, endpoint=False)   # others on the circle <., e1> = x
    theta[1:, 0] = x
    theta[1:, 1] = math.sqrt(1 - x * x) * np.cos(angles)
    theta[1:, 2] = math.sqrt(1 - x * x) * np.sin(angles)
    radial0 = float(theta[0] @ P.attention(theta, beta)[0])
    tr = P.simulate(P.Dynamics("preln", beta), theta, 0.05, t_eval=[0.0, 0.05])
    shrink = tr.r[-1, 0] - tr.r[0, 0]
    return radial0, shrink, value, x
