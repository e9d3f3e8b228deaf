"""The archive of full-size results: the small files of finished runs, kept in the repository.

A full-size sweep takes hours (the language grid, 864 runs, about 9 hours on one core), so its
results must outlive the session that made them and be checkable by a reader without
retraining. The archive (``results/full/`` in the checkout) keeps, for every sweep packed into
it, what the claims and figures read and nothing heavier::

    results/full/sweeps/<name>/sweep.json                  the sweep's identity (its planned runs)
    results/full/sweeps/<name>/table.jsonl                 one row per finished run
    results/full/sweeps/<name>/runs/<run>/config.json      the run's validated config
    results/full/sweeps/<name>/runs/<run>/metrics.jsonl    its training history (logged steps)
    results/full/sweeps/<name>/runs/<run>/summary.json     its final measurements (written last)
    results/full/sweeps/<name>/runs/<run>/provenance.json  commit, machine, versions, time
    results/full/sweeps/<name>/runs/<run>/measured_*.json  what analyses measured on its weights

A study that is not a sweep of runs but writes one table of its own (the EMA-window protocol:
``results.json``) is kept as that file::

    results/full/sweeps/<name>/results.json                the study's result table

Weights, per-length records and training histories stay in ``out/`` (megabytes per run).

:func:`pack` copies a sweep's finished runs from ``out/sweeps/<name>`` into the archive;
:func:`restore` copies archived runs that ``out/`` lacks back into it, each marked with
:data:`ARCHIVED_MARKER`, so that the same sweep command resumes from them: a run counts as
finished when its ``summary.json`` exists (:mod:`resharpen.experiments.training.sweep`), so only
the runs the archive lacks are trained. A restored run has no weights; reading them names the
command that retrains it. Both only add files: neither replaces a file that exists.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from resharpen.experiments.common.io import atomic_write_text, check_folder_files, read_json
from resharpen.experiments.common.names import check_name

ARCHIVE_ROOT = Path(__file__).resolve().parents[2] / "results" / "full"
"""The archive in the checkout (``results/full``)."""
SWEEP_FILES = ("sweep.json", "table.jsonl")
RUN_FILES = ("config.json", "metrics.jsonl", "summary.json", "provenance.json")
MEASURED_PATTERN = "measured_*.json"
"""The tables analyses measured on a run's weights (:func:`resharpen.experiments.training.runs.measured`),
kept with the run so that the claims and figures read them without the weights."""
STUDY_FILE = "results.json"
"""What the archive keeps of a sweep and of each finished run (summary.json last)."""
ARCHIVED_MARKER = "ARCHIVED"
"""A file in a run folder restored from the archive: its weights were not kept."""


def _copy_new(source: Path, target: Path) -> bool:
    """Copy ``source`` to ``target`` atomically unless ``target`` exists; True when copied."""
    if target.exists() or target.is_symlink():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, source.read_text())
    return True


def is_archived(folder: str | Path) -> bool:
    """Whether run folder ``folder`` holds no weights because it came from the archive: restored
    from it (marked :data:`ARCHIVED_MARKER`) or read in place inside it."""
    folder = Path(folder)
    return (folder / ARCHIVED_MARKER).exists() or \
        ARCHIVE_ROOT.resolve() in folder.resolve().parents


def archived_sweep(name: str, archive: str | Path = ARCHIVE_ROOT) -> Path | None:
    """The archived sweep folder ``archive/sweeps/<name>`` when it holds a table (a sweep's
    ``table.jsonl`` or a study's ``results.json``), read in place by the figures; else None."""
    folder = Path(archive) / "sweeps" / check_name(name, "sweep name")
    return folder if any((folder / f).is_file() for f in ("table.jsonl", STUDY_FILE)) else None


def run_files(run: Path) -> list[str]:
    """The files of run folder ``run`` the archive keeps, ``summary.json`` (the mark of a
    finished run) last."""
    kept = [f for f in RUN_FILES if f != "summary.json" and (run / f).is_file()]
    kept += sorted(p.name for p in run.glob(MEASURED_PATTERN) if p.is_file())
    return kept + ["summary.json"]


def finished_runs(root: Path) -> list[Path]:
    """The run folders under ``root/runs`` that have a ``summary.json`` (finished), by name."""
    runs = root / "runs"
    return sorted(p for p in runs.iterdir() if (p / "summary.json").is_file()) \
        if runs.is_dir() else []


def pack(source: str | Path, archive: str | Path = ARCHIVE_ROOT) -> dict:
    """Copy the finished runs of the sweep folder ``source`` (their :data:`RUN_FILES`) and the
    sweep's :data:`SWEEP_FILES` into ``archive/sweeps/<name>``. Runs already archived are kept
    as they are; the sweep's files are refreshed (they list every finished run). Returns
    ``{"sweep": name, "finished": n, "added": k}``."""
    source = Path(source)
    name = check_name(source.name, "sweep name")
    target = Path(archive) / "sweeps" / name
    if not (source / "sweep.json").is_file() and (source / STUDY_FILE).is_file():
        read_json(source / STUDY_FILE, "study result file")  # a corrupt one is refused
        target.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target / STUDY_FILE, (source / STUDY_FILE).read_text())
        return {"sweep": name, "finished": 1, "added": 1}
    if not (source / "sweep.json").is_file():
        raise ValueError(f"{source} is not a sweep folder (it has no sweep.json) and holds no "
                         f"study result ({STUDY_FILE})")
    read_json(source / "sweep.json", "sweep file")  # a corrupt sweep is refused before any copy
    added = 0
    runs = finished_runs(source)
    for run in runs:
        if (run / ARCHIVED_MARKER).exists():
            continue  # restored from the archive: it is there already
        copied = [_copy_new(run / f, target / "runs" / run.name / f) for f in run_files(run)]
        added += bool(copied and copied[-1])
    target.mkdir(parents=True, exist_ok=True)
    for f in SWEEP_FILES:
        if (source / f).is_file():
            atomic_write_text(target / f, (source / f).read_text())
    return {"sweep": name, "finished": len(runs), "added": added}


