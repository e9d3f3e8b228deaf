"""Ledger claims ``dyn.*``: the speed-regulation theory of arXiv 2510.22026, as checks.

The pure-math claims need no simulation: the symmetric-start algebra, Theorem 4.1's gamma'(0)
table, the linearized terminal laws (and the scalar ODE that tests them), the radial bound and
its threshold, lem:matrix and the base SA/USA rates of arXiv 2312.10794. The others simulate the
particle system NA (:mod:`resharpen.experiments.dynamics.particles`), the discrete layer updates
and the random-weight stacks, or read trained models. What the checks measure is computed in
the slice's analysis modules (``*_checks.py``, ``trained_readers.py``); the checks decide.

The notes this follows: docs/sources/notes_2608.09417_and_2510.22026.md, part B (the paper's
Table 1 of discrete updates and the scalar ODE are reconstructed there, and the claims say so).
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from resharpen.experiments.ledger import Outcome, claim
from resharpen.experiments.common.profiles import pick
from resharpen.experiments.dynamics import algebra_checks as algebra
from resharpen.experiments.dynamics import cone_checks as cone
from resharpen.experiments.dynamics import particles as P
from resharpen.experiments.dynamics import particle_checks as particle
from resharpen.experiments.dynamics import radial_checks as radial
from resharpen.experiments.dynamics import random_stack_checks as stacks
from resharpen.experiments.dynamics import survey_checks as survey
from resharpen.experiments.dynamics import sync_checks as sync
from resharpen.experiments.dynamics import trained_readers as readers
from resharpen.experiments.dynamics.initial_velocity import initial_velocity_grid
from resharpen.theory.dynamics import speed as nd


# ----------------------------------------------------------------------------- algebra
@claim("dyn.symmetric.reduction")
def check_symmetric_reduction(profile: str) -> Outcome:
    zero = algebra.symmetric_identities()
    return Outcome(measured=f"{sum(zero.values())}/{len(zero)} identities hold", expected="all hold",
                   passed=all(zero.values()),
                   detail="derived from A_j = a theta_j + b sum_{l!=j} theta_l and the Gram matrix; "
                          "failed: " + (", ".join(k for k, v in zero.items() if not v) or "none"))


def gamma_dot0_claim(claim_id: str, scheme: str) -> None:
    """Register the claim that ``scheme``'s gamma'(0), derived here, is the paper's table entry."""
    paper = nd.paper_gamma_dot0(scheme)

    @claim(claim_id)
    def check_gamma_dot0_table_entry(profile: str) -> Outcome:
        derived, ok, value, ref = algebra.gamma_dot0_entry(scheme, paper)
        return Outcome(measured=value, expected=ref, passed=ok and math.isclose(value, ref, rel_tol=1e-12),
                       detail=f"derived F(0)/s(0) = {sp.sstr(derived)}; s(0) = "
                              f"{sp.sstr(nd.speed_factor_at_start(scheme))}")


gamma_dot0_claim("dyn.gamma_dot0.postln", "postln")
gamma_dot0_claim("dyn.gamma_dot0.preln", "preln")
gamma_dot0_claim("dyn.gamma_dot0.mixln", "mixln")
gamma_dot0_claim("dyn.gamma_dot0.periln", "periln")
gamma_dot0_claim("dyn.gamma_dot0.ngpt", "ngpt")
gamma_dot0_claim("dyn.gamma_dot0.sqrt", "sqrt")


@claim("dyn.linearization")
def check_linearization(profile: str) -> Outcome:
    limits = algebra.linearization_limits()
    return Outcome(measured=str(limits), expected="(2, 1, 1)",
                   passed=limits == (2, 1, 1), detail="limits in sympy, any beta and n")


@claim("dyn.terminal.linearized")
def check_terminal_linearized(profile: str) -> Outcome:
    got, bad = algebra.terminal_mismatches()
    return Outcome(measured=", ".join(got), expected=", ".join(f"{s}:{w}" for s, _, w in algebra.TERMINAL),
                   passed=not bad, detail="exponent kinds: exponential rate, log-log slope, "
                                          "sqrt(t)-rate; mismatches: " + (", ".join(bad) or "none"))


