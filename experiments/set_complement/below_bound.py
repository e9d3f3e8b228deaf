"""Below the dimension bound: no width d = v-2 model is complement-exact at lengths 1 and 2.

The rank bound (resharpen.theory.set_complement.formulas.prove_rank_bound) says exactness at lengths 1 and 2 needs
rank D >= v-1, hence d >= v-1 and d_v >= v-1. This module shows it numerically by optimizing the
logit-level objective directly, from many random starts at once:

    B = E U,  D = E M U   (E: v x d, U: d x v, M = W_V W_O: d x d, so rank B, D <= d)
    f(x)      = B[x] + D[x]                                      (length 1)
    f(x, y)   = B[y] + w_xy D[x] + (1 - w_xy) D[y],  w_xy = sigmoid(a_xy)   (length 2, query y)
    J = mean over all inputs of [ Var_valid f  +  sum_{i in t} relu(1 - (fbar_valid - f_i))^2 ]

J = 0 exactly when the valid logits are equal and every input token sits at least 1 below them
(complement-exact after scaling). The attention weights a_xy are free parameters, one per ordered
pair, which is more freedom than a real attention layer has: a positive lower bound on J found
this way holds a fortiori for the model. The d = v-1 tight construction has J = 0.
"""
from __future__ import annotations

import itertools

import torch

from resharpen.experiments.common.progress import track
from resharpen.experiments.tasks.set_complement import check_vocab


def _inputs(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    singles = torch.arange(vocab)
    pairs = torch.tensor([(x, y) for x, y in itertools.permutations(range(vocab), 2)])
    return singles, pairs


def objective(E, U, M, a, vocab: int) -> torch.Tensor:
    """J per start: E (R, v, d), U (R, d, v), M (R, d, d), a (R, v, v) -> (R,)."""
    B = E @ U
    D = E @ M @ U
    singles, pairs = _inputs(vocab)
    f1 = B + D  # (R, v, v): row x is the logits of input (x)
    x, y = pairs[:, 0], pairs[:, 1]
    w = torch.sigmoid(a[:, x, y])[..., None]
    f2 = B[:, y] + w * D[:, x] + (1 - w) * D[:, y]  # (R, P, v)
    logits = torch.cat([f1, f2], dim=1)
    invalid = torch.zeros(logits.shape[1:], dtype=torch.bool)
    invalid[singles, singles] = True
    rows = torch.arange(len(pairs)) + vocab
    invalid[rows, x] = True
    invalid[rows, y] = True
    valid = ~invalid
    n_valid = valid.sum(-1)
    fbar = (logits * valid).sum(-1) / n_valid
    var = (((logits - fbar[..., None]) ** 2) * valid).sum(-1) / n_valid
    shortfall = torch.relu(1 - (fbar[..., None] - logits)) ** 2 * invalid
    return (var + shortfall.sum(-1)).mean(-1)


def minimize(vocab: int, width: int, starts: int = 32, steps: int = 3000, seed: int = 0,
             lr: float = 0.03, progress: bool = True) -> torch.Tensor:
    """Minimal J per start after Adam from ``starts`` random initializations (float64)."""
    check_vocab(vocab)
    if vocab < 4:
        raise ValueError(f"the lemma and the bound need vocab >= 4, got {vocab}")
    if not 1 <= width <= vocab:
        raise ValueError(f"width must be in [1, {vocab}], got {width}")
    gen = torch.Generator().manual_seed(seed)

    def init(*shape):
        return (torch.randn(starts, *shape, generator=gen, dtype=torch.float64)).requires_grad_()

    E, U, M, a = init(vocab, width), init(width, vocab), init(width, width), init(vocab, vocab)
    params = [E, U, M, a]
    optimizer = torch.optim.Adam(params, lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps, eta_min=lr * 1e-3)
    best = torch.full((starts,), float("inf"), dtype=torch.float64)
    for _ in track(range(steps), desc=f"below-bound v={vocab} d={width}", unit="step",
                   enabled=progress):
        optimizer.zero_grad()
        values = objective(E, U, M, a, vocab)
        best = torch.minimum(best, values.detach())
        values.sum().backward()
        optimizer.step()
        schedule.step()
    with torch.no_grad():
        best = torch.minimum(best, objective(E, U, M, a, vocab))
    return best
