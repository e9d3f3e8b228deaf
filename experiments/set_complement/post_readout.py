"""The post readout's non-query margin from its definition, in numpy (no sympy, no code of
:mod:`resharpen.theory.set_complement.formulas`), and the smallest K at which it reaches a
target margin: the independent side of ``sc.readout.post_limit`` and ``sc.readout.post_K_needed``
(:mod:`.claims`).
"""
from __future__ import annotations

import numpy as np

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def post_margin_explicit(vocab: int, length: int, K, beta: float = 1.0,
                         gain: float = 1.0, width: float | None = None):
    """The post readout's non-query margin from its definition, in numpy over the v tokens: the
    final residual has token image h = e_q + (K/s) 1_t (t the s input tokens, q among them), the
    norm rescales it to g sqrt(d) h / |h - mean(h)| (RMSNorm on the centred tight embedding), the
    logits are -beta times that, and the margin is logit(valid) - logit(another input). Shares no
    code with :mod:`resharpen.theory.set_complement.formulas` (no sympy, no class vectors).
    ``K`` a number (a float returned) or an array (one margin per K)."""
    width = vocab - 1 if width is None else width
    k = np.atleast_1d(np.asarray(K, dtype=float))
    h = np.zeros((k.size, vocab))
    h[:, :length] = (k / length)[:, None]  # the s input tokens, q = token 0 among them
    h[:, 0] += 1.0
    z = gain * np.sqrt(width) * h / np.linalg.norm(h - h.mean(1, keepdims=True), axis=1,
                                                      keepdims=True)
    margin = beta * (z[:, 1] - z[:, length]) if length > 1 else np.full(k.size, np.nan)
    return float(margin[0]) if np.ndim(K) == 0 else margin


def post_K_by_bisection(vocab: int, length: int, target: float) -> float:
    """The smallest K > 0 at which :func:`post_margin_explicit` reaches ``target``: the first sign
    change on a log grid of K in [1e-8, 1e12], refined by ``scipy.optimize.brentq``; inf when the
    margin stays below the target on the whole grid."""
    from scipy.optimize import brentq

    grid = np.logspace(-8, 12, 2001)
    gap = post_margin_explicit(vocab, length, grid) - target
    crossing = np.flatnonzero((gap[:-1] < 0) & (gap[1:] >= 0))
    if not crossing.size:
        return float("inf")
    i = int(crossing[0])
    return float(brentq(lambda k: post_margin_explicit(vocab, length, k) - target,
                        grid[i], grid[i + 1], xtol=1e-300, rtol=4 * np.finfo(float).eps))
