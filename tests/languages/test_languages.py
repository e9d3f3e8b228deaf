"""The formal-language suite: automata against independent oracles, counts against known
sequences, samplers, the stream convention, exact targets and error messages."""
from __future__ import annotations

import numpy as np
import pytest

from resharpen.experiments.languages.claims import CASES, oracle_table
from resharpen.experiments.tasks.registry import LANGUAGES, TASKS, get_task
from resharpen.experiments.tasks.base import (count_members, invalid_words, legal_next_disagreements,
                                    sampler_uniformity)
from resharpen.experiments.tasks.dyck import Dyck

REQUIRED = {"dyck1", "dyck2", "dyck3", "shuffle_dyck2", "anbn", "anbncn", "tomita3", "tomita5",
            "tomita7", "multiset_complement", "set_complement"}


def test_registry_has_the_required_languages_across_families():
    assert REQUIRED <= set(LANGUAGES)
    families = {TASKS[name] for name in LANGUAGES}
    assert {"regular", "counter", "context-free", "finite"} <= families


# ------------------------------------------------------------------ automaton vs oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_legal_next_agrees_with_oracle_enumeration(name):
    case = CASES[name]
    member, prefix = case.member[0], case.prefix[0]
    table, _ = oracle_table(name, member)
    compared, bad, examples = legal_next_disagreements(case.task(), member, prefix, oracle=table)
    assert bad == 0, examples
    alphabet = len(case.task().alphabet)
    assert compared == sum(alphabet ** n for n in range(prefix + 1))  # every string, valid or not


@pytest.mark.parametrize("name", sorted(CASES))
def test_word_counts_automaton_oracle_and_known_sequence(name):
    case = CASES[name]
    member = case.member[0]
    _, oracle_counts = oracle_table(name, member)
    assert count_members(case.task(), member) == oracle_counts
    if case.known is not None:
        top = case.count_top[0]
        assert count_members(case.task(), top)[1:] == [case.known(n) for n in range(1, top + 1)]
        assert oracle_counts[1:] == [case.known(n) for n in range(1, member + 1)]


def test_catalan_counts_explicitly():
    counts = count_members(get_task("dyck1"), 20)
    assert counts[2::2] == [1, 2, 5, 14, 42, 132, 429, 1430, 4862, 16796]
    assert not any(counts[1::2])


def test_the_agreement_check_can_fail():
    class Broken(Dyck):  # wrongly allows EOS at depth 1
        def legal(self, states):
            mask = super().legal(states)
            mask[:, self.eos] |= states[:, 0] == 1
            return mask

    compared, bad, examples = legal_next_disagreements(Broken(1), 10, 4)
    assert bad > 0 and examples[0][0].startswith("(")
    assert count_members(Broken(1), 4) != count_members(Dyck(1), 4)


@pytest.mark.parametrize("text, member", [
    ("10", False), ("100", True), ("1100", True), ("101", False), ("100100", True),
    ("0110", True), ("111000", False), ("1110000", True), ("1000", False), ("", False)])
def test_tomita3_oracle_examples(text, member):
    task = get_task("tomita3")
    assert task.is_member(task.encode(text) if text else []) is member


@pytest.mark.parametrize("name, text, member", [
    ("tomita5", "0110", True), ("tomita5", "0111", False), ("tomita7", "0011001", True),
    ("tomita7", "1010", False), ("tomita4", "1001", True), ("tomita4", "10001", False),
    ("tomita6", "001", False), ("tomita6", "0001", False), ("tomita6", "000111", True),
    ("dyck2", "([])[]", True), ("dyck2", "([)]", False), ("shuffle_dyck2", "([)]", True),
    ("shuffle_dyck2", "(]", False), ("anbn", "aabb", True), ("anbn", "aab", False),
    ("anbncn", "aabbcc", True), ("anbncn", "aabbc", False), ("anbncn", "abcabc", False)])
def test_oracle_examples(name, text, member):
    task = get_task(name)
    assert task.is_member(task.encode(text)) is member


# ------------------------------------------------------------------ sampler
@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_sample_shape_determinism_validity(name):
    task = CASES[name].task()
    length = min(40, task.max_length or 40)
    a = task.sample(64, length, seed=5)
    assert a.shape == (64, length) and a.dtype == np.int64
    assert np.array_equal(a, task.sample(64, length, seed=5))
    assert not np.array_equal(a, task.sample(64, length, seed=6))
    assert task.legal_next(a).any(axis=2).all()  # every prefix is valid
    assert invalid_words(task, a) == 0
    if task.eos is not None:
        assert (a == task.eos).any()  # streams contain complete words