# ----------------------------------------------------------------------------- scalar ODE fits
def terminal_ode_claim(claim_id: str, scheme: str, schedule: str, expected: float) -> None:
    """Register the claim that the symmetric ODE of ``scheme`` (nGPT: alpha ``schedule``) has
    the terminal rate ``expected``: abs 1e-3 for an exponential rate, 0.02 for a power."""
    kind = nd.rate_kind(scheme, schedule)
    label = nd.RATE_LABELS[kind]
    tol = 1e-3 if kind == "exponential" else 0.02

    @claim(claim_id)
    def check_ode_terminal_rate(profile: str) -> Outcome:
        horizon = pick(profile, quick=particle.ODE_HORIZON, full=4 * particle.ODE_HORIZON)
        fitted = particle.ode_terminal_exponent(scheme, schedule, horizon=horizon)
        return Outcome(measured=fitted, expected=expected, passed=abs(fitted - expected) <= tol,
                       detail=f"least-squares {label} of log gamma' on t in [{horizon / 2:g}, {horizon:g}]"
                              + ("; the power law carries an O(1/t) offset (s = r = t + const)"
                                 if kind == "power" else ""))


terminal_ode_claim("dyn.terminal.ode.postln", "postln", "const", -2.0)
terminal_ode_claim("dyn.terminal.ode.preln", "preln", "const", -3.0)
terminal_ode_claim("dyn.terminal.ode.mixln", "mixln", "const", -3.0)
terminal_ode_claim("dyn.terminal.ode.periln", "periln", "const", -3.0)
terminal_ode_claim("dyn.terminal.ode.ngpt", "ngpt", "const", -2.0)
terminal_ode_claim("dyn.terminal.ode.ngpt_inv_alpha", "ngpt", "inverse", -3.0)
terminal_ode_claim("dyn.terminal.ode.sqrt", "sqrt", "const", -4.0)


@claim("dyn.erratum.ngpt_constant_alpha")
def check_erratum_ngpt_constant_alpha(profile: str) -> Outcome:
    rate, slope = particle.ode_exponential_and_power_fits("ngpt")
    return Outcome(measured=f"rate {rate:.6f}, log-log slope {slope:.4g}",
                   expected="rate -2, slope far below -3",
                   passed=abs(rate + 2) <= 1e-3 and slope < -100,
                   detail="the table's nGPT row C alpha_t exp(-2 int alpha) is exponential for constant "
                          "alpha; 'C/t^3' is the alpha_t = 1/(t+1) case (dyn.terminal.ode.ngpt_inv_alpha)")


# ----------------------------------------------------------------------------- symmetric start
@claim("dyn.particles.symmetric_start")
def check_particles_symmetric_start(profile: str) -> Outcome:
    n, d = pick(profile, quick=(8, 8), full=(32, 40))
    beta = 2.0
    errs, spreads = particle.symmetric_start_errors(n, d, beta, 30.0)
    worst = max(errs.values())
    return Outcome(measured=worst, expected=0.0,
                   passed=worst <= 1e-6 and max(spreads.values()) <= 1e-8,
                   detail=f"n={n}, d={d}, beta={beta}; max |particle - ODE| per scheme: "
                          + ", ".join(f"{k} {v:.1e}" for k, v in errs.items())
                          + f"; max pair spread {max(spreads.values()):.1e}")


@claim("dyn.gamma_dot0.simulated")
def check_gamma_dot0_simulated(profile: str) -> Outcome:
    n, d, beta, r0, a0 = pick(profile, quick=(16, 20, 5.0, 2.0, 0.5), full=(64, 64, 3.0, 2.0, 0.5))
    rel = particle.gamma_dot0_errors(n, d, beta, r0, a0)
    worst = max(rel.values())
    return Outcome(measured=worst, expected=0.0, passed=worst <= 1e-9,
                   detail=f"max relative error over schemes (n={n}, d={d}, beta={beta}): "
                          + ", ".join(f"{k} {v:.1e}" for k, v in rel.items()))


