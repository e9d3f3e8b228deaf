"""Othello: exact rules on numpy bitboards, a batched random-legal-move game generator, perft,
and a plain square-by-square reference implementation used as the membership oracle.

Board. Bit i of a 64-bit word is the square on file i % 8 (a..h) and rank i // 8 + 1, so
a1 = 0, h1 = 7, a8 = 56, h8 = 63. The game starts with white on d4 and e5, black on d5 and e4,
and black to move.

Rules. A move puts a disc of the player to move on an empty square such that, in at least one
of the eight directions, the adjacent squares hold one or more opponent discs followed by a
disc of the player; every such line of opponent discs is flipped. A player with no legal move
passes and the opponent moves again; when neither player has a legal move (at the latest when
the 64 squares are full, after 60 moves) the game is over.

Tokens (as in OthelloGPT): 61 tokens, PAD = 0, then the 60 squares other than d4 e4 d5 e5 in
increasing bit order, "a1" = 1, ..., "h8" = 60. A game is the sequence of its moves; passes are
implicit and take no token.

Legal-next set after a prefix of moves: the legal moves of the player to move, where the player
to move is found by applying the implicit passes (if the player whose turn it would be has no
legal move, the set is the other player's legal moves). Once the game is over the set is
{PAD}, and after PAD it is {PAD} again: a sample of length n is a game cut after n moves, or the
whole game followed by PAD up to length n. The sampler draws every move uniformly from this set
(as in Li et al.'s synthetic data set), so the exact target is uniform over it at every position,
PAD included; a model trained OthelloGPT-style with PAD ignored can drop the PAD positions.

Perft counts the leaf nodes of the game tree to a given depth in plies, a pass being a ply
(the position with the other player to move is the one child); a finished game has no children.
From the initial position perft(1..8) = 4, 12, 56, 244, 1396, 8200, 55092, 390216.
"""
from __future__ import annotations

import sys
from typing import Sequence

import numpy as np

from resharpen.experiments.core.tasks import Task, check_int, make_rng, uniform_choice

PAD = 0
CENTER = (27, 28, 35, 36)  # d4 e4 d5 e5
SQUARES = np.array([sq for sq in range(64) if sq not in CENTER], dtype=np.int64)  # token - 1
TOKEN_OF_SQUARE = np.zeros(64, dtype=np.int64)
TOKEN_OF_SQUARE[SQUARES] = np.arange(1, 61)
NAMES = ("PAD",) + tuple(f"{'abcdefgh'[sq % 8]}{sq // 8 + 1}" for sq in SQUARES)
INITIAL_BLACK = (1 << 28) | (1 << 35)  # e4, d5
INITIAL_WHITE = (1 << 27) | (1 << 36)  # d4, e5
MAX_MOVES = 60
CHUNK = 8192  # games per generator batch; fixed so that a seed always gives the same games

_U = np.uint64
_NOT_A = _U(0xFEFEFEFEFEFEFEFE)  # every square but file a
_NOT_H = _U(0x7F7F7F7F7F7F7F7F)  # every square but file h
_ALL = _U(0xFFFFFFFFFFFFFFFF)
# four directions by left shift (E N NE NW), four by right shift (W S SE SW), each with the mask
# that drops the squares wrapped around the board's edge
_UP = np.array([1, 8, 9, 7], dtype=np.uint64)[:, None]  # E, N, NE, NW
_UP_MASK = np.array([_NOT_A, _ALL, _NOT_A, _NOT_H], dtype=np.uint64)[:, None]
_DOWN = np.array([1, 8, 7, 9], dtype=np.uint64)[:, None]  # W, S, SE, SW
_DOWN_MASK = np.array([_NOT_H, _ALL, _NOT_A, _NOT_H], dtype=np.uint64)[:, None]


def _shift(x: np.ndarray) -> np.ndarray:
    """x of shape (8, n): row j shifted one step in direction j (E N NE NW W S SE SW)."""
    out = np.empty_like(x)
    out[:4] = (x[:4] << _UP) & _UP_MASK
    out[4:] = (x[4:] >> _DOWN) & _DOWN_MASK
    return out


def legal_moves(me: np.ndarray, opp: np.ndarray) -> np.ndarray:
    """Bitboard (uint64 per board) of the legal moves of the player owning ``me``."""
    me8 = np.broadcast_to(me, (8,) + me.shape)
    opp8 = np.broadcast_to(opp, (8,) + opp.shape)
    run = _shift(me8) & opp8
    for _ in range(5):  # a line holds at most six opponent discs
        run |= _shift(run) & opp8
    return np.bitwise_or.reduce(_shift(run), axis=0) & ~(me | opp)


def flips(me: np.ndarray, opp: np.ndarray, move: np.ndarray) -> np.ndarray:
    """Bitboard of the opponent discs flipped by playing the single-bit ``move``."""
    me8 = np.broadcast_to(me, (8,) + me.shape)
    opp8 = np.broadcast_to(opp, (8,) + opp.shape)
    run = _shift(np.broadcast_to(move, (8,) + move.shape)) & opp8
    for _ in range(5):
        run |= _shift(run) & opp8
    closed = (_shift(run) & me8) != 0
    return np.bitwise_or.reduce(np.where(closed, run, _U(0)), axis=0)


