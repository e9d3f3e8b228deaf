"""resharpen.theory.dynamics.speed: the symmetric-start algebra against independent numerics, the gamma'(0)
table, the linearized rates, the scalar ODE, the radial bound and the argument checks."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from resharpen.theory.dynamics import speed as nd
from resharpen.theory.dynamics import ode
def equiangular(n: int, gamma: float) -> np.ndarray:
    """n unit vectors in R^{n+1} with pairwise inner product gamma >= 0."""
    X = math.sqrt(1 - gamma) * np.eye(n, n + 1)
    X[:, n] = math.sqrt(gamma)
    return X


def direct_attention(theta: np.ndarray, beta: float) -> np.ndarray:
    """Softmax attention with Q = K = V = I, written independently of resharpen.experiments.dynamics.particles."""
    W = np.exp(beta * theta @ theta.T)
    return (W / W.sum(axis=1, keepdims=True)) @ theta


@pytest.mark.parametrize("n,gamma,beta", [(3, 0.0, 1.0), (4, 0.3, 2.5), (7, 0.9, 0.4), (5, 0.6, 12.0)])
def test_symmetric_functions_match_explicit_vectors(n, gamma, beta):
    theta = equiangular(n, gamma)
    A = direct_attention(theta, beta)
    PA0 = A[0] - (theta[0] @ A[0]) * theta[0]
    assert theta[0] @ A[0] == pytest.approx(float(nd.theta_A_num(gamma, beta, n)), rel=1e-12)
    assert np.linalg.norm(A[0]) == pytest.approx(float(nd.A_norm_num(gamma, beta, n)), rel=1e-12)
    # gamma' = <P A_0, theta_1> + <theta_0, P A_1> = F(gamma) at s = 1
    PA1 = A[1] - (theta[1] @ A[1]) * theta[1]
    assert PA0 @ theta[1] + theta[0] @ PA1 == pytest.approx(float(nd.F_num(gamma, beta, n)), rel=1e-10)


def test_derived_F_matches_paper_and_scaled_twins_do_not_overflow():
    assert sp.simplify(nd.derived_F() - nd.paper_F()) == 0
    g = np.linspace(-0.05, 1.0, 11)
    for fn in (nd.F_num, nd.G_num, nd.theta_A_num, nd.A_norm_num):
        assert np.all(np.isfinite(fn(g, 700.0, 10**6)))       # e^700 would overflow unscaled
    assert float(nd.theta_A_num(1.0, 5.0, 256)) == pytest.approx(1.0)
    assert float(nd.F_num(1.0, 5.0, 256)) == 0.0


@pytest.mark.parametrize("scheme", nd.SCHEMES)
def test_gamma_dot0_derived_equals_table(scheme):
    assert sp.simplify(nd.derived_gamma_dot0(scheme) - nd.paper_gamma_dot0(scheme)) == 0


def test_gamma_dot0_numeric_values():
    Z = math.exp(2.0) + 9
    root = math.sqrt(math.exp(4.0) + 9)
    assert nd.gamma_dot0_num("postln", 2.0, 10) == pytest.approx(2 / Z, rel=1e-14)
    assert nd.gamma_dot0_num("preln", 2.0, 10, r0_=3.0) == pytest.approx(2 / (3 * Z), rel=1e-14)
    assert nd.gamma_dot0_num("periln", 2.0, 10, r0_=3.0) == pytest.approx(2 / (3 * root), rel=1e-14)
    assert nd.gamma_dot0_num("ngpt", 2.0, 10, alpha0_=0.5) == pytest.approx(1 / root, rel=1e-14)
    # e^700 is near the float64 limit: evaluated in mpmath, 2/(e^700 + 9) still comes out right
    assert nd.gamma_dot0_num("postln", 700.0, 10) == pytest.approx(2 * math.exp(-700.0), rel=1e-12)


def test_linearized_terminal_exponents():
    assert nd.linearization_constant() == 2
    assert nd.terminal_exponent("postln") == -2
    assert nd.terminal_exponent("preln") == -3
    assert nd.terminal_exponent("sqrt") == -4
    assert sp.simplify(nd.terminal_exponent("ngpt", "inverse") + 2 * nd.alpha0_p + 1) == 0


@pytest.mark.parametrize("kind,law,expected", [
    ("exponential", lambda t: 3.0 - 2.5 * t, -2.5),
    ("power", lambda t: 1.0 - 3.0 * np.log(t), -3.0),
    ("sqrt", lambda t: 2.0 - 4.0 * np.sqrt(t + 1) - 0.5 * np.log(t + 1), -4.0)])
def test_fit_recovers_synthetic_exponents(kind, law, expected):
    t = np.linspace(10, 100, 50)
    assert ode.fit_terminal_exponent(t, law(t), kind, (10, 100)) == pytest.approx(expected, abs=1e-10)
    with pytest.raises(ValueError, match="fewer than 3"):
        ode.fit_terminal_exponent(t, law(t), kind, (500, 600))


@pytest.mark.parametrize("scheme", nd.SCHEMES)
def test_scalar_ode_solution_properties(scheme):
    sol = ode.solve_symmetric(scheme, 2.0, 8, 60.0, r0_=1.5)
    assert sol.gamma[0] == 0.0
    assert np.all(np.diff(sol.gamma) >= -1e-15) and sol.gamma[-1] > 0.99
    assert np.exp(sol.log_gamma_dot[0]) == pytest.approx(nd.gamma_dot0_num(scheme, 2.0, 8, 1.5), rel=1e-9)
    if scheme in ("preln", "periln"):
        assert sol.r[-1] > 1.5 + 0.5 * 60           # r grows at least like t/2 here
    elif scheme != "mixln":
        assert np.all(sol.r == 1.5)


def test_mixln_is_postln_until_tau():
    t = np.linspace(0, 3, 31)
    mix = ode.solve_symmetric("mixln", 3.0, 16, 3.0, tau=2.0, t_eval=t)
    post = ode.solve_symmetric("postln", 3.0, 16, 3.0, t_eval=t)
    before = mix.t < 2.0
    np.testing.assert_allclose(mix.gamma[before], post.gamma[before], rtol=1e-9, atol=1e-12)
    assert mix.gamma[-1] < post.gamma[-1]            # slower after the switch to s = r


def test_min_radial_velocity_against_brute_force():
    for beta, n in [(1.0, 3), (2.0, 7), (2.0, 60), (0.5, 30)]:
        value, x = nd.min_radial_velocity(beta, n)
        grid = np.linspace(-1, 1, 200001)
        w = (n - 1) * np.exp(beta * (grid - 1))
        brute = ((1 + w * grid) / (1 + w)).min()
        assert value == pytest.approx(brute, abs=1e-9)
        if n <= math.exp(beta):
            assert value >= (math.exp(beta) - n + 1) / (n * math.exp(beta)) >= 1 / (n * math.exp(beta))


@settings(max_examples=60, deadline=None)
@given(beta=st.floats(0.2, 6.0), seed=st.integers(0, 2**31), d=st.integers(2, 6), data=st.data())
def test_radial_bound_on_random_configurations(beta, seed, d, data):
    n = data.draw(st.integers(2, max(2, math.floor(math.exp(beta)))))
    x = np.random.default_rng(seed).standard_normal((n, d))
    theta = x / np.linalg.norm(x, axis=1, keepdims=True)
    radial = np.einsum("ij,ij->i", theta, direct_attention(theta, beta))
    assert radial.min() >= (math.exp(beta) - n + 1) / (n * math.exp(beta)) - 1e-12


@pytest.mark.parametrize("call,match", [
    (lambda: ode.solve_symmetric("postln", 0.0, 8, 1.0), "beta must be"),
    (lambda: ode.solve_symmetric("postln", -1.0, 8, 1.0), "beta must be"),
    (lambda: ode.solve_symmetric("postln", 1.0, 1, 1.0), "n .* >= 2"),
    (lambda: ode.solve_symmetric("layernorm", 1.0, 8, 1.0), "unknown scheme 'layernorm'"),
    (lambda: ode.solve_symmetric("postln", 1.0, 8, 0.0), "horizon"),
    (lambda: ode.solve_symmetric("postln", 1.0, 8, -5.0), "horizon"),
    (lambda: ode.solve_symmetric("postln", 1.0, 8, 1.0, gamma0=1.0), "gamma0"),
    (lambda: ode.solve_symmetric("ngpt", 1.0, 8, 1.0, alpha_schedule="cosine"), "alpha schedule"),
    (lambda: nd.check_d(0), "d .* >= 1"),
    (lambda: nd.gamma_dot0_num("preln", 1.0, 8, r0_=0.0), "r0"),
])
def test_argument_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_usa_equiangular_velocity_matches_explicit_vectors():
    n, g, beta = 5, 0.4, 1.7
    theta = equiangular(n, g)
    A = (np.exp(beta * theta @ theta.T) / n) @ theta          # USA: weights e^{beta<.,.>}/n
    PA = A - np.einsum("ij,ij->i", theta, A)[:, None] * theta
    rho_dot = PA[0] @ theta[1] + theta[0] @ PA[1]
    value = float(nd.usa_F().subs({nd.gamma: g, nd.beta: beta, nd.n: n}))
    assert rho_dot == pytest.approx(value, rel=1e-12)
    t, u = ode.solve_usa(1.0, 8, 20.0, t_eval=np.linspace(10, 20, 11))
    assert np.polyfit(t, u, 1)[0] == pytest.approx(-2 * math.e, rel=1e-6)


def test_survey_bound_value():
    f = sp.lambdify((nd.beta_p, nd.n_p, nd.t_p), nd.sa_survey_bound())
    lam = 4 / (4 + math.exp(0.5))
    assert f(1.0, 4, 3.0) == pytest.approx(math.log(0.5) - lam * (3.0 - 2 * math.e), rel=1e-12)
