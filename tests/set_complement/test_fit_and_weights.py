"""The stopping rule (fit.until_id_invalid_mass, train.steps the cap): a run stops at its first
evaluation within the target and is evaluated there, grouped runs each at their own fit; and
every run keeps its raw, EMA and BEMA weights, which load_run gives back as the same model."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from resharpen.experiments.training.runs import load_run
from resharpen.experiments.training.loop import WEIGHTS, save_run
from resharpen.experiments.set_complement.train import load_config, train, train_group

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "set_complement"
TARGET = 0.01


def tiny(name, **sets):
    base = ["task.vocab=8", "model.d_model=16", "train.steps=300", "train.warmup=5",
            "train.schedule=constant", "train.batch_size=32", "train.eval_every=10",
            "eval.per_length=16", "train.target=soft", f"fit.until_id_invalid_mass={TARGET}",
            "train.bema_update_after=5"]
    config = load_config(CONFIGS / "base_sampled.toml", base + [f"{k}={v}" for k, v in sets.items()])
    config["name"] = name
    return config


def invalid_mass(result: dict, kind: str) -> np.ndarray:
    return np.array([r["invalid_mass"] for r in result["per_length"][kind]])


def test_a_run_stops_at_its_first_evaluation_within_the_target_and_is_evaluated_there():
    result = train(tiny("a", **{"train.lr": 1e-2, "train.seed": 1}), progress=False)
    s, history = result["summary"], result["history"]
    measured = [row["fit_id_invalid_mass"] for row in history]
    assert s["fit_reached"] is True and s["fit_target"] == TARGET
    assert s["fit_step"] == s["steps_trained"] == history[-1]["step"] < 300
    assert measured[-1] <= TARGET and all(m > TARGET for m in measured[:-1])
    # the measure is the summary's: raw weights, mean over lengths 1..L_train, at the fit step
    # (evaluated on those lengths alone: the same inputs, float64 rounding of other shapes)
    assert s["by_weights"]["raw"]["id_invalid_mass"] == pytest.approx(measured[-1], rel=1e-12)
    missed = train(tiny("b", **{"train.steps": 30, "fit.until_id_invalid_mass": 1e-6}),
                   progress=False)["summary"]
    assert missed["fit_reached"] is False and missed["fit_step"] is None
    assert missed["steps_trained"] == 30
    off = train(tiny("c", **{"train.steps": 20, "fit.until_id_invalid_mass": 0.0}),
                progress=False)
    assert "fit_step" not in off["summary"] and "fit_id_invalid_mass" not in off["history"][0]
    with pytest.raises(ValueError, match="until_id_invalid_mass = 0.01 needs train.eval_every > 0"):
        tiny("d", **{"train.eval_every": 0})


def test_grouped_runs_each_stop_at_their_own_fit_as_they_would_alone():
    configs = [tiny("a", **{"train.seed": 0, "train.lr": 3e-2}),
               tiny("b", **{"train.seed": 1, "train.lr": 1e-2, "train.ema": "ema"}),
               tiny("c", **{"train.seed": 2, "train.lr": 3e-3, "train.ema": "bema"})]
    grouped = train_group(configs)
    steps = [g["summary"]["fit_step"] for g in grouped]
    assert len(set(steps)) == 3 and all(g["summary"]["fit_reached"] for g in grouped)
    for config, got in zip(configs, grouped):
        want = train(config, progress=False)
        assert got["summary"]["fit_step"] == want["summary"]["fit_step"]
        assert [h["step"] for h in got["history"]] == [h["step"] for h in want["history"]]
        for kind in WEIGHTS:  # evaluated from the snapshot at its own fit step
            np.testing.assert_allclose(invalid_mass(got, kind), invalid_mass(want, kind),
                                       rtol=1e-4, atol=1e-6)
        assert got["weights"].tensors["raw"]["W_U"].shape == (16, 8)


def test_weights_are_saved_and_load_run_gives_back_the_model(tmp_path):
    result = train(tiny("r", **{"train.steps": 20, "fit.until_id_invalid_mass": 0.0,
                                "model.norm": "post"}), progress=False)
    folder = save_run(result, tmp_path / "r")
    names = {p.name for p in folder.iterdir()}
    assert {f"weights_{k}.safetensors" for k in WEIGHTS} <= names
    assert not any(name.endswith(".tmp") for name in names)
    run = load_run(folder)
    tokens = torch.tensor([[3, 1, 6, 0, 2], [7, 5, 4, 1, 0]])
    for kind, module in result["averaged"].items():
        loaded = run.model(kind)
        assert loaded.cfg == module.cfg and not loaded.training
        with torch.no_grad():
            assert torch.equal(loaded(tokens), module.eval()(tokens))
            exact = run.model(kind, dtype=torch.float64)
            assert exact.W_U.dtype == torch.float64
            torch.testing.assert_close(exact(tokens), module.double()(tokens))
            module.float()
    assert not torch.equal(run.model("raw").W_U, run.model("ema").W_U)
    # a grouped run's weights too
    grouped = train_group([tiny("g0", **{"train.steps": 20, "train.seed": 0}),
                           tiny("g1", **{"train.steps": 20, "train.seed": 4})])
    save_run(grouped[1], tmp_path / "g1")
    alone = train(tiny("g1", **{"train.steps": 20, "train.seed": 4}), progress=False)
    with torch.no_grad():
        torch.testing.assert_close(load_run(tmp_path / "g1").model("bema")(tokens),
                                   alone["averaged"]["bema"](tokens), rtol=1e-4, atol=1e-5)
    # errors name the file and what is allowed
    with pytest.raises(ValueError, match="weights 'swa' is not one of raw, ema, bema"):
        run.model("swa")
    (folder / "weights_ema.safetensors").unlink()
    with pytest.raises(ValueError, match="has no weights_ema.safetensors .weights kept: raw, bema"):
        run.model("ema")
    (folder / "weights_bema.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(ValueError, match="is not a weights file of a run"):
        run.model("bema")
    assert json.loads((folder / "config.json").read_text())["train"]["target"] == "soft"


def test_the_fit_ladder_records_ood_behaviour_at_every_rung_on_the_way():
    """Under the stopping rule a run records, at the first evaluation reaching each rung of the
    ladder (1e-2, 3e-3, ... down to its target), its OOD invalid mass and per-length margins;
    the last rung is the target, reached at the fit step, and equals the run's final raw
    evaluation; an ensemble member records the ladder it records alone."""
    from resharpen.experiments.set_complement.train import FIT_LADDER, ladder_rungs

    config = tiny("l", **{"train.lr": 1e-2, "train.seed": 1,
                          "fit.until_id_invalid_mass": 3e-3})
    result = train(config, progress=False)
    ladder, s = result["summary"]["ladder"], result["summary"]
    assert [e["rung"] for e in ladder] == [1e-2, 3e-3]
    assert all(e["id_invalid_mass"] <= e["rung"] for e in ladder)
    assert ladder[0]["step"] <= ladder[-1]["step"] == s["fit_step"]
    raw = s["by_weights"]["raw"]
    assert ladder[-1]["ood_invalid_mass"] == pytest.approx(raw["ood_invalid_mass"], rel=1e-12)
    assert len(ladder[-1]["per_length"]) == 7  # lengths 1..v-1
    # the first crossing of each rung, as measured in the history
    measured = [(row["step"], row["fit_id_invalid_mass"]) for row in result["history"]]
    for entry in ladder:
        assert entry["step"] == next(step for step, m in measured if m <= entry["rung"])
    grouped = train_group([config, tiny("m", **{"train.lr": 1e-2, "train.seed": 2,
                                                 "fit.until_id_invalid_mass": 3e-3})])
    assert [(e["rung"], e["step"]) for e in grouped[0]["summary"]["ladder"]] == \
        [(e["rung"], e["step"]) for e in ladder]
    # a rung is recorded once; a jump past several rungs records each at that step
    assert ladder_rungs(ladder, 3e-3, 99, 1e-4, [], 2) == []
    jumped = ladder_rungs([], 1e-4, 40, 5e-5, [{"length": 1, "invalid_mass": 0.0,
                                                "margin_nonquery_min": 1.0,
                                                "margin_query": 2.0}], 2)
    assert [e["rung"] for e in jumped] == list(FIT_LADDER) and {e["step"] for e in jumped} == {40}
    assert "ladder" not in train(tiny("o", **{"train.steps": 20,
                                              "fit.until_id_invalid_mass": 0.0}),
                                 progress=False)["summary"]
