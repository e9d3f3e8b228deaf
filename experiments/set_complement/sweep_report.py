"""Analysis of a finished sweep: factor effects on the OOD metrics, Post-Norm vs none/pre,
raw vs EMA vs BEMA (paired, within runs); the run data of the training figures
(:func:`runs_with_data`, drawn by :mod:`resharpen.paper_figs.set_complement.sweep_figures`).

Statistics, stated where they are printed:
- grouped means: mean ± std (sample std, ddof = 1) and max over the runs of a group, n runs;
  continuous factors are cut into terciles;
- rank regression: the rank of the OOD metric (standardized) regressed by least squares on the
  standardized ranks of the numeric factors (learning rate, dropouts, weight decay, width,
  EMA decay) and one-hot placement / EMA-kind indicators; a coefficient is the change of the
  metric's standardized rank per standardized rank of the factor (or vs the baseline level);
- each placement against none, the control (pre, a normalized readout in one layer, is its own
  arm): ``placement - none`` paired by seed where the arms ran the same seeds, else Welch
  (``ledger/stats.compare``, scipy), with the test, n and p; at matched budget, or at matched fit
  for a sweep under the stopping rule;
- averaging: per run, ood(EMA) - ood(raw) and ood(BEMA) - ood(raw), mean ± std over runs and
  the fraction of runs where the average is better.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from resharpen.experiments.common.stored import NUMBER, check_shape, read_json, read_jsonl
from resharpen.experiments.training.runs import HISTORY_ROW_SHAPE, PER_LENGTH_SHAPE
from resharpen.experiments.training.sweep import (REPORT_JSON, REPORT_MARKDOWN, load_runs,
                                                read_sweep_file, read_table)
from resharpen.experiments.training.schema import NORM_PLACEMENTS

OOD_METRICS = ("ood_invalid_mass", "ood_kl", "lg_score")
PLACEMENT_ORDER = NORM_PLACEMENTS  # the report's order of the placements a sweep trained


def summary_stats(values) -> dict:
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if not a.size:
        return {"n": 0, "mean": float("nan"), "std": float("nan"), "max": float("nan")}
    return {"n": int(a.size), "mean": float(a.mean()),
            "std": float(a.std(ddof=1)) if a.size > 1 else float("nan"), "max": float(a.max())}


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for value in np.unique(x):  # average ties
        tie = x == value
        ranks[tie] = ranks[tie].mean()
    return ranks


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def _level_order(value):
    """Numbers in numeric order, then strings (so 64 < 96 < 128, not "128" < "64")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def factor_effects(rows: list[dict], factors: list[str], metric: str,
                   categorical: set[str] = frozenset()) -> dict:
    """Grouped stats of ``metric`` per level of each factor that is ``categorical`` (e.g. a
    ``choice`` or ``grid`` one), string-valued or takes at most 3 values, and per tercile of
    each other factor: "T1 [q0, q1)", "T2 [q1, q2)", "T3 [q2, q3]", a partition of the runs (a
    tercile that ties leave empty is left out)."""
    out = {}
    y = np.array([r[metric] for r in rows], dtype=float)
    for factor in factors:
        values = [r[factor] for r in rows]
        if (factor in categorical or all(isinstance(v, str) for v in values)
                or len(set(values)) <= 3):
            levels = sorted(set(values), key=_level_order)
            out[factor] = {str(lv): summary_stats(y[[v == lv for v in values]]) for lv in levels}
        else:
            x = np.array(values, dtype=float)
            edges = np.quantile(x, [0, 1 / 3, 2 / 3, 1])
            groups = {}
            for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
                last = i == len(edges) - 2
                mask = (x >= lo) & ((x <= hi) if last else (x < hi))
                if mask.any():  # a tercile is empty when ties fill the one below it
                    groups[f"T{i + 1} [{lo:.3g}, {hi:.3g}{']' if last else ')'}"] = summary_stats(y[mask])
            out[factor] = groups
    return out