@pytest.mark.parametrize("name", ["dyck2", "shuffle_dyck2", "anbncn", "tomita3", "tomita7",
                                  "multiset_complement"])
def test_sampler_is_uniform_over_legal_set(name):
    task = CASES[name].task()
    result = sampler_uniformity(task, 2000, min(20, task.max_length or 20), seed=3)
    assert result["illegal"] == 0
    assert result["sizes"] >= 1 and result["min_p"] > 1e-4


def test_sampler_uniformity_check_detects_a_biased_sampler():
    class Biased(Dyck):  # draws the first legal token too often
        def sample(self, count, length, seed=0):
            rng = np.random.default_rng(seed)
            states, out = self.start(count, length), np.empty((count, length), dtype=np.int64)
            for i in range(length):
                mask = self.legal(states)
                first = np.argmax(mask, axis=1)
                other = np.argmax(mask * rng.random(mask.shape), axis=1)
                out[:, i] = np.where(rng.random(count) < 0.3, first, other)
                states = self.step(states, out[:, i])
            return out

    assert sampler_uniformity(Biased(2), 2000, 20, seed=0)["min_p"] < 1e-6
    # the claim's equivalence test: the biased sampler is shown outside the 20 % margin (FAIL),
    # the real one inside it (PASS)
    from resharpen.experiments.languages.claims import UNIFORM_MARGIN, rank_draws
    from resharpen.experiments.ledger import stats

    def decide(task):
        _, groups = rank_draws(task, 2000, 20, seed=0)
        tests = [("t", f"k={k} r={r}", stats.equivalence((ranks == r).astype(float),
                                                         np.full(ranks.size, 1.0 / k),
                                                         UNIFORM_MARGIN / k))
                 for k, ranks in groups.items() if ranks.size >= 1000 * k for r in range(k)]
        return stats.decision(stats.family(tests)["t"])[0]

    assert decide(Biased(2)) == "FAIL" and decide(Dyck(2)) == "PASS"


def test_dyck1_first_steps_frequencies():
    # after "(" the legal set is {"(", ")"}: each half the time
    seqs = get_task("dyck1").sample(20000, 2, seed=0)
    assert (seqs[:, 0] == 0).all()
    share = (seqs[:, 1] == 0).mean()
    assert abs(share - 0.5) < 4 * 0.5 / np.sqrt(20000)


def test_set_complement_rows_are_distinct_tokens_and_uniform():
    task = get_task("set_complement", vocab=6)
    seqs = task.sample(30000, 5, seed=0)
    assert all(len(set(row)) == 5 for row in seqs.tolist())
    first = np.bincount(seqs[:, 0], minlength=6) / 30000
    assert np.abs(first - 1 / 6).max() < 4 * np.sqrt(1 / 6 * 5 / 6 / 30000)
    # second token given the first: uniform over the five others
    pair = np.bincount(seqs[:, 0] * 6 + seqs[:, 1], minlength=36).reshape(6, 6)
    assert (np.diag(pair) == 0).all()
    assert _rows_uniform(pair)


def _rows_uniform(pair):
    from scipy.stats import chisquare

    off = pair[~np.eye(6, dtype=bool)].reshape(6, 5)
    return all(chisquare(row).pvalue > 1e-4 for row in off)


# ------------------------------------------------------------------ stream convention
@pytest.mark.parametrize("name", ["dyck2", "shuffle_dyck2", "anbn", "tomita3"])
def test_after_eos_the_legal_sets_restart(name):
    task = get_task(name)
    seqs = task.sample(32, 30, seed=1)
    masks = task.legal_next(seqs)
    checked = 0
    for row, mask in zip(seqs, masks):
        ends = np.flatnonzero(row == task.eos)
        if len(ends) == 0 or ends[0] == len(row) - 1:
            continue
        cut = ends[0]
        assert np.array_equal(mask[cut], task.initial_legal())
        fresh = task.legal_next(row[cut + 1:])[0]
        assert np.array_equal(mask[cut + 1:], fresh)
        checked += 1
    assert checked > 5


