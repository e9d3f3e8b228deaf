"""Pure-math parts of the Post-Norm collapse theory (theory/collapse*.py)."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from resharpen.theory.collapse import attention as col
from resharpen.theory.collapse import swiglu as ffn
from resharpen.theory.collapse import rms
from resharpen.theory.collapse.recursion import recursion


@pytest.mark.parametrize("n", [2, 3, 7, 50])
def test_norm_identities_exact_and_float(n):
    c_sq, pc_sq, h = col.exact_norm_identities(n)
    assert c_sq == h and pc_sq == 2 - h / n
    C, P = col.prefix_average(n), col.mean_projector(n)
    assert np.isclose(np.sum(C ** 2), float(h), rtol=1e-13)
    assert np.isclose(np.sum((P @ C) ** 2), 2 - col.harmonic(n) / n, rtol=1e-13)
    assert np.allclose(C @ P, P)  # rows of C_n sum to one


def test_symbolic_residuals_vanish():
    assert all(r == 0 for r in col.derive_norm_identities().values())
    assert col.derive_delta_attn()["residual"] == 0


def test_delta_attn_matches_ratio_of_expectations_directly():
    """Evaluate E||Pi Y||^2 / E||Y||^2 with explicit matrices of the closure."""
    n, d, t, sigma2 = 9, 5, 0.4, 0.07
    rho = (n * t - 1) / (n - 1)
    G = d * ((1 - rho) * np.eye(n) + rho * np.ones((n, n)))
    C, P = col.prefix_average(n), col.mean_projector(n)
    num = np.trace(P @ G) + d * sigma2 * np.trace(C.T @ P @ C @ G)
    den = np.trace(G) + d * sigma2 * np.trace(C.T @ C @ G)
    assert np.isclose(num / den - t, col.delta_attn(d * sigma2, t, n), rtol=1e-12)


@given(n=st.integers(3, 500), t=st.floats(0, 1), s1=st.floats(0, 50), s2=st.floats(0, 50))
@settings(max_examples=100, deadline=None)
@example(n=3, t=0.0, s1=0.0, s2=5e-324)
def test_delta_attn_positive_and_monotone(n, t, s1, s2):
    t = 1.0 / n + (1 - 1.0 / n) * t * 0.999
    lo, hi = sorted((s1, s2))
    assert col.delta_attn(hi, t, n) >= col.delta_attn(lo, t, n)
    # positive for s > 0; in float64 only where the numerator s f1(t) does not underflow
    # (hypothesis found s = 5e-324, the smallest subnormal, where s f1 rounds to 0)
    if hi * col.f1(t, n) >= np.finfo(float).tiny:
        assert col.delta_attn(hi, t, n) > 0


def test_deaveraging_endpoints():
    assert col.delta_deaveraged(0.0, 0.5, 0.3, 64) == pytest.approx(col.delta_attn(0.5, 0.3, 64))
    assert col.delta_deaveraged(1.0, 0.5, 0.3, 64) == 0


@pytest.mark.parametrize("bad", [dict(s=-1, t=0.5, n=4), dict(s=1, t=1.5, n=4),
                                 dict(s=1, t=0.5, n=1), dict(s=1, t=0.5, n=2.5)])
def test_bad_parameters_raise(bad):
    with pytest.raises(ValueError):
        col.delta_attn(bad["s"], bad["t"], bad["n"])


def test_t_sim_extremes():
    rng = np.random.default_rng(0)
    row = rng.standard_normal(5)
    assert col.t_sim(np.tile(row, (4, 1))) == pytest.approx(1.0)
    assert col.t_sim(np.eye(6)) == pytest.approx(1 / 6)
    with pytest.raises(ValueError):
        col.t_sim(np.zeros((3, 2)))


def test_swiglu_moment_quadrature_matches_monte_carlo():
    rng = np.random.default_rng(1)
    rho = 0.6
    z = rng.standard_normal((2, 400_000))
    u = np.sqrt(1 / 3) * z[0]
    v = np.sqrt(1 / 3) * (rho * z[0] + np.sqrt(1 - rho ** 2) * z[1])
    mc = ffn.silu(u) * ffn.silu(v)
    assert abs(mc.mean() - ffn.swiglu_moment(rho)) < 4 * mc.std() / np.sqrt(mc.size)
    assert ffn.swiglu_moment(0.0) == pytest.approx(0.006, abs=5e-4)
    assert ffn.swiglu_moment(1.0) == pytest.approx(0.100, abs=5e-4)
    with pytest.raises(ValueError):
        ffn.swiglu_moment(1.5)


def test_delta_ffn_is_damping_within_bound():
    t = np.linspace(1 / 64, 1, 50)
    step = ffn.delta_ffn(1 / 9, t, 64)
    assert np.all(step <= 0) and np.all(np.abs(step) <= ffn.ffn_bound(1 / 9))
    assert step[0] == 0 and step[-1] == 0


def test_rescaling_bounds_hold_and_are_attained_at_eta_zero():
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((8, 4)) + 1.0
    t = float(col.t_sim(Y))
    assert rms.rescaling_bounds(t, 0.0) == pytest.approx((t, t))
    for _ in range(200):
        scales = rng.uniform(0.5, 1.5, 8)
        lo, hi = rms.rescaling_bounds(t, rms.rescaling_eta(scales))
        assert lo - 1e-12 <= col.t_sim(scales[:, None] * Y) <= hi + 1e-12
    with pytest.raises(ValueError):
        rms.rescaling_bounds(0.5, 1.0)


def test_rms_jacobian_properties():
    y = np.array([3.0, -1.0, 2.0, 0.5])
    J = rms.rms_jacobian(y)
    assert np.allclose(J @ y, 0)
    assert np.isclose(np.linalg.norm(J, 2), rms.rms_jacobian_norm(y))
    assert rms.contraction_factor(np.linalg.norm(y), 1.0, 4) == pytest.approx(rms.rms_jacobian_norm(y))


def test_loss_floor_and_frequency_predictor():
    labels = np.array([0, 0, 1, 2, 2, 2])
    p = rms.label_frequencies(labels, 4)
    assert np.allclose(p, [2 / 6, 1 / 6, 3 / 6, 0])
    logits = np.tile(np.log(np.maximum(p, 1e-300)), (6, 1))
    assert rms.cross_entropy(logits, labels) == pytest.approx(rms.frequency_loss(labels, 4))
    W = np.eye(4)
    assert rms.loss_floor(labels, 4, W, 0.0) == pytest.approx(rms.frequency_loss(labels, 4))
    with pytest.raises(ValueError):
        rms.label_frequencies(np.array([0, 5]), 4)


def test_recursion_post_saturates_pre_slows():
    post = recursion(256, 48, 0.09, 1 / 9, "post")["t"]
    pre = recursion(256, 48, 0.09, 1 / 9, "pre")["t"]
    assert np.all(np.diff(post) > 0) and post[-1] > 0.9
    assert pre[-1] < post[-1]
    steps = recursion(256, 48, 0.09, 1 / 9, "pre")["delta_attn"]
    assert steps[-1] < steps[10]  # Pre-Norm increments decay with depth (s ~ 1/l)
    with_ffn = recursion(256, 48, 0.09, 1 / 9, "post", xi=1 / 9)
    assert np.all(with_ffn["delta_ffn"] <= 0) and with_ffn["t"][-1] < post[-1]
    with pytest.raises(ValueError):
        recursion(256, 0, 0.09, 1 / 9)
    with pytest.raises(ValueError):
        recursion(256, 4, 0.09, 1 / 9, "peri")


def test_row_norm_profile_matches_direct_expectation():
    """E||x_i + (C_n X W)_i||^2 over W: d + sigma^2 d ||(C_n X)_i||^2 with the closure's Gram."""
    n, d, rho, sigma2 = 6, 4, 0.3, 0.05
    G = d * ((1 - rho) * np.eye(n) + rho * np.ones((n, n)))
    C = col.prefix_average(n)
    direct = np.diag(G) + sigma2 * d * np.diag(C @ G @ C.T)
    assert np.allclose(col.row_norm_profile(n, d, rho, sigma2), direct)
    with pytest.raises(ValueError):
        col.row_norm_profile(n, d, 1.5, sigma2)
