"""The Post-Norm comparisons of the task-training grids and their two controls: the analysis of
the ``langtrain.postnorm.*`` claims (the claims themselves are in :mod:`.claims_train`).

Post-Norm's advantage in the theory is a resharpening readout: a norm between the last
attention and W_U rescales the attended sum (docs/theory.md). Pre-LN as practitioners use it
carries a final norm before W_U, which is itself such a readout. So a Post-Norm placement (each
of :data:`POST_NORMS`) is compared with two controls, each answering its own question
(:data:`CONTROLS`):

* ``pre_nofinal`` (Pre-LN without the final norm: no norm between the last attention and W_U),
  the no-resharpening control: does a norm before the readout help at all?
* ``pre`` (Pre-LN with its final norm), the practice baseline: does Post-Norm beat what
  practitioners use? Its final norm resharpens too, so a Post-Norm placement that does not beat
  pre has not shown that resharpening does not help.

Every comparison is on the raw weights, paired by seed (per task; pooled over tasks, by task and
seed) at matched in-distribution fit: a run counts when it learned its task (raw ID invalid mass
<= :data:`LEARNED_ID` and ID total variation <= :data:`LEARNED_TV`) and reached its run's stated
fit (:func:`at_matched_fit`: ``fit_target`` and ``fit_tv_target``, where the raw weights stop;
the learned bars for a run without them). A seed where only one arm
counts is dropped with its partner, so a comparison is always paired; fewer than
``stats.MIN_N`` pairs is INCONCLUSIVE, and the test's reason then says why (a control the grid
did not train, or how many of each arm's runs reached the fit). A task where the control
trained at least ``stats.MIN_N`` runs and fewer of them reached the fit is left out of the
comparison against it and named (:func:`compared_tasks`, :func:`left_out_tasks`).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from resharpen.experiments.ledger import stats

CLAIMS_ANALYSIS = True

METRIC = "ood_invalid_mass"
"""The OOD invalid mass: mean over lengths L_train+1..L_eval of the mass on illegal tokens."""
LEARNED_ID = 0.05
"""A run has learned its task in distribution when its raw weights' mean invalid mass over the
lengths 1..L_train is <= this (the grids' ``eval.threshold``, the bar of the LG score). Only such
runs decide a claim: a length-generalization effect is measured on models that fit the lengths
they were trained on; the others are listed in the detail."""
LEARNED_TV = 0.1
"""...and when the mean total variation distance of its raw weights' next-token distribution to
the exact legal-next one over the lengths 1..L_train is <= this: at most a tenth of the
probability misplaced. Invalid mass alone is met by a degenerate model that spreads its mass over
a few always-legal tokens (opening brackets on Dyck: invalid mass 0.002 at TV 0.33), whose low
OOD invalid mass says nothing about length generalization."""
POST_NORMS = ("post", "attn_out")
"""The Post-Norm placements: the norm on the residual sum (post) or on the sublayer's output
(attn_out), the two readouts of the theory that resharpen the attended sum."""
CONTROLS = {
    "pre_nofinal": "the no-resharpening control (no norm between the last attention and the "
                   "readout): does a norm before the readout help at all?",
    "pre": "the practice baseline (Pre-LN with its final norm, which resharpens the readout "
           "too): does Post-Norm beat what practitioners use?",
}
"""control scheme -> the question a comparison against it answers."""


def learned(rows: list[dict]) -> list[dict]:
    """The rows of the runs whose raw weights have learned their task in distribution
    (:data:`LEARNED_ID`); every weight set of such a run is kept."""
    keep = {r["run"] for r in rows if r["weights"] == "raw"
            and r.get("id_invalid_mass", math.inf) <= LEARNED_ID
            and r.get("id_tv", math.inf) <= LEARNED_TV}
    return [r for r in rows if r["run"] in keep]


def matched_bar(row: dict) -> float:
    """The ID invalid mass a model must reach to count at matched fit: the run's own stated fit
    (``fit_target``, where the raw weights stopped), or :data:`LEARNED_ID` for a run trained
    without a stopping fit."""
    return row.get("fit_target") or LEARNED_ID


def at_matched_fit(row: dict) -> bool:
    """Whether a weight set's row is at its run's stated fit: ID invalid mass <=
    :func:`matched_bar` and ID total variation <= the run's ``fit_tv_target`` (or
    :data:`LEARNED_TV` for a run without one)."""
    return (row.get("id_invalid_mass", math.inf) <= matched_bar(row)
            and row.get("id_tv", math.inf) <= (row.get("fit_tv_target") or LEARNED_TV))


def at_fit(rows: list[dict]) -> list[dict]:
    """The raw rows of the runs that learned their task and reached their stated fit
    (:func:`at_matched_fit`): the runs a placement comparison pairs."""
    return [r for r in learned(rows) if r["weights"] == "raw" and at_matched_fit(r)]


def _arm(raw: list[dict], norm: str, task: str | None = None) -> dict:
    """{seed: OOD mass} of ``norm`` on ``task``, or {(task, seed): ...} over every task."""
    return {(r["seed"] if task else (r["task"], r["seed"])): r[METRIC] for r in raw
            if r["norm"] == norm and (task is None or r["task"] == task)}


def fit_count(rows: list[dict], norm: str, task: str | None) -> tuple[int, int]:
    """(runs at the fit, runs) of ``norm``'s raw weights (on ``task``, or over every task):
    :func:`at_fit` counts a run that learned its task and reached its stated fit."""
    mine = [r for r in rows if r["weights"] == "raw" and r["norm"] == norm
            and (task is None or r["task"] == task)]
    return len(at_fit(mine)), len(mine)


def _counts(rows: list[dict], norm: str, task: str | None) -> str:
    """'k of n runs at the fit' of ``norm`` (on ``task``, or over every task)."""
    fitted, runs = fit_count(rows, norm, task)
    if not runs:
        return f"the grid has no {norm} runs" + (f" on {task}" if task else "")
    return f"{norm} {fitted} of {runs} runs at the fit"


def paired_by_seed(rows: list[dict], norm: str, control: str,
                   task: str | None = None) -> stats.Comparison:
    """``norm`` against ``control`` at matched fit, paired by seed (by task and seed when
    ``task`` is None), raw weights: a one-sided paired t (``stats.compare`` on the shared keys;
    Wilcoxon beside it). When it cannot decide, its reason names how many runs of each arm
    reached the fit and how many pair."""
    raw = at_fit(rows)
    a, b = _arm(raw, norm, task), _arm(raw, control, task)
    shared = [k for k in a if k in b]
    result = stats.compare({k: a[k] for k in shared}, {k: b[k] for k in shared}, "less")
    if result.inconclusive:
        result = replace(result, inconclusive=(
            f"{result.inconclusive} ({_counts(rows, norm, task)}, "
            f"{_counts(rows, control, task)}; {len(shared)} seeds pair)"))
    return result


def log_ratio_by_seed(rows: list[dict], norm: str, control: str,
                      tasks: list[str] | None = None) -> stats.Comparison:
    """Pooled over the tasks on one scale (``tasks``, default every task of ``rows``): per
    (task, seed), log(OOD mass of ``norm`` / OOD mass of ``control``) at matched fit, tested
    against 0 (a paired t of the log ratios against zeros, one-sided). When it cannot decide,
    its reason counts each arm's runs at the fit over every task of ``rows``."""
    raw = [r for r in at_fit(rows) if tasks is None or r["task"] in tasks]
    a, b = _arm(raw, norm), _arm(raw, control)
    ratio = {k: math.log(a[k] / b[k]) for k in a if k in b and a[k] > 0 and b[k] > 0}
    result = stats.compare(ratio, dict.fromkeys(ratio, 0.0), "less")
    if result.inconclusive:
        result = replace(result, inconclusive=(
            f"{result.inconclusive} ({_counts(rows, norm, None)}, "
            f"{_counts(rows, control, None)}; {len(ratio)} (task, seed) pairs)"))
    return result


