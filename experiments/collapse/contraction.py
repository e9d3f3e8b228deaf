"""The collapsed gradient flows of ``collapse.contraction_bound`` (:mod:`.claims`): the flows
through collapsed states, where the per-layer contraction bound is violated, and how tight (or
vacuous) the product bound is.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from resharpen.experiments.collapse import backward as back
from resharpen.experiments.collapse.stack_checks import one_thread
from resharpen.experiments.common.profiles import pick

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


COLLAPSED_STATES = ((1.0, None), (4.0, None), (4.0, "swiglu"))


@lru_cache(maxsize=None)
def collapsed_flows(profile: str) -> dict[str, dict]:
    """:func:`back.gradient_flow` with the independent gain, for every state of
    ``COLLAPSED_STATES``, labelled "x<k>" or "x<k>+swiglu"."""
    size = pick(profile, quick=dict(n=32, d=32, depth=12), full=dict(n=64, d=64, depth=48))
    with one_thread():
        return {f"x{k:g}{'+' + mlp if mlp else ''}":
                back.gradient_flow("post", multiplier=k, mlp=mlp, independent_gain=True, **size)
                for k, mlp in COLLAPSED_STATES}


def bound_violations(r: dict) -> tuple[float, float]:
    """(worst per-sublayer, product) relative violation of Theorem 3.6's bound with the
    independent factors c_k: max ||g_k|| / (c_k ||g_{k+1}||) - 1 and ratio / prod c_k - 1."""
    following = np.append(r["grad_x"][1:], r["grad_out"])
    per_sublayer = float(np.max(r["grad_x"] / (r["factor_bound"] * following))) - 1.0
    product = float(r["grad_x"][0] / r["grad_out"] / np.prod(r["factor_bound"])) - 1.0
    return per_sublayer, product


def tightness(r: dict) -> tuple[float, float, bool]:
    """(prod c_k, tightness = prod c_k / measured ratio ||dL/dX_1|| / ||dL/dX_L||, vacuous) of a
    collapsed stack's gradient flow: the bound is vacuous when prod c_k >= 1 (it allows the
    gradient to grow, so it says nothing about vanishing gradients)."""
    bound = float(np.prod(r["factor_bound"]))
    ratio = float(r["grad_x"][0] / r["grad_out"])
    return bound, bound / ratio, bound >= 1.0
