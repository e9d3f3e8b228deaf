"""Theorem 3.6 with an independent gain: the bound holds (and is vacuous at random init), and, as
an identity of the chain rule at exact collapse, the measured largest gain of each block is
c = a sqrt d / ||y|| (a stack built to contract, the random stacks)."""
import math

import numpy as np
import pytest
import torch

from resharpen.experiments.collapse import backward as back
from resharpen.experiments.collapse import contraction
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


@pytest.mark.parametrize("multiplier, mlp", [(1.0, None), (4.0, None), (4.0, "swiglu")])
def test_at_exact_collapse_the_block_gain_is_the_chain_rules_c(multiplier, mlp):
    """An identity, not a claim of the ledger (it was collapse.gradient_contraction): at exact
    collapse every row of a block X -> RMS(X + f(X)) is y = x + f(x) with the same y, so the
    chain rule gives the block's largest gradient gain as c = a sqrt d / ||y|| (a the sublayer's
    gain on the gradients the RMSNorm passes), and it contracts iff ||y|| > a sqrt d. Only a
    coding error in ``backward.jacobian_norm`` or ``sublayer_gain`` can break it. Both sides
    occur: at random init (beta = 0) c > 1, with the collapsed direction amplified (beta = 9)
    c < 1 somewhere."""
    rows = back.contraction_condition(n=N, d=D, depth=4, multiplier=multiplier, mlp=mlp,
                                      betas=(0.0, 9.0), layers=(0, 3))
    for r in rows:
        c = r["a"] * math.sqrt(D) / r["y_norm"]
        assert r["gain"] == pytest.approx(c, rel=1e-6), r
        assert (r["gain"] < 1) == (r["y_norm"] > r["a"] * math.sqrt(D)), r
    assert all(r["gain"] > 1 for r in rows if r["beta"] == 0.0)  # no contraction at init
    assert any(r["gain"] < 1 for r in rows if r["beta"] == 9.0)


def test_the_bound_holds_and_is_vacuous_where_the_gradients_grow():
    r = back.gradient_flow("post", n=N, d=D, depth=12, multiplier=4.0, mlp="swiglu",
                           independent_gain=True)
    assert max(contraction.bound_violations(r)) <= 1e-9  # the bound holds ...
    assert r["grad_x"][0] / r["grad_out"] > 3  # ... the layer-1 gradient grows (3.83) ...
    bound, tight, vacuous = contraction.tightness(r)
    assert vacuous and bound > 1e6 and tight == pytest.approx(bound / (r["grad_x"][0] / r["grad_out"]))
    built = back.gradient_flow("post", n=N, d=D, depth=6, mlp=None, independent_gain=True,
                               model=contracting_stack(6))
    assert np.allclose(built["factor_bound"], 0.5, rtol=1e-6)
    assert not contraction.tightness(built)[2]  # prod c = 1/64: not vacuous


def test_independent_gain_needs_post_norm():
    with pytest.raises(ValueError, match="post"):
        back.gradient_flow("pre", n=8, d=8, depth=2, mlp=None, independent_gain=True)
