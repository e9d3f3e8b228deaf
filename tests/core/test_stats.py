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


def test_holm_counts_every_planned_test_a_missing_one_as_p_1():
    """A family of 5 planned tests is corrected over 5, not over the 2 that could be computed."""
    nan = float("nan")
    assert stats.holm([0.01, nan]) == pytest.approx([0.02, 1.0])
    assert stats.holm([0.01, 0.02, nan, nan, nan]) == pytest.approx([0.05, 0.08, 1, 1, 1])


def noisy(diff, n=8):
    noise = [0.01, -0.02, 0.015, -0.005, 0.02, -0.01, 0.005, -0.015][:n]
    return stats.paired([diff + e for e in noise], [0.0] * n, "less")


def test_three_outcomes_effect_shown_opposite_shown_neither():
    def decide(*results):
        tests = stats.family([("c", f"t{i}", r) for i, r in enumerate(results)])["c"]
        return stats.decision(tests)

    assert decide(noisy(-0.1))[0] == "PASS"
    assert decide(noisy(+0.1))[0] == "FAIL"  # the opposite effect, shown
    status, why = decide(noisy(0.0))  # no evidence either way: not a FAIL
    assert status == "INCONCLUSIVE" and "neither the effect nor the opposite" in why
    status, why = decide(noisy(-0.1), stats.paired([1, 2], [2, 3]))  # one test cannot decide
    assert status == "INCONCLUSIVE" and "2 < 5" in why
    assert decide(noisy(-0.1), noisy(+0.1))[0] == "FAIL"
    assert stats.decision([])[0] == "INCONCLUSIVE"
    r = noisy(+0.1)
    assert r.p_opposite == pytest.approx(1 - r.p) and "opposite p=" in r.describe()


def test_a_test_that_cannot_be_computed_still_costs_its_family():
    """Alone, p = 0.02 passes; with 4 planned tests that could not be made it does not (Holm
    over 5: 0.10), and the claim is INCONCLUSIVE, not FAIL."""
    weak = noisy(-0.012)
    assert 0.01 < weak.p < 0.05
    alone = stats.family([("c", "t", weak)])["c"]
    assert stats.decision(alone)[0] == "PASS"
    crowded = stats.family([("c", "t", weak)] + [("d", f"u{i}", stats.paired([1], [2]))
                                                 for i in range(4)])["c"]
    assert stats.decision(crowded)[0] == "INCONCLUSIVE"
    assert crowded[0].adjusted_p == pytest.approx(min(1, 5 * weak.p))


def test_tost_by_hand_and_its_three_outcomes():
    from scipy import stats as sps

    rng = np.random.default_rng(1)
    b = rng.normal(size=20)
    a = b + 0.01 * rng.normal(size=20)
    result = stats.equivalence(a, b, margin=0.05)
    d = a - b
    se = d.std(ddof=1) / math.sqrt(20)
    p_low = sps.t.sf((d.mean() + 0.05) / se, 19)
    p_high = sps.t.cdf((d.mean() - 0.05) / se, 19)
    assert result.p_low == pytest.approx(p_low, rel=1e-9)
    assert result.p_high == pytest.approx(p_high, rel=1e-9)
    assert result.p == pytest.approx(max(p_low, p_high)) and result.p < 0.05
    assert "TOST" in result.describe()

    def decide(result):
        return stats.decision(stats.family([("c", "t", result)])["c"])[0]

    assert decide(result) == "PASS"  # the absence (|diff| < 0.05) shown
    assert decide(stats.equivalence(a + 0.2, b, margin=0.05)) == "FAIL"  # beyond the margin
    wide = b + rng.normal(size=20)  # too noisy to show either
    assert decide(stats.equivalence(wide, b, margin=0.05)) == "INCONCLUSIVE"
    assert decide(stats.equivalence(a[:3], b[:3], margin=0.05)) == "INCONCLUSIVE"
    with pytest.raises(ValueError, match="low < high"):
        stats.equivalence(a, b, margin=(0.1, -0.1))


def _t4_sf(t: float) -> float:
    """P(T > t) for Student's t with 4 degrees of freedom, from its closed form (theta =
    arctan(t / 2): F = 1/2 + sin(theta) (1 + cos(theta)^2 / 2) / 2), not from scipy."""
    theta = math.atan(t / 2)
    return 0.5 - 0.5 * math.sin(theta) * (1 + math.cos(theta) ** 2 / 2)


def _decide_alone(result):
    return stats.decision(stats.family([("c", "t", result)])["c"])[0]


# Five fitted exponents each, spaced 0.01 or 0.05 apart, against the theory's 1 with margin 0.1:
# the spacing 0.01 gives sd 0.0158114 (sqrt(2.5e-4)), s.e. 0.00707107 and so t = 0.1 / s.e.
# = 14.1421 at a distance 0.1 from an end of the margin.
EQUIVALENT = [0.98, 0.99, 1.00, 1.01, 1.02]  # mean 1.00: inside, 14 s.e. from each end
OUTSIDE = [1.18, 1.19, 1.20, 1.21, 1.22]  # mean 1.20: 14 s.e. beyond the upper end
STRADDLING = [1.00, 1.05, 1.10, 1.15, 1.20]  # mean 1.10: exactly on the upper end


