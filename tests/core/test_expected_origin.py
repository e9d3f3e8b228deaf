"""Where every expected value comes from (issue 23, requirement 5).

Each claim declares ``expected_from`` (paper | derivation | statement | regression) and an
``origin`` sentence; a ``derivation`` names the functions computing the expected value
(``derived_by``). These tests hold the declarations to the code:

* the decorator refuses a missing or unknown origin (a ValueError naming the claim);
* every ``derived_by`` name resolves to a function of the package that the claim's check (or its
  claims module, for a value computed when the claim is registered) names;
* **no shared theory**: the declared derivation and the rest of the check (the measurement)
  reach no common function of ``resharpen.theory`` or ``resharpen.constructions``
  (:func:`resharpen.experiments.ledger.where.shared_functions`, static); a sharing that is not
  in the measured value is listed in ``NOT_IN_THE_MEASUREMENT`` with its diagnosis;
* the analysis can fail: a check whose measurement calls a function its derivation also calls
  is caught.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from resharpen.claims import all_claims
from resharpen.experiments.ledger import ORIGINS
from resharpen.experiments.ledger.declarations import declare
from resharpen.experiments.ledger.where import resolve, reached, shared_functions

_ATTN = "resharpen.theory.collapse.attention."
_FFN = "resharpen.theory.collapse.swiglu."
_SIDE_OUTPUT = ("experiments.collapse.stack._simulate_one records theory_attn / theory_mlp "
                "(Delta_attn, Delta_FFN at each layer's measured input) beside the measurement, "
                "for the CLI table and the detail; t_block and delta_mlp are t_sim of the torch "
                "states and never pass through them")
NOT_IN_THE_MEASUREMENT: dict[tuple[str, str], str] = {
    **{("collapse.stack_", _ATTN + f): _SIDE_OUTPUT
       for f in ("_numeric_twins", "delta_attn",
                 "derive_delta_attn", "f1", "f2", "harmonic", "rho_of_t")},
    **{(claim_id, _FFN + f): _SIDE_OUTPUT
       for claim_id in ("collapse.stack_", "collapse.swiglu_damping_in_stack")
       for f in ("_nodes", "delta_ffn", "silu", "swiglu_moment")},
    ("collapse.loss_floor", "resharpen.theory.collapse.rms.label_frequencies"):
        "p_freq is the input of the attainment part, CE(log p_freq) by rms.cross_entropy "
        "against L_freq = rms.frequency_loss; a wrong p_freq changes the cross-entropy "
        "(true labels) and the entropy differently, so the part still fails",
}
"""(claim id prefix, shared function) -> why the measured value does not pass through the
shared function although the measurement's code reaches it (a side output, an input)."""


def _comparators() -> dict:
    """Helpers that compute both sides and compare them, with the routes of their measurement:
    construction_errors predicts by constructions.set_complement.theory_margins_by_length (the
    formulas) and measures by building the model (constructions.set_complement.build) and
    running it (evaluate.per_position_metrics); dynamics.trained_checks.recursion_at_init
    predicts by theory.collapse.recursion and measures the recorded t_sim, with s from
    model_s."""
    from resharpen.constructions import set_complement as cons
    from resharpen.experiments.dynamics import trained_checks
    from resharpen.experiments.set_complement.evaluate import per_position_metrics
    from resharpen.experiments.set_complement.report import construction_errors

    return {construction_errors: [cons.build, per_position_metrics],
            # the recursion's t from s read off the weights (model_s) against the t_sim the
            # runs recorded (read by trained_readers.trained_runs, not through the comparator)
            trained_checks.recursion_at_init: [trained_checks.model_s]}


def _allowed(claim_id: str, name: str) -> bool:
    return any(claim_id.startswith(prefix) and name == shared
               for (prefix, shared) in NOT_IN_THE_MEASUREMENT)


CLAIMS = all_claims()


def test_every_claim_declares_its_origin():
    bad = [c.id for c in CLAIMS if c.expected_from not in ORIGINS or not c.origin.strip()]
    assert not bad, f"claims without a declared origin of their expected value: {bad}"
    assert not [c.id for c in CLAIMS if c.expected_from == "derivation" and not c.derived_by]


@pytest.mark.parametrize("kwargs, message", [
    ({}, "missing field.s. expected_from, origin"),
    ({"expected_from": "folklore", "origin": "x"}, "'folklore' is not one of"),
    ({"expected_from": "paper", "origin": " "}, "origin is empty"),
    ({"expected_from": "derivation", "origin": "x"}, "needs derived_by"),
    ({"expected_from": "derivation", "origin": "x", "derived_by": ["delta_attn"]}, "must be"),
])
def test_a_declaration_refuses_a_missing_or_unknown_origin(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        declare(__name__, "test.origin_probe", source="-", statement="-", kind="numeric",
                tolerance="-", cost="fast", quick="PASS", **kwargs)
    assert "test.origin_probe" in str(info.value)


def _declared(c) -> list:
    return [resolve(name) for name in c.derived_by]


@pytest.mark.parametrize("c", [c for c in CLAIMS if c.derived_by], ids=lambda c: c.id)
def test_a_declared_derivation_is_a_function_the_check_uses(c):
    check = inspect.unwrap(c.check)
    used = {id(f) for f in reached(check)}
    module_text = Path(inspect.getsourcefile(check)).read_text(encoding="utf-8")
    for name, obj in zip(c.derived_by, _declared(c)):
        assert callable(obj), f"{c.id}: derived_by {name!r} is not a function"
        named = name.rsplit(".", 1)[-1] in module_text  # e.g. a value computed at registration
        assert id(obj) in used or named, (
            f"{c.id}: derived_by {name!r} is neither reached by the check nor named in "
            f"{c.module}: the declaration does not describe the check")


@pytest.mark.parametrize("c", [c for c in CLAIMS if c.derived_by], ids=lambda c: c.id)
def test_expectation_and_measurement_share_no_theory_function(c):
    shared = [name for name in shared_functions(inspect.unwrap(c.check), _declared(c),
                                                _comparators())
              if not _allowed(c.id, name)]
    assert not shared, (
        f"{c.id}: its declared derivation {list(c.derived_by)} and its measurement both reach "
        f"{shared}: a mistake there moves both sides alike (circular). Give the expectation an "
        "independent route, or name the measurement's side output in NOT_IN_THE_MEASUREMENT "
        "with the reason")


def test_the_circularity_check_can_fail():
    """A check whose measurement calls f1 while its declared derivation (delta_attn) calls f1
    too is caught; the same check measured without f1 is not."""
    from resharpen.theory.collapse import attention as col

    def circular(profile):
        return col.delta_attn(1.0, 0.5, 8), col.f1(0.5, 8) / (1 + col.f2(0.5, 8))

    def independent(profile):
        return col.delta_attn(1.0, 0.5, 8), col.t_sim

    assert "resharpen.theory.collapse.attention.f1" in shared_functions(circular,
                                                                        [col.delta_attn])
    assert shared_functions(independent, [col.delta_attn]) == []


def test_a_measurement_that_calls_the_derivation_itself_shares_it():
    """Stopping at the declared derivation applies only to the check's own module: a measurement
    in another module that calls the derivation shares it."""
    from resharpen.theory.collapse import attention as col
    from resharpen.theory.collapse.recursion import recursion

    def check(profile):
        return recursion, col.delta_attn

    assert "resharpen.theory.collapse.attention.delta_attn" in shared_functions(
        lambda profile: recursion(8, 2, 0.5, 1.0, "post"), [col.delta_attn])
    assert shared_functions(check, [col.delta_attn]) != []  # recursion reaches delta_attn
