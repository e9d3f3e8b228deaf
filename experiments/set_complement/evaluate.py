"""Exact per-length evaluation of a causal model on the Set Complement Task.

One forward pass scores every length: ``per_length`` random permutations of V are truncated to
length L = max(lengths) <= v-1, and the logits at position s-1 are the model's prediction for
the input made of the first s tokens (the model is causal). When the inputs' float64 activations
exceed :data:`resharpen.experiments.common.limits.EVAL_CHUNK_BYTES` the pass runs in chunks of
inputs (each row's numbers are the same either way, to rounding), so memory stays bounded at
any v; below that size (every training run and claim today) the pass is the single one it was. Every prefix of a uniformly random
permutation is a uniformly random ordered s-subset, so each length is sampled exactly as
``sample_inputs`` would sample it.
"""
from __future__ import annotations

import copy
from typing import Sequence

import torch

from resharpen.experiments.common.limits import (evaluation_bytes_per_input, evaluation_chunk_inputs,
                                               require_large, sample_inputs_bytes)
from resharpen.experiments.set_complement.metrics import METRICS, complement_metrics
from resharpen.experiments.tasks.set_complement import check_length, check_vocab, sample_inputs


@torch.no_grad()
def per_position_metrics(model: torch.nn.Module, vocab: int, max_length: int, per_length: int = 64,
                         seed: int = 0, dtype: torch.dtype = torch.float64) -> tuple[dict, torch.Tensor]:
    """Metrics of every input and every length 1..max_length: dict of (per_length, max_length).

    ValueError, before anything is allocated, when ``per_length`` is not a positive integer or
    its inputs and metrics do not fit the available memory (the inputs are held at once, the
    forward pass runs in chunks: :func:`resharpen.experiments.common.limits.require`)."""
    check_length(max_length, vocab)
    if isinstance(per_length, bool) or not isinstance(per_length, int) or per_length < 1:
        raise ValueError(f"per_length must be a positive integer, got {per_length!r}")
    per_input = bytes_per_input(model, vocab, max_length)
    require_large(sample_inputs_bytes(per_length, vocab, max_length)
                  + per_length * 8 * max_length * (len(METRICS) + 2)  # the metrics kept
                  + evaluation_chunk_inputs(per_input, per_length) * per_input,
                  f"evaluating {per_length} inputs per length at v = {vocab} "
                  f"(per_length = {per_length})")
    tokens = sample_inputs(vocab, max_length, per_length, seed)
    if dtype is not None and next(model.parameters()).dtype != dtype:
        model = copy.deepcopy(model).to(dtype)
    was_training = model.training
    model.eval()
    chunk = evaluation_chunk_inputs(per_input, per_length)
    try:
        parts = [complement_metrics(model(rows), rows, vocab) for rows in tokens.split(chunk)]
    finally:
        model.train(was_training)
    if len(parts) == 1:
        return parts[0], tokens
    return {name: torch.cat([part[name] for part in parts]) for name in parts[0]}, tokens


def bytes_per_input(model: torch.nn.Module, vocab: int, length: int) -> int:
    """Float64 memory of one input in :func:`per_position_metrics`
    (:func:`resharpen.experiments.common.limits.evaluation_bytes_per_input`, plus the attention
    pattern 8 S^2 of every layer and head); 0 for a model without a core ``cfg``."""
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(cfg, "d_model"):
        return 0
    heads = cfg.n_heads
    return (evaluation_bytes_per_input(vocab, cfg.d_model, heads * cfg.head_width,
                                       heads * cfg.value_width, length)
            + 8 * cfg.n_layers * heads * length * length)


def evaluate_lengths(model: torch.nn.Module, vocab: int, lengths: Sequence[int] | None = None,
                     per_length: int = 64, seed: int = 0,
                     dtype: torch.dtype = torch.float64) -> list[dict]:
    """One record per length s: the mean of every metric over ``per_length`` inputs, plus the
    worst case (max invalid mass, min margin). Lengths default to 1..v-1.

    Exact, against the known target: for an input t of s distinct tokens, p* is uniform on the
    v - s unseen tokens; the metrics (``metrics.METRICS``) of the model's p = softmax(f(t)) are
    the invalid mass sum_{x in t} p_x, TV and KL(p* || p), the cross-entropy, whether the top-1
    token is invalid, and the margins mean_{y valid} f_y - f_x of the seen tokens x: the
    smallest (``margin_min``), the query's x = t_s (``margin_query``) and the smallest and
    largest over the other seen tokens (``margin_nonquery_min``, ``_max``). The inputs are seeded prefixes of random orderings,
    evaluated in ``dtype`` (float64 by default)."""
    check_vocab(vocab)
    lengths = list(range(1, vocab)) if lengths is None else sorted(set(int(s) for s in lengths))
    for s in lengths:
        check_length(s, vocab)
    metrics, _ = per_position_metrics(model, vocab, max(lengths), per_length, seed, dtype)
    columns = torch.tensor([s - 1 for s in lengths])
    # per length, over the inputs: each metric's mean over its non-NaN values (NaN if none),
    # the worst invalid mass and margin; one vectorized reduction per metric
    means = {name: metrics[name][:, columns].nanmean(dim=0).tolist() for name in METRICS}
    worst_mass = metrics["invalid_mass"][:, columns].max(dim=0).values.tolist()
    worst_margin = metrics["margin_min"][:, columns].min(dim=0).values.tolist()
    return [{"length": s, **{name: means[name][j] for name in METRICS},
             "invalid_mass_max": worst_mass[j], "margin_min_worst": worst_margin[j]}
            for j, s in enumerate(lengths)]
