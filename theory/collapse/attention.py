"""Similarity amplification by causal attention at initialization (arXiv 2608.09417, Stage I).

State. For token states X in R^{n x d} (rows are tokens) the *token similarity* is

    t_sim(X) = ||Pi_1 X||_F^2 / ||X||_F^2,      Pi_1 = (1/n) 1 1^T,

so t_sim = 1 exactly when all rows are equal and t_sim ~ 1/n for mutually orthogonal rows.

Prefix averaging (Assumption C.2). At initialization the causal softmax is close to uniform over
the visible prefix, P ~ C_n with (C_n)_{ij} = 1/i for j <= i, 0 otherwise. Two Frobenius norms
carry the whole computation:

    ||C_n||_F^2 = H_n,        ||Pi_1 C_n||_F^2 = 2 - H_n / n,        (H_n = sum_{k<=n} 1/k)

(the second by induction: with S_n = n ||Pi_1 C_n||_F^2 = sum_j (H_n - H_{j-1})^2 one has
S_{n+1} = S_n + 2n/(n+1) + 1/(n+1), S_1 = 1), and C_n Pi_1 = Pi_1 (rows sum to one).

Equal-correlation closure (Assumption 3.1). X X^T ~ (||X||_F^2 / n) [(1 - rho) I + n rho Pi_1]
with rho = (n t - 1)/(n - 1), i.e. equal row norms and equal pairwise correlation rho.

Theorem 3.2 (attention step). For Y = X + N(X)·P·W with W = W_V W_O having entries of variance
sigma_W^2, the attention input N(X) of squared norm n d (Post-Norm: N(X) = X), the ratio of
expectations over W gives

    Delta_attn(s, t) = E_W t_sim(Y) - t_sim(X) = s f1(t) / (1 + s f2(t)),
    s  = n d^2 sigma_W^2 / ||X||_F^2                          (the "amount of attention"),
    f1 = (1 - t)(n - H_n)(n t + 1) / (n (n - 1)),
    f2 = ((n - H_n) t + H_n - 1) / (n - 1),

positive on [1/n, 1), increasing in s, with f1 maximal at t = (n - 1)/(2n). In Post-Norm
||X||_F^2 = n d at every layer, so s = d sigma_W^2 is constant in depth; in Pre-Norm the
residual norm grows, E||Y||_F^2 = ||X||_F^2 + n d^2 sigma_W^2 f2, so s decays like 1/l.

Corollary 3.3 (de-averaging). Replacing P by P - alpha C_n multiplies the averaging part by
(1 - alpha): Delta_de(alpha) = Delta_attn((1 - alpha)^2 s, t), decreasing on [0, 1], 0 at 1.

:func:`derive_delta_attn` performs the derivation symbolically (sympy) from the closure and the
two norm identities; the numeric functions are the lambdified twins, vectorized over arrays.
"""
from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import sympy as sp

# ----------------------------------------------------------------------------- validation


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"sequence length n must be an integer >= 2, got {n!r}")
    return int(n)


def _check_t(t, n: int) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 0.0) or np.any(t > 1.0):
        raise ValueError(f"token similarity t must lie in [0, 1] (t_sim of n={n} rows "
                         f"is >= 1/n for equal-norm rows), got {t!r}")
    return t


def _check_s(s) -> np.ndarray:
    s = np.asarray(s, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0.0):
        raise ValueError(f"attention amount s must be finite and >= 0, got {s!r}")
    return s


# ----------------------------------------------------------------------------- the state


def t_sim(X: np.ndarray) -> np.ndarray:
    """t_sim(X) = ||Pi_1 X||_F^2 / ||X||_F^2 over the last two axes (rows = tokens).

    Batched: X of shape (..., n, d) gives an array of shape (...)."""
    X = np.asarray(X, dtype=float)
    if X.ndim < 2 or X.shape[-2] < 1 or X.shape[-1] < 1:
        raise ValueError(f"X must have shape (..., n, d) with n, d >= 1, got {X.shape}")
    total = np.sum(X * X, axis=(-2, -1))
    if np.any(total == 0.0):
        raise ValueError("t_sim is undefined for X = 0")
    mean = X.mean(axis=-2)
    return X.shape[-2] * np.sum(mean * mean, axis=-1) / total


