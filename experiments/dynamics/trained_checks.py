"""The predictions of arXiv 2510.22026 and arXiv 2608.09417 held against the trained set of
:mod:`resharpen.experiments.dynamics.trained`, each a function of the runs and of ``when``
("init": every run at initialization; "trained": the runs that reached the fit), returning an
:class:`~resharpen.experiments.ledger.Outcome`. The ``dyn.trained.*`` claims call them.

Comparisons across schemes pair runs by (task, depth, seed) and use the ledger's tests
(:func:`resharpen.experiments.ledger.stats.compare`: paired t where the arms share their units,
Welch otherwise; fewer than ``stats.MIN_N`` units: inconclusive), Holm-adjusted within a claim.

* :func:`first_layer_order` (Thm 4.2): Peri-LN and nGPT move tokens in the first layer by an
  amount of order one, Post-LN and Pre-LN by O(sqrt(log n / n) + log n / d); tested as a rank
  order with the gap the theorem gives, fixed before measuring (:func:`order_factor`):
  log disp(fast) - log disp(slow) > log G(n, d) for every pair (fast in {peri, ngpt}, slow in
  {post, pre}), G from the theorem's Monte Carlo at the units' own n and d.
* :func:`terminal_order` (Thm 4.1, 4.3): near consensus 1 - cos decays exponentially in depth
  under Post-LN, polynomially under Pre-LN, Mix-LN and Peri-LN, so Post-LN is the fastest in
  the long run. A layer is not a unit of the theory's time (it differs between schemes), so the
  rates are not compared; their change is, which no time unit alters: the deceleration D = r_2
  / r_1 of the per-layer decay rate of 1 - cos between the two halves of the pair's common
  terminal window (:func:`deceleration`; exponential D = 1, polynomial D < 1): D(post) > D(X)
  for X in {pre, mixln, peri}, paired by (task, depth, seed) on the same layers, Holm.
* :func:`preln_norm_growth` (Thm 4.3(i), r ~ t): Pre-LN's residual norm grows with depth with
  exponent 1; the exponent is the least-squares slope of log r_j on log j (j >= 1,
  :func:`resharpen.experiments.dynamics.random_stacks.norm_growth_exponent`); PASS when the 95%
  t-interval of the mean over runs lies in [0.75, 1.25], FAIL when it lies outside it.
* :func:`recursion_at_init` (arXiv 2608.09417, Stage I): at initialization the per-layer t_sim
  of Post-LN and Pre-LN models follows t <- t + Delta_attn(s_l, t) with the model's own
  s = |sum_h W_V^h W_O^h|_F^2 / d (Post-LN: the mean over the layers it runs; Pre-LN: times
  n d / |X_0|_F^2, the recursion tracking the norm) and initial t (Post-LN: after block 0,
  whose input is the raw embedding; Pre-LN: x_0), within 0.05 at every layer (the tolerance of
  ``collapse.stack_post_*``) on average over the models of a (scheme, task, depth). The
  recursion is a statement about that mean; the models scatter about it, so each layer's mean
  gap is a TOST against +-0.05 with the models as the units (:func:`recursion_tests`), Holm
  over every layer of every group: PASS when every layer is shown within, FAIL when one is
  shown outside, INCONCLUSIVE when the seeds cannot tell (too few models for the scatter).
* :func:`backward_gain_high_similarity` (Theorem 3.6): in layers whose input similarity is
  high (mean pairwise cosine >= 0.9), every Post-LN norm's backward gain is < 1; fewer than 5
  such norms: inconclusive, naming the highest similarity a Post-LN layer reached.

**Premises first.** Each check measures the premise of the statement it tests before the
statement, and decides only on runs (or units, or groups) inside it; what is outside is reported
with its measured premise value and cannot PASS or FAIL the claim (INCONCLUSIVE when nothing is
left). The premises, fixed before measuring:

* Thm 4.2 (:func:`first_layer_order`): tokens of radius 1 in the units of the sphere the
  scheme's norm projects to (sqrt(d) for RMSNorm, 1 for nGPT): |x_0| / R in
  :data:`TOKEN_RADIUS_BAND` (a factor 2 either way) for both schemes of a pair.
* Thm 4.1, 4.3's terminal rates (:func:`terminal_order`): statements about t -> infinity,
  near consensus: both stacks of a pair stay at a mean pairwise cosine >=
  :data:`TERMINAL_COSINE` over a common window of at least :data:`TERMINAL_LAYERS` layers
  resolved in float64 (Mix-LN: after its Post-LN layers), and 1 - cos at least halves over the
  first half of that window in both (a plateau is not a terminal decay).
* Thm 4.3(i)'s r ~ t (:func:`preln_norm_growth`): the growth dominates the initial radius,
  r_L - r_0 >= :data:`GROWTH_OVER_OFFSET` x r_0 (an offset r_0 lowers the fitted exponent of
  exact linear growth r_j = r_0 + c j over j = 1..4 to 0.90 at that ratio, to 0.82 at 10 and
  to 0.33 at 1).
* Stage I's recursion (:func:`recursion_at_init`): the measured t_sim rises by more than the
  tolerance over the stack (else a constant prediction would pass: the group has no teeth).
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from resharpen.experiments.dynamics.random_stacks import norm_growth_exponent
from resharpen.experiments.dynamics.trained import (by_unit, first_layer_displacement, select,
                                                    thm42_bound)
from resharpen.experiments.ledger import Outcome, stats
from resharpen.experiments.model.schemes import by_dynamics_name
from resharpen.theory.collapse.recursion import recursion
from resharpen.theory.dynamics.schemes import (FIRST_LAYER_FAST, FIRST_LAYER_SLOW,
                                               TERMINAL_FASTEST, TERMINAL_SLOWER)


@cache
def order_factor(n: int, d: int) -> float:
    """Thm 4.2's first-layer gap G(n, d) = mean |PA|/|A| / max_j |A_j(0)|, fixed before the
    trained models are measured: Post-LN and Pre-LN tokens (radius 1) move at speed <= |A_j|,
    Peri-LN and nGPT at |PA|/|A|, so the fast/slow ratio is at least G. Both numbers come from
    the theorem's Monte Carlo (:func:`~resharpen.experiments.dynamics.initial_velocity.
    initial_velocity_grid`: beta = 1, Q = K = V = I, uniform tokens, seeds 0..2) at the trained
    set's own n (tokens per sequence) and d: G = 2.25 at n = 16, d = 32 (quick) and 4.44 at
    n = 32, d = 64 (full). The proved constant C = 128 would give a gap 1/(C (sqrt(log n/n) +
    log n/d)) of 0.016-0.020, below 1, which no ordering can use."""
    from resharpen.experiments.dynamics.initial_velocity import initial_velocity_grid

    (_, _, ratio, projection), = initial_velocity_grid([(n, d)])
    return projection / (ratio * thm42_bound(n, d))

HIGH_SIMILARITY = 0.9
RECURSION_TOL = 0.05
GROWTH_BAND = (0.75, 1.25)
MIN_NORMS = 5
TOKEN_RADIUS_BAND = (0.5, 2.0)
"""Thm 4.2's premise: |x_0| / R (R the radius the scheme's norm projects to) within a factor 2
of 1."""
TERMINAL_COSINE = 0.9
"""The terminal rates' premise: a stack stays at a mean pairwise cosine at least this (near
consensus; the same threshold as the high similarity of Theorem 3.6's check) ..."""
TERMINAL_LAYERS = 8
"""... for at least this many layers, so that each half of the window fits a rate on 4."""
TERMINAL_FLOOR = 1e-12
"""The smallest 1 - cos read as dynamics: float64 rounds a cosine near 1 to about 1e-16, and a
mean over pairs a few orders above that."""
GROWTH_OVER_OFFSET = 20.0
"""r ~ t's premise: the residual norm grows by at least this many times its initial radius."""


def _mean(values) -> float:
    values = [v for v in values if math.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def _decide(tests: list[tuple[str, stats.Comparison]], name: str) -> tuple[bool, str, str]:
    fam = stats.family([(name, label, result) for label, result in tests])[name]
    passed, why = stats.verdict(fam)
    return passed, why, "; ".join(t.describe() for t in fam)


def set_note(runs: list[dict], when: str = "init") -> str:
    """The initialization of the premise sets among ``runs`` (:mod:`.premise_sets`) measured
    ``when``, "" for the trained set's runs."""
    from resharpen.experiments.dynamics.premise_sets import SETS

    trained = when == "trained"
    names = sorted({r["premise_set"] for r in runs if r.get("premise_set")})
    return "; ".join(f"premise set {n}{', trained' if trained else ''}, built for "
                     f"{SETS[n].premise} ({SETS[n].describe(trained)})" for n in names)


def _runs_note(runs: list[dict], when: str) -> str:
    built = set_note(runs, when)
    return (f"{len(runs)} runs at init" if when == "init" else
            f"{len(runs)} runs that reached the fit") + (f" ({built})" if built else "")


def token_radius(m: dict, scheme: str) -> float:
    """|x_0| in units of the radius R the scheme's norm projects tokens to: sqrt(d) for RMSNorm,
    1 for nGPT's unit sphere. Thm 4.2's tokens have radius 1 in those units."""
    return m["r"][0] / (1.0 if scheme == "ngpt" else math.sqrt(m["d_model"]))


def premise_units(sel: list[dict], schemes, value, low: float, high: float = math.inf):
    """Per scheme, ({unit: premise value}, the units whose value lies in [low, high])."""
    values = {s: by_unit(sel, s, lambda m, s=s: value(m, s)) for s in schemes}
    return values, {s: {k for k, v in vs.items() if low <= v <= high}
                    for s, vs in values.items()}


def premise_text(name: str, values: dict, inside: dict) -> str:
    """'premise NAME: met by <scheme> i/n units (measured lo-hi), ...'."""
    parts = []
    for s, vs in values.items():
        got = [v for v in vs.values() if math.isfinite(v)]
        span = f"{min(got):.3g}-{max(got):.3g}" if got else "-"
        parts.append(f"{s} {len(inside[s])}/{len(vs)} (measured {span})")
    return f"premise {name}: met by " + ", ".join(parts)


def _with_premise(passed: bool, why: str, excluded: bool, premise: str) -> tuple[bool, str]:
    """A claim with units outside its premise cannot PASS: it is INCONCLUSIVE (naming the
    premise) unless a test inside the premise FAILs it."""
    if not excluded or (not passed and not why):
        return passed, why
    return False, f"outside the statement's premise ({premise}); " + (why or "the units inside it agree")


def trained_names(dynamics_names) -> tuple[str, ...]:
    """The registry's names of schemes the dynamics paper calls ``dynamics_names``."""
    return tuple(by_dynamics_name(n).name for n in dynamics_names)


def first_layer_order(runs: list[dict], when: str) -> Outcome:
    fast_schemes, slow_schemes = trained_names(FIRST_LAYER_FAST), trained_names(FIRST_LAYER_SLOW)
    sel = select(runs, when, fast_schemes + slow_schemes)
    disp = {s: by_unit(sel, s, first_layer_displacement) for s in fast_schemes + slow_schemes}
    radius, inside = premise_units(sel, disp, token_radius, *TOKEN_RADIUS_BAND)
    premise = premise_text(f"(Thm 4.2, tokens of radius 1: |x_0|/R in {list(TOKEN_RADIUS_BAND)})",
                           radius, inside)
    sizes = sorted({(r["m"]["n_tokens"], r["m"]["d_model"]) for r in sel})
    gap = {size: order_factor(*size) for size in sizes}
    unit_gap = {s: by_unit(sel, s, lambda m: gap[(m["n_tokens"], m["d_model"])])
                for s in fast_schemes}
    gaps = "/".join(f"{g:.3g}" for g in gap.values())
    tests = []
    for fast in fast_schemes:
        for slow in slow_schemes:
            both = inside[fast] & inside[slow]
            a = {k: math.log(v) - math.log(unit_gap[fast][k]) for k, v in disp[fast].items()
                 if v > 0 and k in both}
            b = {k: math.log(v) for k, v in disp[slow].items() if v > 0 and k in both}
            tests.append((f"{fast} > G x {slow}, G = {gaps} (units inside the premise)",
                          stats.compare(a, b, "greater")))
    passed, why, detail = _decide(tests, "first_layer_order")
    excluded = any(len(inside[s]) < len(radius[s]) for s in radius)
    passed, why = _with_premise(passed, why, excluded, premise)
    means = {s: _mean(v.values()) for s, v in disp.items()}
    bound = "; ".join(f"Thm 4.2 order sqrt(log n/n) + log n/d = {thm42_bound(n, d):.3g}, gap "
                      f"G = {gap[(n, d)]:.3g} (n={n}, d={d}; Monte Carlo, beta = 1)"
                      for n, d in sizes)
    measured = ", ".join(f"{s} {v:.3g}" for s, v in means.items())
    return Outcome(measured=f"first-layer displacement (rad): {measured}",
                   expected=f"{', '.join(fast_schemes)} >= G x {', '.join(slow_schemes)}, "
                            f"G = {gaps or 'none (no runs)'} (Thm 4.2's gap)",
                   passed=passed, detail=f"{_runs_note(sel, when)}; {premise}; {bound}; {detail}",
                   inconclusive=why)


def terminal_window(cos, first: int = 1) -> tuple[int, int] | None:
    """(start, stop) of a stack's terminal regime, layers start..stop: from the first layer
    j >= ``first`` after which the mean pairwise cosine stays >= :data:`TERMINAL_COSINE`, to the
    layer before the first one (from there on) whose 1 - cos_j is below :data:`TERMINAL_FLOOR`
    (where float64 rounding of the cosine, not the dynamics, sets 1 - cos; a cosine of 1 or
    more is below it); None when the stack ends below the threshold or the window is empty."""
    gap = 1.0 - np.asarray(cos, dtype=float)
    near = gap <= 1.0 - TERMINAL_COSINE
    if len(gap) <= first or not near[-1]:
        return None
    below = np.nonzero(~near[first:])[0]
    start = first + (int(below[-1]) + 1 if len(below) else 0)
    floor = np.nonzero(~(gap[start:] >= TERMINAL_FLOOR))[0]
    stop = start + int(floor[0]) - 1 if len(floor) else len(gap) - 1
    return (start, stop) if stop >= start else None


def first_terminal_layer(scheme: str, n_layers: int) -> int:
    """The first layer whose state the terminal regime of ``scheme`` may start at: 1 (after the
    first block), and for Mix-LN the state after its Post-LN layers
    (:func:`~resharpen.experiments.model.schemes.mixln_post_layers`), from which on it is a
    Pre-LN stack, the scheme the theory's Mix-LN terminal rate is."""
    from resharpen.experiments.model.schemes import mixln_post_layers

    return mixln_post_layers(n_layers) if scheme == "mixln" else 1


def pair_window(a: dict, b: dict, scheme_a: str, scheme_b: str) -> np.ndarray:
    """The layers both stacks of a pair are in their terminal regime (:func:`terminal_window`,
    each from its :func:`first_terminal_layer`): the later start to the earlier stop; empty when
    either has none."""
    windows = [terminal_window(m["cos"], first_terminal_layer(s, len(m["cos"]) - 1))
               for m, s in ((a, scheme_a), (b, scheme_b))]
    if None in windows:
        return np.arange(0)
    return np.arange(max(w[0] for w in windows), min(w[1] for w in windows) + 1)


def decay_rates(cos, window: np.ndarray) -> tuple[float, float]:
    """(r_1, r_2): minus the least-squares slope of log(1 - cos_j) on the layer j over the first
    and the second half of ``window`` (NaN when it has fewer than :data:`TERMINAL_LAYERS`
    layers)."""
    if len(window) < TERMINAL_LAYERS:
        return math.nan, math.nan
    gap = np.log(1.0 - np.asarray(cos, dtype=float)[window])
    half = len(window) // 2
    return tuple(-float(np.polyfit(window[part], gap[part], 1)[0])
                 for part in (slice(0, half), slice(half, None)))


def decaying(cos, window: np.ndarray) -> bool:
    """Whether 1 - cos is decaying over the first half of ``window``: its fitted rate r_1 takes
    at least a factor 2 off 1 - cos across that half, r_1 (h - 1) >= log 2 (h: the half's
    layers). A plateau (the rate near 0) is not a terminal decay, and a ratio r_2 / r_1 over a
    rate near 0 measures noise."""
    r1, _ = decay_rates(cos, window)
    return bool(r1 * (len(window) // 2 - 1) >= math.log(2.0))


def deceleration(cos, window: np.ndarray) -> float:
    """D = r_2 / r_1 (:func:`decay_rates`) over ``window``: how the per-layer rate at which
    1 - cos shrinks changes. An exponential decay (Post-LN's e^{-2t}) keeps it, D = 1, whatever
    a layer is in the theory's time; a polynomial one (1 - gamma ~ t^{-2}: Pre-LN, Mix-LN,
    Peri-LN) slows down, D < 1. (The mean cosine over a batch mixes decays of different rates,
    which slows the mean's decay a little: D of an exponential per sequence reads slightly
    below 1.) NaN when the window is too short."""
    r1, r2 = decay_rates(cos, window)
    return r2 / r1 if r1 > 0 else math.nan


def terminal_pairs(sel: list[dict], fastest: str, other: str) -> dict:
    """Per unit (task, depth, seed) that both schemes ran: {"window": its common terminal window
    (:func:`pair_window`), "inside": whether it has at least :data:`TERMINAL_LAYERS` layers and
    both stacks decay over its first half (:func:`decaying`), "d": (D of ``fastest``, D of
    ``other``) over it}."""
    stacks = {s: by_unit(sel, s, lambda m: m) for s in (fastest, other)}
    out = {}
    for unit in sorted(set(stacks[fastest]) & set(stacks[other])):
        a, b = stacks[fastest][unit], stacks[other][unit]
        window = pair_window(a, b, fastest, other)
        inside = len(window) >= TERMINAL_LAYERS and decaying(a["cos"], window) \
            and decaying(b["cos"], window)
        out[unit] = {"window": window, "inside": inside,
                     "d": (deceleration(a["cos"], window), deceleration(b["cos"], window))}
    return out


def terminal_order(runs: list[dict], when: str) -> Outcome:
    fastest, slower = by_dynamics_name(TERMINAL_FASTEST).name, trained_names(TERMINAL_SLOWER)
    sel = select(runs, when, (fastest,) + slower)
    tests, notes, excluded = [], [], False
    for other in slower:
        pairs = terminal_pairs(sel, fastest, other)
        inside = {u: p for u, p in pairs.items() if p["inside"]}
        excluded |= len(inside) < len(pairs)
        short = sum(len(p["window"]) < TERMINAL_LAYERS for p in pairs.values())
        spans = [len(p["window"]) for p in inside.values()]
        means = (f"D {fastest} {_mean(p['d'][0] for p in inside.values()):.3g} against "
                 f"{_mean(p['d'][1] for p in inside.values()):.3g}, windows of "
                 f"{min(spans)}-{max(spans)} layers") if inside else "no pair inside"
        notes.append(f"{other}: {len(inside)}/{len(pairs)} pairs inside ({short} with a common "
                     f"window under {TERMINAL_LAYERS} layers, {len(pairs) - len(inside) - short} "
                     "where a stack's 1 - cos does not halve over the first half), " + means)
        tests.append((f"D({fastest}) > D({other}) (pairs inside the premise)",
                      stats.compare({u: p["d"][0] for u, p in inside.items()},
                                    {u: p["d"][1] for u, p in inside.items()}, "greater")))
    passed, why, detail = _decide(tests, "terminal_order")
    premise = (f"premise (terminal rates, t -> infinity: a common window of at least "
               f"{TERMINAL_LAYERS} layers where both stacks stay at cosine >= "
               f"{TERMINAL_COSINE:g} (Mix-LN: after its Post-LN layers) with 1 - cos >= "
               f"{TERMINAL_FLOOR:g}, and 1 - cos at least halving over its first half in both)")
    passed, why = _with_premise(passed, why, excluded, premise)
    return Outcome(measured="deceleration D = r_2/r_1 of 1 - cos over each pair's common "
                            "terminal window: " + "; ".join(notes),
                   expected=f"D({fastest}) > D({', '.join(slower)}) (exponential: D = 1; "
                            "polynomial: D < 1)", passed=passed,
                   detail=f"{_runs_note(sel, when)}; {premise}; {detail}", inconclusive=why)


def growth_exponents(runs: list[dict], when: str) -> list[float]:
    """The Pre-LN runs' norm-growth exponents (slope of log r_j on log j, j >= 1)."""
    return [norm_growth_exponent(np.asarray(r["m"]["r"]), first=1)
            for r in select(runs, when, ("pre",))]


def growth_over_offset(m: dict) -> float:
    """(r_L - r_0) / r_0: how many times its initial radius the residual norm grows."""
    return (m["r"][-1] - m["r"][0]) / m["r"][0]


def preln_norm_growth(runs: list[dict], when: str) -> Outcome:
    from scipy import stats as sstats

    pre = select(runs, when, ("pre",))
    ratios = [growth_over_offset(r["m"]) for r in pre]
    premise = (f"premise (r ~ t is asymptotic: r_L - r_0 >= {GROWTH_OVER_OFFSET:g} r_0): met by "
               f"{sum(q >= GROWTH_OVER_OFFSET for q in ratios)}/{len(ratios)} Pre-LN runs"
               + (f", (r_L - r_0)/r_0 = {min(ratios):.3g}-{max(ratios):.3g} over "
                  f"{sorted({r['depth'] for r in pre})} layers" if ratios else ""))
    e = np.asarray([x for x, q in zip(growth_exponents(runs, when), ratios)
                    if q >= GROWTH_OVER_OFFSET])
    lo, hi = GROWTH_BAND
    if len(e) < 3:
        return Outcome(measured=f"{len(e)} Pre-LN runs inside the premise", expected="exponent 1",
                       passed=False, detail=premise,
                       inconclusive=f"{len(e)} Pre-LN runs ({when}) inside the premise, at least 3 "
                                    "are needed: the norm has not left its initial "
                                    "radius, the regime before r ~ t; deeper stacks or a smaller "
                                    "embedding decide")
    mean, se = float(e.mean()), float(e.std(ddof=1) / math.sqrt(len(e)))
    half = float(sstats.t.ppf(0.975, len(e) - 1)) * se
    inside, outside = lo <= mean - half and mean + half <= hi, mean + half < lo or mean - half > hi
    why = "" if inside or outside else (
        f"the 95% interval [{mean - half:.3g}, {mean + half:.3g}] overlaps the band's edge")
    built = set_note(pre)
    return Outcome(measured=f"exponent {mean:.3f} +- {half:.3f} (95% t, n={len(e)}); range "
                            f"[{e.min():.3f}, {e.max():.3f}]",
                   expected=f"1 (r ~ t): interval within [{lo}, {hi}]", passed=inside,
                   detail=(f"{built}; " if built else "")
                   + f"{premise}; random-stack exponent ~0.55 (dyn.stack.preln_norm) for "
                     "contrast", inconclusive=why)


def model_s(m: dict, placement: str, d: int, n: int) -> float:
    """arXiv 2608.09417's s of a model at init: mean over the layers the recursion runs of
    |W_l|_F^2 / d (Post-LN: layers 1.., each seeing |X|_F^2 = n d after its RMSNorm; Pre-LN:
    every layer, times n d / |X_0|_F^2)."""
    frob = np.asarray(m["value_frob2"]) / d
    if placement == "post":
        return float(frob[1:].mean())
    return float(frob.mean() * n * d / (n * m["r2"][0]))


def recursion_gaps(runs: list[dict]) -> list[dict]:
    """Per (scheme, task, depth) of the Post-LN and Pre-LN models at init: each model's gap
    curve e_j = t_j(recursion) - t_sim_j (the recursion run from the model's own s and initial
    t, so e_0 = 0), and over the models the mean measured t_sim, the mean prediction, the
    largest |mean gap| and the rise of the mean measured t_sim."""
    out = []
    sel = select(runs, "init", ("post", "pre"))
    for scheme in ("post", "pre"):
        for task, depth in sorted({(r["task"], r["depth"]) for r in sel if r["scheme"] == scheme}):
            group = [r["m"] for r in sel if (r["scheme"], r["task"], r["depth"]) ==
                     (scheme, task, depth)]
            n = int(group[0]["n_tokens"])
            start = 1 if scheme == "post" else 0
            measured = np.asarray([m["t_sim"][start:] for m in group], dtype=float)
            s = [model_s(m, scheme, m["d_model"], n) for m in group]
            t0 = [float(min(max(t[0], 1.0 / n), 1.0 - 1e-9)) for t in measured]
            predicted = np.asarray([recursion(n, depth - start, t, si, scheme)["t"]
                                    for t, si in zip(t0, s)])
            gaps = predicted - measured
            mean_gap = gaps.mean(axis=0)
            out.append({"scheme": scheme, "task": task, "depth": depth, "n": n,
                        "models": len(group), "s": float(np.mean(s)), "t0": float(np.mean(t0)),
                        "measured": measured.mean(axis=0).tolist(),
                        "predicted": predicted.mean(axis=0).tolist(),
                        "gaps": gaps.tolist(), "gap": float(np.max(np.abs(mean_gap))),
                        "rise": float(measured.mean(axis=0)[-1] - measured.mean(axis=0)[0])})
    return out


def recursion_tests(row: dict) -> list[tuple[str, stats.Equivalence]]:
    """One TOST per layer after the start (j >= 1) of a group: the mean over its models of the
    gap e_j lies within +-:data:`RECURSION_TOL` (``stats.equivalence_to``, the models as the
    units; fewer than ``stats.MIN_N`` models: inconclusive)."""
    gaps = np.asarray(row["gaps"])
    return [(f"{row['scheme']} {row['task']} L={row['depth']} layer {j}",
             stats.equivalence_to(gaps[:, j], 0.0, RECURSION_TOL))
            for j in range(1, gaps.shape[1])]


def _group_text(row: dict, tests: list) -> str:
    """A group's models, s, t0 and its worst layer: the mean gap with its 95% t interval."""
    gaps = np.asarray(row["gaps"])
    j = 1 + int(np.argmax(np.nan_to_num(np.abs(gaps[:, 1:].mean(axis=0)), nan=-1.0)))
    mean, lo, hi = stats.t_interval(gaps[:, j])
    interval = f"95% t [{lo:+.3g}, {hi:+.3g}]" if math.isfinite(lo) else "one model: no interval"
    inside = sum(t.adjusted_p < stats.ALPHA for t in tests)
    outside = sum(t.adjusted_opposite < stats.ALPHA for t in tests)
    return (f"{row['scheme']} {row['task']} L={row['depth']} ({row['models']} models, s="
            f"{row['s']:.3g}, t0={row['t0']:.3g}, rise {row['rise']:+.3g}): largest mean gap "
            f"{mean:+.3g} at layer {j} ({interval}); layers shown within "
            f"+-{RECURSION_TOL:g}: {inside}/{len(tests)}, shown outside: {outside}")


def recursion_at_init(runs: list[dict]) -> Outcome:
    rows = recursion_gaps(runs)
    if not rows:
        return Outcome(measured="no models", expected=f"gap <= {RECURSION_TOL}", passed=False,
                       inconclusive="no Post-LN or Pre-LN model in the set")
    teeth = [r for r in rows if abs(r["rise"]) > RECURSION_TOL]
    idle = [f"{r['scheme']} {r['task']} L={r['depth']} (rise {r['rise']:+.3g})" for r in rows
            if r not in teeth]
    labelled = [(r, recursion_tests(r)) for r in teeth]
    fam = stats.family([("recursion", label, result) for _, tests in labelled
                        for label, result in tests]).get("recursion", [])
    passed, why = stats.verdict(fam) if fam else (False, "no group inside the premise")
    if why and fam:  # one line, not one per layer
        within = sum(t.adjusted_p < stats.ALPHA for t in fam)
        short = sum(bool(getattr(t.result, "inconclusive", "")) for t in fam)
        why = (f"of {len(fam)} layer tests, {within} show the mean gap within "
               f"+-{RECURSION_TOL:g} after Holm over all {len(fam)} and none shows it outside"
               + (f"; {short} cannot be tested (fewer than {stats.MIN_N} models, or no "
                  "scatter)" if short else "")
               + "; the others are not shown either way at that level: more models per group "
                 "shrink the scatter of the mean gap, unless it sits at the tolerance itself")
    by_label = {t.label: t for t in fam}
    text = "; ".join(_group_text(r, [by_label[label] for label, _ in tests])
                     for r, tests in labelled)
    premise = (f"premise (t_sim rises by more than the tolerance {RECURSION_TOL}, else a constant "
               f"prediction passes): met by {len(teeth)}/{len(rows)} groups"
               + (f"; not deciding: {', '.join(idle)}" if idle else ""))
    passed, why = _with_premise(passed, why, bool(idle), premise)
    worst = max((r["gap"] for r in teeth), default=None)
    return Outcome(measured=f"largest |mean gap| {worst:.3g} over the {len(teeth)} groups inside "
                            "the premise" if teeth else "no group inside the premise",
                   expected=f"within +-{RECURSION_TOL} at every layer (TOST per layer, Holm)",
                   passed=passed,
                   detail="; ".join(filter(None, [set_note(select(runs, "init", ("post", "pre"))),
                                                   premise, text])),
                   inconclusive=why)


def post_norm_gains(runs: list[dict], when: str,
                    fitted_only: bool = True) -> list[tuple[float, float]]:
    """(input similarity cos_j, backward gain) of every Post-LN norm (post, and mixln's Post-LN
    layers) of the selected runs (:func:`~.trained.select`)."""
    return [pair for r in select(runs, when, ("post", "mixln"), fitted_only)
            for pair in measured_gains(r["m"])]


def measured_gains(m: dict) -> list[tuple[float, float]]:
    """(input similarity cos_j, backward gain) of every Post-LN norm of one measurement."""
    return [(m["cos"][j], g["gain"]) for j, gains in enumerate(m["gains"] or [])
            for g in gains if g["post"]]


def backward_gain_high_similarity(runs: list[dict], when: str) -> Outcome:
    """Theorem 3.6 on every Post-LN norm of ``runs`` at init, or trained: every run trained to
    its end, whether or not it reached the fit. The statement is about the weights' geometry
    (a norm whose input tokens are nearly parallel), not about the task: a stack collapsed in
    training is its case (the paper's Stage II), whether it fits or not. Trained, the detail
    names each run, whether it reached the fit and how many of its norms qualify, so that a
    reader sees which models decided."""
    pairs = post_norm_gains(runs, when, fitted_only=False)
    chosen = select(runs, when, ("post", "mixln"), fitted_only=False)
    read = ""
    if when == "trained":
        fitted = {(r["task"], r["scheme"], r["seed"]) for r in runs if r["fit_reached"]}
        read = f"{len(chosen)} runs trained to their end: " + ", ".join(
            f"{r['scheme']} {r['task']} s{r['seed']} ("
            f"{'at the fit' if (r['task'], r['scheme'], r['seed']) in fitted else 'not at the fit'}, "
            f"{sum(c >= HIGH_SIMILARITY for c, _ in measured_gains(r['m']))} qualifying norms)"
            for r in chosen)
    high = [g for c, g in pairs if c >= HIGH_SIMILARITY]
    low = [g for c, g in pairs if c < HIGH_SIMILARITY]
    low_text = (f"; below it: {len(low)} norms, median gain {np.median(low):.3g}, "
                f"{np.mean(np.asarray(low) < 1):.0%} < 1") if low else ""
    if len(high) < MIN_NORMS:
        top = max((c for c, _ in pairs), default=math.nan)
        return Outcome(measured=f"{len(high)} Post-LN norms in layers with cos >= "
                                f"{HIGH_SIMILARITY}", expected="every gain < 1", passed=False,
                       detail="; ".join(filter(None, [read, low_text.lstrip("; ")])),
                       inconclusive=f"{len(high)} qualifying Post-LN norms ({when}), at least "
                                    f"{MIN_NORMS} are needed: a norm qualifies when the mean "
                                    f"pairwise cosine of its layer's input is >= "
                                    f"{HIGH_SIMILARITY} (the highest reached here: {top:.3g}); "
                                    "deeper Post-LN stacks, or later layers near collapse, "
                                    "would qualify")
    below = float(np.mean(np.asarray(high) < 1))
    above = [c for c, g in pairs if c >= HIGH_SIMILARITY and g >= 1]
    where = (f"at or above it, the {len(above)} gains >= 1 sit at input similarity "
             f"{min(above):.3g}-{max(above):.3g}") if above else ""
    sims = [c for c, _ in pairs if c >= HIGH_SIMILARITY]
    span = (f"the {len(high)} norms' input similarity {min(sims):.3g}-{max(sims):.3g} (median "
            f"{np.median(sims):.3g})")
    built = set_note(chosen, when)
    return Outcome(measured=f"{below:.0%} of {len(high)} high-similarity Post-LN norms have gain "
                            f"< 1 (max {max(high):.3g}, median {np.median(high):.3g})",
                   expected="every gain < 1", passed=below == 1.0,
                   detail="; ".join(filter(None, [read, built, span, where.lstrip("; "),
                                                   low_text.lstrip("; ")])))


__all__ = ["order_factor", "HIGH_SIMILARITY", "RECURSION_TOL", "GROWTH_BAND",
           "TOKEN_RADIUS_BAND", "TERMINAL_COSINE", "TERMINAL_LAYERS", "TERMINAL_FLOOR",
           "terminal_window", "first_terminal_layer", "pair_window", "decay_rates", "decaying",
           "deceleration", "terminal_pairs", "GROWTH_OVER_OFFSET", "token_radius",
           "growth_over_offset", "premise_units", "premise_text",
           "first_layer_order", "terminal_order", "growth_exponents", "preln_norm_growth",
           "model_s", "recursion_gaps", "recursion_tests", "recursion_at_init", "post_norm_gains",
           "measured_gains",
           "backward_gain_high_similarity"]
