"""What the symbolic claims of ``dyn.*`` (:mod:`.claims`) compute, in sympy: the symmetric-start
reduction, the linearization at consensus and the terminal laws of Theorem 4.1.

At the equiangular configuration (Gram matrix 1 on the diagonal, gamma off it) the attention
output is A_j = a theta_j + b sum_{l != j} theta_l, so gamma' = F(gamma)/s with
F = 2 (<A_j, theta_k> - <theta_j, A_j> gamma) (:func:`symmetric_identities`: the derived F,
<theta, A> and |A|^2 against the printed ones, and the overflow-free forms in
q = e^{beta (gamma - 1)} against them). Near gamma = 1, F ~ L (1 - gamma) with L = 2, and
<theta, A>, |A| -> 1 (:func:`linearization_limits`); the linearized gamma' then decays with the
exponents of :data:`TERMINAL` (:func:`terminal_mismatches`).
"""
from __future__ import annotations

import sympy as sp

from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""

FIG_BETA, FIG_N = 5.0, 256          # the paper's figure parameters

TERMINAL = [("postln", "const", -2), ("preln", "const", -3), ("mixln", "const", -3),
            ("periln", "const", -3), ("ngpt", "const", "-2*alpha_0"),
            ("ngpt", "inverse", "-2*alpha_0 - 1"), ("sqrt", "const", -4)]
"""The t -> infinity column of the Theorem 4.1 table, typed from the paper: (scheme, nGPT's
alpha schedule, exponent of gamma'): the exponential rate of Post-LN (e^{-2t}) and of nGPT with
constant alpha_0 (e^{-2 alpha_0 t}), the log-log slope of Pre-LN, Mix-LN, Peri-LN (t^-3) and of
nGPT with alpha_t = alpha_0/(t + 1) (t^{-2 alpha_0 - 1}), the sqrt(t)-rate of sqrt scaling
(e^{-4 sqrt t})."""


def is_zero(expr: sp.Expr) -> bool:
    """Whether sympy simplifies ``expr`` to 0."""
    return sp.simplify(expr) == 0


def symmetric_identities() -> dict[str, bool]:
    """{identity: it holds}: the derived F, <theta, A> and |A|^2 against the printed ones, and
    each scaled form (q = e^{beta (gamma - 1)}, G = -F/(1 - gamma)) unscaled against its
    printed function."""
    ip = nd.symmetric_inner_products()
    diffs = {"F": nd.derived_F() - nd.paper_F(),
             "<theta,A>": ip["theta_A"] - nd.paper_theta_A(),
             "|A|^2": ip["A_sq"] - nd.paper_A_sq()}
    refs = {"F": nd.paper_F(), "theta_A": nd.paper_theta_A(), "A_sq": nd.paper_A_sq(),
            "G": -nd.paper_F() / (1 - nd.gamma)}
    scaled = {f"scaled {k}": nd.unscale(v) - refs[k] for k, v in nd.scaled_forms().items()}
    return {k: is_zero(v) for k, v in {**diffs, **scaled}.items()}


def linearization_limits() -> tuple:
    """(L = lim F/(1 - gamma), lim <theta, A>, lim |A|) as gamma -> 1, simplified."""
    limits = (nd.linearization_constant(),
              sp.limit(nd.paper_theta_A(), nd.gamma, 1),
              sp.sqrt(sp.simplify(sp.limit(nd.paper_A_sq(), nd.gamma, 1))))
    return tuple(sp.simplify(x) for x in limits)


def terminal_mismatches() -> tuple[list[str], list[str]]:
    """(["scheme:exponent", ...] of the linearized gamma', the schemes whose exponent is not the
    table's) over :data:`TERMINAL`; nGPT with alpha_t = 1/(t + 1) is labelled ngpt(1/t)."""
    got, bad = [], []
    for scheme, schedule, want in TERMINAL:
        exponent = nd.terminal_exponent(scheme, schedule)
        label = scheme + ("(1/t)" if schedule == "inverse" else "")
        got.append(f"{label}:{exponent}")
        if not is_zero(exponent - sp.sympify(want, locals={"alpha_0": nd.alpha0_p})):
            bad.append(label)
    return got, bad


def usa_rate_symbolic() -> tuple[bool, sp.Expr, bool]:
    """(the derived USA F equals the printed 2 e^{beta gamma} (1 - gamma)((n - 1) gamma + 1)/n,
    L = lim F/(1 - gamma) as gamma -> 1, L = 2 e^beta)."""
    printed = 2 * sp.exp(nd.beta * nd.gamma) * (1 - nd.gamma) * ((nd.n - 1) * nd.gamma + 1) / nd.n
    derived_ok = is_zero(nd.usa_F() - printed)
    limit = sp.simplify(sp.limit(sp.simplify(nd.usa_F() / (1 - nd.gamma)), nd.gamma, 1))
    return derived_ok, limit, is_zero(limit - 2 * sp.exp(nd.beta))


def gamma_dot0_entry(scheme: str, paper: sp.Expr) -> tuple[sp.Expr, bool, float, float]:
    """(the derived gamma'(0) = F(0)/s(0), it equals ``paper``, the derived value's numeric twin
    at the figure's beta and n, ``paper``'s value there) for ``scheme`` (r(0) = 1, alpha_0 = 1)."""
    derived = nd.derived_gamma_dot0(scheme)
    ok = is_zero(derived - paper)
    value = nd.gamma_dot0_num(scheme, FIG_BETA, FIG_N)
    ref = float(paper.subs({nd.beta_p: FIG_BETA, nd.n_p: FIG_N, nd.r0_p: 1, nd.alpha0_p: 1}))
    return derived, ok, value, ref
