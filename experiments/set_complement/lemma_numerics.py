"""The margins of a random lemma-form torch model against m_i = w_i lambda_i (+ beta_q): the
numbers the ``sc.*`` claims (:mod:`.claims`) decide on about Lemma 1 on the model. The lemma's
family dimension and the rank bound, which need no model, are :mod:`.lemma_rank`.
"""
from __future__ import annotations

import numpy as np
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.tasks.set_complement import sample_inputs

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


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
