"""Othello: exact rules on numpy bitboards, a batched random-legal-move game generator, perft,
and a plain square-by-square reference implementation used as the membership oracle; on the
8 x 8 board (task ``othello``) and on the smaller n x n boards, n in {4, 6} (``othello6``: the
CPU-sized study).

Board. Bit i of a 64-bit word is the square on file i % 8 (a..h) and rank i // 8 + 1, so
a1 = 0, h1 = 7, a8 = 56, h8 = 63. The game starts with white on d4 and e5, black on d5 and e4,
and black to move. An n x n board (n even, 4 <= n <= 8) is the corner of that word with file
< n and rank < n (:class:`Geometry`): the same bits, the same shifts, each direction's mask
intersected with the board's squares; its start is the 2 x 2 centre as on 8 x 8 (files and
ranks n/2 - 1, n/2: white on the two squares of the a1-h8 diagonal, black on the others), so
6 x 6 starts with white on c3 and d4, black on d3 and c4. n = 8 is the board above, bit for bit.

Rules. A move puts a disc of the player to move on an empty square such that, in at least one
of the eight directions, the adjacent squares hold one or more opponent discs followed by a
disc of the player; every such line of opponent discs is flipped. A player with no legal move
passes and the opponent moves again; when neither player has a legal move (at the latest when
the 64 squares are full, after 60 moves) the game is over.

Tokens (as in OthelloGPT): 61 tokens, PAD = 0, then the 60 squares other than d4 e4 d5 e5 in
increasing bit order, "a1" = 1, ..., "h8" = 60 (n x n: n^2 - 3 tokens, PAD and the n^2 - 4
squares outside the centre, "a1" = 1, ..., e.g. "f6" = 32 on 6 x 6). A game is the sequence of
its moves; passes are implicit and take no token.

Legal-next set after a prefix of moves: the legal moves of the player to move, where the player
to move is found by applying the implicit passes (if the player whose turn it would be has no
legal move, the set is the other player's legal moves). Once the game is over the set is
{PAD}, and after PAD it is {PAD} again: a sample of length n is a game cut after n moves, or the
whole game followed by PAD up to length n. The sampler draws every move uniformly from this set
(as in Li et al.'s synthetic data set), so the exact target is uniform over it at every position,
PAD included; a model trained OthelloGPT-style with PAD ignored can drop the PAD positions.

Perft counts the leaf nodes of the game tree to a given depth in plies, a pass being a ply
(the position with the other player to move is the one child); a finished game has no children.
From the initial position perft(1..8) = 4, 12, 56, 244, 1396, 8200, 55092, 390216 (8 x 8,
published); on 6 x 6 the first four are the same (the smaller board does not change the count
before ply 5) and the rest are smaller (tests/languages/test_othello6.py checks them against a brute force written
apart from this module: no published 6 x 6 perft table was found).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from resharpen.experiments.tasks.base import Task, check_int, make_rng, uniform_choice

PAD = 0
CENTER = (27, 28, 35, 36)  # d4 e4 d5 e5
SQUARES = np.array([sq for sq in range(64) if sq not in CENTER], dtype=np.int64)  # token - 1
TOKEN_OF_SQUARE = np.zeros(64, dtype=np.int64)
TOKEN_OF_SQUARE[SQUARES] = np.arange(1, 61)
NAMES = ("PAD",) + tuple(f"{'abcdefgh'[sq % 8]}{sq // 8 + 1}" for sq in SQUARES)
INITIAL_BLACK = (1 << 28) | (1 << 35)  # e4, d5
INITIAL_WHITE = (1 << 27) | (1 << 36)  # d4, e5
MAX_MOVES = 60
SIZES = (4, 6, 8)  # the board sizes: even, with a 2 x 2 centre and room around it
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


@dataclass(frozen=True, eq=False)
class Geometry:
    """An n x n board in the corner of the 64-bit word (module docstring): its squares (bit
    8 * rank + file, file and rank < n), tokens, start and the shift masks.

    A shift moves every disc one step; a step that leaves the n x n board lands on a bit with
    file or rank >= n (or wraps to file a / h of the next rank, or leaves the word), which the
    direction's mask, the 8 x 8 wrap mask intersected with the board's squares, drops. So on
    every n the shifted word holds exactly the on-board neighbours, and the 8 x 8 masks are the
    module's own (the board is every bit)."""

    size: int
    board: int  # bitboard of the n^2 squares
    squares: np.ndarray  # token - 1 -> bit, the squares outside the centre in increasing order
    token_of_square: np.ndarray  # bit -> token (0 for the centre and the bits off the board)
    names: tuple[str, ...]
    initial_black: int
    initial_white: int
    max_moves: int  # n^2 - 4: a game fills the board at the latest after that many moves
    up_mask: np.ndarray  # (4, 1) masks of the shifts E N NE NW
    down_mask: np.ndarray  # (4, 1) masks of the shifts W S SE SW


