"""Ledger claims of the Set Complement theory that are checked without a model (sympy, numpy).

Source: THEORY.md's reconstruction of arXiv 2510.08341 (the paper's full text is not public, so
every statement below is marked "reconstructed"; the abstract-level facts they agree with are
listed in ../shared/papers/notes_2510.08341.md)."""
from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from theory import set_complement as sc
from theory.claims import Outcome, claim

SRC = "arXiv 2510.08341 (reconstructed)"


@claim("sc.metrics.closed_forms", source=SRC, kind="symbolic", tolerance="exact (sympy)",
       statement="With equal valid logits: TV = invalid mass and KL(p*||p) = -log(1 - invalid mass)")
def _(profile):
    proofs = sc.prove_metric_identities()
    return Outcome(str(proofs), "{'kl': True, 'tv': True}", all(proofs.values()))


@claim("sc.lemma.logit_identity", source=SRC + ", Lemma", kind="symbolic", tolerance="exact (sympy)",
       statement="D[x] == u - lambda_x e_x and B[x] == -u - beta_x e_x give f(t) == -beta_q e_q - sum_i w_i lambda_i e_{t_i}")
def _(profile):
    sizes = [(6, 4)] if profile == "quick" else [(5, 2), (6, 4), (7, 6)]
    ok = all(sc.prove_lemma_logit_identity(vv, ss) for vv, ss in sizes)
    return Outcome(ok, True, ok, f"symbolic u, lambda, beta, row constants, weights; (v, s) in {sizes}")


