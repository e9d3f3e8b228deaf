"""Nothing the package did not write is replaced or followed, and no run folder is left half
old, half new: the cases of the bad-input table (tests/core/test_bad_inputs.py) that need more
than a command line: the library writers' own refusal (a device, FIFO, socket, folder or link at
the target), lock files planted as links, and retraining into a finished run folder, on a full
disk as on a free one."""
from __future__ import annotations

import errno
import os
import socket
import stat

import pytest

from resharpen.cli import main
from resharpen.experiments.common import io, locks, stored

from test_bad_inputs import PLACES, snapshot  # pytest puts tests/core on sys.path (no package)

BASE = PLACES["{BASE}"]
TINY = ["--profile", "quick", "--set", "train.steps=20", "--set", "model.d_model=8",
        "--set", "train.eval_every=0"]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


# ---------------------------------------------------------------- the library writers themselves
def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    server = socket.socket(socket.AF_UNIX)
    os.chdir(path.parent)
    server.bind(path.name)
    return server


def _loop(path):
    path.symlink_to(path.name)


def _link_to_file(path):
    (path.parent / "theirs.txt").write_text("theirs")
    path.symlink_to("theirs.txt")


def _folder(path):
    path.mkdir()


@pytest.mark.parametrize("make, kind", [
    (_fifo, r"a FIFO \(named pipe\)"), (_socket, "a socket"), (_loop, "a symbolic link that loops"),
    (_link_to_file, "a symbolic link"), (_folder, "a folder"),
], ids=["FIFO", "socket", "symlink loop", "symlink to a file", "folder"])
def test_atomic_writers_refuse_what_is_not_a_regular_file(make, kind, tmp_path, monkeypatch):
    """Each atomic writer raises one ValueError naming the target and what it is, and the target
    (and whatever a link points to) is exactly as before."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "out.json"
    made = make(target)
    try:
        before = snapshot(tmp_path)
        for write in (lambda: io.atomic_write_text(target, "x"),
                      lambda: io.atomic_write_json(target, {"a": 1}),
                      lambda: io.atomic_write_bytes(target, b"x")):
            with pytest.raises(ValueError, match=rf"'.*out\.json' is {kind}"):
                write()
        with pytest.raises(ValueError, match=rf"--json '.*out\.json' is {kind}"):
            io.check_output_file(target, "--json")
        assert snapshot(tmp_path) == before
    finally:
        if made is not None:
            made.close()


def test_a_device_at_the_target_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """``verify --json /dev/full`` (as root it replaced the device): the device is simulated by
    reporting a character device for a path in the test folder (never touching a real device);
    the command refuses it with one line before any claim runs, and the library writer too."""
    monkeypatch.chdir(tmp_path)
    device = tmp_path / "full"
    device.write_text("a device")
    real_lstat = os.lstat

    def as_device(path, *args, **kwargs):
        info = real_lstat(path, *args, **kwargs)
        if os.path.abspath(path) == str(device):
            values = list(info)
            values[0] = stat.S_IFCHR | 0o666
            return os.stat_result(values)
        return info

    monkeypatch.setattr(os, "lstat", as_device)
    before = snapshot(tmp_path)
    assert main(["verify", "--json", "full", "--only", "sc.lemma.*"]) == 2
    assert "--json 'full' is a character device, not a regular file" in one_error_line(capsys)
    with pytest.raises(ValueError, match="is a character device"):
        io.atomic_write_text(device, "{}")
    assert snapshot(tmp_path) == before


def test_temporary_files_are_private_until_written(tmp_path, monkeypatch):
    """The temporary file is created with O_EXCL | O_NOFOLLOW (``mkstemp``) and mode 0600, and
    the result gets the usual mode from its descriptor (never by path)."""
    modes = []
    real_replace = os.replace

    def spy(src, dst, *args, **kwargs):
        modes.append(stat.S_IMODE(os.stat(src).st_mode))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", spy)
    monkeypatch.setattr(os, "chmod", lambda *a, **k: pytest.fail("chmod by path"))
    io.atomic_write_text(tmp_path / "f.txt", "x")
    mask = os.umask(0o022)
    os.umask(mask)
    assert modes == [0o666 & ~mask]


# ---------------------------------------------------------------- lock files are never followed
def test_a_group_lock_planted_as_a_link_touches_nothing(tmp_path):
    """``dynamics trained``'s ``<group>.json.lock`` planted as a link to an outside file: one
    ValueError naming the lock file; the outside file keeps its bytes (it was truncated to 0)."""
    from resharpen.experiments.dynamics.trained_plan import group_lock

    outside = tmp_path / "precious.txt"
    outside.write_text("precious")
    folder = tmp_path / "dyn_trained" / "quick"
    folder.mkdir(parents=True)
    (folder / "g.json.lock").symlink_to(outside)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"lock file '.*g\.json\.lock' cannot be used: a "
                                         r"symbolic link"):
        with group_lock(folder / "g.json"):
            pytest.fail("the lock was taken through a link")
    assert snapshot(tmp_path) == before and outside.read_text() == "precious"


def test_a_lock_file_that_is_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / ".lock")
    with pytest.raises(ValueError, match=r"lock file '.*\.lock' is a FIFO"):
        with locks.hold_lock(tmp_path / ".lock", "busy"):
            pytest.fail("locked a FIFO")


def test_a_new_lock_file_is_a_regular_0644_file(tmp_path):
    with locks.hold_lock(tmp_path / "x.lock", "busy"):
        info = os.lstat(tmp_path / "x.lock")
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------- retraining into a run folder
def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_retraining_on_a_full_disk_keeps_the_old_run(tmp_path, monkeypatch, capsys):
    """``train --out r`` again into its finished run folder while every write fails as on a
    full disk: one line, exit 2, the old run byte for byte (nothing half-written beside it);
    then the same retraining on a free disk gives a consistent run. Retraining with another
    config is refused before any work (the finished run would be lost), the old run kept."""
    from resharpen import load_run

    monkeypatch.chdir(tmp_path)
    assert main(["train", BASE, *TINY, "--set", "task.vocab=8", "--out", "r"]) == 0
    capsys.readouterr()
    before = snapshot(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", disk_full)
        assert main(["train", BASE, *TINY, "--set", "task.vocab=8", "--out", "r"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: No space left on device writing '") and \
        [line for line in err if line.startswith("error: ")] == err[-1:]
    assert snapshot(tmp_path) == before
    assert main(["train", BASE, *TINY, "--set", "task.vocab=12", "--out", "r"]) == 2
    assert "holds a finished run of another config" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    assert main(["train", BASE, *TINY, "--set", "task.vocab=8", "--out", "r"]) == 0
    run = load_run("r")
    assert run.config["task"]["vocab"] == 8 == run.model().cfg.vocab
    assert [p.name for p in tmp_path.iterdir()] == ["r"]  # no staging folder left


def test_commit_replaces_the_old_run_files_and_keeps_the_users(tmp_path):
    """A folder holding an earlier run and a user's notes: after the commit it holds the new
    files, the notes, and no file of the earlier run that the new one does not write."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name, text in (("config.json", "old"), ("summary.json", "old"),
                       ("per_length.json", "old"), ("notes.txt", "mine")):
        (folder / name).write_text(text)
    stage = io.staging_folder(folder)
    for name in ("config.json", "summary.json", "metrics.jsonl"):
        (stage / name).write_text("new")
    io.commit_staged(stage, folder, "summary.json",
                     ("config.json", "summary.json", "per_length.json", "metrics.jsonl"))
    assert {p.name: p.read_text() for p in folder.iterdir()} == {
        "config.json": "new", "summary.json": "new", "metrics.jsonl": "new",
        "notes.txt": "mine"}
    assert not stage.exists()
    empty = tmp_path / "e"
    empty.mkdir()
    stage = io.staging_folder(empty)
    (stage / "summary.json").write_text("new")
    inode = stage.stat().st_ino
    io.commit_staged(stage, empty, "summary.json", ())
    assert empty.stat().st_ino == inode  # an empty folder is replaced whole, by one rename