@lru_cache(maxsize=None)
def geometry(size: int = 8) -> Geometry:
    """The :class:`Geometry` of the ``size`` x ``size`` board (``size`` in :data:`SIZES`)."""
    if size not in SIZES:
        raise ValueError(f"Othello board size must be one of {', '.join(map(str, SIZES))}, "
                         f"got {size!r}")
    if size == 8:
        board, center = 2**64 - 1, CENTER
    else:
        board = sum(1 << (8 * rank + file) for rank in range(size) for file in range(size))
        lo, hi = size // 2 - 1, size // 2
        center = tuple(sorted(8 * r + f for r in (lo, hi) for f in (lo, hi)))
    squares = np.array([sq for sq in range(64) if board >> sq & 1 and sq not in center],
                       dtype=np.int64)
    token_of_square = np.zeros(64, dtype=np.int64)
    token_of_square[squares] = np.arange(1, len(squares) + 1)
    names = ("PAD",) + tuple(f"{'abcdefgh'[sq % 8]}{sq // 8 + 1}" for sq in squares)
    lo, hi = size // 2 - 1, size // 2
    black = (1 << (8 * lo + hi)) | (1 << (8 * hi + lo))  # e4 d5 on 8 x 8
    white = (1 << (8 * lo + lo)) | (1 << (8 * hi + hi))  # d4 e5 on 8 x 8
    on_board = _U(board)
    return Geometry(size, board, squares, token_of_square, names, black, white,
                    size * size - 4, _UP_MASK & on_board, _DOWN_MASK & on_board)


def _shift(x: np.ndarray, geo: Geometry | None = None) -> np.ndarray:
    """x of shape (8, n): row j shifted one step in direction j (E N NE NW W S SE SW)."""
    up, down = (_UP_MASK, _DOWN_MASK) if geo is None else (geo.up_mask, geo.down_mask)
    out = np.empty_like(x)
    out[:4] = (x[:4] << _UP) & up
    out[4:] = (x[4:] >> _DOWN) & down
    return out


def legal_moves(me: np.ndarray, opp: np.ndarray, geo: Geometry | None = None) -> np.ndarray:
    """Bitboard (uint64 per board) of the legal moves of the player owning ``me`` (on the
    board ``geo``, default 8 x 8)."""
    me8 = np.broadcast_to(me, (8,) + me.shape)
    opp8 = np.broadcast_to(opp, (8,) + opp.shape)
    run = _shift(me8, geo) & opp8
    for _ in range(5):  # a line holds at most six opponent discs
        run |= _shift(run, geo) & opp8
    return np.bitwise_or.reduce(_shift(run, geo), axis=0) & ~(me | opp)


def flips(me: np.ndarray, opp: np.ndarray, move: np.ndarray,
          geo: Geometry | None = None) -> np.ndarray:
    """Bitboard of the opponent discs flipped by playing the single-bit ``move``."""
    me8 = np.broadcast_to(me, (8,) + me.shape)
    opp8 = np.broadcast_to(opp, (8,) + opp.shape)
    run = _shift(np.broadcast_to(move, (8,) + move.shape), geo) & opp8
    for _ in range(5):
        run |= _shift(run, geo) & opp8
    closed = (_shift(run, geo) & me8) != 0
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


