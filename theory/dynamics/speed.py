"""Normalization as speed regulation: the symmetric-start algebra of arXiv 2510.22026.

Tokens are x_j = r_j theta_j with theta_j on the sphere S^{d-1}. The attention vector is

    A_j(Theta) = Z_j^{-1} sum_k exp(beta <Q theta_j, K theta_k>) V theta_k,   Z_j = sum_l exp(...),

and the normalized attention dynamics (NA) are

    theta_j' = P_{theta_j} A_j / s_j,      P_theta = I - theta theta^T,

where the *speed factor* s_j and the radial velocity r_j' depend on where the normalization sits
(Table 2 of the paper):

    scheme   s_j(t)                    r_j'(t)
    postln   1                         0
    preln    r_j                       <theta_j, A_j>
    mixln    1 (t <= tau), r_j after   0 (t <= tau), <theta_j, A_j> after
    periln   r_j |A_j|                 <theta_j, A_j> / |A_j|
    ngpt     |A_j| / alpha_t           0
    sqrt     sqrt(t + 1)               0          ("CoD" / LayerNorm-scaling, as the paper models it)

Symmetric start (Theorem 4.1). With Q = K = V = I and orthonormal theta_j(0) (so d >= n) and equal
radii, every pair keeps the same inner product gamma(t). The attention vector is then
A_j = a theta_j + b sum_{l != j} theta_l with a = e^beta / Z, b = e^{beta gamma} / Z and
Z(gamma) = e^beta + (n-1) e^{beta gamma}, which gives (derived below, not typed in)

    gamma' = F(gamma) / s,  F(gamma) = 2 e^{beta gamma} (1-gamma)((n-1) gamma + 1) / Z(gamma),
    <theta_j, A_j> = (e^beta + (n-1) gamma e^{beta gamma}) / Z(gamma),
    |A_j|^2 = [e^{2 beta} + 2(n-1) gamma e^{beta(1+gamma)}
               + e^{2 beta gamma}((n-1) + (n-1)(n-2) gamma)] / Z(gamma)^2.

Terminal rates by linearization: F(gamma) ~ 2(1 - gamma) as gamma -> 1, so
1 - gamma ~ exp(-2 int 1/s) and gamma' ~ s^{-1} exp(-2 int 1/s): e^{-2t} (postln), t^{-3}
(preln, mixln, periln: r ~ t), e^{-4 sqrt t}/sqrt t (sqrt), alpha_t e^{-2 int alpha} (ngpt).

Radial bound (Corollary of Theorem 3.1): each term x e^{beta x} >= -1 on [-1, 1], the self term is
e^beta and Z <= n e^beta, so <theta_j, A_j> >= (e^beta - n + 1)/(n e^beta) >= 1/(n e^beta)
whenever n <= e^beta.

Base framework (arXiv 2312.10794): the equiangular USA velocity, whose 1 - rho decays at rate
2 e^beta instead of SA's 2, and the survey bound on SA's 1 - gamma.

The scalar ODE itself is integrated in theory/dynamics/ode.py. The numeric twins are lambdified from the same sympy expressions rewritten with
q = exp(beta (gamma - 1)) <= 1 (the rewriting is checked symbolically), so they do not overflow
for large beta. This module is pure mathematics: numpy, scipy and sympy only.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy.optimize import minimize_scalar

from resharpen.theory.dynamics.schemes import (ALPHA_SCHEDULES, RADIAL_SCHEMES,  # noqa: F401
                                               SCHEME_LABELS, SCHEMES)


# ----------------------------------------------------------------------------- validation
def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; allowed: {', '.join(SCHEMES)}")
    return scheme


def check_beta(beta: float) -> float:
    beta = float(beta)
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta}")
    return beta


def check_n(n: int) -> int:
    if int(n) != n or n < 2:
        raise ValueError(f"n (number of tokens) must be an integer >= 2, got {n}")
    return int(n)


def check_d(d: int) -> int:
    if int(d) != d or d < 1:
        raise ValueError(f"d (dimension) must be an integer >= 1, got {d}")
    return int(d)


def check_horizon(t_end: float) -> float:
    t_end = float(t_end)
    if not (math.isfinite(t_end) and t_end > 0):
        raise ValueError(f"horizon t_end must be a finite number > 0, got {t_end}")
    return t_end


def check_positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_alpha_schedule(schedule: str) -> str:
    if schedule not in ALPHA_SCHEDULES:
        raise ValueError(f"unknown alpha schedule {schedule!r}; allowed: {', '.join(ALPHA_SCHEDULES)}")
    return schedule


# ----------------------------------------------------------------------------- symbols
gamma, beta, n, r0, alpha0, t, q = sp.symbols("gamma beta n r_0 alpha_0 t q", real=True)
_pos = dict(positive=True)
beta_p, n_p, r0_p, alpha0_p, t_p = sp.symbols("beta n r_0 alpha_0 t", **_pos)


def attention_weights() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(Z, a, b): the partition function and the weights on theta_j and on each other token."""
    Z = sp.exp(beta) + (n - 1) * sp.exp(beta * gamma)
    return Z, sp.exp(beta) / Z, sp.exp(beta * gamma) / Z