def tasks_of(rows: list[dict]) -> list[str]:
    """The tasks with a run that learned in distribution, among the runs a claim reads (the
    schemes it compares). A task none of them learned is outside the claims' premise (length
    generalization of models that fit the training lengths): it is not tested, and the claim's
    detail lists its runs as not learned. A task with some learned runs, but too few to pair,
    is tested and leaves the claim INCONCLUSIVE."""
    return sorted({r["task"] for r in learned(rows) if r["weights"] == "raw"})


def control_fits(rows: list[dict], control: str, task: str) -> bool:
    """Whether ``control`` can be compared at matched fit on ``task`` (:func:`compared_tasks`):
    False when the grid trained at least ``stats.MIN_N`` runs of it there and fewer than
    ``stats.MIN_N`` of them reached their stated fit (the control does not fit the task); True
    otherwise, including a control with fewer runs than that or none (too little data, which
    the comparison's test reports)."""
    runs = sum(r["norm"] == control and r["task"] == task and r["weights"] == "raw"
               for r in rows)
    fitted = sum(r["norm"] == control and r["task"] == task for r in at_fit(rows))
    return runs < stats.MIN_N or fitted >= stats.MIN_N


def left_out_tasks(rows: list[dict], control: str) -> list[str]:
    """The tasks of :func:`tasks_of` a comparison against ``control`` leaves out: there the
    control fails to fit (:func:`control_fits`)."""
    return [task for task in tasks_of(rows) if not control_fits(rows, control, task)]


