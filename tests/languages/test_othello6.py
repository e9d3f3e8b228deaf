"""6 x 6 Othello (task ``othello6``; ``Othello(size)``): the generic board against rules and
counts that do not come from experiments/tasks/othello.py.

Expected values and where they come from:

- **perft of 6 x 6 from the initial position.** No published table was found (searched: 6x6
  Othello / reversi perft, OEIS, engine repositories and issue threads; only 8 x 8 tables, e.g.
  https://aartbik.blogspot.com/2009/02/perft-for-reversi.html). The expected counts are those of
  :func:`_brute_perft` below, a plain-Python move generator written for this test, sharing no
  code with the package (its own board, directions and pass rule); ``PERFT6`` holds its output,
  which ``test_brute_force_gives_the_recorded_counts`` recomputes (depths 7, 8: slow marker).
- **A published perfect game.** J. Feinstein's 1993 solution of 6 x 6 Othello from the standard
  (diagonal) start, https://www.maths.nottingham.ac.uk/plp/pmzjff/Othello/6x6sol.html: the game
  diagram numbers the 32 moves on the squares b2..g7 of an 8 x 8 board; perfect play ends with
  White winning 20-16 (https://www.maths.nottingham.ac.uk/plp/pmzjff/Othello/Amenor.html:
  "White wins 20-16"). The record below is read off that diagram (move k on the square marked
  k), in its 8 x 8 names; the test shifts it one file and one rank down to 6 x 6.
- **4 x 4: the number of complete games.** 15,015 per first move, "Number of distinct NxN
  Reversi games", http://reversi-nxn.blogspot.com/2008/03/ (board size 4: 15,015; the count
  starts after the first move, which the four symmetries of the start make all alike), so
  4 x 15,015 = 60,060 complete games in all.
"""
from __future__ import annotations

import numpy as np
import pytest

from resharpen.experiments.languages.claims import PERFT
from resharpen.experiments.tasks.othello import (CENTER, INITIAL_BLACK, INITIAL_WHITE,
                                                     MAX_MOVES, NAMES, PAD, SQUARES, SIZES,
                                                     TOKEN_OF_SQUARE, Othello, flips, geometry,
                                                     legal_moves, perft, reference_flips,
                                                     reference_moves, reference_perft,
                                                     reference_replay)
from resharpen.experiments.tasks.registry import TASKS, get_task

PERFT6 = (4, 12, 56, 244, 1364, 7604, 47740, 308716)  # _brute_perft(1..8); see the docstring

# Feinstein's perfect game, read off the diagram of 6x6sol.html (8 x 8 names, board b2..g7)
FEINSTEIN = ("d3 c5 d6 e3 f5 f4 e2 d2 c2 e6 e7 g5 c4 c3 g4 g3 f3 c7 b5 d7 b7 b3 c6 b6 f7 f6 "
             "b4 b2 g6 g7 f2 g2")


# ------------------------------------------------------------------ an independent brute force
def _brute_start(n: int) -> dict:
    """{(column, row): colour} with 'B' / 'W', columns and rows 0..n-1 from a1; White on the
    centre's a1-h8 diagonal squares (d4 e5 on 8 x 8), Black on the other two."""
    m = n // 2
    return {(m - 1, m - 1): "W", (m, m): "W", (m, m - 1): "B", (m - 1, m): "B"}


def _brute_captures(discs: dict, n: int, colour: str, col: int, row: int) -> list:
    if (col, row) in discs:
        return []
    other = "W" if colour == "B" else "B"
    taken = []
    for dc in (-1, 0, 1):
        for dr in (-1, 0, 1):
            if dc == dr == 0:
                continue
            c, r, line = col + dc, row + dr, []
            while 0 <= c < n and 0 <= r < n and discs.get((c, r)) == other:
                line.append((c, r))
                c, r = c + dc, r + dr
            if line and 0 <= c < n and 0 <= r < n and discs.get((c, r)) == colour:
                taken += line
    return taken


def _brute_moves(discs: dict, n: int, colour: str) -> list:
    return [(c, r) for r in range(n) for c in range(n) if _brute_captures(discs, n, colour, c, r)]


def _brute_perft(depth: int, n: int, discs: dict | None = None, colour: str = "B") -> int:
    """Leaves at ``depth`` plies; a pass is a ply, a finished game has no children."""
    discs = _brute_start(n) if discs is None else discs
    if depth == 0:
        return 1
    other = "W" if colour == "B" else "B"
    moves = _brute_moves(discs, n, colour)
    if not moves:
        return _brute_perft(depth - 1, n, discs, other) if _brute_moves(discs, n, other) else 0
    total = 0
    for c, r in moves:
        child = dict(discs)
        for square in _brute_captures(discs, n, colour, c, r) + [(c, r)]:
            child[square] = colour
        total += _brute_perft(depth - 1, n, child, other)
    return total


