"""The task interface: a vocabulary, a seeded sampler and, for every prefix, the exact legal-next set.

A task is a deterministic automaton over its vocabulary, vectorized over a batch:
``start(count, capacity)`` gives the initial states, ``legal(states)`` the legal-next set of every
state as a boolean row over the vocabulary, ``advance(states, tokens)`` the successor states. A
state is one row of a 2-D numpy array; for a task with EOS the initial state is the zero row, so
that a stream restarts by zeroing. The membership oracle ``is_member`` is written separately,
without the automaton, so that the two can be checked against each other.

Legal-next sets. For a language L over an alphabet S (the empty string excluded) and a prefix w,

    N(w) = { a in S : w a is a prefix of some word of L }  united with  { EOS : w in L }.

N(w) is a function of the prefix alone, so a causal model can represent it exactly. Tasks
without an end-of-string token (Set Complement, multiset complement) have N(w) = the tokens
that keep w valid.

Stream convention (tasks with EOS). A sample is a prefix of the infinite stream
``w1 EOS w2 EOS w3 ...`` in which every token is drawn uniformly from the legal-next set of the
current (since the last EOS) string; after EOS a new string starts, whose legal-next set is
N(empty). Every complete string between two EOS is a word of L. Hence, at every position, the
exact next-token distribution of the data is uniform over the legal-next set: the training data
and the evaluation target agree exactly, at every length, as in the Set Complement task.

Positions. ``legal_next(seqs)[b, i]`` is the legal-next set after the prefix ``seqs[b, :i+1]``:
the target of a causal model's output at position ``i``. ``initial_legal()`` is N(empty), the
set the first token is drawn from. A prefix that is not valid has the empty set, and so do all
its extensions.
"""
from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from typing import Protocol, Sequence

import numpy as np


def check_int(name: str, value, low: int, high: int | None = None, hint: str = "") -> int:
    """``value`` if it is an integer in [low, high] (high None: unbounded), else ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {allowed}{hint}, got {value}")
    return value


def make_rng(seed) -> np.random.Generator:
    """A numpy Generator from a nonnegative integer seed (or a Generator, returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_int("seed", seed, 0))


