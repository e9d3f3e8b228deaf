"""The tests of the ``fit.*`` claims (:mod:`.claims_fit`) on the label-noise grid (sampled k = 1,
4, 16 and soft targets, constant and cosine schedules) and on the EMA-window protocol: the rows
of their runs, the EMA / BEMA gains, and each claim's :class:`~.fit_data.Part` of its family.
Every arm trains for the same budget and must end past the matched fit fixed beforehand
(:data:`MATCHED_NOISE_FIT`), else the averaging comparison is not made (INCONCLUSIVE).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np

from resharpen.experiments.ledger import Outcome, stats
from resharpen.experiments.set_complement.fit_data import (ALL_FULL, Part, decide, fmt,
                                                           missing, run_full, sweep_root)
from resharpen.experiments.set_complement.fit_report import at_own_fit

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


MATCHED_NOISE_FIT = {32: 3e-2, 16: 2e-2}
"""The matched fit of the noise grid per v: the in-distribution invalid mass every arm (every k,
both schedules) reaches within its budget (docs/fit_search.md, "The noise grid's precondition":
sampled labels never reach the placements' 1e-3). Fixed from that search, before the grid."""


def first_history_gain(history: list[dict], level: float, weights: str) -> float:
    """log(raw / average) of the ID invalid mass at the first evaluation whose raw ID invalid
    mass is <= ``level`` (NaN when no evaluation reaches it)."""
    for row in history:
        raw = row.get("raw")
        if raw and raw["id_invalid_mass"] <= level:
            avg = row[weights]["id_invalid_mass"]
            return math.log(raw["id_invalid_mass"] / avg) if raw["id_invalid_mass"] > 0 \
                and avg > 0 else math.nan
    return math.nan


def noise_rows(profile: str) -> tuple[list[dict], list[Path]] | None:
    """One row per run of the noise grid (sampled k = 1, 4, 16 and soft): k (0 for soft),
    schedule, seed, v, whether the raw weights are past the matched fit at the end of the budget,
    per weight set the in- and out-of-distribution invalid mass at the end, and the EMA / BEMA
    gains at the first evaluation that reached the matched fit."""
    from resharpen.experiments.common.stored import read_jsonl
    from resharpen.experiments.training.sweep import load_runs

    roots = [sweep_root(n, profile) for n in ("fit_noise_v32", "fit_noise_soft_v32")]
    if None in roots:
        return None
    rows = []
    for root in roots:
        for run in load_runs(root):
            config, summary = run["config"], run["summary"]
            train, vocab = config["train"], config["task"]["vocab"]
            level = MATCHED_NOISE_FIT[vocab]
            history = read_jsonl(run["folder"] / "metrics.jsonl", "run history")
            row = {"k": 0 if train["target"] == "soft" else train["labels_per_position"],
                   "schedule": train["schedule"], "seed": train["seed"], "vocab": vocab,
                   "decay": train["ema_decay"],
                   "level": level, "steps": train["steps"],
                   "reached": summary["by_weights"]["raw"]["id_invalid_mass"] <= level}
            for w in ("raw", "ema", "bema"):
                for metric in ("id_invalid_mass", "ood_invalid_mass"):
                    row[f"{w}.{metric}"] = summary["by_weights"][w][metric]
            for w in ("ema", "bema"):
                row[f"{w}.gain_at_fit"] = first_history_gain(history, level, w)
            for w in ("raw", "ema"):
                row[f"{w}.id_at_fit"], row[f"{w}.ood_at_fit"] = at_own_fit(history, level, w)
            rows.append(row)
    return rows, roots


def gain(row: dict, weights: str) -> float:
    """log(raw / average) of the in-distribution invalid mass at the end of the budget (> 0: the
    average is better)."""
    return math.log(row["raw.id_invalid_mass"] / row[f"{weights}.id_invalid_mass"])


def ood_gain_at_fit(row: dict, weights: str) -> float:
    """log(raw / average) of the out-of-distribution invalid mass, each weight set read at its
    own first evaluation past the matched fit (> 0: the average generalizes better at the same
    in-distribution fit; NaN when one of them never reaches it)."""
    raw, avg = row["raw.ood_at_fit"], row[f"{weights}.ood_at_fit"]
    return math.log(raw / avg) if raw > 0 and avg > 0 else math.nan


def noise_level(k: int) -> float:
    return 0.0 if k == 0 else 1.0 / k


def _label(k: int) -> str:
    return "soft" if k == 0 else f"k={k}"


def noise_data(profile: str, expected: str) -> tuple[list[dict], list[Path]] | Outcome:
    """The noise grid's rows and folders (:func:`noise_rows`), or the INCONCLUSIVE outcome when
    a sweep is missing or a run ended short of the matched fit (then the averaging comparison
    is not made)."""
    data = noise_rows(profile)
    if data is None:
        return missing("fit_noise_v32", expected)
    rows = data[0]
    behind = [r for r in rows if not r["reached"]]
    if not behind:
        return data
    return Outcome(f"{len(behind)}/{len(rows)} runs not past the matched fit", "every arm "
                   "past the matched fit", passed=False,
                   detail="; ".join(f"{_label(r['k'])} {r['schedule']} seed {r['seed']}: raw "
                                    f"ID {r['raw.id_invalid_mass']:.3g} > {r['level']}"
                                    for r in behind[:8]),
                   inconclusive="the models have not reached the matched fit, so the "
                                "averaging comparison is not made; raise train.steps")


def gain_trend_tests(rows: list[dict], weights: str, label: str = "",
                     value: Callable[[dict, str], float] = gain) -> list[tuple[str, object]]:
    """Per schedule, Spearman's test that the gain of ``weights`` (``value``) grows with 1/k."""
    tests = []
    for schedule in ("constant", "cosine"):
        mine = [r for r in rows if r["schedule"] == schedule]
        tests.append((f"{weights}{label} gain vs 1/k ({schedule})",
                      stats.spearman([noise_level(r["k"]) for r in mine],
                                     [value(r, weights) for r in mine], "greater")))
    return tests


def noise_ema_gain_tests(profile: str) -> Part | Outcome:
    """The EMA gain of the ID invalid mass at the end of the budget (:func:`gain`)."""
    return ema_noise_tests(profile, gain, "ID gain at the end")


def noise_ema_ood_tests(profile: str) -> Part | Outcome:
    """The EMA gain of the OOD invalid mass at matched ID fit (:func:`ood_gain_at_fit`)."""
    return ema_noise_tests(profile, ood_gain_at_fit, "OOD gain at the matched fit")


def ema_noise_tests(profile: str, value: Callable[[dict, str], float],
                    what: str) -> Part | Outcome:
    """Per EMA decay: Spearman of the gain ``value`` on 1/k per schedule, and constant - cosine
    paired by (k, seed); the table of every arm's gains and masses in the detail."""
    data = noise_data(profile, "gain grows with 1/k; constant > cosine")
    if isinstance(data, Outcome):
        return data
    rows, roots = data
    tests, table = [], []
    for decay in sorted({r["decay"] for r in rows}):
        mine = [r for r in rows if r["decay"] == decay]
        label = f" (decay {decay:g}, window {1 / (1 - decay):.0f} steps)"
        tests += gain_trend_tests(mine, "ema", label, value)
        const = {(r["k"], r["seed"]): value(r, "ema") for r in mine if r["schedule"] == "constant"}
        cos = {(r["k"], r["seed"]): value(r, "ema") for r in mine if r["schedule"] == "cosine"}
        tests.append((f"ema{label} gain constant - cosine", stats.compare(const, cos, "greater")))
        for k in sorted({r["k"] for r in mine}, key=lambda k: -noise_level(k)):
            for schedule in ("constant", "cosine"):
                arm = [r for r in mine if r["k"] == k and r["schedule"] == schedule]
                table.append(f"decay {decay:g}, {_label(k)} {schedule}: EMA {what} "
                             f"{fmt(value(r, 'ema') for r in arm)} (ID gain at the end "
                             f"{fmt(gain(r, 'ema') for r in arm)}, at the first matched fit "
                             f"{fmt(r['ema.gain_at_fit'] for r in arm)}; OOD gain at the matched fit "
                             f"{fmt(ood_gain_at_fit(r, 'ema') for r in arm)}), raw ID "
                             f"{fmt(r['raw.id_invalid_mass'] for r in arm)}, raw OOD "
                             f"{fmt(r['raw.ood_invalid_mass'] for r in arm)}")
    vocab = sorted({r["vocab"] for r in rows})
    steps = sorted({r["steps"] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    return decide(tests, "; ".join(table[::2][::4]) + " ...", "gain grows with 1/k; constant > "
                  "cosine, at each decay", table + [
                      f"v = {vocab}, seeds {seeds[0]}..{seeds[-1]}, {steps} steps per run, "
                      f"{len(rows)} runs, profile {profile}"
                      + (" (quick: decided on the v = 16 quick sweeps)" if profile == "quick"
                         else "")
                      + f"; every run's raw weights end past the matched fit "
                        f"{sorted({r['level'] for r in rows})}",
                      *map(str, roots)], run_full("fit_noise_v32"))


def noise_bema_gain_tests(profile: str) -> Part | Outcome:
    data = noise_data(profile, "BEMA gain grows with 1/k")
    if isinstance(data, Outcome):
        return data
    rows, roots = data
    rows = [r for r in rows if r["decay"] == min(r["decay"] for r in rows)]  # BEMA does not
    # depend on the EMA decay: the runs of the other decay are the same BEMA weights again
    table = [f"{_label(k)} {schedule}: BEMA gain "
             f"{fmt(gain(r, 'bema') for r in rows if r['k'] == k and r['schedule'] == schedule)}"
             for k in sorted({r["k"] for r in rows}, key=lambda k: -noise_level(k))
             for schedule in ("constant", "cosine")]
    seeds = sorted({r["seed"] for r in rows})
    return decide(gain_trend_tests(rows, "bema"), "; ".join(table[::2]), "BEMA gain grows with "
                  "1/k", table + [f"v = {sorted({r['vocab'] for r in rows})}, seeds "
                                  f"{seeds[0]}..{seeds[-1]}, {len(rows)} runs, profile {profile}",
                                  *map(str, roots)], run_full("fit_noise_v32"))


def temperature_rows(profile: str) -> tuple[list[dict], list[Path]] | None:
    """One row per BEMA run of the noise grid (the runs of the smallest EMA decay: BEMA does not
    depend on it): k, schedule, seed and :func:`~resharpen.experiments.set_complement.temperature.temperature_row`
    (alpha, tau, raw / BEMA / tempered-raw ID and OOD invalid mass); cached per folder."""
    from resharpen.experiments.training.runs import measured
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.set_complement.temperature import temperature_row

    roots = [sweep_root(n, profile) for n in ("fit_noise_v32", "fit_noise_soft_v32")]
    if None in roots:
        return None
    rows = []
    for root in roots:
        runs = load_runs(root)
        low = min(run["config"]["train"]["ema_decay"] for run in runs)
        for run in runs:
            train = run["config"]["train"]
            if train["ema_decay"] != low:
                continue
            key = str(Path(run["folder"]).resolve())
            if key not in _TEMPERATURE:
                folder = run["folder"]
                _TEMPERATURE[key] = {**measured(folder, "temperature", lambda f=folder: {
                    k: v for k, v in temperature_row(f).items() if k != "folder"}),
                    "folder": str(folder)}
            rows.append({**_TEMPERATURE[key], "vocab": run["config"]["task"]["vocab"],
                         "k": 0 if train["target"] == "soft" else train["labels_per_position"],
                         "schedule": train["schedule"], "steps": train["steps"]})
    return rows, roots


_TEMPERATURE: dict[str, dict] = {}


def noise_bema_temperature_tests(profile: str) -> Part | Outcome:
    data = noise_data(profile, "BEMA OOD below the tempered raw model's")
    if isinstance(data, Outcome):
        return data
    rows, roots = temperature_rows(profile)
    key = lambda r: (r["k"], r["schedule"], r["seed"])  # noqa: E731
    log_ood = lambda r, w: math.log(r[w]["ood_invalid_mass"])  # noqa: E731
    log_id = lambda r, w: math.log(r[w]["id_invalid_mass"])  # noqa: E731
    tests = [("BEMA - tempered raw, log OOD invalid mass (paired per run)",
              stats.compare({key(r): log_ood(r, "bema") for r in rows},
                            {key(r): log_ood(r, "tempered") for r in rows}, "less"))]
    reported = [("BEMA - tempered raw, log ID invalid mass (paired per run)",
                 stats.compare({key(r): log_id(r, "bema") for r in rows},
                               {key(r): log_id(r, "tempered") for r in rows}, "less"))]
    recovered = [math.log(r["raw"]["ood_invalid_mass"] / r["tempered"]["ood_invalid_mass"])
                 / math.log(r["raw"]["ood_invalid_mass"] / r["bema"]["ood_invalid_mass"])
                 for r in rows]
    table = [f"{_label(k)} {schedule}: OOD raw "
             f"{fmt(r['raw']['ood_invalid_mass'] for r in arm)}, BEMA "
             f"{fmt(r['bema']['ood_invalid_mass'] for r in arm)}, tempered "
             f"{fmt(r['tempered']['ood_invalid_mass'] for r in arm)} (tau "
             f"{fmt(r['tau'] for r in arm)})"
             for k in sorted({r["k"] for r in rows}, key=lambda k: -noise_level(k))
             for schedule in ("constant", "cosine")
             for arm in [[r for r in rows if r["k"] == k and r["schedule"] == schedule]]]
    seeds = sorted({r["seed"] for r in rows})
    return decide(tests, f"alpha {fmt(r['alpha'] for r in rows)} (relative residual "
                         f"{fmt(r['alpha_residual'] for r in rows)}); tau "
                         f"{fmt(r['tau'] for r in rows)}; the temperature recovers "
                         f"{fmt(recovered)} of BEMA's OOD log-gain log(raw / BEMA)",
                  "BEMA's OOD invalid mass below the tempered raw model's", table + [
                      f"v = {sorted({r['vocab'] for r in rows})}, seeds {seeds[0]}..{seeds[-1]}, "
                      f"{len(rows)} runs ({sorted({r['steps'] for r in rows})} steps, AdamW), "
                      f"profile {profile}; tau: least squares of the centred ID logits "
                      "(= all ID margins) of BEMA on tau x raw",
                      *map(str, roots)], run_full("fit_noise_v32"), reported)


def window_rows(profile: str) -> list[dict] | None:
    """The rows of the EMA-window protocol (:mod:`resharpen.experiments.set_complement.ema_window`):
    run here in quick (cached), read from its results file in full (None when missing or made
    with another protocol)."""
    from resharpen.experiments.training.config import check_profile
    from resharpen.experiments.set_complement.ema_window import cached_rows, run_protocol

    if check_profile(profile) == "full":
        return cached_rows("full")
    from resharpen.experiments.training.sweep import exclusive

    from resharpen.experiments.training.config import result_folder
    with exclusive(result_folder("sweeps", "fit_noise_window_v32", "quick")):
        return run_protocol("quick", workers=2)


def noise_ema_window_tests(profile: str) -> Part | Outcome:
    from resharpen.experiments.set_complement.ema_window import (
        ARMS, LEARNED_FRACTION, MATCH_FACTOR, STATIONARY_DRIFT, WINDOWS, ema_name, floor_drift,
        set_complement_uniform_invalid_mass, window_gain)

    expected = "EMA below raw at every window, both arms"
    rows = window_rows(profile)
    if rows is None:
        return Outcome("no data", expected, passed=False, inconclusive=(
            "no full EMA-window results of today's protocol (arms, windows, steps); run `python -m "
            "resharpen.experiments.set_complement.ema_window --profile full` (every full fit.* "
            f"training: {ALL_FULL})"))
    arms = {arm: [r for r in rows if r["arm"] == arm] for arm in ARMS}
    floors = {arm: float(np.median([r["raw"]["id_invalid_mass"] for r in mine]))
              for arm, mine in arms.items()}
    drifts = {arm: float(np.median([abs(floor_drift(r["history"], r["burn_in"])) for r in mine]))
              for arm, mine in arms.items()}
    setting_line = (f"v = {sorted({r['vocab'] for r in rows})}, seeds "
                    f"{sorted({r['seed'] for r in rows})}, {sorted({r['steps'] for r in rows})} "
                    f"steps, burn-in {sorted({r['burn_in'] for r in rows})}, profile {profile}; "
                    f"median raw ID floor {', '.join(f'{a} {f:.3g}' for a, f in floors.items())}; "
                    f"median |drift| {', '.join(f'{a} {d:.2f}' for a, d in drifts.items())}")
    vocab, train_len = rows[0]["vocab"], rows[0].get("train_len", rows[0]["vocab"] // 4)
    uniform = set_complement_uniform_invalid_mass(vocab, train_len)
    learned = {a for a, f in floors.items() if f < LEARNED_FRACTION * uniform}
    setting_line += (f"; learned (floor < {LEARNED_FRACTION} x the uniform prediction's "
                     f"{uniform:.3g}): {sorted(learned) or 'none'}")
    if not learned:
        return Outcome(setting_line, expected, passed=False, inconclusive=(
            "no arm learned the task (its floor is not below half the uniform prediction's ID "
            "invalid mass): the averaging comparison is not made"))
    unsteady = [a for a, d in drifts.items() if a in learned and not d < STATIONARY_DRIFT]
    ratio = max(floors.values()) / min(floors.values())
    if unsteady or (len(learned) == len(arms) and not ratio <= MATCH_FACTOR):
        return Outcome(setting_line, expected, passed=False, inconclusive=(
            f"arms not at a stationary floor: {unsteady}" if unsteady else
            f"floors not matched: ratio {ratio:.2f} > {MATCH_FACTOR}"))
    tests, reported, table = [], [], []
    for arm, mine in arms.items():
        if arm not in learned:  # its planned tests count, uncomputed (p = 1)
            tests += [(f"{arm} window {w}: not learned, not computed", stats.paired([], []))
                      for w in WINDOWS]
            continue
        for window in WINDOWS:
            name = ema_name(window)
            label = f"{arm} window {window} (decay {1 - 1 / window:g})"
            tests.append((f"{label}: log EMA - log raw ID invalid mass", stats.compare(
                {r["seed"]: math.log(r[name]["id_invalid_mass"]) for r in mine},
                {r["seed"]: math.log(r["raw"]["id_invalid_mass"]) for r in mine}, "less")))
            reported.append((f"{label}: log EMA - log raw OOD invalid mass", stats.compare(
                {r["seed"]: math.log(r[name]["ood_invalid_mass"]) for r in mine},
                {r["seed"]: math.log(r["raw"]["ood_invalid_mass"]) for r in mine}, "less")))
            table.append(f"{label}: ID gain log(raw / EMA) "
                         f"{fmt(window_gain(r, window) for r in mine)}, OOD gain "
                         f"{fmt(window_gain(r, window, 'ood_invalid_mass') for r in mine)}")
    return decide(tests, "; ".join(table[::3]), expected, table + [setting_line],
                  "more seeds: `python -m resharpen.experiments.set_complement.ema_window "
                  "--profile full`", reported)
