"""Ledger claims ``sc.*``: the Set Complement theory of arXiv 2510.08341.

Source: docs/theory.md's reconstruction of arXiv 2510.08341 (the paper's full text is not public, so
every statement below is marked "reconstructed"; the abstract-level facts they agree with are
listed in docs/sources/notes_2510.08341.md).

The first claims are checked without a model (sympy, numpy) against
:mod:`resharpen.theory.set_complement.formulas`. The claims after them run the constructions
(or random lemma-form models) through the float64 torch model of experiments/model/transformer.py and
compare with the same formulas at every length s = 1..v-1 for v in ``VOCABS``.

The module imports no torch: the checks on the model import it, with the constructions and the
model's code, in their bodies. ``resharpen verify --only`` on a claim without a model so pays
for numpy and sympy alone, not for torch.
"""
from __future__ import annotations

import tempfile

import numpy as np
import sympy as sp

from resharpen.experiments.ledger import Outcome, claim
from resharpen.experiments.common.profiles import pick
from resharpen.experiments.set_complement.lemma_rank import (lemma_nullspace_dimension,
                                                             min_rank_random)
from resharpen.experiments.set_complement.post_readout import (post_K_by_bisection,
                                                               post_margin_explicit)
from resharpen.theory.set_complement import formulas as sc

SRC = "arXiv 2510.08341 (reconstructed)"
VOCABS = (4, 5, 8, 12, 33, 128)
TOL = 1e-9


# ----------------------------------------------------------------------------- without a model
@claim("sc.metrics.closed_forms")
def check_metrics_closed_forms(profile):
    proofs = sc.prove_metric_identities()
    return Outcome(str(proofs), "{'kl': True, 'tv': True}", all(proofs.values()))


@claim("sc.lemma.logit_identity")
def check_lemma_logit_identity(profile):
    sizes = pick(profile, quick=[(6, 4)], full=[(5, 2), (6, 4), (7, 6)])
    ok = all(sc.prove_lemma_logit_identity(vv, ss) for vv, ss in sizes)
    return Outcome(ok, True, ok, f"symbolic u, lambda, beta, row constants, weights; (v, s) in {sizes}")


@claim("sc.lemma.nullspace")
def check_lemma_nullspace(profile):
    vocabs = pick(profile, quick=(4, 5, 8), full=(4, 5, 8, 12))
    dims = {vv: lemma_nullspace_dimension(vv) for vv in vocabs}
    small, family3 = lemma_nullspace_dimension(3)
    ok = all(a == b for a, b in dims.values()) and small > family3
    return Outcome({vv: a for vv, (a, b) in dims.items()} | {3: small},
                   {vv: b for vv, (a, b) in dims.items()} | {3: f"> {family3}"}, ok,
                   "solution-space dimension vs 5v-1; at v = 3 the lemma's hypothesis v >= 4 fails")


@claim("sc.theorem.balanced_condition")
def check_theorem_balanced_condition(profile):
    lx, ly = sp.symbols("lambda_x lambda_y", positive=True)
    got = sc.balanced_score_difference()
    want = sp.log(ly / lx)
    return Outcome(str(got), str(want), sp.simplify(sp.expand_log(got - want, force=True)) == 0)


@claim("sc.theorem.harmonic_symbolic")
def check_theorem_harmonic_symbolic(profile):
    ok = all(sc.prove_harmonic_margin(n) for n in pick(profile, quick=(3, 4), full=(2, 3, 4, 6)))
    return Outcome(ok, True, ok)


@claim("sc.theorem.two_over_s_symbolic")
def check_theorem_two_over_s_symbolic(profile):
    vocabs = pick(profile, quick=(8,), full=(5, 8, 12))
    ratios = {vv: sc.balanced_margin_ratios(vv) for vv in vocabs}
    wrong = [(vv, ss) for vv, by_s in ratios.items() for ss, r in by_s.items()
             if sp.simplify(r - sp.Rational(2, ss)) != 0]
    shown = max(vocabs)
    return Outcome(str(list(ratios[shown].values())), str([sp.Rational(2, ss) for ss in ratios[shown]]),
                   not wrong, f"m_s = f(valid) - f(t_1) from f = B[q] + sum_i w_i D[t_i], w = softmax of "
                              f"the balanced scores; v in {vocabs} (shown: v = {shown}); "
                              f"mismatched (v, s): {wrong}")


