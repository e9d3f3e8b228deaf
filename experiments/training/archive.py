"""The archive of full-size results: the small files of finished runs, kept in the repository.

A full-size sweep takes hours (the language grid, 792 runs, many hours on one core), so its
results must outlive the session that made them and be checkable by a reader without
retraining. The archive (``results/full/`` in the checkout) keeps, for every sweep packed into
it, what the claims and figures read and nothing heavier; each file but the tables is kept
gzip-compressed (``.gz``, :func:`archived_form`), and every reader reads either form
(:func:`resharpen.experiments.common.stored.read_text_file`)::

    results/full/sweeps/<name>/sweep.json.gz                  the sweep's identity (its planned runs)
    results/full/sweeps/<name>/table.jsonl                    one row per finished run (text)
    results/full/sweeps/<name>/measured_*.json.gz             tables made from the runs' records
    results/full/sweeps/<name>/runs/<run>/config.json.gz      the run's validated config
    results/full/sweeps/<name>/runs/<run>/metrics.jsonl.gz    its training history (logged steps)
    results/full/sweeps/<name>/runs/<run>/summary.json.gz     its final measurements (written last)
    results/full/sweeps/<name>/runs/<run>/provenance.json.gz  commit, machine, versions, time
    results/full/sweeps/<name>/runs/<run>/measured_*.json.gz  what analyses measured on its weights

A study that is not a sweep of runs but writes one table of its own (the EMA-window protocol:
``results.json``) is kept as that file, as text::

    results/full/sweeps/<name>/results.json                   the study's result table

A study cached per group rather than per run (the trained-dynamics set,
:mod:`resharpen.experiments.dynamics.trained`: ``out/dyn_trained/full/<group>.json``) is kept
as its cache files, compressed, read in place by that study's cache reader when ``out/`` lacks
a group (:func:`pack_cache`, :func:`cache_folder`)::

    results/full/<cache>/<group>.json.gz                      one cached group (e.g. dyn_trained)

Weights and per-length records stay in ``out/`` (megabytes per run). What a figure draws from
the per-length records is kept per sweep instead, as a table made at pack time by the sweep's
slice (``tables`` of :func:`pack`: the language grids' per-length curves,
:mod:`resharpen.experiments.languages.curves`: about 20 KB per task and placement
evaluated at 200 lengths, against 170 KB per run of per-length records).

:func:`pack` copies a sweep's finished runs from ``out/sweeps/<name>`` into the archive,
compressed; :func:`restore` copies archived runs that ``out/`` lacks back into it as plain files
(what the trainers write), each marked with :data:`ARCHIVED_MARKER`, so that the same sweep
command resumes from them: a run counts as finished when its ``summary.json`` exists
(:mod:`resharpen.experiments.training.sweep`), so only the runs the archive lacks are trained. A
restored run has no weights; reading them names the command that retrains it. Both only add
runs: neither replaces a run file that exists. :func:`repack` rewrites an archive whose files
were kept as text (before compression) in the compressed form, byte for byte the same content.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
from pathlib import Path

from resharpen.experiments.common.io import (atomic_write_bytes, atomic_write_text,
                                             check_folder_files)
from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.common.stored import (COMPRESSED_SUFFIX, compress_bytes, compressed_path,
                                                 decompress_bytes, read_bytes_file, read_json,
                                                 read_text_file, stored_file)
from resharpen.experiments.common.names import check_name

ARCHIVE_ROOT = Path(__file__).resolve().parents[2] / "results" / "full"
"""The archive in the checkout (``results/full``)."""
SWEEP_FILES = ("sweep.json", "table.jsonl")
RUN_FILES = ("config.json", "metrics.jsonl", "summary.json", "provenance.json")
MEASURED_PATTERN = "measured_*.json"
"""The tables analyses measured on a run's weights (:func:`resharpen.experiments.training.runs.measured`),
kept with the run so that the claims and figures read them without the weights; in a sweep
folder, the tables made from its runs' records at pack time (``tables`` of :func:`pack`)."""
STUDY_FILE = "results.json"
"""What the archive keeps of a sweep and of each finished run (summary.json last)."""
TEXT_FILES = ("table.jsonl", STUDY_FILE)
"""The files the archive keeps as text: the tables a reader opens first (and a diff shows);
every other file is kept compressed (:func:`archived_form`)."""
ARCHIVED_MARKER = "ARCHIVED"
"""A file in a run folder restored from the archive: its weights were not kept."""


