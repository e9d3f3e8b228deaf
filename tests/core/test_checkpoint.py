"""Mid-run checkpoints (experiments/training/checkpoint.py): a run stopped after a checkpoint
and started again ends exactly where the run that was never stopped ends (its history, its
summaries, its raw, EMA and BEMA weights, bit for bit; with the soft target, and with sampled
labels and dropout), and says it resumed; the grid removes a checkpoint once its run is saved;
a checkpoint of another config or format, a truncated file, a planted pickle or a file whose
tensors do not fit the model is never used (torch.load(weights_only=True): no code runs)."""
import json
import pickle

import pytest
import torch

from resharpen.experiments.training.checkpoint import FORMAT, Checkpoint
from resharpen.experiments.training.next_token import make_config, train_group


def config(**train) -> dict:
    return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                        "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                        "train": {"seed": 3, "lr": 1e-2, "steps": 300, "warmup": 5,
                                  "log_every": 20, "target": "soft", "ema_decay": 0.95,
                                  **train},
                        "fit": {"until_id_invalid_mass": 0.02, "until_id_tv": 0.1,
                                "averages": "own_fit"},
                        "eval": {"count": 32}})


SAMPLED = {"target": "sampled", "labels_per_position": 3}


class Killed(Exception):
    pass


@pytest.fixture
def every_record(monkeypatch):
    import resharpen.experiments.training.checkpoint as module

    monkeypatch.setattr(module, "CHECKPOINT_SECONDS", 0.0)  # a checkpoint at every record step


def kill_at(monkeypatch, step: int):
    """The next training dies when it draws the batch of ``step``; returns the undo."""
    from resharpen.experiments.tasks.base import TaskStreams

    draw, drawn = TaskStreams.draw, [0]

    def dying(self):
        drawn[0] += 1
        if drawn[0] == step:
            raise Killed
        return draw(self)

    monkeypatch.setattr(TaskStreams, "draw", dying)
    return lambda: monkeypatch.setattr(TaskStreams, "draw", draw)


@pytest.mark.parametrize("train, killed, saved_at", [
    ({}, 50, 40), ({**SAMPLED, "log_every": 10, "resid_dropout": 0.1}, 25, 20)],
    ids=["soft target", "sampled labels and dropout"])
def test_a_run_resumed_from_its_checkpoint_is_the_run_never_stopped(tmp_path, monkeypatch,
                                                                     every_record, train, killed,
                                                                     saved_at):
    dropout = train.pop("resid_dropout", 0.0)
    cfg = config(**train)
    cfg["model"]["resid_dropout"] = dropout
    cfg = make_config({k: v for k, v in cfg.items() if k != "name"})
    (straight,) = train_group([cfg])
    assert straight["summary"]["steps_trained"] > killed  # the stop below comes mid-run
    assert "resumed_from" not in straight["summary"]

    undo = kill_at(monkeypatch, killed)  # after the checkpoint at saved_at, before the EMA's
    with pytest.raises(Killed):         # own fit (so its restored state decides the rest)
        train_group([cfg], checkpoints=tmp_path)
    saved = torch.load(tmp_path / f"{cfg['name']}.pt", weights_only=True)
    assert saved["step"] == saved_at and saved["format"] == FORMAT
    assert saved["extra"]["fit_steps"].get("ema") is None
    assert straight["summary"]["fit_steps"]["ema"] > saved_at
    undo()
    (resumed,) = train_group([cfg], checkpoints=tmp_path)
    assert resumed["history"] == straight["history"]
    a, b = resumed["summary"], straight["summary"]
    assert a["by_weights"] == b["by_weights"] and a["fit_steps"] == b["fit_steps"]
    assert a["resumed_from"] == [saved_at] and a["seconds"] > 0
    mine, theirs = resumed["weights"].tensors, straight["weights"].tensors
    assert set(mine) == {"raw", "ema", "bema"} and mine.keys() == theirs.keys()
    for kind in mine:
        assert mine[kind].keys() == theirs[kind].keys()
        for name, x in mine[kind].items():
            assert torch.equal(x, theirs[kind][name]), (kind, name)
    assert (tmp_path / f"{cfg['name']}.pt").exists()  # the sweep removes it once saved


def test_a_grid_removes_a_runs_checkpoint_once_the_run_is_saved(tmp_path, monkeypatch,
                                                                every_record):
    from resharpen.experiments.languages.grid import run_grid

    grid = {"name": "ck", "task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
            "train": {"steps": 120, "lr": 1e-2, "warmup": 5, "log_every": 20, "target": "soft"},
            "eval": {"count": 16}, "search": {"train.seed": {"grid": [0]}}}
    undo = kill_at(monkeypatch, 70)
    with pytest.raises(Killed):
        run_grid(grid, out=tmp_path / "g", workers=1, progress=False)
    assert [p.name for p in (tmp_path / "g" / "checkpoints").iterdir()] == ["dyck1-pre-s0.pt"]
    undo()
    root = run_grid(grid, out=tmp_path / "g", workers=1, progress=False)
    assert not list((root / "checkpoints").iterdir())
    summary = json.loads((root / "runs" / "dyck1-pre-s0" / "summary.json").read_text())
    assert summary["resumed_from"] == [60]


def test_a_foreign_truncated_planted_or_unfitting_checkpoint_is_not_used(tmp_path, capsys,
                                                                        every_record):
    cfg = config()
    point = Checkpoint(tmp_path, cfg)
    point.save(40, {"x": torch.zeros(1)}, [[]], [1.0])
    assert point.load()["step"] == 40
    assert Checkpoint(tmp_path, {**cfg, "train": {**cfg["train"], "lr": 0.5}}).load() is None
    assert "written for another config" in capsys.readouterr().err

    point.path.write_bytes(point.path.read_bytes()[:50])  # truncated
    assert point.load() is None and "cannot be read" in capsys.readouterr().err

    class Boom:
        def __reduce__(self):
            return (exec, ("import pathlib; pathlib.Path('PWNED').touch()",))

    point.path.write_bytes(pickle.dumps({"format": FORMAT, "config": cfg, "boom": Boom()},
                                        protocol=2))
    assert point.load() is None and not (tmp_path / "PWNED").exists()
    assert not __import__("pathlib").Path("PWNED").exists()

    torch.save({"format": FORMAT + 1, "config": cfg}, point.path)  # another format
    assert point.load() is None and f"not of checkpoint format {FORMAT}" in capsys.readouterr().err

    # a checkpoint of the same config whose tensors do not fit (other code): not used, said so
    (plain,) = train_group([cfg], checkpoints=tmp_path / "a")
    wrong = torch.load(tmp_path / "a" / f"{cfg['name']}.pt", weights_only=True)
    wrong["state"]["model"] = {k + ".old": v for k, v in wrong["state"]["model"].items()}
    torch.save(wrong, point.path)
    (again,) = train_group([cfg], checkpoints=tmp_path)
    assert "do not fit this run's model" in capsys.readouterr().err
    assert again["history"] == plain["history"] and "resumed_from" not in again["summary"]
