"""BEMA against a temperature control (experiments/set_complement/temperature.py): the
extrapolation alpha and the margin-matching tau recover values planted by hand, and the tempered
model is the wrapped model's logits times tau."""
from __future__ import annotations

import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.set_complement.temperature import (Tempered, extrapolation_alpha,
                                                              flat, in_distribution_logits,
                                                              margin_tau)


def test_alpha_recovers_a_planted_extrapolation():
    gen = torch.Generator().manual_seed(0)
    start, raw = torch.randn(500, generator=gen, dtype=torch.float64), \
        torch.randn(500, generator=gen, dtype=torch.float64)
    bema = raw + 0.2 * (raw - start)  # (1 + 0.2) theta_t - 0.2 theta_0
    alpha, residual = extrapolation_alpha(bema, raw, start)
    assert abs(alpha - 0.2) < 1e-12 and residual < 1e-10
    noisy = bema + 0.05 * torch.randn(500, generator=gen, dtype=torch.float64)
    alpha, residual = extrapolation_alpha(noisy, raw, start)
    assert abs(alpha - 0.2) < 0.02 and 0.05 < residual < 1  # the residual sees the noise


def test_tau_recovers_a_planted_temperature_and_ignores_a_per_position_shift():
    gen = torch.Generator().manual_seed(1)
    raw = torch.randn(7, 3, 8, generator=gen, dtype=torch.float64)
    shift = torch.randn(7, 3, 1, generator=gen, dtype=torch.float64)  # softmax ignores it
    assert abs(margin_tau(raw, 2.5 * raw + shift) - 2.5) < 1e-12
    assert abs(margin_tau(raw, raw) - 1.0) < 1e-12
    assert abs(margin_tau(raw, -raw)) > 0.5  # can fail: a sign flip gives -1, not 1


def test_tempered_model_scales_the_logits():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab=8, d_model=16, norm="post")).double()
    base = in_distribution_logits(model, 8, 2, 4, 0)
    scaled = in_distribution_logits(Tempered(model, 3.0), 8, 2, 4, 0)
    assert base.shape == (8, 2, 8)
    assert torch.allclose(scaled, 3.0 * base)
    assert flat(model).numel() == sum(p.numel() for p in model.parameters())
