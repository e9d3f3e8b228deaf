"""Sweep folders: many runs, one folder each, a table, resumable, on any backend.

Layout of a sweep (or grid) folder, ``out/sweeps/<name>`` by default::

    sweep.json                 the sweep's identity (what runs it plans) and how many
    runs/<run name>/           a run folder (:func:`resharpen.experiments.core.train.save_run`)
    table.csv, table.jsonl     one row per finished run (the trainer's own columns)

:func:`execute` runs every planned run that is not finished on a backend
(:mod:`resharpen.experiments.core.backends`); the trainer supplies the run function, the
table writer and which runs share a task. Every file is written atomically (temporary file,
then rename) by the driver alone, and a run counts as finished only when its ``summary.json``
exists (written last). A rerun skips finished runs; a SIGKILL at any moment loses at most the
runs in flight and leaves no half-written file. The Set Complement random search
(:mod:`resharpen.experiments.set_complement.sweep`) and the language grid
(:mod:`resharpen.experiments.languages.grid`) are the two kinds of sweep.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

from resharpen.experiments.core.backends import check_backend, run_tasks
from resharpen.experiments.core.cli_args import UsageError, bad_input
from resharpen.experiments.core.io import (atomic_write_json, atomic_write_text, dumps_jsonl,
                                           read_json, read_jsonl, remove_stale_temporaries)
from resharpen.experiments.core.runs import WEIGHT_KINDS, WEIGHTS_FILE

SWEEP_FILES = ("sweep.json", "table.csv", "table.jsonl")
"""The files a sweep driver writes in the sweep folder itself."""
RUN_FILES = ("config.json", "metrics.jsonl", "per_length.json", "summary.json",
             *(WEIGHTS_FILE.format(kind) for kind in WEIGHT_KINDS))
"""The files :func:`resharpen.experiments.core.train.save_run` writes in a run folder."""


PER_MEMBER_KEYS = (("train", "seed"), ("train", "lr"), ("train", "weight_decay"),
                   ("train", "ema"), ("train", "ema_decay"), ("model", "init_std"),
                   ("model", "attn_out_scale"), ("model", "attn_dropout"),
                   ("model", "resid_dropout"))
"""The config keys in which runs trained as one ensemble may differ (with the run name): what
only the start, the optimizer, the averaging or the dropout rates see
(:mod:`resharpen.experiments.core.engine`)."""


def group_key(config: dict) -> str:
    """The part of a run config that the members of one ensemble share (all but the name and
    :data:`PER_MEMBER_KEYS`), as canonical JSON."""
    shared = json.loads(json.dumps(config))
    shared.pop("name", None)
    for section, key in PER_MEMBER_KEYS:
        shared.get(section, {}).pop(key, None)
    return json.dumps(shared, sort_keys=True)


def check_shared(configs: list[dict]) -> None:
    """ValueError unless ``configs`` (at least one) can train as one ensemble."""
    if not configs:
        raise ValueError("an ensemble needs at least one run config")
    if len({group_key(c) for c in configs}) > 1:
        raise ValueError("these runs cannot share an ensemble: their configs differ in more "
                         f"than {', '.join(f'{s}.{k}' for s, k in PER_MEMBER_KEYS)}")


def group_runs(configs: list[dict], size: int) -> list[list[int]]:
    """Indices of ``configs`` in groups of at most ``size`` runs with one :func:`group_key`,
    in order of first appearance (a deterministic function of the list)."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"ensemble size must be >= 1, got {size!r}")
    groups: list[list[int]] = []
    open_group: dict[str, list[int]] = {}
    for index, config in enumerate(configs):
        key = group_key(config)
        group = open_group.get(key)
        if group is None or len(group) == size:
            group = open_group[key] = []
            groups.append(group)
        group.append(index)
    return groups


