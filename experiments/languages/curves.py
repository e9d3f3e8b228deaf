"""The per-length curves of a task grid: what ``fig_langtrain_<task>`` draws, from either source.

The figure draws, per task, norm placement and weight set (raw / EMA / BEMA), three metrics
against the prefix length (:data:`METRICS`): their mean over the seeds of the placement, and for
the raw weights (:data:`BAND_WEIGHTS`) the band from the smallest to the largest seed; the
metrics drawn on a log axis (:data:`LOG_METRICS`) are floored at :data:`FLOOR` first. One group
is the runs of one task and placement (differing in seed).

Two sources give the same numbers:

- a grid folder in ``out/``: each run's ``per_length.json`` (every metric at every length, about
  170 KB a run), read by :func:`run_rows`;
- the grid's curve table, ``measured_curves.json`` (:data:`TABLE_FILE`), which the archive of
  full-size results keeps instead of the per-length records (``resharpen archive pack`` writes it
  through :func:`pack_table`): per group, exactly the statistics above, made by the same
  :func:`group_entry` from the same rows, so a figure drawn from the archive equals the one drawn
  from the run folders (JSON keeps every float exactly).

:func:`grid_table` chooses per group: the runs' per-length records when every finished run of
the group has them, else the stored table's entry when it covers exactly the group's finished
runs (a grid read in the archive, or restored from it). Torch-free.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from resharpen.experiments.common.stored import NUMBER, check_shape, read_json, stored_file

METRICS = ("invalid_mass", "kl", "top1_invalid")
"""The per-length metrics the figure draws, one row of panels each."""
LOG_METRICS = ("invalid_mass", "kl")
"""The metrics drawn on a log axis: floored at :data:`FLOOR` before their statistics."""
FLOOR = 1e-8
BAND_WEIGHTS = ("raw",)
"""The weight sets drawn with a band (smallest to largest seed) beside their mean."""
TABLE_FILE = "measured_curves.json"
"""The curve table of a grid, in its sweep folder (the archive's copy: compressed)."""
STATISTICS = {"metrics": list(METRICS), "log_metrics": list(LOG_METRICS), "floor": FLOOR,
              "band_weights": list(BAND_WEIGHTS)}
"""What a curve table's entries hold; a table made with other statistics is not read."""
RECORD_SHAPE = [{"length": NUMBER, **{metric: NUMBER for metric in METRICS}}]
"""The shape of one weight set's per-length records, as far as the figure reads them."""
TABLE_SHAPE = {"statistics": dict, "groups": [{"task": str, "norm": str, "train_len": NUMBER,
                                               "runs": [str], "lines": dict}]}
"""The shape of a curve table (:func:`pack_table`)."""


def run_rows(config: dict, per_length: dict, where: str = "per-length records") -> list[dict]:
    """The rows one run gives the figure, one per weight set of its per-length records
    ``{weights: [{length, <metric>...}]}``: run, task, norm, L_train, weights, the lengths and
    each drawn metric (:data:`METRICS`) at every length; nothing else of the records."""
    rows = []
    for weights, records in per_length.items():
        check_shape(records, RECORD_SHAPE, where, weights)
        rows.append({"run": config["name"], "task": config["task"]["name"],
                     "norm": config["model"]["norm"], "train_len": config["task"]["train_len"],
                     "weights": weights, "length": [r["length"] for r in records],
                     **{metric: [r[metric] for r in records] for metric in METRICS}})
    return rows


def group_entry(rows: list[dict]) -> dict:
    """The curve-table entry of one group (the rows of the runs of one task and placement, in
    run order): task, norm, L_train, the runs, and per weight set the lengths, the number of
    runs ``n``, the per-length mean over runs of each metric (``mean``) and, for
    :data:`BAND_WEIGHTS`, the smallest (``lo``) and largest (``hi``) run; NaN ignored, a
    metric of :data:`LOG_METRICS` floored at :data:`FLOOR` first. JSON-ready (lists of
    floats)."""
    first = rows[0]
    if any((r["task"], r["norm"], r["train_len"]) != (first["task"], first["norm"],
                                                       first["train_len"]) for r in rows):
        raise ValueError(f"the rows of group {first['task']}/{first['norm']} differ in task, "
                         "placement or L_train")
    lines = {}
    for weights in dict.fromkeys(r["weights"] for r in rows):
        members = [r for r in rows if r["weights"] == weights]
        if any(r["length"] != members[0]["length"] for r in members):
            raise ValueError(f"the runs of {first['task']}/{first['norm']} ({weights} weights) "
                             "are evaluated at different lengths")
        line = {"length": members[0]["length"], "n": len(members), "mean": {}}
        if weights in BAND_WEIGHTS:
            line["lo"], line["hi"] = {}, {}
        for metric in METRICS:
            values = np.array([r[metric] for r in members], dtype=float)
            if metric in LOG_METRICS:
                values = np.clip(values, FLOOR, None)
            with warnings.catch_warnings():  # a length no run measured: NaN, drawn as a gap
                warnings.simplefilter("ignore", RuntimeWarning)
                line["mean"][metric] = np.nanmean(values, axis=0).tolist()
                if weights in BAND_WEIGHTS:
                    line["lo"][metric] = np.nanmin(values, axis=0).tolist()
                    line["hi"][metric] = np.nanmax(values, axis=0).tolist()
        lines[weights] = line
    return {"task": first["task"], "norm": first["norm"], "train_len": first["train_len"],
            "runs": list(dict.fromkeys(r["run"] for r in rows)), "lines": lines}


def table_entries(table: object, where: str) -> dict:
    """{(task, norm): entry} of the curve table ``table`` (as read from its file); ValueError
    naming ``where`` and the field when it is not of a curve table's shape; empty when it holds
    other statistics than :data:`STATISTICS` (made by other code: not read)."""
    check_shape(table, TABLE_SHAPE, where)
    if table["statistics"] != STATISTICS:
        return {}
    return {(e["task"], e["norm"]): e for e in table["groups"]}


def stored_entries(folder: str | Path) -> dict:
    """:func:`table_entries` of the curve table in ``folder`` (either form); empty when it has
    none."""
    path = Path(folder) / TABLE_FILE
    if not stored_file(path).is_file():
        return {}
    return table_entries(read_json(path, "curve table"), f"curve table {str(path)!r}")


def grid_table(root: str | Path, kept: dict | None = None) -> tuple[list[dict], list[str]]:
    """(entries, uncovered) of the grid folder ``root``: per group of its finished runs (task,
    placement), :func:`group_entry` of the runs' per-length records when every run of the group
    has them, else the entry of ``kept`` ({(task, norm): entry}; default: the folder's own curve
    table, :func:`stored_entries`) that covers exactly those runs; ``uncovered`` names the
    groups neither gives (runs restored from the archive without a table). Entries by task and
    placement."""
    from resharpen.experiments.training.sweep import load_runs

    kept = stored_entries(root) if kept is None else kept
    groups: dict = {}
    for run in load_runs(root):
        c = run["config"]
        groups.setdefault((c["task"]["name"], c["model"]["norm"]), []).append(run)
    entries, uncovered = [], []
    for key, runs in groups.items():
        paths = [run["folder"] / "per_length.json" for run in runs]
        if all(p.is_file() for p in paths):
            rows = [row for run, p in zip(runs, paths)
                    for row in run_rows(run["config"], read_json(p, "run file", dict),
                                        f"run file {str(p)!r}")]
            entries.append(group_entry(rows))
        elif key in kept and kept[key]["runs"] == [run["config"]["name"] for run in runs]:
            entries.append(kept[key])
        else:
            uncovered.append(f"{key[0]}/{key[1]}")
    return sorted(entries, key=lambda e: (e["task"], e["norm"])), uncovered


def pack_table(source: str | Path, kept: dict | None) -> dict | None:
    """The curve table the archive keeps for the sweep folder ``source`` (None unless it is a
    task grid), given the archive's current one ``kept`` (or None): every group of ``source``
    that :func:`grid_table` gives (from its per-length records, or from ``kept`` or its own
    table) and that covers every run ``kept`` covers in it, and the other groups of ``kept``
    as they are (their runs are archived, their records gone), by task and placement."""
    from resharpen.experiments.training.sweep import read_sweep_file

    if read_sweep_file(Path(source)).get("kind") != "task_grid":
        return None
    previous = {} if kept is None else table_entries(kept, "the archive's curve table")
    entries, _ = grid_table(source, {**stored_entries(source), **previous})
    kept_runs = {key: set(e["runs"]) for key, e in previous.items()}
    entries = [e for e in entries  # one that drops archived runs leaves the archive's
               if not kept_runs.get((e["task"], e["norm"]), set()) - set(e["runs"])]
    given = {(e["task"], e["norm"]) for e in entries}
    entries += [e for key, e in previous.items() if key not in given]
    if not entries:
        return None
    return {"statistics": STATISTICS,
            "groups": sorted(entries, key=lambda e: (e["task"], e["norm"]))}


def figure_lines(entries: list[dict]) -> dict:
    """{task: {(norm, weights): line}} of curve-table entries, as the figure draws them: each
    line's ``length``, ``train_len``, ``n`` and its ``mean`` (and ``lo``, ``hi``) per metric,
    as float arrays."""
    out: dict = {}
    for e in entries:
        for weights, line in e["lines"].items():
            slot = {"train_len": e["train_len"], "n": line["n"],
                    "length": np.array(line["length"])}
            for stat in ("mean", "lo", "hi"):
                if stat in line:
                    slot[stat] = {m: np.array(v, dtype=float) for m, v in line[stat].items()}
            out.setdefault(e["task"], {})[(e["norm"], weights)] = slot
    return out