def archived_form(path: Path) -> Path:
    """Where the archive keeps file ``path``: itself for a table (:data:`TEXT_FILES`), else its
    compressed form ``<path>.gz``."""
    return path if path.name in TEXT_FILES else compressed_path(path)


def _read(path: Path) -> str:
    """The text of the run or sweep file ``path``, from either form (plain or compressed)."""
    return read_text_file(path, "archive file", "run or sweep file")


def _write_archived(path: Path, text: str) -> None:
    """Write ``text`` as the archive's copy of file ``path`` (:func:`archived_form`), atomically;
    a compressed copy is read back from the disk and must expand to ``text`` (ValueError
    otherwise). Then remove the other form when an older archive left it (one copy of each
    file)."""
    kept = archived_form(path)
    data = text.encode("utf-8")
    atomic_write_bytes(kept, data if kept == path else compress_bytes(data))
    if kept != path and decompress_bytes(read_bytes_file(kept, "archive file", "gzip file"),
                                         kept, "archive file", "gzip file") != data:
        raise ValueError(f"{kept} does not expand to the file it keeps")
    other = path if kept != path else compressed_path(path)
    if other.is_file():
        other.unlink()


def _pack_new(source: Path, target: Path) -> bool:
    """Archive file ``source`` as ``target`` (:func:`_write_archived`) unless the archive has
    ``target`` in either form; True when written."""
    if stored_file(target).exists() or stored_file(target).is_symlink():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_archived(target, _read(source))
    return True


def _restore_new(source: Path, target: Path) -> bool:
    """Write the content of archived file ``source`` (either form) to ``target`` as a plain
    file, atomically, unless ``target`` exists; True when written."""
    if target.exists() or target.is_symlink():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, _read(source))
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
    return folder if any(stored_file(folder / f).is_file() for f in TEXT_FILES) else None


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file in either form, plain or compressed."""
    return stored_file(path).is_file()


def measured_files(folder: Path) -> list[str]:
    """The names (plain) of the measured tables (:data:`MEASURED_PATTERN`) in ``folder``, a
    run's or a sweep's, each present in either form, sorted."""
    names = {p.name.removesuffix(COMPRESSED_SUFFIX)
             for p in folder.glob(MEASURED_PATTERN + "*") if p.is_file()}
    return sorted(n for n in names if n.endswith(".json") and _is_file(folder / n))


def run_files(run: Path) -> list[str]:
    """The names (plain) of the files of run folder ``run`` the archive keeps, each present in
    either form, ``summary.json`` (the mark of a finished run) last."""
    kept = [f for f in RUN_FILES if f != "summary.json" and _is_file(run / f)]
    return kept + measured_files(run) + ["summary.json"]


def finished_runs(root: Path) -> list[Path]:
    """The run folders under ``root/runs`` that have a ``summary.json`` (finished, in either
    form), by name."""
    runs = root / "runs"
    return sorted(p for p in runs.iterdir() if _is_file(p / "summary.json")) \
        if runs.is_dir() else []


def _sweep_file(folder: Path) -> bool:
    """Whether ``folder`` holds a sweep's ``sweep.json`` (in either form)."""
    return _is_file(folder / "sweep.json")


