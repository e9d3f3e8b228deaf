"""The tests of the ``fit.*`` claims (:mod:`.claims_fit`) on the placement sweeps, the K sweep,
the dropout sweep and the OOD-against-fit ladder: each function reads its runs and returns its
claim's :class:`~.fit_data.Part` of its family (the paired tests, what it measured and expected,
the detail), or the INCONCLUSIVE outcome when its data is missing. The bands are fixed from the
theory before the claims were run (:mod:`.claims_fit` says how).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.ledger import Outcome, stats
from resharpen.experiments.model import schemes
from resharpen.experiments.set_complement.fit_data import (Part, by_seed, decide, fmt, missing,
                                                           placement_data, reports, run_full,
                                                           setting, sweep_root)
from resharpen.experiments.set_complement.fit_report import (ladder_rows, reached_rungs,
                                                             rung_label, rung_order)

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""

TWO_OVER_S_EXPONENT = 1.0
"""The theory's exponent of m_s ~ s^-a for none: m_s = lambda / s (docs/theory.md, the 2/s law)."""
TWO_OVER_S_MARGIN = 0.1
"""fit.none.two_over_s's equivalence margin on the exponent: |a - 1| < 0.1, a tenth of the
theory's exponent and a fifth of the way to the nearest rival laws (a = 1/2, attn_out's closed
form at s << v, and a = 3/2). It replaces the band (0.75, 1.25), which was wide enough to pass
exponents significantly above 1; the exponents the band had measured (1.21 at v = 32, 1.24 at
v = 64, 1.32 at v = 16) were known when the margin was chosen from the theory."""
ATTN_OUT_BAND = 0.25
"""fit.attn_out.closed_form_band's bound on the largest relative deviation past L_train. Set
after the v = 32 margins of an earlier run (lr 1e-3, deviations 0.21-0.24) had been seen, so it
decides only on sweeps it did not see (:func:`attn_out_sweeps`); v = 32 is reported."""
def attn_out_sweeps(profile: str) -> tuple[str, ...]:
    """The sweeps that decide fit.attn_out.closed_form_band, none of which the band had seen: the
    v = 64 sweeps (lr 3e-3 and lr 1e-2) in full; in quick the v = 16 quick profile of the v = 32
    file (the band was set on v = 32 margins, full size)."""
    return pick(profile, quick=("fit_placements_v32",),
                full=("fit_placements_v64", "fit_placements_v64_lr1e-2"))


def attn_out_seen(profile: str) -> tuple[str, ...]:
    """The sweeps of the v the band was set after: reported beside the claim, not deciding."""
    return pick(profile, quick=(), full=("fit_placements_v32",))
LEMMA_RESIDUAL_BOUND = 0.05


def margins(report: dict) -> tuple[np.ndarray, np.ndarray]:
    rows = [r for r in report["per_length"] if r["margin"] is not None]
    return (np.array([r["length"] for r in rows], dtype=float),
            np.array([r["margin"] for r in rows], dtype=float))


def exponent(report: dict) -> float:
    """a of m_s ~ s^-a: least squares of log m_s on log s over s = 2..L_train (NaN if a
    margin is not positive)."""
    s, m = margins(report)
    keep = (s >= 2) & (s <= report["train_len"])
    if not (m[keep] > 0).all():
        return math.nan
    slope = np.polyfit(np.log(s[keep]), np.log(m[keep]), 1)[0]
    return float(-slope)


def s_margin_spread(report: dict) -> float:
    """max / min of s m_s over s = 2..L_train."""
    s, m = margins(report)
    keep = (s >= 2) & (s <= report["train_len"])
    sm = s[keep] * m[keep]
    return float(sm.max() / sm.min())


def attention_balance(report: dict) -> float:
    """The largest max_i |s w_i - 1| over s = 2..L_train: 0 for the balanced (uniform)
    attention the 2/s law assumes."""
    values = [r["uniformity"] for r in report["per_length"]
              if 2 <= r["length"] <= report["train_len"] and r["uniformity"] is not None]
    return max(values) if values else math.nan