def test_a_killed_writers_staging_folder_is_removed_by_the_next_sweep(tmp_path):
    """A staging folder of this package (only run files inside) is removed; one holding anything
    else, or of another name, stays."""
    runs = tmp_path / "runs"
    ours = runs / ".r0.resharpen-abc.tmp"
    theirs = runs / ".r0.resharpen-def.tmp"
    other = runs / ".r1.resharpen-ghi.tmp"
    for folder in (ours, theirs, other):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
    (ours / ".summary.json.resharpen-x.tmp").write_text("{")
    (theirs / "notes.txt").write_text("mine")
    assert io.remove_stale_staging(runs, "r0", ("config.json", "summary.json")) == [ours]
    assert not ours.exists() and theirs.exists() and other.exists()


def test_a_run_file_that_is_a_fifo_is_refused_before_staging(tmp_path):
    """save_run into a folder whose summary.json is a FIFO: one ValueError, nothing staged."""
    from resharpen.experiments.training.loop import save_run

    folder = tmp_path / "r"
    folder.mkdir()
    os.mkfifo(folder / "summary.json")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"run file '.*summary\.json' is a FIFO"):
        save_run({"config": {}, "history": [], "summary": {}}, folder)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- reading: bounded and checked
def test_reading_is_capped_and_never_blocks(tmp_path):
    """A file over the cap is refused unread; a FIFO (no writer) or a device is refused without
    blocking or reading; an array nested 100,000 deep is one ValueError, not RecursionError."""
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(ValueError, match=r"has more than 64 bytes, more than any JSON file"):
        stored.read_json(big, "run file", max_bytes=64)
    os.mkfifo(tmp_path / "f.json")
    with pytest.raises(ValueError, match=r"is a FIFO \(named pipe\), not a JSON file"):
        stored.read_json(tmp_path / "f.json", "run file")
    with pytest.raises(ValueError, match=r"'/dev/zero' is a character device"):
        stored.read_jsonl("/dev/zero", "run history")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"deep\.json' nests its arrays or objects too deep"):
        stored.read_json(deep, "run file")