def test_legal_sets_by_hand():
    dyck2 = get_task("dyck2")
    v = {t: i for i, t in enumerate(dyck2.vocab)}
    mask = dyck2.legal_next(dyck2.encode("([]"))[0]
    assert {dyck2.vocab[i] for i in np.flatnonzero(mask[-1])} == {"(", "[", ")"}
    assert {dyck2.vocab[i] for i in np.flatnonzero(mask[1])} == {"(", "[", "]"}
    done = dyck2.legal_next(dyck2.encode("()"))[0, -1]
    assert {dyck2.vocab[i] for i in np.flatnonzero(done)} == {"(", "[", "$"}
    assert v["$"] == dyck2.eos == len(dyck2.vocab) - 1
    anbn = get_task("anbn")
    sets = [{anbn.vocab[i] for i in np.flatnonzero(m)} for m in anbn.legal_next(anbn.encode("aabb"))[0]]
    assert sets == [{"a", "b"}, {"a", "b"}, {"b"}, {"$"}]
    assert {anbn.vocab[i] for i in np.flatnonzero(anbn.initial_legal())} == {"a"}


# ------------------------------------------------------------------ exact targets
def test_targets_uniform_over_legal_sets():
    task = get_task("set_complement", vocab=8)
    seqs = task.sample(10, 7, seed=0)
    p = task.targets(seqs)
    assert p.dtype == np.float64 and np.allclose(p.sum(axis=2), 1.0, rtol=0, atol=1e-15)
    for s in range(1, 8):  # after s distinct tokens: 1 / (v - s) on each unused token
        assert np.allclose(p[:, s - 1][p[:, s - 1] > 0], 1 / (8 - s), rtol=0, atol=1e-15)
        assert (p[np.arange(10)[:, None], s - 1, seqs[:, :s]] == 0).all()
    dyck = get_task("dyck1")
    q = dyck.targets(dyck.encode("(()"))[0]
    assert np.array_equal(q, [[0.5, 0.5, 0], [0.5, 0.5, 0], [0.5, 0.5, 0]])


def test_invalid_prefixes_have_empty_sets_and_no_target():
    task = get_task("dyck1")
    mask = task.legal_next(task.encode("())(("))[0]
    assert mask[:2].any(axis=1).all() and not mask[2:].any()
    with pytest.raises(ValueError, match=r"'\(\)\)'.*not a valid prefix"):
        task.targets(task.encode("())(("))


# ------------------------------------------------------------------ errors
def test_unknown_task_and_parameters():
    with pytest.raises(ValueError, match="unknown task 'dyck9'.*dyck1"):
        get_task("dyck9")
    with pytest.raises(ValueError, match="no parameter 'k'.*vocab"):
        get_task("set_complement", k=2)
    with pytest.raises(ValueError, match="no parameter 'vocab'.*none"):
        get_task("dyck1", vocab=3)


@pytest.mark.parametrize("name, params, pattern", [
    ("set_complement", {"vocab": 1}, r"vocab must be in \[2, 100000\], got 1"),
    ("set_complement", {"vocab": 2.5}, r"vocab must be an integer, got 2.5"),
    ("multiset_complement", {"vocab": 4, "k": 0}, r"k \(uses allowed per token\) must be in"),
    ("multiset_complement", {"vocab": 1, "k": 1}, r"vocab \* k must be >= 2"),
])
def test_bad_parameters(name, params, pattern):
    with pytest.raises(ValueError, match=pattern):
        get_task(name, **params)


def test_bad_constructor_values():
    from resharpen.experiments.tasks.counter import Counting
    from resharpen.experiments.tasks.tomita import Tomita

    with pytest.raises(ValueError, match=r"pairs must be in \[1, 4\].*got 0"):
        Dyck(0)
    with pytest.raises(ValueError, match=r"Tomita grammar number must be in \[1, 7\], got 8"):
        Tomita(8)
    with pytest.raises(ValueError, match=r"letters must be in \[2, 3\]"):
        Counting(4)


