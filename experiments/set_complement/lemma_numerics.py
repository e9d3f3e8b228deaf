"""The numbers the ``sc.*`` claims (:mod:`.claims`) decide on about Lemma 1's family and the
rank bound: the dimension of the (B, D) with equal valid logits at lengths 1 and 2 against the
family's 5v - 1, the smallest rank of D = 1u^T - Lambda + c1^T over random and adversarial draws,
and the margins of a random lemma-form torch model against m_i = w_i lambda_i (+ beta_q).
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.tasks.set_complement import sample_inputs

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


def random_lemma_model(vocab: int, seed: int) -> tuple[Transformer, np.ndarray, np.ndarray]:
    """A float64 model whose B, D have the lemma's form with random u, lambda > 0, beta >= 0,
    row constants and random attention (W_Q, W_K): E = I, U = B, W_V = D B^-1, W_O = I."""
    rng = np.random.default_rng(seed)
    one = np.ones(vocab)
    u, lam, beta = rng.normal(size=vocab), rng.uniform(0.5, 5.0, vocab), rng.uniform(0.0, 2.0, vocab)
    B = -np.outer(one, u) - np.diag(beta) + np.outer(rng.normal(size=vocab), one)
    D = np.outer(one, u) - np.diag(lam) + np.outer(rng.normal(size=vocab), one)
    cfg = ModelConfig(vocab=vocab, d_model=vocab, d_head=vocab, d_value=vocab, eps=0.0)
    model = Transformer(cfg).double()
    with torch.no_grad():
        model.W_E.copy_(torch.eye(vocab, dtype=torch.float64))
        model.W_U.copy_(torch.as_tensor(B))
        attn = model.blocks[0].attn
        attn.W_Q.copy_(torch.as_tensor(rng.normal(size=(1, vocab, vocab))))
        attn.W_K.copy_(torch.as_tensor(rng.normal(size=(1, vocab, vocab))))
        attn.W_V.copy_(torch.as_tensor(np.linalg.solve(B.T, D.T).T)[None])
        attn.W_O.copy_(torch.eye(vocab, dtype=torch.float64)[None])
    return model, lam, beta


def lemma_model_errors(vocab: int, seed: int, count: int) -> dict[str, float]:
    """Margins of a random lemma-form model against m_i = w_i lambda_i (+ beta_q for the query)."""
    model, lam, beta = random_lemma_model(vocab, seed)
    tokens = sample_inputs(vocab, vocab - 1, count, seed)
    with torch.no_grad():
        logits, attention = model(tokens, return_attention=True)
    w = attention[0][:, 0].numpy()  # (N, S, S): row = query position
    f = logits.numpy()
    worst_margin, worst_spread = 0.0, 0.0
    budget_excess = displacement_excess = nonquery_excess = naive_excess = -np.inf
    scale = max(1.0, float(lam.max() + beta.max()))
    for length in range(1, vocab):
        t = tokens[:, :length].numpy()
        fl = f[:, length - 1]
        invalid = np.zeros_like(fl, dtype=bool)
        np.put_along_axis(invalid, t, True, axis=1)
        valid_logits = np.where(invalid, np.nan, fl)
        fbar = np.nanmean(valid_logits, axis=1)
        worst_spread = max(worst_spread, float(np.nanmax(np.nanmax(valid_logits, 1) - np.nanmin(valid_logits, 1))) / scale)
        weights = w[:, length - 1, :length]
        predicted = weights * lam[t]
        predicted[:, -1] += beta[t[:, -1]]
        measured = fbar[:, None] - np.take_along_axis(fl, t, axis=1)
        worst_margin = max(worst_margin, float(np.max(np.abs(measured - predicted))) / scale)
        nonquery = measured[:, :-1] if length > 1 else np.zeros((len(t), 0))
        displacement = weights * lam[t]  # w_i lambda_{t_i} over all s tokens, query included
        displacement_excess = max(displacement_excess,
                                  float(np.max(displacement.min(1) - lam.max() / length)))
        if length > 1:
            budget_excess = max(budget_excess, float(np.max(nonquery.sum(1) - lam.max())))
            nonquery_excess = max(nonquery_excess,
                                  float(np.max(nonquery.min(1) - lam.max() / (length - 1))))
            naive_excess = max(naive_excess, float(np.max(nonquery.min(1) - lam.max() / length)))
    return {"margin": worst_margin, "spread": worst_spread, "budget": budget_excess,
            "displacement": displacement_excess, "nonquery": nonquery_excess, "naive": naive_excess}
