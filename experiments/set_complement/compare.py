"""Trained weights held against the construction: the lemma's fit and what it predicts.

For the one-layer, one-head, attention-only model without norms (docs/theory.md, section 2)
the logits at the last position are f(t) = B[t_s] + sum_i w_i(t) D[t_i], with B = W_E W_U and
D = W_E W_V W_O W_U (``Transformer.logit_matrices``). The lemma (section 4) says exactness at
lengths 1 and 2 forces

    D[x] == u - lambda_x e_x,    B[x] == -u - beta_x e_x       (== : up to a multiple of 1).

This module measures how far a model is from that family and what its nearest member predicts:

- :func:`fit_lemma`: the least-squares member (u, lambda, beta) and the relative residual;
- attention balance per length s >= 2, each the largest value over the sampled inputs, 0 when
  perfect: *uniformity* max_i |s w_i - 1| (the tight construction attends uniformly) and
  *imbalance* max_i |s d_i / sum_j d_j - 1| of the displacements d_i = w_i lambda_{t_i} with the
  fitted lambdas (the theorem's balance, section 5.3: every d_i equal);
- per length, the exact metrics (mean invalid mass, mean smallest non-query margin, mean query
  margin; ``metrics.complement_metrics``) of three logit functions on the same inputs:
    ``trained``       the model itself;
    ``fit``           the fitted B, D with the model's own attention weights: the model with
                      its B, D replaced by their projection on the family (isolates the fit);
    ``construction``  the fitted lambda, beta with balanced attention w_i ~ 1/lambda_{t_i}: the
                      theorem's balanced construction (``constructions.set_complement.balanced``,
                      here with per-token beta), margins H(t)/s and beta_q + H(t)/s. Only when
                      every fitted lambda is > 0; otherwise no construction has these lambdas and
                      its fields are None.

:func:`compare_run` gathers these as plain records; ``resharpen compare RUN`` prints them.

Placements (:func:`placements`: the registry's ``lemma_readout`` schemes, today none, pre,
pre_nofinal, post, attn_out and peri). In the one-layer attention-only model every one of them
reads out, at each prefix, logits of the one form
(:class:`Readout`, :func:`readout`)

    f(t) = c(t) (B*[t_s] + a(t) sum_i w_i D*[t_i]) + e,

with the norms' gains (and, for LayerNorm, their centring) folded into the *gain-folded* logit
maps B*, D*, the input norm of pre and peri folded into the value rows (it acts on each token's
embedding alone), and two positive scalars per input and position: a = 1 / sigma(o) for a norm
on the attention output o (attn_out, peri; else 1) and c = 1 / sigma(r) for a norm on the
residual r (post, pre, peri; else 1), sigma the norm's RMS (or standard deviation). e is the
logits of the norms' biases (LayerNorm; 0 otherwise). For none B*, D* are the plain B, D and
a = c = 1: the lemma's own model. The fit is the lemma fit of (B*, D*) (``fit_report``'s
gain-folded fit, here for every placement), and the three sources above keep the model's own
a, c (``fit``) or recompute them on the model's residual under balanced attention
(``construction``: the fitted construction read out through the model's own norms).

Every number gets its reference: the relative residual of a random model of the same config
(its initialization, seeded: :func:`random_residual`, about 0.9), the chance invalid mass s/v
of the uniform prediction at each length, the construction's margins beside the trained ones.
Other placements (mixln, ln_scaling, ngpt), positions, MLPs, several layers or heads are refused
with a ValueError instead of reporting numbers that do not apply.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.model import schemes
from resharpen.experiments.model.transformer import Transformer
from resharpen.experiments.tasks.set_complement import check_length, sample_inputs
from resharpen.experiments.set_complement.metrics import complement_metrics

WEIGHT_SETS = ("raw", "ema", "bema")
SOURCES = ("trained", "fit", "construction")
PATTERN = "blocks.0.attn.hook_pattern"


@dataclass(frozen=True)
class LemmaFit:
    """The lemma-form member nearest to (B, D): u (in 1-perp), lambda_x and beta_x per token, and
    the residual relative to the centred matrices (all of them, D's rows, B's rows)."""

    u: np.ndarray
    lambdas: np.ndarray
    betas: np.ndarray
    relative_residual: float
    relative_residual_D: float
    relative_residual_B: float

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """(B, D) of the fitted member: B = -1 u^T - diag(beta), D = 1 u^T - diag(lambda)."""
        shared = np.outer(np.ones_like(self.u), self.u)
        return -shared - np.diag(self.betas), shared - np.diag(self.lambdas)


def fit_lemma(B: np.ndarray | torch.Tensor, D: np.ndarray | torch.Tensor) -> LemmaFit:
    """Least-squares fit of the rows of D and B by the lemma's family, modulo the ones vector.

    Problem: minimize over u, lambda, beta in R^v and shifts c, d in R^v
        sum_x ||D[x] - u + lambda_x e_x - c_x 1||^2 + ||B[x] + u + beta_x e_x - d_x 1||^2.
    *Why it is linear.* For fixed (u, lambda, beta) each shift is the best multiple of 1 for its
    own row, which leaves that row's projection on 1-perp: with P = I - 11^T/v the objective is
    sum_x ||P D[x] - P u + lambda_x P e_x||^2 + ||P B[x] + P u + beta_x P e_x||^2, whose residual
    is affine in (u, lambda, beta): an ordinary linear least-squares problem. Only P u enters, so
    u is taken in 1-perp, u = Q a with Q an orthonormal basis of 1-perp; the design then has full
    column rank 3v - 1 for v >= 3 (a null vector would need lambda_x P e_x = P u for every x,
    impossible for lambda != 0 as the P e_x are pairwise independent when v >= 3; at v = 2 they
    are opposite and the fit is not unique). It is solved in closed form, in float64 (median 0.2
    ms at v = 64, one thread, against about 90 ms for a dense least-squares solve of the
    2v^2 x (3v - 1) design;
    ``tests/set_complement/test_compare.py`` holds it to that solve):
    *the minimizer* (normal equations; D~ = D P, B~ = B P the centred rows, Pi_x = P -
    (v/(v-1)) P e_x e_x^T P the projector of 1-perp orthogonal to P e_x, sum_x Pi_x =
    v(v-2)/(v-1) P):
        u       = (v-1) / (2 v (v-2)) sum_x Pi_x (D~[x] - B~[x]),
        lambda_x = v/(v-1) (u_x - D~[x,x]),   beta_x = -v/(v-1) (u_x + B~[x,x]).
    Relative residual: ||residual||_F / ||[B~; D~]||_F (0 exactly on the family; about
    sqrt(1 - (3v-1)/(2v(v-1))) for i.i.d. Gaussian entries, which fill 2v(v-1) centred
    dimensions of which the fit spans 3v-1). ValueError unless B and D are finite
    v x v with v >= 3 and not both constant along every row."""
    B = np.asarray(B, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    if B.ndim != 2 or B.shape[0] != B.shape[1] or B.shape != D.shape:
        raise ValueError(f"B and D must be square v x v matrices of one shape, got {B.shape} and "
                         f"{D.shape}")
    v = B.shape[0]
    if v < 3:
        raise ValueError(f"the lemma fit needs v >= 3 (at v = 2 it is not unique), got v = {v}")
    if not (np.isfinite(B).all() and np.isfinite(D).all()):
        raise ValueError("B and D must be finite")
    P = np.eye(v) - 1.0 / v
    D_c, B_c = D @ P, B @ P
    scale = float(np.linalg.norm(np.concatenate([B_c, D_c])))
    if scale == 0.0:
        raise ValueError("B and D are constant along every row: every logit function is uniform, "
                         "the relative residual is undefined")
    # the minimizer of the docstring: sum_x Pi_x r_x = sum_x r_x - v/(v-1) P diag(r) for centred
    # rows r_x = D~[x] - B~[x] (P r_x = r_x and e_x^T P r_x = r_xx)
    r = D_c - B_c
    u = (v - 1) / (2 * v * (v - 2)) * (r.sum(axis=0) - v / (v - 1) * (P @ np.diag(r)))
    lambdas = v / (v - 1) * (u - np.diag(D_c))
    betas = -v / (v - 1) * (u + np.diag(B_c))
    r_D = u[None, :] - lambdas[:, None] * P - D_c     # row x: P u - lambda_x P e_x - D~[x]
    r_B = -u[None, :] - betas[:, None] * P - B_c     # row x: -P u - beta_x P e_x - B~[x]
    return LemmaFit(u=u, lambdas=lambdas, betas=betas,
                    relative_residual=float(np.sqrt(np.sum(r_D ** 2) + np.sum(r_B ** 2))) / scale,
                    relative_residual_D=_ratio(np.linalg.norm(r_D), np.linalg.norm(D_c)),
                    relative_residual_B=_ratio(np.linalg.norm(r_B), np.linalg.norm(B_c)))


def _ratio(part: float, whole: float) -> float | None:
    return float(part) / float(whole) if whole > 0 else None


def placements() -> tuple[str, ...]:
    """The placements whose one-layer logits have the lemma's readout form (module docstring):
    the registered schemes marked ``lemma_readout`` (:mod:`resharpen.experiments.model.schemes`)."""
    return schemes.names(lemma_readout=True)


def _norms(placement: str) -> tuple[bool, bool, str | None]:
    """(input norm, branch norm, residual norm: "residual" | "final" | None) of the placement's
    one-layer model, read off its registry entry."""
    scheme = schemes.get(placement)
    layer = scheme.layer(0, 1)
    residual = ("residual" if layer.output_norm == "residual"
                else "final" if scheme.final_norm else None)
    return layer.input_norm, layer.output_norm == "branch", residual


def logit_form(placement: str) -> str:
    """The placement's logit form, as ``compare`` prints it (o: attention output, r: residual),
    with what is folded where: e.g. post's f = (B*[t_s] + sum_i w_i D*[t_i]) / sigma(r) + e."""
    input_norm, branch, residual = _norms(placement)
    if not (input_norm or branch or residual):
        return "f = B[t_s] + sum_i w_i D[t_i]"
    attended = "(sum_i w_i D*[t_i]) / sigma(o)" if branch else "sum_i w_i D*[t_i]"
    logits = (f"(B*[t_s] + {attended}) / sigma(r) + e" if residual
              else f"B[t_s] + {attended}" + (" + e" if branch else ""))
    folded = (["the input norm folded into the value rows"] if input_norm else []) + (
        ["the branch norm's gain folded into D*"] if branch else []) + (
        ["the residual norm's gain folded into B*, D*"] if residual == "residual" else []) + (
        ["the final norm's gain into B*, D*"] if residual == "final" else [])
    return f"f = {logits} ({', '.join(folded)})"