def test_impossible_lengths_and_counts():
    task = get_task("set_complement", vocab=10)
    assert task.sample(2, 9).shape == (2, 9)
    with pytest.raises(ValueError, match=r"length must be in \[1, 9\] for task 'set_complement'.*got 10"):
        task.sample(2, 10)
    with pytest.raises(ValueError, match=r"length must be in \[1, 5\].*got 6"):
        get_task("multiset_complement", vocab=3, k=2).sample(1, 6)
    with pytest.raises(ValueError, match=r"length must be >= 1, got 0"):
        get_task("dyck1").sample(4, 0)
    with pytest.raises(ValueError, match=r"count must be >= 1, got 0"):
        get_task("dyck1").sample(0, 4)
    with pytest.raises(ValueError, match=r"length must be an integer, got 3.0"):
        get_task("anbn").sample(4, 3.0)
    with pytest.raises(ValueError, match=r"seed must be >= 0, got -1"):
        get_task("anbn").sample(4, 3, seed=-1)
    generator = np.random.default_rng(4)
    assert np.array_equal(get_task("dyck2").sample(3, 9, seed=generator),
                          get_task("dyck2").sample(3, 9, seed=4))


def test_bad_sequences():
    task = get_task("dyck1")
    with pytest.raises(ValueError, match=r"token ids of task 'dyck1' must lie in \[0, 2\], got values in \[0, 7\]"):
        task.legal_next([[0, 7]])
    with pytest.raises(ValueError, match="integer token ids"):
        task.legal_next([[0.0, 1.0]])
    with pytest.raises(ValueError, match="unknown token 'x'"):
        task.encode("(x)")


# ------------------------------------------------------------------ full profile
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_full_profile_agreement(name):
    from resharpen.experiments.languages.claims import agreement, known_counts

    assert agreement(name, "full").passed
    if CASES[name].known is not None:
        assert known_counts(name, "full").passed


def test_set_complement_agrees_with_the_training_module():
    """The suite's set_complement and experiments/tasks/set_complement.py (the trainer's torch
    version) define the same targets, position by position."""
    torch = pytest.importorskip("torch")
    from resharpen.experiments.tasks import set_complement as sc
    task = get_task("set_complement", vocab=9)
    seqs = task.sample(40, 8, seed=2)
    tokens = torch.from_numpy(seqs)
    assert np.array_equal(task.legal_next(seqs), ~sc.seen_mask(tokens, 9).numpy())
    ours = task.targets(seqs)
    for i in range(8):
        assert np.array_equal(ours[:, i], sc.exact_target(tokens[:, :i + 1], 9).numpy())


# ------------------------------------------------------------------ batch and prefix invariance
@pytest.mark.parametrize("name", ["dyck3", "shuffle_dyck2", "anbncn", "tomita3", "multiset_complement"])
def test_legal_next_is_batch_and_prefix_invariant(name):
    """A row's sets do not depend on the other rows of the batch nor on the tokens after the
    prefix; random (mostly invalid) strings are included."""
    task = CASES[name].task()
    rng = np.random.default_rng(0)
    length = min(12, task.max_length or 12)
    valid = task.sample(20, length, seed=3)
    noise = rng.integers(0, task.size, size=(20, length))
    mixed = np.where(rng.random((20, length)) < 0.1, noise, valid)
    batch = np.concatenate([valid, noise, mixed])
    masks = task.legal_next(batch)
    for row in range(0, len(batch), 7):
        assert np.array_equal(task.legal_next(batch[row]), masks[row:row + 1])
    cut = length // 2
    assert np.array_equal(task.legal_next(batch[:, :cut]), masks[:, :cut])
    assert masks[:20].any(axis=2).all()  # sampled rows stay valid
    assert not masks[20:40, -1].any(axis=1).all()  # most noise rows are dead by the end


@pytest.mark.parametrize("name", sorted(TASKS))
def test_streams_of_an_ensemble_are_each_generators_own_sample(name):
    """Task.sample_streams (the K members' batches at once) draws exactly what K calls of
    sample draw, and leaves every generator where those calls leave it."""
    task = get_task(name)
    length = min(12, task.max_length or 12)
    seeds = [[seed, 7] for seed in range(3)]
    together = [np.random.default_rng(s) for s in seeds]
    alone = [np.random.default_rng(s) for s in seeds]
    streams = task.sample_streams(4, length, together)
    assert streams.shape == (3, 4, length)
    assert np.array_equal(streams, np.stack([task.sample(4, length, g) for g in alone]))
    assert [g.random() for g in together] == [g.random() for g in alone]


def test_the_task_suite_loads_no_torch():
    """The Set Complement task lives with its torch helpers (tasks/set_complement.py); the
    suite still imports no torch (torch comes with the helpers' calls only)."""
    import subprocess
    import sys

    code = ("import sys; from resharpen.experiments.tasks.registry import get_task; "
            "get_task('set_complement', vocab=5).sample(2, 3, 0); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
