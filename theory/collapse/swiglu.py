"""The SwiGLU similarity step at initialization (arXiv 2608.09417, Theorem 3.4).

SwiGLU: FFN(X) = (SiLU(X W1) * X W3) W2 with W1, W3 in R^{d x d_ff} of entry variances
sigma_1^2, sigma_3^2 and W2 in R^{d_ff x d} of variance sigma_2^2. For a Post-Norm FFN input X
(rows of squared norm d, pairwise correlation rho = (n t - 1)/(n - 1)), with

    m(rho) = E[SiLU(u) SiLU(v)],   (u, v) ~ N(0, v0 [[1, rho], [rho, 1]]),  v0 = d sigma_1^2,

the expectations over W3 then W1 give E (H H^T)_{ij} = d_ff sigma_3^2 G_ij m(rho_ij) with
G = X X^T (G_ii = d, G_ij = d rho: the off-diagonal Gram entries must be kept), hence

    Delta_FFN(xi, t) = xi (t - 1/n) (m(rho(t)) - m(1)) / (1 + xi m(1)),   xi = d d_ff s2^2 s3^2.

By Mehler's expansion m(rho) = sum_k c_k^2 rho^k / k! (c_k the Hermite coefficients of
SiLU(sqrt(v0) z)), so m is increasing on [0, 1] and |m(rho)| <= m(1): Delta_FFN <= 0 on [1/n, 1]
and |Delta_FFN| <= xi (t - 1/n) m(1) <= xi m(1): a small damping. At the standard
initialization (all variances 1/(3 fan_in)) v0 = 1/3 and xi = 1/9, with m(0) ~ 0.006 and
m(1) ~ 0.100, so |Delta_FFN| <= 0.011.

m is computed by tensor Gauss-Hermite quadrature (``numpy.polynomial.hermite_e``), exact to
rounding for this smooth integrand at the default 64 nodes per axis.
"""
from __future__ import annotations

import functools

import numpy as np

from resharpen.theory.collapse.attention import _check_n, _check_t, rho_of_t


def silu(x):
    """SiLU(x) = x / (1 + e^{-x}), computed stably."""
    x = np.asarray(x, dtype=float)
    return x * 0.5 * (1.0 + np.tanh(0.5 * x))


@functools.lru_cache(maxsize=8)
def _nodes(order: int) -> tuple[np.ndarray, np.ndarray]:
    z, w = np.polynomial.hermite_e.hermegauss(order)
    return z, w / np.sqrt(2.0 * np.pi)  # weights of the standard normal


def swiglu_moment(rho, v0: float = 1.0 / 3.0, order: int = 64):
    """m(rho) = E[SiLU(u) SiLU(v)] for (u, v) ~ N(0, v0 [[1, rho], [rho, 1]]), vectorized in rho.

    u = sqrt(v0) z1, v = sqrt(v0) (rho z1 + sqrt(1 - rho^2) z2) with z1, z2 standard normal."""
    rho = np.asarray(rho, dtype=float)
    if not np.all(np.isfinite(rho)) or np.any(np.abs(rho) > 1.0):
        raise ValueError(f"correlation rho must lie in [-1, 1], got {rho!r}")
    if not (np.isfinite(v0) and v0 > 0):
        raise ValueError(f"pre-activation variance v0 must be finite and > 0, got {v0!r}")
    if not (isinstance(order, int) and order >= 4):
        raise ValueError(f"quadrature order must be an integer >= 4, got {order!r}")
    z, w = _nodes(order)
    r = rho[..., None, None]
    z1, z2 = z[:, None], z[None, :]
    u = np.sqrt(v0) * z1
    v = np.sqrt(v0) * (r * z1 + np.sqrt(1.0 - r * r) * z2)
    return np.sum(w[:, None] * w[None, :] * silu(u) * silu(v), axis=(-2, -1))


def delta_ffn(xi, t, n: int, v0: float = 1.0 / 3.0):
    """Theorem 3.4: Delta_FFN(xi, t) = xi (t - 1/n)(m(rho(t)) - m(1)) / (1 + xi m(1))."""
    n = _check_n(n)
    t = _check_t(t, n)
    xi = np.asarray(xi, dtype=float)
    if not np.all(np.isfinite(xi)) or np.any(xi < 0):
        raise ValueError(f"FFN amount xi must be finite and >= 0, got {xi!r}")
    rho = np.clip(rho_of_t(t, n), -1.0, 1.0)
    m1 = swiglu_moment(1.0, v0)
    return xi * (t - 1.0 / n) * (swiglu_moment(rho, v0) - m1) / (1.0 + xi * m1)


def ffn_bound(xi, v0: float = 1.0 / 3.0):
    """The damping bound |Delta_FFN| <= xi m(1)."""
    return np.asarray(xi, dtype=float) * swiglu_moment(1.0, v0)
