"""The per-length fit report: the closed-form fits recover known parameters, and K read off the
weights follows model.attn_out_scale."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.set_complement.fit_report import (effective_K, fit_theory,
                                                             gain_folded_matrices,
                                                             theory_margins)

V, D, L = 32, 64, 8


@pytest.mark.parametrize("placement, params", [
    ("none", {"lambda": 37.0}),
    ("attn_out", {"beta_g": 1.4}),
    ("post", {"K": 3.0, "beta_g": 3.7}),
])
def test_fit_theory_recovers_the_parameters_of_exact_margins(placement, params):
    s = np.arange(2, L + 1)
    margins = theory_margins(placement, V, D, s, params)
    fitted = fit_theory(placement, V, D, s, margins)
    for key, value in params.items():
        assert fitted[key] == pytest.approx(value, rel=1e-6)


def test_fit_theory_declines_pre_peri_and_non_positive_margins():
    s = np.arange(2, L + 1)
    assert fit_theory("pre", V, D, s, np.ones(len(s))) is None
    assert fit_theory("none", V, D, s, -np.ones(len(s))) is None
    with pytest.raises(ValueError, match="no fitted closed form"):
        theory_margins("peri", V, D, s, {})


def _model(norm: str, scale: float = 1.0) -> Transformer:
    torch.manual_seed(0)
    return Transformer(ModelConfig(vocab=V, d_model=D, norm=norm, init_std=0.1,
                                   attn_out_scale=scale)).double()


def test_attn_out_scale_default_leaves_the_init_unchanged_and_scales_W_O():
    torch.manual_seed(0)
    plain = Transformer(ModelConfig(vocab=V, d_model=D, init_std=0.1))
    same, scaled = _model("none"), _model("none", 70.0)
    assert torch.equal(plain.blocks[0].attn.W_O.double(), same.blocks[0].attn.W_O)
    assert torch.allclose(scaled.blocks[0].attn.W_O, 70.0 * same.blocks[0].attn.W_O, rtol=1e-6)
    with pytest.raises(ValueError, match="attn_out_scale"):
        ModelConfig(vocab=V, d_model=D, attn_out_scale=0.0)


def test_K_read_off_the_weights_scales_with_attn_out_scale():
    base, large = effective_K(_model("post")), effective_K(_model("post", 70.0))
    assert large["K_residual"] == pytest.approx(70.0 * base["K_residual"], rel=1e-5)
    assert large["K"] > base["K"]  # the lemma fit ties D and B through u: larger, not x70


def test_gain_folding_refuses_pre_and_peri():
    with pytest.raises(ValueError, match="effective K"):
        gain_folded_matrices(_model("pre"))