def test_shapes_name_the_file_and_the_field(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"by_weights": {"raw": {"ood_kl": "x"}}, "rows": [1, 2, null]}')
    with pytest.raises(ValueError, match=r"summary\.json': by_weights\.raw\.ood_kl is 'x', not "
                                         r"a number"):
        stored.read_json(path, "run file", {"by_weights": {"raw": {"ood_kl": stored.NUMBER}}})
    with pytest.raises(ValueError, match=r"rows\[2\] is null, not a finite number"):
        stored.read_json(path, "run file", {"rows": [stored.FINITE]})
    with pytest.raises(ValueError, match=r"summary\.json': primary is missing"):
        stored.read_json(path, "run file", {"primary": str})
    assert stored.read_json(path, "run file", {"primary?": str, "rows": [(stored.NUMBER, type(None))]})


def test_load_run_refuses_files_of_the_wrong_shape(tmp_path):
    """``load_run`` on a folder whose config.json is ``[]`` (it was accepted) or whose history
    has a non-numeric step: one ValueError naming the file and the field."""
    from resharpen import load_run

    folder = tmp_path / "r"
    folder.mkdir()
    for name, text in (("summary.json", "{}"), ("config.json", "[]"), ("per_length.json", "[]")):
        (folder / name).write_text(text)
    with pytest.raises(ValueError, match=r"config\.json': the document is an array, not an "
                                         r"object"):
        load_run(folder)
    (folder / "config.json").write_text('{"task": 5}')
    with pytest.raises(ValueError, match=r"config\.json': task is 5, not an object"):
        load_run(folder)
    (folder / "config.json").write_text("{}")
    (folder / "metrics.jsonl").write_text('{"step": 0}\n{"step": "late"}\n')
    with pytest.raises(ValueError, match=r"metrics\.jsonl', line 2: step is 'late', not a number"):
        load_run(folder)
