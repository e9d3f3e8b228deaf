"""What the Theorem 4.3 claims of ``dyn.*`` (:mod:`.claims`) measure: the particles from a local
cone, their variance Var = mean_j |theta_j - mean theta|^2 and radii.

Theorem 4.3 (with the Lean audit's constants c = 1/9, C = 4): from a cone of spread delta <
1/(100 n^2), Var'/(Var/scale(t)) lies in [-C, -c] = :data:`VAR_BAND` with scale(t) = 1 (Post-LN),
t (Pre-LN, Mix-LN, Peri-LN), 1/alpha_t (nGPT; the paper prints alpha_t), sqrt t (sqrt scaling);
and the Pre-LN and Peri-LN radii grow like t: 1 + (1 - delta) t <= r(t) (<= 1 + t for Pre-LN).

* :func:`local_cone_run`: one simulation from the cone, with Var and Var' exact from the field;
* :func:`variance_scale`, :func:`linearized_variance_ratio`: scale(t) and the linearized rate;
* :func:`variance_ratios`: the band and the distance to the linearized rate over seeds;
* :func:`ngpt_scale_ratios`: nGPT with alpha_t = 1/(t + 1) under the printed and corrected scale;
* :func:`radial_growth_slacks`: the radius bounds;
* :func:`stationary_deviation`: an antipodal pair, a fixed point where Var' = 0.
"""
from __future__ import annotations

import numpy as np

from resharpen.experiments.dynamics import particles as P
from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""

VAR_BAND = (-4.0, -1.0 / 9.0)   # Thm 4.3 (corrected constants c = 1/9, C = 4)

LINEAR_RATE_TOLERANCE = 0.05
"""Relative tolerance of the measured Var'/(Var/scale) against the linearized rate
(:func:`linearized_variance_ratio`), fixed before it was measured: the corrections to the
linearization are of the order of the cone's spread (delta = 1/(200 n^2) = 3e-4; a first-order
term of the attention's non-uniformity, beta |Q^T K| sqrt(delta) ~ 0.02, if there were one)."""


def local_cone_run(scheme, *, n=4, d=6, beta=1.0, seed=5, T=None, alpha_schedule="const"):
    """Simulate from a local cone with delta = 1/(200 n^2) (< 1/(100 n^2)), V = I,
    Q^T K = M random with |M|_op = 1. Returns (t, Var, Var', r, delta, dynamics)."""
    delta = 0.5 / (100 * n * n)
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((d, d))
    M /= np.linalg.norm(M, 2)
    dyn = P.Dynamics(scheme, beta, None, M, None, tau=1.0, alpha_schedule=alpha_schedule)
    if T is None:
        T = 200.0 if scheme in nd.RADIAL_SCHEMES or alpha_schedule == "inverse" else 8.0
    t_eval = np.geomspace(0.05, T, 40)
    tr = P.simulate(dyn, P.local_cone(n, d, delta, seed=seed), T, t_eval=t_eval, rtol=1e-10, atol=1e-15)
    var = P.variance(tr.theta)
    vdot = np.array([P.variance_dot(tr.theta[i], tr.r[i], tr.t[i], dyn) for i in range(len(tr.t))])
    return tr.t, var, vdot, tr.r, delta, dyn


def variance_scale(scheme, t, dyn, printed=False):
    """scale(t) of Thm 4.3: 1, t, t, t, alpha_t^{-1} (corrected; the paper prints alpha_t), sqrt t."""
    if scheme == "ngpt":
        a = dyn.alpha(t) * np.ones_like(t)
        return a if printed else 1.0 / a
    return {"postln": np.ones_like(t), "preln": t, "mixln": t, "periln": t, "sqrt": np.sqrt(t)}[scheme]


