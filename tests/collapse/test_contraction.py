"""Theorem 3.6 with an independent gain: the bound holds, and the contraction check passes on a
stack built to contract and fails where the gradients grow (x4 + SwiGLU)."""
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


def test_a_stack_built_to_contract_passes():
    r = back.gradient_flow("post", n=N, d=D, depth=6, mlp=None, independent_gain=True,
                           model=contracting_stack(6))
    assert np.allclose(r["factor_bound"], 0.5, rtol=1e-6)
    outcome = claims.contraction_outcome({"built": r})
    assert outcome.passed, outcome


def test_the_stack_whose_gradients_grow_fails_for_that_reason():
    r = back.gradient_flow("post", n=N, d=D, depth=12, multiplier=4.0, mlp="swiglu",
                           independent_gain=True)
    assert max(claims.bound_violations(r)) <= 1e-9  # the bound holds ...
    assert r["grad_x"][0] / r["grad_out"] > 3  # ... the layer-1 gradient grows (3.83) ...
    assert not claims.contraction_outcome({"x4+swiglu": r}).passed  # ... so no contraction


def test_independent_gain_needs_post_norm():
    with pytest.raises(ValueError, match="post"):
        back.gradient_flow("pre", n=8, d=8, depth=2, mlp=None, independent_gain=True)