def rank_regression(rows: list[dict], factors: list[str], metric: str) -> dict:
    y = np.array([r[metric] for r in rows], dtype=float)
    keep = np.isfinite(y)
    rows = [r for r, k in zip(rows, keep) if k]
    y = _z(_ranks(y[keep]))
    columns, names = [], []
    for factor in factors:
        values = [r[factor] for r in rows]
        if all(isinstance(v, str) for v in values):
            levels = sorted(set(values))
            for level in levels[1:]:
                columns.append(np.array([v == level for v in values], dtype=float))
                names.append(f"{factor}={level} (vs {levels[0]})")
        else:
            x = np.array(values, dtype=float)
            if len(set(x)) > 1:
                columns.append(_z(_ranks(x)))
                names.append(factor)
    if not columns or len(y) <= len(columns) + 1:
        return {"n": len(y), "coefficients": {}, "r2": float("nan")}
    X = np.column_stack([np.ones(len(y))] + columns)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    r2 = 1 - float(resid @ resid) / float(y @ y) if float(y @ y) > 0 else float("nan")
    return {"n": int(len(y)), "coefficients": dict(zip(names, map(float, coef[1:]))), "r2": r2}


def placement_comparison(rows: list[dict]) -> dict:
    """Each placement against ``none``, the control without a normalized readout (in one layer
    ``pre`` with its final norm is a normalized readout too, so it is its own arm): per OOD
    metric and placement, the arm's summary and ``placement - none`` by
    :func:`resharpen.experiments.ledger.stats.compare` (paired by seed where both arms ran the
    same seeds, else Welch), two-sided."""
    import dataclasses

    from resharpen.experiments.ledger import stats

    seeded = _seeded(rows)

    def arm(placement: str, metric: str) -> dict:
        """{seed (or row index when arms do not pair): value} of one placement."""
        return {(r["train.seed"] if seeded else i): r[metric] for i, r in enumerate(rows)
                if r.get("model.norm") == placement}

    placements = [p for p in PLACEMENT_ORDER if any(r.get("model.norm") == p for r in rows)]
    out: dict = {}
    for metric in OOD_METRICS:
        none = arm("none", metric)
        out[metric] = {}
        for placement in placements if none else ():
            if placement != "none":
                test = stats.compare(arm(placement, metric), none, "two-sided")
                out[metric][placement] = {
                    "arm": summary_stats(list(arm(placement, metric).values())),
                    "minus_none": {**dataclasses.asdict(test), "describe": test.describe()}}
    return out


def _seeded(rows: list[dict]) -> bool:
    """Whether every placement of the sweep ran one seed at most once (arms pair by seed)."""
    seen = [(r.get("model.norm"), r.get("train.seed")) for r in rows]
    return all(s is not None for _, s in seen) and len(set(seen)) == len(seen)


def arm_warnings(rows: list[dict], identity: dict) -> list[str]:
    """Warnings for a sweep whose report compares placements (``model.norm`` in its search
    space): an arm of the search space with no finished run, or with fewer runs than its test
    needs (``ledger/stats.MIN_N`` per arm; fewer is inconclusive). [] when the sweep does not
    search the placement or every arm is full enough."""
    from collections import Counter

    from resharpen.experiments.ledger.stats import MIN_N

    spec = identity.get("space", {}).get("model.norm")
    if not isinstance(spec, dict):
        return []
    arms = [p for values in spec.values() if isinstance(values, list) for p in values]
    counts = Counter(r.get("model.norm") for r in rows)
    out = []
    for placement in arms:
        n = counts.get(placement, 0)
        role = ("the control: no placement is compared" if placement == "none"
                else "it is left out of the comparison with none")
        if n == 0:
            out.append(f"arm {placement!r} is missing: the search space has it but none of the "
                       f"{len(rows)} finished runs ({role})")
        elif n < MIN_N:
            out.append(f"arm {placement!r} has {n} run(s), fewer than the {MIN_N} per arm its "
                       "test needs (experiments/ledger/stats.py MIN_N): its comparison is "
                       "inconclusive")
    return out