def pack(source: str | Path, archive: str | Path = ARCHIVE_ROOT,
         tables: dict | None = None) -> dict:
    """Copy the finished runs of the sweep folder ``source`` (their :data:`RUN_FILES` and
    measured tables) and the sweep's :data:`SWEEP_FILES` into ``archive/sweeps/<name>``, each in
    the archive's form (:func:`archived_form`). Runs already archived are kept as they are; the
    sweep's files are refreshed (they list every finished run). ``tables``: {file name
    (``measured_<what>.json``): ``make(source, kept)``}, the sweep tables its slice makes from
    records the archive does not keep; ``make`` is given the archive's current table (None when
    it has none) and returns the new one, JSON-ready, written compressed (None: nothing
    written). Returns ``{"sweep": name, "finished": n, "added": k, "tables": [written]}``."""
    source = Path(source)
    for table in tables or {}:
        if not fnmatch.fnmatchcase(table, MEASURED_PATTERN) or Path(table).name != table:
            raise ValueError(f"a sweep table is named {MEASURED_PATTERN!r}, got {table!r}")
    name = check_name(source.name, "sweep name")
    if name.endswith("-quick"):
        raise ValueError(f"{str(source)!r} is a quick-profile sweep (its folder ends in -quick); "
                         "the archive keeps full-size sweeps only")
    target = Path(archive) / "sweeps" / name
    if not _sweep_file(source) and (source / STUDY_FILE).is_file():
        read_json(source / STUDY_FILE, "study result file")  # a corrupt one is refused
        target.mkdir(parents=True, exist_ok=True)
        _write_archived(target / STUDY_FILE, _read(source / STUDY_FILE))
        return {"sweep": name, "finished": 1, "added": 1, "tables": []}
    if not _sweep_file(source):
        raise ValueError(f"{source} is not a sweep folder (it has no sweep.json) and holds no "
                         f"study result ({STUDY_FILE})")
    read_json(source / "sweep.json", "sweep file")  # a corrupt sweep is refused before any copy
    added = 0
    runs = finished_runs(source)
    for run in runs:
        if (run / ARCHIVED_MARKER).exists():
            continue  # restored from the archive: it is there already
        copied = [_pack_new(run / f, target / "runs" / run.name / f) for f in run_files(run)]
        added += bool(copied and copied[-1])
    target.mkdir(parents=True, exist_ok=True)
    for f in SWEEP_FILES:
        if _is_file(source / f):
            _write_archived(target / f, _read(source / f))
    written = []
    for table, make in (tables or {}).items():
        kept = read_json(target / table, "archived sweep table") \
            if _is_file(target / table) else None
        data = make(source, kept)
        if data is not None:
            _write_archived(target / table, dumps_json(data, indent=None) + "\n")
            written.append(table)
    return {"sweep": name, "finished": len(runs), "added": added, "tables": written}


def check_restore(name: str, out: str | Path, archive: str | Path = ARCHIVE_ROOT
                  ) -> tuple[Path, list[Path] | None, tuple[str, ...]]:
    """What :func:`restore` checks before it copies anything: ValueError unless the archive
    holds sweep (or study) ``name`` and every file and folder of ``out`` it would write is
    absent or of the right kind, ``out`` holds no other kind of result
    (:func:`~resharpen.experiments.common.folder_kinds.check_kind`) and no other sweep (its
    ``sweep.json`` is absent or the archived one) and can be made. Returns (the archived folder,
    its finished runs or None for a study, its measured tables)."""
    from resharpen.experiments.common.folder_kinds import check_kind
    from resharpen.experiments.common.io import check_writable_target

    source = Path(archive) / "sweeps" / check_name(name, "sweep name")
    out = Path(out)
    check_kind(out, "sweep", "sweep folder")
    check_writable_target(out, "sweep folder")
    if not _sweep_file(source) and _is_file(source / STUDY_FILE):
        check_folder_files(out, (STUDY_FILE,), "study folder")
        return source, None, ()
    if not _sweep_file(source):
        raise ValueError(f"the archive has no sweep {name!r} (looked in {source})")
    runs = finished_runs(source)
    tables = measured_files(source)
    check_folder_files(out, (*SWEEP_FILES, *tables), "sweep folder")
    identity = out / "sweep.json"
    if os.path.lexists(identity) and (json.loads(_read(identity))
                                      != json.loads(_read(source / "sweep.json"))):
        raise ValueError(f"sweep folder {str(out)!r} holds another sweep than {name!r} (its "
                         "sweep.json differs from the archived one): name another folder")
    check_folder_files(out / "runs", (), "runs folder")
    for run in runs:
        check_folder_files(out / "runs" / run.name, (), "run folder")
    return source, runs, tables


def restore(name: str, out: str | Path, archive: str | Path = ARCHIVE_ROOT) -> dict:
    """Copy the archived runs of sweep ``name`` that ``out`` (a sweep folder) lacks into it as
    plain files (the archive's compressed ones expanded), each run marked
    :data:`ARCHIVED_MARKER`, and the sweep's identity, table and measured tables that ``out``
    lacks (a sweep command that resumes rewrites the table). A run folder that exists in
    ``out`` is left alone; one that is not a folder, or a sweep file that is not a regular
    file, is refused (ValueError) before anything is copied. Returns
    ``{"sweep": name, "restored": k, "archived": n}``."""
    source, runs, tables = check_restore(name, out, archive)
    out = Path(out)
    if runs is None:  # a study: its one result file
        restored = _restore_new(source / STUDY_FILE, out / STUDY_FILE)
        return {"sweep": name, "restored": int(restored), "archived": 1}
    restored = 0
    for run in runs:
        folder = out / "runs" / run.name
        if folder.exists():
            continue
        staging = out / "runs" / f".{run.name}.restoring"
        shutil.rmtree(staging, ignore_errors=True)  # ours: a restore killed before its rename
        staging.mkdir(parents=True)
        for f in run_files(run):
            (staging / f).write_text(_read(run / f), encoding="utf-8")
        (staging / ARCHIVED_MARKER).write_text(
            "Restored from the archive (results/full): its small files only, no weights.\n")
        staging.rename(folder)
        restored += 1
    for f in (*SWEEP_FILES, *tables):  # the identity, the tables the claims and figures read
        if _is_file(source / f):
            _restore_new(source / f, out / f)
    return {"sweep": name, "restored": restored, "archived": len(runs)}


