"""Per-length comparison of a built construction with the theory.

For every length s = 1..v-1 and every sampled input: the measured non-query and query margins,
invalid mass, TV and KL of the float64 torch model next to the values resharpen.theory.set_complement.formulas
predicts (margins from ``theory_margins``; invalid mass S/(v-s+S) with S = sum_i e^{-m_i};
TV = invalid mass; KL = log(1 + S/(v-s))).
"""
from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
from scipy.special import expit

from resharpen.constructions.set_complement import Construction, theory_margins_by_length
from resharpen.experiments.common.limits import forward_flops
from resharpen.experiments.set_complement.evaluate import (DENSE_LENGTHS, log_lengths,
                                                          per_position_metrics, position_metrics)

# Probabilities are compared to rel 1e-9 with an absolute floor of 1e-15 x (logit scale) x sqrt(d):
# float64 logits that should be equal come out of a length-d dot product and differ by about
# eps |logit| sqrt(d) (eps = 2.2e-16), which puts that much TV on the valid tokens even when the
# theory's invalid mass is far smaller. metric_error_ratio <= 1 means agreement.
METRIC_REL, METRIC_ABS = 1e-9, 1e-15

FLOPS_BUDGET = 5e11
"""Floating-point operations the report spends on forward passes (about 15 s on one core at
35 GFLOPS); beyond it fewer inputs per length are evaluated (:func:`bounded_inputs`): 16 up to
v ~ 1300, 4 at v = 2000, 1 from v ~ 2600 on (one pass, every length, at any v)."""


def theory_metrics(vocab: int, length, nonquery: np.ndarray, query: np.ndarray) -> dict:
    """Closed forms for s-1 non-query margins ``nonquery`` and one query margin ``query``
    (arrays broadcasting with ``length``), computed in log-space so that no margin overflows:

        log S = logsumexp(log(s-1) - m_nq, -m_q)        (S = (s-1) e^{-m_nq} + e^{-m_q})
        x = log S - log(v-s)
        invalid mass = TV = S / (v-s+S) = expit(x),     KL = log(1 + S/(v-s)) = softplus(x).

    Finite at any finite margin (beta = -1e3, lambda = 1e3 gives invalid mass 1, KL ~ 1e3)."""
    length = np.asarray(length, dtype=np.float64)
    with np.errstate(divide="ignore"):  # log(0) = -inf at s = 1: no non-query token
        log_nonquery = np.log(length - 1.0) - nonquery
    x = np.logaddexp(log_nonquery, -np.asarray(query, dtype=np.float64)) - np.log(vocab - length)
    mass = expit(x)
    return {"invalid_mass": mass, "tv": mass, "kl": np.logaddexp(0.0, x)}


def bounded_inputs(built: Construction, per_length: int, max_flops: float = FLOPS_BUDGET) -> int:
    """Inputs per length the report evaluates: ``per_length``, or fewer (at least 1) when
    ``per_length`` forward passes of one permutation of V would exceed ``max_flops``
    (:func:`resharpen.experiments.common.limits.forward_flops`, ~1.4e13 per pass at v = 10^4).
    Each pass scores every length 1..v-1 (its prefixes), so every length is still evaluated."""
    cfg = built.model.cfg
    flops = forward_flops(built.vocab, cfg.d_model, cfg.head_width, cfg.value_width, built.vocab - 1)
    affordable = max_flops / flops  # may be inf
    return per_length if affordable >= per_length else max(1, math.floor(affordable))


def construction_errors(built: Construction, per_length: int = 16, seed: int = 0,
                        lengths: Sequence[int] | None = None) -> list[dict]:
    """Per length: measured and predicted values (means over inputs) and the worst errors,
    absolute and relative to the margin scale max(1, max |theory margin|). ``log_valid_spread``
    (max - min valid logit) stays finite where ``valid_spread`` = its exp overflows float64
    (``rel_valid_spread`` divides it by the margin scale). ``lengths``: None for every length
    1..v-1 (one full forward pass per chunk of inputs), else those lengths only, each by the
    last position of its prefix alone (:func:`~resharpen.experiments.set_complement.evaluate.
    position_metrics`, the same inputs and the same numbers to rounding); then numpy over the
    (inputs x lengths) arrays."""
    vocab = built.vocab
    width = float(np.sqrt(built.width))
    if lengths is None:
        metrics, tokens = per_position_metrics(built.model, vocab, vocab - 1, per_length, seed)
        lengths = np.arange(1, vocab)
        nq, q = theory_margins_by_length(built, tokens)
    else:
        metrics, tokens = position_metrics(built.model, vocab, lengths, per_length, seed)
        lengths = np.array(sorted(set(int(s) for s in lengths)))
        nq, q = (m[:, lengths - 1] for m in theory_margins_by_length(built, tokens))
    col = {k: val.numpy() for k, val in metrics.items()}  # (inputs, lengths)
    theory = theory_metrics(vocab, lengths[None, :], nq, q)
    err_q = np.abs(col["margin_query"] - q)
    err_nq = np.fmax(np.abs(col["margin_nonquery_min"] - nq), np.abs(col["margin_nonquery_max"] - nq))
    err_nq[:, lengths == 1] = 0.0  # no non-query token at s = 1
    abs_margin = np.maximum(err_q, err_nq).max(0)
    scale = np.maximum(1.0, np.maximum(np.abs(nq), np.abs(q)).max(0))
    metric_error = np.max([(np.abs(col[k] - theory[k]) / (METRIC_REL * np.abs(theory[k])
                                                            + METRIC_ABS * scale * width)).max(0)
                           for k in ("invalid_mass", "tv", "kl")], axis=0)
    abs_metric = np.max([np.abs(col[k] - theory[k]).max(0) for k in ("invalid_mass", "tv", "kl")], 0)
    log_spread = col["log_valid_spread"].max(0)
    with warnings.catch_warnings():  # all-NaN non-query column at s = 1
        warnings.simplefilter("ignore", RuntimeWarning)
        nq_mean = np.nanmean(col["margin_nonquery_min"], 0)
    mean = {k: col[k].mean(0) for k in ("margin_query", "invalid_mass", "tv", "kl", "top1_invalid")}
    rows = []
    for i, length in enumerate(lengths.tolist()):
        rows.append({
            "length": length,
            "margin_nonquery": float(nq_mean[i]) if length > 1 else None,
            "theory_margin_nonquery": float(nq[:, i].mean()) if length > 1 else None,
            "margin_query": float(mean["margin_query"][i]),
            "theory_margin_query": float(q[:, i].mean()),
            "invalid_mass": float(mean["invalid_mass"][i]),
            "theory_invalid_mass": float(theory["invalid_mass"][:, i].mean()),
            "tv": float(mean["tv"][i]),
            "theory_tv": float(theory["tv"][:, i].mean()),
            "kl": float(mean["kl"][i]),
            "theory_kl": float(theory["kl"][:, i].mean()),
            "valid_spread": float(col["valid_spread"][:, i].max()),
            "log_valid_spread": float(log_spread[i]),
            "rel_valid_spread": float(log_spread[i] / scale[i]),
            "top1_invalid": float(mean["top1_invalid"][i]),
            "abs_error_margin": float(abs_margin[i]),
            "rel_error_margin": float(abs_margin[i] / scale[i]),
            "abs_error_metrics": float(abs_metric[i]),
            "metric_error_ratio": float(metric_error[i]),
        })
    return rows


