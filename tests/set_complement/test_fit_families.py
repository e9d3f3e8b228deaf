"""The fit.* claims that read the same runs are decided as one Holm family (in_family): a test
that passes alone at p < 0.05 fails when its family makes the adjusted p too large; a member
without data adds no tests; pre's tests are reported, not deciding."""
from __future__ import annotations

import math

import pytest

from resharpen.experiments.ledger import stats
from resharpen.experiments.ledger import Outcome
from resharpen.experiments.set_complement import (claims_fit, fit_data, fit_families,
                                                  fit_noise_tests)


def part(*diffs, reported=()):
    """A Part whose tests are paired comparisons of arms that differ by ``diffs`` (n = 8)."""
    noise = [0.01, -0.02, 0.015, -0.005, 0.02, -0.01, 0.005, -0.015]

    def test(diff):
        return stats.paired([diff + e for e in noise], [0.0] * 8, "less")

    return fit_data.Part([(f"d={d}", test(d)) for d in diffs], "m", "e", ["note"], "run it",
                           [(f"pre d={d}", test(d)) for d in reported])


@pytest.fixture
def family(monkeypatch):
    members = {}
    monkeypatch.setattr(fit_families, "FAMILIES", {"toy": members})
    return members


def test_a_test_alone_passes_but_fails_in_a_family_of_many(family):
    family["a"] = lambda profile: part(-0.012)
    alone = fit_families.in_family(family["a"], "quick")
    assert alone.passed
    for i in range(30):  # as weak as a: Holm multiplies the smallest of 31 equal p by 31
        family[f"weak{i}"] = lambda profile: part(-0.012)
    crowded = fit_families.in_family(family["a"], "quick")
    assert not crowded.passed and "31 tests of 31 claims" in crowded.detail


def test_a_member_without_data_counts_its_planned_tests_as_p_1(family):
    missing = Outcome("no data", "x", passed=False, inconclusive="run the sweep")
    family["a"] = lambda profile: part(-1.0)
    family["b"] = lambda profile: missing
    assert fit_families.in_family(family["b"], "quick") is missing
    outcome = fit_families.in_family(family["a"], "quick")
    assert outcome.passed and "2 tests of 1 claims (a)" in outcome.detail
    assert "1 planned tests of b not computed (no data), counted as p = 1" in outcome.detail
    family["a"] = lambda profile: part(-0.012)  # p ~ 0.02: passes alone, not over 2 tests
    assert not fit_families.in_family(family["a"], "quick").passed


def test_an_opposite_effect_fails_and_no_effect_is_inconclusive(family):
    family["a"] = lambda profile: part(+1.0)
    outcome = fit_families.in_family(family["a"], "quick")
    assert not outcome.passed and not outcome.inconclusive  # FAIL: the opposite is shown
    family["a"] = lambda profile: part(0.0)
    outcome = fit_families.in_family(family["a"], "quick")
    assert not outcome.passed and "neither" in outcome.inconclusive and "run it" in outcome.inconclusive


def test_reported_tests_do_not_decide(family):
    family["a"] = lambda profile: part(-1.0, reported=(+1.0,))
    outcome = fit_families.in_family(family["a"], "quick")
    assert outcome.passed and "reported, not deciding: pre d=1.0" in outcome.detail


def test_every_fit_claim_belongs_to_exactly_one_family():
    from resharpen.claims import all_claims

    ids = {c.id for c in all_claims() if c.id.startswith("fit.")}
    members = [cid for family in fit_families.FAMILIES.values() for cid in family]
    assert sorted(members) == sorted(ids)


def test_the_noise_claims_are_inconclusive_when_an_arm_is_short_of_the_matched_fit(monkeypatch):
    row = {"k": 1, "schedule": "constant", "seed": 0, "vocab": 32, "level": 3e-2, "steps": 2000,
           "reached": False, "raw.id_invalid_mass": 0.05}
    monkeypatch.setattr(fit_noise_tests, "noise_rows", lambda profile: ([row], []))
    for make in (fit_noise_tests.noise_ema_gain_tests, fit_noise_tests.noise_bema_gain_tests,
                 fit_noise_tests.noise_bema_temperature_tests):
        outcome = make("full")
        assert isinstance(outcome, Outcome) and not outcome.passed
        assert "raise train.steps" in outcome.inconclusive and "0.05 > 0.03" in outcome.detail


def window_row(arm: str, seed: int, raw: float, ema: float, drift: float = 0.0) -> dict:
    history = [(step, raw) for step in (600, 700)] + [(step, raw * math.exp(drift))
                                                     for step in (800, 900)]
    row = {"arm": arm, "seed": seed, "vocab": 16, "steps": 1000, "burn_in": 500,
           "history": history, "raw": {"id_invalid_mass": raw, "ood_invalid_mass": 0.3}}
    for window in (500, 1000, 2000):
        row[f"ema{window}"] = {"id_invalid_mass": ema * (1 + 0.01 * seed),
                               "ood_invalid_mass": 0.3}
    return row


def test_the_long_window_claim_decides_and_checks_its_preconditions(monkeypatch):
    """EMA below raw in every arm and window: PASS; above: FAIL; an arm still drifting, floors
    3x apart, or no arm below half the uniform prediction's ID invalid mass (0.156 at v = 16,
    L = 4): INCONCLUSIVE (the preconditions, fixed with the protocol)."""
    def run(rows):
        monkeypatch.setattr(fit_noise_tests, "window_rows", lambda profile: rows)
        return claims_fit.check_noise_ema_long_window("quick")

    arms = ("adamw", "sgd")
    assert run([window_row(a, s, 0.05, 0.025) for a in arms for s in range(6)]).passed
    outcome = run([window_row(a, s, 0.05, 0.075) for a in arms for s in range(6)])
    assert not outcome.passed and not outcome.inconclusive
    drifting = [window_row(a, s, 0.05, 0.025, drift=-0.5 if a == "sgd" else 0.0)
                for a in arms for s in range(6)]
    assert "stationary" in run(drifting).inconclusive
    apart = [window_row(a, s, 0.02 if a == "adamw" else 0.06, 0.01) for a in arms for s in range(6)]
    assert "not matched" in run(apart).inconclusive
    unlearned = [window_row(a, s, 0.12, 0.06) for a in arms for s in range(6)]
    assert "no arm learned" in run(unlearned).inconclusive
    # one arm learned: it decides alone, the other's tests count as p = 1
    half = [window_row(a, s, 0.05 if a == "adamw" else 0.12, 0.075) for a in arms
            for s in range(6)]
    outcome = run(half)
    assert not outcome.passed and not outcome.inconclusive and "not learned" in outcome.detail