def _sweep_folder_files(folder: Path) -> list[Path]:
    """The files (plain names) of archived sweep ``folder`` the archive keeps: its sweep files,
    tables and study table, then each finished run's files (:func:`run_files`, summary last)."""
    files = [folder / f for f in (*SWEEP_FILES, *measured_files(folder), STUDY_FILE)
             if _is_file(folder / f)]
    return files + [run / f for run in finished_runs(folder) for f in run_files(run)]


def repack(archive: str | Path = ARCHIVE_ROOT) -> dict:
    """Rewrite every file of every archived sweep in the archive's form (:func:`archived_form`):
    a file kept in the other form (a run file kept as text by an older archive) is rewritten
    from what its readers read (the plain form where both exist), checked to read back the
    same, then its other form removed; a file only in its form is left alone, so a second
    repack changes nothing. Returns ``{"sweeps": n, "rewritten": files}``."""
    root = Path(archive) / "sweeps"
    sweeps = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    rewritten = 0
    for sweep in sweeps:
        for path in _sweep_folder_files(sweep):
            other = path if archived_form(path) != path else compressed_path(path)
            if not other.is_file():
                continue
            _write_archived(path, _read(path))  # checked to read back, then the other form removed
            rewritten += 1
    return {"sweeps": len(sweeps), "rewritten": rewritten}


def cache_folder(name: str, archive: str | Path = ARCHIVE_ROOT) -> Path:
    """``archive/<name>``: where the archive keeps the files of the full-size study cache
    ``out/<name>/full`` (:func:`pack_cache`); its readers read them in place, never write."""
    return Path(archive) / check_name(name, "cache name")


def pack_cache(source: str | Path, name: str, archive: str | Path = ARCHIVE_ROOT) -> dict:
    """Copy every JSON file of the study cache folder ``source`` (one strict JSON file per
    cached group, e.g. ``out/dyn_trained/full``) into ``archive/<name>`` compressed
    (:func:`archived_form`, each checked to expand to the file's bytes); lock files, temporary
    files and anything else not ``*.json`` are left out. A file whose archived copy has the same
    content is left alone; one whose content differs (the group was measured again) is
    replaced: the cache's reader checks each file's key. A corrupt file is refused (ValueError)
    before anything is copied. Returns ``{"cache": name, "files": n, "added": k,
    "replaced": r}``."""
    source = Path(source)
    if not source.is_dir():
        raise ValueError(f"{source} is not a folder (the cache to pack, e.g. out/{name}/full)")
    target = cache_folder(name, archive)
    files = sorted(p for p in source.glob("*.json") if p.is_file())
    for path in files:
        read_json(path, "cache file")  # a corrupt one is refused before the first copy
    added = replaced = 0
    for path in files:
        text, kept = _read(path), target / path.name
        if _is_file(kept):
            if _read(kept) == text:
                continue
            replaced += 1
        else:
            added += 1
        target.mkdir(parents=True, exist_ok=True)
        _write_archived(kept, text)
    return {"cache": name, "files": len(files), "added": added, "replaced": replaced}