def interval_text(values, level: float = 0.95) -> str:
    """'mean [low, high] (level t-interval, n)' of the finite values."""
    values = [v for v in values if math.isfinite(v)]
    mean, low, high = stats.t_interval(values, level)
    return f"{mean:.4g} [{low:.4g}, {high:.4g}] ({level:.0%} t-interval, n={len(values)})"


def none_two_over_s_tests(profile: str) -> Part | Outcome:
    target, margin = TWO_OVER_S_EXPONENT, TWO_OVER_S_MARGIN
    expected = f"a within {target:g} +- {margin:g} (TOST)"
    data, absent = placement_data(profile)
    if absent:
        return missing(absent, expected)
    tests, notes, measured, used = [], [], [], []
    for name, root, reps in data:
        reps = [r for r in reps if r["placement"] == "none"]
        used += reps
        a = by_seed(reps, "none", exponent)
        values = [a[k] for k in sorted(a)]
        v = reps[0]["vocab"]
        tests.append((f"v={v}: |a - {target:g}| < {margin:g}",
                      stats.equivalence_to(values, target, margin)))
        spread = by_seed(reps, "none", s_margin_spread)
        lam = by_seed(reps, "none", lambda r: r["theory_params"]["lambda"]
                      if r["theory_params"] else math.nan)
        balance = by_seed(reps, "none", attention_balance)
        measured.append(f"v={v}: a = {interval_text(values)}")
        notes += [f"v={v}: a {interval_text(values, 0.90)}: TOST at alpha 0.05 shows "
                  f"equivalence when this interval lies inside ({target - margin:g}, "
                  f"{target + margin:g})",
                  f"v={v}: s m_s max/min over s = 2..L_train {fmt(spread.values())}, fitted "
                  f"lambda (= s m_s) {fmt(lam.values())}; attention balance max_i |s w_i - 1| "
                  f"over s = 2..L_train {fmt(balance.values())} (the law's premise: 0)",
                  str(root)]
    return decide(tests, "; ".join(measured), expected,
                  notes + [setting(used, profile)], run_full(data[0][0]))


def power_law_deviation(r: dict) -> float:
    """The rival of attn_out's closed form: a free power law c s^-a (two parameters, least
    squares of log m_s on log s over s = 2..L_train), its largest relative deviation from the
    learned margins past L_train."""
    s, m = margins(r)
    ind, past = (s >= 2) & (s <= r["train_len"]), s > r["train_len"]
    if not (m[ind] > 0).all() or not past.any():
        return math.nan
    slope, intercept = np.polyfit(np.log(s[ind]), np.log(m[ind]), 1)
    law = np.exp(intercept + slope * np.log(s[past]))
    return float(np.max(np.abs(m[past] / law - 1.0)))


def attn_out_sweep_tests(name: str, reps: list[dict]) -> tuple[list, str, str]:
    """(tests, measured, note) of fit.attn_out.closed_form_band on one sweep's attn_out runs."""
    v = reps[0]["vocab"]
    dev = by_seed(reps, "attn_out", lambda r: r["ood_margin_deviation_max"])
    rival = by_seed(reps, "attn_out", power_law_deviation)
    seeds = sorted(dev)
    d, rv = [dev[k] for k in seeds], [rival[k] for k in seeds]
    bg = by_seed(reps, "attn_out", lambda r: r["theory_params"]["beta_g"]
                 / math.sqrt(r["d_model"]) if r["theory_params"] else math.nan)
    tests = [(f"{name} (v={v}): deviation < {ATTN_OUT_BAND}",
              stats.paired(d, [ATTN_OUT_BAND] * len(d), "less")),
             (f"{name} (v={v}): closed form closer than a free power law",
              stats.paired(d, rv, "less"))]
    measured = f"{name} (v={v}): max relative deviation past L_train {interval_text(d)}"
    note = (f"{name} (v={v}): free power law c s^-a fitted on s = 2..L_train deviates by "
            f"{interval_text(rv)}; fitted beta*g (per unit sqrt(d)) {fmt(bg.values())}")
    return tests, measured, note