@claim("sc.rank.symbolic")
def check_rank_symbolic(profile):
    proof = sc.prove_rank_bound(pick(profile, quick=4, full=5))
    ok = proof["determinant_lemma"] and proof["D_is_minus_low_rank_update"] and proof["M10_is_sum_inverse_lambda"]
    return Outcome(str(proof["M10"]), "sum_x 1/lambda_x", ok)


@claim("sc.rank.random")
def check_rank_random(profile):
    trials = pick(profile, quick=200, full=2000)
    results = {vv: min_rank_random(vv, trials, seed=vv) for vv in (4, 5, 8, 12, 33)}
    ok = all(low >= vv - 1 and adv == vv - 1 for vv, (low, adv) in results.items())
    return Outcome({vv: tuple(int(x) for x in r) for vv, r in results.items()}, {vv: (vv - 1, vv - 1) for vv in results}, ok,
                   "(min rank over random, min rank with adversarial c)")


@claim("sc.readout.attn_out_minimum")
def check_readout_attn_out_minimum(profile):
    found = sc.attn_out_minimum()
    ok = (sp.simplify(found["argmin"] - sc.v / 2) == 0
          and sp.simplify(found["minimum"] - 2 * sc.beta * sc.g * sp.sqrt(sc.d / sc.v)) == 0
          and found["second_derivative"].is_positive)
    return Outcome(f"argmin {found['argmin']}, min {found['minimum']}", "v/2, 2*beta*g*sqrt(d/v)", bool(ok))


@claim("sc.readout.post_limit")
def check_readout_post_limit(profile):
    """Measured: the sympy limit of the derived post margin (formulas.readout_margin_exprs).
    Expected: the attn_out margin as the statement prints it (a constant of the statement, which
    sc.readout.attn_out holds the construction to), not derived by the same code; and the post
    margin from its definition (:func:`post_margin_explicit`, numpy) at K = 1e9 against it."""
    got = sc.post_limit_large_K()
    v, s, beta, g, d = sc.v, sc.s, sc.beta, sc.g, sc.d
    want = beta * g * sp.sqrt(d * v / (s * (v - s)))
    closed = sp.lambdify((v, s), want.subs({beta: 1, g: 1, d: v - 1}), "math")
    pairs = [(12, 2), (12, 6), (12, 11), (64, 3), (64, 32), (128, 100)]
    numeric = max(abs(post_margin_explicit(vv, ss, 1e9) / closed(vv, ss) - 1) for vv, ss in pairs)
    n = sp.Symbol("n", positive=True)  # v - s >= 1: the valid tokens
    residual = sp.simplify((got - want).subs(v, s + n))
    exact = residual == 0
    return Outcome(str(got), str(want), bool(exact and numeric <= 1e-6),
                   f"sympy limit minus the statement's closed form, with v = s + n (n > 0), "
                   f"simplifies to {residual}; the definition in numpy at "
                   f"K = 1e9 (beta = g = 1, d = v - 1) deviates by at most {numeric:.1g} "
                   f"(relative) over (v, s) in {pairs}")


@claim("sc.readout.reconstruction_regression")
def check_readout_reconstruction_regression(profile):
    expected = [3.4641, 2.5690, 2.2111, 1.9149, 2.1756, 1.4958, 1.5988, 2.5686, 1.9145, 3.4635]
    got = list(sc.readout_margins("attn_out", 12, np.array([1, 2, 3, 6]), 1.0, 1.0, 1.0, 11)[0])
    got += list(sc.readout_margins("post", 12, np.array([2, 6, 11]), 6.0, 1.0, 1.0, 11)[0])
    got += list(sc.readout_margins("post", 12, np.array([2, 6, 11]), 6000.0, 1.0, 1.0, 11)[0])
    err = max(abs(a - b) for a, b in zip(got, expected))
    return Outcome([round(float(x), 4) for x in got], expected, err < 5e-5,
                   f"max abs error {err:.2e}; these numbers were computed by this reconstruction "
                   "(they guard it against regressions; the paper prints none of them)")


