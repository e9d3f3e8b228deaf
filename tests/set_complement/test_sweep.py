"""Set Complement sweeps: run folders, table, resume, refusal to mix sweeps, SIGKILL safety,
backend equality, batched ensembles."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resharpen.experiments.training.sweep import load_runs, read_table
from resharpen.experiments.set_complement.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "experiments" / "configs" / "set_complement" / "base_sampled.toml"
FILES = ("config.json", "metrics.jsonl", "per_length.json", "summary.json")


def tiny_sweep(tmp_path, runs=3, steps=20, space=None):
    space = space or ('"train.lr" = { loguniform = [1e-3, 3e-2] }\n'
                      '"model.norm" = { choice = ["none", "post"] }\n'
                      '"train.seed" = { randint = [0, 1000] }\n')
    path = tmp_path / "tiny.toml"
    path.write_text(f'name = "tiny"\nbase = "{BASE}"\n'
                    f'[task]\nvocab = 8\n[model]\nd_model = 8\n'
                    f'[train]\nsteps = {steps}\nwarmup = 2\neval_every = 10\nbatch_size = 8\n'
                    f'[eval]\nper_length = 8\n[sweep]\nruns = {runs}\nseed = 7\n'
                    f'[search]\n{space}')
    return path


def numbers(root):
    """Per-run summaries without wall-clock time (NaN-safe via JSON)."""
    out = {}
    for run in load_runs(root):
        summary = dict(run["summary"])
        summary.pop("seconds")
        out[run["config"]["name"]] = json.dumps(summary, sort_keys=True)
    return out


def test_sweep_writes_folders_and_table_then_resumes(tmp_path):
    path = tiny_sweep(tmp_path)
    root = run_sweep(path, out=tmp_path / "out", workers=1, progress=False)
    runs = sorted((root / "runs").iterdir())
    assert [r.name for r in runs] == ["tiny-0000", "tiny-0001", "tiny-0002"]
    for run in runs:
        for name in FILES:
            assert (run / name).exists()
        json.loads((run / "per_length.json").read_text())
        lines = (run / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(line)["step"] for line in lines] == [10, 20]
    rows = read_table(root)
    assert len(rows) == 3 and {"train.lr", "model.norm", "ood_kl", "bema.ood_kl"} <= set(rows[0])
    assert len({r["train.lr"] for r in rows}) == 3
    assert (root / "table.csv").read_text().count("\n") == 4
    stamp = {r.name: (r / "summary.json").stat().st_mtime_ns for r in runs}
    # a rerun with more runs trains only the new one; the first three are untouched
    run_sweep(path, out=tmp_path / "out", runs=4, workers=1, progress=False)
    assert len(read_table(root)) == 4
    assert stamp == {r.name: (root / "runs" / r.name / "summary.json").stat().st_mtime_ns
                     for r in runs}


def test_a_different_sweep_in_the_same_folder_is_refused(tmp_path):
    run_sweep(tiny_sweep(tmp_path, runs=1), out=tmp_path / "out", workers=1, progress=False)
    other = tiny_sweep(tmp_path, runs=1, space='"train.lr" = { choice = [0.01] }\n')
    with pytest.raises(ValueError, match="different sweep"):
        run_sweep(other, out=tmp_path / "out", workers=1, progress=False)


def test_process_pool_gives_the_same_numbers_as_inline(tmp_path):
    path = tiny_sweep(tmp_path, runs=2)
    inline = run_sweep(path, out=tmp_path / "a", workers=1, progress=False)
    pooled = run_sweep(path, out=tmp_path / "b", workers=2, progress=False)
    assert numbers(inline) == numbers(pooled) and len(numbers(inline)) == 2


def test_sigkill_loses_only_runs_in_flight(tmp_path):
    path = tiny_sweep(tmp_path, runs=4, steps=60)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "resharpen.cli", "sweep", str(path), "--workers", "1",
           "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(list(out.glob("runs/*/summary.json"))) < 1:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    finished = list(out.glob("runs/*/summary.json"))
    assert 1 <= len(finished) < 4, "the kill came too late to test anything"
    for file in out.rglob("*.json"):  # nothing half-written
        json.loads(file.read_text())
    before = {f.parent.name: f.stat().st_mtime_ns for f in finished}
    root = run_sweep(path, out=out, workers=1, progress=False)
    assert len(read_table(root)) == 4
    assert not list(root.rglob(".*.tmp"))
    assert before == {n: (root / "runs" / n / "summary.json").stat().st_mtime_ns for n in before}


def test_ray_backend_gives_the_same_numbers(tmp_path):
    ray = pytest.importorskip("ray")
    path = tiny_sweep(tmp_path, runs=2)
    inline = run_sweep(path, out=tmp_path / "a", workers=1, progress=False)
    try:
        on_ray = run_sweep(path, out=tmp_path / "b", workers=2, backend="ray", progress=False)
    finally:
        ray.shutdown()
    assert numbers(inline) == numbers(on_ray)


def test_ensemble_sweep_groups_runs_and_resumes_to_the_same_table(tmp_path):
    space = ('"train.lr" = { loguniform = [1e-3, 3e-2] }\n'
             '"model.norm" = { grid = ["none", "post"] }\n'
             '"train.seed" = { randint = [0, 1000] }\n')
    path = tiny_sweep(tmp_path, runs=6, space=space)
    whole = run_sweep(path, out=tmp_path / "whole", workers=1, progress=False, ensemble=3)
    summaries = [run["summary"] for run in load_runs(whole)]
    assert len(summaries) == 6 and {s["ensemble"] for s in summaries} == {3}
    # kill one run's result: only that run (the member) is trained again, alone, and equals
    # its grouped self up to float32 rounding
    resumed = tmp_path / "resumed"
    run_sweep(path, out=resumed, workers=1, progress=False, ensemble=3)
    assert numbers(resumed) == numbers(whole)  # the same grouping: the same numbers
    victim = sorted((resumed / "runs").iterdir())[1]
    (victim / "summary.json").unlink()
    untouched = {r.name: (r / "summary.json").stat().st_mtime_ns
                 for r in (resumed / "runs").iterdir() if r != victim}
    run_sweep(path, out=resumed, workers=2, progress=False, ensemble=3)
    again = {run["config"]["name"]: run["summary"] for run in load_runs(resumed)}
    before = {run["config"]["name"]: run["summary"] for run in load_runs(whole)}
    assert "ensemble" not in again[victim.name]  # retrained alone
    for key in ("id_invalid_mass", "ood_invalid_mass", "ood_kl"):
        assert again[victim.name][key] == pytest.approx(before[victim.name][key], rel=1e-4)
    assert untouched == {r.name: (r / "summary.json").stat().st_mtime_ns
                         for r in (resumed / "runs").iterdir() if r != victim}
    # grouped runs are not the runs trained alone: the sweep folder knows which it holds
    with pytest.raises(ValueError, match="different sweep"):
        run_sweep(path, out=whole, workers=1, progress=False, ensemble=1)


def test_a_log_gets_one_progress_line_per_finished_group(tmp_path, capsys):
    """Off a terminal, the runs of an ensemble are saved together: one line names the whole
    group, so the count and the ETA are the group's, not its first run's."""
    space = ('"model.norm" = { grid = ["none", "post"] }\n'
             '"train.seed" = { grid = [0, 1, 2] }\n')
    path = tiny_sweep(tmp_path, runs=6, steps=10, space=space)
    run_sweep(path, out=tmp_path / "out", workers=1, progress=True, ensemble=3)
    lines = [line for line in capsys.readouterr().err.splitlines() if "sweep tiny: run" in line]
    assert len(lines) == 2, lines
    assert "run 3/6" in lines[0] and "tiny-0000 .. tiny-0002 (3 runs)" in lines[0]
    assert "run 6/6" in lines[1] and "tiny-0003 .. tiny-0005 (3 runs)" in lines[1]