def restore(name: str, out: str | Path, archive: str | Path = ARCHIVE_ROOT) -> dict:
    """Copy the archived runs of sweep ``name`` that ``out`` (a sweep folder) lacks into it,
    each marked :data:`ARCHIVED_MARKER`, and the sweep's identity and table when ``out`` has
    none (a sweep command that resumes rewrites the table). A run folder that exists in ``out``
    is left alone; one that is not a folder, or a ``sweep.json`` or ``table.jsonl`` that is not
    a regular file, is refused (ValueError) before anything is copied. Returns
    ``{"sweep": name, "restored": k, "archived": n}``."""
    source = Path(archive) / "sweeps" / check_name(name, "sweep name")
    out = Path(out)
    if not (source / "sweep.json").is_file() and (source / STUDY_FILE).is_file():
        check_folder_files(out, (STUDY_FILE,), "study folder")  # before the copy
        restored = _copy_new(source / STUDY_FILE, out / STUDY_FILE)
        return {"sweep": name, "restored": int(restored), "archived": 1}
    if not (source / "sweep.json").is_file():
        raise ValueError(f"the archive has no sweep {name!r} (looked in {source})")
    runs = finished_runs(source)
    check_folder_files(out, SWEEP_FILES, "sweep folder")  # before the first copy
    check_folder_files(out / "runs", (), "runs folder")
    for run in runs:
        check_folder_files(out / "runs" / run.name, (), "run folder")
    restored = 0
    for run in runs:
        folder = out / "runs" / run.name
        if folder.exists():
            continue
        staging = out / "runs" / f".{run.name}.restoring"
        shutil.rmtree(staging, ignore_errors=True)  # ours: a restore killed before its rename
        staging.mkdir(parents=True)
        for f in run_files(run):
            shutil.copyfile(run / f, staging / f)
        (staging / ARCHIVED_MARKER).write_text(
            "Restored from the archive (results/full): config and summary only, no weights.\n")
        staging.rename(folder)
        restored += 1
    for f in SWEEP_FILES:  # the identity, and the table the claims and figures read
        if (source / f).is_file():
            _copy_new(source / f, out / f)
    return {"sweep": name, "restored": restored, "archived": len(runs)}


def archived_sweeps(archive: str | Path = ARCHIVE_ROOT) -> dict[str, int]:
    """name -> number of finished runs, for every sweep in the archive."""
    root = Path(archive) / "sweeps"
    return {p.name: len(finished_runs(p)) or int((p / STUDY_FILE).is_file())
            for p in sorted(root.iterdir()) if p.is_dir()} if root.is_dir() else {}