def averaging_comparison(rows: list[dict]) -> dict:
    out = {}
    for metric in ("ood_invalid_mass", "ood_kl"):
        raw = np.array([r[f"raw.{metric}"] for r in rows], dtype=float)
        entry = {}
        for kind in ("ema", "bema"):
            diff = np.array([r[f"{kind}.{metric}"] for r in rows], dtype=float) - raw
            entry[f"{kind}_minus_raw"] = summary_stats(diff)
            entry[f"{kind}_better_fraction"] = float(np.mean(diff < 0)) if diff.size else float("nan")
        out[metric] = entry
    return out


IDENTITY_SHAPE = {"space": dict, "base": {"train": {"steps": NUMBER, "batch_size": NUMBER},
                                          "task": {"vocab": NUMBER, "train_len": NUMBER}}}
"""What the report reads of a Set Complement sweep's identity (sweep.json)."""
TABLE_ROW_SHAPE = {"run": str, "primary": str,
                   **{metric: (NUMBER, type(None)) for metric in OOD_METRICS}}
"""What the report reads of each row of a sweep table (table.jsonl): metrics a number or null."""


def check_identity(root: str | Path) -> dict:
    """The identity of a Set Complement sweep folder's sweep.json, checked against
    :data:`IDENTITY_SHAPE`: ValueError naming the file and the field."""
    marker = read_sweep_file(root)
    check_shape(marker["identity"], IDENTITY_SHAPE, f"sweep file {str(Path(root) / 'sweep.json')!r}",
                "identity")
    return marker["identity"]


def check_sweep_folder(root: str | Path) -> list[dict]:
    """The rows of a sweep folder's table, each checked (:data:`TABLE_ROW_SHAPE`, its factor
    columns present), after its sweep.json (:func:`check_identity`): what the report reads,
    checked before it starts, so a file of the wrong shape is one ValueError naming the file,
    the line and the field."""
    rows = read_table(root)
    if not rows:
        return rows
    identity = check_identity(root)
    path = Path(root) / "table.jsonl"
    shape = {**TABLE_ROW_SHAPE, **{f: (NUMBER, str, bool, type(None)) for f in identity["space"]}}
    for number, row in enumerate(rows, start=1):
        check_shape(row, shape, f"sweep table {str(path)!r}, row {number}")
    return rows


def analyse(root: str | Path) -> dict:
    root = Path(root)
    rows = read_table(root)
    if not rows:
        raise ValueError(f"sweep {str(root)!r} has no finished runs yet")
    identity = check_identity(root)
    factors = [f for f in sorted(identity["space"]) if f != "train.seed"]
    base = identity["base"]
    categorical = {f for f, spec in identity["space"].items() if "choice" in spec or "grid" in spec}
    return {
        "sweep": str(root), "runs": len(rows), "factors": factors,
        "budget": {"steps": base["train"]["steps"], "batch_size": base["train"]["batch_size"],
                   "vocab": base["task"]["vocab"], "train_len": base["task"]["train_len"],
                   "fit": base.get("fit", {}).get("until_id_invalid_mass", 0.0)},
        "effects": {m: factor_effects(rows, factors, m, categorical) for m in OOD_METRICS},
        "rank_regression": {m: rank_regression(rows, factors, m) for m in OOD_METRICS},
        "placements": placement_comparison(rows),
        "warnings": arm_warnings(rows, identity),
        "averaging": averaging_comparison(rows),
        "seconds_per_run": summary_stats([r["seconds"] for r in rows]),
    }


def _fmt(s: dict) -> str:
    return f"{s['mean']:.4g} ± {s['std']:.2g} (max {s['max']:.4g}, n={s['n']})"