@claim("sc.readout.post_K_needed")
def check_readout_post_K_needed(profile):
    """Measured: formulas.post_K_needed (the sympy root of the quadratic, lambdified). Expected:
    :func:`post_K_by_bisection`, root finding on :func:`post_margin_explicit` (numpy, from the
    readout's definition): neither the root formula nor its plug-back filter is used."""
    cases = [(12, 6, 1.4958), (64, 32, 1.0), (64, 3, 2.0), (128, 100, 1.5)]
    errors, pairs = [], []
    for vv, ss, target in cases:
        k_root = sc.post_K_needed(vv, ss, target)
        k_bisect = post_K_by_bisection(vv, ss, target)
        pairs.append((k_root, k_bisect))
        errors.append(float(abs(k_root - k_bisect) / k_bisect))
    worst = max(errors)  # nan or inf when a root failed (K = inf or nan): a failure, never a pass
    finite = all(np.isfinite(e) for e in errors)
    limit = sc.post_K_needed(12, 6, 5.0)  # above the K -> oo limit 1.9149: unreachable
    limit_bisect = post_K_by_bisection(12, 6, 5.0)
    return Outcome(worst if finite else f"non-finite errors {errors}",
                   "<= 1e-9; unreachable target -> inf",
                   finite and all(e <= 1e-9 for e in errors) and limit == float("inf")
                   and limit_bisect == float("inf"),
                   "K (root, bisection) per (v, s, m): "
                   + "; ".join(f"{c[:3]}: {a:.10g}, {b:.10g}" for c, (a, b) in zip(cases, pairs))
                   + f"; relative errors {[f'{e:.2g}' for e in errors]}; unreachable target "
                     f"gives K = {limit} (root) and {limit_bisect} (bisection)")


@claim("sc.noise.trace_symbolic")
def check_noise_trace_symbolic(profile):
    pairs = pick(profile, quick=[(4, 1), (4, 3), (8, 2), (8, 7), (12, 5)],
                 full=[(vv, ss) for vv in (4, 8, 12, 16) for ss in range(1, vv)])
    traces = {(vv, ss): sc.gradient_noise_trace(vv, ss) for vv, ss in pairs}
    closed = {(vv, ss): sc.GRADIENT_NOISE_TRACE.subs({sc.v: vv, sc.s: ss}) for vv, ss in pairs}
    wrong = [pair for pair in pairs if traces[pair] != closed[pair]]
    return Outcome(str({f"{vv},{ss}": str(t) for (vv, ss), t in traces.items()}),
                   str({f"{vv},{ss}": str(t) for (vv, ss), t in closed.items()}), not wrong,
                   f"v x v covariance matrices with p* uniform on the v - s valid tokens, (v, s) in "
                   f"{pairs}; mismatches {wrong}")


# ----------------------------------------------------------------------------- on the torch model
def scales(profile: str, vocab: int) -> list[tuple[float, float, float]]:
    """(lambda, beta, gain) triples: small, large and mixed scales."""
    return [(1.0, 1.0, 1.0), (3.0 * vocab, 0.5, 2.0)] + pick(
        profile, quick=[], full=[(0.1, 3.0, 0.3), (50.0, 7.0, 1.7)])


def per_length(profile: str) -> int:
    """Inputs evaluated per length."""
    return pick(profile, quick=8, full=64)


def family_error(configs, profile: str) -> tuple[float, float, str]:
    """Worst relative margin error and worst metric error ratio over built constructions."""
    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.set_complement.report import construction_errors

    worst_margin, worst_metric, where = 0.0, 0.0, ""
    for kwargs in configs:
        rows = construction_errors(cons.build(**kwargs), per_length(profile))
        margin = max(r["rel_error_margin"] for r in rows)
        metric = max(r["metric_error_ratio"] for r in rows)
        spread = max(r["valid_spread"] for r in rows) - 1.0
        margin = max(margin, spread)
        if margin > worst_margin:
            worst_margin, where = margin, str(kwargs)
        worst_metric = max(worst_metric, metric)
    return worst_margin, worst_metric, where


