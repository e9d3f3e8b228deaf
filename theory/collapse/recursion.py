"""The closure's prediction of token similarity along depth (arXiv 2608.09417, Stage I, Fig. 1).

Iterating the one-step laws of :mod:`resharpen.theory.collapse.attention` and :mod:`resharpen.theory.collapse.swiglu`,

    attention:  t <- t + Delta_attn(s_l, t),
    SwiGLU:     t <- t + Delta_FFN(xi_l, t)          (when the block has an FFN),

with the amounts measured against the residual's squared norm ||X_l||_F^2 (in units of n d):

    Post-Norm: every sublayer sees ||X||_F^2 = n d, so s_l = s = d sigma_W^2, xi_l = xi;
    Pre-Norm:  s_l = s / r_l, xi_l = xi / r_l, r_l = ||X_l||_F^2 / (n d) growing by the expected
               increments s f2(t) (attention) and xi m(1) (SwiGLU), so s_l ~ s / l.
"""
from __future__ import annotations

import numpy as np

from resharpen.theory.collapse.attention import _check_n, _check_s, _check_t, delta_attn, f2
from resharpen.theory.collapse.swiglu import delta_ffn, swiglu_moment

PLACEMENTS = ("post", "pre")


def recursion(n: int, depth: int, t0: float, s: float, placement: str = "post",
              xi: float | None = None, v0: float = 1.0 / 3.0) -> dict[str, np.ndarray]:
    """Predicted t_sim along depth.

    Returns ``t`` (depth + 1 values: the input, then after each block), ``t_mid`` (after each
    attention sublayer), ``delta_attn`` and ``delta_ffn`` (the per-layer steps, zeros without
    an FFN) and ``norm2`` (the residual's squared norm entering each block, units of n d)."""
    n = _check_n(n)
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    _check_t(t0, n)
    _check_s(s)
    if xi is not None:
        _check_s(xi)
    m1 = float(swiglu_moment(1.0, v0)) if xi is not None else 0.0
    t, r = float(t0), 1.0
    ts, mids, d_att, d_ffn, norms = [t], [], [], [], []
    for _ in range(depth):
        norms.append(r)
        scale = 1.0 if placement == "post" else 1.0 / r
        step = float(delta_attn(s * scale, t, n))
        if placement == "pre":
            r += s * float(f2(t, n))
        t = min(t + step, 1.0)
        mids.append(t)
        d_att.append(step)
        step = 0.0
        if xi is not None:
            step = float(delta_ffn(xi * scale, t, n, v0=v0))
            if placement == "pre":
                r += xi * m1
            t = min(max(t + step, 0.0), 1.0)
        d_ffn.append(step)
        ts.append(t)
    return {"t": np.array(ts), "t_mid": np.array(mids), "delta_attn": np.array(d_att),
            "delta_ffn": np.array(d_ffn), "norm2": np.array(norms)}
