"""Post's effective K read off the weights (experiments/set_complement/effective_k.py): it
recovers the K, beta g and lambda g of the hand constructions, its closed form equals the
constructions' measured margins, the readings part where the theory says they part, and the
trainer records K at every evaluation of a post run."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from resharpen.constructions import set_complement as cons
from resharpen.experiments.set_complement import effective_k as ek
from resharpen.experiments.set_complement.train import post_K_tracked, train

from tiny_configs import tiny  # noqa: E402 (a sibling helper module)


@pytest.mark.parametrize("variant, kind", [("tight", "rms"), ("one_hot", "layer")])
@pytest.mark.parametrize("lam, beta, gain", [(6.0, 1.0, 1.0), (15.0, 2.5, 1.7), (0.9, 0.3, 0.6)])
def test_post_K_recovers_the_construction(variant, kind, lam, beta, gain):
    built = cons.build(variant, 12, norm="post", norm_kind=kind, lam=lam, beta=beta, gain=gain)
    got = ek.post_K(built.model)
    assert got["K"] == pytest.approx(lam / beta, rel=1e-9)
    assert got["e"] == pytest.approx(1.0, rel=1e-9)
    assert got["beta_g"] == pytest.approx(beta * gain, rel=1e-9)
    assert got["lambda_g"] == pytest.approx(lam * gain, rel=1e-9)
    assert got["gain_rms"] == pytest.approx(gain, rel=1e-12)


def test_every_reading_agrees_on_the_construction():
    built = cons.build("tight", 10, norm="post", lam=12.0, beta=2.0)
    r = ek.readings(built.model)
    for key in ("K", "K_cross", "K_logit", "K_logit_parallel", "K_norm_ratio"):
        assert r[key] == pytest.approx(6.0, rel=1e-9), key
    assert r["alignment"] == pytest.approx(1.0, rel=1e-9)
    assert r["readout_gain"] == pytest.approx(1.0, rel=1e-9)
    assert r["relative_residual"] < 1e-12
    assert r["constant_ratio"] < 1e-12


@pytest.mark.parametrize("lam", [3.0, 40.0])
def test_closed_form_is_the_constructions_measured_margin(lam):
    """The torch model's margins (measured) against the closed form at the K, lambda g read off
    its weights: equal at every length (the construction's attention is uniform)."""
    built = cons.build("tight", 12, norm="post", lam=lam, beta=1.5, gain=1.2)
    rows = ek.margin_diagnosis(built.model, count=8)
    for row in rows:
        assert row["margin_mean"] == pytest.approx(row["theory"], rel=1e-9)
        assert row["margin_min"] == pytest.approx(row["theory"], rel=1e-9)
        assert row["theory_strict"] == pytest.approx(row["theory"], rel=1e-9)
        assert row["residual_norm"] == pytest.approx(row["residual_norm_theory"], rel=1e-9)
        assert row["uniformity"] < 1e-12 and row["query_share"] == pytest.approx(1.0)
    assert ek.deviation(rows, 3) < 1e-9


@pytest.mark.parametrize("c", [0.0625, 4.0])
def test_the_fixed_multiplier_is_part_of_K(c):
    """model.attn_out_multiplier c (issue 22, req. 3): the construction rebuilt with W_O / c and
    the multiplier c computes the same logits, and every reading gives back the construction's
    K = lambda/beta exactly; with W_O left as it is, K is c lambda/beta."""
    import dataclasses

    from resharpen.experiments.model.transformer import Transformer

    lam, beta = 6.0, 1.5
    built = cons.build("tight", 10, norm="post", lam=lam, beta=beta, gain=1.3)
    cfg = dataclasses.replace(built.model.cfg, attn_out_multiplier=c)
    state = built.model.state_dict()
    scaled = Transformer(cfg).to(torch.float64)
    scaled.load_state_dict({**state, "blocks.0.attn.W_O": state["blocks.0.attn.W_O"] / c})
    tokens = torch.tensor([[3, 1, 7, 0, 5]])
    torch.testing.assert_close(scaled(tokens), built.model(tokens), rtol=1e-12, atol=1e-12)
    r = ek.readings(scaled)
    for key in ("K", "K_cross", "K_logit", "K_norm_ratio"):
        assert r[key] == pytest.approx(lam / beta, rel=1e-9), key
    assert ek.post_K(scaled)["lambda_g"] == pytest.approx(lam * 1.3, rel=1e-9)
    assert ek.deviation(ek.margin_diagnosis(scaled, count=8), 3) < 1e-9
    raised = Transformer(cfg).to(torch.float64)
    raised.load_state_dict(state)
    assert ek.post_K(raised)["K"] == pytest.approx(c * lam / beta, rel=1e-9)


def test_residual_norm_is_the_centred_norm_of_z():
    v, K = 9, 2.5
    for s in range(1, v):
        z = np.zeros(v)
        z[:s] = K / s
        z[s - 1] += 1.0  # the query
        assert ek.residual_norm(v, s, K) == pytest.approx(np.linalg.norm(z - z.mean()), rel=1e-12)


def test_rotating_the_attention_output_moves_K_cross_not_K():
    """W_O -> W_O R (R a rotation of the residual): the attention output keeps its size (K), its
    overlap with the embedding becomes K tr(R)/d (K_cross); K_cross recovers it, so the readings
    can disagree, and they disagree the way the docstring says."""
    built = cons.build("tight", 9, norm="post", lam=8.0, beta=2.0)
    d = built.model.cfg.d_model
    theta = 0.7
    R = torch.eye(d, dtype=torch.float64)
    for i in range(0, d - 1, 2):  # planar rotations by theta
        R[i:i + 2, i:i + 2] = torch.tensor([[math.cos(theta), -math.sin(theta)],
                                            [math.sin(theta), math.cos(theta)]],
                                           dtype=torch.float64)
    with torch.no_grad():
        built.model.blocks[0].attn.W_O[0] = built.model.blocks[0].attn.W_O[0] @ R
    r = ek.readings(built.model)
    assert r["K"] == pytest.approx(4.0, rel=1e-9)
    assert r["K_cross"] == pytest.approx(4.0 * float(torch.trace(R)) / d, rel=1e-9)
    assert r["alignment"] == pytest.approx(float(torch.trace(R)) / d, rel=1e-9)
    assert r["K_logit"] != pytest.approx(4.0, rel=1e-3)


def test_post_K_refuses_other_placements():
    built = cons.build("tight", 8, norm="attn_out", lam=4.0, beta=1.0)
    with pytest.raises(ValueError, match="post"):
        ek.post_K(built.model)


def test_the_trainer_records_K_at_every_evaluation_of_a_post_run():
    torch.manual_seed(0)
    config = tiny("k", **{"model.norm": "post"})
    assert post_K_tracked(config)
    result = train(config, progress=False)
    evaluated = [row for row in result["history"] if "raw" in row]
    assert evaluated and all(math.isfinite(row["post_K"]["K"]) for row in evaluated)
    assert result["history"][-1]["post_K"]["K"] == pytest.approx(
        ek.post_K(result["model"])["K"], rel=1e-5)
    none = tiny("n", **{"model.norm": "none"})
    assert not post_K_tracked(none)
    assert all("post_K" not in row for row in train(none, progress=False)["history"])


@pytest.mark.parametrize("slope, status", [(-1.0, "PASS"), (1.0, "FAIL")])
def test_the_k_sweep_claim_can_fail(monkeypatch, tmp_path, slope, status):
    """fit.post.ood_falls_with_k on made-up sweep rows: PASS when post's OOD mass falls with K,
    FAIL when it rises (attn_out flat in both)."""
    from resharpen.experiments.set_complement import claims_fit, fit_sweep_tests

    rows = []
    for i, (c, scale) in enumerate([(0.0625, 1.0), (0.0625, 8.0), (0.0625, 64.0), (1.0, 1.0),
                                    (1.0, 8.0), (1.0, 64.0)]):
        for seed in (0, 1):
            K = 3.0 * (1 + i) + 0.1 * seed
            rows.append({"placement": "post", "scale": scale, "multiplier": c, "seed": seed,
                         "vocab": 16, "reached": True, "id": 1e-3,
                         "ood": 0.1 + slope * 0.01 * K, "K": K, "K_logit": 2 * K,
                         "K_cross": 1.0 / K})
            rows.append({"placement": "attn_out", "scale": scale, "multiplier": c,
                         "seed": seed, "vocab": 16, "reached": True, "id": 1e-3,
                         "ood": 0.015 + 1e-4 * seed})
    monkeypatch.setattr(fit_sweep_tests, "sweep_root", lambda name, profile: tmp_path)
    monkeypatch.setattr(fit_sweep_tests, "k_sweep_rows", lambda root: rows)
    outcome = claims_fit.check_post_ood_falls_with_k("quick")
    got = "PASS" if outcome.passed else ("INCONCLUSIVE" if outcome.inconclusive else "FAIL")
    assert got == status, outcome.detail


def test_members_with_the_multiplier_train_as_they_would_alone():
    """model.attn_out_multiplier in an ensemble (the engine runs the module's own forward): each
    member ends with the weights of its lone run, up to float32 rounding; the multiplier reaches
    the trained model's config."""
    from resharpen.experiments.set_complement.train import train_group

    configs = [tiny(f"m{seed}", **{"model.norm": "post", "model.attn_out_multiplier": 0.25,
                                   "train.seed": seed}) for seed in (0, 1)]
    grouped = train_group(configs)
    for config, got in zip(configs, grouped):
        want = train(config, progress=False)
        assert want["model"].cfg.attn_out_multiplier == 0.25
        for name, tensor in want["model"].state_dict().items():
            torch.testing.assert_close(got["weights"].tensors["raw"][name], tensor,
                                       rtol=1e-4, atol=1e-5)
