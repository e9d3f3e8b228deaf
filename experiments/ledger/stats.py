"""The statistics of the experiment claims: paired tests where seeds pair, Welch where they do not,
Holm's correction across a family, and the rule for too little data.

A comparison of two arms (say ``post`` and ``none``, or EMA and raw weights) is

* **paired** when both arms were run with the same seeds: the test is on the per-seed differences
  d_i = a_i - b_i, the paired t-test (``scipy.stats.ttest_rel``), with the Wilcoxon signed-rank
  test (``scipy.stats.wilcoxon``) reported beside it as a check that does not assume normality;
* **unpaired** otherwise: Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``), whose
  degrees of freedom (Welch-Satterthwaite) are reported.

:func:`compare` chooses between them from the data: the arms are given as ``{key: value}`` (the
key is the seed, or (task, seed)), and they are paired when every key of the smaller arm is also
a key of the other (a grid over seeds), unpaired otherwise (seeds drawn per run).
A monotone trend (say, more dropout with lower KL) is :func:`spearman`'s rank correlation.

Every result names its test, n and p-value, so that a claim's detail can say exactly what decided
it. A comparison is *inconclusive*, not failed, when the data cannot decide: fewer pairs (or runs
per arm) than ``min_n``, or a standard error that is zero or not finite.

Holm's step-down correction controls the family-wise error rate of m tests that share data
(:func:`family` adjusts a family's tests, :func:`verdict` decides a claim from its own):
sort the p-values p_(1) <= ... <= p_(m); the adjusted p_(k) is max_{j <= k} min(1, (m - j + 1)
p_(j)). m counts every planned test of the family: a test that cannot be computed (too little
data, a standard error of 0) counts as p = 1, so a family of 5 planned tests is corrected over 5.

**Three outcomes** (:func:`verdict`). A claim of an effect names a direction (``alternative``
"less" or "greater"); every test also carries the p-value of the opposite direction
(``p_opposite``). Holm adjusts each direction over the whole family, and the claim is

* PASS when every one of its tests shows the claimed effect (adjusted p < alpha);
* FAIL when one of its tests shows the opposite effect (adjusted opposite p < alpha), or, for a
  test of no effect, a difference outside its margin;
* INCONCLUSIVE otherwise, with why (too little data, or neither direction shown) and, from the
  claim, what would decide (more seeds or runs, and the command).

A claim of **no effect**, or an absence that decides something, is an equivalence test with a
margin fixed beforehand (:func:`equivalence`: TOST, two one-sided t-tests against -margin and
+margin): it shows the absence when both reject (p = the larger of the two), and shows a
difference beyond the margin when a one-sided test of it rejects (``p_opposite``). A
non-significant difference is never evidence of absence.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence, Union

import numpy as np

MIN_N = 5
"""The fewest pairs (or runs per arm) a comparison decides on; fewer is inconclusive."""
ALPHA = 0.05
"""The level at which an experiment claim decides, on its Holm-adjusted p-values."""


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
    sizes: tuple[int, int] | None = None  # Welch only: the runs of arm a and of arm b
    p_opposite: float = math.nan  # the one-sided p of the opposite direction (NaN: two-sided)

    def describe(self) -> str:
        """One line for a claim's detail: test, n, the difference and its p-value."""
        n = f"n={self.n}" if self.sizes is None else f"n={self.sizes[0]} vs {self.sizes[1]}"
        if not (math.isfinite(self.statistic) and math.isfinite(self.p)):  # never print nan
            return f"{self.test}, {n}: not tested ({self.inconclusive or 'no finite statistic'})"
        text = (f"{self.test}, {n}: mean diff {self.mean_diff:+.4g} (s.e. {self.se:.2g}), "
                f"t={self.statistic:.3g}, df={self.df:.3g}, p={self.p:.3g} ({self.alternative})")
        if self.alternative != "two-sided" and math.isfinite(self.p_opposite):
            text += f", opposite p={self.p_opposite:.3g}"
        if self.wilcoxon_p is not None:
            text += f"; Wilcoxon p={self.wilcoxon_p:.3g}"
        return text + (f"; inconclusive: {self.inconclusive}" if self.inconclusive else "")


