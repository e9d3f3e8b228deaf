"""Set Complement and multiset complement: the token is legal while it has not been used up.

Set Complement (arXiv 2510.08341): vocabulary V = {0, ..., v-1}; a sequence is a string of
distinct tokens; after t_1..t_s the legal-next set is V minus {t_1..t_s}, so the exact target is
uniform over the v - s unused tokens. Lengths 1..v-1 have defined targets at every position.
Sampling uniformly among unused tokens at every step is the same as taking the first s entries
of a uniformly random permutation, which is how ``sample`` draws them.

Multiset complement: each token may occur at most k times; after a prefix, the legal-next set is
the tokens used fewer than k times. Lengths 1..kv-1 have defined targets. k = 1 is Set
Complement. The number of valid sequences of length n is n! [x^n] (sum_{j<=k} x^j / j!)^v.

Neither task has an end-of-string token: every prefix of a valid sequence is valid.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from resharpen.experiments.core.tasks import Task, check_int, make_rng


class MultisetComplement(Task):
    """Each of v tokens at most k times. State row: use count of every token."""

    def __init__(self, vocab: int = 8, k: int = 2):
        self.v = check_int("vocab", vocab, 1, 100_000)
        self.k = check_int("k (uses allowed per token)", k, 1, 1_000)
        if self.v * self.k < 2:
            raise ValueError(f"vocab * k must be >= 2 so that a length-1 sequence has a target, "
                             f"got vocab={self.v}, k={self.k}")
        self.name = "multiset_complement" if self.k > 1 else "set_complement"
        self.vocab = tuple(str(i) for i in range(self.v))
        self.max_length = self.v * self.k - 1

    def start(self, count, capacity):
        return np.zeros((count, self.v), dtype=np.int64)

    def legal(self, states):
        return states < self.k

    def advance(self, states, tokens):
        new = states.copy()
        new[np.arange(len(states)), tokens] += 1
        return new

    def is_member(self, string: Sequence[int]) -> bool:
        tokens = list(string)
        if not tokens or any(not 0 <= t < self.v for t in tokens):
            return False
        return max(Counter(tokens).values()) <= self.k


class SetComplement(MultisetComplement):
    """Distinct tokens from {0..v-1}; target uniform over the unused ones."""

    def __init__(self, vocab: int = 16):
        check_int("vocab", vocab, 2, 100_000)
        super().__init__(vocab, 1)

    def sample(self, count, length, seed=0):
        """Prefixes of uniformly random permutations (the same law as the generic sampler)."""
        count = check_int("count", count, 1)
        length = self.check_length(length)
        rng = make_rng(seed)
        return np.argsort(rng.random((count, self.v)), axis=1, kind="stable")[:, :length]

    def is_member(self, string: Sequence[int]) -> bool:
        tokens = list(string)
        return (bool(tokens) and all(0 <= t < self.v for t in tokens)
                and len(set(tokens)) == len(tokens))