def attn_out_band_tests(profile: str) -> Part | Outcome:
    from resharpen.experiments.training.config import check_profile

    expected = f"< {ATTN_OUT_BAND}, below a free power law's, on sweeps the band did not see"
    profile_name = check_profile(profile)
    tests, notes, measured, used, reported = [], [], [], [], []
    for name in attn_out_sweeps(profile_name):
        root = sweep_root(name, profile)
        if root is None:
            return missing(name, expected)
        reps = [r for r in reports(root) if r["placement"] == "attn_out"]
        used += reps
        mine, text, note = attn_out_sweep_tests(name, reps)
        tests += mine
        measured.append(text)
        notes += [note, str(root)]
    for name in attn_out_seen(profile_name):
        root = sweep_root(name, profile)
        if root is None:
            notes.append(f"{name}: not run (the v the band was set after; reported only)")
            continue
        reps = [r for r in reports(root) if r["placement"] == "attn_out"]
        mine, text, note = attn_out_sweep_tests(name, reps)
        reported += [(f"in-sample v, not deciding: {label}", result) for label, result in mine]
        notes += [f"in-sample v (the band was set after seeing v = 32 margins), reported only: "
                  f"{text}; {note}", str(root)]
    return decide(tests, "; ".join(measured), expected, notes + [setting(used, profile)],
                  run_full(attn_out_sweeps(profile_name)[0]), reported=reported)


POST_CLOSED_FORM_BAND = 0.25
"""fit.post.closed_form_weights: the largest relative deviation past L_train of the learned
margins from the closed form read off the weights. Fixed before the claim was run, as
attn_out's band (ATTN_OUT_BAND); the one v = 16 model inspected while the module was written is
named in docs/training.md."""


def post_closed_form_tests(profile: str) -> Part | Outcome:
    from resharpen.experiments.set_complement.effective_k import closed_form_row

    data, absent = placement_data(profile)
    if absent:
        return missing(absent, f"deviation < {POST_CLOSED_FORM_BAND}")
    tests, notes, measured, used = [], [], [], []
    for name, root, reps in data:
        reps = [r for r in reps if r["placement"] == "post" and r["fit_reached"]]
        used += reps
        rows = [closed_form_row(r) for r in reps]
        v = reps[0]["vocab"] if reps else "?"
        dev = [r["deviation"] for r in rows]
        tests.append((f"v={v}: deviation < {POST_CLOSED_FORM_BAND}",
                      stats.paired(dev, [POST_CLOSED_FORM_BAND] * len(dev), "less")))
        measured.append(f"v={v}: max relative deviation past L_train {fmt(dev)}")
        ratio = [x for r in rows for x in r["norm_ratio"]]
        notes += [
            f"v={v} per seed (deviation, mean signed m/theory - 1): "
            + ", ".join(f"{r['seed']}: {r['deviation']:.3g} ({r['signed']:+.3g})" for r in rows),
            f"v={v} readings of K: K = |c(EM)|/|c(E)| {fmt(r['K'] for r in rows)}; K_cross "
            f"(least squares c(E)M ~ K c(E)) {fmt(r['K_cross'] for r in rows)}, alignment "
            f"{fmt(r['alignment'] for r in rows)}; K_logit (lambda'/beta') "
            f"{fmt(r['K_logit'] for r in rows)} = K x readout gain "
            f"{fmt(r['readout_gain'] for r in rows)}; old residual-norm reading (medians, "
            f"uncentred) {fmt(r['K_norm_ratio'] for r in rows)}; margin-fitted K "
            f"{fmt(r['fitted_K'] for r in rows)}",
            f"v={v} assumptions past L_train: attention max |s w_i - 1| "
            f"{fmt(r['uniformity'] for r in rows)}, query share s w_s "
            f"{fmt(r['query_share'] for r in rows)} (theory 1 and 0); measured |r| / e|c(z)| "
            f"{min(ratio):.3g}..{max(ratio):.3g}; numerator alone (lemma form + uniform "
            f"attention, measured |r|) max deviation {fmt(r['numerator'] for r in rows)}; "
            f"min / mean non-query margin {fmt(r['min_vs_mean'] for r in rows)}; strict one-K "
            f"form (lambda = K beta) deviation {fmt(r['deviation_strict'] for r in rows)}; "
            f"lemma residual {fmt(r['relative_residual'] for r in rows)}", str(root)]
    return decide(tests, "; ".join(measured), f"< {POST_CLOSED_FORM_BAND}",
                  notes + [setting(used, profile)], run_full(data[0][0]))


