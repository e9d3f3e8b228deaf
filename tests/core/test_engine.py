"""The engine: each member of an ensemble equals the same model trained alone.

The lone run is the ordinary module with ``torch.optim.AdamW`` (:func:`training_state`); the
ensemble is the same module stacked and vectorized with torch.func, with the engine's
per-member AdamW. Both run through the one training loop (:func:`fit_members`). The members
differ in seed, learning rate, weight decay, init scale and EMA decay; after training, member k's
raw, EMA and BEMA weights must equal lone run k's to float32 rounding (a tolerance fixed here,
1e-5 relative to the weights' scale, about 100 float32 ulps after 12 steps)."""
from __future__ import annotations

import pytest
import torch

from resharpen.experiments.training.engine import Members, per_member
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.targets import Batch
from resharpen.experiments.training.loop import fit, fit_members, members_state, training_state
from resharpen.experiments.training.schema import NORM_PLACEMENTS

TOLERANCE = 1e-5
TRAIN = {"steps": 12, "lr": 3e-3, "min_lr_ratio": 0.1, "warmup": 3, "schedule": "cosine",
         "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.98, "grad_clip": 1.0,
         "ema_decay": 0.9, "bema_update_freq": 1, "bema_ema_power": 0.5,
         "bema_bias_power": 0.2, "bema_lag": 10.0, "bema_update_after": 0,
         "bema_multiplier": 1.0, "batch_size": 4}
# members differ in what the engine allows to differ
MEMBERS = [dict(seed=0, lr=3e-3, weight_decay=0.01, ema_decay=0.9, init_std=0.02),
           dict(seed=1, lr=1e-2, weight_decay=0.0, ema_decay=0.8, init_std=0.05),
           dict(seed=2, lr=1e-3, weight_decay=0.1, ema_decay=0.95, init_std=0.02)]
VOCAB, LENGTH = 7, 9


def member_config(shape: dict, member: dict) -> ModelConfig:
    return ModelConfig(vocab=VOCAB, init_std=member["init_std"], **shape)


def member_train(member: dict) -> dict:
    return dict(TRAIN, seed=member["seed"], lr=member["lr"], weight_decay=member["weight_decay"],
                ema_decay=member["ema_decay"])


def data(member: dict, step: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1000 * member["seed"] + step)
    return torch.randint(0, VOCAB, (TRAIN["batch_size"], LENGTH + 1), generator=gen)


def lone_run(shape: dict, member: dict) -> dict:
    torch.manual_seed(member["seed"])
    model = Transformer(member_config(shape, member))
    state = training_state(model, member_train(member))
    fit(state, TRAIN, lambda step: Batch(data(member, step)), every=0,
        record=lambda step, loss: {"loss": loss}, progress=False)
    return {kind: m.state_dict() for kind, m in state.weights().items()}


def ensemble_runs(shape: dict, members=MEMBERS) -> list[dict]:
    models = []
    for member in members:
        torch.manual_seed(member["seed"])
        models.append(Transformer(member_config(shape, member)))
    state = members_state(models, [member_train(m) for m in members])
    fitted = fit_members(state, TRAIN,
                         lambda step: Batch(torch.stack([data(m, step) for m in members])),
                         every=0, record=lambda i, step, loss: {"loss": loss}, progress=False)
    return [{kind: m.state_dict() for kind, m in weights.items()} for weights in fitted.weights]


def assert_same(lone: dict, member: dict, label: str) -> None:
    for kind in ("raw", "ema", "bema"):
        assert lone[kind].keys() == member[kind].keys()
        for name, tensor in lone[kind].items():
            scale = tensor.abs().max().clamp_min(1e-3)
            gap = float((member[kind][name] - tensor).abs().max() / scale)
            assert gap <= TOLERANCE, f"{label} {kind} {name}: relative gap {gap:.2e}"


SHAPES = {
    **{f"{norm}-1layer": dict(d_model=8, norm=norm) for norm in NORM_PLACEMENTS},
    **{f"{norm}-2layer-mlp-pos": dict(d_model=8, n_layers=2, n_heads=2, norm=norm, mlp="gelu",
                                      max_len=LENGTH) for norm in NORM_PLACEMENTS},
    **{f"{norm}-2layer-mlp-pos-dropout": dict(d_model=8, n_layers=2, n_heads=2, norm=norm,
                                              mlp="gelu", max_len=LENGTH, attn_dropout=0.2,
                                              resid_dropout=0.1) for norm in NORM_PLACEMENTS},
    "pre-swiglu-layer": dict(d_model=8, n_layers=3, n_heads=2, norm="pre", norm_kind="layer",
                             mlp="swiglu"),
}


@pytest.mark.parametrize("label", list(SHAPES))
def test_each_member_equals_its_lone_run(label):
    shape = SHAPES[label]
    together = ensemble_runs(shape)
    for member, result in zip(MEMBERS, together):
        assert_same(lone_run(shape, member), result, f"{label} seed {member['seed']}")


