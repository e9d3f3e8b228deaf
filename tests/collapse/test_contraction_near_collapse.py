"""collapse.contraction_near_collapse: Theorem 3.6's c = a sqrt d / ||y|| against the measured
block gain where collapse holds only approximately. At exact collapse the gap is 0 (the chain
rule); it grows with the perturbation; a wrong gain formula makes the claim FAIL."""
import numpy as np
import pytest

from resharpen.experiments.collapse import contraction

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/collapse/conftest.py


@pytest.fixture(scope="module")
def rows():
    out = contraction.near_collapse_rows(n=8, d=8, depth=2, multiplier=4.0, mlp=None,
                                         betas=(0.0, 9.0), layers=(1,), epsilons=(0.0, 0.05, 1.0))
    return [{**r, "d": 8} for r in out]


def test_theorem_gain_is_a_sqrt_d_over_the_rms_row_norm():
    assert contraction.theorem_gain(0.5, np.full(4, 4.0), 16) == pytest.approx(0.5)
    assert contraction.theorem_gain(1.0, np.array([3.0, 4.0]), 2) == pytest.approx(
        np.sqrt(2) / np.sqrt(12.5))


def test_gap_is_zero_at_exact_collapse_and_grows_with_the_perturbation(rows):
    judged = contraction.judge_near_collapse(rows)
    gap = {(r["beta"], r["eps"]): r["gap"] for r in judged["rows"]}
    t_sim = {r["eps"]: r["t_sim"] for r in judged["rows"]}
    assert t_sim[0.0] == pytest.approx(1.0) and t_sim[1.0] < 0.9
    for beta in (0.0, 9.0):
        assert gap[(beta, 0.0)] < 1e-8  # the chain rule's identity
        assert gap[(beta, 0.05)] > 10 * gap[(beta, 0.0)]
    assert max(gap[(beta, 1.0)] for beta in (0.0, 9.0)) > max(gap[(b, 0.05)] for b in (0.0, 9.0))
    # both sides of the condition occur, and the real gradient's gain is below the largest one
    assert {r["c"] < 1 for r in judged["rows"]} == {True, False}
    assert all(r["real_gain"] <= r["gain"] * (1 + 1e-9) for r in judged["rows"])
    # only eps > 0 with t_sim >= 0.99 is judged
    assert {r["eps"] for r in judged["qualifying"]} == {0.05}


def test_the_claim_fails_with_a_wrong_gain_formula(rows, monkeypatch):
    monkeypatch.setattr(contraction, "near_collapse_data", lambda profile: tuple(rows))
    right = contraction.near_collapse_outcome("quick")
    assert right.passed and not right.inconclusive
    wrong = contraction.near_collapse_outcome(  # sqrt d / ||y|| without the sublayer's gain a
        "quick", gain_formula=lambda a, y_rows, d: np.sqrt(d) / np.sqrt(np.mean(y_rows ** 2)))
    assert not wrong.passed and not wrong.inconclusive
    shifted = contraction.near_collapse_outcome(  # 10% off
        "quick", gain_formula=lambda a, y_rows, d: 1.1 * contraction.theorem_gain(a, y_rows, d))
    assert not shifted.passed


def test_no_qualifying_block_is_inconclusive(rows, monkeypatch):
    far = tuple(r for r in rows if r["eps"] in (0.0, 1.0))
    monkeypatch.setattr(contraction, "near_collapse_data", lambda profile: far)
    out = contraction.near_collapse_outcome("quick")
    assert not out.passed and "smaller eps" in out.inconclusive