# ------------------------------------------------------------------ the board and the task
@pytest.fixture(scope="module")
def othello6():
    return get_task("othello6")


@pytest.fixture(scope="module")
def games6(othello6):
    return othello6.sample(2000, 32, seed=3)


def test_registered_as_a_game():
    assert TASKS["othello6"] == "game" and TASKS["othello"] == "game"
    assert isinstance(get_task("othello6"), Othello)


def test_vocabulary(othello6):
    assert othello6.name == "othello6" and othello6.max_length == 32
    assert len(othello6.vocab) == 33 and othello6.vocab[PAD] == "PAD"
    assert othello6.vocab[1] == "a1" and othello6.vocab[32] == "f6"
    assert {"c3", "d3", "c4", "d4"}.isdisjoint(othello6.vocab)
    assert not any(name[0] in "gh" or name[1] in "78" for name in othello6.vocab[1:])


def test_opening_moves_are_the_8x8_ones_shifted(othello6):
    """8 x 8 opens with d3 c4 f5 e6; the same shape one file and one rank down is c2 b3 e4 d5."""
    first = {othello6.vocab[i] for i in np.flatnonzero(othello6.initial_legal())}
    assert first == {"c2", "b3", "e4", "d5"}
    after = othello6.legal_next(othello6.encode("e4"))[0, 0]  # 8 x 8: f5 -> d6 f4 f6
    assert {othello6.vocab[i] for i in np.flatnonzero(after)} == {"c5", "e3", "e5"}


def test_8x8_geometry_is_the_module_board():
    geo = geometry(8)
    assert geo.board == 2**64 - 1 and geo.max_moves == MAX_MOVES == 60
    assert np.array_equal(geo.squares, SQUARES) and geo.names == NAMES
    assert np.array_equal(geo.token_of_square, TOKEN_OF_SQUARE)
    assert (geo.initial_black, geo.initial_white) == (INITIAL_BLACK, INITIAL_WHITE)
    assert sorted(set(range(64)) - set(SQUARES.tolist())) == list(CENTER)
    assert get_task("othello").name == "othello" and get_task("othello").size == 61


@pytest.mark.parametrize("depth", range(1, 9))
def test_perft_bitboards_6x6(depth):
    assert perft(depth, 6) == PERFT6[depth - 1]


@pytest.mark.parametrize("depth", range(1, 6))
def test_perft_reference_rules_6x6(depth):
    assert reference_perft(depth, size=6) == PERFT6[depth - 1]


def test_the_smaller_board_changes_the_count_from_ply_5():
    """perft(1..4) of 6 x 6 is the published 8 x 8 one; from ply 5 the smaller board has fewer
    leaves."""
    assert PERFT6[:4] == PERFT[:4]
    assert all(small < big for small, big in zip(PERFT6[4:], PERFT[4:8]))


@pytest.mark.parametrize("depths", [range(1, 7), pytest.param(range(7, 9), marks=pytest.mark.slow)])
def test_brute_force_gives_the_recorded_counts(depths):
    assert [_brute_perft(d, 6) for d in depths] == [PERFT6[d - 1] for d in depths]
    if depths[0] == 1:  # the brute force is right where a published table exists
        assert [_brute_perft(d, 8) for d in range(1, 5)] == list(PERFT[:4])


def test_published_perfect_game_is_legal_and_white_wins_20_16(othello6):
    shifted = " ".join(f"{'abcdefgh'[ord(m[0]) - ord('a') - 1]}{int(m[1]) - 1}"
                       for m in FEINSTEIN.split())
    game = othello6.encode(shifted)
    assert len(game) == 32 and othello6.is_member(game)
    assert othello6.legal_next(game).any(axis=2).all()
    states = othello6.start(1, 32)
    passes = 0
    for token in game:
        new = othello6.step(states, np.array([token]))
        passes += int(new[0, 3] == states[0, 3]) if new[0, 2] else 0
        states = new
    assert int(states[0, 2]) == 0  # the board is full: game over, only PAD follows
    black_to_move = bool(states[0, 3])
    mover, other = (bin(int(x)).count("1") for x in states[0, :2])
    black, white = (mover, other) if black_to_move else (other, mover)
    assert (black, white) == (16, 20)
    assert passes == 1  # 32 numbered moves in the diagram, one side passes once
    sets = reference_replay(np.concatenate([game, [PAD]]), 6)
    assert sets is not None and sets[-1] == frozenset({PAD}) and PAD not in sets[-3]


def test_4x4_complete_games_match_the_published_count():
    task = Othello(4)
    states = task.start(1, task.max_length)
    first = np.flatnonzero(task.initial_legal())
    per_first = []
    for token in first:
        frontier, finished = task.step(states, np.array([token])), 0
        while len(frontier):
            legal = task.legal(frontier)
            over = legal[:, PAD]
            finished += int(over.sum())
            frontier, legal = frontier[~over], legal[~over]
            rows, tokens = np.nonzero(legal)
            frontier = task.step(frontier[rows], tokens) if len(rows) else frontier[:0]
        per_first.append(finished)
    assert len(first) == 4 and per_first == [15_015] * 4