def harmonic(n: int) -> float:
    """H_n = sum_{k=1}^n 1/k."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return float(np.sum(1.0 / np.arange(1, n + 1)))


def prefix_average(n: int) -> np.ndarray:
    """C_n: (C_n)_{ij} = 1/i for j <= i (1-based), else 0; the uniform causal attention."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]


def mean_projector(n: int) -> np.ndarray:
    """Pi_1 = (1/n) 1 1^T."""
    return np.full((n, n), 1.0 / n)


def rho_of_t(t, n: int):
    """Equal correlation of the closure: rho = (n t - 1)/(n - 1)."""
    return (n * np.asarray(t, dtype=float) - 1.0) / (n - 1.0)


def exact_norm_identities(n: int) -> tuple[Fraction, Fraction, Fraction]:
    """(||C_n||_F^2, ||Pi_1 C_n||_F^2, H_n) in exact rational arithmetic, the norms measured on
    the explicit matrices and H_n from sympy's ``harmonic``.

    C_n is built entry by entry from its definition ((C_n)_{ij} = 1/i for j <= i), Pi_1 C_n as
    the product (1/n) 1 (1^T C_n) of the explicit matrix, and both squared Frobenius norms are
    sums of squared entries. Nothing here uses the identities being checked."""
    n = _check_n(n)
    C = [[Fraction(1, i) if j <= i else Fraction(0) for j in range(1, n + 1)]
         for i in range(1, n + 1)]
    c_sq = sum(entry * entry for row in C for entry in row)
    mean_row = [sum(C[i][j] for i in range(n)) / n for j in range(n)]  # every row of Pi_1 C_n
    pc_sq = n * sum(entry * entry for entry in mean_row)
    h = sp.harmonic(n)
    return c_sq, pc_sq, Fraction(int(h.p), int(h.q))


# ----------------------------------------------------------------------------- symbolic


@functools.lru_cache(maxsize=None)
def derive_norm_identities() -> dict[str, sp.Expr]:
    """Symbolic proof, for general n, of ||Pi_1 C_n||_F^2 = 2 - H_n/n by induction.

    (||C_n||_F^2 = H_n, a sum of i entries (1/i)^2 per row, is checked on explicit matrices by
    :func:`exact_norm_identities` instead.) Returns residuals that must simplify to zero:
      ``base``        S_1 - (2 - H_1) with S_n = n ||Pi_1 C_n||^2 = sum_j (H_n - H_{j-1})^2,
      ``induction``   [S_n + 2 n delta + (n + 1) delta^2] - (2(n+1) - H_{n+1}),
                      delta = 1/(n+1), assuming S_n = 2 n - H_n (uses sum_j (H_n - H_{j-1}) = n,
                      i.e. 1^T C_n 1 = n).
      ``column_sums`` Sum_{j<=n} (H_n - H_{j-1}) - n  (evaluated by sympy).
    """
    n, j = sp.symbols("n j", positive=True, integer=True)
    H = sp.Symbol("H_n", positive=True)
    delta = 1 / (n + 1)
    s_n = 2 * n - H
    step = s_n + 2 * n * delta + (n + 1) * delta ** 2
    induction = sp.simplify(step - (2 * (n + 1) - (H + delta)))
    base = sp.Integer(1) - (2 - sp.harmonic(1))
    i2 = sp.symbols("i2", positive=True, integer=True)
    # sum_{j<=n} sum_{i=j}^{n} 1/i, swapped: sum_{i<=n} (1/i) * #{j <= i} = sum_i 1 = n
    column_sums = sp.simplify(sp.Sum(sp.Sum(1 / i2, (j, 1, i2)), (i2, 1, n)).doit() - n)
    return {"base": sp.simplify(base), "induction": induction, "column_sums": column_sums}


