"""The numbers the ``sc.*`` claims (:mod:`.claims`) decide on about Lemma 1's family and the
rank bound, in numpy (no torch): the dimension of the (B, D) with equal valid logits at lengths 1
and 2 against the family's 5v - 1, and the smallest rank of D = 1u^T - Lambda + c1^T over random
and adversarial draws. The torch side of the lemma is :mod:`.lemma_numerics`.
"""
from __future__ import annotations

import itertools

import numpy as np

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


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
