"""The statistics of the experiment claims: paired tests where seeds pair, Welch where they do not,
Holm's correction across a family, and the rule for too little data.

A comparison of two arms (say ``post`` and ``none``, or EMA and raw weights) is

* **paired** when both arms were run with the same seeds: the test is on the per-seed differences
  d_i = a_i - b_i, the paired t-test (``scipy.stats.ttest_rel``), with the Wilcoxon signed-rank
  test (``scipy.stats.wilcoxon``) reported beside it as a check that does not assume normality;
* **unpaired** otherwise: Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``), whose
  degrees of freedom (Welch-Satterthwaite) are reported.

Every result names its test, n and p-value, so that a claim's detail can say exactly what decided
it. A comparison is *inconclusive*, not failed, when the data cannot decide: fewer pairs (or runs
per arm) than ``min_n``, or a standard error that is zero or not finite.

Holm's step-down correction controls the family-wise error rate of m tests that share data:
sort the p-values p_(1) <= ... <= p_(m); the adjusted p_(k) is max_{j <= k} min(1, (m - j + 1)
p_(j)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

MIN_N = 5
"""The fewest pairs (or runs per arm) a comparison decides on; fewer is inconclusive."""


@dataclass(frozen=True)
class Comparison:
    """The result of comparing arm a with arm b (a - b)."""

    test: str  # "paired t (scipy.stats.ttest_rel)" or "Welch t (scipy.stats.ttest_ind)"
    n: int  # pairs (paired) or the smaller arm (Welch)
    mean_diff: float  # mean of a - b (paired) or mean(a) - mean(b)
    se: float  # its standard error
    statistic: float
    df: float
    p: float  # for the alternative asked
    alternative: str  # "less" (a < b), "greater" or "two-sided"
    wilcoxon_p: float | None = None  # paired only
    inconclusive: str = ""  # why the data cannot decide, "" when it can

    def describe(self) -> str:
        """One line for a claim's detail: test, n, the difference and its p-value."""
        text = (f"{self.test}, n={self.n}: mean diff {self.mean_diff:+.4g} (s.e. {self.se:.2g}), "
                f"t={self.statistic:.3g}, df={self.df:.3g}, p={self.p:.3g} ({self.alternative})")
        if self.wilcoxon_p is not None:
            text += f"; Wilcoxon p={self.wilcoxon_p:.3g}"
        return text + (f"; inconclusive: {self.inconclusive}" if self.inconclusive else "")


def _check_alternative(alternative: str) -> None:
    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(f"alternative {alternative!r} is not one of less, greater, two-sided")


def paired(a: Sequence[float], b: Sequence[float], alternative: str = "less",
           min_n: int = MIN_N) -> Comparison:
    """Paired comparison of a and b (a[i] and b[i] from the same seed)."""
    from scipy import stats

    _check_alternative(alternative)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired arms must be 1-d of equal length, got {a.shape} and {b.shape}")
    d = a - b
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    reason = _too_little(n, se, min_n)
    if reason:
        return Comparison("paired t (scipy.stats.ttest_rel)", n, mean, se, math.nan, n - 1,
                          math.nan, alternative, None, reason)
    t = stats.ttest_rel(a, b, alternative=alternative)
    w = stats.wilcoxon(d, alternative=alternative)
    return Comparison("paired t (scipy.stats.ttest_rel)", n, mean, se, float(t.statistic), n - 1,
                      float(t.pvalue), alternative, float(w.pvalue))


def welch(a: Sequence[float], b: Sequence[float], alternative: str = "less",
          min_n: int = MIN_N) -> Comparison:
    """Unpaired comparison of a and b (Welch's t-test, Welch-Satterthwaite degrees of freedom)."""
    from scipy import stats

    _check_alternative(alternative)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = int(min(len(a), len(b)))
    mean = float(a.mean() - b.mean()) if n else math.nan
    va = a.var(ddof=1) / len(a) if len(a) > 1 else math.nan
    vb = b.var(ddof=1) / len(b) if len(b) > 1 else math.nan
    se = float(math.sqrt(va + vb)) if n > 1 else math.nan
    reason = _too_little(n, se, min_n)
    df = ((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
          if n > 1 and va + vb > 0 else math.nan)
    if reason:
        return Comparison("Welch t (scipy.stats.ttest_ind)", n, mean, se, math.nan, df, math.nan,
                          alternative, None, reason)
    t = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    return Comparison("Welch t (scipy.stats.ttest_ind)", n, mean, se, float(t.statistic),
                      float(df), float(t.pvalue), alternative)


def _too_little(n: int, se: float, min_n: int) -> str:
    if n < min_n:
        return f"{n} < {min_n} pairs/runs per arm"
    if not math.isfinite(se) or se == 0.0:
        return f"standard error {se:g}"
    return ""


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (NaN stays NaN and is not counted)."""
    p = np.asarray(pvalues, dtype=float)
    finite = np.flatnonzero(np.isfinite(p))
    adjusted = np.full(len(p), math.nan)
    m = len(finite)
    order = finite[np.argsort(p[finite], kind="stable")]
    running = 0.0
    for k, index in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()
