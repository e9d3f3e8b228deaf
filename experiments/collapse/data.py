"""A synthetic token stream for the collapse demonstration, made in code (no downloads).

A first-order Markov chain on ``vocab`` tokens: from each token the next one is drawn from a
Zipf law (p_r proportional to r^{-a}, rank r = 1..vocab) over a token-specific random order of
the vocabulary. The stream therefore has a skewed unigram law (so L_freq, the entropy of the
label frequencies, is well below log vocab) and real context dependence (the conditional
entropy, :func:`markov_entropy_rate`, is well below L_freq): a model that has collapsed to the
frequency predictor is measurably worse than one that reads its context.
"""
from __future__ import annotations

import numpy as np
import torch


def zipf_markov_matrix(vocab: int, exponent: float = 1.2, seed: int = 0) -> np.ndarray:
    """Row-stochastic (vocab, vocab) transition matrix, each row a permuted Zipf law."""
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 2:
        raise ValueError(f"vocab must be an integer >= 2, got {vocab!r}")
    if not (np.isfinite(exponent) and exponent >= 0):
        raise ValueError(f"Zipf exponent must be finite and >= 0, got {exponent!r}")
    rng = np.random.default_rng(seed)
    law = np.arange(1, vocab + 1, dtype=float) ** -exponent
    law /= law.sum()
    return np.stack([law[np.argsort(rng.permutation(vocab))] for _ in range(vocab)])


def stationary(matrix: np.ndarray) -> np.ndarray:
    """The stationary distribution pi = pi T (left Perron vector)."""
    vals, vecs = np.linalg.eig(matrix.T)
    pi = np.abs(np.real(vecs[:, np.argmin(np.abs(vals - 1.0))]))
    return pi / pi.sum()


def markov_entropy_rate(matrix: np.ndarray) -> float:
    """sum_i pi_i H(T_i): the best achievable per-token loss (nats) of a context-reading model."""
    pi = stationary(matrix)
    logs = np.log(np.where(matrix > 0, matrix, 1.0))
    return float(-np.sum(pi[:, None] * matrix * logs))


def sample_batch(matrix: np.ndarray, batch: int, length: int,
                 generator: np.random.Generator) -> torch.Tensor:
    """(batch, length + 1) token ids: chains started from the stationary law (vectorized over
    the batch, one inverse-CDF draw per position)."""
    if batch < 1 or length < 1:
        raise ValueError(f"batch and length must be >= 1, got {batch}, {length}")
    cdf = np.cumsum(matrix, axis=1)
    cdf[:, -1] = 1.0
    pi_cdf = np.cumsum(stationary(matrix))
    pi_cdf[-1] = 1.0
    out = np.empty((batch, length + 1), dtype=np.int64)
    out[:, 0] = np.searchsorted(pi_cdf, generator.random(batch), side="right")
    u = generator.random((batch, length))
    for pos in range(length):
        rows = cdf[out[:, pos]]
        out[:, pos + 1] = (rows < u[:, pos:pos + 1]).sum(axis=1)
    return torch.from_numpy(out)


class ZipfMarkovStreams:
    """The collapse demonstration's :class:`~resharpen.experiments.tasks.base.Streams`: run k
    trains on chains of its own Zipf-Markov matrix (``zipf_markov_matrix(vocab, exponent,
    seed=seeds[k])``), drawn by :func:`sample_batch` with ``default_rng(seeds[k] + 1)``; ``draw``
    gives (K, batch, length + 1) tokens."""

    def __init__(self, vocab: int, exponent: float, seeds, batch: int, length: int):
        self.batch, self.length = batch, length
        self.matrices = [zipf_markov_matrix(vocab, exponent, seed=seed) for seed in seeds]
        self.generators = [np.random.default_rng(seed + 1) for seed in seeds]

    def draw(self) -> torch.Tensor:
        return torch.stack([sample_batch(matrix, self.batch, self.length, rng)
                            for matrix, rng in zip(self.matrices, self.generators)])
