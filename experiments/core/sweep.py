"""Seeded random-search sweeps: one folder per run, a sweep table, resumable, on any backend.

Layout of ``out/sweeps/<name>`` (``<name>-quick`` for the quick profile)::

    sweep.json                 the sweep file, its base config, settings and search space
    runs/<name>-<index>/       config.json, metrics.jsonl, per_length.json, summary.json
    table.csv, table.jsonl     one row per finished run: searched factors + summaries

Every file is written atomically (temporary file, then rename) by the driver, and a run counts
as finished only when its ``summary.json`` exists (written last). A rerun skips finished runs;
a SIGKILL at any moment loses at most the runs in flight and leaves no half-written file.
Configs are drawn by ``random.Random(sweep.seed)`` run after run, so ``--runs 512`` extends a
256-run sweep with the same first 256 runs. Each run seeds torch from its own ``train.seed``
and uses one thread, so a run's metrics are the same on the local pool and on Ray.

With ``ensemble = K`` (``[sweep]`` table or ``--ensemble``), runs that differ only in seed,
learning rate, weight decay, dropout or EMA are trained K at a time as one batched ensemble
(:mod:`resharpen.experiments.core.ensemble_train`), one task per group; the groups are a fixed function of the
planned run list, so resuming and the backends still give the same table.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from resharpen.experiments.core import config as cfgmod
from resharpen.experiments.core.backends import run_tasks
from resharpen.experiments.core.io import atomic_write_json, atomic_write_text, ensure_writable_dir
from resharpen.experiments.core.train import WEIGHTS, save_run

TABLE_SUMMARY_KEYS = ("id_invalid_mass", "ood_invalid_mass", "id_kl", "ood_kl", "id_tv",
                      "ood_tv", "lg_score", "lg_fraction", "margin_exponent",
                      "margin_exponent_attn_out_theory")


def run_group(configs: list[dict]) -> list[dict]:
    """Train sweep runs (in a worker) that share an ensemble, or one run alone; return their
    serializable results (:func:`resharpen.experiments.core.ensemble_train.train_group`)."""
    from resharpen.experiments.core.ensemble_train import train_group

    return train_group(configs)


def run_each(run_fn, configs: list[dict]) -> list[dict]:
    """``[run_fn(c) for c in configs]``: a task of runs that do not share anything."""
    return [run_fn(config) for config in configs]


def plan(path: str | Path, runs: int | None = None, profile: str = "full") -> dict:
    base, settings, space = cfgmod.load_sweep(path, profile=profile)
    runs = settings["runs"] if runs is None else runs
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    configs = cfgmod.sample_configs(base, space, runs, settings["seed"])
    name = base["name"] + ("-quick" if profile == "quick" else "")
    return {"name": name, "profile": profile, "base": base, "settings": settings,
            "space": space, "configs": configs}


def _identity(planned: dict, ensemble: int) -> dict:
    identity = {"name": planned["name"], "profile": planned["profile"], "base": planned["base"],
                "seed": planned["settings"]["seed"], "space": planned["space"]}
    if ensemble > 1:  # grouped runs are other runs (float32 rounding, dropout masks)
        identity["ensemble"] = ensemble
    return identity


def run_sweep(path: str | Path, *, out: str | Path | None = None, runs: int | None = None,
              workers: int = 2, backend: str = "local", address: str | None = None,
              profile: str = "full", progress: bool = True, ensemble: int | None = None) -> Path:
    """Run (or resume) a sweep; return its folder. ``ensemble`` (default: the file's
    ``sweep.ensemble``) is the largest number of runs trained as one batched ensemble; runs
    are grouped by :func:`resharpen.experiments.core.ensemble_train.group_runs` (1 = every run alone)."""
    from resharpen.experiments.core.ensemble_train import group_runs

    planned = plan(path, runs, profile)
    size = planned["settings"]["ensemble"] if ensemble is None else ensemble
    groups = group_runs(planned["configs"], size)
    root = ensure_writable_dir(Path(out) if out else Path("out") / "sweeps" / planned["name"])
    execute(root, _identity(planned, size), planned["configs"], run_group,
            lambda: write_table(root, planned["space"]), groups=groups,
            marker={"file": str(path)}, backend=backend, workers=workers, address=address,
            progress=progress, desc=f"sweep {planned['name']}")
    return root


def execute(root: Path, identity: dict, configs: list[dict], run_fn, write_table_fn, *,
            groups: list[list[int]] | None = None, marker: dict | None = None,
            backend: str = "local", workers: int = 2, address: str | None = None,
            progress: bool = True, kind: str = "sweep", desc: str = "sweep") -> None:
    """Run every config of a sweep folder that has no ``summary.json`` yet, on ``backend``.

    ``run_fn(list of configs) -> list of results`` runs one task; ``groups`` (lists of
    indices into ``configs``, default one run per task) says which runs share a task. A group
    with an unfinished run is run again whole (so a resumed sweep computes every run in the
    same company) and only its unfinished runs are written.
    Refuses a folder whose ``sweep.json`` holds another identity or whose run folder holds
    another config; removes temporary files left by a killed writer; writes ``sweep.json``,
    then each finished run (:func:`resharpen.experiments.core.train.save_run`) and the table as results come
    back (only this driver writes, every file atomically)."""
    from tqdm import tqdm

    identity = json.loads(json.dumps(identity))
    path = root / "sweep.json"
    if path.exists() and json.loads(path.read_text()).get("identity") != identity:
        raise ValueError(f"{str(root)!r} holds a different {kind} (other configs, seed or "
                         "search space); choose another --out")
    for stale in root.rglob(".*.tmp"):  # a temporary file left by a killed writer
        stale.unlink(missing_ok=True)
    atomic_write_json(path, {"identity": identity, "runs": len(configs), **(marker or {})})
    finished = set()
    for index, config in enumerate(configs):
        folder = root / "runs" / config["name"]
        if (folder / "summary.json").exists():
            if json.loads((folder / "config.json").read_text()) != json.loads(json.dumps(config)):
                raise ValueError(f"run folder {str(folder)!r} holds another config; "
                                 "choose another --out")
            finished.add(index)
    groups = [[i] for i in range(len(configs))] if groups is None else groups
    pending = [g for g in groups if not set(g) <= finished]
    bar = tqdm(total=len(configs), initial=len(finished), desc=desc, unit="run",
               disable=not progress or None)
    try:
        tasks = [([configs[i] for i in group],) for group in pending]
        for task, results in run_tasks(run_fn, tasks, backend, workers, address):
            for index, result in zip(pending[task], results):
                if index not in finished:
                    save_run(result, root / "runs" / configs[index]["name"])
                    bar.update(1)
            write_table_fn()
    finally:
        bar.close()
    write_table_fn()


def flatten(config: dict, summary: dict, factors) -> dict:
    row = {"run": config["name"]}
    for dotted in sorted(factors):
        section, key = dotted.split(".")
        row[dotted] = config[section][key]
    row["primary"] = summary["primary"]
    for key in TABLE_SUMMARY_KEYS:
        row[key] = summary[key]
    for weights in WEIGHTS:
        for key in ("ood_invalid_mass", "ood_kl", "lg_score"):
            row[f"{weights}.{key}"] = summary["by_weights"][weights][key]
    row["seconds"] = round(summary["seconds"], 3)
    return row


def load_runs(root: str | Path) -> list[dict]:
    """(config, summary) of every finished run under ``root/runs``, sorted by name."""
    runs = []
    for folder in sorted((Path(root) / "runs").glob("*")):
        if (folder / "summary.json").exists():
            runs.append({"folder": folder,
                         "config": json.loads((folder / "config.json").read_text()),
                         "summary": json.loads((folder / "summary.json").read_text())})
    return runs


def write_table(root: Path, factors) -> list[dict]:
    return write_rows(root, [flatten(r["config"], r["summary"], factors) for r in load_runs(root)])


def write_rows(root: Path, rows: list[dict]) -> list[dict]:
    """The sweep table: ``table.jsonl`` and ``table.csv`` in ``root``, each written atomically."""
    atomic_write_text(root / "table.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
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
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