def compared_tasks(rows: list[dict], control: str) -> list[str]:
    """The tasks a comparison against ``control`` tests: those of :func:`tasks_of` where the
    control does not fail to fit (:func:`control_fits`: of at least ``stats.MIN_N`` runs, fewer
    than that many reached their stated fit).

    The rule is asymmetric on purpose. Without a control at the fit there is nothing to compare
    a placement with at matched fit, and a control that does not fit is no evidence against a
    Post-Norm placement, so such a task is outside the comparison's premise; the claim names it
    with both arms' fit counts (:func:`outside_note`). A task where the control fits and a
    Post-Norm placement does not stays in: its test cannot decide, and the claim stays
    INCONCLUSIVE. Leaving a task out can turn a claim's INCONCLUSIVE into a PASS, never into a
    FAIL (the task had too few pairs to show either direction); where the control and a
    placement both miss the fit, the placement's failure shows only in the printed counts."""
    left_out = set(left_out_tasks(rows, control))
    return [task for task in tasks_of(rows) if task not in left_out]


def outside_note(rows: list[dict], control: str) -> str:
    """The tasks a comparison against ``control`` leaves out because the control reached the fit
    in fewer than ``stats.MIN_N`` of its runs (:func:`control_fits`), with each compared arm's
    fit count there ("" if none)."""
    outside = left_out_tasks(rows, control)
    if not outside:
        return ""
    counts = "; ".join(f"{task}: " + ", ".join(_counts(rows, n, task) for n in
                                                (control, *POST_NORMS)) for task in outside)
    return (f"not compared (the control {control} reached the fit in fewer than {stats.MIN_N} "
            f"runs, so no matched-fit comparison is possible there): {counts}")


def per_task_tests(control: str):
    """rows -> per task of :func:`compared_tasks` and Post-Norm placement, the paired test
    against ``control``."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        return [(f"{task}: {norm} - {control}", paired_by_seed(rows, norm, control, task))
                for task in compared_tasks(rows, control) for norm in POST_NORMS]

    return tests


def pooled_tests(control: str):
    """rows -> per Post-Norm placement, the pooled log-ratio test against ``control`` over the
    tasks of :func:`compared_tasks`."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        tasks = compared_tasks(rows, control)
        return [(f"log({norm} / {control}), pooled over tasks",
                 log_ratio_by_seed(rows, norm, control, tasks)) for norm in POST_NORMS]

    return tests


def mean_differences(rows: list[dict], control: str) -> str:
    """Per task and placement, the mean paired difference (placement - ``control``) at matched
    fit with its number of pairs, for a claim's detail."""
    raw = at_fit(rows)
    out = []
    for task in compared_tasks(rows, control):
        for norm in POST_NORMS:
            a, b = _arm(raw, norm, task), _arm(raw, control, task)
            d = [a[s] - b[s] for s in a if s in b]
            out.append(f"{task}/{norm} {np.mean(d):+.3g} (n={len(d)})" if d
                       else f"{task}/{norm}: no pair")
    return (f"mean of {'/'.join(POST_NORMS)} - {control} per task at matched fit: "
            + (", ".join(out) or "no task compared"))


def fit_note(rows: list[dict], norms: tuple[str, ...]) -> str:
    """Per task, how many raw runs of each of ``norms`` reached their stated fit."""
    parts = []
    for task in sorted({r["task"] for r in rows}):
        parts.append(f"{task} " + ", ".join(_counts(rows, n, task).removesuffix(
            " runs at the fit").replace(" of ", "/") for n in norms))
    return ("runs at matched fit (raw ID invalid mass and total variation within the run's "
            "stated fit): " + "; ".join(parts))


def final_norm_reference(rows: list[dict]) -> str:
    """What Pre-LN's final norm does alone (pre against pre_nofinal per task, paired by seed at
    matched fit): reported beside the no-resharpening claims for reading, outside the Holm family
    and deciding no claim."""
    out = []
    for task in tasks_of(rows):
        result = paired_by_seed(rows, "pre", "pre_nofinal", task)
        out.append(f"{task}: pre - pre_nofinal: {result.describe()}")
    return ("for reading, not a test of any claim (unadjusted): the final norm alone, "
            + " | ".join(out))