def _popcount_bytes(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each uint64 (int64), byte by byte (numpy < 2.0)."""
    bytes_ = np.ascontiguousarray(x, dtype="<u8").view(np.uint8).reshape(-1, 8)
    return np.unpackbits(bytes_, axis=1).sum(axis=1, dtype=np.int64)


def _popcount(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each uint64 (int64)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x).astype(np.int64)
    return _popcount_bytes(x)


def _move_mask(moves: np.ndarray) -> np.ndarray:
    """Boolean (n, 61) token mask of the bitboards ``moves``; PAD is legal where moves == 0."""
    bits = np.unpackbits(moves.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")
    mask = np.empty((len(moves), 61), dtype=bool)
    mask[:, 1:] = bits[:, SQUARES]
    mask[:, 0] = moves == 0
    return mask


def _to_play(me, opp):
    """After the side owning ``me`` has become the side to move, apply an implicit pass if it
    has no move. Returns (me, opp, moves, passed) with moves == 0 iff the game is over."""
    moves = legal_moves(me, opp)
    passed = moves == 0
    if passed.any():
        idx = np.flatnonzero(passed)
        me, opp = me.copy(), opp.copy()
        me[idx], opp[idx] = opp[idx], me[idx].copy()
        moves[idx] = legal_moves(me[idx], opp[idx])
    return me, opp, moves, passed


class Othello(Task):
    """Othello games as token sequences. State row (uint64): [discs of the player to move,
    discs of the other player, legal moves of the player to move (0: game over), black to move]."""

    def __init__(self):
        self.name = "othello"
        self.vocab = NAMES
        self.eos = None
        self.pad = PAD
        self.max_length = MAX_MOVES

    # ------------------------------------------------------------------ automaton
    def start(self, count, capacity):
        states = np.empty((count, 4), dtype=np.uint64)
        states[:, 0], states[:, 1] = INITIAL_BLACK, INITIAL_WHITE
        states[:, 2] = legal_moves(states[:1, 0], states[:1, 1])[0]
        states[:, 3] = 1
        return states

    def legal(self, states):
        return _move_mask(states[:, 2])

    def advance(self, states, tokens):
        new = states.copy()
        play = np.flatnonzero((tokens != PAD) & (states[:, 2] != 0))
        if len(play) == 0:
            return new
        me, opp = states[play, 0], states[play, 1]
        move = np.left_shift(_U(1), SQUARES[tokens[play] - 1].astype(np.uint64))
        flipped = flips(me, opp, move)
        mover = me | move | flipped
        other = opp & ~flipped
        nxt, prev, moves, passed = _to_play(other, mover)  # the opponent moves next
        new[play, 0], new[play, 1], new[play, 2] = nxt, prev, moves
        new[play, 3] = np.where(passed, states[play, 3], 1 - states[play, 3])
        return new

    # ------------------------------------------------------------------ generator
    def sample(self, count, length=MAX_MOVES, seed=0, progress: bool | None = None):
        """``count`` random games cut at ``length`` moves (PAD after a game ends), int64
        (count, length). Every move is uniform among the legal moves. Generated in batches of
        CHUNK games with a progress bar for large counts; the same seed gives the same games."""
        count = check_int("count", count, 1)
        length = self.check_length(length)
        rng = make_rng(seed)
        out = np.empty((count, length), dtype=np.int64)
        starts = range(0, count, CHUNK)
        if progress is None:
            progress = count > 4 * CHUNK
        if progress:
            from tqdm import tqdm
            starts = tqdm(starts, desc="othello games", unit="batch", file=sys.stderr)
        for lo in starts:
            hi = min(lo + CHUNK, count)
            states = self.start(hi - lo, length)
            for i in range(length):
                tokens = uniform_choice(self.legal(states), rng)
                out[lo:hi, i] = tokens
                if (tokens == PAD).all():
                    out[lo:hi, i + 1:] = PAD
                    break
                states = self.advance(states, tokens)
        return out

    def sample_streams(self, count, length, seeds):
        """K samples at once (:meth:`Task.sample_streams`): exactly ``sample(count, length, g)``
        per generator g, the rules applied once to all K * count games; each stream stops
        drawing, as ``sample`` does, once all its games are over. More than CHUNK games per
        stream: one stream at a time."""
        count = check_int("count", count, 1)
        length = self.check_length(length)
        if count > CHUNK:
            return np.stack([self.sample(count, length, seed) for seed in seeds])
        rngs = [make_rng(seed) for seed in seeds]
        out = np.full((len(rngs), count, length), PAD, dtype=np.int64)
        states = self.start(len(rngs) * count, length).reshape(len(rngs), count, -1)
        live = np.arange(len(rngs))
        for i in range(length):
            legal = self.legal(states[live].reshape(len(live) * count, -1))
            tokens = np.stack([uniform_choice(legal[n * count:(n + 1) * count], rngs[k])
                               for n, k in enumerate(live)])
            out[live, :, i] = tokens
            playing = ~(tokens == PAD).all(axis=1)  # a stream whose games are all over stops
            live, tokens = live[playing], tokens[playing]
            if not len(live):
                break
            states[live] = self.advance(states[live].reshape(len(live) * count, -1),
                                        tokens.reshape(-1)).reshape(len(live), count, -1)
        return out

    # ------------------------------------------------------------------ oracle
    def is_member(self, string: Sequence[int]) -> bool:
        """True when ``string`` is a legal game prefix (reference rules, implicit passes),
        followed only by PAD, and PAD appears only once the game is over."""
        return reference_replay(string) is not None


def perft(depth: int) -> int:
    """Leaf count of the game tree from the initial position, ``depth`` plies, a pass being a
    ply; breadth-first over all positions at once on bitboards."""
    depth = check_int("perft depth", depth, 0, 9, " (the frontier is held in memory)")
    me = np.array([INITIAL_BLACK], dtype=np.uint64)
    opp = np.array([INITIAL_WHITE], dtype=np.uint64)
    for _ in range(depth):
        moves = legal_moves(me, opp)
        stuck = np.flatnonzero(moves == 0)
        can_pass = stuck[legal_moves(opp[stuck], me[stuck]) != 0]
        counts = _popcount(moves)
        parent = np.repeat(np.arange(len(me)), counts)
        rank = np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts)
        rest = moves[parent]
        for j in range(int(counts.max(initial=0))):  # drop the ``rank`` lowest set bits
            rest = np.where(rank > j, rest & (rest - _U(1)), rest)
        move = rest & (~rest + _U(1))  # lowest remaining bit
        flipped = flips(me[parent], opp[parent], move)
        mover = me[parent] | move | flipped
        other = opp[parent] & ~flipped
        me, opp = (np.concatenate([other, opp[can_pass]]),
                   np.concatenate([mover, me[can_pass]]))
    return int(len(me))


# ---------------------------------------------------------------------- reference rules
_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


def reference_initial() -> list[int]:
    """A 64-entry board: 0 empty, 1 black, 2 white (index = 8 * (rank - 1) + file)."""
    board = [0] * 64
    board[27] = board[36] = 2
    board[28] = board[35] = 1
    return board


def reference_flips(board: list[int], player: int, square: int) -> list[int]:
    """Squares flipped if ``player`` plays ``square`` (empty list: not a legal move)."""
    if board[square]:
        return []
    other = 3 - player
    file, rank = square % 8, square // 8
    flipped = []
    for df, dr in _DIRECTIONS:
        line, f, r = [], file + df, rank + dr
        while 0 <= f < 8 and 0 <= r < 8 and board[8 * r + f] == other:
            line.append(8 * r + f)
            f, r = f + df, r + dr
        if line and 0 <= f < 8 and 0 <= r < 8 and board[8 * r + f] == player:
            flipped.extend(line)
    return flipped


def reference_moves(board: list[int], player: int) -> list[int]:
    return [sq for sq in range(64) if reference_flips(board, player, sq)]


def reference_play(board: list[int], player: int, square: int) -> list[int]:
    flipped = reference_flips(board, player, square)
    if not flipped:
        raise ValueError(f"{NAMES[TOKEN_OF_SQUARE[square]]} is not a legal move")
    new = list(board)
    new[square] = player
    for sq in flipped:
        new[sq] = player
    return new


def reference_replay(tokens: Sequence[int]) -> list[frozenset] | None:
    """Replay a token sequence with the reference rules. Returns the legal-next token set after
    every prefix (as in ``Othello.legal_next``), or None if the sequence is not a valid game
    prefix followed by PADs."""
    board, player = reference_initial(), 1
    sets = []
    for token in tokens:
        moves = reference_moves(board, player)
        if not moves:
            player = 3 - player
            moves = reference_moves(board, player)
        token = int(token)
        if token == PAD:
            if moves:
                return None
        else:
            if not 1 <= token <= 60 or int(SQUARES[token - 1]) not in moves:
                return None
            board = reference_play(board, player, int(SQUARES[token - 1]))
            player = 3 - player
        nxt = reference_moves(board, player) or reference_moves(board, 3 - player)
        sets.append(frozenset(int(TOKEN_OF_SQUARE[sq]) for sq in nxt) or frozenset({PAD}))
    return sets


def reference_perft(depth: int, board: list[int] | None = None, player: int = 1) -> int:
    """Perft by plain recursion on the reference rules (slow; for cross-checks)."""
    board = reference_initial() if board is None else board
    if depth == 0:
        return 1
    moves = reference_moves(board, player)
    if not moves:
        if reference_moves(board, 3 - player):
            return reference_perft(depth - 1, board, 3 - player)
        return 0
    return sum(reference_perft(depth - 1, reference_play(board, player, sq), 3 - player)
               for sq in moves)
