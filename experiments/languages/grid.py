"""The task-training grid: every task x norm placement x seed, with raw/EMA/BEMA on each run.

A grid file (TOML, ``experiments/configs/languages/``) is a sweep file in the one format of
every slice (:func:`resharpen.experiments.training.config.load_sweep`)::

    name = "langs"
    [sweep]
    ensemble = 8                                # most runs per batched ensemble (1 = alone)
    [search]                                    # the grid: every combination is one run
    "task.name" = { grid = ["dyck2", "othello", ...] }
    "model.norm" = { grid = ["pre", "post", "attn_out"] }
    "train.seed" = { grid = [0, 1, 2] }
    [task] / [model] / [train] / [eval] / [fit] # the run config shared by every run (config.SCHEMA)
    [[when]]                                    # a task's own values, e.g. Othello's lengths:
    "task.name" = "othello"                     #   conditions (quoted dotted keys) ...
    task = { train_len = 30, eval_len = 59 }    #   ... and the section tables they set
    [profile.quick] / [[profile.quick.when]]    # a profile's values over all of the above

Each run trains one model and evaluates its raw, EMA and BEMA weights on the same trajectory,
so the "x {raw, EMA, BEMA}" factor costs no extra training and is compared *paired* within
runs. The runs of one task and placement, which differ only in seed, train as one batched
ensemble of up to ``ensemble`` members (grid key, default 8; ``--ensemble``;
:func:`resharpen.experiments.training.next_token.train_group`): each member equals its run trained
alone up to float32 rounding.

Layout of ``out/sweeps/<name>`` (``<name>-quick`` for the quick profile), as the Set Complement
sweeps (``resharpen.experiments.training.sweep``)::

    sweep.json                 the grid's identity (name, profile, every run config)
    runs/<task>-<norm>-s<seed>/ config.json, metrics.jsonl, per_length.json, summary.json
    table.csv, table.jsonl     one row per finished run and weight set
    report.md, report.json     the summary table (``report``)

Runs go through ``resharpen.experiments.training.backends.run_tasks`` (local process pool or Ray); only the driver
writes, atomically (``resharpen.experiments.common.io``); a run is finished when its ``summary.json`` exists; a
rerun skips finished runs and refuses a folder that holds another grid.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from resharpen.experiments.training.backends import check_backend
from resharpen.experiments.training.config import (CONFIG_DIR, find_config, grid_points, profiled_name,
                                               load_sweep, sample_configs, sweep_folder)
from resharpen.experiments.common.io import (atomic_write_json, atomic_write_text, check_within,
                                             ensure_writable_dir)
from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.training.checkpoint import remove_checkpoint
from resharpen.experiments.training.sweep import (REPORT_JSON, REPORT_MARKDOWN, execute,
                                                load_runs, write_rows)
from resharpen.experiments.training.runs import WEIGHT_KINDS
from resharpen.experiments.training.schema import NORM_PLACEMENTS
from resharpen.experiments.training.next_token_config import SCHEMA, make_config, target_tag
from resharpen.experiments.tasks.registry import TASKS

GRID_DIR = CONFIG_DIR / "languages"
REPORT_METRICS = ("id_invalid_mass", "id_tv", "ood_invalid_mass", "ood_tv", "ood_kl",
                  "ood_top1_invalid", "lg_score")
"""The report's columns: the fit's two measures (ID invalid mass and total variation), then the
out-of-distribution metrics."""


def load_grid(path: str | Path | dict, profile: str = "full") -> dict:
    """{name, profile, configs, ensemble}: the validated run configs of a grid file for a
    profile. A grid file is a sweep file in the one format of every slice
    (:func:`resharpen.experiments.training.config.load_sweep`): a path, the name of a packaged grid
    such as ``languages/othello`` (:func:`find_config`), or the parsed table. Its ``[search]``
    grids ``task.name``, ``model.norm`` and ``train.seed``; each run is named
    ``<task>-<norm>-s<seed>`` (``<task>-<norm>-<target>-s<seed>`` when the grid's runs train
    with more than one target, :func:`~resharpen.experiments.training.next_token_config.target_tag`) and
    must be distinct."""
    source = path if isinstance(path, dict) else find_config(path, "grid file")
    base, settings, space = load_sweep(source, SCHEMA, profile)
    for when in settings["when"]:
        wanted = when.get("task.name", [])
        stray = sorted(set(wanted if isinstance(wanted, list) else [wanted]) - set(TASKS))
        if stray:
            raise ValueError(f"a [[when]] table names no registered task {stray[0]!r}; known "
                             f"tasks: {', '.join(sorted(TASKS))}")
    configs = sample_configs(base, space, settings["runs"], settings["seed"], SCHEMA,
                             settings["when"], make=lambda sections, index: make_config(sections))
    if settings["runs"] <= len(grid_points(space)):  # more runs than points repeat a point:
        configs = distinct_runs(configs)               # refused below, not merged
    if len({target_tag(c["train"]) for c in configs}) > 1:  # a grid over training targets
        for c in configs:
            c["name"] = (f"{c['task']['name']}-{c['model']['norm']}-{target_tag(c['train'])}"
                         f"-s{c['train']['seed']}")
    names = [c["name"] for c in configs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"the grid trains run {repeated[0]!r} twice: its runs are named "
                         "<task>-<norm>-s<seed> (<task>-<norm>-<target>-s<seed> in a grid over "
                         "training targets), so grid task.name, model.norm, train.seed (and "
                         "the target) without repeats and keep sweep.runs at their product")
    return {"name": profiled_name(base["name"], profile), "profile": profile,
            "configs": configs, "ensemble": settings["ensemble"]}


def distinct_runs(configs: list[dict]) -> list[dict]:
    """``configs`` with every config equal to an earlier one (all but the name) left out: the
    run is trained once. Grid values cannot repeat (``load_sweep``), so when ``sweep.runs`` does
    not exceed the grid's points (:func:`load_grid` calls this only then) equal configs come only
    from a ``[[when]]`` table that makes two grid points one run, e.g. the soft target at every
    ``train.labels_per_position`` of a grid over targets (soft has no labels: a ``[[when]]``
    sets them to 1)."""
    seen, out = set(), []
    for config in configs:
        key = dumps_json({k: v for k, v in config.items() if k != "name"}, indent=None,
                         sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(config)
    return out


RUN_HEARTBEAT_SECONDS = 300.0
"""A grid run that lasts longer than this writes a progress line to the log this often (step,
loss, ID invalid mass, ETA): the Othello study's runs take about an hour."""


