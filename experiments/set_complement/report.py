"""Per-length comparison of a built construction with the theory.

For every length s = 1..v-1 and every sampled input: the measured non-query and query margins,
invalid mass, TV and KL of the float64 torch model next to the values resharpen.theory.set_complement.formulas
predicts (margins from ``theory_margins``; invalid mass S/(v-s+S) with S = sum_i e^{-m_i};
TV = invalid mass; KL = log(1 + S/(v-s))).
"""
from __future__ import annotations

import numpy as np
import torch

from resharpen.constructions.set_complement import Construction, theory_margins
from resharpen.experiments.set_complement.evaluate import per_position_metrics

# Probabilities are compared to rel 1e-9 with an absolute floor of 1e-15 x (logit scale) x sqrt(d):
# float64 logits that should be equal come out of a length-d dot product and differ by about
# eps |logit| sqrt(d) (eps = 2.2e-16), which puts that much TV on the valid tokens even when the
# theory's invalid mass is far smaller. metric_error_ratio <= 1 means agreement.
METRIC_REL, METRIC_ABS = 1e-9, 1e-15


def theory_metrics(vocab: int, length: int, nonquery: np.ndarray, query: np.ndarray) -> dict:
    """Closed forms for s-1 non-query margins ``nonquery`` and one query margin ``query``."""
    total = (length - 1) * np.exp(-nonquery) + np.exp(-query)
    mass = total / (vocab - length + total)
    return {"invalid_mass": mass, "tv": mass, "kl": np.log1p(total / (vocab - length))}


def construction_errors(built: Construction, per_length: int = 16, seed: int = 0) -> list[dict]:
    """Per length: measured and predicted values (means over inputs) and the worst errors."""
    vocab = built.vocab
    width = float(np.sqrt(built.width))
    metrics, tokens = per_position_metrics(built.model, vocab, vocab - 1, per_length, seed)
    rows = []
    for length in range(1, vocab):
        col = {k: val[:, length - 1].numpy() for k, val in metrics.items()}
        nq, q = theory_margins(built, tokens[:, :length])
        theory = theory_metrics(vocab, length, nq, q)
        errors = [np.abs(col["margin_query"] - q)]
        if length > 1:
            errors += [np.abs(col["margin_nonquery_min"] - nq), np.abs(col["margin_nonquery_max"] - nq)]
        scale = np.maximum(1.0, np.abs(np.concatenate([nq, q])).max())
        metric_error = max(float(np.max(np.abs(col[k] - theory[k]) / (METRIC_REL * np.abs(theory[k])
                                                                      + METRIC_ABS * scale * width)))
                           for k in ("invalid_mass", "tv", "kl"))
        abs_metric = max(float(np.max(np.abs(col[k] - theory[k]))) for k in ("invalid_mass", "tv", "kl"))
        rows.append({
            "length": length,
            "margin_nonquery": float(np.nanmean(col["margin_nonquery_min"])) if length > 1 else None,
            "theory_margin_nonquery": float(nq.mean()) if length > 1 else None,
            "margin_query": float(col["margin_query"].mean()),
            "theory_margin_query": float(q.mean()),
            "invalid_mass": float(col["invalid_mass"].mean()),
            "theory_invalid_mass": float(theory["invalid_mass"].mean()),
            "tv": float(col["tv"].mean()),
            "theory_tv": float(theory["tv"].mean()),
            "kl": float(col["kl"].mean()),
            "theory_kl": float(theory["kl"].mean()),
            "valid_spread": float(col["valid_spread"].max()),
            "top1_invalid": float(col["top1_invalid"].mean()),
            "abs_error_margin": float(np.max(np.concatenate(errors))),
            "rel_error_margin": float(np.max(np.concatenate(errors)) / scale),
            "abs_error_metrics": abs_metric,
            "metric_error_ratio": metric_error,
        })
    return rows


def construction_report(built: Construction, per_length: int = 16, seed: int = 0) -> dict:
    cfg = built.model.cfg
    return {"construction": built.params(),
            "dimensions": {"d_model": cfg.d_model, "d_head": cfg.head_width, "d_value": cfg.value_width},
            "per_length_inputs": per_length, "seed": seed,
            "lengths": construction_errors(built, per_length, seed)}