def readout_configs(norm: str, profile: str) -> list[dict]:
    kinds = [("tight", "rms"), ("one_hot", "layer"), ("one_hot", "rms")]
    return [dict(variant=variant, vocab=vv, norm=norm, norm_kind=kind, lam=lam, beta=beta, gain=gain)
            for vv in VOCABS for lam, beta, gain in scales(profile, vv) for variant, kind in kinds]


def readout_margin_claim(claim_id: str, norm: str, statement: str) -> None:
    """Register the claim that placement ``norm``'s constructions have the readout margins of
    the formulas, at every length, for every variant and scale of ``readout_configs``."""
    @claim(claim_id)
    def check_readout_margins(profile):
        margin, metric, where = family_error(readout_configs(norm, profile), profile)
        return Outcome(margin, f"<= {TOL}", margin <= TOL and metric <= 1.0,
                       f"v in {VOCABS}, every s; worst at {where}; metric error ratio {metric:.2g}")


readout_margin_claim("sc.readout.none", "none", "No norm: margins lambda/s (non-query) and beta + lambda/s (query) at every length: dispersion")
readout_margin_claim("sc.readout.attn_out", "attn_out", "x + N(o): non-query margin beta g sqrt(d v/(s(v-s))) (centred), beta g sqrt(d/s) (one-hot RMS)")
readout_margin_claim("sc.readout.post", "post", "N(x + o): margin beta g sqrt(d) (K/s)/|c(e_q + (K/s) 1_t)| with K = lambda/beta")
readout_margin_claim("sc.readout.pre", "pre", "The float64 torch pre model (x + o(N(x)), final N) has the post margin formula with K -> K g sqrt(d)/|c(e_x)|")


@claim("sc.construct.tight_dimensions")
def check_construct_tight_dimensions(profile):
    import torch

    from resharpen.constructions import set_complement as cons

    bad = []
    for vv in VOCABS:
        built = cons.tight(vv, lam=2.0, beta=1.0)
        cfg = built.model.cfg
        _, D = built.model.logit_matrices()
        rank = int(torch.linalg.matrix_rank(D, rtol=1e-9))
        if not (cfg.d_model == cfg.value_width == vv - 1 == rank):
            bad.append((vv, cfg.d_model, cfg.value_width, rank))
    margin, metric, where = family_error(
        [dict(variant="tight", vocab=vv, lam=lam, beta=beta) for vv in VOCABS
         for lam, beta, _ in scales(profile, vv)], profile)
    return Outcome(margin, f"<= {TOL}", not bad and margin <= TOL and metric <= 1.0,
                   f"dimension mismatches {bad}" if bad else f"d = d_v = rank D = v-1 for v in {VOCABS}")


@claim("sc.theorem.harmonic_margin")
def check_theorem_harmonic_margin(profile):
    configs = [dict(variant="balanced", vocab=vv, lam=lam, beta=beta, seed=seed)
               for vv in VOCABS for lam, beta, _ in scales(profile, vv) for seed in (0, 1)]
    margin, metric, where = family_error(configs, profile)
    return Outcome(margin, f"<= {TOL}", margin <= TOL and metric <= 1.0, f"worst at {where}")


@claim("sc.theorem.two_over_s")
def check_theorem_two_over_s(profile):
    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.set_complement.evaluate import per_position_metrics

    worst = 0.0
    for vv in VOCABS[1:]:
        for lam, beta, _ in scales(profile, vv):
            metrics, _ = per_position_metrics(cons.tight(vv, lam, beta).model, vv, vv - 1, per_length(profile))
            m = metrics["margin_nonquery_min"].mean(0).numpy()  # index s-1
            lengths = np.arange(2, vv)
            worst = max(worst, float(np.max(np.abs(m[1:] / m[1] - 2.0 / lengths) / (2.0 / lengths))))
    return Outcome(worst, f"<= {TOL}", worst <= TOL)