def uniform_choice(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each row of a boolean (count, V) mask with at least one True, one column drawn
    uniformly among its True entries (int64, shape (count,))."""
    sizes = mask.sum(axis=1)
    if (sizes == 0).any():
        raise ValueError("uniform_choice: a row has no legal token")
    rank = rng.integers(sizes)  # uniform in {0, ..., size-1}
    running = np.cumsum(mask, axis=1, dtype=np.int16 if mask.shape[1] < 2**15 else np.int64)
    return np.argmax(running > rank[:, None], axis=1).astype(np.int64)


class Task(ABC):
    """A sequence task with exact legal-next sets. Subclasses set the class attributes in
    ``__init__`` and implement the automaton (start, legal, advance) and the oracle."""

    name: str
    vocab: tuple[str, ...]
    eos: int | None = None  # index of the end-of-string token, None if the task has none
    max_length: int | None = None  # longest sample whose every target is defined; None: any

    # ---------------------------------------------------------------- the automaton (vectorized)
    @abstractmethod
    def start(self, count: int, capacity: int) -> np.ndarray:
        """Initial states of ``count`` sequences that will have at most ``capacity`` tokens."""

    @abstractmethod
    def legal(self, states: np.ndarray) -> np.ndarray:
        """Boolean (count, V): the legal-next set of every state."""

    @abstractmethod
    def advance(self, states: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """The states after appending ``tokens`` (one per row). Must not fail on an illegal
        token (the result is then ignored). May update ``states`` in place and return it:
        callers never use the old states again."""

    # ---------------------------------------------------------------- the independent oracle
    @abstractmethod
    def is_member(self, string: Sequence[int]) -> bool:
        """Membership oracle for one string of alphabet token ids (no EOS)."""

    # ---------------------------------------------------------------- derived, shared
    @property
    def size(self) -> int:
        return len(self.vocab)

    @property
    def alphabet(self) -> tuple[int, ...]:
        """The token ids a string of the language is made of (the vocabulary minus EOS)."""
        return tuple(i for i in range(self.size) if i != self.eos)

    def __repr__(self) -> str:
        return f"<Task {self.name}: vocab {' '.join(self.vocab)}>"

    def check_length(self, length) -> int:
        hint = (f" for task {self.name!r} (its longest sequence with defined targets)"
                if self.max_length is not None else "")
        return check_int("length", length, 1, self.max_length, hint)

    def step(self, states: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """``advance``, then restart the rows that emitted EOS (the stream convention)."""
        new = self.advance(states, tokens)
        if self.eos is not None:
            new[tokens == self.eos] = 0  # the initial state of a task with EOS is the zero row
        return new

    def initial_legal(self) -> np.ndarray:
        """N(empty): boolean (V,)."""
        return self.legal(self.start(1, 1))[0]

    def sample(self, count: int, length: int, seed: int | np.random.Generator = 0) -> np.ndarray:
        """``count`` sequences of ``length`` tokens, int64 (count, length); every token is drawn
        uniformly from the legal-next set of its prefix. Same seed, same sequences."""
        count = check_int("count", count, 1)
        length = self.check_length(length)
        rng = make_rng(seed)
        states = self.start(count, length)
        out = np.empty((count, length), dtype=np.int64)
        for i in range(length):
            out[:, i] = uniform_choice(self.legal(states), rng)
            states = self.step(states, out[:, i])
        return out

    def sample_streams(self, count: int, length: int, seeds: Sequence) -> np.ndarray:
        """K samples at once, one per seed or generator: int64 (K, count, length), exactly
        ``np.stack([self.sample(count, length, g) for g in generators])`` (each generator draws
        the same numbers in the same order), with the automaton run once over all K * count
        sequences: the batches of the K members of an ensemble. A task with a sampler of its
        own samples each stream with it."""
        if type(self).sample is not Task.sample:
            return np.stack([self.sample(count, length, seed) for seed in seeds])
        count = check_int("count", count, 1)
        length = self.check_length(length)
        rngs = [make_rng(seed) for seed in seeds]
        states = self.start(len(rngs) * count, length)
        out = np.empty((len(rngs) * count, length), dtype=np.int64)
        for i in range(length):
            legal = self.legal(states)
            out[:, i] = np.concatenate([uniform_choice(legal[k * count:(k + 1) * count], rng)
                                        for k, rng in enumerate(rngs)])
            states = self.step(states, out[:, i])
        return out.reshape(len(rngs), count, length)

    def streams(self, seeds: Sequence[int], batch: int, length: int) -> "TaskStreams":
        """The training data of K runs (:class:`Streams`): run k's batches from the generator
        ``default_rng([seeds[k], STREAM_SALT])``, drawn by :meth:`sample_streams`."""
        return TaskStreams(self, seeds, batch, length)

    def validate(self, seqs) -> np.ndarray:
        """``seqs`` as an int64 (count, length) array of token ids, else ValueError."""
        arr = np.asarray(seqs)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] == 0 or arr.shape[0] == 0:
            raise ValueError(f"sequences must have shape (count, length) with count, length >= 1, "
                             f"got shape {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"sequences must hold integer token ids, got dtype {arr.dtype}")
        low, high = int(arr.min()), int(arr.max())
        if low < 0 or high >= self.size:
            raise ValueError(f"token ids of task {self.name!r} must lie in [0, {self.size - 1}], "
                             f"got values in [{low}, {high}]")
        return arr.astype(np.int64, copy=False)

    def legal_next(self, seqs) -> np.ndarray:
        """Boolean (count, length, V): entry [b, i] is the legal-next set after seqs[b, :i+1]
        (empty once the prefix is invalid)."""
        seqs = self.validate(seqs)
        count, length = seqs.shape
        states = self.start(count, length)
        alive = np.ones(count, dtype=bool)
        rows = np.arange(count)
        out = np.empty((count, length, self.size), dtype=bool)
        mask = self.legal(states)
        for i in range(length):
            alive &= mask[rows, seqs[:, i]]
            states = self.step(states, seqs[:, i])
            mask = self.legal(states)
            mask &= alive[:, None]
            out[:, i] = mask
        return out

    def targets(self, seqs) -> np.ndarray:
        """Exact next-token distributions, float64 (count, length, V): uniform over the legal-next
        set after every prefix. ValueError if some prefix is not valid (empty legal set)."""
        mask = self.legal_next(seqs)
        sizes = mask.sum(axis=2, keepdims=True)
        if (sizes == 0).any():
            b, i = np.argwhere(sizes[..., 0] == 0)[0]
            raise ValueError(f"prefix {self.decode(np.asarray(seqs).reshape(len(mask), -1)[b, :i + 1])!r} "
                             f"(row {b}, position {i}) is not a valid prefix of task {self.name!r}: "
                             f"it has no legal continuation")
        return mask / sizes.astype(np.float64)

    # ---------------------------------------------------------------- text
    def decode(self, seq: Sequence[int]) -> str:
        tokens = [self.vocab[int(t)] for t in seq]
        joiner = "" if all(len(t) == 1 for t in self.vocab) else " "
        return joiner.join(tokens)

    def encode(self, text: str) -> np.ndarray:
        """Token ids of ``text``: space-separated tokens, or characters if every token is one."""
        index = {t: i for i, t in enumerate(self.vocab)}
        parts = text.split() if (" " in text or any(len(t) > 1 for t in self.vocab)) else list(text)
        unknown = [p for p in parts if p not in index]
        if unknown:
            raise ValueError(f"unknown token {unknown[0]!r} for task {self.name!r}; "
                             f"the vocabulary is {' '.join(self.vocab)}")
        return np.array([index[p] for p in parts], dtype=np.int64)


# -------------------------------------------------------------------- exhaustive checks
def count_members(task: Task, max_length: int) -> list[int]:
    """Number of words of each length 0..max_length accepted by the *automaton* (EOS legal; for
    tasks without EOS, every valid sequence), by dynamic programming over distinct states.
    Exact integers (Python ints)."""
    max_length = check_int("max_length", max_length, 0)
    alphabet = np.array(task.alphabet)
    states = task.start(1, max(max_length, 1))
    weight = np.array([1], dtype=object)
    counts = []
    for n in range(max_length + 1):
        mask = task.legal(states)
        if task.eos is not None:
            counts.append(int(weight[mask[:, task.eos]].sum()) if n else 0)
        else:
            counts.append(int(weight.sum()) if n else 0)
        if n == max_length:
            break
        legal = mask[:, alphabet]
        parent, which = np.nonzero(legal)
        if len(parent) == 0:
            counts.extend([0] * (max_length - n))
            break
        children = task.advance(states[parent], alphabet[which])
        uniq, inverse = np.unique(children, axis=0, return_inverse=True)
        merged = np.zeros(len(uniq), dtype=object)
        np.add.at(merged, inverse.ravel(), weight[parent])
        states, weight = uniq, merged
    return counts


def oracle_legal_sets(task: Task, max_member: int) -> tuple[dict, list[int]]:
    """From the oracle alone: enumerate every alphabet string of length 1..max_member, keep the
    members, and return (prefix -> legal-next set as a frozenset of token ids, member counts per
    length 0..max_member). The sets are exact for every prefix short enough that each of its
    valid one-token extensions can be completed within ``max_member`` tokens."""
    alphabet = task.alphabet
    members_by_length = [0]
    prefixes: set[tuple[int, ...]] = set()
    members: set[tuple[int, ...]] = set()
    for n in range(1, max_member + 1):
        found = 0
        for word in itertools.product(alphabet, repeat=n):
            if task.is_member(word):
                found += 1
                members.add(word)
                for k in range(n + 1):
                    prefixes.add(word[:k])
        members_by_length.append(found)
    if task.eos is None:  # prefix-closed tasks: the valid sequences are the members
        prefixes = set(members) | {()}

    def legal_set(prefix: tuple[int, ...]) -> frozenset:
        nxt = {a for a in alphabet if prefix + (a,) in prefixes}
        if task.eos is not None and prefix in members:
            nxt.add(task.eos)
        return frozenset(nxt)

    table = {}
    for n in range(0, max_member):
        for word in itertools.product(alphabet, repeat=n):
            table[word] = legal_set(word)
    return table, members_by_length


def legal_next_disagreements(task: Task, max_member: int, max_prefix: int,
                             oracle: dict | None = None) -> tuple[int, int, list]:
    """Compare the automaton's legal-next sets with the oracle's on every alphabet string of
    length 0..max_prefix (valid or not). Returns (prefixes compared, disagreements, up to five
    examples as (prefix text, automaton set, oracle set)). ``oracle``: a table already made by
    ``oracle_legal_sets(task, max_member)``."""
    if max_prefix >= max_member:
        raise ValueError(f"max_prefix must be < max_member (the oracle needs room to complete "
                         f"the prefixes), got max_prefix={max_prefix}, max_member={max_member}")
    table = oracle if oracle is not None else oracle_legal_sets(task, max_member)[0]
    compared, bad, examples = 0, 0, []
    auto_empty = frozenset(np.flatnonzero(task.initial_legal()).tolist())

    def record(prefix, auto, oracle):
        nonlocal bad
        bad += 1
        if len(examples) < 5:
            examples.append((task.decode(prefix), sorted(auto), sorted(oracle)))

    compared += 1
    if auto_empty != table[()]:
        record((), auto_empty, table[()])
    if max_prefix >= 1:
        words = np.array(list(itertools.product(task.alphabet, repeat=max_prefix)), dtype=np.int64)
        masks = task.legal_next(words)
        seen = set()
        for row, word in enumerate(map(tuple, words.tolist())):
            for i in range(max_prefix):
                prefix = word[:i + 1]
                if prefix in seen:
                    continue
                seen.add(prefix)
                compared += 1
                auto = frozenset(np.flatnonzero(masks[row, i]).tolist())
                if auto != table[prefix]:
                    record(prefix, auto, table[prefix])
    return compared, bad, examples


def sampler_uniformity(task: Task, count: int, length: int, seed: int = 0) -> dict:
    """Sample ``count`` sequences and test, position by position, that every token was legal and
    that its rank among the legal tokens is uniform given the size of the legal set (Pearson
    chi-square per size). Returns {"illegal": int, "min_p": float, "draws": int, "sizes": int}."""
    from scipy.stats import chisquare

    seqs = task.sample(count, length, seed)
    after = task.legal_next(seqs)
    before = np.concatenate([np.broadcast_to(task.initial_legal(), (count, 1, task.size)),
                             after[:, :-1]], axis=1)
    chosen = np.take_along_axis(before, seqs[..., None], axis=2)[..., 0]
    illegal = int((~chosen).sum())
    sizes = before.sum(axis=2)
    rank = np.take_along_axis(np.cumsum(before, axis=2), seqs[..., None], axis=2)[..., 0] - 1
    min_p, groups = 1.0, 0
    for size in np.unique(sizes):
        if size < 2:
            continue
        ranks = rank[(sizes == size) & chosen]
        if len(ranks) < 20 * size:  # too few draws for the chi-square approximation
            continue
        observed = np.bincount(ranks, minlength=size)
        min_p = min(min_p, float(chisquare(observed).pvalue))
        groups += 1
    return {"illegal": illegal, "min_p": min_p, "draws": int(chosen.size), "sizes": groups}


def invalid_words(task: Task, seqs) -> int:
    """How many complete strings in sampled sequences the *oracle* rejects: for tasks with EOS,
    every string ended by EOS; for tasks without, every whole row."""
    seqs = np.asarray(seqs)
    bad = 0
    for row in seqs.tolist():
        if task.eos is None:
            bad += not task.is_member(row)
            continue
        word: list[int] = []
        for token in row:
            if token == task.eos:
                bad += not task.is_member(word)
                word = []
            else:
                word.append(token)
    return bad


STREAM_SALT = 1_000_003
"""Mixed into every run's training-data seed, so that its data stream and its initialization
(``torch.manual_seed(seed)``) draw from unrelated generators."""


class Streams(Protocol):
    """The one sampler interface of the trainer: the training batches of the K runs of a group
    (K = 1 for a lone run), built from the runs' seeds. ``draw()`` returns the next step's
    tokens, int64 (K, batch, length), run k's part depending on its own seed only, so a run
    gets the same data alone and in any group. Every task has one: :meth:`Task.streams` (the
    formal languages, Othello, the complement tasks),
    ``resharpen.experiments.set_complement.train.SetComplementStreams`` (the Set Complement
    slice's torch sampler) and ``resharpen.experiments.collapse.data.ZipfMarkovStreams``."""

    def draw(self): ...


class TaskStreams:
    """:class:`Streams` of a :class:`Task`: ``task.sample_streams(batch, length, generators)``,
    one numpy generator per run."""

    def __init__(self, task: Task, seeds: Sequence[int], batch: int, length: int):
        self.task, self.batch, self.length = task, batch, length
        self.generators = [np.random.default_rng([seed, STREAM_SALT]) for seed in seeds]

    def draw(self) -> np.ndarray:
        return self.task.sample_streams(self.batch, self.length, self.generators)
