"""Othello hot paths: the batched random-game generator (target: 100,000 games in under 60 s on
2 cores), legal-move generation on bitboards against the square-by-square reference, exact
legal-next replay, and perft.

    .venv/bin/python benchmarks/bench_othello.py [--games 100000] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from resharpen.experiments.tasks.registry import get_task
from resharpen.experiments.tasks.othello import (legal_moves, perft, reference_moves,  # noqa: E402
                                       reference_perft)

TARGET_SECONDS = 60.0


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games must be >= 1, got {args.games}")
    othello = get_task("othello")
    print(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")

    games, seconds = timed(othello.sample, args.games, 60, args.seed)
    rate = args.games / seconds
    print(f"generator      {args.games:>8d} games in {seconds:7.2f} s = {rate:9.0f} games/s; "
          f"100,000 games would take {1e5 / rate:6.1f} s, target {TARGET_SECONDS:.0f} s "
          f"(ratio {TARGET_SECONDS / (1e5 / rate):.2f}x)")
    moves_per_game = (games != 0).sum(axis=1).mean()
    print(f"               mean game length {moves_per_game:.2f} moves; "
          f"{(games[:, -1] == 0).mean():.2%} end before move 60")

    # legal-move generation: bitboards (batched) against the reference, on real positions
    sample = games[:200, :30]
    states = othello.start(len(sample), 30)
    boards = []
    for i in range(30):
        states = othello.step(states, sample[:, i])
        boards.append(states[:, :2].copy())
    boards = np.concatenate(boards)
    me, opp = boards[:, 0], boards[:, 1]
    _, bit_seconds = timed(legal_moves, me, opp)
    ref_boards = [[1 if int(m) >> s & 1 else 2 if int(o) >> s & 1 else 0 for s in range(64)]
                  for m, o in zip(me[:500], opp[:500])]
    _, ref_seconds = timed(lambda: [reference_moves(b, 1) for b in ref_boards])
    bit_rate, ref_rate = len(me) / bit_seconds, len(ref_boards) / ref_seconds
    print(f"legal moves    bitboards {bit_rate:11.0f} positions/s, reference {ref_rate:9.0f} "
          f"positions/s: ratio {bit_rate / ref_rate:.0f}x")

    chunk = games[:5000]
    _, replay_seconds = timed(othello.legal_next, chunk)
    print(f"legal_next     {len(chunk) * 60 / replay_seconds:11.0f} positions/s "
          f"(exact target sets of {len(chunk)} games)")

    for depth in (6, 7, 8):
        count, seconds = timed(perft, depth)
        print(f"perft({depth})       {count:>8d} leaves in {seconds:6.3f} s (bitboards, breadth-first)")
    count, ref_seconds = timed(reference_perft, 5)
    _, bit_seconds = timed(perft, 5)
    print(f"perft(5)       {count:>8d}: reference {ref_seconds:.3f} s, bitboards {bit_seconds:.4f} s "
          f"(ratio {ref_seconds / bit_seconds:.0f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
