"""The claims' statistics against independent computations."""
import math

import numpy as np
import pytest

from resharpen.experiments.ledger import stats


def test_paired_t_matches_the_textbook_formula():
    rng = np.random.default_rng(0)
    b = rng.normal(size=12)
    a = b - 0.5 + 0.3 * rng.normal(size=12)
    result = stats.paired(a, b, alternative="less")
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert result.statistic == pytest.approx(t, rel=1e-12)
    assert result.df == 11 and result.n == 12 and result.p < 0.01 and result.wilcoxon_p < 0.01
    assert "paired t" in result.describe() and "n=12" in result.describe()


def test_welch_degrees_of_freedom():
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    b = np.array([2.0, 2.5, 2.0, 3.0, 2.5])
    result = stats.welch(a, b, alternative="two-sided")
    va, vb = a.var(ddof=1) / 6, b.var(ddof=1) / 5
    df = (va + vb) ** 2 / (va ** 2 / 5 + vb ** 2 / 4)
    assert result.df == pytest.approx(df, rel=1e-12) and not result.inconclusive


def test_too_little_data_is_inconclusive_not_a_verdict():
    assert stats.paired([1, 2], [2, 3]).inconclusive
    assert stats.paired([1.0] * 6, [1.0] * 6).inconclusive  # s.e. 0
    assert math.isnan(stats.paired([1, 2], [2, 3]).p)
    assert stats.welch([1.0], [2.0, 3.0]).inconclusive


def test_holm_by_hand():
    # sorted: 0.01 (x4), 0.02 (x3), 0.03 (x2), 0.5 (x1) -> 0.04, 0.06, 0.06, 0.5
    assert stats.holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    adjusted = stats.holm([0.01, float("nan")])
    assert adjusted[0] == pytest.approx(0.01) and math.isnan(adjusted[1])


def test_bad_alternative_and_shapes():
    with pytest.raises(ValueError, match="alternative"):
        stats.paired([1.0] * 5, [1.0] * 5, alternative="smaller")
    with pytest.raises(ValueError, match="equal length"):
        stats.paired([1.0] * 5, [1.0] * 4)


def test_compare_pairs_shared_seeds_and_falls_back_to_welch():
    a = {0: 1.0, 1: 2.0, 2: 3.5, 3: 4.0, 4: 5.5}
    b = {4: 6.0, 3: 5.0, 2: 4.0, 1: 3.0, 0: 2.2}  # same seeds, another order
    result = stats.compare(a, b)
    assert result.test.startswith("paired") and result.n == 5
    assert result.mean_diff == pytest.approx(np.mean([1.0 - 2.2, 2 - 3, 3.5 - 4, 4 - 5, 5.5 - 6]))
    unpaired = stats.compare(a, {10 + k: v for k, v in b.items()})
    assert unpaired.test.startswith("Welch")
    with_nan = stats.compare({**a, 5: float("nan")}, {**b, 5: 1.0})
    assert with_nan.test.startswith("paired") and with_nan.n == 5


def test_spearman_and_its_inconclusive_cases():
    x = [0.0, 0.1, 0.2, 0.3, 0.5, 0.5]
    y = [1.0, 0.9, 0.8, 0.85, 0.5, 0.4]
    result = stats.spearman(x, y, alternative="less")
    assert result.rho < -0.8 and result.p < 0.05 and not result.inconclusive
    assert "n=6" in result.describe()
    assert stats.spearman(x[:3], y[:3]).inconclusive
    assert stats.spearman([0.1] * 6, y).inconclusive
