"""Issue 24, requirement 8, the cases that need more than a row of the bad-input table
(tests/core/test_bad_inputs.py): a full disk, a second sweep on a locked folder, a run that
diverged, a huge evaluation in the library, and the helpers behind them (writes inside the named
folder only, undone on failure). Each command case ends as the table's do: exit 2, one line
``error: ...``, and the folder exactly as it was."""
from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import threading
import time

import pytest

from resharpen.cli import main

from test_bad_inputs import PLACES, snapshot  # pytest puts tests/core on sys.path (no package)

BASE = PLACES["{BASE}"]
TINY_TRAIN = ["--profile", "quick", "--set", "train.steps=30", "--set", "task.vocab=8",
              "--set", "model.d_model=8", "--set", "train.eval_every=0"]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def last_error_line(capsys) -> str:
    """After the work has started (a full disk is met when the results are written): the
    progress lines of the work, then one line ``error: ...``, last, and no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error: ")]
    assert errors == err[-1:] and not any("Traceback" in line for line in err), err
    return err[-1]


# ----------------------------------------------------------------------------- a full disk
def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("args", [
    ["train", BASE, *TINY_TRAIN, "--out", "r"],
    ["train", BASE, *TINY_TRAIN, "--out", "deep/er/r"],
    ["construct", "--vocab", "8", "--out", "c"],
    ["sweep", PLACES["{RS}"], "--profile", "quick", "--runs", "1", "--out", "s"],
], ids=["train", "train into new parents", "construct", "sweep"])
def test_a_full_disk_is_one_line_and_leaves_nothing(args, tmp_path, monkeypatch, capsys):
    """Every write fails as on a full disk (the atomic writer's fsync raises ENOSPC): one line
    naming the file, exit 2, no half-written run, no empty folder the command created."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    monkeypatch.setattr(os, "fsync", disk_full)
    assert main(args) == 2
    line = last_error_line(capsys)
    assert "No space left on device writing '" in line and "nothing half-written" in line
    assert snapshot(tmp_path) == before


def test_a_full_disk_keeps_what_was_there(tmp_path, monkeypatch, capsys):
    """A folder that existed before keeps everything the command did not write."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    monkeypatch.setattr(os, "fsync", disk_full)
    assert main(["train", BASE, *TINY_TRAIN, "--out", "r"]) == 2
    last_error_line(capsys)
    assert snapshot(tmp_path) == before


@pytest.mark.slow  # a subprocess that imports torch: about 8 s on 2 loaded cores
def test_a_real_full_tmpfs(tmp_path):
    """The same on a real 64 kB tmpfs (root only; skipped where mounting is not allowed): the
    construction's weights do not fit."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
            capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        done = subprocess.run([sys.executable, "-m", "resharpen", "construct", "--vocab", "96",
                               "--out", str(mount / "c")], capture_output=True, text=True,
                              timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and "No space left on device" in lines[0], done.stderr
        assert list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=False)


# ----------------------------------------------------------------------------- the sweep lock
def test_a_second_sweep_on_a_locked_folder_refuses(tmp_path, monkeypatch, capsys):
    """While one process drives a sweep folder (it holds the flock on s/.lock), a second
    sweep on it refuses with one line and writes nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s").mkdir()
    lock = tmp_path / "s" / ".lock"
    lock.touch()
    before = snapshot(tmp_path)
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert main(["sweep", PLACES["{RS}"], "--profile", "quick", "--out", "s"]) == 2
    line = one_error_line(capsys)
    assert "sweep folder 's' is in use: another process is running this sweep" in line
    assert snapshot(tmp_path) == before


def test_the_lock_waits_when_asked_and_is_reentrant(tmp_path):
    """``wait=True`` (the ledger's quick sweeps) waits for the holder; inside
    :func:`exclusive` a sweep of the same folder does not lock it again."""
    from resharpen.experiments.training.sweep import _locked, exclusive

    order = []
    with exclusive(tmp_path) as root:
        with _locked(root):  # the same process, inside exclusive: no second lock
            order.append("nested")

        def second():
            with _locked(tmp_path, wait=True):
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)
        order.append("first done")
    thread.join(10)
    assert order == ["nested", "first done", "second"]


# ----------------------------------------------------------------------------- not a result
def test_a_diverged_run_is_not_reported_as_a_success(tmp_path, monkeypatch, capsys):
    """A run whose headline numbers are not finite: one line, exit 2, no run folder."""
    import resharpen.experiments.set_complement.train as sc_train

    def diverged(config, **kwargs):
        nan = float("nan")
        numbers = {"id_invalid_mass": nan, "ood_invalid_mass": nan, "id_kl": nan, "ood_kl": nan,
                   "ood_tv": nan, "lg_score": 0, "margin_exponent": nan}
        return {"config": config, "summary": {"primary": "raw", "final_loss": nan,
                                              "by_weights": {k: numbers for k in
                                                             ("raw", "ema", "bema")}}}

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sc_train, "train", diverged)
    assert main(["train", BASE, *TINY_TRAIN, "--out", "r"]) == 2
    line = last_error_line(capsys)
    assert "diverged (final loss nan)" in line and "id_invalid_mass is nan" in line
    assert list(tmp_path.iterdir()) == []


def test_require_finite_allows_undefined_values():
    from resharpen.experiments.common.cli_args import UsageError, require_finite

    require_finite({"a": 1.0, "b": None}, "x")
    with pytest.raises(UsageError, match=r"x: b is inf, not a finite number"):
        require_finite({"a": 1.0, "b": float("inf")}, "x")


def test_train_prints_every_reference(tmp_path, monkeypatch, capsys):
    """A tiny run: the table says what LG score is, the chance invalid mass and what '-' means
    in the margin column; no 'nan' is printed."""
    monkeypatch.chdir(tmp_path)
    assert main(["train", BASE, *TINY_TRAIN, "--out", "r"]) == 0
    out = capsys.readouterr().out
    assert "LG score = the largest s with mean invalid mass <=" in out
    assert "chance, the uniform prediction's s/v" in out and "nan" not in out
    assert (tmp_path / "r" / "summary.json").is_file()


# ----------------------------------------------------------------------------- library sizes
def test_evaluate_lengths_refuses_a_huge_per_length():
    import torch

    from resharpen.experiments.model.transformer import ModelConfig, Transformer
    from resharpen.experiments.set_complement.evaluate import evaluate_lengths

    model = Transformer(ModelConfig(vocab=8, d_model=8))
    with pytest.raises(ValueError, match=r"per_length = 1000000000000\) needs about .* memory"):
        evaluate_lengths(model, 8, per_length=10**12)
    with pytest.raises(ValueError, match="per_length must be a positive integer"):
        evaluate_lengths(model, 8, per_length=0)
    assert len(evaluate_lengths(model, 8, per_length=2)) == 7
    assert torch.get_default_dtype() == torch.float32


# ----------------------------------------------------------------------------- the helpers
def test_check_within_follows_links(tmp_path):
    from resharpen.experiments.common.io import check_within

    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "inside").symlink_to(tmp_path / "out")  # a named folder may itself be a link
    check_within(tmp_path / "inside", tmp_path / "inside" / "runs" / "a")
    (tmp_path / "out" / "runs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match=r"leads outside .* through a symbolic link"):
        check_within(tmp_path / "out", tmp_path / "out" / "runs" / "a", "run folder")
    (tmp_path / "out" / "loop").symlink_to(tmp_path / "out" / "loop")
    with pytest.raises(ValueError):
        check_within(tmp_path / "out", tmp_path / "out" / "loop" / "x")


def test_undo_on_failure_removes_only_what_it_made(tmp_path):
    from resharpen.experiments.common.io import atomic_write_text, undo_on_failure

    (tmp_path / "old").mkdir()
    atomic_write_text(tmp_path / "old" / "kept.txt", "before")
    with pytest.raises(RuntimeError):
        with undo_on_failure(tmp_path / "old"):
            atomic_write_text(tmp_path / "old" / "new.txt", "x")
            atomic_write_text(tmp_path / "old" / "kept.txt", "replaced")
            raise RuntimeError("boom")
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["kept.txt"]
    with pytest.raises(RuntimeError):
        with undo_on_failure(tmp_path / "a" / "b"):
            atomic_write_text(tmp_path / "a" / "b" / "c" / "f.txt", "x")
            raise RuntimeError("boom")
    assert not (tmp_path / "a").exists()  # created here, left empty: removed
    with pytest.raises(RuntimeError):
        with undo_on_failure(tmp_path / "n", remove_written=False):
            atomic_write_text(tmp_path / "n" / "result.txt", "x")
            (tmp_path / "n" / ".lock").touch()
            raise RuntimeError("boom")
    assert sorted(p.name for p in (tmp_path / "n").iterdir()) == [".lock", "result.txt"]
    with pytest.raises(RuntimeError):
        with undo_on_failure(tmp_path / "m"):
            atomic_write_text(tmp_path / "m" / "sub" / "result.txt", "x")
            (tmp_path / "m" / ".lock").touch()  # not the block's: only its holder removes it
            raise RuntimeError("boom")
    assert [p.name for p in (tmp_path / "m").iterdir()] == [".lock"]
    with undo_on_failure(tmp_path / "ok"):
        atomic_write_text(tmp_path / "ok" / "f.txt", "x")
    assert (tmp_path / "ok" / "f.txt").read_text() == "x"
    with pytest.raises(RuntimeError):  # nested: the inner block's run stays, the outer's goes
        with undo_on_failure(tmp_path / "sweep", remove_written=False):
            with undo_on_failure(tmp_path / "sweep" / "run0"):
                atomic_write_text(tmp_path / "sweep" / "run0" / "summary.json", "{}")
            with undo_on_failure(tmp_path / "sweep" / "run1"):
                atomic_write_text(tmp_path / "sweep" / "run1" / "config.json", "{}")
                raise RuntimeError("disk full")
    assert [p.name for p in (tmp_path / "sweep").iterdir()] == ["run0"]


def test_unreadable_file_is_one_value_error(tmp_path):
    from resharpen.experiments.common.stored import read_text_file

    path = tmp_path / "b.json"
    path.write_text("{}")
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("root reads any file")
        with pytest.raises(ValueError, match=r"--baseline '.*b\.json' cannot be read"):
            read_text_file(path, "--baseline", "JSON file")
    finally:
        path.chmod(0o644)


def test_a_partial_baseline_is_written_with_force(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.chdir(tmp_path)
    assert main(["verify", "--only", "sc.lemma.*", "--write-baseline", "b.json", "--force"]) == 0
    claims = json.loads((tmp_path / "b.json").read_text())["claims"]
    assert claims and all(c.startswith("sc.lemma.") for c in claims)