def _check_alternative(alternative: str) -> None:
    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(f"alternative {alternative!r} is not one of less, greater, two-sided")


OPPOSITE = {"less": "greater", "greater": "less", "two-sided": "two-sided"}
"""The alternative of the opposite effect (a two-sided test has none)."""


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
    opposite = (math.nan if alternative == "two-sided" else
                float(stats.ttest_rel(a, b, alternative=OPPOSITE[alternative]).pvalue))
    return Comparison("paired t (scipy.stats.ttest_rel)", n, mean, se, float(t.statistic), n - 1,
                      float(t.pvalue), alternative, float(w.pvalue), p_opposite=opposite)


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
                          alternative, None, reason, (len(a), len(b)))
    t = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    opposite = (math.nan if alternative == "two-sided" else float(
        stats.ttest_ind(a, b, equal_var=False, alternative=OPPOSITE[alternative]).pvalue))
    return Comparison("Welch t (scipy.stats.ttest_ind)", n, mean, se, float(t.statistic),
                      float(df), float(t.pvalue), alternative, sizes=(len(a), len(b)),
                      p_opposite=opposite)


def compare(a: Mapping[Hashable, float], b: Mapping[Hashable, float],
            alternative: str = "less", min_n: int = MIN_N) -> Comparison:
    """Arm a against arm b, each ``{key: value}``: paired on the shared keys when every key of
    the smaller arm is in the other (both arms ran the same seeds), else Welch. Non-finite
    values are dropped (with their partner when paired). Two empty arms are an empty paired
    comparison (n = 0, inconclusive), not a Welch test of nothing."""
    a = {k: float(v) for k, v in a.items() if math.isfinite(float(v))}
    b = {k: float(v) for k, v in b.items() if math.isfinite(float(v))}
    shared = [k for k in a if k in b]
    if (shared or not (a or b)) and len(shared) == min(len(a), len(b)):
        return paired([a[k] for k in shared], [b[k] for k in shared], alternative, min_n)
    return welch(list(a.values()), list(b.values()), alternative, min_n)


@dataclass(frozen=True)
class Correlation:
    """Spearman's rank correlation of x and y, with its one- or two-sided p-value."""

    test: str
    n: int
    rho: float
    p: float
    alternative: str  # "less" (rho < 0), "greater" or "two-sided"
    inconclusive: str = ""
    p_opposite: float = math.nan  # the one-sided p of the opposite trend (NaN: two-sided)

    def describe(self) -> str:
        if not (math.isfinite(self.rho) and math.isfinite(self.p)):  # never print nan
            return (f"{self.test}, n={self.n}: not tested "
                    f"({self.inconclusive or 'no finite statistic'})")
        text = f"{self.test}, n={self.n}: rho={self.rho:+.3g}, p={self.p:.3g} ({self.alternative})"
        if self.alternative != "two-sided" and math.isfinite(self.p_opposite):
            text += f", opposite p={self.p_opposite:.3g}"
        return text + (f"; inconclusive: {self.inconclusive}" if self.inconclusive else "")


def spearman(x: Sequence[float], y: Sequence[float], alternative: str = "less",
             min_n: int = MIN_N) -> Correlation:
    """Spearman's rank correlation (``scipy.stats.spearmanr``) over the finite (x, y) pairs;
    inconclusive with fewer than ``min_n`` pairs or when x or y is constant."""
    from scipy import stats

    _check_alternative(alternative)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    name = "Spearman rank correlation (scipy.stats.spearmanr)"
    n = len(x)
    if n < min_n:
        return Correlation(name, n, math.nan, math.nan, alternative,
                           f"{n} < {min_n} pairs")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(name, n, math.nan, math.nan, alternative, "a constant variable")
    result = stats.spearmanr(x, y, alternative=alternative)
    opposite = (math.nan if alternative == "two-sided" else
                float(stats.spearmanr(x, y, alternative=OPPOSITE[alternative]).pvalue))
    return Correlation(name, n, float(result.statistic), float(result.pvalue), alternative,
                       p_opposite=opposite)