def execute(root: Path, identity: dict, configs: list[dict], run_fn, write_table_fn, *,
            ensemble: int = 1, marker: dict | None = None,
            backend: str = "local", workers: int = 2, address: str | None = None,
            progress: bool = True, kind: str = "sweep", desc: str = "sweep") -> None:
    """Run every config of a sweep folder that has no ``summary.json`` yet, on ``backend``.

    ``run_fn(list of configs) -> list of results`` runs one task: the runs of one ensemble.
    The unfinished runs are grouped into ensembles of at most ``ensemble`` runs that can train
    together (:func:`group_runs`), so a resumed sweep trains only its unfinished runs, in
    ensembles of their own (a member equals its lone run up to float32 rounding, so the
    company does not matter beyond that).
    Refuses a folder whose ``sweep.json`` holds another identity or whose run folder holds
    another config; removes the temporary files a killed writer left (only this package's, for
    the files it writes: :data:`SWEEP_FILES` in ``root``, the run files in each planned run's
    folder; nothing else, nowhere else); writes ``sweep.json``,
    then each finished run (:func:`resharpen.experiments.core.train.save_run`) and the table as results come
    back (only this driver writes, every file atomically)."""
    from resharpen.experiments.core.progress import Progress, bar as progress_bar
    from resharpen.experiments.core.train import save_run  # torch: only once runs are due

    identity = json.loads(json.dumps(identity))
    path = root / "sweep.json"
    with bad_input():  # every check before the first write: a refused resume changes nothing
        check_backend(backend, address)
        if path.exists():
            old = read_json(path, f"the {kind} file")
            if not isinstance(old, dict) or old.get("identity") != identity:
                raise UsageError(f"{str(root)!r} holds a different {kind} (other configs, seed "
                                 "or search space); choose another --out")
        finished = set()
        for index, config in enumerate(configs):
            folder = root / "runs" / config["name"]
            if (folder / "summary.json").exists():
                read_json(folder / "summary.json", "run file")
                if read_json(folder / "config.json", "run file") != json.loads(json.dumps(config)):
                    raise UsageError(f"run folder {str(folder)!r} holds another config; "
                                     "choose another --out")
                finished.add(index)
        unfinished = [i for i in range(len(configs)) if i not in finished]
        pending = [[unfinished[j] for j in group]
                   for group in group_runs([configs[i] for i in unfinished], ensemble)]
    remove_stale_temporaries(root, SWEEP_FILES)  # left by a killed writer: ours only
    for config in configs:
        remove_stale_temporaries(root / "runs" / config["name"], RUN_FILES)
    atomic_write_json(path, {"identity": identity, "runs": len(configs), **(marker or {})})
    bar = progress_bar(total=len(configs), initial=len(finished), desc=desc, unit="run",
                       enabled=progress, leave=True)
    lines = Progress(desc, len(configs), unit="run", enabled=progress)
    done = len(finished)
    try:
        tasks = [([configs[i] for i in group],) for group in pending]
        for task, results in run_tasks(run_fn, tasks, backend, workers, address):
            for index, result in zip(pending[task], results):
                if index not in finished:
                    save_run(result, root / "runs" / configs[index]["name"])
                    bar.update(1)
                    done += 1
                    lines.line(done, finished=configs[index]["name"])
            write_table_fn()
    finally:
        bar.close()
    write_table_fn()


def load_runs(root: str | Path) -> list[dict]:
    """(config, summary) of every finished run under ``root/runs``, sorted by name."""
    runs = []
    for folder in sorted((Path(root) / "runs").glob("*")):
        if (folder / "summary.json").exists():
            runs.append({"folder": folder,
                         "config": read_json(folder / "config.json", "run file"),
                         "summary": read_json(folder / "summary.json", "run file")})
    return runs


def write_rows(root: Path, rows: list[dict]) -> list[dict]:
    """The sweep table: ``table.jsonl`` and ``table.csv`` in ``root``, each written atomically."""
    atomic_write_text(root / "table.jsonl", dumps_jsonl(rows))
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(root / "table.csv", buffer.getvalue())
    return rows


def read_table(root: str | Path) -> list[dict]:
    path = Path(root) / "table.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{str(path)!r} does not exist: is {str(root)!r} a sweep folder?")
    return read_jsonl(path, "sweep table")


LOCK_FILE = ".lock"
"""The lock file :func:`exclusive` holds in a sweep folder while one process drives it."""


@contextlib.contextmanager
def exclusive(root: str | Path):
    """Hold an exclusive POSIX lock (``fcntl.flock``) on ``root/.lock`` for the block: ledger
    checks running in parallel workers that need the same quick sweep then train it once (the
    second waits, then finds every run finished) instead of twice side by side."""
    import fcntl

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield root
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