def pack_runs(source: str | Path, name: str, configs: dict[str, dict],
              archive: str | Path = ARCHIVE_ROOT, history=None) -> dict:
    """Copy the finished runs ``configs`` (run name -> the config it must have been made with) of
    the study folder ``source`` (one folder per run, as the study writes them, e.g.
    ``out/collapse_train/<run>/``) into ``archive/<name>/<run>/``, compressed: the files of
    :func:`run_files`. A run of ``configs`` that ``source`` has not finished is skipped, and one
    the archive holds finished is left alone (the archive only adds). Each run's files are read
    once, and checked before anything is copied: ValueError for a run folder or file reached
    through a symbolic link out of ``source``, a corrupt file, or a config that is not the
    expected one (a run made with other settings under the same name). Each run is written into
    a staging folder and renamed into place whole, so the archive never holds part of a run.
    ``history`` (text -> text), when given, makes the archived ``metrics.jsonl`` from the run's:
    the study's compact form of what its readers need. Returns ``{"cache": name, "finished": n,
    "added": k}``."""
    from resharpen.experiments.common.io import check_within

    source = Path(source)
    if not source.is_dir():
        raise ValueError(f"{source} is not a folder (the study's run folders, e.g. "
                         f"out/{name})")
    target = cache_folder(name, archive)
    found = {}
    for run_name, config in configs.items():
        run = source / check_name(run_name, "run name")
        if not _is_file(run / "summary.json"):
            continue
        check_within(source, run, "run folder")
        texts = {}
        for file in run_files(run):
            check_within(source, stored_file(run / file), "run file")
            texts[file] = _read(run / file)
            try:
                parsed = [json.loads(line) for line in texts[file].splitlines() if line.strip()] \
                    if file.endswith(".jsonl") else json.loads(texts[file])
            except ValueError as error:
                raise ValueError(f"run file {str(run / file)!r} is not valid JSON: {error}") \
                    from None
            if file == "config.json" and parsed != json.loads(dumps_json(config)):
                raise ValueError(f"run {str(run)!r} was made with another config than the "
                                 f"full-size run of that name; not packed")
        if history is not None and "metrics.jsonl" in texts:
            texts["metrics.jsonl"] = history(texts["metrics.jsonl"])
        found[run.name] = texts
    if not found:
        raise ValueError(f"{str(source)!r} holds none of the {len(configs)} full-size runs of "
                         f"{name} finished: nothing to pack")
    added = 0
    for run_name, texts in found.items():
        kept = target / run_name
        if _is_file(kept / "summary.json"):
            continue
        staging = target / f".staging-{run_name}"
        if staging.exists():
            shutil.rmtree(staging)  # a pack of ours that stopped part-way
        for file, text in texts.items():  # summary.json last (run_files' order)
            staging.mkdir(parents=True, exist_ok=True)
            _write_archived(staging / file, text)
        if kept.exists():
            shutil.rmtree(kept)  # an unfinished copy: a pack of ours that stopped part-way
        staging.rename(kept)
        added += 1
    return {"cache": name, "finished": len(found), "added": added}


def archived_caches(archive: str | Path = ARCHIVE_ROOT) -> dict[str, int]:
    """name -> number of archived files (of a cache of group files) or of archived runs (of a
    study kept as run folders, :func:`pack_runs`), for every study cache in the archive (a
    folder of ``archive`` other than ``sweeps``)."""
    root = Path(archive)
    return {p.name: len(list(p.glob("*.json" + COMPRESSED_SUFFIX)))
            or sum(_is_file(run / "summary.json") for run in p.iterdir()
                   if run.is_dir() and not run.name.startswith("."))
            for p in sorted(root.iterdir()) if p.is_dir() and p.name != "sweeps"} \
        if root.is_dir() else {}


def archived_sweeps(archive: str | Path = ARCHIVE_ROOT) -> dict[str, int]:
    """name -> number of finished runs, for every sweep in the archive."""
    root = Path(archive) / "sweeps"
    return {p.name: len(finished_runs(p)) or int((p / STUDY_FILE).is_file())
            for p in sorted(root.iterdir()) if p.is_dir()} if root.is_dir() else {}


def stored_size(folder: str | Path) -> tuple[int, int]:
    """(number of files, their bytes on disk as stored, compressed or not) under ``folder``:
    what the archive, or one part of it, adds to a checkout."""
    files = [f for f in Path(folder).rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def planned_runs(name: str, archive: str | Path = ARCHIVE_ROOT) -> int | None:
    """How many runs the archived sweep ``name`` plans, when its identity lists them (a
    language grid's ``configs``); None when it does not say (a sampled sweep's identity holds
    its search space, a study has no sweep file)."""
    folder = Path(archive) / "sweeps" / name
    if not _is_file(folder / "sweep.json"):
        return None
    marker = json.loads(_read(folder / "sweep.json"))
    identity = marker.get("identity") if isinstance(marker, dict) else None
    configs = identity.get("configs") if isinstance(identity, dict) else None
    return len(configs) if isinstance(configs, list) else None