def _too_little(n: int, se: float, min_n: int) -> str:
    if n < min_n:
        return f"{n} < {min_n} pairs/runs per arm"
    if not math.isfinite(se) or se == 0.0:
        return f"standard error {se:g}"
    return ""


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order. Every input is a planned test: a NaN (a test
    that could not be computed) counts as p = 1, so it is counted in m and adjusts to 1."""
    p = np.asarray(pvalues, dtype=float)
    p = np.where(np.isfinite(p), p, 1.0)
    adjusted = np.full(len(p), math.nan)
    m = len(p)
    order = np.argsort(p, kind="stable")
    running = 0.0
    for k, index in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


@dataclass(frozen=True)
class Equivalence:
    """TOST: two one-sided t-tests that the mean difference (paired: of a - b; one sample: of a
    - b with b the reference values) lies inside (low, high), a margin fixed beforehand."""

    test: str
    n: int
    mean_diff: float
    se: float
    df: float
    low: float
    high: float
    p_low: float  # H0: diff <= low, rejected for diff > low
    p_high: float  # H0: diff >= high, rejected for diff < high
    p: float  # the TOST p-value: max(p_low, p_high); < alpha shows the absence
    p_opposite: float  # a difference beyond the margin: min(1, 2 min(p(diff < low), p(diff > high)))
    alternative: str = "equivalence"
    inconclusive: str = ""

    def describe(self) -> str:
        if not math.isfinite(self.p):  # never print nan
            return (f"{self.test}, n={self.n}: not tested "
                    f"({self.inconclusive or 'no finite statistic'})")
        text = (f"{self.test}, n={self.n}: mean diff {self.mean_diff:+.4g} (s.e. {self.se:.2g}), "
                f"margin ({self.low:+.4g}, {self.high:+.4g}), df={self.df:.3g}: TOST p="
                f"{self.p:.3g} (above low {self.p_low:.3g}, below high {self.p_high:.3g}), "
                f"outside the margin p={self.p_opposite:.3g}")
        return text + (f"; inconclusive: {self.inconclusive}" if self.inconclusive else "")


def equivalence(a: Sequence[float], b: Sequence[float], margin: float | tuple[float, float],
                min_n: int = MIN_N) -> Equivalence:
    """TOST on the paired differences a[i] - b[i] (``scipy.stats.ttest_1samp`` against each end
    of the margin, one-sided): the absence of an effect beyond ``margin`` (a number m for
    (-m, m), or (low, high)) is shown when both one-sided tests reject. The margin must be fixed
    before the data are seen; a claim states it in its tolerance."""
    from scipy import stats

    low, high = (-abs(margin), abs(margin)) if np.isscalar(margin) else map(float, margin)
    if not low < high:
        raise ValueError(f"an equivalence margin needs low < high, got ({low}, {high})")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired arms must be 1-d of equal length, got {a.shape} and {b.shape}")
    d = a - b
    d = d[np.isfinite(d)]
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    name = "TOST, two one-sided t (scipy.stats.ttest_1samp)"
    reason = _too_little(n, se, min_n)
    if reason:
        return Equivalence(name, n, mean, se, n - 1, low, high, math.nan, math.nan, math.nan,
                           math.nan, inconclusive=reason)
    p_low = float(stats.ttest_1samp(d, low, alternative="greater").pvalue)
    p_high = float(stats.ttest_1samp(d, high, alternative="less").pvalue)
    below = float(stats.ttest_1samp(d, low, alternative="less").pvalue)
    above = float(stats.ttest_1samp(d, high, alternative="greater").pvalue)
    return Equivalence(name, n, mean, se, n - 1, low, high, p_low, p_high, max(p_low, p_high),
                       min(1.0, 2 * min(below, above)))


def equivalence_to(values: Sequence[float], target: float, margin: float,
                   min_n: int = MIN_N) -> Equivalence:
    """TOST of a fitted quantity against a theory's value: the mean of ``values`` (one fitted
    exponent or coefficient per seed) lies within ``target`` +- ``margin``, the margin fixed
    before the data are seen. The difference tested is mean(values) - target: equivalence
    shown (p < alpha) when both one-sided t-tests reject, a difference beyond the margin shown
    when ``p_opposite`` < alpha, neither when the interval straddles an end of the margin."""
    values = np.asarray(values, dtype=float)
    if not (math.isfinite(target) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"equivalence_to needs a finite target and a margin > 0, got target "
                         f"{target!r}, margin {margin!r}")
    return equivalence(values, np.full(values.shape, float(target)), float(margin), min_n)


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the two-sided ``level`` Student-t confidence interval of the mean of
    the finite ``values`` (scipy.stats.t); (mean, NaN, NaN) with fewer than 2 values. The
    interval of level 1 - 2 alpha is the one TOST at alpha holds inside the margin."""
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"a confidence level lies in (0, 1), got {level!r}")
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size < 2:
        return (float(a.mean()) if a.size else math.nan), math.nan, math.nan
    mean, se = float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))
    half = float(stats.t.ppf(0.5 + level / 2, a.size - 1)) * se
    return mean, mean - half, mean + half


