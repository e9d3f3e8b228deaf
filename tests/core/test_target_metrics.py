"""The one exact-target metric (core.metrics.target_set_metrics) against a transcription in
probability space (numpy, float64, no log-space identities), on random logits and valid sets."""
from __future__ import annotations

import numpy as np
import torch

from resharpen.experiments.tasks.metrics import target_set_metrics


def direct(f: np.ndarray, valid: np.ndarray) -> dict:
    p = np.exp(f - f.max())
    p /= p.sum()
    n = valid.sum()
    target = np.where(valid, 1.0 / n, 0.0)
    ce = -np.log(p[valid]).mean()
    return {"invalid_mass": p[~valid].sum(), "tv": 0.5 * np.abs(p - target).sum(),
            "kl": ce - np.log(n), "cross_entropy": ce,
            "top1_invalid": float((~valid).any() and f[~valid].max() >= f[valid].max())}


def test_metrics_match_their_definitions():
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=3.0, size=(200, 11))
    valid = rng.random((200, 11)) < 0.4
    valid[:, 0] |= ~valid.any(1)  # every row has a valid token
    valid[5] = True  # a row where everything is valid: invalid mass 0
    got = target_set_metrics(torch.tensor(logits), torch.tensor(valid))
    for i in range(len(logits)):
        want = direct(logits[i], valid[i])
        for name, value in want.items():
            assert abs(float(got[name][i]) - value) <= 1e-12 * max(1.0, abs(value)), (i, name)
    assert float(got["invalid_mass"][5]) == 0.0


def test_an_empty_valid_set_has_no_target():
    out = target_set_metrics(torch.zeros(2, 4), torch.tensor([[False] * 4, [True] * 4]))
    assert all(torch.isnan(v[0]) and not torch.isnan(v[1]) for v in out.values())
