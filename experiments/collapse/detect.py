"""A collapse detector for training logs (arXiv 2608.09417, Sec. 4 / Fig. 6).

A run has *collapsed* at step k when, from k on for ``patience`` consecutive logged steps,

    t_sim(final hidden state) >= t_threshold       (token states nearly identical), and
    loss >= L_freq - loss_margin                    (no better than the frequency predictor),

where L_freq is the entropy of the label frequencies (Definition 3.7) of the reference the model
can learn: the stream's unigram law (a collapsed model predicts the global frequencies; a batch's
own L_freq is lower by the plug-in entropy's finite-sample bias, and by Theorem 3.8(i) it is a
lower bound on a collapsed model's batch loss). A collapsed model can only learn p_freq, so its
loss falls *towards* L_freq from above and never below it; a healthy model with similar token
states would beat L_freq. Both tests
are needed: t_sim alone also rises in healthy early training, and a loss near L_freq alone
happens at the very start of training before any structure is learned. A run whose condition
later fails for ``patience`` consecutive steps has *recovered* (Pre-Norm at high learning rates
goes through such a transient); only an unrecovered window counts as a collapse.

``load_log`` reads these series back from a run folder of ``resharpen collapse train``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np


@dataclass(frozen=True)
class Detection:
    step: int | None  # first step of the first sustained collapse window, None if none
    t_sim: float | None
    gap: float | None  # loss - L_freq at that step
    recovered: int | None = None  # first step of a later window of `patience` healthy steps

    @property
    def collapsed(self) -> bool:
        """Collapsed and never recovered: the absorbing state of Theorem 3.8(ii)."""
        return self.step is not None and self.recovered is None


def check_settings(t_threshold: float, loss_margin: float, patience: int) -> None:
    """ValueError unless 0 < t_threshold <= 1, loss_margin >= 0 and patience is an integer >= 1."""
    if not 0 < t_threshold <= 1:
        raise ValueError(f"t_threshold must lie in (0, 1], got {t_threshold!r}")
    if loss_margin < 0:
        raise ValueError(f"loss_margin must be >= 0, got {loss_margin!r}")
    if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
        raise ValueError(f"patience must be a positive integer, got {patience!r}")


def detect_collapse(steps: Sequence[int], t_sim: Sequence[float], loss: Sequence[float],
                    l_freq: Sequence[float], t_threshold: float = 0.95,
                    loss_margin: float = 0.05, patience: int = 10) -> Detection:
    """First step from which both collapse tests hold for ``patience`` consecutive entries."""
    arrays = [np.asarray(a, dtype=float) for a in (steps, t_sim, loss, l_freq)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise ValueError("steps, t_sim, loss and l_freq must be 1-D sequences of one length, got "
                         f"shapes {[a.shape for a in arrays]}")
    check_settings(t_threshold, loss_margin, patience)
    steps_a, t_a, loss_a, lf_a = arrays
    hit = (t_a >= t_threshold) & (loss_a >= lf_a - loss_margin)
    run = 0
    for i, flag in enumerate(hit):
        run = run + 1 if flag else 0
        if run == patience:
            k = i - patience + 1
            healthy, recovered = 0, None
            for j in range(i + 1, len(hit)):
                healthy = 0 if hit[j] else healthy + 1
                if healthy == patience:
                    recovered = int(steps_a[j - patience + 1])
                    break
            return Detection(int(steps_a[k]), float(t_a[k]), float(loss_a[k] - lf_a[k]),
                             recovered)
    return Detection(None, None, None)


class TrainingLog(NamedTuple):
    """The series :func:`detect_collapse` reads, one entry per logged step of a run."""

    steps: list[int]
    t_sim: list[float]
    loss: list[float]
    l_freq: list[float]  # the stream's L_freq (the run's reference), repeated


LOG_KEYS = ("step", "t_sim", "loss")


def load_log(folder: str | Path) -> TrainingLog:
    """The training log of a finished ``resharpen collapse train`` run folder: steps, t_sim and
    loss from ``metrics.jsonl`` and the stream's L_freq (``l_freq_stream``) from ``summary.json``,
    each read from its ``.gz`` form when only that exists (an archived run, ``results/full``).
    FileNotFoundError when a file is missing; ValueError when the folder is another kind of run
    (a Set Complement or task run has no t_sim and no stream L_freq) or a file is not JSON."""
    from resharpen.experiments.common.stored import (FINITE, check_shape, read_json, read_jsonl,
                                                     stored_file)

    folder = Path(folder)
    metrics_path, summary_path = folder / "metrics.jsonl", folder / "summary.json"
    if not stored_file(metrics_path).is_file() or not stored_file(summary_path).is_file():
        raise FileNotFoundError(f"{str(folder)!r} has no metrics.jsonl and summary.json, "
                                "plain or gzip-compressed as the archive keeps them (a finished "
                                "`resharpen collapse train` run)")
    hint = ("detect reads the run folders of `resharpen collapse train`, e.g. "
            "out/collapse_train/post_L24_d32_lr0.03_s0")

    summary = read_json(summary_path, "run file")  # ValueError naming the file and line
    metrics = read_jsonl(metrics_path, "run file")
    if not isinstance(summary, dict) or "l_freq_stream" not in summary:
        raise ValueError(f"{str(folder)!r} is not a collapse run: its summary.json has no "
                         f"l_freq_stream; {hint}")
    missing = [k for k in LOG_KEYS if any(not isinstance(m, dict) or k not in m for m in metrics)]
    if not metrics or missing:
        what = f"no {missing[0]}" if missing else "no logged step"
        raise ValueError(f"{str(folder)!r} is not a collapse run: its metrics.jsonl has {what}; "
                         f"{hint}")
    for number, row in enumerate(metrics, start=1):  # a NaN row is refused, never "no collapse"
        check_shape(row, {key: FINITE for key in LOG_KEYS},
                    f"run file {str(metrics_path)!r}, row {number}")
    check_shape(summary, {"l_freq_stream": FINITE}, f"run file {str(summary_path)!r}")
    ref = summary["l_freq_stream"]
    return TrainingLog([m["step"] for m in metrics], [m["t_sim"] for m in metrics],
                       [m["loss"] for m in metrics], [ref] * len(metrics))
