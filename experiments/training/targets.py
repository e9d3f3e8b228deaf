"""The training target: what a model's output at each position is scored against.

The data of every task here know, at every position i of a training sequence t (B, S+1), the
exact next-token distribution p*_i = p*(. | t_1..t_i) (Set Complement: uniform on the tokens not
yet seen; a formal language: uniform on the legal-next set; a row of zeros: the position has no
target), and the sequence holds one draw from it, the token t_{i+1} that actually comes next.
With p_i the model's softmax at position i, the loss at that position is, by ``train.target``:

    sampled, k = train.labels_per_position:
        l_i = (1/k) sum_{j=1..k} -log p_i(y_j),
        y_1 = t_{i+1} (the sequence's own next token), y_2..y_k i.i.d. ~ p*_i drawn from a
        separate seeded generator; k = 1 is the plain next-token cross-entropy, bit for bit
    soft:
        l_i = H(p*_i, p_i) = -sum_y p*_i(y) log p_i(y)

Given the prefix, E_{y ~ p*_i}[-log p_i(y)] = H(p*_i, p_i): the expected sampled loss (and, the
loss being linear in the label's indicator, the expected gradient) is the soft one for every k,
while the label noise, the variance of l_i and of its gradient given the prefix, is 1/k of the
one-label case; soft is the noiseless limit k -> infinity. A batch's loss is the mean of l_i over
the positions with a target (:func:`cross_entropy`); a stack of K models' batches (the batched
ensemble) gets one such mean per model (:func:`per_model_cross_entropy`).

The targets are made with the data, outside the loss (:func:`make_batch`), so that the loss is a
pure tensor function of (logits, batch) that ``torch.compile`` can fuse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from resharpen.experiments.training.schema import TARGETS, TrainingTarget, check_target

IGNORE = -100  # a label that scores nothing (F.cross_entropy's ignore_index)
LABEL_SEED_OFFSET = 2_000_003  # labels 2..k of a run with seed s come from Generator(s + this)

ExactTargets = Callable[[torch.Tensor], torch.Tensor]
"""sequences (..., B, S+1) -> p* at every input position (..., B, S, v), rows summing to 1 or 0."""


def label_generator(seed: int) -> torch.Generator:
    """The generator of the extra labels (2..k) of the run with ``train.seed = seed``."""
    return torch.Generator().manual_seed(seed + LABEL_SEED_OFFSET)


@dataclass(frozen=True)
class Batch:
    """One training batch: ``tokens`` (..., B, S+1), whose next tokens are the first labels;
    ``extra_labels`` (..., B, S, k-1) int64, the labels 2..k (:data:`IGNORE` where a position has
    no target), or ``soft`` (..., B, S, v) float, p* at every input position; at most one."""

    tokens: torch.Tensor
    extra_labels: torch.Tensor | None = None
    soft: torch.Tensor | None = None

    @property
    def inputs(self) -> torch.Tensor:
        return self.tokens[..., :-1]


def sample_labels(exact: torch.Tensor, count: int,
                  generators: torch.Generator | Sequence[torch.Generator]) -> torch.Tensor:
    """``count`` i.i.d. draws from every row of p* ``exact`` (..., S, v): int64 (..., S, count),
    :data:`IGNORE` in rows of zeros. One generator, or one per entry of the leading (model) axis
    (entry k then draws exactly what a lone run with ``generators[k]`` draws)."""
    if isinstance(generators, torch.Generator):
        return _draw(exact, count, generators)
    if len(generators) != exact.shape[0]:
        raise ValueError(f"{len(generators)} label generators for {exact.shape[0]} models")
    return torch.stack([_draw(rows, count, g) for rows, g in zip(exact, generators)])


def _draw(exact: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    v = exact.shape[-1]
    rows = exact.reshape(-1, v).to(torch.float64)
    empty = rows.sum(-1) <= 0
    rows = torch.where(empty[:, None], torch.ones_like(rows), rows)  # drawn, then ignored
    labels = torch.multinomial(rows, count, replacement=True, generator=generator)
    labels = labels.masked_fill(empty[:, None], IGNORE)
    return labels.view(*exact.shape[:-1], count)


def make_batch(tokens: torch.Tensor, target: TrainingTarget, exact: ExactTargets | None = None,
               generators: torch.Generator | Sequence[torch.Generator] | None = None) -> Batch:
    """The batch of sequences ``tokens`` (..., B, S+1) for ``target``: the sequences alone
    (sampled, 1 label), with k-1 extra labels drawn from ``exact(tokens)`` by ``generators``
    (:func:`sample_labels`), or with the soft targets ``exact(tokens)``."""
    if not target.needs_exact:
        return Batch(tokens)
    if exact is None:
        raise ValueError(f"train.target = {target.kind!r} with {target.labels} label(s) needs "
                         "the task's exact next-token distributions")
    p_star = exact(tokens)
    if target.kind == "soft":
        return Batch(tokens, soft=p_star)
    if generators is None:
        raise ValueError("labels_per_position > 1 needs a label generator")
    return Batch(tokens, extra_labels=sample_labels(p_star, target.labels - 1, generators))


def _positions(logits: torch.Tensor, tokens: torch.Tensor, extra_labels: torch.Tensor | None,
               soft: torch.Tensor | None, ignore: int | None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss summed over the labels of each position, number of labels scored there), both
    shaped like the positions (..., B, S)."""
    logp = torch.log_softmax(logits, dim=-1)
    if soft is not None:
        q = soft.to(logp.dtype)
        return -(q * logp).sum(-1), (q.sum(-1) > 0).to(logp.dtype)
    labels = tokens[..., 1:]
    if ignore is not None:
        labels = labels.masked_fill(labels == ignore, IGNORE)
    labels = labels.unsqueeze(-1)
    if extra_labels is not None:
        labels = torch.cat([labels, extra_labels], dim=-1)
    keep = labels != IGNORE
    picked = logp.gather(-1, labels.clamp_min(0))
    return torch.where(keep, -picked, 0.0).sum(-1), keep.sum(-1).to(logp.dtype)