K_SWEEP = "fit_post_k_sweep_v32"


def k_sweep_rows(root: Path) -> list[dict]:
    """One row per finished run of the K sweep: placement, attn_out_multiplier (the fixed
    factor on the attention output), attn_out_scale (W_O's init scale), seed, v, fit reached,
    raw ID / OOD invalid mass, and for post the readings of K off its raw weights
    (:func:`~resharpen.experiments.set_complement.effective_k.run_readings`, which include the
    multiplier)."""
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.set_complement.effective_k import run_readings

    rows = []
    for run in load_runs(root):
        config, summary = run["config"], run["summary"]
        row = {"placement": config["model"]["norm"], "scale": config["model"]["attn_out_scale"],
               "multiplier": config["model"].get("attn_out_multiplier", 1.0),
               "seed": config["train"]["seed"], "vocab": config["task"]["vocab"],
               "reached": bool(summary.get("fit_reached")),
               "id": summary["by_weights"]["raw"]["id_invalid_mass"],
               "ood": summary["by_weights"]["raw"]["ood_invalid_mass"]}
        if row["placement"] == "post":
            row.update(run_readings(run["folder"]))
        rows.append(row)
    return rows


def post_k_tests(profile: str) -> Part | Outcome:
    root = sweep_root(K_SWEEP, profile)
    if root is None:
        return missing(K_SWEEP, "post's OOD invalid mass falls with K")
    rows = k_sweep_rows(root)
    post = [r for r in rows if r["placement"] == "post" and r["reached"]]
    attn = {(r["multiplier"], r["scale"], r["seed"]): r for r in rows
            if r["placement"] == "attn_out" and r["reached"]}
    tests = [("post OOD vs K", stats.spearman([r["K"] for r in post], [r["ood"] for r in post],
                                              "less"))]
    reported = [
        ("post OOD vs K_logit (lambda'/beta')",
         stats.spearman([r["K_logit"] for r in post], [r["ood"] for r in post], "less")),
        ("post OOD vs K_cross (least squares c(E)M ~ K c(E))",
         stats.spearman([r["K_cross"] for r in post], [r["ood"] for r in post], "less"))]
    for c in sorted({r["multiplier"] for r in post}):  # the knob is not what orders them
        mine = [r for r in post if r["multiplier"] == c]
        reported.append((f"post OOD vs K within multiplier {c:g}",
                         stats.spearman([r["K"] for r in mine], [r["ood"] for r in mine],
                                        "less")))
    paired = [r for r in post if (r["multiplier"], r["scale"], r["seed"]) in attn]
    if attn:  # an attn_out arm at the same settings and seeds (the earlier sweep had one)
        reported += [
            ("gap post - attn_out (same setting and seed) vs K",
             stats.spearman([r["K"] for r in paired],
                            [r["ood"] - attn[(r["multiplier"], r["scale"], r["seed"])]["ood"]
                             for r in paired], "less")),
            ("attn_out OOD vs init scale (control, two-sided)",
             stats.spearman([k[1] for k in attn], [a["ood"] for a in attn.values()],
                            "two-sided"))]
    table = []
    for c, scale in sorted({(r["multiplier"], r["scale"]) for r in rows}):
        mine = [r for r in post if r["multiplier"] == c and r["scale"] == scale]
        ref = [a for k, a in attn.items() if k[:2] == (c, scale)]
        table.append(f"multiplier {c:g}, init scale {scale:g}: K {fmt(r['K'] for r in mine)}, "
                     f"post OOD {fmt(r['ood'] for r in mine)}"
                     + (f", attn_out OOD {fmt(a['ood'] for a in ref)}" if ref else "")
                     + f", K_cross {fmt(r['K_cross'] for r in mine)}, K_logit "
                       f"{fmt(r['K_logit'] for r in mine)}")
    seeds = sorted({r["seed"] for r in rows})
    reached = sum(r["reached"] for r in rows)
    ks = [r["K"] for r in post]
    return decide(tests, f"Spearman rho {tests[0][1].rho:+.3g}, p {tests[0][1].p:.3g} "
                         f"(n = {tests[0][1].n}, K {min(ks, default=math.nan):.3g}"
                         f"-{max(ks, default=math.nan):.3g})", "rho < 0", table + [
                      f"v = {sorted({r['vocab'] for r in rows})}, seeds {seeds[0]}..{seeds[-1]}, "
                      f"multipliers {sorted({r['multiplier'] for r in rows})} x init scales "
                      f"{sorted({r['scale'] for r in rows})}, profile {profile}"
                      + (" (quick: v = 16)" if profile == "quick" else "")
                      + f"; {reached}/{len(rows)} runs reached the fit (raw ID invalid mass "
                        "<= 1e-3)", str(root)], run_full(K_SWEEP), reported=reported)