def symmetric_inner_products() -> dict[str, sp.Expr]:
    """Inner products at the equiangular configuration, from A_j = a theta_j + b sum_{l!=j} theta_l
    and the Gram matrix (1 on the diagonal, gamma off it)."""
    Z, a, b = attention_weights()
    theta_A = a + b * (n - 1) * gamma                              # <theta_j, A_j>
    other_A = a * gamma + b * (1 + (n - 2) * gamma)                # <theta_k, A_j>, k != j
    A_sq = a**2 + 2 * a * b * (n - 1) * gamma + b**2 * ((n - 1) + (n - 1) * (n - 2) * gamma)
    return {"Z": Z, "theta_A": theta_A, "other_A": other_A, "A_sq": A_sq}


def derived_F() -> sp.Expr:
    """F(gamma) with gamma' = F/s: gamma' = <theta_j', theta_k> + <theta_j, theta_k'> and
    <P_{theta_j} A_j, theta_k> = <A_j, theta_k> - <theta_j, A_j> gamma, doubled by symmetry."""
    ip = symmetric_inner_products()
    return sp.factor(sp.simplify(2 * (ip["other_A"] - ip["theta_A"] * gamma)))


def paper_F() -> sp.Expr:
    """F as printed (reconstructed in the notes; the Post-LN case is eq. ybeta of 2312.10794)."""
    return (2 * sp.exp(beta * gamma) * (1 - gamma) * ((n - 1) * gamma + 1)
            / (sp.exp(beta) + (n - 1) * sp.exp(beta * gamma)))


def paper_theta_A() -> sp.Expr:
    return ((sp.exp(beta) + (n - 1) * gamma * sp.exp(beta * gamma))
            / (sp.exp(beta) + (n - 1) * sp.exp(beta * gamma)))


def paper_A_sq() -> sp.Expr:
    Z = sp.exp(beta) + (n - 1) * sp.exp(beta * gamma)
    return (sp.exp(2 * beta) + 2 * (n - 1) * gamma * sp.exp(beta * (1 + gamma))
            + sp.exp(2 * beta * gamma) * ((n - 1) + (n - 1) * (n - 2) * gamma)) / Z**2


# ----------------------------------------------------------------------------- scaled twins
def scaled_forms() -> dict[str, sp.Expr]:
    """The same functions written with q = exp(beta (gamma - 1)) in (0, 1]: no overflow.

    G is the velocity of u = log(1 - gamma) times s: u' = G(gamma)/s, G = -F/(1 - gamma)."""
    D = 1 + (n - 1) * q
    return {"F": 2 * q * (1 - gamma) * ((n - 1) * gamma + 1) / D,
            "G": -2 * q * ((n - 1) * gamma + 1) / D,
            "theta_A": (1 + (n - 1) * gamma * q) / D,
            "A_sq": (1 + 2 * (n - 1) * gamma * q + q**2 * ((n - 1) + (n - 1) * (n - 2) * gamma)) / D**2}


def unscale(expr: sp.Expr) -> sp.Expr:
    return expr.subs(q, sp.exp(beta * (gamma - 1)))


@lru_cache(maxsize=None)
def _twins():
    forms = scaled_forms()
    return {k: sp.lambdify((gamma, beta, n), v.subs(q, sp.exp(beta * (gamma - 1))), "numpy")
            for k, v in forms.items()}


def F_num(g, beta_, n_):
    """F(gamma) (numeric twin, vectorized over gamma)."""
    return _twins()["F"](np.asarray(g, dtype=np.float64), float(beta_), float(n_))


def G_num(g, beta_, n_):
    """s * d/dt log(1 - gamma) = -F/(1-gamma) (numeric twin)."""
    return _twins()["G"](np.asarray(g, dtype=np.float64), float(beta_), float(n_))


