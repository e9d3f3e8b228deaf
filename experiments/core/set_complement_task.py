"""The Set Complement Task.

Vocabulary V = {0, ..., v-1}. An input is t = (t_1, ..., t_s) of distinct tokens, 1 <= s <= v-1.
The target p*(t) is uniform on V minus [t] (probability 1/(v-s) each) and zero on [t].

Sampling: a uniformly random ordering of a uniformly random s-subset, i.e. the first s entries of
a uniformly random permutation. Because the models are causal, the prefixes of one permutation of
length v-1 are valid inputs of every length 1..v-1; the evaluation uses this to score all lengths
in one forward pass.

It lives in the core, below the constructions, because both the constructions (whose theory
margins take its inputs) and the set_complement experiment slice use it.
"""
from __future__ import annotations

import torch

_INT_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


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
    check_vocab(vocab)
    if not isinstance(tokens, torch.Tensor):
        raise ValueError(f"inputs must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype not in _INT_DTYPES:
        raise ValueError(f"inputs must have an integer dtype, got {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"inputs must have shape (count, length), got {tuple(tokens.shape)}")
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
    one_hot = torch.nn.functional.one_hot(tokens.long(), vocab)
    return one_hot.cumsum(dim=1) > 0


def exact_target(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """p*(t) for each row of ``tokens`` (the whole row is the input): float64 (count, v)."""
    validate_inputs(tokens, vocab)
    invalid = seen_mask(tokens, vocab)[:, -1]
    valid = (~invalid).to(torch.float64)
    return valid / valid.sum(dim=1, keepdim=True)