def run_group(configs: list[dict], checkpoints: str | None = None) -> list[dict]:
    """Train grid runs that share an ensemble (in a worker), or one run alone; return their
    serializable results (:func:`resharpen.experiments.training.next_token.train_group`).
    ``checkpoints``: the folder of the runs' mid-run checkpoints (a run trained alone resumes
    from its own: :mod:`resharpen.experiments.training.checkpoint`)."""
    from resharpen.experiments.training.next_token import train_group

    return train_group(configs, heartbeat=RUN_HEARTBEAT_SECONDS, checkpoints=checkpoints)


CHECKPOINTS = "checkpoints"
"""The folder in a grid folder where its runs keep their mid-run checkpoints."""


def checkpoint_folder(root: Path, backend: str, address: str | None) -> Path | None:
    """Where a grid's runs keep their mid-run checkpoints: ``root/checkpoints`` as an absolute
    path inside ``root`` (:func:`~resharpen.experiments.common.io.check_within`: a link there
    leading elsewhere is refused), read and written by the workers of this machine; None on a
    Ray cluster named by an address, whose workers may not share this disk."""
    if backend == "ray" and address:
        return None
    return check_within(root, Path(root).resolve() / CHECKPOINTS)


def default_root(name: str) -> Path:
    """The default folder of grid ``name``: ``out/sweeps/<name>``."""
    return sweep_folder(name)