@claim("sc.theorem.unbalanced_breaks_2_over_s")
def check_theorem_unbalanced_breaks_2_over_s(profile):
    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.set_complement.evaluate import per_position_metrics

    worst, deviation = 0.0, 0.0
    for vv in (8, 12, 33):
        margin, metric, where = family_error([dict(variant="unbalanced", vocab=vv, lam=2.0 * vv,
                                                   beta=1.0, self_score=1.0)], profile)
        worst = max(worst, margin)
        # the deviation from 2/s, measured on the torch model (not the variant's formula)
        built = cons.unbalanced(vv, lam=2.0 * vv, beta=1.0, self_score=1.0)
        metrics, _ = per_position_metrics(built.model, vv, vv - 1, per_length(profile))
        m = metrics["margin_nonquery_min"].mean(0).numpy()  # index s-1
        lengths = np.arange(2, vv)
        deviation = max(deviation, float(np.max(np.abs(m[1:] / m[1] - 2 / lengths) / (2 / lengths))))
    return Outcome(f"formula error {worst:.2g}, max deviation from 2/s {deviation:.3f}",
                   "formula error <= 1e-9, deviation >= 0.1", worst <= TOL and deviation >= 0.1,
                   "formula error: torch margins vs (e^a+1)/(e^a+s-1); deviation: measured torch "
                   "m_s/m_2 vs 2/s, v in (8, 12, 33), a = 1")


@claim("sc.theorem.negative_beta")
def check_theorem_negative_beta(profile):
    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.set_complement.evaluate import per_position_metrics

    mismatches, details = [], []
    for vv in (12, 33, 128):
        lam, beta = vv / 2 + 0.25, -1.0  # crossover s* = v/2 + 0.25, not an integer
        metrics, _ = per_position_metrics(cons.tight(vv, lam, beta).model, vv, vv - 1, per_length(profile))
        top1 = metrics["top1_invalid"].mean(0).numpy()
        lengths = np.arange(1, vv)
        predicted = (lengths > lam / -beta).astype(float)
        mismatches += [int(x) for x in lengths[top1 != predicted]]
        details.append(f"v={vv}: first failing s={int(lengths[top1 > 0][0])}")
    return Outcome("; ".join(details), "first failing s = floor(lambda/-beta) + 1", not mismatches,
                   f"mismatched lengths {mismatches}")


def lemma_errors_by_profile(profile: str) -> list[dict]:
    """:func:`lemma_model_errors` for v in VOCABS[:5] and the profile's seeds."""
    from resharpen.experiments.set_complement.lemma_numerics import lemma_model_errors

    seeds = pick(profile, quick=(0, 1), full=range(6))
    return [lemma_model_errors(vv, seed, per_length(profile)) for vv in VOCABS[:5] for seed in seeds]


@claim("sc.theorem.exact_all_lengths")
def check_theorem_exact_all_lengths(profile):
    errors = lemma_errors_by_profile(profile)
    margin = max(e["margin"] for e in errors)
    spread = max(e["spread"] for e in errors)
    return Outcome(max(margin, spread), f"<= {TOL}", margin <= TOL and spread <= TOL,
                   f"margin error {margin:.2g}, valid-logit spread {spread:.2g}, v in {VOCABS[:5]}")


@claim("sc.theorem.dispersion_budget")
def check_theorem_dispersion_budget(profile):
    errors = lemma_errors_by_profile(profile)
    excess = {k: max(e[k] for e in errors) for k in ("budget", "displacement", "nonquery")}
    return Outcome({k: round(x, 4) for k, x in excess.items()}, "all <= 0 (excess over each bound)",
                   all(x <= TOL for x in excess.values()))


@claim("sc.theorem.dispersion_min_margin_erratum")
def check_theorem_dispersion_min_margin_erratum(profile):
    errors = lemma_errors_by_profile(profile)
    naive = max(e["naive"] for e in errors)
    return Outcome(f"max(min non-query margin - lambda_max/s) = {naive:.3g}", "> 0 (counterexample)",
                   naive > 0.1, "the bound holds for the attention displacements w_i lambda_i over all s "
                   "tokens; the query's margin adds beta_q, so it can leave the s-1 others above lambda_max/s")