# ------------------------------------------------------------------ rules against the reference
def _to_board6(me: int, opp: int) -> list[int]:
    bits = [sq for sq in range(64) if sq % 8 < 6 and sq // 8 < 6]
    return [1 if me >> b & 1 else 2 if opp >> b & 1 else 0 for b in bits]


def test_bitboard_moves_and_flips_match_reference_on_random_6x6_boards():
    rng = np.random.default_rng(1)
    geo = geometry(6)
    count = 300
    cells = rng.integers(0, 3, size=(count, 36))
    bits = np.array([sq for sq in range(64) if sq % 8 < 6 and sq // 8 < 6], dtype=np.uint64)
    weights = np.uint64(1) << bits
    me = ((cells == 1) * weights).sum(axis=1, dtype=np.uint64)
    opp = ((cells == 2) * weights).sum(axis=1, dtype=np.uint64)
    moves = legal_moves(me, opp, geo)
    assert not (moves & ~np.uint64(geo.board)).any()  # never a square off the 6 x 6 board
    checked = 0
    for b in range(count):
        board = _to_board6(int(me[b]), int(opp[b]))
        assert board == cells[b].tolist()
        expected = reference_moves(board, 1)
        got = [i for i, bit in enumerate(bits.tolist()) if int(moves[b]) >> bit & 1]
        assert got == expected, b
        for square in expected:
            move = np.array([1 << int(bits[square])], dtype=np.uint64)
            f = int(flips(me[b:b + 1], opp[b:b + 1], move, geo)[0])
            assert sorted(i for i, bit in enumerate(bits.tolist()) if f >> bit & 1) == \
                sorted(reference_flips(board, 1, square))
            checked += 1
    assert checked > 300


def test_generator_and_legal_sets_match_reference(othello6, games6):
    assert games6.shape == (2000, 32)
    assert np.array_equal(othello6.sample(2000, 32, seed=3), games6)
    pad = games6 == PAD
    assert (pad[:, 1:] >= pad[:, :-1]).all() and pad[:, -1].any() and not pad[:, -1].all()
    masks = othello6.legal_next(games6[:150])
    for row in range(150):
        sets = reference_replay(games6[row], 6)
        assert sets is not None
        assert [frozenset(np.flatnonzero(m).tolist()) for m in masks[row]] == sets, row
    targets = othello6.targets(games6[:50])
    assert np.allclose(targets.sum(axis=2), 1.0, rtol=0, atol=1e-15)


def test_illegal_moves_and_errors(othello6, games6):
    game = games6[0].copy()
    assert othello6.is_member(game)
    bad = game.copy()
    bad[3] = bad[1]
    assert not othello6.is_member(bad) and not othello6.legal_next(bad)[0, 3:].any()
    with pytest.raises(ValueError, match=r"length must be in \[1, 32\] for task 'othello6'"):
        othello6.sample(2, 33)
    with pytest.raises(ValueError, match=r"token ids of task 'othello6' must lie in \[0, 32\]"):
        othello6.legal_next([[33]])
    with pytest.raises(ValueError, match="board size must be one of 4, 6, 8"):
        Othello(5)
    with pytest.raises(ValueError, match="board size must be one of"):
        perft(3, size=10)
    assert SIZES == (4, 6, 8)


# ------------------------------------------------------------------ the study's config
@pytest.mark.parametrize("profile", ["quick", "full"])
def test_study_config_validates(profile):
    """experiments/configs/languages/othello6.toml: soft targets, rotary positions, ID 1..20 of
    at most 32 moves; in the full profile the stopping rule at ID illegal mass 0.05, 8 seeds."""
    from resharpen.experiments.training.next_token_config import uniform_id_invalid_mass
    from resharpen.experiments.languages.grid import GRID_DIR, load_grid

    planned = load_grid(GRID_DIR / "othello6.toml", profile)
    configs = planned["configs"]
    assert {c["model"]["norm"] for c in configs} == {"pre", "post", "attn_out"}
    for c in configs:
        assert c["task"]["name"] == "othello6" and c["train"]["target"] == "soft"
        assert c["model"]["positional"] == "rope"
        assert (c["task"]["train_len"], c["task"]["eval_len"]) == (20, 32)
    seeds = {c["train"]["seed"] for c in configs}
    if profile == "full":
        assert seeds == set(range(8)) and len(configs) == 24
        assert {c["fit"]["until_id_invalid_mass"] for c in configs} == {0.05}
        uniform = uniform_id_invalid_mass(get_task("othello6"), 20)
        assert 0.05 < 0.1 * uniform  # the fit is below a tenth of chance (about 0.81)
    else:
        assert seeds == {0} and len(configs) == 3
