"""The Set Complement theory claims can fail: a broken root of the post-K quadratic, and the
derivations that replaced circular checks (the 2/s law from the logits, the noise trace from
the covariance matrix)."""
from __future__ import annotations

import math

import pytest
import sympy as sp

from resharpen.claims import all_claims
from resharpen.experiments import ledger
from resharpen.theory.set_complement import formulas

CLAIMS = {c.id: c for c in all_claims()}


@pytest.mark.parametrize("broken", ["inf", "nan", "wrong_root"])
def test_post_K_needed_fails_when_the_root_is_broken(monkeypatch, broken):
    right = formulas.post_K_needed

    def root(vocab, length, target, *args, **kwargs):
        if broken == "inf":  # the root failed
            return float("inf")
        if broken == "nan":
            return float("nan")
        return 2.0 * right(vocab, length, target, *args, **kwargs)  # a wrong root

    monkeypatch.setattr(formulas, "post_K_needed", root)
    record = ledger.run_claim(CLAIMS["sc.readout.post_K_needed"], "quick")
    assert record.status == "FAIL", record


def test_post_K_needed_passes_with_the_real_root():
    assert ledger.run_claim(CLAIMS["sc.readout.post_K_needed"], "quick").status == "PASS"


def test_post_K_needed_expects_the_bisection_of_the_margins_definition():
    """The expected K comes from root finding on the margin computed from the readout's
    definition (numpy), not from the root's own plug-back: it agrees with the derived margin."""
    from resharpen.experiments.set_complement import post_readout

    k = post_readout.post_K_by_bisection(12, 6, 1.4958)
    assert k == pytest.approx(6.0006027, rel=1e-7)
    derived = formulas.readout_margins("post", 12, [6], k, 1.0, 1.0, 11)[0][0]
    assert derived == pytest.approx(1.4958, rel=1e-12)
    assert post_readout.post_K_by_bisection(12, 6, 5.0) == float("inf")


def test_post_limit_fails_when_the_derived_margin_is_wrong(monkeypatch):
    right = formulas.readout_margin_exprs

    def wrong(readout, centred=True):
        nq, q = right(readout, centred)
        return (nq * sp.Rational(1001, 1000), q) if readout == "post" else (nq, q)

    assert ledger.run_claim(CLAIMS["sc.readout.post_limit"], "quick").status == "PASS"
    monkeypatch.setattr(formulas, "readout_margin_exprs", wrong)
    assert ledger.run_claim(CLAIMS["sc.readout.post_limit"], "quick").status == "FAIL"


def test_balanced_ratios_come_from_the_logits():
    assert formulas.balanced_margin_ratios(5) == {2: 1, 3: sp.Rational(2, 3), 4: sp.Rational(1, 2)}
    with pytest.raises(ValueError, match="vocab"):
        formulas.balanced_margin_ratios(2)


def test_noise_trace_is_the_trace_of_the_covariance():
    assert formulas.gradient_noise_trace(5, 2) == sp.Rational(2, 3)  # 1 - 1/3
    assert formulas.gradient_noise_trace(5, 4) == 0  # one valid token: no noise
    assert math.isclose(float(formulas.gradient_noise_trace_fn(9, 4)), 0.8)
    with pytest.raises(ValueError, match="length"):
        formulas.gradient_noise_trace(4, 4)
