"""Othello: bitboard rules against the square-by-square reference, perft, the generator, the
legal-next convention (implicit passes, PAD at game end) and errors."""
from __future__ import annotations

import numpy as np
import pytest

from resharpen.experiments.languages.claims import PERFT
from resharpen.experiments.tasks.registry import get_task
from resharpen.experiments.tasks.othello import (NAMES, PAD, SQUARES, TOKEN_OF_SQUARE, flips, legal_moves,
                                       perft, reference_flips, reference_moves,
                                       reference_perft, reference_replay)


@pytest.fixture(scope="module")
def othello():
    return get_task("othello")


@pytest.fixture(scope="module")
def games(othello):
    return othello.sample(1000, 60, seed=11)


def test_popcount_both_paths():
    from resharpen.experiments.tasks.othello import _popcount, _popcount_bytes

    x = np.random.default_rng(0).integers(0, 2**63, size=200, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    expected = np.array([bin(int(v)).count("1") for v in x])
    assert np.array_equal(_popcount(x), expected)
    assert np.array_equal(_popcount_bytes(x), expected)


def test_vocabulary_is_othellogpt_like(othello):
    assert len(othello.vocab) == 61 and othello.vocab[PAD] == "PAD"
    assert {"d4", "e4", "d5", "e5"}.isdisjoint(othello.vocab)
    assert othello.vocab[1] == "a1" and othello.vocab[60] == "h8"
    assert all(NAMES[TOKEN_OF_SQUARE[sq]] == NAMES[1 + i] for i, sq in enumerate(SQUARES))


def test_opening_moves(othello):
    first = {othello.vocab[i] for i in np.flatnonzero(othello.initial_legal())}
    assert first == {"d3", "c4", "f5", "e6"}
    after = othello.legal_next(othello.encode("f5"))[0, 0]
    assert {othello.vocab[i] for i in np.flatnonzero(after)} == {"d6", "f4", "f6"}


@pytest.mark.parametrize("depth", range(1, 7))
def test_perft_bitboards(depth):
    assert perft(depth) == PERFT[depth - 1]


@pytest.mark.parametrize("depth", range(1, 5))
def test_perft_reference_rules(depth):
    assert reference_perft(depth) == PERFT[depth - 1]


@pytest.mark.slow
def test_perft_deep():
    assert [perft(d) for d in (7, 8)] == [55092, 390216]
    assert reference_perft(6) == 8200


def _to_board(me: int, opp: int) -> list[int]:
    return [1 if me >> sq & 1 else 2 if opp >> sq & 1 else 0 for sq in range(64)]


def test_bitboard_moves_and_flips_match_reference_on_random_boards():
    rng = np.random.default_rng(0)
    count = 300
    cells = rng.integers(0, 3, size=(count, 64))  # random, often unreachable, positions
    weights = (np.uint64(1) << np.arange(64, dtype=np.uint64))
    me = ((cells == 1) * weights).sum(axis=1, dtype=np.uint64)
    opp = ((cells == 2) * weights).sum(axis=1, dtype=np.uint64)
    moves = legal_moves(me, opp)
    checked_flips = 0
    for b in range(count):
        board = _to_board(int(me[b]), int(opp[b]))
        expected = reference_moves(board, 1)
        got = [sq for sq in range(64) if int(moves[b]) >> sq & 1]
        assert got == expected, b
        for sq in expected:
            bit = np.array([1 << sq], dtype=np.uint64)
            f = int(flips(me[b:b + 1], opp[b:b + 1], bit)[0])
            assert sorted(s for s in range(64) if f >> s & 1) == sorted(reference_flips(board, 1, sq))
            checked_flips += 1
    assert checked_flips > 300


def test_sample_shape_determinism_and_padding(othello, games):
    assert games.shape == (1000, 60) and games.dtype == np.int64
    again = othello.sample(1000, 60, seed=11)
    assert np.array_equal(again, games)
    assert not np.array_equal(othello.sample(1000, 60, seed=12), games)
    assert np.array_equal(othello.sample(1000, 20, seed=11), games[:, :20])  # a cut game
    pad = games == PAD
    # PAD only as a suffix, and every non-PAD token a square
    assert (pad[:, 1:] >= pad[:, :-1]).all()
    assert not pad[:, :8].any()  # no game ends before move 9


def _passes(othello, games):
    """Games (row indices) in which some player passes, found from the side-to-move column."""
    states = othello.start(len(games), games.shape[1])
    passed = np.zeros(len(games), dtype=bool)
    for i in range(games.shape[1]):
        new = othello.step(states, games[:, i])
        moved = (games[:, i] != PAD) & (new[:, 2] != 0)
        passed |= moved & (new[:, 3] == states[:, 3])
        states = new
    return np.flatnonzero(passed)


def test_generator_and_legal_sets_match_reference(othello, games):
    rng = np.random.default_rng(0)
    with_pass = _passes(othello, games).tolist()
    ended = np.flatnonzero(games[:, -1] == PAD).tolist()
    plain = rng.choice(len(games), 10, replace=False).tolist()
    assert with_pass and ended, "the sample should contain passes and early game ends"
    chosen = sorted(set(with_pass[:10] + ended[:10] + plain))
    masks = othello.legal_next(games[chosen])
    for row, index in enumerate(chosen):
        sets = reference_replay(games[index])
        assert sets is not None
        got = [frozenset(np.flatnonzero(m).tolist()) for m in masks[row]]
        assert got == sets, index


def test_pass_and_game_end_convention(othello, games):
    masks = othello.legal_next(games)
    pad = games == PAD
    # once a game is over (the next token is PAD, or the board is full after 60 moves) the only
    # legal token is PAD, and it stays so
    over = pad.copy()
    over[:, :-1] |= pad[:, 1:]
    over[:, -1] = True
    assert (masks[over][:, PAD]).all() and not masks[over][:, 1:].any()
    # while the game goes on, PAD is never legal and at least one square is
    assert not masks[~over][:, PAD].any() and masks[~over][:, 1:].any(axis=1).all()
    assert 0 < pad[:, -1].sum() < len(games)  # some games end early, most fill the board
    targets = othello.targets(games[:20])
    assert np.allclose(targets.sum(axis=2), 1.0, rtol=0, atol=1e-15)


def test_sampler_uniform_over_legal_moves(othello):
    # the opening: d3 c4 f5 e6 a quarter each
    first = othello.sample(8000, 1, seed=1)[:, 0]
    counts = np.bincount(first, minlength=61)
    assert set(np.flatnonzero(counts)) == set(np.flatnonzero(othello.initial_legal()))
    from scipy.stats import chisquare
    assert chisquare(counts[counts > 0]).pvalue > 1e-4
    # second move after f5: d6 f4 f6 a third each
    f5 = othello.encode("f5")[0]
    two = othello.sample(8000, 2, seed=2)
    reply = np.bincount(two[two[:, 0] == f5, 1], minlength=61)
    assert {othello.vocab[i] for i in np.flatnonzero(reply)} == {"d6", "f4", "f6"}
    assert chisquare(reply[reply > 0]).pvalue > 1e-4


def test_illegal_moves_and_membership(othello, games):
    game = games[0].copy()
    assert othello.is_member(game)
    bad = game.copy()
    bad[3] = bad[1]  # a square already taken
    assert not othello.is_member(bad)
    mask = othello.legal_next(bad)[0]
    assert mask[:3].any(axis=1).all() and not mask[3:].any()
    with pytest.raises(ValueError, match="not a valid prefix of task 'othello'"):
        othello.targets(bad)
    early_pad = game.copy()
    early_pad[10] = PAD
    assert not othello.is_member(early_pad)
    assert not othello.legal_next(early_pad)[0, 10:].any()


def test_errors(othello):
    with pytest.raises(ValueError, match=r"length must be in \[1, 60\] for task 'othello'.*got 61"):
        othello.sample(2, 61)
    with pytest.raises(ValueError, match=r"count must be >= 1, got -1"):
        othello.sample(-1, 10)
    with pytest.raises(ValueError, match=r"token ids of task 'othello' must lie in \[0, 60\]"):
        othello.legal_next([[61]])
    with pytest.raises(ValueError, match=r"perft depth must be in \[0, 9\].*got 13"):
        perft(13)
    assert perft(0) == 1


@pytest.mark.slow
def test_generator_speed_target():
    import time

    othello = get_task("othello")
    start = time.perf_counter()
    othello.sample(100_000, 60, seed=0, progress=False)
    assert time.perf_counter() - start < 60.0


def test_published_perfect_game_is_legal_and_drawn(othello):
    from resharpen.experiments.languages.claims import solved_game_moves

    game = othello.encode(solved_game_moves())
    assert len(game) == 60 and othello.is_member(game)
    states = othello.start(1, 60)
    for token in game:
        states = othello.step(states, np.array([token]))
    assert int(states[0, 2]) == 0  # game over
    assert [bin(int(x)).count("1") for x in states[0, :2]] == [32, 32]
    # replaying the first move on its own (now taken) square is illegal
    assert not othello.is_member(np.concatenate([game[:1], game[:1], game[2:]]))


@pytest.mark.parametrize("moves", ["d3 c3 b3 d2 e1 d6 d7 e3 f4", "d3 c3 b3 e3 f3 f4 f5 b2 a1"])
def test_nine_move_games_end_with_pad(othello, moves):
    """Shortest possible games (found by a breadth-first search at depth 9): after the ninth
    move neither side can move, so the only legal next token is PAD."""
    game = othello.encode(moves)
    padded = np.concatenate([game, [PAD, PAD]])
    assert othello.is_member(padded)
    sets = reference_replay(padded)
    assert sets[8:] == [frozenset({PAD})] * 3 and PAD not in sets[7]
    masks = othello.legal_next(padded)[0]
    assert [frozenset(np.flatnonzero(m).tolist()) for m in masks] == sets
    assert not othello.is_member(np.concatenate([game, othello.encode("a8")]))
