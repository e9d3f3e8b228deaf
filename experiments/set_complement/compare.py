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

Placements: none only. With a norm the residual is rescaled input by input, so the logits are
no longer B[t_s] + sum_i w_i D[t_i] and a fit of B and D would describe a different model:
:func:`compare_run` refuses every other placement (and positions, MLPs, several layers or heads)
with a ValueError instead of reporting numbers that do not apply.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.linalg
import torch

from resharpen.experiments.core.model import Transformer
from resharpen.experiments.core.set_complement_task import check_length, sample_inputs
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
    are opposite and the fit is not unique). It is solved by ``scipy.linalg.lstsq`` in float64.
    *The minimizer* (normal equations; D~ = D P, B~ = B P the centred rows, Pi_x = P -
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
    Q = scipy.linalg.null_space(np.ones((1, v)))  # v x (v-1), orthonormal, spans 1-perp
    row = np.repeat(np.arange(v), v)  # entry (x, j) of a block is row x * v + j
    entries = np.arange(v * v)
    design = np.zeros((2 * v * v, 3 * v - 1))
    design[: v * v, : v - 1] = np.tile(Q, (v, 1))           # D block: + P u
    design[entries, v - 1 + row] = -P.ravel()                # D block: - lambda_x P e_x
    design[v * v:, : v - 1] = -np.tile(Q, (v, 1))           # B block: - P u
    design[v * v + entries, 2 * v - 1 + row] = -P.ravel()    # B block: - beta_x P e_x
    target = np.concatenate([D_c.ravel(), B_c.ravel()])
    theta, *_ = scipy.linalg.lstsq(design, target)
    residual = design @ theta - target
    r_D, r_B = residual[: v * v], residual[v * v:]
    return LemmaFit(u=Q @ theta[: v - 1], lambdas=theta[v - 1: 2 * v - 1],
                    betas=theta[2 * v - 1:],
                    relative_residual=float(np.linalg.norm(residual)) / scale,
                    relative_residual_D=_ratio(np.linalg.norm(r_D), np.linalg.norm(D_c)),
                    relative_residual_B=_ratio(np.linalg.norm(r_B), np.linalg.norm(B_c)))


def _ratio(part: float, whole: float) -> float | None:
    return float(part) / float(whole) if whole > 0 else None


def check_comparable(model: Transformer) -> None:
    """ValueError unless ``model`` is the theory's model: one layer, one head, no MLP, no
    positions, placement none (the only one whose logits are B[t_s] + sum_i w_i D[t_i])."""
    if not isinstance(model, Transformer):
        raise ValueError(f"expected a Transformer or a run folder, got {type(model).__name__}")
    cfg = model.cfg
    if cfg.norm != "none":
        raise ValueError(f"the lemma comparison applies to placement 'none' only (its logits are "
                         f"B[t_s] + sum_i w_i D[t_i]); this model has norm={cfg.norm!r}")
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
    from resharpen.experiments.core.runs import load_run

    if weights is not None and weights not in WEIGHT_SETS:
        raise ValueError(f"weights {weights!r} is not one of {', '.join(WEIGHT_SETS)}")
    run = load_run(folder)
    chosen = weights or run.summary.get("primary", "raw")
    return run.model(chosen), run.config, chosen


@torch.no_grad()
def compare_model(model: Transformer, train_len: int | None = None, count: int = 256,
                  seed: int = 0) -> dict:
    """The comparison of one model (see the module docstring) as plain, JSON-ready records.

    ``train_len``: the in-distribution lengths 1..L_train over which the attention balance is
    summarized (default v // 4, the configs' default). ``count`` inputs per length, shared by
    every length (prefixes of ``sample_inputs(v, v-1, count, seed)``, as the evaluation does)."""
    check_comparable(model)
    vocab = model.cfg.vocab
    train_len = vocab // 4 if train_len is None else train_len
    check_length(train_len, vocab)
    model = copy.deepcopy(model).to(torch.float64).eval()
    B, D = model.logit_matrices()
    fit = fit_lemma(B, D)
    tokens = sample_inputs(vocab, vocab - 1, count, seed)
    with model.capture(PATTERN) as cache:
        logits = model(tokens)
    weights = cache[PATTERN][:, 0]  # (N, S, S): row s-1 = attention of the prefix of length s

    B_fit, D_fit = (torch.from_numpy(m) for m in fit.matrices())
    lambdas = torch.from_numpy(fit.lambdas)
    positive = bool((fit.lambdas > 0).all())
    sources = {"trained": logits, "fit": lemma_logits(B_fit, D_fit, tokens, weights)}
    if positive:
        sources["construction"] = lemma_logits(B_fit, D_fit, tokens,
                                               balanced_weights(lambdas, tokens))
    metrics = {name: complement_metrics(value, tokens, vocab) for name, value in sources.items()}
    uniformity, imbalance = balance(weights, tokens, lambdas if positive else None)

    rows = []
    for s in range(1, vocab):
        row = {"length": s}
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
        "relative_residual": fit.relative_residual,
        "relative_residual_D": fit.relative_residual_D,
        "relative_residual_B": fit.relative_residual_B,
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
                train_len: int | None = None, count: int = 256, seed: int = 0) -> dict:
    """:func:`compare_model` of a model, or of a run folder's ``weights`` (raw, ema or bema;
    default its primary weights) with its own L_train; the record names the weight set."""
    if isinstance(source, (str, Path)):
        model, config, chosen = load_trained(source, weights)
        if train_len is None:
            train_len = config["task"]["train_len"]
        return {"run": str(source), "weights": chosen,
                **compare_model(model, train_len, count, seed)}
    if weights is not None:
        raise ValueError("weights picks a weight set of a run folder; a model is compared as given")
    return {"run": None, "weights": None, **compare_model(source, train_len, count, seed)}