def theta_A_num(g, beta_, n_):
    """<theta_j, A_j> at the equiangular configuration (numeric twin)."""
    return _twins()["theta_A"](np.asarray(g, dtype=np.float64), float(beta_), float(n_))


def A_norm_num(g, beta_, n_):
    """|A_j| at the equiangular configuration (numeric twin)."""
    return np.sqrt(_twins()["A_sq"](np.asarray(g, dtype=np.float64), float(beta_), float(n_)))


# ----------------------------------------------------------------------------- Table 2
r_s, Anorm_s, thetaA_s, alpha_t_s, tau_s = sp.symbols("r A_norm theta_A alpha_t tau", positive=True)


def speed_factor(scheme: str) -> sp.Expr:
    """s_j of Table 2 in terms of the token's radius r, |A_j|, the nGPT alpha_t and time t."""
    check_scheme(scheme)
    return {"postln": sp.Integer(1), "preln": r_s,
            "mixln": sp.Piecewise((1, t_p <= tau_s), (r_s, True)),
            "periln": r_s * Anorm_s, "ngpt": Anorm_s / alpha_t_s, "sqrt": sp.sqrt(t_p + 1)}[scheme]


def radial_velocity(scheme: str) -> sp.Expr:
    """r_j' of Table 2 in terms of <theta_j, A_j> and |A_j|."""
    check_scheme(scheme)
    return {"postln": sp.Integer(0), "preln": thetaA_s,
            "mixln": sp.Piecewise((0, t_p <= tau_s), (thetaA_s, True)),
            "periln": thetaA_s / Anorm_s, "ngpt": sp.Integer(0), "sqrt": sp.Integer(0)}[scheme]


TABLE2_ARGS = (r_s, Anorm_s, thetaA_s, alpha_t_s, t_p, tau_s)


@lru_cache(maxsize=None)
def table2_twin(scheme: str):
    """Numeric twin f(r, |A|, <theta,A>, alpha_t, t, tau) -> (s, r') of Table 2."""
    return sp.lambdify(TABLE2_ARGS, (speed_factor(scheme), radial_velocity(scheme)), "numpy")


# ----------------------------------------------------------------------------- Theorem 4.1, t = 0
def speed_factor_at_start(scheme: str) -> sp.Expr:
    """s(0) at the orthonormal start (gamma = 0, radius r_0, nGPT alpha_0), from Table 2."""
    check_scheme(scheme)
    # |A(0)| = sqrt(num)/|Z| and Z = e^beta + n - 1 > 0 (n >= 2): refine |Z| to Z.
    num, den = sp.fraction(sp.together(paper_A_sq().subs({gamma: 0, beta: beta_p, n: n_p})))
    A0 = sp.refine(sp.powdenest(sp.sqrt(num) / sp.sqrt(den), force=True),
                   sp.Q.positive(sp.exp(beta_p) + n_p - 1))
    return speed_factor(scheme).subs({t_p: 0}).subs(
        {r_s: r0_p, Anorm_s: A0, alpha_t_s: alpha0_p, tau_s: 1})  # any tau > 0: Mix-LN starts with s = 1


def derived_gamma_dot0(scheme: str) -> sp.Expr:
    """gamma'(0) = F(0)/s(0), F derived from the Gram algebra."""
    F0 = derived_F().subs({gamma: 0, beta: beta_p, n: n_p})
    return sp.refine(sp.simplify(F0 / speed_factor_at_start(scheme)),
                     sp.Q.positive(sp.exp(beta_p) + n_p - 1))


def paper_gamma_dot0(scheme: str) -> sp.Expr:
    """Theorem 4.1's table, as transcribed (Lean transcription of 2510.22026v2)."""
    check_scheme(scheme)
    Zb = sp.exp(beta_p) + n_p - 1
    root = sp.sqrt(sp.exp(2 * beta_p) + n_p - 1)
    return {"postln": 2 / Zb, "preln": 2 / (r0_p * Zb), "mixln": 2 / Zb,
            "periln": 2 / (r0_p * root), "ngpt": 2 * alpha0_p / root, "sqrt": 2 / Zb}[scheme]


@lru_cache(maxsize=None)
def _gamma_dot0_twin(scheme: str):
    """Numeric twin of derived_gamma_dot0 (mpmath: no overflow of e^beta for large beta)."""
    expr = derived_gamma_dot0(scheme)
    return sp.lambdify((beta_p, n_p, r0_p, alpha0_p), expr, "mpmath")


