"""Dyck-k and Shuffle-Dyck-k: bracket languages with several legal next tokens.

Dyck-k is the set of nonempty, well-nested strings over k bracket pairs ( ) [ ] { } < >, given by
the grammar D -> P | P D, P -> o_j D? c_j. Legal-next sets: every opener is always legal (any
prefix can be closed later); the closer of the innermost open bracket is legal when one is open;
EOS is legal exactly when nothing is open and the string is nonempty. Dyck-1 is a one-counter
language; Dyck-k for k >= 2 is context-free and not a counter language. The number of words of
length 2n is k^n C_n (C_n the n-th Catalan number).

Shuffle-Dyck-k (Suzgun et al. 2019) is the set of nonempty strings whose projection on each
bracket pair, taken alone, is balanced (empty allowed): the shuffle of k Dyck-1 languages. A
closer is legal when its own pair has an unmatched opener; EOS when every pair is balanced.
It is a k-counter language, not context-free for k >= 2. The number of words of length 2n is
sum_i binom(2n, 2i) C_i C_{n-i}; for k = 2 this equals C_n C_{n+1} (OEIS A005568).

Tokens: openers at even ids, the matching closer right after, EOS "$" last.
"""
from __future__ import annotations

from itertools import accumulate
from typing import Sequence

import numpy as np

from resharpen.experiments.tasks.base import Task, check_int

PAIRS = ("()", "[]", "{}", "<>")


class _Brackets(Task):
    """Shared vocabulary of the bracket languages: k pairs, then EOS."""

    prefix = ""

    def __init__(self, pairs: int):
        self.pairs = check_int("pairs", pairs, 1, len(PAIRS), " (bracket pairs ( ) [ ] { } < >)")
        self.name = f"{self.prefix}{self.pairs}"
        self.vocab = tuple(ch for pair in PAIRS[:self.pairs] for ch in pair) + ("$",)
        self.eos = 2 * self.pairs

    def _text(self, string: Sequence[int]) -> str:
        """The string as text; "" (never a member) if it is empty or holds EOS."""
        text = "".join(self.vocab[t] for t in string)
        return "" if "$" in text else text


class Dyck(_Brackets):
    """Dyck-k. State row: [depth, nonempty, stack[0..capacity-1]] with stack entries = pair + 1."""

    prefix = "dyck"

    def __init__(self, pairs: int = 1):
        super().__init__(pairs)

    def start(self, count, capacity):
        return np.zeros((count, 2 + capacity), dtype=np.int64)

    def legal(self, states):
        k, depth = self.pairs, states[:, 0]
        top = states[np.arange(len(states)), 2 + np.maximum(depth - 1, 0)] * (depth > 0)
        mask = np.zeros((len(states), self.size), dtype=bool)
        mask[:, 0:2 * k:2] = True
        mask[:, 1:2 * k:2] = top[:, None] == np.arange(1, k + 1)
        mask[:, self.eos] = (depth == 0) & (states[:, 1] == 1)
        return mask

    def advance(self, states, tokens):
        new = states  # in place: a copy would cost O(length) per token
        depth, capacity = states[:, 0].copy(), states.shape[1] - 2
        bracket = tokens < 2 * self.pairs
        push = np.flatnonzero(bracket & (tokens % 2 == 0) & (depth < capacity))
        new[push, 2 + depth[push]] = tokens[push] // 2 + 1
        new[push, 0] += 1
        pop = np.flatnonzero(bracket & (tokens % 2 == 1) & (depth > 0))
        new[pop, 1 + depth[pop]] = 0
        new[pop, 0] -= 1
        new[:, 1] = 1
        return new

    def is_member(self, string: Sequence[int]) -> bool:
        """Cancel adjacent matched pairs until none is left; a word cancels to nothing."""
        text = self._text(string)
        if not text:
            return False
        pairs = PAIRS[:self.pairs]
        while True:
            shorter = text
            for pair in pairs:
                shorter = shorter.replace(pair, "")
            if shorter == text:
                return text == ""
            text = shorter


class ShuffleDyck(_Brackets):
    """Shuffle-Dyck-k. State row: [nonempty, open count of pair 1, ..., of pair k]."""

    prefix = "shuffle_dyck"

    def __init__(self, pairs: int = 2):
        super().__init__(pairs)

    def start(self, count, capacity):
        return np.zeros((count, 1 + self.pairs), dtype=np.int64)

    def legal(self, states):
        k, open_ = self.pairs, states[:, 1:]
        mask = np.zeros((len(states), self.size), dtype=bool)
        mask[:, 0:2 * k:2] = True
        mask[:, 1:2 * k:2] = open_ > 0
        mask[:, self.eos] = (open_ == 0).all(axis=1) & (states[:, 0] == 1)
        return mask

    def advance(self, states, tokens):
        new = states.copy()
        rows = np.flatnonzero(tokens < 2 * self.pairs)
        pair = tokens[rows] // 2
        delta = np.where(tokens[rows] % 2 == 0, 1, -1)
        new[rows, 1 + pair] = np.maximum(new[rows, 1 + pair] + delta, 0)
        new[:, 0] = 1
        return new

    def is_member(self, string: Sequence[int]) -> bool:
        """Each pair's projection has nonnegative running balance and ends at zero."""
        text = self._text(string)
        if not text:
            return False
        for opener, closer in PAIRS[:self.pairs]:
            steps = [1 if ch == opener else -1 for ch in text if ch in (opener, closer)]
            running = list(accumulate(steps, initial=0))
            if min(running) < 0 or running[-1] != 0:
                return False
        return True
