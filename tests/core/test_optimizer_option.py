"""``train.optimizer = "sgd"``: SGD with momentum in the engine and the lone trainer.

A member of an SGD ensemble (the engine's :func:`sgd_update`) must equal the same model trained
alone with ``torch.optim.SGD`` (:func:`make_optimizer`), to float32 rounding (1e-5 relative to
the weights' scale, the tolerance of tests/core/test_engine.py); the config refuses an unknown
optimizer and SGD's momentum under AdamW, and leaves both keys out of an AdamW config (so
configs and sweeps written before the key existed are unchanged)."""
from __future__ import annotations

import pytest
import torch

from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.training.engine import MemberAdamW, MemberSGD, sgd_update
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.targets import Batch
from resharpen.experiments.training.loop import (fit, fit_members, make_optimizer, members_state,
                                              training_state)
from resharpen.experiments.set_complement.config import load_config

TOLERANCE = 1e-5
TRAIN = {"steps": 12, "lr": 5e-2, "min_lr_ratio": 0.1, "warmup": 3, "schedule": "cosine",
         "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.98, "grad_clip": 1.0,
         "ema_decay": 0.9, "bema_update_freq": 1, "bema_ema_power": 0.5,
         "bema_bias_power": 0.2, "bema_lag": 10.0, "bema_update_after": 0,
         "bema_multiplier": 1.0, "batch_size": 4, "optimizer": "sgd", "momentum": 0.8}
MEMBERS = [dict(seed=0, lr=5e-2, weight_decay=0.01), dict(seed=1, lr=2e-1, weight_decay=0.0),
           dict(seed=2, lr=1e-2, weight_decay=0.1)]
VOCAB, LENGTH = 7, 9
SHAPE = dict(d_model=8, n_layers=2, n_heads=2, norm="post", mlp="gelu")


def member_train(member: dict) -> dict:
    return dict(TRAIN, lr=member["lr"], weight_decay=member["weight_decay"])


def data(member: dict, step: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1000 * member["seed"] + step)
    return torch.randint(0, VOCAB, (TRAIN["batch_size"], LENGTH + 1), generator=gen)


def model(member: dict) -> Transformer:
    torch.manual_seed(member["seed"])
    return Transformer(ModelConfig(vocab=VOCAB, **SHAPE))


def test_sgd_member_equals_lone_torch_sgd_run():
    state = members_state([model(m) for m in MEMBERS], [member_train(m) for m in MEMBERS])
    assert isinstance(state.optimizer, MemberSGD)
    fitted = fit_members(state, TRAIN,
                         lambda step: Batch(torch.stack([data(m, step) for m in MEMBERS])),
                         every=0, record=lambda i, step, loss: {"loss": loss}, progress=False)
    for member, weights in zip(MEMBERS, fitted.weights):
        lone = training_state(model(member), member_train(member))
        assert isinstance(lone.optimizer, torch.optim.SGD)
        fit(lone, TRAIN, lambda step: Batch(data(member, step)), every=0,
            record=lambda step, loss: {"loss": loss}, progress=False)
        start = model(member).state_dict()
        for kind in ("raw", "ema", "bema"):
            mine, ref = weights[kind].state_dict(), lone.weights()[kind].state_dict()
            for name, tensor in ref.items():
                scale = tensor.abs().max().clamp_min(1e-3)
                gap = float((mine[name] - tensor).abs().max() / scale)
                assert gap <= TOLERANCE, f"seed {member['seed']} {kind} {name}: {gap:.2e}"
        moved = max(float((ref_t - start[n]).abs().max())
                    for n, ref_t in lone.weights()["raw"].state_dict().items())
        assert moved > 1e-4  # the comparison is about trained weights, not the start


def test_sgd_update_is_the_momentum_formula():
    """Two steps by hand: b1 = g1 + wd p0, p1 = p0 - lr b1; b2 = mu b1 + g2 + wd p1,
    p2 = p1 - lr b2 (no clipping)."""
    p0 = torch.tensor([[1.0, -2.0]])
    g1, g2 = torch.tensor([[0.5, 0.25]]), torch.tensor([[-1.0, 2.0]])
    lr, wd, mu = 0.1, 0.2, 0.9
    params, buf = [p0.clone()], [torch.zeros_like(p0)]
    sgd_update(params, [g1.clone()], buf, [torch.tensor([[lr]])], [torch.tensor([[wd]])], mu, 0)
    b1 = g1 + wd * p0
    p1 = p0 - lr * b1
    sgd_update(params, [g2.clone()], buf, [torch.tensor([[lr]])], [torch.tensor([[wd]])], mu, 0)
    b2 = mu * b1 + g2 + wd * p1
    assert torch.allclose(params[0], p1 - lr * b2, atol=1e-7)


def test_adamw_stays_the_default():
    cfg = ModelConfig(vocab=VOCAB, **SHAPE)
    train = {k: v for k, v in TRAIN.items() if k not in ("optimizer", "momentum")}
    state = members_state([Transformer(cfg), Transformer(cfg)], [train, train])
    assert isinstance(state.optimizer, MemberAdamW)
    assert isinstance(make_optimizer(Transformer(cfg), train), torch.optim.AdamW)


def test_members_must_share_the_optimizer():
    cfg = ModelConfig(vocab=VOCAB, **SHAPE)
    with pytest.raises(ValueError, match="share train.optimizer"):
        members_state([Transformer(cfg), Transformer(cfg)],
                      [TRAIN, dict(TRAIN, optimizer="adamw")])
    with pytest.raises(ValueError, match="adamw, sgd"):
        members_state([Transformer(cfg), Transformer(cfg)],
                      [dict(TRAIN, optimizer="lion")] * 2)


def test_config_validates_the_optimizer():
    base = CONFIG_DIR / "set_complement" / "base_sampled.toml"
    assert "optimizer" not in load_config(base)["train"]  # adamw: the config is unchanged
    sgd = load_config(base, ["train.optimizer=sgd", "train.momentum=0.5"])["train"]
    assert (sgd["optimizer"], sgd["momentum"]) == ("sgd", 0.5)
    with pytest.raises(ValueError, match="train.optimizer = 'adam' is not allowed"):
        load_config(base, ["train.optimizer=adam"])
    with pytest.raises(ValueError, match="applies to train.optimizer = 'sgd' only"):
        load_config(base, ["train.momentum=0.5"])