NORMALIZED = schemes.names(output_norm=True, among=schemes.FIRST)
"""The placement sweeps' placements with a norm after the sublayer (post, attn_out, peri): the
statement's normalized readouts."""


def normalized_beat_none_tests(profile: str) -> Part | Outcome:
    data, absent = placement_data(profile)
    if absent:
        return missing(absent, "each normalized placement below none")
    tests, means, used = [], [], []
    for name, root, reps in data:
        used += reps
        v = reps[0]["vocab"]
        ood = {p: by_seed(reps, p, lambda r: r["ood_invalid_mass"])
               for p in ("none", "pre", *NORMALIZED)}
        tests += [(p, f"v={v}: {p} - none", stats.compare(ood[p], ood["none"], "less"))
                  for p in (*NORMALIZED, "pre")]
        means.append(f"v={v} raw OOD invalid mass: "
                     + ", ".join(f"{p} {fmt(ood[p].values())}" for p in ood) + f" ({root})")
    deciding = [(label, result) for p, label, result in tests if p != "pre"]
    return decide(deciding, "; ".join(f"{label} {result.mean_diff:+.3g}"
                                      for label, result in deciding), "each < 0",
                  means + [setting(used, profile)], run_full(data[0][0]),
                  reported=[(label, result) for p, label, result in tests if p == "pre"])


def lemma_residual_tests(profile: str) -> Part | Outcome:
    from resharpen.experiments.training.runs import measured as kept
    from resharpen.experiments.set_complement.compare import compare_run

    data, absent = placement_data(profile)
    if absent:
        return missing(absent, f"residual < {LEMMA_RESIDUAL_BOUND}")
    tests, notes, measured, used = [], [], [], []
    for name, root, reps in data:
        reps = [r for r in reps if r["placement"] == "none" and r["fit_reached"]]
        used += reps
        v = reps[0]["vocab"] if reps else "?"
        records = [kept(r["run"], "compare_raw", lambda run=r["run"]: compare_run(run, "raw"))
                   for r in reps]
        res = [c["relative_residual"] for c in records]
        tests.append((f"v={v}: residual < {LEMMA_RESIDUAL_BOUND}",
                      stats.paired(res, [LEMMA_RESIDUAL_BOUND] * len(res), "less")))
        lam = [c["lambda"]["mean"] for c in records]
        beta = [c["beta"]["mean"] for c in records]
        uni = [c["attention"]["uniformity_max"] for c in records]
        measured.append(f"v={v}: relative residual {fmt(res)}")
        notes += [f"v={v}: max {max(res) if res else math.nan:.3g}, mean fitted lambda "
                  f"{fmt(lam)}, mean fitted beta {fmt(beta)}, attention uniformity "
                  f"max_i |s w_i - 1| over s = 2..L_train {fmt(uni)}", str(root)]
    return decide(tests, "; ".join(measured), f"< {LEMMA_RESIDUAL_BOUND}",
                  notes + [setting(used, profile)], run_full(data[0][0]))


