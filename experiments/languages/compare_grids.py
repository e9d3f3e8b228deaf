"""Two task grids run with the same tasks, schemes and seeds, compared run by run: the effect of
whatever differs between them (positions, width, a training setting) on a metric, paired by seed.

For every (task, scheme) present in both grids, with the runs of seed s in grid A and grid B
both learned in distribution (raw ID invalid mass <= ``learned`` and ID total variation <=
``LEARNED_TV``, the langtrain claims' bars) and both finite:

    d_s = m_B(task, scheme, s) - m_A(task, scheme, s),

tested two-sided with a paired t (``scipy.stats.ttest_rel``, Wilcoxon beside it,
:func:`resharpen.experiments.ledger.stats.compare`), the p-values Holm-adjusted over every cell
of the table (:func:`resharpen.experiments.ledger.stats.holm`; a cell with fewer than 5 pairs
counts as p = 1). A measurement, not a claim: it reports both directions.

    resharpen langs compare out/sweeps/langs-paper out/sweeps/langs-paper-rope
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from resharpen.experiments.languages.postnorm_controls import LEARNED_TV

LEARNED = 0.05
"""The learned-in-distribution bar of the comparisons on the ID invalid mass (the langtrain
claims' ``LEARNED_ID``; their total-variation bar ``LEARNED_TV`` applies too)."""


def compare_grids(root_a: str | Path, root_b: str | Path, metric: str = "ood_invalid_mass",
                  weights: str = "raw", learned: float = LEARNED) -> list[dict]:
    """One row per (task, scheme) in both grids: {task, norm, n, mean_a, mean_b, mean_diff,
    p, p_holm, wilcoxon_p, left_out}, ``mean_diff`` = mean over paired seeds of B - A;
    ValueError when the grids share no (task, scheme, seed) run or ``metric`` is unknown."""
    from resharpen.experiments.languages.grid import table_rows
    from resharpen.experiments.ledger import stats

    rows_a, rows_b = table_rows(root_a), table_rows(root_b)
    for rows, root in ((rows_a, root_a), (rows_b, root_b)):
        if not rows:
            raise ValueError(f"{str(root)!r} holds no finished grid runs")
        if metric not in rows[0]:
            known = sorted(k for k, v in rows[0].items() if isinstance(v, float))
            raise ValueError(f"metric {metric!r} is not a column of the grid table; one of: "
                             f"{', '.join(known)}")
    a, b = _by_key(rows_a, weights), _by_key(rows_b, weights)
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError(f"{str(root_a)!r} and {str(root_b)!r} share no (task, scheme, seed) "
                         f"run with {weights} weights")
    out, results = [], []
    for task, norm in sorted({(t, n) for t, n, _ in shared}):
        pairs = [(a[key], b[key]) for key in shared if key[:2] == (task, norm)]
        kept = [(ra, rb) for ra, rb in pairs
                if max(ra["learned_id"], rb["learned_id"]) <= learned
                and max(ra["learned_tv"], rb["learned_tv"]) <= LEARNED_TV
                and math.isfinite(ra[metric]) and math.isfinite(rb[metric])]
        result = stats.compare({i: rb[metric] for i, (_, rb) in enumerate(kept)},
                               {i: ra[metric] for i, (ra, _) in enumerate(kept)}, "two-sided")
        results.append(result)
        out.append({"task": task, "norm": norm, "n": len(kept),
                    "mean_a": _mean([ra[metric] for ra, _ in kept]),
                    "mean_b": _mean([rb[metric] for _, rb in kept]),
                    "mean_diff": result.mean_diff, "p": result.p,
                    "wilcoxon_p": result.wilcoxon_p, "left_out": len(pairs) - len(kept)})
    adjusted = stats.holm([r.p if not r.inconclusive and math.isfinite(r.p) else 1.0
                           for r in results])
    for row, p in zip(out, adjusted):
        row["p_holm"] = p
    return out


def _by_key(rows: list[dict], weights: str) -> dict[tuple, dict]:
    """{(task, norm, seed): the row of ``weights``, with ``learned_id`` and ``learned_tv`` its
    run's raw ID invalid mass and ID total variation}."""
    raw = {r["run"]: r for r in rows if r["weights"] == "raw"}
    return {(r["task"], r["norm"], r["seed"]): {
        **r, "learned_id": raw.get(r["run"], {}).get("id_invalid_mass", math.inf),
        "learned_tv": raw.get(r["run"], {}).get("id_tv", math.inf)}
        for r in rows if r["weights"] == weights}


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def compare_table(rows: list[dict], name_a: str, name_b: str, metric: str) -> str:
    """The Markdown table of :func:`compare_grids`."""
    lines = [f"{metric}: B = {name_b} against A = {name_a}, paired by seed (both runs learned "
             f"in distribution), two-sided paired t, Holm over the {len(rows)} cells",
             "", "| task | scheme | n | A | B | B - A | p | Holm p |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = f" ({r['left_out']} left out)" if r["left_out"] else ""
        lines.append(f"| {r['task']} | {r['norm']} | {r['n']}{note} | {r['mean_a']:.3g} | "
                     f"{r['mean_b']:.3g} | {r['mean_diff']:+.3g} | {r['p']:.2g} | "
                     f"{r['p_holm']:.2g} |")
    return "\n".join(lines)


__all__ = ["compare_grids", "compare_table", "LEARNED"]