@dataclass(frozen=True)
class Readout:
    """The logits of a one-layer, one-head, attention-only model in the lemma's form
    f = c (B*[t_s] + a sum_i w_i D*[t_i]) + e (module docstring), float64: the gain-folded maps
    ``B``, ``D`` (v x v), the bias logits ``e`` (v), and what recomputes the scales a and c for
    any attention weights: the embeddings ``E`` (v x d), the value rows ``V`` (v x d, the input
    norm folded in) and the model's output norms."""

    placement: str
    B: torch.Tensor
    D: torch.Tensor
    e: torch.Tensor
    E: torch.Tensor
    V: torch.Tensor
    branch_norm: torch.nn.Module | None  # the norm on the attention output (attn_out, peri)
    residual_norm: torch.nn.Module | None  # the norm on the residual (post; pre and peri: final)

    def scales(self, weights: torch.Tensor, tokens: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(a, c), each (N, S), for causal attention weights (N, S, S) on ``tokens`` (N, S): the
        model's own residual stream under those weights, a = 1/sigma(o), c = 1/sigma(r)."""
        o = weights @ self.V[tokens]
        ones = torch.ones(tokens.shape, dtype=self.B.dtype)
        a = 1.0 / _sigma(self.branch_norm, o) if self.branch_norm is not None else ones
        r = self.E[tokens] + (self.branch_norm(o) if self.branch_norm is not None else o)
        c = 1.0 / _sigma(self.residual_norm, r) if self.residual_norm is not None else ones
        return a, c

    def logits(self, B: torch.Tensor, D: torch.Tensor, weights: torch.Tensor,
               tokens: torch.Tensor, scales: tuple[torch.Tensor, torch.Tensor] | None = None
               ) -> torch.Tensor:
        """f = c (B[t_s] + a sum_i w_i D[t_i]) + e at every prefix, (N, S, v), for maps B, D
        (the model's own or a fit), attention ``weights`` (N, S, S) and the scales (default:
        :meth:`scales` of these weights)."""
        a, c = self.scales(weights, tokens) if scales is None else scales
        return c[..., None] * (B[tokens] + a[..., None] * (weights @ D[tokens])) + self.e


def _sigma(norm: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The divisor of a :class:`~resharpen.experiments.model.transformer.Norm` on x: sqrt(mean x^2 +
    eps) (RMSNorm) or sqrt(var x + eps) (LayerNorm), over the last axis."""
    if norm.kind == "layer":
        x = x - x.mean(-1, keepdim=True)
    return torch.sqrt((x * x).mean(-1) + norm.eps)


def _fold(norm: torch.nn.Module, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(C diag(g), b) of a norm: its centring (LayerNorm; I for RMSNorm) times its gain, and its
    bias (0 without one), float64."""
    gain = (norm.gain.detach().double() if norm.gain is not None
            else torch.ones(d, dtype=torch.float64))
    centre = torch.eye(d, dtype=torch.float64)
    if norm.kind == "layer":
        centre = centre - 1.0 / d
    bias = (norm.bias.detach().double() if getattr(norm, "bias", None) is not None
            else torch.zeros(d, dtype=torch.float64))
    return centre * gain, bias


@torch.no_grad()
def readout(model: Transformer) -> Readout:
    """The :class:`Readout` of a one-layer, one-head, attention-only model of a placement in
    :func:`placements` (:func:`check_comparable`), in float64 (a copy; the model is unchanged)."""
    check_comparable(model)
    model = copy.deepcopy(model).to(torch.float64).eval()
    placement, d = model.cfg.norm, model.cfg.d_model
    block, attn = model.blocks[0], model.blocks[0].attn
    E, U = model.W_E, model.W_U
    input_norm, has_branch, residual_norm = _norms(placement)
    H = block.attn_norm_in(E) if input_norm else E
    V = H @ attn.W_V[0] @ attn.W_O[0]
    if attn.out_multiplier != 1.0:  # the fixed attn_out_multiplier c: the map is c W_V W_O
        V = V * attn.out_multiplier
    zero = torch.zeros(model.cfg.vocab, dtype=torch.float64)
    branch = block.attn_norm_out if has_branch else None
    residual = {"residual": block.attn_norm_out, "final": model.final_norm}.get(residual_norm)
    if branch is None and residual is None:  # none, pre_nofinal
        B, D, e = E @ U, V @ U, zero
    elif residual is None:  # attn_out
        fold_o, bias_o = _fold(branch, d)
        B, D, e = E @ U, V @ fold_o @ U, bias_o @ U
    elif branch is None:  # post, pre
        fold_r, bias_r = _fold(residual, d)
        B, D, e = E @ fold_r @ U, V @ fold_r @ U, bias_r @ U
    else:  # peri: the branch bias reaches the logits scaled by c, as B*[t_s] does
        fold_o, bias_o = _fold(branch, d)
        fold_r, bias_r = _fold(residual, d)
        B = E @ fold_r @ U + (bias_o @ fold_r @ U)[None, :]
        D, e = V @ fold_o @ fold_r @ U, bias_r @ U
    return Readout(placement, B, D, e, E, V, branch, residual)


def random_residual(cfg, seed: int = 0) -> float:
    """The lemma fit's relative residual of a random model of config ``cfg``: its
    initialization with torch seed ``seed`` (the global random state is left as it was), the
    reference a trained model's residual is read against (about 0.9; 0 is the lemma's family)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer(cfg)
    form = readout(model)
    return fit_lemma(form.B, form.D).relative_residual


def check_comparable(model: Transformer) -> None:
    """ValueError unless ``model`` is the theory's model: one layer, one head, no MLP, no
    positions, a placement of :func:`placements` (whose logits have the lemma's readout form)."""
    if not isinstance(model, Transformer):
        raise ValueError(f"expected a Transformer or a run folder, got {type(model).__name__}")
    cfg = model.cfg
    if cfg.norm not in placements():
        raise ValueError(f"the lemma comparison applies to placements {', '.join(placements())} "
                         f"(their one-layer logits have the lemma's readout form); this model "
                         f"has norm={cfg.norm!r}")
    if cfg.n_layers != 1 or cfg.n_heads != 1 or cfg.mlp or cfg.max_len:
        raise ValueError("the lemma comparison needs the one-layer, one-head, attention-only model "
                         f"without positions; this one has n_layers={cfg.n_layers}, "
                         f"n_heads={cfg.n_heads}, mlp={cfg.mlp!r}, max_len={cfg.max_len!r}")
    if cfg.vocab < 3:
        raise ValueError(f"the lemma comparison needs vocab >= 3, got {cfg.vocab}")


def lemma_logits(B: torch.Tensor, D: torch.Tensor, tokens: torch.Tensor,
                 weights: torch.Tensor) -> torch.Tensor:
    """The theory's logits at every prefix: f[n, s-1] = B[t_s] + sum_{i<=s} weights[n, s-1, i]
    D[t_i] for tokens (N, S) and causal attention weights (N, S, S); returns (N, S, v)."""
    return B[tokens] + weights @ D[tokens]


def balanced_weights(lambdas: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Causal attention weights w_i = (1/lambda_{t_i}) / sum_{j<=s} 1/lambda_{t_j} at every prefix
    (the theorem's balance: w_i lambda_{t_i} = H(t)/s for every i); (N, S, S). Needs lambda > 0."""
    inverse = 1.0 / lambdas[tokens]  # (N, S)
    causal = torch.ones(tokens.shape[1], tokens.shape[1], dtype=inverse.dtype).tril()
    return causal * inverse[:, None, :] / inverse.cumsum(-1)[:, :, None]


def balance(weights: torch.Tensor, tokens: torch.Tensor,
            lambdas: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per prefix length s = 1..S, the largest over inputs of max_i |s w_i - 1| (uniformity) and,
    given lambdas > 0, of max_i |s d_i / sum_j d_j - 1| with d_i = w_i lambda_{t_i} (imbalance);
    each (S,), 0 at s = 1."""
    S = tokens.shape[1]
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    s = torch.arange(1, S + 1, dtype=weights.dtype)[:, None]

    def worst(shares: torch.Tensor) -> torch.Tensor:
        deviation = torch.where(causal, (s * shares - 1.0).abs(), 0.0)
        return deviation.amax(-1).amax(0)

    uniformity = worst(weights)
    if lambdas is None:
        return uniformity, None
    displacement = weights * lambdas[tokens][:, None, :]
    return uniformity, worst(displacement / displacement.sum(-1, keepdim=True))


def _summary(values: np.ndarray) -> dict:
    return {"mean": float(values.mean()), "std": float(values.std()),
            "min": float(values.min()), "max": float(values.max())}


def _mean(values: torch.Tensor) -> float | None:
    finite = values[~values.isnan()]
    return float(finite.mean()) if finite.numel() else None


def load_trained(folder: str | Path, weights: str | None = None) -> tuple[Transformer, dict, str]:
    """(model, config, weight set) of a finished run folder; ``weights`` is raw, ema or bema
    (default: the run's primary weights). ValueError for a bad folder or weight set."""
    from resharpen.experiments.training.runs import load_run

    if weights is not None and weights not in WEIGHT_SETS:
        raise ValueError(f"weights {weights!r} is not one of {', '.join(WEIGHT_SETS)}")
    from resharpen.experiments.common.stored import check_shape

    run = load_run(folder)
    where = f"run file {str(Path(folder) / 'config.json')!r}"
    check_shape(run.config, {"task": {"train_len": int, "vocab?": int}}, where)
    chosen = weights or run.summary.get("primary", "raw")
    model = run.model(chosen)
    if run.config["task"].get("vocab", model.cfg.vocab) != model.cfg.vocab:
        raise ValueError(f"{where}: task.vocab is {run.config['task']['vocab']}, but the run's "
                         f"{chosen} weights are of vocabulary {model.cfg.vocab}: the folder mixes "
                         "two runs; retrain it")
    return model, run.config, chosen


@torch.no_grad()
def compare_model(model: Transformer, train_len: int | None = None, count: int = 256,
                  seed: int = 0, max_memory: int | None = None) -> dict:
    """The comparison of one model (see the module docstring) as plain, JSON-ready records.

    ``train_len``: the in-distribution lengths 1..L_train over which the attention balance is
    summarized (default v // 4, the configs' default). ``count`` inputs per length, shared by
    every length (prefixes of ``sample_inputs(v, v-1, count, seed)``, as the evaluation does),
    held at once: ValueError before anything is allocated when they do not fit the memory
    (``max_memory`` bytes, default what the machine has available;
    :func:`resharpen.experiments.common.limits.compare_bytes`)."""
    from resharpen.experiments.common import limits

    check_comparable(model)
    vocab = model.cfg.vocab
    train_len = vocab // 4 if train_len is None else train_len
    check_length(train_len, vocab)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    cfg = model.cfg
    limits.require_large(limits.compare_bytes(count, vocab, cfg.d_model, cfg.head_width,
                                              cfg.value_width),
                         f"compare (v = {vocab}, --count {count} inputs per length)", max_memory)
    form = readout(model)
    model = copy.deepcopy(model).to(torch.float64).eval()
    fit = fit_lemma(form.B, form.D)
    tokens = sample_inputs(vocab, vocab - 1, count, seed)
    with model.capture(PATTERN) as cache:
        logits = model(tokens)
    weights = cache[PATTERN][:, 0]  # (N, S, S): row s-1 = attention of the prefix of length s

    B_fit, D_fit = (torch.from_numpy(m) for m in fit.matrices())
    lambdas = torch.from_numpy(fit.lambdas)
    positive = bool((fit.lambdas > 0).all())
    sources = {"trained": logits, "fit": form.logits(B_fit, D_fit, weights, tokens)}
    if positive:
        sources["construction"] = form.logits(B_fit, D_fit, balanced_weights(lambdas, tokens),
                                              tokens)
    metrics = {name: complement_metrics(value, tokens, vocab) for name, value in sources.items()}
    uniformity, imbalance = balance(weights, tokens, lambdas if positive else None)

    rows = []
    for s in range(1, vocab):
        row = {"length": s, "chance_invalid_mass": s / vocab}
        for name in SOURCES:
            m = metrics.get(name)
            row[f"{name}_invalid_mass"] = _mean(m["invalid_mass"][:, s - 1]) if m else None
            row[f"{name}_margin_nonquery_min"] = (_mean(m["margin_nonquery_min"][:, s - 1])
                                                  if m and s > 1 else None)
            row[f"{name}_margin_query"] = _mean(m["margin_query"][:, s - 1]) if m else None
        row["attention_uniformity"] = float(uniformity[s - 1]) if s > 1 else None
        row["displacement_imbalance"] = (float(imbalance[s - 1])
                                         if imbalance is not None and s > 1 else None)
        rows.append(row)
    in_distribution = [r for r in rows if 2 <= r["length"] <= train_len]
    return {
        "vocab": vocab, "train_len": train_len, "inputs_per_length": count, "seed": seed,
        "placement": cfg.norm, "norm_kind": cfg.norm_kind, "form": logit_form(cfg.norm),
        "relative_residual": fit.relative_residual,
        "relative_residual_D": fit.relative_residual_D,
        "relative_residual_B": fit.relative_residual_B,
        "random_relative_residual": random_residual(cfg, seed),
        "lambda": _summary(fit.lambdas), "beta": _summary(fit.betas),
        "lambdas_positive": positive,
        "attention": {
            "lengths": [2, train_len],
            "uniformity_max": max((r["attention_uniformity"] for r in in_distribution),
                                  default=None),
            "imbalance_max": (max((r["displacement_imbalance"] for r in in_distribution),
                                  default=None) if positive else None),
        },
        "lambdas": fit.lambdas.tolist(), "betas": fit.betas.tolist(), "u": fit.u.tolist(),
        "per_length": rows,
    }


def compare_run(source: Transformer | str | Path, weights: str | None = None,
                train_len: int | None = None, count: int = 256, seed: int = 0,
                max_memory: int | None = None) -> dict:
    """:func:`compare_model` of a model, or of a run folder's ``weights`` (raw, ema or bema;
    default its primary weights) with its own L_train; the record names the weight set.
    ValueError for a seed outside [0, 2**63 - 1]."""
    from resharpen.experiments.tasks.base import check_int

    check_int("seed", seed, 0, 2**63 - 1)
    if isinstance(source, (str, Path)):
        model, config, chosen = load_trained(source, weights)
        if train_len is None:
            train_len = config["task"]["train_len"]
        return {"run": str(source), "weights": chosen,
                **compare_model(model, train_len, count, seed, max_memory)}
    if weights is not None:
        raise ValueError("weights picks a weight set of a run folder; a model is compared as given")
    return {"run": None, "weights": None,
            **compare_model(source, train_len, count, seed, max_memory)}
