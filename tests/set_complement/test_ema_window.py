"""EMA with long windows (experiments/set_complement/ema_window.py) and the engine's delayed
EMA (StackedEMA with ``start``): the EMA starting at step s equals the recursion typed here on the
weights from step s on; the protocol trains, evaluates and refuses what it cannot do."""
from __future__ import annotations

import math

import pytest
import torch

from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.training.engine import Members, StackedEMA
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.set_complement.config import load_config
from resharpen.experiments.set_complement.ema_window import (floor_drift, train_windows,
                                                             window_gain)


def test_delayed_ema_is_the_recursion_from_its_start():
    torch.manual_seed(0)
    models = [Transformer(ModelConfig(vocab=5, d_model=4)) for _ in range(2)]
    members = Members(models)
    ema = StackedEMA(members, [0.5, 0.75], start=3)
    trajectory = []
    for step in range(1, 6):
        with torch.no_grad():
            for p in members.stack:
                p.add_(float(step))  # the weights at step `step`
        trajectory.append([p.detach().clone() for p in members.stack])
        ema.update(members, step)
    for k, decay in enumerate((0.5, 0.75)):
        expected = [w[k].clone() for w in trajectory[2]]  # copied at step 3
        for weights in trajectory[3:]:
            expected = [decay * e + (1 - decay) * w[k] for e, w in zip(expected, weights)]
        for got, want in zip(ema.module().stack, expected):
            assert torch.allclose(got[k], want, atol=1e-6)


def test_floor_drift_and_gain():
    flat = [(s, 0.1) for s in range(100, 1100, 100)]
    assert abs(floor_drift(flat, 200)) < 1e-12
    falling = [(s, math.exp(-s / 500)) for s in range(100, 1100, 100)]
    assert floor_drift(falling, 200) < -0.3
    assert math.isnan(floor_drift(flat, 2000))
    row = {"raw": {"id_invalid_mass": 0.2, "ood_invalid_mass": 0.4},
           "ema500": {"id_invalid_mass": 0.1, "ood_invalid_mass": 0.4}}
    assert window_gain(row, 500) == pytest.approx(math.log(2))
    assert window_gain(row, 500, "ood_invalid_mass") == 0


def tiny(seed: int, *sets: str) -> dict:
    return load_config(CONFIG_DIR / "set_complement" / "base_sampled.toml",
                       ["task.vocab=8", "model.d_model=16", "train.steps=60", "train.warmup=0",
                        "train.schedule=constant", "train.lr=1e-2", "train.eval_every=20",
                        "eval.per_length=8", f"train.seed={seed}", *sets])


def test_train_windows_trains_and_evaluates_every_window():
    rows = train_windows([tiny(0), tiny(1)], burn_in=20, windows=(10, 40))
    assert [r["seed"] for r in rows] == [0, 1] and rows[0]["optimizer"] == "adamw"
    for row in rows:
        assert [step for step, _ in row["history"]] == [20, 40, 60]
        for kind in ("raw", "ema10", "ema40"):
            assert 0 < row[kind]["id_invalid_mass"] < 1
        assert row["ema10"] != row["ema40"]
    sgd = train_windows([tiny(0, "train.optimizer=sgd", "train.lr=0.5"),
                         tiny(1, "train.optimizer=sgd", "train.lr=0.5")], 20, (10,))
    assert sgd[0]["optimizer"] == "sgd" and sgd[0]["raw"] != rows[0]["raw"]


def test_train_windows_refuses():
    with pytest.raises(ValueError, match="constant rate"):
        train_windows([tiny(0, "train.schedule=cosine"), tiny(1, "train.schedule=cosine")], 20)
    with pytest.raises(ValueError, match="burn_in"):
        train_windows([tiny(0), tiny(1)], 60)
    with pytest.raises(ValueError, match="at least two seeds"):
        train_windows([tiny(0)], 20)


def test_results_of_another_protocol_are_never_read(tmp_path, monkeypatch):
    """The full claim reads the protocol's results file only when it was made with today's arms,
    windows and steps: a file of the old arms (AdamW lr 3e-2, SGD lr 0.5) is as good as none."""
    import json

    from resharpen.experiments.set_complement import fit_noise_tests
    from resharpen.experiments.set_complement.ema_window import (cached_rows, protocol_key,
                                                                 results_path)

    monkeypatch.chdir(tmp_path)
    assert cached_rows("full") is None
    path = results_path("full")
    path.parent.mkdir(parents=True)
    rows = [{"arm": "adamw", "seed": 0}]
    stale = protocol_key("full")
    stale["arms"]["adamw"] = ["train.optimizer=adamw", "train.lr=3e-2"]
    path.write_text(json.dumps({"key": stale, "rows": rows}))
    assert cached_rows("full") is None
    outcome = fit_noise_tests.noise_ema_window_tests("full")
    assert "today's protocol" in outcome.inconclusive
    path.write_text(json.dumps({"key": protocol_key("full"), "rows": rows}))
    assert cached_rows("full") == rows