def cross_entropy(logits: torch.Tensor, batch: Batch, ignore: int | None = None) -> torch.Tensor:
    """The mean of l_i (module docstring) over every position with a target; logits (B, S, v).
    Labels equal to ``ignore`` (a PAD token) score nothing. Sampled with one label: exactly
    ``F.cross_entropy`` of the next tokens (``ignore_index``), as before the targets existed."""
    if batch.soft is None and batch.extra_labels is None:
        labels = batch.tokens[..., 1:]
        if ignore is not None:
            labels = labels.masked_fill(labels == ignore, IGNORE)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               ignore_index=IGNORE)
    total, count = _positions(logits, batch.tokens, batch.extra_labels, batch.soft, ignore)
    return total.sum() / count.sum().clamp_min(1.0)


def per_model_cross_entropy(logits: torch.Tensor, tokens: torch.Tensor,
                            extra_labels: torch.Tensor | None = None,
                            soft: torch.Tensor | None = None) -> torch.Tensor:
    """Model k's mean l_i over its positions, (K,), for K stacked models: logits (K, B, S, v),
    the fields of a stacked :class:`Batch` (tensors, so that ``torch.compile`` sees no object).
    Sampled with one label: exactly the per-model mean of ``F.cross_entropy``'s position losses."""
    k = logits.shape[0]
    if soft is None and extra_labels is None:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[..., 1:].reshape(-1),
                               reduction="none").view(k, -1).mean(1)
    total, count = _positions(logits, tokens, extra_labels, soft, None)
    return total.reshape(k, -1).sum(1) / count.reshape(k, -1).sum(1).clamp_min(1.0)


__all__ = ["TARGETS", "IGNORE", "TrainingTarget", "check_target", "label_generator", "Batch",
           "sample_labels", "make_batch", "cross_entropy", "per_model_cross_entropy"]
