"""A sweep killed with SIGKILL ten times, at random moments and mid-write, resumes to the same
files as an uninterrupted run (issue 16, requirement 8; slow suite).

The killed sweeps run in a child process whose ``os.replace`` (the rename that ends every atomic
write, experiments/common/io.py) first sleeps 0.15 s, so that a temporary file exists long enough
for half of the kills to land while one is being written (the test waits for one to appear);
the other half land at random moments. After the kills a plain resume finishes the sweep, and
every file of every run, and the sweep's table, must equal the uninterrupted run's (timing
fields aside; weights tensor by tensor, bit for bit, with their metadata)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors import safe_open

from resharpen.experiments.common.io import TEMP_MARK
from resharpen.experiments.set_complement.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "experiments" / "configs" / "set_complement" / "base_sampled.toml"
TIMING = {"seconds"}
KILLS = 10

SLOW_RENAME = """
import os, sys, time
_replace = os.replace
def slow_replace(src, dst, *args, **kwargs):
    time.sleep(0.15)
    return _replace(src, dst, *args, **kwargs)
os.replace = slow_replace
from resharpen.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def tiny_sweep(folder: Path) -> Path:
    path = folder / "tiny.toml"
    path.write_text(f'name = "tiny"\nbase = "{BASE}"\n[task]\nvocab = 8\n[model]\nd_model = 8\n'
                    '[train]\nsteps = 40\nwarmup = 2\neval_every = 10\nbatch_size = 8\n'
                    '[eval]\nper_length = 8\n[sweep]\nruns = 4\nseed = 3\n[search]\n'
                    '"train.lr" = { loguniform = [1e-3, 3e-2] }\n'
                    '"model.norm" = { choice = ["none", "post"] }\n')
    return path


def _drop_timing(obj):
    if isinstance(obj, dict):
        return {k: _drop_timing(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_drop_timing(v) for v in obj]
    return obj


def contents(root: Path) -> dict[str, object]:
    """Every file of every run and the table: parsed JSON without timing fields, else bytes."""
    files = {}
    for path in sorted(list((root / "runs").rglob("*")) + [root / "table.jsonl"]):
        if not path.is_file():
            continue
        name = str(path.relative_to(root))
        if path.name == "provenance.json":  # when and where it ran: differs by design
            continue
        if path.suffix == ".json":
            files[name] = _drop_timing(json.loads(path.read_text()))
        elif path.suffix == ".jsonl":
            files[name] = [_drop_timing(json.loads(line)) for line in path.read_text().splitlines()]
        elif path.suffix == ".safetensors":  # its header's key order varies between processes
            with safe_open(path, "pt") as handle:
                files[name] = (handle.metadata(), {key: handle.get_tensor(key).numpy().tobytes()
                                                   for key in sorted(handle.keys())})
        else:
            files[name] = path.read_bytes()
    return files


def _temporaries(root: Path, data_only: bool = False) -> list[Path]:
    """The package's temporary files under ``root``; ``data_only``: not the writability probes
    (``.probe.resharpen-*``), which live for microseconds, only the files being written."""
    found = list(root.rglob(f"*{TEMP_MARK}*.tmp")) if root.exists() else []
    return [p for p in found if not (data_only and p.name.startswith(".probe"))]


@pytest.mark.slow
def test_ten_sigkills_then_resume_give_the_uninterrupted_files(tmp_path):
    path = tiny_sweep(tmp_path)
    start = time.perf_counter()
    reference = run_sweep(path, out=tmp_path / "reference", workers=1, profile="quick",
                          progress=False)
    duration = time.perf_counter() - start
    out = tmp_path / "killed"
    cmd = [sys.executable, "-c", SLOW_RENAME, "sweep", str(path), "--workers", "1",
           "--profile", "quick", "--out", str(out)]
    rng = random.Random(16)
    mid_write = 0
    for kill in range(KILLS):
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if kill % 2:  # wait for a temporary file: the child is inside an atomic write
                deadline = time.time() + 120
                while (time.time() < deadline and not _temporaries(out, data_only=True)
                       and proc.poll() is None):
                    time.sleep(0.01)
                mid_write += bool(_temporaries(out, data_only=True))
            else:  # a random moment of the child's life (start-up and imports included)
                time.sleep(rng.uniform(0.5, 3.0 + duration))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        for file in out.rglob("*.json"):  # no half-written file is ever visible
            json.loads(file.read_text())
    assert mid_write >= KILLS // 2 - 1, f"only {mid_write} kills landed mid-write"
    resumed = run_sweep(path, out=out, workers=1, profile="quick", progress=False)
    assert not _temporaries(resumed)
    expected, got = contents(reference), contents(resumed)
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name] == expected[name], name