def run_grid(path: str | Path | dict, *, out: str | Path | None = None, workers: int = 2,
             backend: str = "local", address: str | None = None, profile: str = "full",
             progress: bool = True, only: list[str] | None = None,
             ensemble: int | None = None, wait: bool = False) -> Path:
    """Run (or resume) a grid; return its folder. ``only``: task names to run now (the others
    stay pending). ``ensemble`` (default: the grid's ``sweep.ensemble``, else 1):
    the largest number of runs of one task and placement that differ only in seed trained as
    one batched ensemble (1 = every run alone). A folder another
    process is running is refused (``wait``: waited for), as in
    :func:`resharpen.experiments.training.sweep.execute`; a folder this call created is removed
    again if the grid fails before a run is written in it."""
    planned = load_grid(path, profile)
    size = planned["ensemble"] if ensemble is None else ensemble
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"ensemble size must be >= 1, got {size!r}")
    if only:
        unknown = sorted(set(only) - {c["task"]["name"] for c in planned["configs"]})
        if unknown:
            raise ValueError(f"--only {unknown[0]!r} is not a task of grid {planned['name']!r}")
    check_backend(backend, address)  # before the folder exists
    target = Path(out) if out else default_root(planned["name"])
    identity = {"name": planned["name"], "profile": profile, "configs": planned["configs"]}
    if size > 1:  # members equal lone runs up to float32 rounding: other numbers
        identity["ensemble"] = size
    selected = [c for c in planned["configs"] if not only or c["task"]["name"] in only]
    from resharpen.experiments.common.io import undo_on_failure

    with undo_on_failure(target, remove_written=False):
        root = ensure_writable_dir(target)
        checkpoints = checkpoint_folder(root, backend, address)
        run, saved = run_group, None
        if checkpoints is not None:
            run = functools.partial(run_group, checkpoints=str(checkpoints))
            saved = functools.partial(remove_checkpoint, checkpoints)
        execute(root, identity, selected, run, lambda: write_table(root), ensemble=size,
                after_save=saved,
                marker={"kind": "task_grid", "runs": len(planned["configs"])}, backend=backend,
                workers=workers, address=address, progress=progress, kind="grid",
                desc=f"grid {planned['name']}", wait=wait)
    return root


# ------------------------------------------------------------------------- tables
def table_rows(root: str | Path) -> list[dict]:
    """One row per finished run and weight set: task, norm, seed, weights, target, the run's
    stated fit (``fit_target``: its ``fit.until_id_invalid_mass``, 0 when it trains without a
    stopping fit; ``fit_tv_target``: its ``fit.until_id_tv``, 0 without one), the summaries. In a grid over training targets (the noise grid) ``norm`` names the arm,
    ``<norm>/<target>`` (``pre/k1``), so the report's tables keep the targets apart."""
    rows = []
    runs = load_runs(root)
    targets = len({target_tag(run["config"]["train"]) for run in runs}) > 1
    for run in runs:
        c, s = run["config"], run["summary"]
        tag = target_tag(c["train"])
        norm = f"{c['model']['norm']}/{tag}" if targets else c["model"]["norm"]
        for weights in WEIGHT_KINDS:
            row = {"run": c["name"], "task": c["task"]["name"], "norm": norm, "target": tag,
                   "seed": c["train"]["seed"], "weights": weights,
                   "train_len": c["task"]["train_len"], "eval_len": c["task"]["eval_len"],
                   "fit_target": c.get("fit", {}).get("until_id_invalid_mass", 0.0),
                   "fit_tv_target": c.get("fit", {}).get("until_id_tv", 0.0)}
            row.update(s["by_weights"][weights])
            row["seconds"] = round(s["seconds"], 3)
            rows.append(row)
    return rows


def write_table(root: Path) -> list[dict]:
    return write_rows(root, table_rows(root))


def _stats(values: list[float]) -> dict:
    """Mean, sample std (None below 2 values: undefined, never shown), max and n of the
    finite values."""
    arr = np.array([v for v in values if v == v], dtype=float)
    if not len(arr):
        return {"mean": math.nan, "std": None, "max": math.nan, "n": 0}
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else None,
            "max": float(arr.max()), "n": int(len(arr))}


def _spread(mean: float, std: float | None, digits: str = ".3g", std_digits: str = ".2g") -> str:
    """``mean ± std`` over two or more values; the value alone for one, which has no spread."""
    return f"{mean:{digits}}" + ("" if std is None else f" ± {std:{std_digits}}")


