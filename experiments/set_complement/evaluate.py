"""Exact per-length evaluation of a causal model on the Set Complement Task.

One forward pass scores every length: ``per_length`` random permutations of V are truncated to
length L = max(lengths) <= v-1, and the logits at position s-1 are the model's prediction for
the input made of the first s tokens (the model is causal). Every prefix of a uniformly random
permutation is a uniformly random ordered s-subset, so each length is sampled exactly as
``sample_inputs`` would sample it.
"""
from __future__ import annotations

import copy
from typing import Sequence

import torch

from resharpen.experiments.set_complement.metrics import METRICS, complement_metrics
from resharpen.experiments.core.set_complement_task import check_length, check_vocab, sample_inputs


@torch.no_grad()
def per_position_metrics(model: torch.nn.Module, vocab: int, max_length: int, per_length: int = 64,
                         seed: int = 0, dtype: torch.dtype = torch.float64) -> tuple[dict, torch.Tensor]:
    """Metrics of every input and every length 1..max_length: dict of (per_length, max_length)."""
    check_length(max_length, vocab)
    tokens = sample_inputs(vocab, max_length, per_length, seed)
    if dtype is not None and next(model.parameters()).dtype != dtype:
        model = copy.deepcopy(model).to(dtype)
    was_training = model.training
    model.eval()
    try:
        logits = model(tokens)
    finally:
        model.train(was_training)
    return complement_metrics(logits, tokens, vocab), tokens


def evaluate_lengths(model: torch.nn.Module, vocab: int, lengths: Sequence[int] | None = None,
                     per_length: int = 64, seed: int = 0,
                     dtype: torch.dtype = torch.float64) -> list[dict]:
    """One record per length s: the mean of every metric over ``per_length`` inputs, plus the
    worst case (max invalid mass, min margin). Lengths default to 1..v-1."""
    check_vocab(vocab)
    lengths = list(range(1, vocab)) if lengths is None else sorted(set(int(s) for s in lengths))
    for s in lengths:
        check_length(s, vocab)
    metrics, _ = per_position_metrics(model, vocab, max(lengths), per_length, seed, dtype)
    records = []
    for s in lengths:
        column = {name: metrics[name][:, s - 1] for name in METRICS}
        record = {"length": s}
        for name, values in column.items():
            finite = values[~values.isnan()]
            record[name] = float(finite.mean()) if finite.numel() else float("nan")
        record["invalid_mass_max"] = float(column["invalid_mass"].max())
        record["margin_min_worst"] = float(column["margin_min"].min())
        records.append(record)
    return records