# ----------------------------------------------------------------------------- terminal rates
def terminal_rate_claims(particle_id: str, cone_id: str, scheme: str, schedule: str,
                         expected: float, window: tuple[float, float]) -> None:
    """Register the two claims that the particle system has ``scheme``'s terminal rate
    ``expected`` (nGPT: alpha ``schedule``) on the time ``window``: from an orthonormal start
    (``particle_id``) and from random cones (``cone_id``); abs 0.01 for an exponential rate, 0.02
    otherwise."""
    kind = nd.rate_kind(scheme, schedule)
    label = nd.RATE_LABELS[kind]
    tol = 0.01 if kind == "exponential" else 0.02

    @claim(particle_id)
    def check_particle_terminal_rate(profile: str) -> Outcome:
        n, d = pick(profile, quick=(8, 12), full=(24, 32))
        dyn = P.Dynamics(scheme, 1.0, alpha_schedule=schedule)
        fitted, nfev = particle.terminal_exponent(dyn, P.orthonormal_start(n, d, seed=3),
                                                  window, kind)
        return Outcome(measured=fitted, expected=expected, passed=abs(fitted - expected) <= tol,
                       detail=f"{label} of the mean pairwise gamma' (exact from the vector field), "
                              f"n={n}, d={d}; {nfev} field evaluations")

    @claim(cone_id)
    def check_cone_terminal_rate(profile: str) -> Outcome:
        seeds = pick(profile, quick=(0,), full=(0, 1, 2, 3))
        fits = [particle.terminal_exponent(
                    P.Dynamics(scheme, 1.0, alpha_schedule=schedule, tau=1.0),
                    P.local_cone(8, 4, 0.5, seed=seed), window, kind)[0] for seed in seeds]
        worst = max(fits, key=lambda f: abs(f - expected))
        return Outcome(measured=worst, expected=expected, passed=abs(worst - expected) <= tol,
                       detail=f"seeds {seeds}: " + ", ".join(f"{f:.4f}" for f in fits)
                              + "; the pairs are not equiangular, so the scalar ODE does not apply")


# Terminal rates simulated: (particle claim, cone claim, scheme, alpha schedule, rate, window).
PARTICLE_RATES = (
    ("dyn.terminal.particles.postln", "dyn.terminal.cone.postln", "postln", "const", -2.0, (6.0, 12.0)),
    ("dyn.terminal.particles.preln", "dyn.terminal.cone.preln", "preln", "const", -3.0, (500.0, 1000.0)),
    ("dyn.terminal.particles.mixln", "dyn.terminal.cone.mixln", "mixln", "const", -3.0, (500.0, 1000.0)),
    ("dyn.terminal.particles.periln", "dyn.terminal.cone.periln", "periln", "const", -3.0, (500.0, 1000.0)),
    ("dyn.terminal.particles.ngpt", "dyn.terminal.cone.ngpt", "ngpt", "const", -2.0, (6.0, 12.0)),
    ("dyn.terminal.particles.ngpt_inv_alpha", "dyn.terminal.cone.ngpt_inv_alpha",
     "ngpt", "inverse", -3.0, (500.0, 1000.0)),
    ("dyn.terminal.particles.sqrt", "dyn.terminal.cone.sqrt", "sqrt", "const", -4.0, (10.0, 40.0)),
)
for _rate in PARTICLE_RATES:
    terminal_rate_claims(*_rate)


@claim("dyn.radial.r_over_t")
def check_radial_r_over_t(profile: str) -> Outcome:
    T = pick(profile, quick=1000.0, full=10000.0)
    worst = particle.radius_over_time_gaps(T)
    return Outcome(measured=max(worst.values()), expected=0.0, passed=max(worst.values()) <= 0.01,
                   detail=f"T={T:g}; " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items())
                          + " (1 - <theta,A> ~ t^-2 is integrable, so r = t + const and the gap closes like 1/T)")


# ----------------------------------------------------------------------------- radial bound
@claim("dyn.radial.threshold")
def check_radial_threshold(profile: str) -> Outcome:
    rows, ok = radial.threshold_rows()
    return Outcome(measured="; ".join(rows), expected="violations only for n > e^beta",
                   passed=bool(ok),
                   detail="min over configurations puts the n-1 others at one inner product x = "
                          "argmin; negativity needs (n-1) max(-x e^{bx}) > e^b, i.e. n-1 > b e^{b+1}")


@claim("dyn.radial.random_configs")
def check_radial_random_configs(profile: str) -> Outcome:
    trials = pick(profile, quick=300, full=3000)
    slack, peri_slack = radial.random_config_slacks(trials)
    return Outcome(measured=f"min slack {slack:.3g}; Peri-LN slack {peri_slack:.3g}", expected=">= 0",
                   passed=slack >= -1e-12 and peri_slack >= -1e-12,
                   detail=f"{trials} configurations, beta in [0.7, 5], d in {{2,3,8,32}}, a third uniform, "
                          "a third bunched at the antipode, a third at the exact minimizer")