def linearized_variance_ratio(scheme: str, t: np.ndarray, r: np.ndarray) -> np.ndarray:
    """-2 scale(t) / s(t), the ratio Var'/(Var/scale(t)) of Theorem 4.3 near consensus
    (reconstructed, typed here from the schemes' speeds, Table 2, and not from
    :mod:`~resharpen.experiments.dynamics.particles`).

    Near consensus with V = I the attention output of every particle is the particles' mean m
    (|m| = 1 - Var/2; the non-uniform weights shift every A_j alike at first order), so each
    deviation e_j = theta_j - m moves as e_j' = -(e_j - mean e)/s, s the scheme's speed divisor,
    and Var' = -2 Var / s. With s = 1 (Post-LN; Mix-LN up to tau = 1), r (Pre-LN; Mix-LN after
    tau), r |A| ~ r (Peri-LN), |A|/alpha_t ~ 1/alpha_t (nGPT), sqrt(t + 1) (sqrt scaling) and
    scale(t) = 1, t, t, t, 1/alpha_t, sqrt t: Post-LN -2; Pre-LN, Peri-LN -2 t / r(t); Mix-LN
    -2 t / r(t) after tau; nGPT -2 (alpha_t cancels, whatever its schedule); sqrt
    -2 sqrt(t / (t + 1)). ``r`` is the particles' mean radius at each t."""
    one = np.ones_like(t)
    s = {"postln": one, "preln": r, "periln": r, "ngpt": one,
         "mixln": np.where(t > 1.0, r, 1.0), "sqrt": np.sqrt(t + 1.0)}[scheme]
    scale = {"postln": one, "preln": t, "periln": t, "mixln": t, "ngpt": one,
             "sqrt": np.sqrt(t)}[scheme]   # nGPT: s = scale = 1/alpha_t, taken out
    return -2.0 * scale / s


def variance_ratios(scheme: str, seeds) -> tuple[float, float, float]:
    """(min, max of Var'/(Var/scale(t)) on t >= 1, max |ratio / linearized - 1|) over the cone
    runs of ``seeds``."""
    lo, hi, worst = np.inf, -np.inf, 0.0
    for seed in seeds:
        t, var, vdot, r, _, dyn = local_cone_run(scheme, seed=seed)
        late = t >= 1.0
        ratio = (vdot / (var / variance_scale(scheme, t, dyn)))[late]
        linear = linearized_variance_ratio(scheme, t, r.mean(axis=1))[late]
        lo, hi = min(lo, ratio.min()), max(hi, ratio.max())
        worst = max(worst, float(np.max(np.abs(ratio / linear - 1.0))))
    return lo, hi, worst


def ngpt_scale_ratios() -> tuple[float, np.ndarray, np.ndarray, float]:
    """(last time, the ratio under the printed scale alpha_t, under the corrected 1/alpha_t,
    max |corrected / linearized - 1|) of nGPT with alpha_t = 1/(t + 1), on t >= 1."""
    t, var, vdot, r, _, dyn = local_cone_run("ngpt", alpha_schedule="inverse")
    late = t >= 1.0
    printed = (vdot / (var / variance_scale("ngpt", t, dyn, printed=True)))[late]
    fixed = (vdot / (var / variance_scale("ngpt", t, dyn)))[late]
    linear = linearized_variance_ratio("ngpt", t, r.mean(axis=1))[late]
    worst = float(np.max(np.abs(fixed / linear - 1.0)))
    return t[-1], printed, fixed, worst


def radial_growth_slacks() -> list[float]:
    """min over t and tokens of r - 1 - (1 - delta) t for Pre-LN, of 1 + t - r for Pre-LN and
    of r - 1 - (1 - delta) t for Peri-LN (r(0) = 1)."""
    slacks = []
    for scheme in ("preln", "periln"):
        t, _, _, r, delta, _ = local_cone_run(scheme)
        slacks.append(float((r - 1.0 - (1 - delta) * t[:, None]).min()))
        if scheme == "preln":
            slacks.append(float((1.0 + t[:, None] - r).min()))
    return slacks


def stationary_deviation(beta: float, theta: np.ndarray, T: float = 50.0) -> float:
    """max over the schemes of |Var(T) - 1| and |Var'(T)| from ``theta`` (an antipodal pair:
    Var = 1 and the field vanishes, so both stay 0)."""
    worst = 0.0
    for scheme in nd.SCHEMES:
        dyn = P.Dynamics(scheme, beta)
        tr = P.simulate(dyn, theta, T, t_eval=[0.0, T])
        worst = max(worst, abs(P.variance(tr.theta[-1]) - 1.0),
                    abs(P.variance_dot(tr.theta[-1], tr.r[-1], T, dyn)))
    return worst