@functools.lru_cache(maxsize=None)
def derive_delta_attn() -> dict[str, sp.Expr]:
    """Derive Delta_attn from the closure with sympy; return the pieces and the residuals.

    With R = X X^T = r^2 [(1 - rho) I + n rho Pi_1] (r^2 = ||X||^2 / n, rho = (nt-1)/(n-1)),
    the attention input N(X) with Gram d[(1 - rho) I + n rho Pi_1], and W with i.i.d. entries of
    variance sigma^2 (E ||A W||_F^2 = d sigma^2 ||A||_F^2, cross terms have mean zero):

        E ||Pi_1 Y||^2 = tr(Pi_1 R) + d sigma^2 tr(C^T Pi_1 C G),
        E ||Y||^2      = tr(R)      + d sigma^2 tr(C^T C G),
        tr(C^T Pi_1 C Pi_1) = tr(C^T C Pi_1) = 1         (C Pi_1 = Pi_1),
        tr(C^T Pi_1 C) = 2 - H_n/n,  tr(C^T C) = H_n.

    Returns ``delta`` (the ratio-of-expectations step in terms of s and t), ``f1``, ``f2`` (the
    paper's forms) and ``residual`` = delta - s f1/(1 + s f2), which simplifies to 0.
    """
    n, d, t, s, sigma2, norm2 = sp.symbols("n d t s sigma2 X2", positive=True)
    H = sp.Symbol("H_n", positive=True)
    rho = (n * t - 1) / (n - 1)
    r2 = norm2 / n
    tr_pi_R = r2 * ((1 - rho) + n * rho)                 # tr(Pi_1 R)
    tr_R = r2 * n                                        # tr(R)
    tr_CtPiC_G = d * ((1 - rho) * (2 - H / n) + n * rho)  # tr(C^T Pi_1 C G)
    tr_CtC_G = d * ((1 - rho) * H + n * rho)              # tr(C^T C G)
    num = tr_pi_R + d * sigma2 * tr_CtPiC_G
    den = tr_R + d * sigma2 * tr_CtC_G
    state = sp.simplify(tr_pi_R / tr_R)
    delta = sp.simplify(num / den - state)
    delta_s = sp.simplify(delta.subs(sigma2, s * norm2 / (n * d ** 2)))
    f1 = (1 - t) * (n - H) * (n * t + 1) / (n * (n - 1))
    f2 = ((n - H) * t + H - 1) / (n - 1)
    residual = sp.simplify(delta_s - s * f1 / (1 + s * f2))
    return {"t_of_closure": state, "delta": delta_s, "f1": f1, "f2": f2,
            "residual": residual, "symbols": (n, t, s, H)}


@functools.lru_cache(maxsize=None)
def derive_attn_properties() -> dict[str, sp.Expr]:
    """Symbolic facts behind the properties of Delta_attn.

    ``dDelta_ds``  = f1 / (1 + s f2)^2 (so the sign of d/ds is the sign of f1),
    ``f2_at_1_over_n`` = H_n (n - 1)/ (n (n - 1)) ... simplified, positive,
    ``argmax_f1``  the stationary point of f1 in t, (n - 1)/(2 n),
    ``f1_second``  d^2 f1 / dt^2 (negative: a maximum),
    ``de_avg``     Delta_attn((1-alpha)^2 s, t) and its alpha-derivative.
    """
    base = derive_delta_attn()
    n, t, s, H = base["symbols"]
    alpha = sp.Symbol("alpha", nonnegative=True)
    f1, f2 = base["f1"], base["f2"]
    delta = s * f1 / (1 + s * f2)
    d_ds = sp.simplify(sp.diff(delta, s))
    stationary = sp.solve(sp.Eq(sp.diff(f1, t), 0), t)
    de = delta.subs(s, (1 - alpha) ** 2 * s)
    return {"dDelta_ds": d_ds, "dDelta_ds_residual": sp.simplify(d_ds - f1 / (1 + s * f2) ** 2),
            "f2_at_1_over_n": sp.simplify(f2.subs(t, 1 / n)),
            "argmax_f1": stationary, "f1_second": sp.simplify(sp.diff(f1, t, 2)),
            "de_avg": sp.simplify(de), "de_avg_dalpha": sp.simplify(sp.diff(de, alpha)),
            "symbols": (n, t, s, H, alpha)}


@functools.lru_cache(maxsize=None)
def _numeric_twins():
    base = derive_delta_attn()
    n, t, s, H = base["symbols"]
    f1 = sp.lambdify((n, t, H), base["f1"], "numpy")
    f2 = sp.lambdify((n, t, H), base["f2"], "numpy")
    return f1, f2


# ----------------------------------------------------------------------------- numeric twins