@claim("dyn.radial.violation")
def check_radial_violation(profile: str) -> Outcome:
    beta, n, d = 1.0, 12, 3
    radial0, shrink, value, x = radial.violation(beta, n, d)
    return Outcome(measured=f"<theta_0,A_0> = {radial0:.4f}; r_0 change {shrink:.2e}",
                   expected=f"< 0 (the bound 1/(n e^b) = {1 / (n * math.e):.4f})",
                   passed=radial0 < 0 and shrink < 0 and abs(radial0 - value) < 1e-9,
                   detail=f"others at inner product x* = {x:.4f} with token 0 (exact minimizer); "
                          "n <= e^beta is sufficient but not sharp, see dyn.radial.threshold")


# ----------------------------------------------------------------------------- Theorem 4.2
@claim("dyn.thm42.initial_velocity")
def check_thm42_initial_velocity(profile: str) -> Outcome:
    grid = [(128, 64), (256, 64), (256, 256), (512, 128), (512, 512), (1024, 256)] + pick(
        profile, quick=[], full=[(1024, 1024), (2048, 512), (4096, 512), (4096, 2048)])
    rows = initial_velocity_grid(grid)
    worst = max(r[2] for r in rows)
    proj = min(r[3] for r in rows)
    return Outcome(measured=f"max ratio {worst:.3f}; min |PA|/|A| {proj:.3f}",
                   expected="ratio <= 1; |PA|/|A| >= 0.9", passed=worst <= 1.0 and proj >= 0.9,
                   detail="(n, d, ratio, |PA|/|A|): " + "; ".join(
                       f"({n},{d},{r:.2f},{p:.2f})" for n, d, r, p in rows)
                   + ". Peri-LN/nGPT speed |PA|/|A| vs Post-LN |PA|: gap 1/|A| >= 1/(ratio*bound)")


# ----------------------------------------------------------------------------- Theorem 4.3
def variance_claim(claim_id: str, scheme: str) -> None:
    """Register the claim that ``scheme``'s variance decays at Theorem 4.3's rate."""
    @claim(claim_id)
    def check_variance_decay_band(profile: str) -> Outcome:
        seeds = pick(profile, quick=(5,), full=(5, 6, 7, 8))
        lo, hi, worst = cone.variance_ratios(scheme, seeds)
        return Outcome(measured=f"[{lo:.3f}, {hi:.3f}]; max |ratio / linearized - 1| {worst:.2e}",
                       expected=f"within [-4, -0.111]; <= {cone.LINEAR_RATE_TOLERANCE}",
                       passed=(cone.VAR_BAND[0] <= lo and hi <= cone.VAR_BAND[1]
                               and worst <= cone.LINEAR_RATE_TOLERANCE),
                       detail=f"n=4, d=6, beta=1, seeds {seeds}; Var' exact from the vector field; "
                              "linearized rate -2 scale(t)/s(t) with s from the mean radius")


variance_claim("dyn.thm43.variance.postln", "postln")
variance_claim("dyn.thm43.variance.preln", "preln")
variance_claim("dyn.thm43.variance.mixln", "mixln")
variance_claim("dyn.thm43.variance.periln", "periln")
variance_claim("dyn.thm43.variance.ngpt", "ngpt")
variance_claim("dyn.thm43.variance.sqrt", "sqrt")


@claim("dyn.erratum.thm43_ngpt_scale")
def check_erratum_thm43_ngpt_scale(profile: str) -> Outcome:
    t_last, printed, fixed, worst = cone.ngpt_scale_ratios()
    return Outcome(measured=f"printed ratio at t={t_last:g}: {printed[-1]:.2e}; corrected in "
                            f"[{fixed.min():.3f}, {fixed.max():.3f}], "
                            f"max |corrected / linearized - 1| {worst:.2e}",
                   expected=f"printed outside band; corrected inside, within "
                            f"{cone.LINEAR_RATE_TOLERANCE} of the linearized -2",
                   passed=(printed[-1] > cone.VAR_BAND[1] and cone.VAR_BAND[0] <= fixed.min()
                           and fixed.max() <= cone.VAR_BAND[1] and worst <= cone.LINEAR_RATE_TOLERANCE),
                   detail="with s = |A|/alpha_t the linearized decay is Var' ~ -2 alpha_t Var (Lean "
                          "audit; linearized_variance_ratio)")


