"""Autograd checks of the backward stage and the collapsed network."""
import numpy as np
import pytest

from resharpen.experiments.collapse import backward as back
def test_rms_gradient_orthogonal_and_jacobian():
    w = back.rms_gradient_check(d=16, trials=4)
    assert max(w.values()) < 1e-12
    with pytest.raises(ValueError):
        back.rms_gradient_check(d=1)


@pytest.mark.parametrize("sub", ["attn", "mlp"])
def test_norm_growth_exact_only_at_collapse(sub):
    at = back.norm_growth_step(sub, n=8, d=16)
    assert at["relative_error"] < 1e-10 and at["update_error"] < 1e-10
    off = back.norm_growth_step(sub, n=8, d=16, collapsed=False)
    assert off["cross_relative"] > 1e-4  # the cross term is generic off collapse
    with pytest.raises(ValueError):
        back.norm_growth_step("norm")


@pytest.mark.parametrize("mlp", [None, "swiglu"])
def test_contraction_bound_per_sublayer(mlp):
    r = back.gradient_flow("post", n=16, d=16, depth=4, multiplier=4.0, mlp=mlp)
    following = np.append(r["grad_x"][1:], r["grad_out"])
    assert np.all(r["grad_x"] <= r["factor"] * following * (1 + 1e-9))
    assert r["grad_x"][0] / r["grad_out"] <= np.prod(r["factor"]) * (1 + 1e-9)
    assert np.all(r["jac"] < 1)  # |y| > sqrt(d) after a residual step


def test_pre_norm_skip_path_has_no_norm_factor():
    r = back.gradient_flow("pre", n=16, d=16, depth=4, mlp=None)
    assert np.all(r["jac"] == 1.0)
    assert np.allclose(r["grad_y"][:-1], r["grad_x"][1:])  # Y_k is X_{k+1}


def test_collapsed_network_has_zero_gradients_and_contrasts_do_not():
    r = back.collapsed_gradients()
    assert r["max_grad"] < 1e-12 and abs(r["loss"] - r["l_freq"]) < 1e-12
    assert back.collapsed_gradients(matched=False)["max_grad"] > 1e-3
    assert back.collapsed_gradients(collapsed=False)["max_grad"] > 1e-3