def test_dropout_rates_are_per_member():
    """Members may differ in dropout rate (0, 0.1, 0.3 here), and each still equals its lone run
    to float32 rounding: the masks are keyed by (run seed, step), not drawn from a generator.
    The rates act: the three end apart."""
    shape = dict(d_model=8, n_layers=2, norm="pre", mlp="gelu")
    rates = [0.0, 0.1, 0.3]
    shapes = [dict(shape, attn_dropout=rate, resid_dropout=rate) for rate in rates]
    models = []
    for member, one in zip(MEMBERS, shapes):
        torch.manual_seed(member["seed"])
        models.append(Transformer(member_config(one, member)))
    state = members_state(models, [member_train(m) for m in MEMBERS])
    fitted = fit_members(state, TRAIN,
                         lambda step: Batch(torch.stack([data(m, step) for m in MEMBERS])),
                         every=0, record=lambda i, step, loss: {}, progress=False)
    for member, one, weights in zip(MEMBERS, shapes, fitted.weights):
        assert weights["raw"].cfg.attn_dropout == one["attn_dropout"]
        assert_same(lone_run(one, member),
                    {kind: module.state_dict() for kind, module in weights.items()},
                    f"rate {one['attn_dropout']}")


def test_dropout_masks_are_keyed_by_seed_and_step():
    """The counter-based masks: a fixed (seed, step) gives one mask; another step or seed another;
    at rate p the kept fraction of 10^5 units is within 5 standard deviations of 1 - p."""
    from resharpen.experiments.model.dropout import dropout_key, dropout_uniforms

    shape = torch.Size((100, 1000))
    u = dropout_uniforms(torch.tensor(dropout_key(0, 1)), 0, shape)
    assert torch.equal(u, dropout_uniforms(torch.tensor(dropout_key(0, 1)), 0, shape))
    for other in (dropout_uniforms(torch.tensor(dropout_key(0, 2)), 0, shape),
                  dropout_uniforms(torch.tensor(dropout_key(1, 1)), 0, shape),
                  dropout_uniforms(torch.tensor(dropout_key(0, 1)), 1, shape)):
        assert (other == u).float().mean() < 0.001
        assert abs(float(torch.corrcoef(torch.stack([u.flatten(), other.flatten()]))[0, 1])) < 0.02
    n = u.numel()
    for p in (0.1, 0.5, 0.9):
        kept = float((u >= p).float().sum())
        assert abs(kept - n * (1 - p)) <= 5 * (n * p * (1 - p)) ** 0.5
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0


def test_members_forward_is_the_module_forward():
    shape = dict(d_model=8, n_layers=2, n_heads=2, norm="peri", mlp="gelu", max_len=LENGTH)
    models = []
    for member in MEMBERS:
        torch.manual_seed(member["seed"])
        models.append(Transformer(member_config(shape, member)))
    members = Members(models)
    tokens = torch.stack([data(m, 0)[:, :-1] for m in MEMBERS])
    logits = members(tokens)
    for k, model in enumerate(models):
        torch.testing.assert_close(logits[k], model(tokens[k]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(members.member(k)(tokens[k]), model(tokens[k]))


def test_refusals():
    torch.manual_seed(0)
    a = Transformer(ModelConfig(vocab=VOCAB, d_model=8, norm="pre"))
    b = Transformer(ModelConfig(vocab=VOCAB, d_model=8, norm="post"))
    with pytest.raises(ValueError, match="model.norm"):
        Members([a, b])
    with pytest.raises(ValueError, match="at least one"):
        Members([])
    members = Members([a, a])
    with pytest.raises(ValueError, match="K=2"):
        members(torch.zeros(3, 2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="must lie in"):
        members(torch.full((2, 2, 4), VOCAB, dtype=torch.long))
    with pytest.raises(ValueError, match="3 entries for 2"):
        per_member([1, 2, 3], 2, "lr")


def test_stacking_pays_only_where_the_benchmark_measured_a_gain():
    """The rule the slices' train_group uses to stack runs or train them one at a time: the
    measured shapes fall on the measured side (benchmarks/bench_engine.py)."""
    from resharpen.experiments.training.loop import stacking_pays

    set_complement = ModelConfig(vocab=64, d_model=64)
    collapse = ModelConfig(vocab=64, d_model=32, n_layers=24, n_heads=2, mlp="swiglu", d_mlp=96)
    language = ModelConfig(vocab=6, d_model=64, n_layers=2, n_heads=4, mlp="gelu")
    assert stacking_pays(set_complement, 8, 16) and stacking_pays(collapse, 8, 32)
    assert not stacking_pays(language, 32, 40)


def test_the_comparison_can_fail():
    """A lone run whose learning rate is off by 1% misses its member by far more than the
    tolerance: the equality tests above can fail."""
    shape = SHAPES["post-1layer"]
    member = MEMBERS[1]
    together = ensemble_runs(shape)[1]
    wrong = lone_run(shape, dict(member, lr=member["lr"] * 1.01))
    with pytest.raises(AssertionError, match="relative gap"):
        assert_same(wrong, together, "lr off by 1%")
