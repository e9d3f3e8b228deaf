"""The Set Complement Task, in one place: the task of the suite and the trainer's torch helpers.

Vocabulary V = {0, ..., v-1}. An input is t = (t_1, ..., t_s) of distinct tokens, 1 <= s <= v-1.
The target p*(t) is uniform on V minus [t] (probability 1/(v-s) each) and zero on [t]
(arXiv 2510.08341).

Sampling: a uniformly random ordering of a uniformly random s-subset, i.e. the first s entries of
a uniformly random permutation. Because the models are causal, the prefixes of one permutation of
length v-1 are valid inputs of every length 1..v-1; the evaluation uses this to score all lengths
in one forward pass.

Two faces of the one task, with two random-number backends and the same law:

- :class:`SetComplement` (and :class:`MultisetComplement`, each token at most k times; k = 1 is
  Set Complement) implements the task interface of :mod:`resharpen.experiments.tasks.base`
  (numpy): the automaton, the membership oracle and a numpy sampler, for the task suite, its
  grids and its checks;
- :func:`sample_inputs`, :func:`seen_mask`, :func:`exact_target` and :func:`validate_inputs` are
  the torch helpers of the Set Complement trainer, evaluator and constructions (torch's
  generator, so their numbers are the ones the Set Complement experiments have always drawn).

tests/languages/test_languages.py checks that both give the same targets position by position.
torch is imported by the torch helpers only, so the task suite stays torch-free.

It lives in the core, below the constructions, because the constructions (whose theory margins
take its inputs), the set_complement slice and the task suite use it.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from resharpen.experiments.tasks.base import Task, check_int, make_rng

if TYPE_CHECKING:
    import torch

_INT_DTYPE_NAMES = ("int64", "int32", "int16", "int8", "uint8")


def check_vocab(vocab: int) -> int:
    if isinstance(vocab, bool) or not isinstance(vocab, int):
        raise ValueError(f"vocabulary size must be an integer >= 2, got {vocab!r}")
    if vocab < 2:
        raise ValueError(f"vocabulary size must be >= 2 (an input needs a missing token), got {vocab}")
    return vocab


def check_length(length: int, vocab: int) -> int:
    check_vocab(vocab)
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= vocab - 1:
        raise ValueError(f"input length must be an integer in [1, {vocab - 1}] for vocab={vocab}, "
                         f"got {length!r}")
    return length


def sample_inputs(vocab: int, length: int, count: int, seed: int = 0) -> torch.Tensor:
    """``count`` inputs of ``length`` distinct tokens, each a uniformly random ordering of a
    uniformly random subset; int64 tensor (count, length). Same seed, same inputs."""
    import torch

    check_length(length, vocab)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    generator = torch.Generator().manual_seed(int(seed))
    keys = torch.rand(count, vocab, generator=generator, dtype=torch.float64)
    return keys.argsort(dim=1)[:, :length].contiguous()


def validate_inputs(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """Return ``tokens`` if it is a valid batch of Set Complement inputs, else ValueError.

    Valid: an integer tensor (count, s) with 1 <= s <= v-1, entries in [0, v-1], no token
    repeated within a row."""
    import torch

    check_vocab(vocab)
    if not isinstance(tokens, torch.Tensor):
        raise ValueError(f"inputs must be a torch.Tensor, got {type(tokens).__name__}")
    if str(tokens.dtype).removeprefix('torch.') not in _INT_DTYPE_NAMES:
        raise ValueError(f"inputs must have an integer dtype, got {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"inputs must have shape (count, length), got {tuple(tokens.shape)}")
    if tokens.shape[0] == 0:
        raise ValueError("inputs hold no row: give at least one input (count >= 1)")
    check_length(int(tokens.shape[1]), vocab)
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab:
        raise ValueError(f"tokens must lie in [0, {vocab - 1}], got values in [{low}, {high}]")
    ordered = tokens.sort(dim=1).values
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(dim=1)
    if repeated.any():
        row = int(repeated.nonzero()[0])
        raise ValueError(f"input {row} repeats a token ({tokens[row].tolist()}); "
                         "Set Complement inputs are sets of distinct tokens")
    return tokens


def seen_mask(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """Boolean (count, s, v): entry [n, i, x] is True when x is among t_1..t_{i+1} of row n,
    i.e. the invalid set of the prefix of length i+1."""
    import torch

    one_hot = torch.nn.functional.one_hot(tokens.long(), vocab)
    return one_hot.cumsum(dim=1) > 0


def exact_target(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """p*(t) for each row of ``tokens`` (the whole row is the input): float64 (count, v)."""
    import torch

    validate_inputs(tokens, vocab)
    invalid = seen_mask(tokens, vocab)[:, -1]
    valid = (~invalid).to(torch.float64)
    return valid / valid.sum(dim=1, keepdim=True)


# ------------------------------------------------------------------ the task of the suite
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
