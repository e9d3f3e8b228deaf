"""Mid-run checkpoints (experiments/training/checkpoint.py): a run stopped after a checkpoint
and started again ends exactly where the run that was never stopped ends (its history, its
summaries, its raw, EMA and BEMA weights, bit for bit), the checkpoint is removed when the run
finishes, and a checkpoint of another config, a truncated file or a planted pickle is never
used (torch.load(weights_only=True): no code runs)."""
import pickle

import pytest
import torch

from resharpen.experiments.training.checkpoint import Checkpoint
from resharpen.experiments.training.next_token import make_config, train_group


def config(**fit) -> dict:
    return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                        "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                        "train": {"seed": 3, "lr": 1e-2, "steps": 300, "warmup": 5,
                                  "log_every": 20, "target": "soft", "ema_decay": 0.95},
                        "fit": {"until_id_invalid_mass": 0.02, "until_id_tv": 0.1,
                                "averages": "own_fit", **fit},
                        "eval": {"count": 32}})


class Killed(Exception):
    pass


def test_a_run_resumed_from_its_checkpoint_is_the_run_never_stopped(tmp_path, monkeypatch):
    import resharpen.experiments.training.checkpoint as module
    from resharpen.experiments.tasks.base import TaskStreams

    cfg = config()
    (straight,) = train_group([cfg])
    assert straight["summary"]["steps_trained"] > 100  # the stop below comes mid-run

    monkeypatch.setattr(module, "CHECKPOINT_SECONDS", 0.0)  # a checkpoint at every record step
    draw, drawn = TaskStreams.draw, [0]

    def dying(self):
        drawn[0] += 1
        if drawn[0] == 70:  # step 70: after the checkpoint of step 60
            raise Killed
        return draw(self)

    monkeypatch.setattr(TaskStreams, "draw", dying)
    with pytest.raises(Killed):
        train_group([cfg], checkpoints=tmp_path)
    saved = torch.load(tmp_path / f"{cfg['name']}.pt", weights_only=True)
    assert saved["step"] == 60 and len(saved["histories"][0]) == 3
    monkeypatch.setattr(TaskStreams, "draw", draw)
    (resumed,) = train_group([cfg], checkpoints=tmp_path)
    assert resumed["history"] == straight["history"]
    a, b = resumed["summary"], straight["summary"]
    assert a["by_weights"] == b["by_weights"] and a["fit_steps"] == b["fit_steps"]
    assert a["seconds"] > 0
    mine, theirs = resumed["weights"].tensors, straight["weights"].tensors
    assert set(mine) == {"raw", "ema", "bema"} and mine.keys() == theirs.keys()
    for kind in mine:
        assert mine[kind].keys() == theirs[kind].keys()
        for name, x in mine[kind].items():
            assert torch.equal(x, theirs[kind][name]), (kind, name)
    assert not (tmp_path / f"{cfg['name']}.pt").exists()  # removed when the run finished


def test_a_foreign_truncated_or_planted_checkpoint_is_not_used(tmp_path):
    cfg = config()
    point = Checkpoint(tmp_path, cfg)
    point.save(40, {"x": torch.zeros(1)}, [[]], [1.0])
    assert point.load()["step"] == 40
    assert Checkpoint(tmp_path, {**cfg, "train": {**cfg["train"], "lr": 0.5}}).load() is None

    point.path.write_bytes(point.path.read_bytes()[:50])  # truncated
    assert point.load() is None

    class Boom:
        def __reduce__(self):
            return (exec, ("import pathlib; pathlib.Path('PWNED').touch()",))

    point.path.write_bytes(pickle.dumps({"config": cfg, "boom": Boom()}, protocol=2))
    assert point.load() is None and not (tmp_path / "PWNED").exists()
    assert not __import__("pathlib").Path("PWNED").exists()
    other = tmp_path / "notes.txt"
    other.write_text("mine")
    point.remove()
    assert other.read_text() == "mine" and not point.path.exists()
