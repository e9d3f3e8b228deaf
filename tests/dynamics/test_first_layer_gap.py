"""The tolerance of dyn.trained.first_layer_order.*: Thm 4.2's first-layer gap G(n, d), from the
theorem's Monte Carlo at the trained set's sizes, decides the ordering (no borrowed factor)."""
from __future__ import annotations

import math

import pytest

from resharpen.experiments.dynamics import trained_checks as C


def test_the_gap_at_the_trained_set_sizes():
    """G = mean |PA|/|A| / max_j |A_j(0)| (beta = 1, Q = K = V = I, seeds 0..2): 2.25 at the quick
    set's n = 16, d = 32, 4.44 at the full set's n = 32, d = 64; above 1, unlike the gap 1/(128 bound)
    of the proved constant."""
    quick, full = C.order_factor(16, 32), C.order_factor(32, 64)
    assert quick == pytest.approx(2.2506, abs=1e-3) and full == pytest.approx(4.4371, abs=1e-3)
    for (n, d), gap in (((16, 32), quick), ((32, 64), full)):
        bound = math.sqrt(math.log(n) / n) + math.log(n) / d  # the theorem's order, by hand
        assert 1 / (128 * bound) < 1 < gap  # the proved constant's gap is below 1


def _runs(fast_over_slow: float, n: int, d: int):
    """Six seeds of peri, ngpt (fast) and post, pre (slow) at unit radius, the fast schemes'
    first-layer displacement ``fast_over_slow`` times the slow ones' (0.02 rad), +-5 %."""
    offset = {"peri": 0, "ngpt": 1, "post": 2, "pre": 3}  # other noise per arm: paired s.e. > 0

    def m(scheme, disp, k):
        r0 = 1.0 if scheme == "ngpt" else math.sqrt(d)
        return {"n_tokens": n, "d_model": d, "cos": [0.1, 0.2, 0.2, 0.2, 0.2],
                "t_sim": [0.2] * 5, "r": [r0] * 5, "r2": [1.0] * 5,
                "disp": [disp * (1 + 0.05 * (((k + offset[scheme]) * 7919) % 5 - 2) / 2)]
                + [0.05] * 3,
                "attn": [0.1] * 4, "attn_rel": [0.1] * 4, "value_gain": [1.0] * 4,
                "value_frob2": [0.0] * 4, "gains": None}
    disp = {"peri": 0.02 * fast_over_slow, "ngpt": 0.02 * fast_over_slow, "post": 0.02,
            "pre": 0.02}
    return [{"task": "t", "scheme": s, "depth": 4, "seed": k, "fit_reached": True,
             "diverged": False, "init": m(s, v, k), "trained": m(s, v, k)}
            for s, v in disp.items() for k in range(6)]


def _status(outcome) -> str:
    return "INCONCLUSIVE" if outcome.inconclusive else ("PASS" if outcome.passed else "FAIL")


def test_a_ratio_between_the_two_gaps_passes_at_the_small_size_and_fails_at_the_large():
    """A fast/slow ratio of 3 clears G = 2.25 (n = 16, d = 32) and falls short of G = 4.44
    (n = 32, d = 64): the tolerance is the theorem's gap at the units' own size."""
    small = C.first_layer_order(_runs(3.0, 16, 32), "init")
    large = C.first_layer_order(_runs(3.0, 32, 64), "init")
    assert _status(small) == "PASS" and _status(large) == "FAIL"
    assert "G = 2.25" in small.expected and "G = 4.44" in large.expected