LENGTH_SETS = ("log", "all")
"""``construction_report``'s sets of lengths: ``log`` (every length up to 64, then about 64
log-spaced up to v - 1: :func:`~resharpen.experiments.set_complement.evaluate.log_lengths`) or
``all`` (every length 1..v-1)."""


def construction_report(built: Construction, per_length: int = 16, seed: int = 0,
                        max_flops: float = FLOPS_BUDGET, lengths: str = "all") -> dict:
    """The construction, its widths and :func:`construction_errors` at the lengths of
    ``lengths`` (one of :data:`LENGTH_SETS`; ``covered`` in the report names them).

    A permutation-symmetric construction (tight, one_hot, unbalanced:
    :attr:`~resharpen.constructions.set_complement.Construction.symmetric`) gives the same
    metrics on every input of a length, so one input per length is exact: the prefixes of one
    seeded random permutation of V, one forward pass for every length 1..v-1 (``per_length`` is
    not used; ``per_length_inputs`` is 1 and ``symmetric`` says why). The other variants
    (balanced) are evaluated on ``per_length`` random inputs per length, with ``all`` on
    :func:`bounded_inputs` of them (a note says when that is fewer than asked)."""
    if lengths not in LENGTH_SETS:
        raise ValueError(f"lengths {lengths!r} is not one of {', '.join(LENGTH_SETS)}")
    cfg = built.model.cfg
    symmetric = built.symmetric
    chosen = log_lengths(built.vocab) if lengths == "log" else None
    inputs = 1 if symmetric else (bounded_inputs(built, per_length, max_flops) if chosen is None
                                  else per_length)
    report = {"construction": built.params(),
              "dimensions": {"d_model": cfg.d_model, "d_head": cfg.head_width, "d_value": cfg.value_width},
              "per_length_inputs": inputs, "seed": seed}
    if symmetric:
        report["symmetric"] = (
            f"the {built.variant} construction is permutation-symmetric (a permutation of the "
            f"tokens permutes its logits), so every input of a length gives the same metrics: "
            f"one input per length, the prefixes of one random permutation (seed {seed}), "
            f"covers each length evaluated exactly")
    elif inputs < per_length:
        report["per_length_inputs_note"] = (
            f"{inputs} random input(s) per length instead of {per_length}: one float64 forward "
            f"pass at v = {built.vocab} costs about "
            f"{forward_flops(built.vocab, cfg.d_model, cfg.head_width, cfg.value_width, built.vocab - 1):.2g}"
            f" flops, over the {max_flops:.2g} budget; exact enumeration of the inputs is "
            f"impossible, each pass scores every length 1..{built.vocab - 1} on the prefixes "
            f"of one random permutation")
    report["covered"] = covered_lengths(built.vocab, chosen)
    report["lengths"] = construction_errors(built, inputs, seed, chosen)
    return report


def covered_lengths(vocab: int, chosen: Sequence[int] | None) -> dict:
    """The report's ``covered``: which lengths were evaluated (``kind`` log or all, their
    ``count`` and a sentence for the reader)."""
    if chosen is None:
        return {"kind": "all", "count": vocab - 1,
                "text": f"every length s = 1..{vocab - 1}"}
    dense = [s for s in chosen if s <= DENSE_LENGTHS]
    text = (f"{len(chosen)} lengths: every s = 1..{dense[-1]}"
            + (f", then {len(chosen) - len(dense)} log-spaced up to {vocab - 1} (with v/2 = "
               f"{vocab // 2}); each by the last position of its prefix alone; --lengths all "
               f"evaluates every length" if len(chosen) > len(dense) else ""))
    return {"kind": "log", "count": len(chosen), "text": text}
