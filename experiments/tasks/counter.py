"""Counting languages a^n b^n and a^n b^n c^n (n >= 1).

a^n b^n = { a^n b^n : n >= 1 } is context-free (one counter); a^n b^n c^n is context-sensitive
(two counters). Legal-next sets, for m letters l_1 < ... < l_m and a prefix in block p:
the current letter is legal while block 1 is still open (p = 1) or the block is shorter than
block 1; the next letter is legal once block 1 is nonempty (p = 1) or the block has reached the
length of block 1; EOS is legal when the last block has that length. So after a^k (k >= 1) the
set is {a, b}: two legal tokens; after that, one. Words have length m n, one per n.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from resharpen.experiments.tasks.base import Task, check_int


class Counting(Task):
    """l_1^n l_2^n ... l_m^n. State row: [block index p (0-based), n_1, ..., n_m]."""

    def __init__(self, letters: int = 2):
        self.letters = check_int("letters", letters, 2, 3, " (2: a^n b^n, 3: a^n b^n c^n)")
        self.name = "anbn" if self.letters == 2 else "anbncn"
        self.vocab = tuple("abc"[:self.letters]) + ("$",)
        self.eos = self.letters

    def start(self, count, capacity):
        return np.zeros((count, 1 + self.letters), dtype=np.int64)

    def legal(self, states):
        rows = np.arange(len(states))
        block, first = states[:, 0], states[:, 1]
        current = states[rows, 1 + block]
        mask = np.zeros((len(states), self.size), dtype=bool)
        same = (block == 0) | (current < first)
        nxt = np.where(block == 0, first >= 1, current == first)
        mask[rows, block] = same
        has_next = block + 1 < self.letters
        mask[rows[has_next], block[has_next] + 1] = nxt[has_next]
        mask[:, self.eos] = (block == self.letters - 1) & (current == first) & (first >= 1)
        return mask

    def advance(self, states, tokens):
        new = states.copy()
        rows = np.arange(len(states))
        block = states[:, 0]
        moved = (tokens == block + 1) & (tokens < self.letters)
        new[moved, 0] += 1
        counted = (tokens == block) | moved
        new[rows[counted], 1 + tokens[counted]] += 1
        return new

    def is_member(self, string: Sequence[int]) -> bool:
        """Regular-expression shape check, then equal block lengths."""
        text = "".join(self.vocab[t] for t in string)
        pattern = "".join(f"({ch}+)" for ch in "abc"[:self.letters])
        match = re.fullmatch(pattern, text)
        return bool(match) and len({len(g) for g in match.groups()}) == 1
