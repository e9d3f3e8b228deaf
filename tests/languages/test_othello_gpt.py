"""The OthelloGPT script (experiments/languages/othello_gpt.py): it runs to completion at a tiny
size on the CPU, its device-side soft targets equal the replayed exact targets, a resumed run
trains on the same batches to the same weights, and it refuses bad arguments."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from resharpen.experiments.tasks.othello import PAD, Othello
from resharpen.experiments.languages.othello_gpt import GameBatches, main, pick_device, soft_targets
from resharpen.experiments.training.next_token import next_token_targets

TINY = ["--device", "cpu", "--layers", "1", "--d-model", "16", "--heads", "2",
        "--batch-size", "4", "--eval-games", "8", "--warmup", "1", "--no-progress"]


@pytest.mark.parametrize("board", [8, 6])
def test_moves_of_the_generator_are_the_legal_next_sets(board):
    task = Othello(board)
    games, moves = task.sample_with_moves(300, task.max_length, seed=4)
    assert np.array_equal(games, task.sample(300, task.max_length, seed=4))
    legal = task.legal_next(games)  # replayed by the automaton, prefix by prefix
    bits = (moves[..., None] >> task.geo.squares.astype(np.uint64)) & np.uint64(1)
    assert np.array_equal(bits.astype(bool), legal[..., 1:])
    assert np.array_equal(moves == 0, legal[..., PAD])


@pytest.mark.parametrize("board", [8, 6])
def test_soft_targets_equal_the_replayed_exact_targets(board):
    task = Othello(board)
    games, moves = GameBatches(board, 64, task.max_length - 1, seed=2)[7]
    got = soft_targets(moves, torch.as_tensor(task.geo.squares))
    expected = next_token_targets(task, games, ignore_pad=True)  # legal_next, replayed
    assert got.shape == expected.shape == (64, task.max_length - 1, task.size)
    assert torch.equal(got > 0, expected > 0)  # the same legal sets
    assert torch.allclose(got.to(torch.float64), expected, rtol=2**-23, atol=0)  # float32 1/|S|
    assert (expected.sum(-1) == 0).any()  # some games end early: positions without a target


def test_runs_to_completion_tiny_on_cpu(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(TINY + ["--steps", "5", "--eval-every", "5", "--checkpoint-every", "5",
                        "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps_trained"] == 5 and summary["games_seen"] == 20
    assert summary["device"] == "cpu"
    assert 0.0 < summary["id_invalid_mass"]["raw"] < 1.0
    assert {"checkpoint.pt", "config.json", "metrics.jsonl", "weights_raw.safetensors",
            "weights_ema.safetensors"} <= {p.name for p in out.iterdir()}
    assert "ID illegal-move mass" in capsys.readouterr().err


def test_resumed_run_trains_to_the_same_weights(tmp_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    common = TINY + ["--board", "6", "--eval-every", "3", "--checkpoint-every", "3",
                     "--target", "sampled"]
    assert main(common + ["--steps", "6", "--out", str(straight)]) == 0
    assert main(common + ["--steps", "6", "--stop-after", "3", "--out", str(resumed)]) == 0
    assert json.loads((resumed / "summary.json").read_text())["steps_trained"] == 3
    assert main(common + ["--steps", "6", "--out", str(resumed), "--resume"]) == 0
    for kind in ("raw", "ema"):
        a = load_file(straight / f"weights_{kind}.safetensors")
        b = load_file(resumed / f"weights_{kind}.safetensors")
        assert a.keys() == b.keys() and a  # noqa: PT018
        assert all(torch.equal(a[k], b[k]) for k in a), kind
    rows = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [3, 6]


def test_the_resume_check_can_fail(tmp_path):
    """A run resumed from a 3-step run's end (another schedule: its cosine ends at step 3) is
    not the uninterrupted 6-step run: the comparison above sees such a difference."""
    common = TINY + ["--board", "6", "--eval-every", "3", "--checkpoint-every", "3",
                     "--target", "sampled"]
    assert main(common + ["--steps", "6", "--out", str(tmp_path / "a")]) == 0
    assert main(common + ["--steps", "3", "--out", str(tmp_path / "b")]) == 0
    assert main(common + ["--steps", "6", "--out", str(tmp_path / "b"), "--resume"]) == 0
    a = load_file(tmp_path / "a" / "weights_raw.safetensors")
    b = load_file(tmp_path / "b" / "weights_raw.safetensors")
    assert not all(torch.equal(a[k], b[k]) for k in a)


def test_device_and_argument_errors(tmp_path, capsys):
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device("auto").type in ("cpu", "cuda", "mps")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda")
    with pytest.raises(SystemExit):
        main(TINY + ["--steps", "4", "--eval-every", "3", "--checkpoint-every", "4"])
    assert "multiple of --eval-every" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(TINY + ["--board", "6", "--train-len", "32"])
    assert main(TINY + ["--steps", "2", "--out", str(tmp_path / "none"), "--resume"]) == 2
    assert "no checkpoint.pt" in capsys.readouterr().err


def test_data_workers_give_the_same_run(tmp_path):
    """Batches come from default_rng([seed, step]): two generating processes or none, the
    same games, the same weights."""
    common = TINY + ["--board", "6", "--steps", "4", "--eval-every", "2",
                     "--checkpoint-every", "2"]
    assert main(common + ["--out", str(tmp_path / "w0")]) == 0
    assert main(common + ["--out", str(tmp_path / "w2"), "--data-workers", "2"]) == 0
    a = load_file(tmp_path / "w0" / "weights_raw.safetensors")
    b = load_file(tmp_path / "w2" / "weights_raw.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


class Payload:
    """An object whose unpickling runs code: it creates the file ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_a_crafted_checkpoint_is_refused_and_runs_nothing(tmp_path, capsys):
    """``--resume`` reads checkpoint.pt with ``weights_only=True``: a checkpoint whose
    unpickling would run code is refused with one line naming the file, exit 2, and its payload
    never runs (the same payload, read without the restriction, does run: the test can fail)."""
    run, marker = tmp_path / "run", tmp_path / "pwned"
    run.mkdir()
    torch.save({"step": 1, "history": [], "model": Payload(marker)}, run / "checkpoint.pt")
    assert main(TINY + ["--steps", "2", "--out", str(run), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --resume: ") and "checkpoint.pt" in err[0]
    assert "is not a checkpoint of this trainer" in err[0] and not marker.exists()
    control = tmp_path / "control"
    torch.save({"model": Payload(control)}, tmp_path / "control.pt")
    torch.load(tmp_path / "control.pt", weights_only=False)
    assert control.exists()


def test_no_unrestricted_unpickling_of_files_in_the_package():
    """Every ``torch.load`` of the package passes ``weights_only=True``, and no ``pickle.load``
    reads a file (the local backend's ``pickle.loads`` reads only its own workers' results)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [p for folder in ("resharpen", "experiments", "constructions", "paper_figs",
                                "theory") for p in (root / folder).rglob("*.py")]
    for path in sources:
        text = path.read_text()
        for call in re.findall(r"torch\.load\([^)]*\)", text, flags=re.S):
            assert "weights_only=True" in call, f"{path}: {call}"
        assert not re.search(r"pickle\.load\(|pickle\.Unpickler\(", text), path