def gamma_dot0_num(scheme: str, beta_: float, n_: int, r0_: float = 1.0, alpha0_: float = 1.0) -> float:
    """gamma'(0) of Theorem 4.1 as a float (the derived expression, evaluated in mpmath)."""
    check_scheme(scheme), check_beta(beta_), check_n(n_)
    check_positive("r0", r0_), check_positive("alpha0", alpha0_)
    return float(_gamma_dot0_twin(scheme)(beta_, n_, r0_, alpha0_))


# ----------------------------------------------------------------------------- terminal rates
RATE_KINDS = ("exponential", "power", "sqrt")
RATE_LABELS = {"exponential": "exponential rate", "power": "log-log slope", "sqrt": "sqrt(t+1)-rate"}


def variant_name(scheme: str, alpha_schedule: str = "const") -> tuple[str, str]:
    """(id suffix, human label) of a scheme and nGPT alpha schedule, e.g. ("ngpt_inv_alpha",
    "nGPT (alpha_t = 1/(t+1))")."""
    check_scheme(scheme), check_alpha_schedule(alpha_schedule)
    suffix = "_inv_alpha" if alpha_schedule == "inverse" else ""
    label = SCHEME_LABELS[scheme]
    if scheme == "ngpt":
        label += {"const": " (alpha = 1)", "inverse": " (alpha_t = 1/(t+1))"}[alpha_schedule]
    return scheme + suffix, label


def terminal_speed(scheme: str, alpha_schedule: str = "const") -> sp.Expr:
    """s(t) for large t: r ~ t for the radial schemes since <theta,A> -> 1 and |A| -> 1."""
    check_scheme(scheme), check_alpha_schedule(alpha_schedule)
    alpha_t = alpha0_p if alpha_schedule == "const" else alpha0_p / (t_p + 1)
    return {"postln": sp.Integer(1), "preln": t_p, "mixln": t_p, "periln": t_p,
            "ngpt": 1 / alpha_t, "sqrt": sp.sqrt(t_p + 1)}[scheme]


def linearization_constant() -> sp.Expr:
    """L = lim_{gamma -> 1} F(gamma)/(1 - gamma); the paper's rates need L = 2."""
    return sp.simplify(sp.limit(sp.simplify(paper_F() / (1 - gamma)), gamma, 1))


def terminal_gamma_dot(scheme: str, alpha_schedule: str = "const") -> sp.Expr:
    """gamma'(t) ~ s^{-1} exp(-L int_0^t s^{-1}) up to a constant (linearization at gamma = 1)."""
    s = terminal_speed(scheme, alpha_schedule)
    L = linearization_constant().subs({beta: beta_p, n: n_p})
    tau = sp.Symbol("tau", positive=True)
    lower = 1 if scheme in RADIAL_SCHEMES else 0  # s ~ t: integrate from 1 (constants drop out)
    integral = sp.integrate(1 / s.subs(t_p, tau), (tau, lower, t_p))
    return sp.simplify(sp.exp(-L * integral) / s)


def rate_kind(scheme: str, alpha_schedule: str = "const") -> str:
    if scheme in ("postln",) or (scheme == "ngpt" and alpha_schedule == "const"):
        return "exponential"
    return "sqrt" if scheme == "sqrt" else "power"


def terminal_exponent(scheme: str, alpha_schedule: str = "const") -> sp.Expr:
    """The exponent of the terminal law, as a limit of the linearized gamma':
    exponential: lim d/dt log gamma'; power: lim t d/dt log gamma';
    sqrt: lim d/d(sqrt t) log(sqrt(t) gamma')."""
    g = sp.log(terminal_gamma_dot(scheme, alpha_schedule))
    kind = rate_kind(scheme, alpha_schedule)
    if kind == "exponential":
        expr = sp.diff(g, t_p)
    elif kind == "power":
        expr = t_p * sp.diff(g, t_p)
    else:
        expr = 2 * sp.sqrt(t_p) * sp.diff(g + sp.log(sp.sqrt(t_p)), t_p)
    return sp.simplify(sp.limit(sp.simplify(expr), t_p, sp.oo))


