"""Set Complement theory (docs/theory.md; a reconstruction of arXiv 2510.08341), in sympy.

Every result is a sympy expression or a sympy-checked identity, with a lambdified numeric twin.
Nothing here imports torch; the checks against the torch model live in ``experiments``.

Notation. Vocabulary V = {0..v-1}; input t of s distinct tokens with query q = t_s. A model is
*complement-exact* at length s when all valid tokens (V minus [t]) have equal logits and every
input token a strictly lower one; the margin of input token i is m_i = f_valid - f_i.

Contents
- metric closed forms (invalid mass, TV, KL, cross-entropy) in terms of S = sum_j e^{-m_j};
- the lemma's logit identity, the balanced-attention condition, the harmonic margin H/s, the
  2/s law (derived from the lemma-form logits), the unbalanced (self-attention bias) variant and
  the negative-beta failure length;
- the rank bound rank D >= v-1 through the generalized matrix determinant lemma;
- the margin of every readout of the tight / one-hot constructions (none, attn_out, post, pre)
  as a function of v, s, K = lambda/beta, beta, gain g and width d, derived on class-reduced
  vectors, with the attn_out minimum at s = v/2, the K -> oo limit of post and the K needed for a
  target margin;
- the gradient-noise trace 1 - 1/(v-s), and the trace of the explicit covariance matrix.

Class-reduced vectors. The constructions are symmetric under permutations that fix the query and
the input set, so every vector over V that appears is constant on three classes: the query
(multiplicity 1), the other input tokens (s-1) and the valid tokens (v-s). A vector is stored as
its three class values; norms and centring use the multiplicities, so the derivations hold for
symbolic v and s, not just for sampled sizes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from resharpen.theory.set_complement.readouts import READOUTS

v, s = sp.symbols("v s", positive=True, integer=True)
lam, beta, g, K, d, m = sp.symbols("lambda beta g K d m", positive=True)
S = sp.Symbol("S", nonnegative=True)  # sum over input tokens of e^{-m_i}

# ----------------------------------------------------------------------------- metrics
P_VALID = 1 / (v - s + S)
INVALID_MASS = S / (v - s + S)
KL = -sp.log(1 - INVALID_MASS)
CROSS_ENTROPY = sp.log(v - s) + KL
# Direct definitions, to be proved equal to the closed forms above:
KL_DIRECT = sp.log((1 / (v - s)) / P_VALID)  # sum over v-s valid tokens of p* log(p*/p_valid)
TV_DIRECT = sp.Rational(1, 2) * ((v - s) * (1 / (v - s) - P_VALID) + INVALID_MASS)


def prove_metric_identities() -> dict[str, bool]:
    """KL(p*||p) = -log(1 - invalid mass) and TV = invalid mass, when valid logits are equal."""
    n = sp.Symbol("n", positive=True)  # the number of valid tokens v - s >= 1
    on_valid = {v: s + n}
    return {
        "kl": sp.simplify(sp.expand_log((KL_DIRECT - KL).subs(on_valid), force=True)) == 0,
        "tv": sp.simplify((TV_DIRECT - INVALID_MASS).subs(on_valid)) == 0,
    }


def invalid_mass(vocab, length, margins) -> np.ndarray:
    """Numeric twin: margins (..., s) -> invalid mass sum e^{-m} / (v - s + sum e^{-m})."""
    total = np.exp(-np.asarray(margins, dtype=np.float64)).sum(-1)
    return total / (vocab - length + total)


def kl_from_invalid_mass(mass) -> np.ndarray:
    return -np.log1p(-np.asarray(mass, dtype=np.float64))


# Balanced symmetric case, margins lambda/s (printed by `resharpen derive`)
SYMMETRIC_INVALID_MASS = (s * sp.exp(-lam / s)) / (s * sp.exp(-lam / s) + v - s)

# ----------------------------------------------------------------------------- lemma & theorem


def prove_lemma_logit_identity(vocab: int = 6, length: int = 4) -> bool:
    """With D[x] = u - lambda_x e_x + c_x 1 and B[x] = -u - beta_x e_x + b_x 1, the logits
    f(t) = B[q] + sum_i w_i D[t_i] (sum_i w_i = 1) equal -beta_q e_q - sum_i w_i lambda_{t_i} e_{t_i}
    up to a multiple of 1, for symbolic u, lambda, beta, c, b and attention weights w."""
    u = sp.symbols(f"u0:{vocab}")
    lams = sp.symbols(f"lambda0:{vocab}", positive=True)
    betas = sp.symbols(f"beta0:{vocab}")
    cs = sp.symbols(f"c0:{vocab}")
    bs = sp.symbols(f"b0:{vocab}")
    ws = list(sp.symbols(f"w1:{length}", positive=True))
    ws.append(1 - sum(ws))
    tokens = list(range(length))  # by symmetry any distinct tokens; the query is t_s
    q = tokens[-1]

    def e(x):
        return sp.Matrix([1 if j == x else 0 for j in range(vocab)])

    one = sp.ones(vocab, 1)
    D = [sp.Matrix(u) - lams[x] * e(x) + cs[x] * one for x in range(vocab)]
    B = [-sp.Matrix(u) - betas[x] * e(x) + bs[x] * one for x in range(vocab)]
    f = B[q] + sum((w * D[x] for w, x in zip(ws, tokens)), sp.zeros(vocab, 1))
    claimed = -betas[q] * e(q) - sum((w * lams[x] * e(x) for w, x in zip(ws, tokens)),
                                     sp.zeros(vocab, 1))
    diff = (f - claimed).applyfunc(sp.expand)
    return all(sp.simplify(diff[j] - diff[0]) == 0 for j in range(vocab))


def balanced_score_difference() -> sp.Expr:
    """Solve w lambda_x = (1 - w) lambda_y with w = sigmoid(A[y,x] - A[y,y]) for the score gap."""
    delta = sp.Symbol("delta", real=True)
    lx, ly = sp.symbols("lambda_x lambda_y", positive=True)
    w = sp.exp(delta) / (sp.exp(delta) + 1)
    (solution,) = sp.solve(sp.Eq(w * lx, (1 - w) * ly), delta)
    return sp.simplify(solution)  # log(lambda_y / lambda_x)


def prove_harmonic_margin(length: int = 4) -> bool:
    """Balanced scores A[q,k] = log(lambda_q/lambda_k) give w_i lambda_{t_i} = 1/sum_j 1/lambda_{t_j}
    = H(t)/s for every i: all non-query margins equal the harmonic mean over s."""
    lams = sp.symbols(f"lambda1:{length + 1}", positive=True)
    q = lams[-1]
    scores = [sp.log(q / lk) for lk in lams]
    z = sum(sp.exp(a) for a in scores)
    harmonic = length / sum(1 / lk for lk in lams)
    return all(sp.simplify(sp.exp(a) / z * lk - harmonic / length) == 0
               for a, lk in zip(scores, lams))


def harmonic_margin(lambdas_of_input) -> np.ndarray:
    """Numeric twin: H(t)/s = 1 / sum_i 1/lambda_{t_i} over the last axis."""
    return 1.0 / (1.0 / np.asarray(lambdas_of_input, dtype=np.float64)).sum(-1)


def balanced_margin_ratios(vocab: int = 8) -> dict[int, sp.Expr]:
    """m_s / m_2 for every s = 2..v-1, derived from the lemma-form logits (equal lambdas).

    D[x] = u - lambda e_x and B[x] = -u - beta e_x with a symbolic vector u; balanced scores
    A[q,k] = log(lambda_q / lambda_k) (:func:`balanced_score_difference`) give the softmax weights
    w_i over the s input tokens t = (0, ..., s-1), query q = t_s; the logits are
    f = B[q] + sum_i w_i D[t_i], and the non-query margin m_s is the logit of a valid token (s)
    minus that of the non-query input token t_1. Nothing assumes m_s = lambda/s: the ratio is
    whatever these logits give (2/s is the theorem's prediction)."""
    if not isinstance(vocab, int) or vocab < 3:
        raise ValueError(f"vocab must be an int >= 3 (lengths 2..v-1), got {vocab!r}")
    u = sp.Matrix(sp.symbols(f"u0:{vocab}"))
    lams = [lam] * vocab  # equal lambdas

    def e(x: int) -> sp.Matrix:
        return sp.Matrix([1 if j == x else 0 for j in range(vocab)])

    D = [u - lams[x] * e(x) for x in range(vocab)]
    B = [-u - beta * e(x) for x in range(vocab)]
    margins = {}
    for length in range(2, vocab):
        tokens = list(range(length))
        q = tokens[-1]
        scores = [sp.log(lams[q] / lams[k]) for k in tokens]
        weights = [sp.exp(a) / sum(sp.exp(b) for b in scores) for a in scores]
        f = B[q] + sum((w * D[k] for w, k in zip(weights, tokens)), sp.zeros(vocab, 1))
        margins[length] = sp.simplify(f[length] - f[tokens[0]])
    return {length: sp.simplify(m_s / margins[2]) for length, m_s in margins.items()}


a_self = sp.Symbol("a", real=True)
# Uniform lambda, attention score a on the query itself and 0 elsewhere (unbalanced unless a=0).
UNBALANCED_NONQUERY = lam / (sp.exp(a_self) + s - 1)
UNBALANCED_QUERY = beta + lam * sp.exp(a_self) / (sp.exp(a_self) + s - 1)
unbalanced_margins = sp.lambdify((v, s, lam, beta, a_self),
                                 (UNBALANCED_NONQUERY, UNBALANCED_QUERY), "numpy")


def unbalanced_ratio() -> sp.Expr:
    """m_s / m_2 for the self-biased attention: (e^a + 1)/(e^a + s - 1), which is 2/s iff a = 0."""
    return sp.simplify(UNBALANCED_NONQUERY / UNBALANCED_NONQUERY.subs(s, 2))


def negative_beta_crossover() -> sp.Expr:
    """With beta < 0 the query margin beta + lambda/s is negative exactly for s > lambda/(-beta)."""
    negative = sp.Symbol("beta", negative=True)  # beta itself, here below zero
    (root,) = sp.solve(sp.Eq(negative + lam / s, 0), s)
    return root


# ----------------------------------------------------------------------------- rank bound


def _rank_bound_matrices(vocab: int):
    """(lambdas, u, c, 1, Lambda, X, Y, M = Y^T Lambda^-1 X) of :func:`prove_rank_bound`."""
    lams = sp.symbols(f"lambda0:{vocab}", positive=True)
    u = sp.Matrix(sp.symbols(f"u0:{vocab}"))
    c = sp.Matrix(sp.symbols(f"c0:{vocab}"))
    one = sp.ones(vocab, 1)
    Lam = sp.diag(*lams)
    X, Y = one.row_join(c), u.row_join(one)
    return lams, u, c, one, Lam, X, Y, Y.T * Lam.inv() * X


def rank_bound_M10(vocab: int = 4) -> sp.Expr:
    """M[1,0] = 1^T Lambda^-1 1 of :func:`prove_rank_bound` alone (no determinants: fast)."""
    return sp.simplify(_rank_bound_matrices(vocab)[-1][1, 0])


def prove_rank_bound(vocab: int = 4) -> dict[str, object]:
    """D = 1 u^T - Lambda + c 1^T = -(Lambda - X Y^T), X = [1, c], Y = [u, 1].

    Generalized determinant lemma: det(Lambda - X Y^T) = det(Lambda) det(I_2 - Y^T Lambda^-1 X),
    and nullity(Lambda - X Y^T) = nullity(I_2 - M), M = Y^T Lambda^-1 X. Nullity 2 would need
    M = I_2, but M[1,0] = 1^T Lambda^-1 1 = sum_x 1/lambda_x > 0. So nullity <= 1: rank D >= v-1,
    hence d >= v-1 and d_v >= v-1 (rank D <= min(d, d_v))."""
    lams, u, c, one, Lam, X, Y, M = _rank_bound_matrices(vocab)
    lhs = (Lam - X * Y.T).det()
    rhs = Lam.det() * (sp.eye(2) - M).det()
    D = one * u.T - Lam + c * one.T
    return {
        "determinant_lemma": sp.simplify(lhs - rhs) == 0,
        "D_is_minus_low_rank_update": sp.simplify(D + (Lam - X * Y.T)) == sp.zeros(vocab),
        "M10": sp.simplify(M[1, 0]),
        "M10_is_sum_inverse_lambda": sp.simplify(M[1, 0] - sum(1 / x for x in lams)) == 0,
    }


# ----------------------------------------------------------------------------- readouts


@dataclass(frozen=True)
class ClassVec:
    """A vector over V that is constant on the classes (query, other inputs, valid tokens)."""

    q: sp.Expr
    o: sp.Expr
    val: sp.Expr

    MULT = (1, s - 1, v - s)

    def __add__(self, other: "ClassVec") -> "ClassVec":
        return ClassVec(self.q + other.q, self.o + other.o, self.val + other.val)

    def scale(self, c: sp.Expr) -> "ClassVec":
        return ClassVec(c * self.q, c * self.o, c * self.val)

    def total(self) -> sp.Expr:
        return self.q + (s - 1) * self.o + (v - s) * self.val

    def centred(self) -> "ClassVec":
        mean = self.total() / v
        return ClassVec(self.q - mean, self.o - mean, self.val - mean)

    def norm(self) -> sp.Expr:
        return sp.sqrt(self.q**2 + (s - 1) * self.o**2 + (v - s) * self.val**2)


E_Q = ClassVec(sp.Integer(1), sp.Integer(0), sp.Integer(0))
ONE_T = ClassVec(sp.Integer(1), sp.Integer(1), sp.Integer(0))


def _normalize(z: ClassVec, centred: bool) -> ClassVec:
    """N(h) for a residual h with token-space image z, up to multiples of 1 in the logits:
    g sqrt(d) z / |c(z)|, with c = centring when the embedding lives in 1-perp (tight, RMSNorm)
    or the norm centres (LayerNorm), and c = identity for RMSNorm on one-hot embeddings."""
    size = z.centred().norm() if centred else z.norm()
    return z.scale(g * sp.sqrt(d) / size)


def readout_residual(readout: str, centred: bool) -> ClassVec:
    """Token-space image z of the final residual; logits are -beta z (mod 1).

    In the constructions E[x] has token image e_x, the attention output of the last position has
    image (K/s) 1_t with K = lambda/beta (uniform attention), and U maps image z to logits -beta z.
        none      z = e_q + (K/s) 1_t
        attn_out  z = e_q + N((K/s) 1_t)
        post      z = N(e_q + (K/s) 1_t)
        pre       z = N(e_q + (K'/s) 1_t),  K' = K g sqrt(d) / |c(e_x)|  (N before attention)
    """
    if readout not in READOUTS:
        raise ValueError(f"readout {readout!r} is not one of {READOUTS}")
    attended = ONE_T.scale(K / s)
    if readout == "none":
        return E_Q + attended
    if readout == "attn_out":
        return E_Q + _normalize(attended, centred)
    if readout == "post":
        return _normalize(E_Q + attended, centred)
    unit = sp.sqrt((v - 1) / v) if centred else sp.Integer(1)  # |c(e_x)|
    return _normalize(E_Q + ONE_T.scale(K * g * sp.sqrt(d) / unit / s), centred)


@lru_cache(maxsize=None)
def readout_margin_exprs(readout: str, centred: bool = True) -> tuple[sp.Expr, sp.Expr]:
    """(non-query margin, query margin) = beta (z_o - z_val), beta (z_q - z_val), simplified."""
    tidy = _tidy if readout != "pre" else (lambda e: e)  # pre: left as the rescaled post form
    return tuple(tidy(e) for e in raw_readout_margin_exprs(readout, centred))


@lru_cache(maxsize=None)
def raw_readout_margin_exprs(readout: str, centred: bool = True) -> tuple[sp.Expr, sp.Expr]:
    """The same margins as :func:`readout_margin_exprs` as the derivation leaves them, not
    simplified (no ``sp.simplify``, which takes seconds): what the numeric twin
    :func:`readout_margins` evaluates."""
    z = readout_residual(readout, centred)
    return beta * (z.o - z.val), beta * (z.q - z.val)


def _tidy(expr: sp.Expr) -> sp.Expr:
    """Simplify with v - 1 >= 1 and v - s >= 1 made explicit (w = v - 1, n = v - s)."""
    w, n = sp.symbols("w n", positive=True)
    tidy = sp.simplify(sp.factor(sp.simplify(expr.subs(v, s + n))))
    return sp.simplify(tidy.subs(n, v - s))


@lru_cache(maxsize=None)
def _readout_margin_fn(readout: str, centred: bool):
    return sp.lambdify((v, s, K, beta, g, d), raw_readout_margin_exprs(readout, centred),
                       "numpy")


def readout_margins(readout: str, vocab, length, lam_value, beta_value, gain, width,
                    centred: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Numeric twin: (non-query margin, query margin) of a construction's readout."""
    fn = _readout_margin_fn(readout, centred)
    length = np.asarray(length, dtype=np.float64)
    nq, q = fn(float(vocab), length, lam_value / beta_value, float(beta_value), float(gain),
               float(width))
    return np.broadcast_to(nq, length.shape).astype(np.float64), np.broadcast_to(q, length.shape).astype(np.float64)


@lru_cache(maxsize=None)
def attn_out_minimum() -> dict[str, sp.Expr]:
    """The attn_out non-query margin beta g sqrt(d v / (s (v - s))) is minimal at s = v/2."""
    margin, _ = readout_margin_exprs("attn_out", True)
    x = sp.Symbol("x", positive=True)  # s as a continuous variable
    continuous = margin.subs(s, x)
    (critical,) = [r for r in sp.solve(sp.diff(continuous, x), x) if r.is_positive is not False]
    second = sp.simplify(sp.diff(continuous, x, 2).subs(x, critical))
    return {"argmin": sp.simplify(critical), "minimum": sp.simplify(continuous.subs(x, critical)),
            "second_derivative": second}


def post_limit_large_K() -> sp.Expr:
    """lim_{K -> oo} of the post non-query margin (equals the attn_out margin)."""
    margin, _ = readout_margin_exprs("post", True)
    return sp.simplify(sp.limit(margin, K, sp.oo))


def post_K_for_margin() -> list[sp.Expr]:
    """The K = lambda/beta at which the post non-query margin equals a target m (positive root)."""
    margin, _ = readout_margin_exprs("post", True)
    roots = sp.solve(sp.Eq(margin**2, m**2), K)
    return [sp.simplify(r) for r in roots]


@lru_cache(maxsize=None)
def _post_K_fn():
    return sp.lambdify((v, s, beta, g, d, m), post_K_for_margin(), "numpy")


def post_K_needed(vocab, length, target, beta_value=1.0, gain=1.0, width=None) -> float:
    """Numeric twin of :func:`post_K_for_margin`: the smallest K > 0 reaching ``target``
    (inf when the target is at or above the K -> oo limit)."""
    width = vocab - 1 if width is None else width
    with np.errstate(invalid="ignore"):  # no real root: the target is above the K -> oo limit
        roots = np.atleast_1d(np.array(_post_K_fn()(vocab, length, beta_value, gain, width, target),
                                       dtype=complex))
    good = [r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0]
    reached = [k for k in good if np.isclose(
        readout_margins("post", vocab, length, k * beta_value, beta_value, gain, width)[0],
        target, rtol=1e-9)]
    return min(reached) if reached else float("inf")


# ----------------------------------------------------------------------------- gradient noise


GRADIENT_NOISE_TRACE = 1 - 1 / (v - s)
"""The closed form of tr Cov(e_y - p*), y ~ p*, at length s (checked by
:func:`gradient_noise_trace` against the covariance itself)."""


def gradient_noise_trace(vocab: int, length: int) -> sp.Rational:
    """tr Cov(e_y - p*) with y ~ p*, from the definition, in exact rationals.

    p* is uniform on the v - s valid tokens (the inputs are tokens 0..s-1); the covariance
    sum_y p*(y) (e_y - p*)(e_y - p*)^T is built as an explicit v x v sympy matrix and its trace
    taken. Nothing here uses the closed form :data:`GRADIENT_NOISE_TRACE`."""
    if not (isinstance(vocab, int) and isinstance(length, int) and 1 <= length < vocab):
        raise ValueError(f"need integers 1 <= length < vocab, got vocab={vocab!r}, "
                         f"length={length!r}")
    p_star = sp.Matrix([0 if y < length else sp.Rational(1, vocab - length) for y in range(vocab)])
    cov = sp.zeros(vocab, vocab)
    for y in range(vocab):
        centred = sp.Matrix([1 if j == y else 0 for j in range(vocab)]) - p_star
        cov += p_star[y] * centred * centred.T
    return cov.trace()


gradient_noise_trace_fn = sp.lambdify((v, s), GRADIENT_NOISE_TRACE, "numpy")


# ----------------------------------------------------------------------------- derivations

DERIVATION_SYMBOLS: dict[str, str] = {
    "v": "vocabulary size",
    "s": "input length (number of distinct input tokens, the query last)",
    "S": "sum over the input tokens of exp(-m_i), m_i the margin of input token i",
    "m": "a target non-query margin",
    "lambda": "displacement scale of the construction (equal for every token)",
    "lambda_x": "displacement of token x", "lambda_y": "displacement of token y",
    **{f"lambda{i}": f"displacement of token {i}" for i in range(4)},
    "beta": "direct-path scale (the query's own logit weight)",
    "a": "attention score of the query on itself (0 elsewhere)",
    "K": "lambda/beta, the attention-path to direct-path ratio",
    "g": "norm gain",
    "d": "model width",
}
"""The legend of the symbols printed by :func:`derivations` (one symbol per quantity)."""


def derivations() -> list[tuple[str, str, object]]:
    """(name, title, compute) of every printed derivation of `resharpen derive` (Set Complement
    part); ``compute()`` returns the sympy expression, derived when called."""
    def margins(readout: str):
        return lambda: sp.Tuple(*readout_margin_exprs(readout, True))

    def pre_margins():
        return sp.Tuple(*(e.subs(K, K * g * sp.sqrt(d * v / (v - 1)))
                          for e in readout_margin_exprs("post", True)))

    return [
        ("sc.invalid_mass", "invalid mass of margins m_i (S = sum_i exp(-m_i))",
         lambda: INVALID_MASS),
        ("sc.kl", "KL(p* || p) = -log(1 - invalid mass)", lambda: KL),
        ("sc.cross_entropy", "cross-entropy against p*", lambda: CROSS_ENTROPY),
        ("sc.symmetric_invalid_mass", "invalid mass, balanced, margins lambda/s",
         lambda: SYMMETRIC_INVALID_MASS),
        ("sc.score_gap", "balanced length-2 score gap A[y,x] - A[y,y]", balanced_score_difference),
        ("sc.two_over_s", "2/s law: m_s / m_2 for s = 2..7 (lemma-form logits, balanced, v = 8)",
         lambda: sp.Tuple(*balanced_margin_ratios(8).values())),
        ("sc.unbalanced", "unbalanced (self score a): m_s / m_2", unbalanced_ratio),
        ("sc.negative_beta", "beta < 0: the query margin is negative for s greater than",
         negative_beta_crossover),
        ("sc.rank_bound", "rank bound: M[1,0] = 1^T Lambda^-1 1 (v = 4)", lambda: rank_bound_M10(4)),
        ("sc.margin.none", "margin, no norm (non-query, query)", margins("none")),
        ("sc.margin.attn_out", "margin, attn_out (non-query, query), centred", margins("attn_out")),
        ("sc.margin.post", "margin, post (non-query, query), centred", margins("post")),
        ("sc.margin.pre", "margin, pre = post with K -> K g sqrt(d v/(v-1)) (by construction; the "
         "torch pre model is checked against it: sc.readout.pre)", pre_margins),
        ("sc.attn_out.argmin", "attn_out margin: argmin over s",
         lambda: attn_out_minimum()["argmin"]),
        ("sc.attn_out.minimum", "attn_out margin: minimum", lambda: attn_out_minimum()["minimum"]),
        ("sc.post.large_K", "post margin as K -> oo", post_limit_large_K),
        ("sc.post.K_for_margin", "post: K reaching non-query margin m (both roots)",
         lambda: sp.Tuple(*post_K_for_margin())),
        ("sc.noise_trace", "gradient-noise trace tr Cov(e_y - p*), closed form",
         lambda: GRADIENT_NOISE_TRACE),
    ]