@claim("dyn.thm43.radial_growth")
def check_thm43_radial_growth(profile: str) -> Outcome:
    slacks = cone.radial_growth_slacks()
    return Outcome(measured=f"min slacks {', '.join(f'{s:.2e}' for s in slacks)}", expected=">= 0",
                   passed=min(slacks) >= -1e-9,
                   detail="(Pre-LN lower, Pre-LN upper, Peri-LN lower); r(0) = 1")


@claim("dyn.erratum.small_beta_delta")
def check_erratum_small_beta_delta(profile: str) -> Outcome:
    beta, n = 0.01, 2
    delta = 2.0                                       # <theta_1, theta_2> = -1 = 1 - delta
    admitted = delta < 1 / (100 * n * n * beta * beta)
    excluded_by_fix = not delta < 1 / (100 * n * n)
    worst = cone.stationary_deviation(beta, np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))
    return Outcome(measured=f"admitted {admitted}, max |Var-1|,|Var'| = {worst:.1e}",
                   expected="admitted True, stationary", passed=admitted and excluded_by_fix and worst <= 1e-12,
                   detail=f"1/(100 n^2 beta^2) = {1 / (100 * n * n * beta * beta):g} > 2; all six schemes; "
                          "Var'/(Var/scale) = 0 is outside [-4, -1/9]")


@claim("dyn.erratum.d1_antipodal")
def check_erratum_d1_antipodal(profile: str) -> Outcome:
    n = 4
    moved, mixed_final, mixed_start, starts, cos2 = sync.antipodal_d1(
        pick(profile, quick=3, full=20), n)
    return Outcome(measured=f"d=1: max movement {moved:.1e}, {mixed_final}/{mixed_start} mixed-sign "
                            f"starts still unsynchronized; d=2 perturbed pair cos {cos2:.6f}",
                   expected="0; all; -> 1",
                   passed=moved <= 1e-14 and mixed_final == mixed_start and cos2 > 1 - 1e-6,
                   detail=f"n={n}, every scheme ({len(nd.SCHEMES)}) from {starts} sign starts "
                          "(one alternating, the others random) simulated to T = 50; at d=2 the "
                          "antipodal pair is an unstable critical point")


# ----------------------------------------------------------------------------- Theorem 3.1, time change
@claim("dyn.sync.random_starts")
def check_sync_random_starts(profile: str) -> Outcome:
    seeds = pick(profile, quick=range(3), full=range(20))
    worst, worst_shrink, worst_at = sync.synchronization_gaps(
        seeds, pick(profile, quick=200.0, full=1000.0))
    return Outcome(measured=f"max 1-min cos(T) {worst:.2e}; max shrink {worst_shrink:.2f}",
                   expected="< 1e-2; <= 0.5", passed=worst < 1e-2 and worst_shrink <= 0.5,
                   detail=f"{len(list(seeds))} seeds per scheme, worst {worst_at}; the radial schemes "
                          "converge like t^-2 in 1 - cos (shrink 1/4 per doubling of t)")


@claim("dyn.time_change")
def check_time_change(profile: str) -> Outcome:
    success, err, t_last, moved = sync.time_change_error()
    return Outcome(measured=err, expected=0.0, passed=bool(success and err <= 1e-7 and moved > 0.1),
                   detail=f"t up to {t_last:.1f}; tokens moved {moved:.2f} (the check is not vacuous)")


# ----------------------------------------------------------------------------- discrete updates
@claim("dyn.discrete.convergence")
def check_discrete_convergence(profile: str) -> Outcome:
    steps = [0.1, 0.05, 0.025, 0.0125] + pick(profile, quick=[], full=[0.00625, 0.003125])
    orders, ok = particle.discrete_orders(steps)
    return Outcome(measured=f"orders {min(orders.values()):.3f}..{max(orders.values()):.3f}",
                   expected="1", passed=bool(ok),
                   detail="; ".join(f"{k} {v:.3f}" for k, v in orders.items()) + f"; steps {steps}")


