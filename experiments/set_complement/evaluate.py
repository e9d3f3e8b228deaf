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
from numbers import Integral
from typing import Iterable, Sequence

import numpy as np
import torch

from resharpen.experiments.common.limits import (evaluation_bytes_per_input, evaluation_chunk_inputs,
                                               require_large, sample_inputs_bytes)
from resharpen.experiments.set_complement.metrics import (METRICS, complement_metrics,
                                                         complement_metrics_at)
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


DENSE_LENGTHS = 64
"""Log-spaced length sets (:func:`log_lengths`) hold every length up to this one ..."""
SPREAD_LENGTHS = 64
"""... and about this many more, log-spaced up to v - 1."""


def log_lengths(vocab: int, dense: int = DENSE_LENGTHS, spread: int = SPREAD_LENGTHS
                ) -> list[int]:
    """The lengths a sparse evaluation covers: every s = 1..min(dense, v-1), then ``spread``
    points log-spaced from ``dense`` to v - 1 (rounded, duplicates dropped), v - 1 itself and
    floor(v/2) (where the attn_out margin beta g sqrt(d v / (s (v - s))) is smallest). At
    v = 10^4: 64 + 64 + 1 lengths, 129 in all; every length when v - 1 <= dense."""
    vocab = check_vocab(vocab)
    longest = vocab - 1
    chosen = set(range(1, min(dense, longest) + 1))
    if longest > dense:
        chosen.update(int(round(x)) for x in np.geomspace(dense, longest, spread + 1))
        chosen.update({longest, vocab // 2})
    return sorted(s for s in chosen if 1 <= s <= longest)


class _Read(Exception):
    """Raised by :func:`attention_input`'s stand-in sublayer to hand back what it was given."""

    def __init__(self, value: torch.Tensor):
        super().__init__("attention input read")
        self.value = value


def attention_input(block, x: torch.Tensor) -> torch.Tensor:
    """What the attention of ``block`` reads at every position of the residual ``x``: its
    residual rule applied to x up to the sublayer (x, N_in(x), N_in(x) / sqrt(l + 1), ...),
    read by a stand-in sublayer that stops the rule there; no other work is done."""
    from resharpen.experiments.model.transformer import Parts

    def read(h: torch.Tensor) -> torch.Tensor:
        raise _Read(h)

    try:
        block.rule(x, read, Parts(block.attn_norm_in, block._attn_norm_out,
                                  block._eigen_rate(block.attn_alpha)))
    except _Read as got:
        return got.value
    raise ValueError("the block's residual rule never calls its attention sublayer")


def sparse_supported(model: torch.nn.Module) -> bool:
    """Whether :func:`logits_at` can take the last-position path: a core Transformer of one
    layer, attention only (no MLP), without rotary positions or nGPT's sphere (whose
    normalized keys do not factor through the residual)."""
    cfg = getattr(model, "cfg", None)
    return (cfg is not None and getattr(cfg, "n_layers", 0) == 1 and cfg.mlp is None
            and not cfg.rope and not getattr(model, "sphere", True))


def logits_at(model: torch.nn.Module, tokens: torch.Tensor, positions: torch.Tensor
              ) -> torch.Tensor:
    """The logits (N, P, v) at the 0-based ``positions`` of ``tokens`` (N, S): by causality,
    column j is the model's prediction for the prefix of length positions[j] + 1.

    For a model :func:`sparse_supported` accepts, only those positions are computed, through
    the model's own dense weights and modules (no structure assumed). With h the attention's
    input at every position (:func:`attention_input`) and p a chosen position, each head gives
        scores_p = ((h_p W_Q) W_K^T) h^T / sqrt(d_head)    (causal: positions <= p),
        out_p    = ((softmax(scores_p) h) W_V) W_O,
    the same products as the full forward pass re-associated, so the (S x d) x (d x d_v)
    value projection of every position is never formed: O(P (S d + d d_h + d d_v + d v))
    multiply-adds instead of O(S (d d_h + d d_v + d v)). The block's residual rule and the
    final norm and unembedding then act on the P rows alone (they act row by row). Other
    models: the full forward pass, then those columns."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    if not sparse_supported(model):
        return model(tokens)[:, positions]
    from resharpen.experiments.model.transformer import Parts

    block = model.blocks[0]
    attn = block.attn
    x = model.residual(tokens)
    h = attention_input(block, x)
    causal = torch.arange(tokens.shape[1])[None, :] <= positions[:, None]  # (P, S)
    out = 0.0
    for head in range(attn.W_Q.shape[0]):
        q = h[:, positions] @ attn.W_Q[head]  # (N, P, d_head)
        scores = (q @ attn.W_K[head].T) @ h.transpose(1, 2) * attn.scale  # (N, P, S)
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        out = out + ((weights @ h) @ attn.W_V[head]) @ attn.W_O[head]
    if attn.out_multiplier != 1.0:
        out = out * attn.out_multiplier
    rows = x[:, positions]  # the residual at the chosen positions
    del h, x
    y = block.rule(rows, lambda _: out, Parts(block.attn_norm_in, block._attn_norm_out,
                                            block._eigen_rate(block.attn_alpha)))
    return model.final_norm(y) @ model.W_U


@torch.no_grad()
def position_metrics(model: torch.nn.Module, vocab: int, lengths: Sequence[int],
                     per_length: int = 64, seed: int = 0,
                     dtype: torch.dtype = torch.float64) -> tuple[dict, torch.Tensor]:
    """:func:`per_position_metrics` at the given ``lengths`` only: dict of (per_length, len
    (lengths)), column j for the prefixes of length lengths[j] of the same seeded inputs
    (:func:`logits_at`: the last position of each length alone), and the inputs (per_length,
    max(lengths)). Inputs run one at a time."""
    lengths = sorted(set(int(s) for s in lengths))
    for s in lengths:
        check_length(s, vocab)
    tokens = sample_inputs(vocab, max(lengths), per_length, seed)
    if dtype is not None and next(model.parameters()).dtype != dtype:
        model = copy.deepcopy(model).to(dtype)
    positions = torch.tensor(lengths) - 1
    was_training = model.training
    model.eval()
    try:
        parts = [complement_metrics_at(logits_at(model, row, positions), row, positions, vocab)
                 for row in tokens.split(1)]
    finally:
        model.train(was_training)
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
    evaluated in ``dtype`` (float64 by default). TypeError for a ``model`` that is not a torch
    module or ``lengths`` that are not a sequence of integers; ValueError for a bad value."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (e.g. Construction.model or "
                        f"Run.model()), got {type(model).__name__}")
    check_vocab(vocab)
    if lengths is None:
        lengths = list(range(1, vocab))
    else:
        if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
            raise TypeError(f"lengths must be a sequence of integers, got "
                            f"{type(lengths).__name__} {lengths!r}")
        lengths = [int(s) if isinstance(s, Integral) and not isinstance(s, bool) else s
                   for s in lengths]  # numpy integers too
        if not lengths:
            raise ValueError("lengths is empty: give at least one length in 1..v-1, or None "
                             "for every length")
        for s in lengths:
            check_length(s, vocab)
        lengths = sorted(set(lengths))
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype (e.g. torch.float64) or None, got "
                        f"{type(dtype).__name__} {dtype!r}")
    if dtype is not None and not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype (e.g. torch.float64), got {dtype}")
    from resharpen.experiments.tasks.base import check_int

    check_int("seed", seed, 0, 2**63 - 1)
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
