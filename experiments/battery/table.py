"""The battery's table: OOD invalid mass at matched fit per task, the scheme against each
reference paired by seed, and the dynamics numbers.

**Matched fit.** Every run of the two grids stops at its config's fit (the raw weights' mean
in-distribution invalid mass at or below the stated level); a run that reached it by its step
cap is compared on its raw weights' out-of-distribution invalid mass (the mean over the lengths
past ``train_len``). A run that did not reach the fit is left out, with its partner.

**Tests.** Per task, the scheme's OOD invalid mass against each reference's on the seeds both
brought to the fit: the paired t-test (:func:`resharpen.experiments.ledger.stats.paired`,
two-sided; d_i = scheme_i - reference_i), with the Wilcoxon signed-rank p beside it, and Holm's
correction over the references of the task. Fewer than ``stats.MIN_N`` pairs, or differences
with no spread, are INCONCLUSIVE (no p-value is made up). The verdict at level
``stats.ALPHA`` on the Holm-adjusted p: lower or higher than the reference, or no difference
shown.

**Dynamics.** For each scheme, over the trained-dynamics study's tasks and seeds
(:mod:`resharpen.experiments.dynamics.trained`): the similarity growth per layer at
initialization, (cos_L - cos_1)/(L - 1) with cos_j the mean pairwise cosine of the tokens
entering block j (:func:`~resharpen.experiments.dynamics.trained.similarity_rise`), and the
first layer's angular displacement of the tokens, at initialization and after training to the
fit (:func:`~resharpen.experiments.dynamics.trained.first_layer_displacement`), mean ± sample
sd over runs.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from resharpen.experiments.ledger import stats

SC_LABEL = "set_complement (fit grid)"


def grid_runs(root: Path, grid: str) -> list[dict]:
    """One row per finished run of a grid folder: {grid, task, scheme, seed, fit_reached,
    ood} (``ood``: the raw weights' OOD invalid mass)."""
    from resharpen.experiments.training.sweep import load_runs

    rows = []
    for run in load_runs(root):
        c, s = run["config"], run["summary"]
        task = SC_LABEL if grid == "set_complement" else c["task"]["name"]
        rows.append({"grid": grid, "task": task, "scheme": c["model"]["norm"],
                     "seed": c["train"]["seed"], "fit_reached": bool(s.get("fit_reached")),
                     "ood": s["by_weights"]["raw"]["ood_invalid_mass"]})
    return rows


def _by_seed(rows: list[dict], task: str, scheme: str) -> dict:
    return {r["seed"]: r["ood"] for r in rows if r["task"] == task and r["scheme"] == scheme
            and r["fit_reached"] and math.isfinite(r["ood"])}


def _arm(rows: list[dict], task: str, scheme: str) -> dict:
    """{mean, sd, fitted, runs} of one scheme's OOD invalid mass on one task (fitted runs)."""
    mine = [r for r in rows if r["task"] == task and r["scheme"] == scheme]
    values = list(_by_seed(rows, task, scheme).values())
    return {"mean": float(np.mean(values)) if values else None,
            "sd": float(np.std(values, ddof=1)) if len(values) > 1 else None,
            "fitted": len(values), "runs": len(mine)}


def comparisons(rows: list[dict], scheme: str, references: list[str]) -> list[dict]:
    """Per task and reference: both arms, the paired test on the shared fitted seeds, its Holm
    adjustment over the task's references and the verdict (see the module docstring)."""
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        mine = _by_seed(rows, task, scheme)
        group = []
        for ref in references:
            theirs = _by_seed(rows, task, ref)
            shared = sorted(set(mine) & set(theirs))
            test = stats.paired([mine[k] for k in shared], [theirs[k] for k in shared],
                                "two-sided")
            group.append({"task": task, "reference": ref, "scheme_arm": _arm(rows, task, scheme),
                          "reference_arm": _arm(rows, task, ref), "test": test.test,
                          "n": test.n, "mean_diff": test.mean_diff if test.n else None,
                          "se": test.se, "p": None if test.inconclusive else test.p,
                          "wilcoxon_p": test.wilcoxon_p, "inconclusive": test.inconclusive})
        adjusted = stats.holm([g["p"] if g["p"] is not None else math.nan for g in group])
        for g, p_holm in zip(group, adjusted):
            g["p_holm"] = None if g["inconclusive"] else p_holm
            g["verdict"] = verdict(g)
        out += group
    return out


def verdict(row: dict) -> str:
    if row["inconclusive"]:
        return f"INCONCLUSIVE ({row['inconclusive']})"
    if row["p_holm"] < stats.ALPHA:
        return "lower" if row["mean_diff"] < 0 else "higher"
    return "no difference shown"


def dynamics_rows(runs: list[dict], schemes: list[str]) -> list[dict]:
    """Per scheme: runs, fitted runs, and mean ± sd of the similarity growth at init and of the
    first-layer displacement at init and trained (see the module docstring)."""
    from resharpen.experiments.dynamics.trained import first_layer_displacement, similarity_rise

    def summary(values: list[float]) -> dict:
        values = [v for v in values if math.isfinite(v)]
        return {"mean": float(np.mean(values)) if values else None,
                "sd": float(np.std(values, ddof=1)) if len(values) > 1 else None,
                "n": len(values)}

    out = []
    for scheme in schemes:
        mine = [r for r in runs if r["scheme"] == scheme]
        fitted = [r for r in mine if r["fit_reached"] and not r["diverged"]]
        out.append({"scheme": scheme, "runs": len(mine), "fitted": len(fitted),
                    "similarity_growth_init": summary([similarity_rise(r["init"]) for r in mine]),
                    "first_layer_displacement_init":
                        summary([first_layer_displacement(r["init"]) for r in mine]),
                    "first_layer_displacement_trained":
                        summary([first_layer_displacement(r["trained"]) for r in fitted])})
    return out


def report(root: Path, plan: dict, dynamics: list[dict]) -> dict:
    """The battery's results (what ``battery.json`` holds)."""
    from resharpen.experiments.dynamics.trained_plan import TASKS

    rows = (grid_runs(root / "set_complement", "set_complement")
            + grid_runs(root / "languages", "languages"))
    scheme, refs = plan["scheme"], [r for r in plan["references"] if r != plan["scheme"]]
    first = dynamics[0] if dynamics else {}
    return {"scheme": scheme, "plugin": plan["plugin"], "profile": plan["profile"],
            "references": refs, "weights": "raw, each run at its config's fit",
            "alpha": stats.ALPHA, "min_n": stats.MIN_N,
            "ood": comparisons(rows, scheme, refs), "runs": rows,
            "dynamics": {"tasks": sorted({r["task"] for r in dynamics}) or list(TASKS),
                         "depth": first.get("depth"),
                         "schemes": dynamics_rows(dynamics, [scheme] + refs)}}


def _num(value, fmt: str = "{:.3g}") -> str:
    return "–" if value is None else fmt.format(value)


def _arm_text(arm: dict) -> str:
    spread = f" ± {arm['sd']:.2g}" if arm["sd"] is not None else ""
    return f"{_num(arm['mean'], '{:.4f}')}{spread} ({arm['fitted']}/{arm['runs']} fit)"


def _summary_text(s: dict, fmt: str = "{:.3g}") -> str:
    if s["mean"] is None:
        return "– (n=0)"
    spread = f" ± {s['sd']:.2g}" if s["sd"] is not None else ""
    return f"{fmt.format(s['mean'])}{spread} (n={s['n']})"


def to_markdown(result: dict) -> str:
    """The battery's table as Markdown: the OOD comparison per task and reference, then the
    dynamics per scheme."""
    scheme = result["scheme"]
    ood = result["ood"]
    test = ood[0]["test"] if ood else "paired t"
    lines = [f"# Battery of {scheme}" + (f" ({result['plugin']})" if result["plugin"] else ""),
             "",
             f"Profile {result['profile']}; references {', '.join(result['references'])}. "
             "OOD invalid mass of the raw weights, each run stopped at its config's fit; mean ± "
             "sd over the seeds that reached it. Test: "
             f"{test}, two-sided, on the seeds both schemes brought to the fit (n pairs), "
             "Wilcoxon signed-rank p beside it, Holm over the references of each task; fewer "
             f"than {result['min_n']} pairs: INCONCLUSIVE; verdict at Holm p < {result['alpha']}.",
             "",
             f"| task | reference | {scheme} | reference | mean diff ({scheme} − ref) | n | p "
             "| Wilcoxon p | Holm p | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in ood:
        diff = ("–" if row["mean_diff"] is None else
                f"{row['mean_diff']:+.3g}" + (f" ± {row['se']:.2g}"
                                              if row["se"] is not None and math.isfinite(row["se"])
                                              else ""))
        lines.append(f"| {row['task']} | {row['reference']} | {_arm_text(row['scheme_arm'])} | "
                     f"{_arm_text(row['reference_arm'])} | {diff} | {row['n']} | "
                     f"{_num(row['p'])} | {_num(row['wilcoxon_p'])} | {_num(row['p_holm'])} | "
                     f"{row['verdict']} |")
    dyn = result["dynamics"]
    lines += ["", f"Dynamics (attention-only models, RMSNorm, depth {dyn['depth']}; tasks "
              f"{', '.join(dyn['tasks'])}; mean ± sd over runs): similarity growth per layer at "
              "initialization (cos_L − cos_1)/(L − 1), and the first layer's angular "
              "displacement of the tokens (rad) at initialization and trained to the fit.", "",
              "| scheme | runs (fit) | similarity growth, init | first-layer displacement, init "
              "| first-layer displacement, trained |", "|---|---|---|---|---|"]
    for row in dyn["schemes"]:
        lines.append(f"| {row['scheme']} | {row['runs']} ({row['fitted']}) | "
                     f"{_summary_text(row['similarity_growth_init'], '{:+.3g}')} | "
                     f"{_summary_text(row['first_layer_displacement_init'])} | "
                     f"{_summary_text(row['first_layer_displacement_trained'])} |")
    return "\n".join(lines)


__all__ = ["grid_runs", "comparisons", "dynamics_rows", "report", "to_markdown"]
