"""Exact metrics of a next-token distribution against a target uniform on a set of valid tokens.

Every trained task of the package has an exact target: Set Complement's valid set is the
vocabulary minus the tokens seen, a formal language's (or Othello's) is the set of legal next
tokens. For logits f over V and a valid set S with p* uniform on S (|S| = n):

    LSE_S = log sum_{j in S} e^{f_j},   LSE_inv = log sum_{i not in S} e^{f_i},   x = LSE_inv - LSE_S
    invalid_mass   = p(V minus S) = sigmoid(x)
    tv             = TV(p, p*) = (1/2) (sum_{j in S} |p_j - 1/n| + invalid_mass)
    kl             = KL(p* || p) = [log mean_{j in S} e^{f_j - fbar}] + softplus(x),
                     fbar the mean valid logit (the bracket is >= 0 by Jensen)
    cross_entropy  = log n + kl
    top1_invalid   = 1 if max_{i not in S} f_i >= max_{j in S} f_j (ties count against the model)

Written in log space, every quantity stays accurate in float64 at any margin (no 1 - p
cancellation). A position whose valid set is empty has no target: NaN. This is the one
implementation of the exact-target metric, under one name (``invalid_mass``), for every task.
"""
from __future__ import annotations

import torch

METRICS = ("invalid_mass", "tv", "kl", "cross_entropy", "top1_invalid")


def target_set_metrics(logits: torch.Tensor, valid: torch.Tensor) -> dict[str, torch.Tensor]:
    """The metrics above at every position: logits (..., V), valid bool (..., V) -> dict of
    float64 (...), NaN where the valid set is empty."""
    f = torch.as_tensor(logits).to(torch.float64)
    valid = torch.as_tensor(valid, dtype=torch.bool)
    if f.shape != valid.shape:
        raise ValueError(f"logits {tuple(f.shape)} and valid sets {tuple(valid.shape)} differ in "
                         "shape")
    neg_inf = torch.tensor(float("-inf"), dtype=torch.float64)
    count = valid.sum(-1).to(torch.float64)
    empty = count == 0
    n = count.clamp_min(1.0)
    lse_valid = torch.where(valid, f, neg_inf).logsumexp(-1)
    x = torch.where(valid, neg_inf, f).logsumexp(-1) - lse_valid
    invalid_mass = torch.sigmoid(x)  # exactly 0 when every token is valid
    fbar = torch.where(valid, f, 0.0).sum(-1) / n
    spread = torch.where(valid, f - fbar[..., None], neg_inf).logsumexp(-1) - torch.log(n)
    kl = spread.clamp_min(0.0) + torch.nn.functional.softplus(x)
    p = torch.softmax(f, dim=-1)
    tv = 0.5 * (torch.where(valid, (p - 1.0 / n[..., None]).abs(), 0.0).sum(-1) + invalid_mass)
    max_valid = torch.where(valid, f, neg_inf).amax(-1)
    max_invalid = torch.where(valid, neg_inf, f).amax(-1)
    out = {"invalid_mass": invalid_mass, "tv": tv, "kl": kl, "cross_entropy": kl + torch.log(n),
           "top1_invalid": (max_invalid >= max_valid).to(torch.float64)}
    return {name: torch.where(empty, float("nan"), value) for name, value in out.items()}