def test_tost_of_a_fitted_exponent_shows_equivalence_inside_the_margin():
    result = stats.equivalence_to(EQUIVALENT, 1.0, 0.1)
    p_end = _t4_sf(0.1 / 0.00707107)
    assert 7.2e-5 < p_end < 7.3e-5  # the closed form, by hand: 7.235e-5
    assert result.mean_diff == pytest.approx(0.0, abs=1e-12)
    assert result.se == pytest.approx(0.00707107, rel=1e-6)
    assert (result.low, result.high, result.df, result.n) == (-0.1, 0.1, 4, 5)
    assert result.p_low == pytest.approx(p_end, rel=1e-4)
    assert result.p_high == pytest.approx(p_end, rel=1e-4)
    assert result.p == pytest.approx(p_end, rel=1e-4) and result.p_opposite == pytest.approx(1.0)
    assert _decide_alone(result) == "PASS"


def test_tost_of_a_fitted_exponent_outside_the_margin_fails():
    result = stats.equivalence_to(OUTSIDE, 1.0, 0.1)
    assert result.mean_diff == pytest.approx(0.2, abs=1e-12)
    assert result.p_high == pytest.approx(1 - _t4_sf(0.1 / 0.00707107), rel=1e-6)
    assert result.p_opposite == pytest.approx(2 * _t4_sf(0.1 / 0.00707107), rel=1e-4)
    assert _decide_alone(result) == "FAIL"


def test_tost_of_a_fitted_exponent_straddling_the_margin_is_inconclusive():
    result = stats.equivalence_to(STRADDLING, 1.0, 0.1)
    assert result.mean_diff == pytest.approx(0.1, abs=1e-12)
    assert result.p_high == pytest.approx(0.5, abs=1e-9)  # t = 0 against the upper end
    assert result.p == pytest.approx(0.5, abs=1e-9)
    assert result.p_opposite == pytest.approx(1.0, abs=1e-9)  # 2 x 0.5 above, capped at 1
    assert _decide_alone(result) == "INCONCLUSIVE"
    assert stats.decision(stats.family([("c", "t", result)])["c"])[1].startswith(
        "t: neither the absence nor a difference beyond the margin")


def test_tost_of_a_fitted_exponent_needs_data_and_a_margin():
    assert _decide_alone(stats.equivalence_to(EQUIVALENT[:3], 1.0, 0.1)) == "INCONCLUSIVE"
    assert _decide_alone(stats.equivalence_to([1.0] * 5, 1.0, 0.1)) == "INCONCLUSIVE"  # s.e. 0
    for target, margin in ((1.0, 0.0), (1.0, -0.1), (math.nan, 0.1), (1.0, math.inf)):
        with pytest.raises(ValueError, match="margin > 0"):
            stats.equivalence_to(EQUIVALENT, target, margin)


def test_t_interval_against_the_t_table():
    mean, low, high = stats.t_interval(EQUIVALENT, 0.95)
    half = 2.776445 * 0.00707107  # t(0.975, 4 df) from the table, times the s.e.
    assert mean == pytest.approx(1.0) and low == pytest.approx(1.0 - half, rel=1e-6)
    assert high == pytest.approx(1.0 + half, rel=1e-6)
    mean, low, high = stats.t_interval(STRADDLING, 0.90)
    half = 2.131847 * 0.0790569 / math.sqrt(5)  # t(0.95, 4 df); sd sqrt(0.00625)
    assert (low, high) == (pytest.approx(1.1 - half, rel=1e-6), pytest.approx(1.1 + half, rel=1e-6))
    assert low < 1.1 < high  # the 90 % interval TOST at 0.05 needs inside, across the end
    assert math.isnan(stats.t_interval([1.0], 0.95)[1])
    with pytest.raises(ValueError, match="confidence level"):
        stats.t_interval(EQUIVALENT, 95)


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
    empty = stats.compare({}, {})  # e.g. a task none of whose averages reached the fit
    assert empty.test.startswith("paired") and empty.n == 0 and empty.inconclusive


def test_spearman_and_its_inconclusive_cases():
    x = [0.0, 0.1, 0.2, 0.3, 0.5, 0.5]
    y = [1.0, 0.9, 0.8, 0.85, 0.5, 0.4]
    result = stats.spearman(x, y, alternative="less")
    assert result.rho < -0.8 and result.p < 0.05 and not result.inconclusive
    assert "n=6" in result.describe()
    assert stats.spearman(x[:3], y[:3]).inconclusive
    assert stats.spearman([0.1] * 6, y).inconclusive
