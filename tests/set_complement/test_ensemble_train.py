"""Set Complement runs trained as one ensemble equal the same runs trained alone (to float32
rounding), and the sweep groups runs into ensembles."""
import numpy as np
import pytest
import torch

from resharpen.experiments.training.sweep import group_runs
from resharpen.experiments.tasks.base import STREAM_SALT
from resharpen.experiments.set_complement.train import (DATA_CHUNK, SetComplementStreams,
                                                        sample_sequences, train, train_group)

from tiny_configs import tiny  # noqa: E402 (a sibling helper module)


def test_grouping_is_by_shared_config_and_deterministic():
    configs = [tiny("a", **{"train.lr": 1e-2}), tiny("b", **{"model.norm": "post"}),
               tiny("c", **{"train.seed": 3, "train.ema": "bema"}),
               tiny("d", **{"model.init_std": 0.05}), tiny("e", **{"model.norm": "post"}),
               tiny("f", **{"model.attn_dropout": 0.1})]
    assert group_runs(configs, 8) == [[0, 2, 3, 5], [1, 4]]  # dropout rates are per member
    assert group_runs(configs, 2) == [[0, 2], [1, 4], [3, 5]]
    assert group_runs(configs, 1) == [[0], [1], [2], [3], [4], [5]]
    with pytest.raises(ValueError, match="ensemble size must be >= 1"):
        group_runs(configs, 0)
    with pytest.raises(ValueError, match="cannot share an ensemble"):
        train_group(configs[:2])


def test_grouped_runs_equal_runs_trained_alone():
    configs = [tiny("a", **{"train.seed": 0, "train.lr": 1e-2, "train.ema": "none"}),
               tiny("b", **{"train.seed": 5, "train.lr": 3e-3, "train.weight_decay": 0.1,
                            "train.ema": "ema", "train.ema_decay": 0.9,
                            "model.init_std": 0.05}),
               tiny("c", **{"train.seed": 9, "train.lr": 2e-2, "train.ema": "bema"})]
    grouped = train_group(configs)
    for config, got in zip(configs, grouped):
        want = train(config, progress=False)
        assert got["summary"]["ensemble"] == 3 and got["summary"]["primary"] == want["summary"]["primary"]
        for kind in ("raw", "ema", "bema"):
            a = np.array([r["invalid_mass"] for r in got["per_length"][kind]])
            b = np.array([r["invalid_mass"] for r in want["per_length"][kind]])
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
        assert [h["step"] for h in got["history"]] == [h["step"] for h in want["history"]]
        for h, w in zip(got["history"], want["history"]):
            assert h["lr"] == pytest.approx(w["lr"], rel=1e-12)
            assert h["loss"] == pytest.approx(w["loss"], rel=1e-5)
            assert h["ema"]["ood_invalid_mass"] == pytest.approx(w["ema"]["ood_invalid_mass"],
                                                                 rel=1e-4)
        assert got["weights"].model_config == want["weights"].model_config
    # the runs differ, so agreement run by run is not trivial
    assert grouped[0]["summary"]["final_loss"] != pytest.approx(grouped[2]["summary"]["final_loss"],
                                                                rel=1e-3)


def test_grouped_runs_with_dropout_train():
    configs = [tiny("a", **{"model.attn_dropout": 0.3, "model.resid_dropout": 0.1}),
               tiny("b", **{"model.attn_dropout": 0.3, "model.resid_dropout": 0.1,
                            "train.seed": 1})]
    results = train_group(configs)
    assert all(np.isfinite(r["summary"]["ood_invalid_mass"]) for r in results)
    assert results[0]["config"]["name"] == "a" and results[1]["config"]["name"] == "b"


def test_chunked_data_stream_is_each_runs_own_stream():
    steps = DATA_CHUNK + 7  # crosses a chunk boundary
    streams = SetComplementStreams(16, (3, 4), 5, 9, steps)
    stream = [streams.draw() for _ in range(steps)]
    for k, seed in enumerate((3, 4)):
        gen = torch.Generator().manual_seed(seed + STREAM_SALT)
        for step in range(steps):
            assert torch.equal(stream[step][k], sample_sequences(16, 9, 5, gen))
    assert streams.left == 0