Result = Union[Comparison, Correlation, Equivalence]


@dataclass(frozen=True)
class FamilyTest:
    """One test of a family: the claim it decides, what it compares, its result and its
    Holm-adjusted p-values within the family: of the claimed direction (``adjusted_p``) and of
    the opposite one (``adjusted_opposite``; for an equivalence test, a difference beyond the
    margin)."""

    claim: str
    label: str
    result: Result
    adjusted_p: float
    adjusted_opposite: float = math.nan

    def describe(self) -> str:
        text = f"{self.label}: {self.result.describe()}; Holm-adjusted p={self.adjusted_p:.3g}"
        if math.isfinite(self.adjusted_opposite):
            text += f", opposite {self.adjusted_opposite:.3g}"
        return text


def family(tests: Sequence[tuple[str, str, Result]]) -> dict[str, list[FamilyTest]]:
    """The (claim, label, result) tests of a family, Holm-adjusted together, each direction over
    every planned test (a test that cannot decide counts as p = 1), grouped by claim in the given
    order."""
    adjusted = holm([result.p for _, _, result in tests])
    opposite = holm([result.p_opposite for _, _, result in tests])
    by_claim: dict[str, list[FamilyTest]] = {}
    for (claim, label, result), p, q in zip(tests, adjusted, opposite):
        by_claim.setdefault(claim, []).append(
            FamilyTest(claim, label, result, p,
                       q if result.alternative != "two-sided" else math.nan))
    return by_claim


PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"


def decision(tests: Sequence[FamilyTest], alpha: float = ALPHA) -> tuple[str, str]:
    """(PASS | FAIL | INCONCLUSIVE, why): PASS when every test shows the claimed effect (or, for
    an equivalence test, the absence) at Holm-adjusted p < alpha; FAIL when one shows the
    opposite (or a difference beyond its margin) at its adjusted opposite p < alpha; otherwise
    INCONCLUSIVE, ``why`` naming each test that decides neither way."""
    if not tests:
        return INCONCLUSIVE, "no test could be made"
    opposite = [t for t in tests if t.adjusted_opposite < alpha]
    if opposite:
        return FAIL, ""
    if all(t.adjusted_p < alpha for t in tests):
        return PASS, ""
    why = []
    for t in tests:
        if t.adjusted_p < alpha:
            continue
        if t.result.inconclusive:
            why.append(f"{t.label}: {t.result.inconclusive}")
        else:
            side = ("neither the absence nor a difference beyond the margin is shown"
                    if isinstance(t.result, Equivalence) else
                    "neither the effect nor the opposite is shown")
            opp = (f", opposite {t.adjusted_opposite:.2g}" if math.isfinite(t.adjusted_opposite)
                   else "")
            why.append(f"{t.label}: {side} at alpha {alpha:g} after Holm (adjusted p "
                       f"{t.adjusted_p:.2g}{opp})")
    return INCONCLUSIVE, "; ".join(why)


def verdict(tests: Sequence[FamilyTest], alpha: float = ALPHA) -> tuple[bool, str]:
    """(passed, why it is INCONCLUSIVE or ""): :func:`decision` as an Outcome takes it (passed
    False with no reason is a FAIL)."""
    status, why = decision(tests, alpha)
    return status == PASS, why
