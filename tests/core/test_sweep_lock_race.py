"""The sweep lock under concurrent starts: two or three ``resharpen sweep`` (or ``langs run``)
on one folder released at the same instant. Exactly one runs; the others exit 2 with one line
``error: ...``; a starter that comes while the winner runs is refused too (a loser used to
remove the winner's lock file, so a later starter ran beside it); and a lock whose holder was
killed (SIGKILL) does not block the next start.

The runs are fakes (a run function that waits for the test's go-ahead), so every trial takes a
fraction of a second: 10 trials of each kind."""
from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import signal
import time

import pytest

import resharpen.experiments.training.loop  # noqa: F401  (torch, once: the forked children share it)
from resharpen.cli import main

from test_bad_inputs import LANG_GRID, PLACES  # pytest puts tests/core on sys.path

TRIALS = 10
FORK = multiprocessing.get_context("fork")  # the children inherit the fakes patched below
EVENTS: dict = {}


def fake_sc_group(configs: list[dict]) -> list[dict]:
    """A Set Complement run in no time: the summary keys the sweep's table reads."""
    from resharpen.experiments.set_complement.sweep import TABLE_SUMMARY_KEYS
    from resharpen.experiments.training.runs import WEIGHT_KINDS

    _hold()
    summary = {"primary": "raw", "seconds": 0.0, **{k: 0.0 for k in TABLE_SUMMARY_KEYS},
               "by_weights": {w: {"ood_invalid_mass": 0.0, "ood_kl": 0.0, "lg_score": 0}
                              for w in WEIGHT_KINDS}}
    return [{"config": c, "history": [], "summary": summary} for c in configs]


def fake_grid_group(configs: list[dict], checkpoints: str | None = None) -> list[dict]:
    """A language run in no time: the summary keys the grid's table reads."""
    from resharpen.experiments.training.runs import WEIGHT_KINDS

    _hold()
    summary = {"seconds": 0.0, "by_weights": {w: {"id_invalid_mass": 0.0} for w in WEIGHT_KINDS}}
    return [{"config": c, "history": [], "summary": summary} for c in configs]


def _hold() -> None:
    """Say the run has started, then wait for the test's go-ahead (the winner runs as long as
    the test needs to start a later process)."""
    EVENTS["running"].set()
    EVENTS["release"].wait(20)


def _start(args: list[str], barrier, results) -> None:
    """A child: wait at the barrier, run the command line, report (exit status, stderr)."""
    err = io.StringIO()
    barrier.wait(20)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    results.put((code, err.getvalue()))


def _race(args: list[str], racers: int) -> list[tuple[int, str]]:
    """Start ``racers`` processes at one instant, then one more while the winner runs; let the
    winner finish; every (exit status, stderr), the later starter's last."""
    EVENTS.update(running=FORK.Event(), release=FORK.Event())
    barrier, results = FORK.Barrier(racers), FORK.Queue()
    children = [FORK.Process(target=_start, args=(args, barrier, results))
                for _ in range(racers)]
    for child in children:
        child.start()
    assert EVENTS["running"].wait(30), "no sweep started"
    outcomes = [results.get(timeout=30) for _ in range(racers - 1)]  # the losers, at once
    late = FORK.Process(target=_start, args=(args, FORK.Barrier(1), results))
    late.start()
    outcomes.append(results.get(timeout=30))  # refused while the winner runs
    EVENTS["release"].set()
    outcomes.insert(0, results.get(timeout=30))  # the winner
    for child in [*children, late]:
        child.join(30)
    return outcomes


def _check(outcomes: list[tuple[int, str]], folder) -> None:
    codes = [code for code, _ in outcomes]
    assert codes[0] == 0 and codes[1:] == [2] * (len(codes) - 1), outcomes
    for _, err in outcomes[1:]:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        assert "is in use: another process is running this" in lines[0], err
    assert (folder / ".lock").is_file() and (folder / "sweep.json").is_file()


@pytest.mark.parametrize("racers", [2, 3])
def test_concurrent_sweeps_one_runs(racers, tmp_path, monkeypatch):
    from resharpen.experiments.set_complement import sweep as sc_sweep

    monkeypatch.setattr(sc_sweep, "run_group", fake_sc_group)
    for trial in range(TRIALS):
        out = tmp_path / f"s{trial}"
        _check(_race(["sweep", PLACES["{RS}"], "--profile", "quick", "--runs", "2",
                      "--workers", "1", "--out", str(out)], racers), out)
        assert len(list((out / "runs").iterdir())) == 2


def test_concurrent_language_grids_one_runs(tmp_path, monkeypatch):
    from resharpen.experiments.languages import grid

    monkeypatch.setattr(grid, "run_group", fake_grid_group)
    (tmp_path / "g.toml").write_text(LANG_GRID)
    for trial in range(TRIALS):
        out = tmp_path / f"g{trial}"
        _check(_race(["langs", "run", "--grid", str(tmp_path / "g.toml"), "--profile", "quick",
                      "--workers", "1", "--no-report", "--out", str(out)], 3), out)


def _hold_lock_forever(folder, ready) -> None:
    from resharpen.experiments.common.locks import hold_lock

    with hold_lock(folder / ".lock", "busy"):
        ready.set()
        time.sleep(60)


def test_a_killed_holders_lock_does_not_block(tmp_path):
    """The kernel drops an flock when its holder dies: after a SIGKILL the next start runs."""
    from resharpen.experiments.common.locks import hold_lock

    ready = FORK.Event()
    holder = FORK.Process(target=_hold_lock_forever, args=(tmp_path, ready))
    holder.start()
    assert ready.wait(20)
    with pytest.raises(ValueError, match="busy"):
        with hold_lock(tmp_path / ".lock", "busy"):
            pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(20)
    with hold_lock(tmp_path / ".lock", "busy"):
        assert (tmp_path / ".lock").is_file()


def test_a_removed_lock_file_is_not_a_held_lock(tmp_path):
    """A waiter that locked a file its holder removed starts again on the file now there, so
    two holders never coexist (the holder removes its lock file when the folder is empty)."""
    from resharpen.experiments.common.locks import hold_lock

    lock = tmp_path / ".lock"
    with hold_lock(lock, "busy", remove_if_alone=True):
        pass
    assert not lock.exists()  # the folder held nothing else: its holder removed it
    (tmp_path / "result.json").write_text("{}")
    with hold_lock(lock, "busy", remove_if_alone=True):
        pass
    assert lock.is_file()  # the folder holds results: the lock file stays