def summary_table(rows: list[dict]) -> list[dict]:
    """Per (task, norm, weights): mean, sample std and max over seeds of every report metric."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["task"], r["norm"], r["weights"]), []).append(r)
    out = []
    for (task, norm, weights), members in groups.items():
        entry = {"task": task, "norm": norm, "weights": weights, "seeds": len(members),
                 "seconds": float(np.mean([m["seconds"] for m in members]))}
        for key in REPORT_METRICS:
            entry[key] = _stats([m.get(key, math.nan) for m in members])  # NaN: not recorded
        out.append(entry)
    order = {w: i for i, w in enumerate(WEIGHT_KINDS)}
    out.sort(key=lambda e: (e["task"], e["norm"], order[e["weights"]]))
    return out


def paired_effects(rows: list[dict], metric: str = "ood_invalid_mass") -> list[dict]:
    """Per task: EMA - raw and BEMA - raw paired within runs, and post / attn_out - pre paired
    by seed (raw weights); mean ± std of the differences and how many are negative."""
    by_run = {(r["run"], r["weights"]): r for r in rows}
    out = []
    targets = sorted({r.get("target", "") for r in rows})
    for task in sorted({r["task"] for r in rows}):
        for target in targets:  # a grid over training targets: each target apart
            runs = sorted({r["run"] for r in rows if r["task"] == task
                           and r.get("target", "") == target})
            label = f" ({target})" if len(targets) > 1 else ""
            for weights in ("ema", "bema"):
                d = [by_run[(run, weights)][metric] - by_run[(run, "raw")][metric]
                     for run in runs if (run, weights) in by_run and (run, "raw") in by_run]
                if d or not label:
                    out.append(_effect(task, f"{weights} - raw{label}", d))
        raw = {(r["norm"], r["seed"]): r[metric] for r in rows
               if r["task"] == task and r["weights"] == "raw"}
        for norm in ("post", "attn_out"):
            d = [raw[(norm, s)] - raw[("pre", s)] for (n, s) in raw if n == norm
                 and ("pre", s) in raw]
            if d:
                out.append(_effect(task, f"{norm} - pre (raw)", d))
    return out


def overview_lines(rows: list[dict], metric: str = "ood_invalid_mass") -> list[str]:
    """A markdown table, one row per task: ``metric`` of the raw weights per placement (mean ±
    sample std over seeds, max = worst seed), then EMA - raw and BEMA - raw paired within runs
    over all placements (mean ± std of the differences, runs where the average is lower)."""
    norms = [n for n in NORM_PLACEMENTS if any(r["norm"] == n for r in rows)] + sorted(
        {r["norm"] for r in rows} - set(NORM_PLACEMENTS))  # arms of a grid over targets
    stats = {(e["task"], e["norm"], e["weights"]): e[metric] for e in summary_table(rows)}
    effects = {(e["task"], e["comparison"]): e for e in paired_effects(rows, metric)}
    lines = ["| task | " + " | ".join(f"{n} (raw)" for n in norms) + " | EMA − raw | BEMA − raw |",
             "|---|" + "---|" * (len(norms) + 2)]
    for task in sorted({r["task"] for r in rows}):
        cells = [_fmt(stats[(task, n, "raw")]) if (task, n, "raw") in stats else "–"
                 for n in norms]
        for weights in ("ema", "bema"):
            e = effects.get((task, f"{weights} - raw"))
            cells.append("–" if e is None or not e["n"] else
                         f"{_spread(e['mean'], e['std'], '+.3g')} "
                         f"({e['negative']}/{e['n']} lower)")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return lines


def _effect(task: str, comparison: str, diffs: list[float]) -> dict:
    arr = np.array([d for d in diffs if d == d], dtype=float)
    return {"task": task, "comparison": comparison, "n": int(len(arr)),
            "mean": float(arr.mean()) if len(arr) else math.nan,
            "std": float(arr.std(ddof=1)) if len(arr) > 1 else None,
            "negative": int((arr < 0).sum())}


def _fmt(stat: dict, integer: bool = False) -> str:
    if not stat["n"]:
        return "–"
    if stat["n"] == 1:
        return f"{stat['mean']:{'.0f' if integer else '.3g'}} (one seed)"
    if integer:
        return f"{_spread(stat['mean'], stat['std'], '.1f', '.1f')} (max {stat['max']:.0f})"
    return f"{_spread(stat['mean'], stat['std'])} (max {stat['max']:.3g})"


def report(root: str | Path) -> tuple[str, dict]:
    """Write ``report.md`` and ``report.json`` of a grid folder; return (markdown, data)."""
    root = Path(root)
    rows = table_rows(root)
    if not rows:
        raise ValueError(f"{str(root)!r} holds no finished runs: is it a grid folder? "
                         "(run: resharpen langs run)")
    table = summary_table(rows)
    effects = paired_effects(rows)
    lines = [f"# Task-training grid `{root.name}`", "",
             f"{len({r['run'] for r in rows})} finished "
             f"run{'' if len({r['run'] for r in rows}) == 1 else 's'}; cells are mean ± sample std "
             "(max) over seeds; ID = lengths 1..L_train, OOD = L_train+1..L_eval; lower is "
             "better except LG score (largest n with mean invalid mass <= threshold at every "
             "length 1..n).", "", "## Overview: OOD invalid mass", ""] + overview_lines(rows) + [""]
    for task in sorted({e["task"] for e in table}):
        first = next(r for r in rows if r["task"] == task)
        seconds = sum(r["seconds"] for r in rows if r["task"] == task and r["weights"] == "raw")
        lines += [f"## {task} (L_train = {first['train_len']}, L_eval = {first['eval_len']}; "
                  f"run time {seconds:.0f} s, training + evaluation, summed over runs)", "",
                  "| norm | weights | seeds | ID invalid | ID TV | OOD invalid | OOD TV | OOD KL | "
                  "OOD top-1 invalid | LG score |", "|---|---|---|---|---|---|---|---|---|---|"]
        for e in (e for e in table if e["task"] == task):
            cells = [_fmt(e[k], k == "lg_score") for k in REPORT_METRICS]
            lines.append(f"| {e['norm']} | {e['weights']} | {e['seeds']} | " + " | ".join(cells)
                         + " |")
        lines.append("")
    lines += ["## Paired effects on OOD invalid mass", "",
              "Differences within a run (EMA/BEMA vs raw) or between placements at the same seed "
              "(raw weights); negative = the first is better.", "",
              "| task | comparison | n | mean diff | std | negative |", "|---|---|---|---|---|---|"]
    for e in effects:
        std = "–" if e["std"] is None else f"{e['std']:.2g}"
        lines.append(f"| {e['task']} | {e['comparison']} | {e['n']} | {e['mean']:+.3g} | "
                     f"{std} | {e['negative']}/{e['n']} |")
    text = "\n".join(lines) + "\n"
    data = {"summary": table, "effects": effects}
    atomic_write_text(root / REPORT_MARKDOWN, text)
    atomic_write_json(root / REPORT_JSON, data)
    return text, data


def grid_file(profile: str) -> Path:
    """The grid TOML of the task-training grid (both profiles live in one file)."""
    return GRID_DIR / "grid.toml"


def finished_runs_or_missing(planned: dict, root: Path, what: str, command: str,
                             norms: tuple[str, ...] | None = None) -> int:
    """How many of the ``planned`` grid's runs (those of the schemes ``norms`` only, when given)
    have finished in ``root``, when that is all of them; else
    :class:`~resharpen.experiments.ledger.registry.MissingData` (a part of a full-size grid
    decides nothing), which a claim records as INCONCLUSIVE with the counts ("33 of 792 runs
    finished") and ``command``, which trains the rest. ``what`` names the grid in the message
    ("the full grid"). A run counts by its name, so a folder that holds other runs too is
    counted right."""
    from resharpen.experiments.ledger.registry import MissingData

    names = {c["name"] for c in planned["configs"]
             if norms is None or c["model"]["norm"] in norms}
    done = {Path(run["folder"]).name for run in load_runs(root)} if root.exists() else set()
    finished, total = len(names & done), len(names)
    if finished < total:
        schemes = f" of {', '.join(norms)}" if norms is not None else ""
        raise MissingData(f"{finished} of {what}'s {total} runs{schemes} are finished in "
                          f"{str(root)!r}; the rest: {command}",
                          measured=f"{finished} of {total} runs finished",
                          expected=f"all {total} runs finished")
    return finished


def ensure_grid(profile: str, *, workers: int = 2, progress: bool = True,
                norms: tuple[str, ...] | None = None) -> Path:
    """The grid folder of ``profile`` with every run finished (every run of the schemes
    ``norms``, when given: the runs a claim reads): the full one must have been run
    (``resharpen langs run --profile full``, resumable, and it trains the schemes in the grid's
    order; a part of it decides nothing: :func:`finished_runs_or_missing`); the quick one is run
    (or completed) here."""
    planned = load_grid(grid_file(profile), profile)
    root = default_root(planned["name"])
    if profile == "full":
        from resharpen.experiments.training.archive import archived_sweep

        restore = ("; `resharpen archive restore langs` first brings back the archived ones"
                   if archived_sweep(planned["name"]) else "")
        finished_runs_or_missing(planned, root, "the full grid",
                                 f"resharpen langs run --profile full (it resumes run by run"
                                 f"{restore})", norms=norms)
        return root
    if root.exists() and len(load_runs(root)) >= len(planned["configs"]):
        return root
    return run_grid(grid_file(profile), profile=profile, workers=workers, progress=progress,
                    wait=True)  # verify's parallel workers: one trains, the others wait


__all__ = ["load_grid", "run_grid", "run_group", "table_rows", "summary_table", "paired_effects",
           "report", "ensure_grid", "finished_runs_or_missing"]