def to_markdown(a: dict) -> str:
    b = a["budget"]
    lines = [f"# Sweep {a['sweep']}: {a['runs']} finished runs",
             f"v = {b['vocab']}, L_train = {b['train_len']}, "
             + (f"each run stopped at its first check with raw ID invalid mass <= {b['fit']:g} "
                f"(cap {b['steps']} steps, batch {b['batch_size']}; matched fit); "
                if b.get("fit") else f"{b['steps']} steps of batch {b['batch_size']} for every "
                                     "run (matched budget); ") +
             f"{a['seconds_per_run']['mean']:.1f} s per run on average.",
             "Cells: mean ± std (sample std over runs) (max over runs, n runs). "
             "OOD = lengths L_train+1..v-1; primary weights of each run (train.ema).", ""]
    if a.get("warnings"):
        lines += ["## Warnings: unbalanced arms", ""] + [f"- {w}" for w in a["warnings"]] + [""]
    lines += ["## Each placement against none (the control; pre is its own arm)", "",
              "| metric | placement | arm | placement - none | test |", "|---|---|---|---|---|"]
    for m, by_placement in a["placements"].items():
        for placement, e in by_placement.items():
            d = e["minus_none"]
            lines.append(f"| {m} | {placement} | {_fmt(e['arm'])} | {d['mean_diff']:+.4g} ± "
                         f"{d['se']:.2g} | {d['describe']} |")
    lines += ["", "## Raw vs EMA vs BEMA (paired within runs; negative = average better)", "",
              "| metric | EMA - raw | EMA better | BEMA - raw | BEMA better |", "|---|---|---|---|---|"]
    for m, e in a["averaging"].items():
        lines.append(f"| {m} | {_fmt(e['ema_minus_raw'])} | {e['ema_better_fraction']:.0%} | "
                     f"{_fmt(e['bema_minus_raw'])} | {e['bema_better_fraction']:.0%} |")
    for m in OOD_METRICS:
        lines += ["", f"## Factor effects on {m}", "", "| factor | level | mean ± std (max, n) |",
                  "|---|---|---|"]
        for factor, groups in a["effects"][m].items():
            for level, s in groups.items():
                lines.append(f"| {factor} | {level} | {_fmt(s)} |")
        rr = a["rank_regression"][m]
        lines += ["", f"Rank regression of {m} (n = {rr['n']}, R² = {rr['r2']:.2f}): "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in rr["coefficients"].items())]
    return "\n".join(lines) + "\n"


def report(root: str | Path) -> tuple[str, list[Path]]:
    """Write report.md and report.json into the sweep folder; return (markdown, paths). The
    figures of a sweep are paper_figs' (:mod:`resharpen.paper_figs.set_complement.sweep_figures`)."""
    from resharpen.experiments.common.io import atomic_write_json, atomic_write_text

    root = Path(root)
    a = analyse(root)
    text = to_markdown(a)
    paths = [atomic_write_text(root / REPORT_MARKDOWN, text),
             atomic_write_json(root / REPORT_JSON, a)]
    return text, paths


# ----------------------------------------------------------------------------- run data
def runs_with_data(root: str | Path) -> list[dict]:
    """Every finished run of a sweep folder with its config, summary, per-length records and
    training history (the data the sweep's figures draw)."""
    runs = load_runs(root)
    for run in runs:
        run["per_length"] = read_json(run["folder"] / "per_length.json", "run file",
                                      PER_LENGTH_SHAPE)
        run["history"] = read_jsonl(run["folder"] / "metrics.jsonl", "run history",
                                    HISTORY_ROW_SHAPE)
    return runs


def ensure_sweep(profile: str, name: str = "random_search") -> Path:
    """The folder of sweep ``name`` (a file in configs/set_complement) for ``profile``: the full one
    must exist (run it with ``resharpen sweep``); the quick one is run (or completed) here, in
    well under a minute, with the runs and ensembles of the file's quick profile, so that it is
    the sweep ``resharpen sweep set_complement/NAME --profile quick`` makes and resumes."""
    from resharpen.experiments.training.config import CONFIG_DIR, sweep_folder
    from resharpen.experiments.set_complement.sweep import run_sweep

    path = CONFIG_DIR / "set_complement" / f"{name}.toml"
    if profile == "full":
        root = sweep_folder(name)
        if not (root / "table.jsonl").exists() or not read_table(root):
            raise ValueError(f"no finished full sweep in {str(root)!r}; run: resharpen sweep "
                             f"{path} --workers 2")
        return root
    return run_sweep(path, profile="quick", workers=1, progress=True,
                     wait=True)