@claim("sc.model.decomposition")
def check_model_decomposition(profile):
    import torch

    from resharpen.experiments.model.transformer import ModelConfig, Transformer
    from resharpen.experiments.tasks.set_complement import sample_inputs

    worst = 0.0
    for vv in VOCABS[:5]:
        torch.manual_seed(vv)
        model = Transformer(ModelConfig(vocab=vv, d_model=16, d_head=5, d_value=7, init_std=0.5)).double()
        tokens = sample_inputs(vv, vv - 1, 8, seed=vv)
        with torch.no_grad():
            logits, attention = model(tokens, return_attention=True)
        B, D = model.logit_matrices()
        w = attention[0][:, 0]  # (N, S, S)
        predicted = B[tokens] + torch.einsum("nqk,nkv->nqv", w, D[tokens])
        worst = max(worst, float((predicted - logits).abs().max()))
    return Outcome(worst, "<= 1e-12", worst <= 1e-12)


@claim("sc.rank.below_bound")
def check_rank_below_bound(profile):
    import torch

    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.set_complement.below_bound import minimize, objective

    vocabs = pick(profile, quick=(4, 6), full=(4, 6, 8))
    starts, steps = pick(profile, quick=(12, 800), full=(32, 2000))
    below = {vv: float(minimize(vv, vv - 2, starts, steps, seed=vv, progress=False).min()) for vv in vocabs}
    exact = {}
    for vv in vocabs:
        built = cons.tight(vv, lam=2.0, beta=1.0)
        attn = built.model.blocks[0].attn
        E, U = built.model.W_E[None], built.model.W_U[None]
        M = (attn.W_V[0] @ attn.W_O[0])[None]
        exact[vv] = float(objective(E, U, M, torch.zeros(1, vv, vv, dtype=torch.float64), vv).detach())
    ok = min(below.values()) >= 0.02 and max(exact.values()) <= 1e-20
    return Outcome({vv: round(x, 4) for vv, x in below.items()},
                   f"none found by {starts} starts: each >= 0.02 (d = v-2); 0 at d = v-1", ok,
                   f"tight construction J: {exact}; {starts} starts x {steps} Adam steps (a "
                   "search: a start it did not try could do better)")


@claim("sc.noise.autograd_trace")
def check_noise_autograd_trace(profile):
    import torch

    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.tasks.set_complement import exact_target, sample_inputs

    worst = 0.0
    for vv in (4, 12, 33):
        built = cons.tight(vv, lam=4.0 * vv, beta=1.0)
        for length in range(1, vv):
            tokens = sample_inputs(vv, length, 4, seed=length)
            logits = built.model(tokens)[:, -1].detach().requires_grad_()
            target = exact_target(tokens, vv)
            grads = []
            for y in range(vv):  # the gradient for every label, weighted exactly by p*(y)
                loss = torch.nn.functional.cross_entropy(logits, torch.full((len(tokens),), y), reduction="sum")
                (grad,) = torch.autograd.grad(loss, logits)
                grads.append(grad)
            grads = torch.stack(grads, 1)  # (N, y, v)
            mean = torch.einsum("ny,nyv->nv", target, grads)
            centred = grads - mean[:, None]
            trace = torch.einsum("ny,nyv->n", target, centred**2)
            worst = max(worst, float((trace - sc.gradient_noise_trace_fn(vv, length)).abs().max()))
    return Outcome(worst, "<= 1e-9", worst <= 1e-9)


@claim("sc.construct.save_load")
def check_construct_save_load(profile):
    import torch

    from resharpen.constructions import set_complement as cons

    mismatches = []
    tokens = torch.tensor([[0, 3, 1]])
    for variant, norm, kind in [("tight", "post", "rms"), ("one_hot", "attn_out", "layer"),
                                ("balanced", "none", "rms"), ("unbalanced", "none", "rms")]:
        built = cons.build(variant, 8, norm=norm, norm_kind=kind, lam=5.0, beta=1.0, gain=1.3, seed=3)
        with tempfile.TemporaryDirectory() as folder:
            cons.save(built, folder)
            again = cons.load(folder)
        same_weights = all(torch.equal(a, b) for a, b in zip(built.model.state_dict().values(),
                                                             again.model.state_dict().values()))
        same_logits = torch.equal(built.model(tokens), again.model(tokens))
        if not (same_weights and same_logits and again.params() == built.params()):
            mismatches.append(variant)
    return Outcome(f"{4 - len(mismatches)}/4 identical", "4/4 identical", not mismatches, str(mismatches))
