"""Theorem 3.6 with an independent gain: the bound holds (and is vacuous at random init), and its
condition c < 1 iff ||y|| > a sqrt d is checked both ways against the measured largest gain of
each block (a stack built to contract, the random stacks, planted disagreements)."""
import math

import numpy as np
import pytest
import torch

from resharpen.experiments.collapse import backward as back
from resharpen.experiments.collapse import claims
from resharpen.experiments.collapse.stack import StackConfig, build_stack

N = D = 32


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/collapse/conftest.py


def contracting_stack(depth: int, m: float = 1.0):
    """A collapsed Post-Norm stack whose attention maps values by W_V W_O = m x x^T/|x|^2 (x the
    collapsed row): y = (1 + m) x, |y| = (1 + m) sqrt d, and on gradients orthogonal to y the
    sublayer acts as the identity (a = 1), so c_k = 1/(1 + m) < 1 at every sublayer."""
    model = build_stack(StackConfig(n=N, d=D, depth=depth, norm="post", mlp=None, seed=0))
    x = back._collapsed_input(N, D, 0)[0, 0]
    unit = x / x.norm()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.W_V.copy_(torch.eye(D, dtype=torch.float64)[None])
            block.attn.W_O.copy_(m * torch.outer(unit, unit)[None])
    return model


def test_sublayer_gain_matches_the_exact_jacobian_norm():
    model = build_stack(StackConfig(n=6, d=5, depth=1, norm="post", mlp="swiglu", multiplier=4.0, t0=0.5))
    x = back._collapsed_input(6, 5, 0)
    function = back._sublayer_function(model.blocks[0], "mlp")
    a, steps = back.sublayer_gain(function, x)
    y = function(x).detach()
    J = torch.autograd.functional.jacobian(function, x).reshape(30, 30)
    unit = (y / y.norm(dim=-1, keepdim=True)).reshape(6, 5)
    P = torch.block_diag(*[torch.eye(5, dtype=x.dtype) - torch.outer(u, u) for u in unit])
    exact = float(torch.linalg.matrix_norm(J.T @ P, ord=2))
    assert steps < 200 and math.isclose(a, exact, rel_tol=1e-9)


def test_jacobian_norm_of_a_block_is_the_theorems_c():
    """The whole block X -> RMS(X + f(X)) of the built stack multiplies gradients by at most
    c = a sqrt d / ||y|| = 1/(1 + m), and some gradient attains it."""
    model = contracting_stack(2, m=1.0)
    block = model.blocks[0]
    x = back._collapsed_input(N, D, 0)
    inner = back._sublayer_function(block, "attn")
    gain, steps = back.jacobian_norm(lambda z: block.attn_norm_out(inner(z)), x)
    a, _ = back.sublayer_gain(inner, x)
    y = float(inner(x).detach().norm(dim=-1).max())
    assert math.isclose(a, 1.0, rel_tol=1e-8) and math.isclose(gain, 0.5, rel_tol=1e-8)
    assert math.isclose(gain, a * math.sqrt(D) / y, rel_tol=1e-8) and steps < 200


def test_jacobian_norm_matches_the_exact_spectral_norm():
    model = build_stack(StackConfig(n=6, d=5, depth=1, norm="post", mlp="swiglu", multiplier=4.0, t0=0.5))
    x = back._collapsed_input(6, 5, 0)
    block = model.blocks[0]
    inner = back._sublayer_function(block, "mlp")
    whole = lambda z: block.mlp_norm_out(inner(z))  # noqa: E731
    gain, _ = back.jacobian_norm(whole, x)
    J = torch.autograd.functional.jacobian(whole, x).reshape(30, 30)
    assert math.isclose(gain, float(torch.linalg.matrix_norm(J, ord=2)), rel_tol=1e-9)


def test_the_condition_is_checked_both_ways_on_random_stacks():
    rows = back.contraction_condition(n=N, d=D, depth=4, multiplier=4.0, mlp="swiglu",
                                      betas=(0.0, 9.0), layers=(0,))
    outcome = claims.condition_outcome({"x4+swiglu": rows}, D)
    assert outcome.passed, outcome
    init = [r for r in rows if r["beta"] == 0.0]
    assert all(r["gain"] > 1 for r in init)  # at random init: no contraction (c > 1)
    assert any(r["gain"] < 1 for r in rows if r["beta"] == 9.0)


def planted(gain_scale=1.0, beta_ys=((0.0, 4.0), (9.0, 40.0))):
    """Rows with a = 2, d = 16 (a sqrt d = 8): ||y|| 4 (c = 2) and 40 (c = 0.2); the measured gain
    is c times ``gain_scale``."""
    return [{"layer": 0, "sublayer": "attn", "beta": b, "y_norm": y, "a": 2.0,
             "gain": 8.0 / y * gain_scale} for b, y in beta_ys]


def test_a_gain_that_is_not_c_or_contracts_on_the_wrong_side_fails():
    assert claims.condition_outcome({"toy": planted()}, 16).passed
    wrong = planted()
    wrong[0]["gain"] = 0.9  # contracts though ||y|| < a sqrt d
    outcome = claims.condition_outcome({"toy": wrong}, 16)
    assert not outcome.passed and not outcome.inconclusive and "disagree" in outcome.detail
    assert not claims.condition_outcome({"toy": planted(gain_scale=1.01)}, 16).passed


def test_one_side_only_is_inconclusive():
    outcome = claims.condition_outcome({"toy": planted(beta_ys=((0.0, 4.0),))}, 16)
    assert not outcome.passed and "one direction is untested" in outcome.inconclusive


def test_the_bound_holds_and_is_vacuous_where_the_gradients_grow():
    r = back.gradient_flow("post", n=N, d=D, depth=12, multiplier=4.0, mlp="swiglu",
                           independent_gain=True)
    assert max(claims.bound_violations(r)) <= 1e-9  # the bound holds ...
    assert r["grad_x"][0] / r["grad_out"] > 3  # ... the layer-1 gradient grows (3.83) ...
    bound, tight, vacuous = claims.tightness(r)
    assert vacuous and bound > 1e6 and tight == pytest.approx(bound / (r["grad_x"][0] / r["grad_out"]))
    built = back.gradient_flow("post", n=N, d=D, depth=6, mlp=None, independent_gain=True,
                               model=contracting_stack(6))
    assert np.allclose(built["factor_bound"], 0.5, rtol=1e-6)
    assert not claims.tightness(built)[2]  # prod c = 1/64: not vacuous


def test_independent_gain_needs_post_norm():
    with pytest.raises(ValueError, match="post"):
        back.gradient_flow("pre", n=8, d=8, depth=2, mlp=None, independent_gain=True)