def f1(t, n: int):
    """f1(t) = (1 - t)(n - H_n)(n t + 1) / (n (n - 1))."""
    n = _check_n(n)
    return _numeric_twins()[0](n, _check_t(t, n), harmonic(n))


def f2(t, n: int):
    """f2(t) = ((n - H_n) t + H_n - 1) / (n - 1)."""
    n = _check_n(n)
    return _numeric_twins()[1](n, _check_t(t, n), harmonic(n))


def delta_attn(s, t, n: int):
    """Theorem 3.2: Delta_attn(s, t) = s f1(t) / (1 + s f2(t)), vectorized over s and t."""
    s = _check_s(s)
    return s * f1(t, n) / (1.0 + s * f2(t, n))


def delta_deaveraged(alpha, s, t, n: int):
    """Corollary 3.3: the step with P replaced by P - alpha C_n, = Delta_attn((1-alpha)^2 s, t)."""
    alpha = np.asarray(alpha, dtype=float)
    if not np.all(np.isfinite(alpha)):
        raise ValueError(f"de-averaging strength alpha must be finite, got {alpha!r}")
    return delta_attn((1.0 - alpha) ** 2 * _check_s(s), t, n)


def row_norm_profile(n: int, d: int, rho: float, sigma_w2: float) -> np.ndarray:
    """Lemma C.5: E||Y_i||^2 = alpha + beta / i after one attention step with P = C_n, for rows
    of squared norm d and correlation rho: y_i = x_i + (1/i) sum_{j<=i} x_j W gives
    alpha = d + d^2 rho sigma_W^2, beta = d^2 sigma_W^2 (1 - rho). Returns the n values."""
    n = _check_n(n)
    if not -1.0 / (n - 1) <= rho <= 1.0:
        raise ValueError(f"equal correlation rho must lie in [-1/(n-1), 1], got {rho!r}")
    alpha = d + d * d * rho * sigma_w2
    beta = d * d * sigma_w2 * (1.0 - rho)
    return alpha + beta / np.arange(1, n + 1)


DERIVATION_SYMBOLS: dict[str, str] = {
    "n": "number of tokens (sequence length)",
    "t": "token similarity t_sim(X) = |Pi_1 X|^2 / |X|^2 of the layer input",
    "s": "amount of attention n d^2 sigma_W^2 / |X|^2",
    "H_n": "harmonic number 1 + 1/2 + ... + 1/n",
    "alpha": "de-averaging strength (P -> P - alpha C_n)",
}
"""The legend of the symbols printed by :func:`derivations` (one symbol per quantity)."""


def derivations() -> list[tuple[str, str, object]]:
    """(name, title, compute) of the printed derivations of `resharpen derive` (2608.09417 part):
    the attention step Delta_attn = s f1/(1 + s f2) from the equal-correlation closure and its
    properties."""
    def step(key: str):
        return lambda: derive_delta_attn()[key]

    def prop(key: str):
        return lambda: derive_attn_properties()[key]

    return [
        ("collapse.delta_attn", "Delta_attn(s, t) from the closure", step("delta")),
        ("collapse.f1", "f1(t)", step("f1")),
        ("collapse.f2", "f2(t)", step("f2")),
        ("collapse.delta_residual", "Delta_attn - s f1/(1 + s f2) (residual)", step("residual")),
        ("collapse.dDelta_ds", "d Delta_attn / ds", prop("dDelta_ds")),
        ("collapse.dDelta_ds_residual", "d Delta_attn / ds - f1/(1 + s f2)^2 (residual)",
         prop("dDelta_ds_residual")),
        ("collapse.f2_at_1_over_n", "f2(1/n)", prop("f2_at_1_over_n")),
        ("collapse.argmax_f1", "stationary point of f1 in t",
         lambda: sp.Tuple(*derive_attn_properties()["argmax_f1"])),
        ("collapse.f1_second", "d^2 f1 / dt^2 (negative: f1 has a maximum)", prop("f1_second")),
        ("collapse.de_averaged", "de-averaged step Delta_attn((1 - alpha)^2 s, t)", prop("de_avg")),
        ("collapse.de_averaged_dalpha", "d/dalpha of the de-averaged step", prop("de_avg_dalpha")),
    ]
