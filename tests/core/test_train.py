"""The training core: schedule, optimizer groups, model builder, the loop and its hooks."""
import json
import math

import pytest
import torch

from resharpen.experiments.training import loop as T
from resharpen.experiments.training.config import Schema, pick_fields
from resharpen.experiments.training.schema import MODEL_FIELDS, TRAIN_FIELDS, check_model_shape

SCHEMA = Schema({"model": pick_fields(MODEL_FIELDS, **{k: f.default for k, f in
                                                        MODEL_FIELDS.items()}),
                 "train": pick_fields(TRAIN_FIELDS, **{k: f.default for k, f in
                                                        TRAIN_FIELDS.items()})})


def config(**sections) -> dict:
    return SCHEMA.validate(sections)


def test_lr_schedule_warmup_then_cosine_to_floor():
    tr = dict(config()["train"], steps=100, warmup=10, min_lr_ratio=0.1)
    f = [T.lr_factor(k, tr) for k in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(f[10:], f[11:]))
    assert f[99] == pytest.approx(0.1, abs=1e-3)
    linear = dict(tr, schedule="linear")
    assert T.lr_factor(55, linear) == pytest.approx(0.1 + 0.9 * (1 - 45 / 90))
    constant = dict(tr, schedule="constant", warmup=0)
    assert {T.lr_factor(k, constant) for k in range(100)} == {1.0}


def test_model_config_reads_the_model_table():
    c = config(model={"d_model": 12, "n_heads": 3, "mlp": "swiglu", "positional": "learned"})
    mc = T.model_config(c, vocab=7, max_len=20)
    assert (mc.vocab, mc.d_model, mc.head_width, mc.max_len) == (7, 12, 4, 20)
    assert mc.mlp == "swiglu" and mc.mlp_width == 48  # d_mlp 0 = 4 d_model
    plain = T.model_config(config(model={"d_head": 5, "d_mlp": 9}), vocab=7, max_len=20)
    assert plain.max_len is None and plain.head_width == 5 and plain.mlp is None
    with pytest.raises(ValueError, match="allowed: one of 'none', 'learned'"):
        config(model={"positional": True})
    with pytest.raises(ValueError, match="not divisible"):
        check_model_shape(config(model={"d_model": 10, "n_heads": 3}))


def test_optimizer_decays_matrices_only():
    model = T.seeded_model(config(model={"d_model": 8, "norm": "pre"}), vocab=5, max_len=4)
    opt = T.make_optimizer(model, config(train={"weight_decay": 0.3})["train"])
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.3 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])


def batches(vocab: int = 5, batch: int = 4, length: int = 6):
    gen = torch.Generator().manual_seed(0)
    return lambda step: torch.randint(0, vocab, (batch, length + 1), generator=gen)


def test_fit_records_every_k_steps_and_the_last_and_tracks_the_weights():
    c = config(model={"d_model": 8}, train={"steps": 10, "warmup": 2, "threads": 0})
    state = T.training_state(T.seeded_model(c, vocab=5, max_len=6), c["train"])
    assert set(state.weights()) == set(T.WEIGHTS)
    history = T.fit(state, c["train"], batches(), every=4, progress=False,
                    record=lambda step, loss: {"step": step, "loss": loss, "lr": state.lr()})
    assert [row["step"] for row in history] == [4, 8, 10]
    assert all(math.isfinite(row["loss"]) for row in history)
    assert history[-1]["lr"] == pytest.approx(c["train"]["lr"] * T.lr_factor(10, c["train"]))
    raw_only = T.training_state(state.model, c["train"], weights=("raw",))
    assert list(raw_only.weights()) == ["raw"] and raw_only.weights()["raw"] is state.model
    with pytest.raises(ValueError, match="not one of raw, ema, bema"):
        T.training_state(state.model, c["train"], weights=("swa",))


def test_the_stopping_rule_ends_the_run_at_an_evaluation_step():
    c = config(model={"d_model": 8}, train={"steps": 50, "warmup": 0, "threads": 0})
    state = T.training_state(T.seeded_model(c, vocab=5, max_len=6), c["train"])
    seen = []
    history = T.fit(state, c["train"], batches(), every=5, progress=False,
                    record=lambda step, loss: {"step": step},
                    stop=lambda row: seen.append(row["step"]) or row["step"] >= 15)
    assert [row["step"] for row in history] == [5, 10, 15] and seen == [5, 10, 15]


def test_gradients_are_read_before_clipping_and_a_bad_loss_can_raise():
    c = config(model={"d_model": 8}, train={"steps": 3, "warmup": 0, "grad_clip": 1e-6,
                                            "threads": 0})
    model = T.seeded_model(c, vocab=5, max_len=6)
    norms = []
    after = lambda: norms.append(float(torch.cat([p.grad.flatten() for p in model.parameters()]).norm()))  # noqa: E731
    T.fit(T.training_state(model, c["train"]), c["train"], batches(), every=1, progress=False,
          record=lambda step, loss: {}, after_backward=after)
    assert len(norms) == 3 and min(norms) > 1e-3  # the unclipped gradient
    with torch.no_grad():
        model.W_U.fill_(float("nan"))
    with pytest.raises(ValueError, match="the loss is nan at step 1; lower train.lr"):
        T.fit(T.training_state(model, c["train"]), c["train"], batches(), every=1,
              progress=False, record=lambda step, loss: {}, raise_on_nonfinite=True, name="x")


def test_save_run_writes_the_run_folder(tmp_path):
    result = {"config": {"name": "r"}, "history": [{"step": 1}, {"step": 2}],
              "per_length": {"raw": []}, "summary": {"loss": 1.0}}
    T.save_run(result, tmp_path / "a")
    assert {p.name for p in (tmp_path / "a").iterdir()} == {
        "config.json", "provenance.json", "metrics.jsonl", "per_length.json", "summary.json"}
    assert [json.loads(line)["step"] for line in
            (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    del result["per_length"]
    T.save_run(result, tmp_path / "b")
    assert not (tmp_path / "b" / "per_length.json").exists()