def _move_mask(moves: np.ndarray, geo: Geometry | None = None) -> np.ndarray:
    """Boolean (n, V) token mask of the bitboards ``moves``; PAD is legal where moves == 0."""
    squares = SQUARES if geo is None else geo.squares
    bits = np.unpackbits(moves.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")
    mask = np.empty((len(moves), len(squares) + 1), dtype=bool)
    mask[:, 1:] = bits[:, squares]
    mask[:, 0] = moves == 0
    return mask


def _to_play(me, opp, geo: Geometry | None = None):
    """After the side owning ``me`` has become the side to move, apply an implicit pass if it
    has no move. Returns (me, opp, moves, passed) with moves == 0 iff the game is over."""
    moves = legal_moves(me, opp, geo)
    passed = moves == 0
    if passed.any():
        idx = np.flatnonzero(passed)
        me, opp = me.copy(), opp.copy()
        me[idx], opp[idx] = opp[idx], me[idx].copy()
        moves[idx] = legal_moves(me[idx], opp[idx], geo)
    return me, opp, moves, passed


class Othello(Task):
    """Othello games as token sequences on the ``size`` x ``size`` board (8: the task
    ``othello``; 6: ``othello6``). State row (uint64): [discs of the player to move, discs of
    the other player, legal moves of the player to move (0: game over), black to move]."""

    def __init__(self, size: int = 8):
        self.geo = geometry(size)
        self.board_size = size
        self.name = "othello" if size == 8 else f"othello{size}"
        self.vocab = self.geo.names
        self.eos = None
        self.pad = PAD
        self.max_length = self.geo.max_moves
        self._geo = None if size == 8 else self.geo  # 8 x 8 runs on the module's own masks

    # ------------------------------------------------------------------ automaton
    def start(self, count, capacity):
        states = np.empty((count, 4), dtype=np.uint64)
        states[:, 0], states[:, 1] = self.geo.initial_black, self.geo.initial_white
        states[:, 2] = legal_moves(states[:1, 0], states[:1, 1], self._geo)[0]
        states[:, 3] = 1
        return states

    def legal(self, states):
        return _move_mask(states[:, 2], self._geo)

    def advance(self, states, tokens):
        new = states.copy()
        play = np.flatnonzero((tokens != PAD) & (states[:, 2] != 0))
        if len(play) == 0:
            return new
        me, opp = states[play, 0], states[play, 1]
        move = np.left_shift(_U(1), self.geo.squares[tokens[play] - 1].astype(np.uint64))
        flipped = flips(me, opp, move, self._geo)
        mover = me | move | flipped
        other = opp & ~flipped
        nxt, prev, moves, passed = _to_play(other, mover, self._geo)  # the opponent moves next
        new[play, 0], new[play, 1], new[play, 2] = nxt, prev, moves
        new[play, 3] = np.where(passed, states[play, 3], 1 - states[play, 3])
        return new

    # ------------------------------------------------------------------ generator
    def sample(self, count, length=None, seed=0, progress: bool | None = None):
        """``count`` random games cut at ``length`` moves (default: the longest game, 60 on
        8 x 8; PAD after a game ends), int64 (count, length). Every move is uniform among the
        legal moves. Generated in batches of CHUNK games with a progress bar for large counts;
        the same seed gives the same games."""
        return self._generate(count, length, seed, progress, moves=False)[0]

    def sample_with_moves(self, count, length=None, seed=0, progress: bool | None = None):
        """``(games, moves)``: the games of ``sample(count, length, seed)`` and, as a uint64
        bitboard (bit 8 * rank + file), the legal-next set after every prefix: ``moves[b, i]``
        holds the squares of the legal moves of the side to move after ``games[b, :i + 1]``
        (passes applied), 0 once the game is over (the set {PAD}); the same sets as
        ``legal_next(games)`` without replaying the games."""
        return self._generate(count, length, seed, progress, moves=True)

    def _generate(self, count, length, seed, progress, moves: bool):
        count = check_int("count", count, 1)
        length = self.check_length(self.max_length if length is None else length)
        rng = make_rng(seed)
        out = np.empty((count, length), dtype=np.int64)
        sets = np.zeros((count, length), dtype=np.uint64) if moves else None
        starts = range(0, count, CHUNK)
        if progress is None:
            progress = count > 4 * CHUNK
        if progress:
            from resharpen.experiments.common.progress import track
            starts = track(starts, desc=f"{self.name} games", unit="batch")
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
                if moves:
                    sets[lo:hi, i] = states[:, 2]
        return out, sets

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
        return reference_replay(string, self.board_size) is not None


def perft(depth: int, size: int = 8) -> int:
    """Leaf count of the game tree from the initial position of the ``size`` x ``size`` board,
    ``depth`` plies, a pass being a ply; breadth-first over all positions at once on
    bitboards."""
    depth = check_int("perft depth", depth, 0, 9, " (the frontier is held in memory)")
    board = geometry(size)
    geo = None if size == 8 else board
    me = np.array([board.initial_black], dtype=np.uint64)
    opp = np.array([board.initial_white], dtype=np.uint64)
    for _ in range(depth):
        moves = legal_moves(me, opp, geo)
        stuck = np.flatnonzero(moves == 0)
        can_pass = stuck[legal_moves(opp[stuck], me[stuck], geo) != 0]
        counts = _popcount(moves)
        parent = np.repeat(np.arange(len(me)), counts)
        rank = np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts)
        rest = moves[parent]
        for j in range(int(counts.max(initial=0))):  # drop the ``rank`` lowest set bits
            rest = np.where(rank > j, rest & (rest - _U(1)), rest)
        move = rest & (~rest + _U(1))  # lowest remaining bit
        flipped = flips(me[parent], opp[parent], move, geo)
        mover = me[parent] | move | flipped
        other = opp[parent] & ~flipped
        me, opp = (np.concatenate([other, opp[can_pass]]),
                   np.concatenate([mover, me[can_pass]]))
    return int(len(me))


