"""Sweep folders: many runs, one folder each, a table, resumable, on any backend.

Layout of a sweep (or grid) folder, ``out/sweeps/<name>`` by default::

    sweep.json                 the sweep's identity (what runs it plans) and how many
    runs/<run name>/           a run folder (:func:`resharpen.experiments.training.loop.save_run`)
    table.csv, table.jsonl     one row per finished run (the trainer's own columns)

:func:`execute` runs every planned run that is not finished on a backend
(:mod:`resharpen.experiments.training.backends`); the trainer supplies the run function, the
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
import threading
from pathlib import Path
from typing import Callable

from resharpen.experiments.training.backends import check_backend, run_tasks
from resharpen.experiments.common.cli_args import UsageError, bad_input
from resharpen.experiments.common.io import (TEMP_MARK, atomic_write_json, atomic_write_text,
                                             check_folder_files, check_within, remove_stale_staging,
                                             remove_stale_temporaries)
from resharpen.experiments.common.json_text import dumps_jsonl
from resharpen.experiments.common.stored import read_json, read_jsonl, stored_exists
from resharpen.experiments.common.locks import hold_lock
from resharpen.experiments.training.schema import stored_config
from resharpen.experiments.training.runs import (RUN_CONFIG_SHAPE, RUN_FILES,  # noqa: F401
                                               SUMMARY_SHAPE, WEIGHT_KINDS, WEIGHTS_FILE)

SWEEP_FILES = ("sweep.json", "table.csv", "table.jsonl", "provenance.json")
"""The files a sweep driver writes in the sweep folder itself."""
REPORT_MARKDOWN, REPORT_JSON = "report.md", "report.json"
REPORT_FILES = (REPORT_MARKDOWN, REPORT_JSON)
"""The files the report of a sweep or a task grid writes in its folder."""


PER_MEMBER_KEYS = (("train", "seed"), ("train", "lr"), ("train", "weight_decay"),
                   ("train", "ema"), ("train", "ema_decay"), ("model", "init_std"),
                   ("model", "attn_out_scale"), ("model", "attn_dropout"),
                   ("model", "resid_dropout"))
"""The config keys in which runs trained as one ensemble may differ (with the run name): what
only the start, the optimizer, the averaging or the dropout rates see
(:mod:`resharpen.experiments.training.engine`)."""


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
            progress: bool = True, kind: str = "sweep", desc: str = "sweep",
            wait: bool = False, after_save: Callable[[str], None] | None = None) -> None:
    """Run every config of a sweep folder that has no ``summary.json`` yet, on ``backend``.

    ``run_fn(list of configs) -> list of results`` runs one task: the runs of one ensemble.
    The unfinished runs are grouped into ensembles of at most ``ensemble`` runs that can train
    together (:func:`group_runs`), so a resumed sweep trains only its unfinished runs, in
    ensembles of their own (a member equals its lone run up to float32 rounding, so the
    company does not matter beyond that).
    Refuses a folder whose ``sweep.json`` holds another identity or whose run folder holds
    another config, and a ``runs/`` or run folder that a symbolic link leads outside ``root``
    (:func:`~resharpen.experiments.common.io.check_within`). One process drives a folder at a time:
    it holds an exclusive lock (``fcntl.flock``) on ``root/.lock`` (:data:`LOCK_FILE`, the
    package's own file) from the checks to the end; a second sweep on the folder refuses with
    one line, or with ``wait`` waits for the first and then trains only what is still
    unfinished. Removes the temporary files a killed writer left (only this package's, for
    the files it writes: :data:`SWEEP_FILES` in ``root``, the run files in each planned run's
    folder; nothing else, nowhere else); writes ``sweep.json``,
    then each finished run (:func:`resharpen.experiments.training.loop.save_run`) and the table as results come
    back (only this driver writes, every file atomically); ``after_save(run name)`` runs once
    a run is saved (a grid removes the run's mid-run checkpoint there)."""
    with bad_input():
        check_backend(backend, address)
    identity = json.loads(json.dumps(identity))
    _plan_resume(root, identity, configs, ensemble, kind)  # refused: nothing written, no lock
    with _locked(root, kind, wait):  # again under the lock: another process may have run
        finished, pending = _plan_resume(root, identity, configs, ensemble, kind)
        _run(root, identity, configs, run_fn, write_table_fn, finished, pending, marker,
             backend, workers, address, progress, desc, after_save)


def _plan_resume(root: Path, identity: dict, configs: list[dict], ensemble: int,
                 kind: str) -> tuple[set, list]:
    """(finished run indices, pending groups of indices): every check before the first write,
    so a refused resume changes nothing. The files the sweep will write (:data:`SWEEP_FILES`,
    and the run files of each unfinished run) are absent or regular files, their folders absent
    or folders, checked here: a FIFO or a device at one is refused before any run trains."""
    path = root / "sweep.json"
    with bad_input():
        check_folder_files(root, SWEEP_FILES, f"{kind} folder")
        check_folder_files(root / "runs", (), "runs folder")
        if path.exists():
            old = read_json(path, f"the {kind} file")
            if not isinstance(old, dict) or stored_identity(old.get("identity")) != identity:
                raise UsageError(f"{str(root)!r} holds a different {kind} (other configs, seed "
                                 "or search space); choose another --out")
        check_within(root, root / "runs", f"{kind} folder")
        finished = set()
        for index, config in enumerate(configs):
            folder = root / "runs" / config["name"]
            check_within(root, folder, "run folder")
            if (folder / "summary.json").exists():
                read_json(folder / "summary.json", "run file", SUMMARY_SHAPE)
                if stored_config(read_json(folder / "config.json", "run file",
                                           RUN_CONFIG_SHAPE)) != json.loads(json.dumps(config)):
                    raise UsageError(f"run folder {str(folder)!r} holds another config; "
                                     "choose another --out")
                finished.add(index)
            else:
                check_folder_files(folder, RUN_FILES, "run folder")
        unfinished = [i for i in range(len(configs)) if i not in finished]
        pending = [[unfinished[j] for j in group]
                   for group in group_runs([configs[i] for i in unfinished], ensemble)]
    return finished, pending


def _run(root, identity, configs, run_fn, write_table_fn, finished, pending, marker, backend,
         workers, address, progress, desc, after_save=None) -> None:
    from resharpen.experiments.common.progress import Progress, bar as progress_bar
    from resharpen.experiments.training.loop import save_run  # torch: only once runs are due

    remove_stale_temporaries(root, SWEEP_FILES)  # left by a killed writer: ours only
    for config in configs:
        remove_stale_temporaries(root / "runs" / config["name"], RUN_FILES)
        remove_stale_staging(root / "runs", config["name"], RUN_FILES)
    atomic_write_json(root / "sweep.json", {"identity": identity, "runs": len(configs),
                                            **(marker or {})})
    bar = progress_bar(total=len(configs), initial=len(finished), desc=desc, unit="run",
                       enabled=progress, leave=True)
    lines = Progress(desc, len(configs), unit="run", enabled=progress, initial=len(finished))
    done = len(finished)
    try:
        tasks = [([configs[i] for i in group],) for group in pending]
        for task, results in run_tasks(run_fn, tasks, backend, workers, address):
            saved = []
            for index, result in zip(pending[task], results):
                if index not in finished:
                    save_run(result, root / "runs" / configs[index]["name"],
                             profile=identity.get("profile"))
                    if after_save is not None:
                        after_save(configs[index]["name"])
                    bar.update(1)
                    done += 1
                    saved.append(configs[index]["name"])
            if saved:  # one line per finished group (its runs are saved within a second)
                lines.line(done, finished=saved[0] if len(saved) == 1
                           else f"{saved[0]} .. {saved[-1]} ({len(saved)} runs)")
            write_table_fn()
    finally:
        bar.close()
    write_table_fn()


def load_runs(root: str | Path) -> list[dict]:
    """(config, summary) of every finished run under ``root/runs``, sorted by name."""
    runs = []
    for folder in sorted((Path(root) / "runs").glob("*")):
        if TEMP_MARK in folder.name:  # a run being staged (or a killed writer's): not a run
            continue
        if stored_exists(folder / "summary.json"):  # plain, or compressed in the archive
            runs.append({"folder": folder,
                         "config": stored_config(read_json(folder / "config.json", "run file",
                                                           RUN_CONFIG_SHAPE)),
                         "summary": read_json(folder / "summary.json", "run file",
                                              SUMMARY_SHAPE)})
    return runs


def write_rows(root: Path, rows: list[dict]) -> list[dict]:
    """The sweep table: ``table.jsonl`` and ``table.csv`` in ``root``, each written atomically,
    and beside them ``provenance.json``, the table's provenance (the profile from sweep.json:
    :func:`resharpen.experiments.common.provenance.provenance`)."""
    from resharpen.experiments.common.provenance import PROVENANCE_FILE, provenance

    try:
        profile = read_sweep_file(root)["identity"].get("profile")
    except (OSError, ValueError):
        profile = None
    atomic_write_json(Path(root) / PROVENANCE_FILE, provenance(profile))
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
    return read_jsonl(path, "sweep table", {"run": str})


SWEEP_FILE_SHAPE = {"identity": dict, "runs?": int}
"""The shape of a sweep folder's sweep.json (:func:`~resharpen.experiments.common.stored.check_shape`)."""


def read_sweep_file(root: str | Path) -> dict:
    """A sweep folder's sweep.json, checked (:data:`SWEEP_FILE_SHAPE`), its identity in today's
    spelling (:func:`stored_identity`): ValueError naming the file and the field,
    FileNotFoundError when it is missing."""
    marker = read_json(Path(root) / "sweep.json", "sweep file", SWEEP_FILE_SHAPE)
    return {**marker, "identity": stored_identity(marker["identity"])}


def stored_identity(identity: object) -> object:
    """A sweep identity read from a sweep.json, its base config in today's spelling
    (:func:`resharpen.experiments.training.schema.stored_config`); anything else as it is."""
    if isinstance(identity, dict) and isinstance(identity.get("base"), dict):
        return {**identity, "base": stored_config(identity["base"])}
    return identity


LOCK_FILE = ".lock"
"""The lock file a process holds (``fcntl.flock``) in a sweep folder while it drives it
(:func:`execute`, :func:`exclusive`): the package's own file, left in place once the folder
holds results, removed only by its holder (:func:`~resharpen.experiments.common.locks.hold_lock`)."""

_HOLDER = threading.local()
"""``_HOLDER.held``: the sweep folders (resolved) whose lock this thread holds, with the depth: a
sweep run inside :func:`exclusive` of its own folder does not lock it twice (another thread,
like another process, waits or is refused)."""


def _held() -> dict[str, int]:
    if not hasattr(_HOLDER, "held"):
        _HOLDER.held = {}
    return _HOLDER.held


@contextlib.contextmanager
def _locked(root: Path, kind: str = "sweep", wait: bool = False):
    """Hold the lock of ``root`` for the block (see :func:`execute`): an flock on
    ``root/.lock`` (:func:`~resharpen.experiments.common.locks.hold_lock`: created without
    following a link, held for the block, released by the kernel if the process dies). The lock
    file is created only when the folder exists (run_sweep creates it first); a refusal writes
    nothing and removes nothing; a holder that leaves the folder holding nothing else removes
    its own lock file, still holding it."""
    key, held = str(Path(root).resolve()), _held()
    if key in held:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    lock = Path(root) / LOCK_FILE
    with bad_input():
        check_within(root, lock, f"{kind} lock file")
    busy = (f"{kind} folder {str(root)!r} is in use: another process is running this {kind} "
            f"(it holds {str(lock)!r}); wait for it to finish, or choose another --out")
    with hold_lock(lock, busy, wait, remove_if_alone=True):
        held[key] = 1
        try:
            yield
        finally:
            del held[key]


@contextlib.contextmanager
def exclusive(root: str | Path):
    """Hold the sweep folder's lock (``fcntl.flock`` on ``root/.lock``) for the block, waiting
    for it: ledger checks running in parallel workers that need the same quick sweep then train
    it once (the second waits, then finds every run finished) instead of twice side by side.
    A sweep run inside the block on ``root`` uses this lock (it does not take it again)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, wait=True):
        yield root


# ---------------------------------------------------------------- what a sweep ran, in one line
# An experiment claim's statement names the setting of the full experiment ("12000 steps,
# 16 seeds, v = 32"); a quick run decides on far less. :func:`describe_runs` reads the folder the
# claim decided on (``sweep.json``'s identity and every finished run's ``config.json``) and says
# what ran: the folder, its profile, the number of finished runs, and the distinct values of the
# settings that size an experiment (steps, seeds, vocabulary, width, layers, tasks; a task
# vocabulary of 0, the language tasks' "the task's own", is not reported).
REPORTED = (("task", "name", "tasks"), ("task", "vocab", "v"), ("task", "train_len", "L_train"),
            ("model", "d_model", "d_model"), ("model", "n_layers", "layers"),
            ("train", "steps", "steps"))


def _values(values: list) -> str:
    """``16`` for one distinct value, ``16..32 (3 values)`` for numbers, ``a, b`` for names."""
    distinct = sorted(set(values), key=lambda v: (isinstance(v, str), v))
    if len(distinct) == 1:
        return str(distinct[0])
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in distinct):
        return f"{distinct[0]}..{distinct[-1]} ({len(distinct)} values)"
    return ", ".join(map(str, distinct))


def describe_runs(root: str | Path, names: set[str] | None = None) -> str:
    """One line: what the finished runs under ``root`` are (above), of the runs named ``names``
    only when given (the runs a claim reads)."""
    root = Path(root)
    identity = {}
    if (root / "sweep.json").exists():
        identity = read_sweep_file(root)["identity"]
    configs = [run["config"] for run in load_runs(root)
               if names is None or Path(run["folder"]).name in names]
    parts = [f"ran {root.name}", f"profile {identity.get('profile', 'unknown')}",
             f"{len(configs)} finished runs"]
    if configs:
        seeds = {config.get("train", {}).get("seed") for config in configs}
        seeds.discard(None)
        if seeds:
            parts.append(f"{len(seeds)} seeds")
        for section, key, label in REPORTED:
            values = [config[section][key] for config in configs
                      if config.get(section, {}).get(key) not in (None, "")
                      and not (key == "vocab" and config[section][key] == 0)]  # 0: the task's own
            if values:
                parts.append(f"{label} {_values(values)}")
    return "; ".join(parts)