def dropout_ood_tests(profile: str) -> Part | Outcome:
    from resharpen.experiments.training.sweep import load_runs

    name = "fit_dropout_v32"
    root = sweep_root(name, profile)
    if root is None:
        return missing(name, "dropout 0.1 below 0")
    arms: dict[float, dict] = {0.0: {}, 0.1: {}}
    reached = {0.0: 0, 0.1: 0}
    total = 0
    for run in load_runs(root):
        rate, summary = run["config"]["model"]["attn_dropout"], run["summary"]
        total += 1
        if summary.get("fit_reached"):
            reached[rate] += 1
            arms[rate][run["config"]["train"]["seed"]] = \
                summary["by_weights"]["raw"]["ood_invalid_mass"]
    seeds = sorted(set(arms[0.0]) & set(arms[0.1]))
    tests = [("dropout 0.1 - 0", stats.paired([arms[0.1][k] for k in seeds],
                                              [arms[0.0][k] for k in seeds], "less"))]
    vocab = {run["config"]["task"]["vocab"] for run in load_runs(root)}
    return decide(tests, f"raw OOD invalid mass 0: {fmt(arms[0.0].values())}, 0.1: "
                         f"{fmt(arms[0.1].values())}", "dropout 0.1 lower", [
                      f"reached the fit: dropout 0 {reached[0.0]}, 0.1 {reached[0.1]} of {total}",
                      f"v = {sorted(vocab)}, seeds 0..7, profile {profile}"
                      + (" (quick: decided on the v = 16 quick sweep)" if profile == "quick"
                         else ""), str(root)], run_full(name))


# ----------------------------------------------------------------------------- OOD against fit
def ladder_sweeps(profile: str) -> tuple[str, ...]:
    """The sweeps of the OOD-against-fit comparison: the placements under two optimizer
    settings (AdamW lr 3e-3 with init 0.1; lr 1e-2 with init 0.02) at v = 32 and v = 64 (quick:
    the v = 32 files' v = 16 profiles)."""
    return pick(profile, quick=("fit_placements_v32", "fit_placements_v32_lr1e-2"),
                full=("fit_placements_v32", "fit_placements_v32_lr1e-2",
                      "fit_placements_v64", "fit_placements_v64_lr1e-2"))
LADDER_ARMS = tuple(p for p in schemes.FIRST if p != "none")
"""The normalized placements, each compared with none at every rung."""


def planned_window(name: str, profile: str) -> int:
    """``train.converge_window`` of sweep file ``name`` in ``profile`` (0: it stops at the fit)."""
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.set_complement.sweep import plan

    planned = plan(CONFIG_DIR / "set_complement" / f"{name}.toml", profile=profile)
    return max(c["train"].get("converge_window", 0) for c in planned["configs"])


def convergence_note(name: str, root: Path) -> str:
    """How many runs of a sweep trained on past the fit converged, per placement (or that the
    sweep has no convergence rule)."""
    from resharpen.experiments.training.sweep import load_runs

    counts: dict[str, list[int]] = {}
    for run in load_runs(root):
        done = run["summary"].get("converged")
        if done is None:
            continue
        tally = counts.setdefault(run["config"]["model"]["norm"], [0, 0])
        tally[0] += bool(done["converged"])
        tally[1] += 1
    if not counts:
        return f"{name}: no convergence rule (train.converge_window = 0), no converged rung"
    return (f"{name}: converged (ID invalid mass flat over the window) " + ", ".join(
        f"{p} {c}/{n}" for p, (c, n) in counts.items()))