def lemma_nullspace_dimension(vocab: int, seed: int = 0) -> tuple[int, int]:
    """Dimension of the space of (B, D) whose logits have equal valid entries at lengths 1 and 2
    (random attention weights w_xy in (0, 1)), and the dimension of the lemma's family
    {B = -1u^T - diag(beta) + b1^T, D = 1u^T - diag(lambda) + c1^T}, which is 5v - 1."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.05, 0.95, size=(vocab, vocab))
    rows = []

    def equal_valid(coeff_b: dict, coeff_d: dict, invalid: set) -> None:
        valid = [j for j in range(vocab) if j not in invalid]
        for j in valid[1:]:  # f_j - f_{valid[0]} = 0
            row = np.zeros(2 * vocab * vocab)
            for (x, c) in coeff_b.items():
                row[x * vocab + j] += c
                row[x * vocab + valid[0]] -= c
            for (x, c) in coeff_d.items():
                row[vocab * vocab + x * vocab + j] += c
                row[vocab * vocab + x * vocab + valid[0]] -= c
            rows.append(row)

    for x in range(vocab):
        equal_valid({x: 1.0}, {x: 1.0}, {x})
    for x, y in itertools.permutations(range(vocab), 2):  # query y, other token x
        equal_valid({y: 1.0}, {x: w[x, y], y: 1.0 - w[x, y]}, {x, y})
    A = np.array(rows)
    singular = np.linalg.svd(A, compute_uv=False)
    rank = int((singular > singular[0] * 1e-10).sum())
    return 2 * vocab * vocab - rank, 5 * vocab - 1


@claim("sc.lemma.nullspace", source=SRC + ", Lemma (needs v >= 4)", kind="numeric",
       tolerance="exact integer dimensions (SVD rank at rel 1e-10)",
       statement="For v >= 4 the (B, D) with equal valid logits at lengths 1, 2 are exactly the lemma's (5v-1)-dim family; v = 3 admits more")
def _(profile):
    vocabs = (4, 5, 8) if profile == "quick" else (4, 5, 8, 12)
    dims = {vv: lemma_nullspace_dimension(vv) for vv in vocabs}
    small, family3 = lemma_nullspace_dimension(3)
    ok = all(a == b for a, b in dims.values()) and small > family3
    return Outcome({vv: a for vv, (a, b) in dims.items()} | {3: small},
                   {vv: b for vv, (a, b) in dims.items()} | {3: f"> {family3}"}, ok,
                   "solution-space dimension vs 5v-1; at v = 3 the lemma's hypothesis v >= 4 fails")


@claim("sc.theorem.balanced_condition", source=SRC + ", Theorem part 3", kind="symbolic",
       tolerance="exact (sympy)",
       statement="Balance at length 2, w lambda_x = (1-w) lambda_y, forces A[y,x] - A[y,y] = log(lambda_y / lambda_x)")
def _(profile):
    lx, ly = sp.symbols("lambda_x lambda_y", positive=True)
    got = sc.balanced_score_difference()
    want = sp.log(ly / lx)
    return Outcome(str(got), str(want), sp.simplify(sp.expand_log(got - want, force=True)) == 0)


@claim("sc.theorem.harmonic_symbolic", source=SRC + ", Theorem part 3", kind="symbolic",
       tolerance="exact (sympy)",
       statement="With balanced scores every non-query margin w_i lambda_{t_i} equals H(t)/s (harmonic mean over s)")
def _(profile):
    ok = all(sc.prove_harmonic_margin(n) for n in ((3, 4) if profile == "quick" else (2, 3, 4, 6)))
    return Outcome(ok, True, ok)


@claim("sc.theorem.two_over_s_symbolic", source="arXiv 2510.08341 ('precision decays roughly as 2/s')",
       kind="symbolic", tolerance="exact (sympy)",
       statement="Equal lambdas, balanced: m_s / m_2 = 2/s")
def _(profile):
    got = sc.two_over_s_ratio()
    return Outcome(str(got), "2/s", sp.simplify(got - 2 / sc.s) == 0)


@claim("sc.rank.symbolic", source=SRC + ", dimension bound", kind="symbolic", tolerance="exact (sympy, v = 4)",
       statement="det(L - XY^T) = det L det(I - Y^T L^-1 X) and M[1,0] = sum 1/lambda > 0, so rank D >= v-1")
def _(profile):
    proof = sc.prove_rank_bound(4 if profile == "quick" else 5)
    ok = proof["determinant_lemma"] and proof["D_is_minus_low_rank_update"] and proof["M10_is_sum_inverse_lambda"]
    return Outcome(str(proof["M10"]), "sum_x 1/lambda_x", ok)


def min_rank_random(vocab: int, trials: int, seed: int = 0) -> tuple[int, int]:
    """Smallest numerical rank of D = 1u^T - Lambda + c1^T over random (lambda > 0, u, c), and
    over adversarial c chosen to make det D = 0 (showing v-1 is attained)."""
    rng = np.random.default_rng(seed)
    smallest, adversarial = vocab, vocab
    one = np.ones(vocab)
    for _ in range(trials):
        lam = rng.uniform(0.1, 10.0, vocab)
        u, c = rng.normal(size=vocab) * 5, rng.normal(size=vocab) * 5
        D = np.outer(one, u) - np.diag(lam) + np.outer(c, one)
        smallest = min(smallest, np.linalg.matrix_rank(D, tol=1e-9 * np.abs(D).max()))
        # det(I - M) = 0 is linear in c given the rest: solve for a scale of c along a direction.
        inv = 1 / lam
        a11, a21 = u @ (inv * one), inv.sum()
        # (1 - a11)(1 - r c'.inv) - (u.(inv*c))(a21) = 0 with c = r * c0 -> r
        c0 = rng.normal(size=vocab)
        p, q = (inv * c0).sum(), u @ (inv * c0)
        r = (1 - a11) / ((1 - a11) * p + q * a21)
        D0 = np.outer(one, u) - np.diag(lam) + np.outer(r * c0, one)
        adversarial = min(adversarial, np.linalg.matrix_rank(D0, tol=1e-9 * np.abs(D0).max()))
    return smallest, adversarial


@claim("sc.rank.random", source=SRC + ", dimension bound (tight)", kind="numeric",
       tolerance="numerical rank at rel 1e-9",
       statement="rank(1u^T - Lambda + c1^T) >= v-1 over random lambda > 0, u, c; v-1 is attained")
def _(profile):
    trials = 200 if profile == "quick" else 2000
    results = {vv: min_rank_random(vv, trials, seed=vv) for vv in (4, 5, 8, 12, 33)}
    ok = all(low >= vv - 1 and adv == vv - 1 for vv, (low, adv) in results.items())
    return Outcome({vv: tuple(int(x) for x in r) for vv, r in results.items()}, {vv: (vv - 1, vv - 1) for vv in results}, ok,
                   "(min rank over random, min rank with adversarial c)")


@claim("sc.readout.attn_out_minimum", source=SRC + ", Post-Norm resharpens", kind="symbolic",
       tolerance="exact (sympy)",
       statement="attn_out margin beta g sqrt(d v/(s(v-s))) is minimal at s = v/2, value 2 beta g sqrt(d/v)")
def _(profile):
    found = sc.attn_out_minimum()
    ok = (sp.simplify(found["argmin"] - sc.v / 2) == 0
          and sp.simplify(found["minimum"] - 2 * sc.beta * sc.g * sp.sqrt(sc.d / sc.v)) == 0
          and found["second_derivative"].is_positive)
    return Outcome(f"argmin {found['argmin']}, min {found['minimum']}", "v/2, 2*beta*g*sqrt(d/v)", bool(ok))


@claim("sc.readout.post_limit", source=SRC + ", Post-Norm resharpens", kind="symbolic",
       tolerance="exact (sympy)",
       statement="post (N(x_q + o)) margin tends to the attn_out margin as K = lambda/beta -> infinity")
def _(profile):
    got = sc.post_limit_large_K()
    want = sc.readout_margin_exprs("attn_out", True)[0]
    return Outcome(str(got), str(want), sp.simplify(got - want) == 0)


@claim("sc.readout.pre_is_rescaled_post", source=SRC + ", readouts (one layer)", kind="symbolic",
       tolerance="|difference| < 1e-40 at 8 random rational points, 50 digits",
       statement="One layer: pre (N before attention + final N) = post with K -> K g sqrt(d)/|c(e_x)|")
def _(profile):
    ok = sc.pre_equals_post_rescaled(True) and sc.pre_equals_post_rescaled(False)
    return Outcome(ok, True, ok, "centred (tight RMSNorm, one-hot LayerNorm) and uncentred (one-hot RMSNorm)")


@claim("sc.readout.paper_numbers", source="THEORY.md numbers (v = 12, beta = g = 1)", kind="numeric",
       tolerance="abs 5e-5 (4 d.p. as printed)",
       statement="attn_out 3.4641, 2.5690, 2.2111, 1.9149 (s=1,2,3,6); post K=6: 2.1756, 1.4958, 1.5988; K=6000: 2.5686, 1.9145, 3.4635 (s=2,6,11)")
def _(profile):
    expected = [3.4641, 2.5690, 2.2111, 1.9149, 2.1756, 1.4958, 1.5988, 2.5686, 1.9145, 3.4635]
    got = list(sc.readout_margins("attn_out", 12, np.array([1, 2, 3, 6]), 1.0, 1.0, 1.0, 11)[0])
    got += list(sc.readout_margins("post", 12, np.array([2, 6, 11]), 6.0, 1.0, 1.0, 11)[0])
    got += list(sc.readout_margins("post", 12, np.array([2, 6, 11]), 6000.0, 1.0, 1.0, 11)[0])
    err = max(abs(a - b) for a, b in zip(got, expected))
    return Outcome([round(float(x), 4) for x in got], expected, err < 5e-5, f"max abs error {err:.2e}")


@claim("sc.readout.post_K_needed", source=SRC + ", Post-Norm resharpens", kind="symbolic",
       tolerance="rel 1e-9 (plug back)",
       statement="The K giving a post margin m solves a quadratic; plugging it back gives m")
def _(profile):
    worst = 0.0
    for vv, ss, target in [(12, 6, 1.4958), (64, 32, 1.0), (64, 3, 2.0), (128, 100, 1.5)]:
        k_needed = sc.post_K_needed(vv, ss, target)
        got = sc.readout_margins("post", vv, np.array([ss]), k_needed, 1.0, 1.0, vv - 1)[0][0]
        worst = max(worst, abs(got - target) / target)
    limit = sc.post_K_needed(12, 6, 5.0)  # above the K -> oo limit 1.9149: unreachable
    return Outcome(worst, "<= 1e-9; unreachable target -> inf", worst <= 1e-9 and limit == float("inf"))


@claim("sc.noise.trace_symbolic", source="arXiv 2510.08341 (noisy gradients; trace reconstructed)",
       kind="symbolic", tolerance="exact (sympy)",
       statement="Sampled labels y ~ p*: tr Cov(p* - e_y) = tr(diag p* - p* p*^T) = 1 - 1/(v-s)")
def _(profile):
    got = sc.gradient_noise_trace()
    return Outcome(str(got), "1 - 1/(v - s)", sp.simplify(got - (1 - 1 / (sc.v - sc.s))) == 0)