# ----------------------------------------------------------------------------- radial bound
def min_radial_velocity(beta_: float, n_: int) -> tuple[float, float]:
    """Exact min over configurations of <theta_j, A_j> (Q = K = V = I), and the minimizer x.

    The minimum of (e^beta + sum_k x_k e^{beta x_k})/(e^beta + sum_k e^{beta x_k}) over
    x_k in [-1, 1] puts every other token at the same inner product x (Dinkelbach: at the optimal
    ratio lambda each term (x_k - lambda) e^{beta x_k} is minimized separately), so a scalar
    minimization in x is exact; the configuration is realizable on S^{d-1} for d >= 2."""
    b, m = check_beta(beta_), check_n(n_) - 1

    def ratio(x):  # divide numerator and denominator by e^beta
        w = m * math.exp(b * (x - 1))
        return (1 + w * x) / (1 + w)

    res = minimize_scalar(ratio, bounds=(-1.0, 1.0), method="bounded",
                          options={"xatol": 1e-12})
    best = min([(res.fun, res.x), (ratio(-1.0), -1.0), (ratio(1.0), 1.0)])
    return float(best[0]), float(best[1])


# ----------------------------------------------------------------------------- base SA / USA (part C)
def usa_F() -> sp.Expr:
    """Equiangular USA (unnormalized softmax, weights e^{beta <x_i,x_j>}/n):
    rho' = (2/n) e^{beta rho} (1 - rho)((n-1) rho + 1); derived like F with a = e^beta/n,
    b = e^{beta rho}/n instead of the softmax weights (arXiv 2312.10794)."""
    theta_A = (sp.exp(beta) + (n - 1) * gamma * sp.exp(beta * gamma)) / n
    other_A = (sp.exp(beta) * gamma + sp.exp(beta * gamma) * (1 + (n - 2) * gamma)) / n
    return sp.factor(2 * (other_A - theta_A * gamma))


def sa_survey_bound() -> sp.Expr:
    """log of the survey bound (eq. ybeta, 2312.10794) on 1 - gamma for SA from gamma(0) = 0:
    1 - gamma(t) <= (1/2) exp(-lambda (t - n e^beta / 2)), lambda = n/(n + e^{beta/2}),
    stated for t >= n e^beta / 2."""
    lam = n_p / (n_p + sp.exp(beta_p / 2))
    return sp.log(sp.Rational(1, 2)) - lam * (t_p - n_p * sp.exp(beta_p) / 2)


@lru_cache(maxsize=None)
def usa_G_twin():
    """Numeric twin of d/dt log(1 - rho) for USA: -(2/n) e^{beta rho}((n-1) rho + 1)."""
    return sp.lambdify((gamma, beta, n), sp.simplify(-usa_F() / (1 - gamma)), "numpy")


DERIVATION_SYMBOLS: dict[str, str] = {
    "gamma": "inner product <theta_j, theta_k> of two tokens at the symmetric start",
    "beta": "inverse temperature of the attention",
    "n": "number of tokens",
    "t": "time (depth)",
    "tau": "Mix-LN switch time (Post-LN before, Pre-LN after)",
    "r": "token radius r_j = |x_j|",
    "r_0": "initial token radius",
    "A_norm": "|A_j|, the norm of token j's attention vector",
    "theta_A": "<theta_j, A_j>, the radial part of token j's attention vector",
    "alpha_t": "nGPT step size at time t",
    "alpha_0": "nGPT step size at t = 0",
}
"""The legend of the symbols printed by :func:`derivations` (one symbol per quantity)."""


def derivations() -> list[tuple[str, str, object]]:
    """(name, title, compute) of the printed derivations of `resharpen derive` (2510.22026 part):
    the symmetric-start velocity F(gamma), and per scheme the speed factor s_j, radial velocity,
    gamma'(0) and the linearized terminal speed."""
    rows = [("dyn.F", "symmetric start: gamma' = F(gamma)/s_j, F derived", derived_F)]
    for scheme in SCHEMES:
        label = SCHEME_LABELS[scheme]
        rows += [(f"dyn.{scheme}.speed_factor", f"{label}: speed factor s_j",
                  lambda scheme=scheme: speed_factor(scheme)),
                 (f"dyn.{scheme}.radial_velocity", f"{label}: radial velocity r_j'",
                  lambda scheme=scheme: radial_velocity(scheme)),
                 (f"dyn.{scheme}.gamma_dot0", f"{label}: gamma'(0) (symmetric start)",
                  lambda scheme=scheme: derived_gamma_dot0(scheme)),
                 (f"dyn.{scheme}.terminal_speed", f"{label}: terminal speed factor (linearized)",
                  lambda scheme=scheme: terminal_speed(scheme))]
    return rows