# ---------------------------------------------------------------------- reference rules
# A plain list board of n * n entries (index n * (rank - 1) + file), its size read from its
# length; no bits, no masks, nothing shared with the bitboards above.
_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


def _side(board: list[int]) -> int:
    n = int(round(len(board) ** 0.5))
    if n * n != len(board):
        raise ValueError(f"a reference board has n * n squares, got {len(board)}")
    return n


def reference_initial(size: int = 8) -> list[int]:
    """A size * size board: 0 empty, 1 black, 2 white (index = size * (rank - 1) + file); the
    centre as on 8 x 8 (white on the squares of the a1-h8 diagonal)."""
    board = [0] * (size * size)
    lo, hi = size // 2 - 1, size // 2
    board[size * lo + lo] = board[size * hi + hi] = 2
    board[size * lo + hi] = board[size * hi + lo] = 1
    return board


def reference_squares(size: int = 8) -> list[int]:
    """Token - 1 -> square index of the reference board: the squares not in the starting
    centre, in increasing index order."""
    start = reference_initial(size)
    return [sq for sq in range(size * size) if not start[sq]]


def reference_flips(board: list[int], player: int, square: int) -> list[int]:
    """Squares flipped if ``player`` plays ``square`` (empty list: not a legal move)."""
    if board[square]:
        return []
    n = _side(board)
    other = 3 - player
    file, rank = square % n, square // n
    flipped = []
    for df, dr in _DIRECTIONS:
        line, f, r = [], file + df, rank + dr
        while 0 <= f < n and 0 <= r < n and board[n * r + f] == other:
            line.append(n * r + f)
            f, r = f + df, r + dr
        if line and 0 <= f < n and 0 <= r < n and board[n * r + f] == player:
            flipped.extend(line)
    return flipped


def reference_moves(board: list[int], player: int) -> list[int]:
    return [sq for sq in range(len(board)) if reference_flips(board, player, sq)]


def reference_play(board: list[int], player: int, square: int) -> list[int]:
    flipped = reference_flips(board, player, square)
    if not flipped:
        n = _side(board)
        raise ValueError(f"{'abcdefgh'[square % n]}{square // n + 1} is not a legal move")
    new = list(board)
    new[square] = player
    for sq in flipped:
        new[sq] = player
    return new


def reference_replay(tokens: Sequence[int], size: int = 8) -> list[frozenset] | None:
    """Replay a token sequence with the reference rules on the ``size`` x ``size`` board.
    Returns the legal-next token set after every prefix (as in ``Othello.legal_next``), or None
    if the sequence is not a valid game prefix followed by PADs."""
    board, player = reference_initial(size), 1
    squares = reference_squares(size)
    token_of = {sq: i + 1 for i, sq in enumerate(squares)}
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
            if not 1 <= token <= len(squares) or squares[token - 1] not in moves:
                return None
            board = reference_play(board, player, squares[token - 1])
            player = 3 - player
        nxt = reference_moves(board, player) or reference_moves(board, 3 - player)
        sets.append(frozenset(token_of[sq] for sq in nxt) or frozenset({PAD}))
    return sets


def reference_perft(depth: int, board: list[int] | None = None, player: int = 1,
                    size: int = 8) -> int:
    """Perft by plain recursion on the reference rules (slow; for cross-checks), from
    ``board`` (default: the start of the ``size`` x ``size`` board)."""
    board = reference_initial(size) if board is None else board
    if depth == 0:
        return 1
    moves = reference_moves(board, player)
    if not moves:
        if reference_moves(board, 3 - player):
            return reference_perft(depth - 1, board, 3 - player)
        return 0
    return sum(reference_perft(depth - 1, reference_play(board, player, sq), 3 - player)
               for sq in moves)