def ood_at_rungs_tests(profile: str) -> Part | Outcome:
    """Each normalized placement against none at every rung both arms reach (a shared rung: at
    least one seed of each), in every sweep of :data:`LADDER_SWEEPS`: paired by the seeds that
    reached it in both arms, one-sided (the placement's OOD invalid mass lower). A comparison
    with fewer than :data:`stats.MIN_N` such seeds is made and undecided (p = 1 in Holm, so the
    claim is INCONCLUSIVE, not silently narrowed); the rungs each arm reached, with n, and the
    rungs not shared are in the detail."""
    expected = "< 0 at every rung and setting, Holm-adjusted p < 0.05"
    tests, detail, curves, unshared = [], [], [], []
    for name in ladder_sweeps(profile):
        root = sweep_root(name, profile)
        if root is None:
            return missing(name, expected)
        rows = ladder_rows(root)
        if not rows:
            return Outcome("no fit ladder", expected, passed=False,
                           inconclusive=f"{root} holds runs without a fit ladder (made before "
                                        "it existed): rerun the sweep into a new folder")
        note = convergence_note(name, root)
        if planned_window(name, profile) and "no convergence rule" in note:
            return Outcome("no convergence point", expected, passed=False,
                           inconclusive=f"{root} was run before its file set "
                                        "train.converge_window (no summary.converged): move it "
                                        f"away and {run_full(name)}")
        rungs = rung_order(r["rung"] for r in rows)
        reached = reached_rungs(rows)
        for rung in rungs:
            at = {(r["placement"], r["seed"]): r["ood"] for r in rows if r["rung"] == rung}
            none = {seed: v for (p, seed), v in at.items() if p == "none"}
            curves.append(f"{name} rung {rung_label(rung)}: " + ", ".join(
                f"{p} {fmt(v for (q, _), v in at.items() if q == p)}"
                for p in ("none",) + LADDER_ARMS))
            for arm in LADDER_ARMS:
                mine = {seed: v for (p, seed), v in at.items() if p == arm}
                shared = set(mine) & set(none)
                if not mine or not none:
                    unshared.append(f"{name} {rung_label(rung)} {arm} (none {len(none)}, "
                                    f"{arm} {len(mine)} seeds)")
                    continue
                tests.append((f"{name} rung {rung_label(rung)}: {arm} - none (n={len(shared)})",
                              stats.compare({k: mine[k] for k in shared},
                                            {k: none[k] for k in shared}, "less")))
        detail.append(f"{root}: {len({(r['placement'], r['seed']) for r in rows})} runs; seeds "
                      "that reached each rung: " + "; ".join(
                          f"{rung_label(g)}: " + ", ".join(
                              f"{p} {len(reached[g].get(p, ()))}" for p in ("none",) + LADDER_ARMS)
                          for g in rungs) + "; " + note)
    if not tests:
        return Outcome("no rung reached by both arms", expected, passed=False,
                       inconclusive="no rung reached by a seed of both arms")
    worst = max((t for t in tests if math.isfinite(t[1].mean_diff)), default=tests[0],
                key=lambda t: t[1].mean_diff)
    few = sum(bool(result.inconclusive) for _, result in tests)
    return decide(tests, f"{len(tests)} (sweep, rung, placement) comparisons at shared rungs "
                         f"({few} with n < {stats.MIN_N}: undecided); the least favourable "
                         f"{worst[0]} {worst[1].mean_diff:+.3g}", expected,
                  detail + curves + [f"not shared (not compared): {', '.join(unshared)}"
                                     if unshared else "every rung shared by every arm"],
                  "more seeds, or the full profile's sweeps (`resharpen sweep experiments/"
                  "configs/set_complement/fit_placements_v32_lr1e-2.toml --workers 2`)")