# ----------------------------------------------------------------------------- random stacks
@claim("dyn.stack.qualitative")
def check_stack_qualitative(profile: str) -> Outcome:
    """Three inequalities, each able to fail: min(Peri-LN, nGPT) layer-1 step >= 5 max(Post-LN,
    Pre-LN) step; Post-LN cosine at layer 32 > 0.99; Pre-LN cosine at layer 32 < 0.99 (the
    threshold separates collapsed from not yet collapsed, as the statement says). The
    thresholds are the statement's, fixed beforehand; no theory value enters."""
    n, layers = pick(profile, quick=(32, 32), full=(128, 128))
    step1, post, pre = stacks.similarity_steps(n, layers)
    slow = max(step1["postln"], step1["preln"])
    fast = min(step1["periln"], step1["ngpt"])
    return Outcome(measured=f"layer-1 d cos: fast {fast:.3f} vs slow {slow:.3f}; layer-32 cos post {post:.4f} "
                            f"pre {pre:.4f}", expected="fast >= 5 slow; post > 0.99 > pre",
                   passed=fast >= 5 * slow and post > 0.99 > pre,
                   detail=", ".join(f"{k} {v:.3f}" for k, v in step1.items()))


@claim("dyn.stack.preln_norm")
def check_stack_preln_norm(profile: str) -> Outcome:
    n, layers = pick(profile, quick=(16, 128), full=(64, 512))
    e_rand, e_tied = stacks.preln_norm_exponents(n, layers)
    return Outcome(measured=f"random {e_rand:.3f}, tied {e_tied:.3f}", expected="~0.5, ~1",
                   passed=0.35 <= e_rand <= 0.65 and e_tied >= 0.9,
                   detail=f"n={n}, {layers} layers; fresh weights add nearly independent vectors each layer")


# ----------------------------------------------------------------------------- gradient-flow form
@claim("dyn.gradient_flow")
def check_gradient_flow(profile: str) -> Outcome:
    worst = sync.gradient_flow_error()
    return Outcome(measured=worst, expected=0.0, passed=worst <= 1e-6,
                   detail="gradient of E by central differences, not by the closed form "
                          "-2 beta sum_k e^{beta<theta_j,theta_k>} theta_k")


# ----------------------------------------------------------------------------- Thm 3.1 with V = Q^T K
@claim("dyn.erratum.sync_symmetric_qk")
def check_erratum_sync_symmetric_qk(profile: str) -> Outcome:
    seeds = pick(profile, quick=range(20), full=range(100))
    dist0, dist1, ident_gap, stuck = sync.split_clusters(seeds)
    frac = stuck / len(seeds)
    return Outcome(measured=f"split distance {dist0:.1e} -> {dist1:.1e}; non-sync {stuck}/{len(seeds)}; "
                            f"M = I gap {ident_gap:.1e}",
                   expected="shrinks; >= 10%; M = I synchronizes",
                   passed=dist1 <= dist0 / 100 and frac >= 0.1 and ident_gap < 1e-6,
                   detail="gradient ascent of E = sum e^{beta<theta_j, M theta_k>}: rotating one cluster off "
                          "+-v_top lowers the within-cluster terms by (lambda_1 - lambda_2) e^{beta lambda_1}, "
                          "which beats the cross-cluster gain when the gap is large enough; at M = I the gap "
                          "is 0 and the split is a saddle, as the theorem needs")


# ----------------------------------------------------------------------------- lem:matrix
@claim("dyn.matrix_lemma")
def check_matrix_lemma(profile: str) -> Outcome:
    trials = pick(profile, quick=2000, full=20000)
    worst, fails = sync.matrix_lemma_trials(trials)
    return Outcome(measured=f"{trials - fails}/{trials} positive; min lam_max(DA)/(lam_min(D) lam_+(A)) "
                            f"= {worst:.3f}", expected=f"{trials}/{trials} positive, ratio >= 1",
                   passed=fails == 0 and worst >= 1 - 1e-6,
                   detail="A with a single positive eigenvalue; D = BB^T + eps I, eps in [1e-4, 1]")


