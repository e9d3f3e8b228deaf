"""Long work reports progress: a line per evaluation when stderr is not a terminal (step, loss,
in-distribution invalid mass, ETA), nothing extra on a terminal (the tqdm bar shows it)."""
from __future__ import annotations

import re

from resharpen.experiments.common import progress


def test_a_line_per_call_off_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    lines = progress.Progress("train x", 100)
    lines.line(25, loss=2.5, **{"ID invalid mass": 1.2e-3, "skipped": None})
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert re.fullmatch(r"train x: step 25/100 \(25%\), loss 2\.5000, ID invalid mass 1\.20e-03, "
                        r"ETA \d+:\d\d:\d\d", err[0]), err[0]


def test_at_most_one_line_per_interval_but_always_the_first_and_the_last(capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    lines = progress.Progress("train x", 400, min_interval=60.0)
    for step in range(1, 401):
        lines.line(step, loss=1.0)
    err = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in err] == ["train x: step 1/400 (0%)",
                                                    "train x: step 400/400 (100%)"]


def test_silent_on_a_terminal_and_when_disabled(capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    progress.Progress("train x", 10).line(5, loss=1.0)
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    progress.Progress("train x", 10, enabled=False).line(5, loss=1.0)
    assert capsys.readouterr().err == ""


def test_fit_of_reads_the_rows_of_every_trainer():
    assert progress.fit_of({"fit_id_invalid_mass": 0.1, "raw": {"id_invalid_mass": 0.2}}) == 0.1
    assert progress.fit_of({"raw": {"id_invalid_mass": 0.2}}) == 0.2
    assert progress.fit_of({"id_invalid_mass": 0.3}) == 0.3
    assert progress.fit_of({"loss": 1.0}) is None


def test_training_prints_a_line_per_evaluation_off_a_terminal(capsys, monkeypatch):
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.set_complement.train import load_config, train

    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    config = load_config(CONFIG_DIR / "set_complement" / "base_sampled.toml", [
        "task.vocab=8", "model.d_model=8", "train.steps=20", "train.warmup=3",
        "train.batch_size=8", "train.eval_every=10", "eval.per_length=8",
        "train.bema_update_after=2"])
    train(config, progress=True)
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("train")]
    assert [re.search(r"step (\d+)/20", line).group(1) for line in err] == ["10", "20"]
    assert all("ID invalid mass" in line and "ETA" in line for line in err)


def test_per_item_names_each_finished_item_off_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    with progress.per_item("verify", 2, "claim", lambda item: {item: "PASS"}) as done:
        done("a.b")
        done("c.d")
    err = capsys.readouterr().err
    assert "verify: claim 1/2 (50%), a.b PASS" in err and "claim 2/2 (100%), c.d PASS" in err


def test_a_heartbeat_is_silent_for_short_work_and_beats_for_long_work(capsys, monkeypatch):
    """A heartbeat (a grid's run in a worker) writes its first line only once the work has
    lasted ``min_interval`` seconds, then one per interval, and its last line only after an
    earlier one: a short run writes nothing. The clock is planted, so no test waits."""
    clock = [1000.0]
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    short = progress.Progress("train short", 100, min_interval=300.0, heartbeat=True)
    for step in range(1, 101):
        clock[0] += 1.0
        short.line(step, loss=1.0)
    assert capsys.readouterr().err == ""
    long = progress.Progress("train long", 100, min_interval=300.0, heartbeat=True)
    for step in range(1, 101):
        clock[0] += 10.0  # 1000 s in all: beats at 300, 600 and 900 s, then the last line
        long.line(step, loss=1.0)
    steps = [re.search(r"step (\d+)/100", line).group(1)
             for line in capsys.readouterr().err.splitlines()]
    assert steps == ["30", "60", "90", "100"]


def test_a_grid_run_in_a_worker_beats_in_its_log(capsys, monkeypatch):
    """The language grid's runs train with a heartbeat (no bar in a worker): a run longer than
    RUN_HEARTBEAT_SECONDS writes a line with its step and ID invalid mass."""
    import copy

    import resharpen.experiments.languages.grid as grid
    from resharpen.experiments.languages.grid import load_grid

    config = copy.deepcopy(load_grid("languages/grid", "quick")["configs"][0])
    config["train"]["steps"] = 50
    config["train"]["log_every"] = 25
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    monkeypatch.setattr(grid, "RUN_HEARTBEAT_SECONDS", 0.0)
    grid.run_group([config])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("train")]
    assert err and all("ID invalid mass" in line for line in err), err


def test_the_eta_of_a_resumed_sweep_counts_only_the_work_done_since_it_started(monkeypatch):
    """A sweep resumed with 700 of 800 runs already finished that finishes 10 more in 100 s has
    90 runs left at 10 s each: 900 s, not the 13 s that counting the skipped runs would give."""
    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    lines = progress.Progress("grid", 800, unit="run", initial=700)
    clock[0] = 100.0
    assert lines.eta(710) == "0:15:00"
    assert progress.Progress("grid", 800, unit="run", initial=700).eta(700) == "?"


def test_a_meter_beats_off_a_terminal_for_long_work_and_counts_continuous_units(capsys,
                                                                                monkeypatch):
    """Off a terminal, long work measured by a :class:`progress.Meter` (a stack's layers, a
    simulation's time) writes a line every ``min_interval`` seconds and a last one; short work
    writes nothing; an amount of simulated time is printed in 4 digits. The clock is planted."""
    clock = [0.0]
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])

    def slow(items, seconds_each):
        for item in items:
            clock[0] += seconds_each
            yield item

    assert list(progress.track(slow(range(5), 1.0), desc="stack post x2", unit="layer",
                               total=5)) == list(range(5))
    assert capsys.readouterr().err == ""
    list(progress.track(slow(range(48), 1.0), desc="stack post x2", unit="layer", total=48))
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == [
        "stack post x2: layer 10/48 (21%)", "stack post x2: layer 20/48 (42%)",
        "stack post x2: layer 30/48 (62%)", "stack post x2: layer 40/48 (83%)",
        "stack post x2: layer 48/48 (100%)"]
    with progress.Meter("NA postln", 50.0, "t") as meter:
        for _ in range(20):
            clock[0] += 3.0
            meter.update(2.5)
    assert capsys.readouterr().err.splitlines()[-1].startswith("NA postln: t 50/50 (100%)")
    with progress.Meter("NA postln", 50.0, "t", enabled=False) as meter:
        clock[0] += 100.0
        meter.update(50.0)
    assert capsys.readouterr().err == ""
