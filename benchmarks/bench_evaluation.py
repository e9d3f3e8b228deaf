"""Exact per-length evaluation of a built model at v = 256, 64 inputs per length, all lengths:
the vectorized one-pass evaluation against a plain loop over inputs (one forward pass and one
metric call per input and length). Prints both times and their ratio."""
from __future__ import annotations

import time

import torch

from resharpen.constructions.set_complement import tight
from resharpen.experiments.set_complement.evaluate import per_position_metrics
from resharpen.experiments.set_complement.metrics import complement_metrics
from resharpen.experiments.tasks.set_complement import sample_inputs

VOCAB, PER_LENGTH = 256, 64


def vectorized(model) -> float:
    metrics, _ = per_position_metrics(model, VOCAB, VOCAB - 1, PER_LENGTH, seed=0)
    return float(metrics["invalid_mass"].mean())


@torch.no_grad()
def loop_over_inputs(model, lengths) -> float:
    total, count = 0.0, 0
    for length in lengths:
        tokens = sample_inputs(VOCAB, length, PER_LENGTH, seed=length)
        for row in tokens:
            m = complement_metrics(model(row[None])[:, -1], row[None], VOCAB)
            total += float(m["invalid_mass"][0])
            count += 1
    return total / count


def main() -> None:
    model = tight(VOCAB, lam=2.0 * VOCAB, beta=1.0).model
    start = time.perf_counter()
    vectorized(model)
    fast = time.perf_counter() - start
    # The loop is timed on every 8th length and scaled up, to keep the benchmark short.
    sampled = list(range(1, VOCAB, 32))
    start = time.perf_counter()
    loop_over_inputs(model, sampled)
    slow = (time.perf_counter() - start) * (VOCAB - 1) / len(sampled)
    print(f"exact evaluation, v = {VOCAB}, {PER_LENGTH} inputs x {VOCAB - 1} lengths, float64")
    print(f"  vectorized (one pass, all lengths): {fast:8.3f} s")
    print(f"  loop over inputs (extrapolated from {len(sampled)} lengths): {slow:8.3f} s")
    print(f"  ratio loop / vectorized: {slow / fast:8.1f}x")


if __name__ == "__main__":
    main()
