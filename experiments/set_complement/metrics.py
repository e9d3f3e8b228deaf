"""Exact metrics of a next-token distribution against the Set Complement target p*.

For logits f over V and an input t of length s (invalid set [t], valid set V minus [t]):
    LSE_val = log sum_{j valid} e^{f_j},  LSE_inv = log sum_{i in [t]} e^{f_i},  x = LSE_inv - LSE_val
    invalid mass   = sum_{i in [t]} p_i = sigmoid(x)
    TV(p, p*)      = (1/2) sum_j |p_j - p*_j| = (1/2)(sum_{valid} |p_j - 1/(v-s)| + invalid mass)
    KL(p* || p)    = [log mean_{valid} e^{f_j - fbar}] + softplus(x),  fbar = mean valid logit
    cross-entropy  = log(v - s) + KL
    margin m_i     = fbar - f_i for i in [t]
    valid spread   = max_{valid} p / min_{valid} p  (its log, max_{valid} f - min_{valid} f,
                     is returned too: finite where the ratio overflows)
    top-1 invalid  = 1 if max_{[t]} f >= max_{valid} f (ties count against the model)
Invalid mass, TV, KL, cross-entropy and top-1 invalid are
:func:`resharpen.experiments.tasks.metrics.target_set_metrics` (the exact-target metrics of every
task) with the valid set V minus [t]; the margins and the spread are Set Complement's own.
When all valid logits are equal the first KL term is exactly 0, so TV = invalid mass and
KL = -log(1 - invalid mass): the closed forms of resharpen.theory.set_complement.formulas. Written this way every
quantity stays accurate in float64 at any margin size (no 1 - p cancellations).

All functions are vectorized over inputs and prefix lengths: they take logits (..., S, v) and the
token sequences (..., S), and score the prefix of length i+1 by the logits at position i.
"""
from __future__ import annotations

import math

import torch

from resharpen.experiments.tasks.metrics import target_set_metrics

METRICS = ("invalid_mass", "tv", "kl", "cross_entropy", "top1_invalid", "valid_spread",
           "margin_min", "margin_query", "margin_nonquery_min", "margin_nonquery_max")


BLOCK_ELEMENTS = 2**24
"""Logits per block of positions (128 MiB in float64): the metrics' dozen (N, S, v) temporaries
are made one block of positions at a time, so at v = 10^4 they take about 1.5 GB instead of
about 10 (every position's metrics depend on its own logits and seen set only, so the numbers
are the same block by block)."""


def complement_metrics(logits: torch.Tensor, tokens: torch.Tensor, vocab: int) -> dict[str, torch.Tensor]:
    """Every metric at every prefix: logits (N, S, v), tokens (N, S) -> dict of float64 (N, S).

    Non-query margins are NaN at length 1 (there is no non-query token). Large inputs are
    scored in blocks of positions (:data:`BLOCK_ELEMENTS`)."""
    if logits.dim() == 2:  # a single position per input: the whole row is the input
        logits = logits[:, None, :].expand(-1, tokens.shape[1], -1)
        single = True
    else:
        single = False
    count, positions = tokens.shape
    first = first_seen(tokens, vocab)
    block = max(1, BLOCK_ELEMENTS // max(1, count * vocab))
    parts = [_metrics(logits[:, a:a + block], tokens[:, a:a + block],
                      torch.arange(a, min(a + block, positions))[None, :, None] >= first[:, None, :])
             for a in range(0, positions, block)]
    out = parts[0] if len(parts) == 1 else {name: torch.cat([part[name] for part in parts], dim=1)
                                            for name in parts[0]}
    if single:
        out = {k: v[:, -1] for k, v in out.items()}
    return out


def complement_metrics_at(logits: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor,
                          vocab: int) -> dict[str, torch.Tensor]:
    """:func:`complement_metrics` at the given 0-based ``positions`` (P,) only: logits (N, P, v)
    are the model's at those positions of ``tokens`` (N, S), and column j scores the prefix of
    length positions[j] + 1. The same numbers as the full function's columns ``positions``."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    invalid = positions[None, :, None] >= first_seen(tokens, vocab)[:, None, :]
    return _metrics(logits, tokens[:, positions], invalid)


def first_seen(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """(N, v): the first position of token x in row n, S where it does not occur; the seen set
    of the prefix of length i+1 is {x : first[n, x] <= i} (``seen_mask`` without its (N, S, v)
    int64 one-hot)."""
    count, positions = tokens.shape
    first = torch.full((count, vocab), positions, dtype=torch.long)
    return first.scatter_reduce(1, tokens.long(), torch.arange(positions).expand(count, -1),
                                reduce="amin")


def _metrics(logits: torch.Tensor, tokens: torch.Tensor, invalid: torch.Tensor
             ) -> dict[str, torch.Tensor]:
    """:func:`complement_metrics` of positions whose seen sets are ``invalid`` (N, S, v): the
    exact-target metrics of :func:`core.metrics.target_set_metrics` with the valid set V minus
    [t], and the margins and spread of the valid logits."""
    f = logits.to(torch.float64)
    valid = ~invalid
    out = target_set_metrics(f, valid)
    neg_inf = torch.tensor(float("-inf"), dtype=torch.float64)
    fbar = torch.where(valid, f, 0.0).sum(-1) / valid.sum(-1)
    max_val = torch.where(valid, f, neg_inf).amax(-1)
    min_val = torch.where(valid, f, torch.tensor(float("inf"), dtype=torch.float64)).amin(-1)
    margins = torch.where(invalid, fbar[..., None] - f, float("nan"))
    query = tokens.long()[..., None]
    margin_query = (fbar[..., None] - f.gather(-1, query)).squeeze(-1)
    nonquery = invalid.clone()
    nonquery.scatter_(-1, query, False)
    nq = torch.where(nonquery, margins, float("nan"))
    out.update({
        "valid_spread": torch.exp(max_val - min_val),
        "log_valid_spread": max_val - min_val,  # finite where exp overflows (not in METRICS)
        "margin_min": torch.where(invalid, margins, float("inf")).amin(-1),
        "margin_query": margin_query,
        "margin_nonquery_min": _nan_reduce(nq, torch.amin),
        "margin_nonquery_max": _nan_reduce(nq, torch.amax),
    })
    return out


def _nan_reduce(values: torch.Tensor, reduce) -> torch.Tensor:
    """Reduce over the last axis ignoring NaN; NaN where every entry is NaN."""
    empty = values.isnan().all(-1)
    fill = math.inf if reduce is torch.amin else -math.inf
    result = reduce(torch.nan_to_num(values, nan=fill), dim=-1)
    return torch.where(empty, float("nan"), result)