# ----------------------------------------------------------------------------- base SA / USA
@claim("dyn.base.usa_rate")
def check_base_usa_rate(profile: str) -> Outcome:
    derived_ok, limit, limit_ok = algebra.usa_rate_symbolic()
    worst = survey.usa_rate_errors()
    return Outcome(measured=f"limit {limit}; worst rel. rate error {worst:.1e}", expected="2*exp(beta)",
                   passed=derived_ok and limit_ok and worst <= 1e-4,
                   detail="USA weights e^{beta<x_i,x_j>}/n in place of the softmax; (beta, n) in "
                          "(0.5,4), (1,8), (2,16)")


@claim("dyn.base.sa_survey_bound")
def check_base_sa_survey_bound(profile: str) -> Outcome:
    """The bound against the Post-LN solution, with the solution and the bound's slope checked
    too: a one-sided bound alone sees neither a looser bound nor a wrong solution."""
    betas = pick(profile, quick=(0.1, 1.0, 3.0, 5.0), full=(0.01, 0.1, 0.5, 1, 2, 3, 5, 8))
    ns = pick(profile, quick=(2, 5, 64, 256), full=(2, 3, 5, 16, 64, 256, 1024))
    worst, at, solution_error, slope_error = survey.survey_bound_slacks(betas, ns)
    return Outcome(measured=f"min log slack {worst:.4g}; solution error {solution_error:.2e}; "
                            f"slope error {slope_error:.2e}",
                   expected=">= 0; <= 1e-6; <= 1e-9",
                   passed=worst >= 0 and solution_error <= 1e-6 and slope_error <= 1e-9,
                   detail=f"min of log(bound) - log(1 - gamma) over {len(betas) * len(ns)} (beta, n), "
                          f"attained at (beta, n) = {at}; solution error: max |u - u_typed| "
                          "(u = log(1 - gamma), the equiangular SA equation typed in the check, "
                          "scipy DOP853); slope error: the bound's log-slope against -lambda")


@claim("dyn.erratum.survey_bound_t0")
def check_erratum_survey_bound_t0(profile: str) -> Outcome:
    bound0 = math.exp(float(nd.sa_survey_bound().subs({nd.beta_p: 0.01, nd.n_p: 2, nd.t_p: 0})))
    fails = survey.survey_bound_t0_failures()   # lambda n e^b / 2 < log 2: only n = 2, small beta
    beta_max = max((b for n, b in fails if n == 2), default=float("nan"))
    return Outcome(measured=f"bound(0) = {bound0:.4f}", expected="< 1",
                   passed=bound0 < 1 and all(n == 2 for n, _ in fails),
                   detail=f"the t >= 0 form fails at t = 0 exactly for n = 2, beta < {beta_max:.3f} "
                          "(on a grid of n <= 4, beta <= 2); the t >= n e^b/2 form holds (dyn.base.sa_survey_bound)")


# ----------------------------------------------------------------------------- trained models
# Real models of every scheme at initialization and trained to a fit on tomita3 and dyck1
# (experiments.dynamics.trained), read by experiments.dynamics.trained_readers.
@claim("dyn.trained.first_layer_order.init")
def check_trained_first_layer_order_init(profile: str) -> Outcome:
    return readers.first_layer_order(profile, "init")


@claim("dyn.trained.first_layer_order.trained")
def check_trained_first_layer_order_trained(profile: str) -> Outcome:
    return readers.first_layer_order(profile, "trained")


@claim("dyn.trained.terminal_order.init")
def check_trained_terminal_order_init(profile: str) -> Outcome:
    return readers.terminal_order(profile, "init")


@claim("dyn.trained.preln_norm_growth.init")
def check_trained_preln_norm_growth_init(profile: str) -> Outcome:
    return readers.preln_norm_growth(profile, "init")


@claim("dyn.trained.preln_norm_growth.trained")
def check_trained_preln_norm_growth_trained(profile: str) -> Outcome:
    return readers.preln_norm_growth(profile, "trained")


@claim("dyn.trained.collapse_recursion.init")
def check_trained_collapse_recursion_init(profile: str) -> Outcome:
    return readers.recursion_at_init(profile)


@claim("dyn.trained.collapse_backward_gain.init")
def check_trained_collapse_backward_gain_init(profile: str) -> Outcome:
    return readers.backward_gain_high_similarity(profile, "init")


@claim("dyn.trained.collapse_backward_gain.trained")
def check_trained_collapse_backward_gain_trained(profile: str) -> Outcome:
    return readers.backward_gain_high_similarity(profile, "trained")
