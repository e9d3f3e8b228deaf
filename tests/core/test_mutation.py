"""The mutation test of the ledger (experiments/ledger/mutation.py, its mutants in mutants.py, the
values they move in perturbation.py): a circular check survives a mutation of its derivation, an
honest one is killed, and the perturbation and its patching do what they say."""
from __future__ import annotations

import dataclasses
import sys
import textwrap
import types
from collections import namedtuple

import numpy as np
import pytest
import sympy as sp
import torch

from resharpen.cli import main
from resharpen.experiments.ledger import Claim, mutants, mutation, perturbation

FORMULAS = "resharpen.toy_mutation_formulas"
CHECKS = "resharpen.toy_mutation_checks"
FORMULAS_SOURCE = """
import math

import numpy as np

def circle_area(r):
    return math.pi * r * r

def area_by_quadrature(r, n=4000):
    h = 2 * r / n
    return sum(2 * math.sqrt(max(r * r - (-r + (i + 0.5) * h) ** 2, 0.0)) * h for i in range(n))

def label(r):
    return f"circle of radius {r}"

def power(base, exponent):
    return base ** exponent

def double(x):
    return 2 * x

def shifted(x):
    return x + 1.0

def scaled(n, x):
    return n * x

def line():
    return np.array([0.0, 1.0, 2.0]), np.array([0.0, 3.0, 6.0])
"""
CHECKS_SOURCE = f"""
import math

from {FORMULAS} import (area_by_quadrature, circle_area, double, label, line, power, scaled,
                        shifted)
from resharpen.experiments.ledger import Outcome

def check_circular(profile):
    measured, expected = circle_area(2.0), circle_area(2.0)  # the same function twice
    return Outcome(measured, expected, abs(measured - expected) < 1e-9)

def check_honest(profile):
    measured, expected = area_by_quadrature(2.0), circle_area(2.0)  # two routes
    return Outcome(measured, expected, abs(measured / expected - 1) < 1e-4)

def check_unmutable(profile):
    return Outcome(label(2.0), "circle ...", label(2.0).startswith("circle"))

def check_inconclusive_when_mutated(profile):
    value = circle_area(1.0)
    return Outcome(value, "pi", True, inconclusive="" if value == math.pi else "mutated")

def check_one_sided(profile):  # a loose one-sided bound: only the upward move can break it
    return Outcome(circle_area(1.0), "<= 3.2", circle_area(1.0) <= 3.2)

def check_fails_below(profile):  # FAILs unmutated (pi < 3.2); an upward move makes it PASS
    return Outcome(circle_area(1.0), "> 3.2", circle_area(1.0) > 3.2)

def check_structure(profile):  # killed by a swap, a constant and a dropped term
    ok = power(2.0, 3.0) == 8.0 and double(1.0) + double(2.0) == 6.0 and shifted(1.0) == 2.0
    return Outcome(ok, True, ok)

def check_wide(profile):  # a tolerance wider than a 1e-3 move, narrower than a 0.1 move
    return Outcome(circle_area(1.0), "pi +- 0.05", abs(circle_area(1.0) - math.pi) < 0.05)

def check_slope(profile):  # a ratio of differences within one value: a change of units
    t, r = line()
    slope = (r[-1] - r[0]) / (t[-1] - t[0])
    return Outcome(slope, 3.0, abs(slope - 3.0) < 1e-9)

def check_kinds(profile):  # swap of an int and a float would be a type error, not a value
    return Outcome(scaled(2, 1.5), 3.0, scaled(2, 1.5) == 3.0)
"""


def _module(name: str, source: str) -> types.ModuleType:
    """A module from ``source``, its text in the line cache (so that ``inspect.getsource``, which
    the ``drop`` mutation reads, finds it)."""
    import linecache

    module = types.ModuleType(name)
    sys.modules[name] = module
    text = textwrap.dedent(source)
    linecache.cache[f"<{name}>"] = (len(text), None, text.splitlines(True), f"<{name}>")
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return module


@pytest.fixture
def toy():
    formulas = _module(FORMULAS, FORMULAS_SOURCE)
    checks = _module(CHECKS, CHECKS_SOURCE)

    def claim(name: str, erratum: bool = False) -> Claim:
        return Claim(f"toy.{name}", "toy", "toy", "numeric", "toy",
                     getattr(checks, f"check_{name}"), erratum, CHECKS)

    yield types.SimpleNamespace(formulas=formulas, checks=checks, claim=claim)
    del sys.modules[FORMULAS], sys.modules[CHECKS]


@pytest.mark.parametrize("isolate", [False, True])
def test_a_circular_claim_survives_and_an_honest_one_is_killed(toy, isolate):
    circular = mutation.mutate_claim(toy.claim("circular"), isolate=isolate)
    assert circular.baseline == "PASS" and circular.verdict == "survives", circular
    assert {m.target for m in circular.mutations} == {f"{FORMULAS}.circle_area"}
    assert [m.operator for m in circular.mutations] == list(mutants.OPERATORS)
    # up and down perturb both calls; one argument: no swap; no + or -: no drop; the same
    # argument twice: the constant equals the original (an equivalent mutant); the ladder runs
    # on the survivor: the large steps perturb both calls, first and last leave a lone number
    assert [m.perturbed for m in circular.mutations] == [2, 2, 0, 0, 0, 2, 2, 0, 0]
    assert [(p.target, p.verdict) for p in circular.pairs] == [(f"{FORMULAS}.circle_area",
                                                                "survives")]

    honest = mutation.mutate_claim(toy.claim("honest"), isolate=isolate)
    assert honest.verdict == "killed", honest
    assert {p.target: p.verdict for p in honest.pairs} == {
        f"{FORMULAS}.area_by_quadrature": "killed", f"{FORMULAS}.circle_area": "killed"}
    quadrature = {p.target: p.statuses for p in honest.pairs}[f"{FORMULAS}.area_by_quadrature"]
    assert quadrature == {"up": "FAIL", "down": "FAIL", "swap": "-", "drop": "FAIL",
                          "const": "-", **{op: "not run" for op in mutants.LADDER}}, quadrature


def test_both_directions_and_every_status(toy):
    """A loose one-sided bound survives the downward move and dies at the upward one; a claim
    that FAILs unmutated is tested too, and a mutation that makes it PASS kills it."""
    one_sided = mutation.mutate_claim(toy.claim("one_sided"), step=0.1, isolate=False)
    assert one_sided.pairs[0].statuses["up"] == "FAIL"
    assert one_sided.pairs[0].statuses["down"] == "PASS"
    assert one_sided.verdict == "killed"
    fails = mutation.mutate_claim(toy.claim("fails_below"), step=0.1, isolate=False)
    assert fails.baseline == "FAIL" and fails.verdict == "killed", fails
    assert fails.pairs[0].statuses["up"] == "PASS" and fails.pairs[0].statuses["down"] == "FAIL"
    assert "unmutated check is FAIL" in fails.note


def test_structural_mutations_swap_drop_and_return_a_constant(toy):
    result = mutation.mutate_claim(toy.claim("structure"), isolate=False,
                                   operators=("swap", "drop", "const"))
    statuses = {p.target.rsplit(".", 1)[-1]: p.statuses for p in result.pairs}
    assert statuses["power"] == {"swap": "FAIL", "drop": "-", "const": "-"}, statuses
    assert statuses["double"] == {"swap": "-", "drop": "-", "const": "FAIL"}, statuses
    assert statuses["shifted"] == {"swap": "-", "drop": "FAIL", "const": "-"}, statuses
    dropped = [m for m in result.mutations if m.operator == "drop" and m.perturbed]
    assert [m.note for m in dropped] == ["dropped + 1.0"]
    with pytest.raises(ValueError, match="unknown mutation operators"):
        mutation.mutate_claim(toy.claim("structure"), isolate=False, operators=("flip",))


def test_the_ladder_kills_a_wide_tolerance_and_a_change_of_units(toy):
    """A tolerance wider than 1e-3 survives up and down and dies at up_large; a slope (a ratio of
    differences within one returned value) survives every affine move of the whole value and
    dies when one field moves alone (first: the times, last: the radii)."""
    wide = mutation.mutate_claim(toy.claim("wide"), isolate=False)
    statuses = wide.pairs[0].statuses
    assert statuses["up"] == statuses["down"] == "PASS" and statuses["up_large"] == "FAIL"
    assert statuses["down_large"] == "not run" and wide.pairs[0].verdict == "killed", statuses
    slope = mutation.mutate_claim(toy.claim("slope"), isolate=False)
    statuses = slope.pairs[0].statuses
    assert [statuses[op] for op in ("up", "down", "up_large", "down_large", "first")] == \
        ["PASS", "PASS", "PASS", "PASS", "FAIL"], statuses
    assert statuses["last"] == "not run" and slope.verdict == "killed"


def test_swap_exchanges_only_arguments_of_one_kind(toy):
    """scaled(2, 1.5): an int and a float are not swapped (a type error, not a wrong value), so
    the swap perturbs nothing; power(2.0, 3.0) is swapped."""
    result = mutation.mutate_claim(toy.claim("kinds"), isolate=False, operators=("swap",))
    assert [m.perturbed for m in result.mutations] == [0] and result.verdict == "untested"
    assert mutants.of_one_kind(np.zeros((2, 3)), np.ones((2, 3)))
    assert not mutants.of_one_kind(np.zeros((2, 3)), np.ones((3, 2)))
    assert not mutants.of_one_kind(2, 2.0) and mutants.of_one_kind(2, 3)


def test_perturb_one_moves_one_leaf():
    out, changed = perturbation.perturb_one(np.array([1.0, 2.0, 3.0]), 0.1, "last")
    assert changed and out.tolist() == [1.0, 2.0, pytest.approx(3.4)]
    out, _ = perturbation.perturb_one(np.array([1.0, 2.0, 3.0]), 0.1, "first")
    assert out.tolist() == [pytest.approx(1.2), 2.0, 3.0]
    out, _ = perturbation.perturb_one((np.array([1.0, 2.0]), 3.0, "x"), 0.1, "first")
    assert out[0].tolist() == [pytest.approx(1.2), pytest.approx(2.3)] and out[1] == 3.0
    out, _ = perturbation.perturb_one((np.array([1.0, 2.0]), 3.0, "x"), 0.1, "last")
    assert out[0].tolist() == [1.0, 2.0] and out[1] == pytest.approx(3.4)
    assert perturbation.perturb_one(2.0, 0.1) == (2.0, False)  # a lone number: up's business

    @dataclasses.dataclass(frozen=True)
    class Solution:
        t: np.ndarray
        r: np.ndarray
        steps: int  # beside floats: structure, stays

    out, _ = perturbation.perturb_one(Solution(np.ones(2), np.ones(2), 3), 0.1, "last")
    assert out.t.tolist() == [1.0, 1.0] and out.r.tolist() == [pytest.approx(1.2)] * 2 \
        and out.steps == 3
    assert perturbation.perturb_one(torch.tensor([0, 3, 4]), 0.1, "last")[0].tolist() == [0, 3, 5]
    assert perturbation.perturb_one({"a": 1.0, "b": 2.0}, 0.1, "last")[0] == {
        "a": 1.0, "b": pytest.approx(2.3)}
    with pytest.raises(ValueError, match="first"):
        perturbation.perturb_one(1.0, 0.1, "middle")


def test_an_operator_that_cannot_apply_is_not_run(toy):
    """``swap`` needs two positional arguments and ``drop`` a + or - term: decided before any
    check runs, recorded as "-" with nothing perturbed."""
    targets = {t.attribute: t for t in mutants.targets(toy.claim("structure"))}
    assert mutants.applies(targets["power"], "swap") and \
        not mutants.applies(targets["power"], "drop")
    assert not mutants.applies(targets["double"], "swap")
    assert mutants.applies(targets["shifted"], "drop")
    assert all(mutants.applies(t, op) for t in targets.values() for op in ("up", "down",
                                                                            "const"))
    result = mutation.mutate_claim(toy.claim("structure"), isolate=False,
                                   operators=("swap", "drop"))
    skipped = [m for m in result.mutations if m.detail == "operator does not apply"]
    assert {(m.target.rsplit(".", 1)[-1], m.operator) for m in skipped} == {
        ("power", "drop"), ("double", "swap"), ("double", "drop"), ("shifted", "swap")}
    assert all(m.perturbed == 0 and m.seconds == 0.0 for m in skipped)


def test_what_is_skipped_is_the_declared_cost_class(toy):
    def never(profile):
        raise AssertionError("a skipped claim is not run")

    slow = Claim("toy.slow", "toy", "toy", "numeric", "toy", never, False, CHECKS, cost="slow")
    [result] = mutation.run_mutations([slow], "quick")
    assert result.verdict == "skipped" and result.note == "declared cost slow"
    [ran] = mutation.run_mutations([toy.claim("honest")], "quick", costs=("fast", "slow"),
                                   operators=("up",))
    assert ran.verdict == "killed"


def test_a_claim_with_nothing_to_perturb_is_untested(toy):
    result = mutation.mutate_claim(toy.claim("unmutable"), isolate=False)
    assert result.verdict == "untested" and result.tried == 0 and "label" in result.note
    table = mutation.format_table([result])
    assert table.splitlines()[-1].startswith("0 of 1 claims killed, 0 survive, 1 untested; "
                                             "(claim, function) pairs: 0 of 1 killed")


def test_an_erratum_is_killed_by_any_status_but_pass(toy):
    """INCONCLUSIVE under a mutation does not kill a claim (only FAIL or ERROR do), but it
    kills an erratum, which passes only when its counterexample is reproduced."""
    assert mutation.mutate_claim(toy.claim("inconclusive_when_mutated"),
                                 isolate=False).verdict == "survives"
    assert mutation.mutate_claim(toy.claim("inconclusive_when_mutated", erratum=True),
                                 isolate=False).verdict == "killed"


def test_mutation_patches_every_binding_and_restores_them(toy):
    original = toy.formulas.circle_area
    [target] = [t for t in mutants.targets(toy.claim("honest")) if t.attribute == "circle_area"]
    with mutants.mutated(target) as counter:
        assert toy.formulas.circle_area is not original
        assert toy.checks.circle_area is not original  # bound by `from ... import`
        assert toy.checks.circle_area(1.0) == pytest.approx(np.pi * 1.001 + 0.001)
        assert counter.perturbed == 1
    assert toy.formulas.circle_area is original and toy.checks.circle_area is original
    with mutants.mutated(target, operator="down"):
        assert toy.checks.circle_area(1.0) == pytest.approx(np.pi * 0.999 - 0.001)
    assert toy.checks.circle_area is original


def test_perturb_numbers_arrays_tensors_and_sympy():
    assert perturbation.perturb(2.0) == (pytest.approx(2.0 * 1.001 + 0.001), True)
    assert perturbation.perturb(2.0, step=0.1) == (pytest.approx(2.0 * 1.1 + 0.1), True)
    assert perturbation.perturb(3) == (4, True) and perturbation.perturb(True) == (False, True)
    assert perturbation.perturb(2.0, step=-0.1) == (pytest.approx(2.0 * 0.9 - 0.1), True)
    assert perturbation.perturb(3, step=-1e-3) == (2, True)
    assert perturbation.perturb(np.array([1, 2]), step=-1e-3)[0].tolist() == [0, 1]
    a = np.array([1.0, 2.0], dtype=np.float32)
    out, changed = perturbation.perturb(a)
    assert changed and out.dtype == np.float32 and np.allclose(out, a * 1.001 + 0.001)
    assert a[0] == 1.0  # the input is not modified
    assert perturbation.perturb(np.array([1, 2]))[0].tolist() == [2, 3]
    t = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    out, _ = perturbation.perturb(t)
    assert out.dtype == torch.float64 and out.requires_grad \
        and float(out.detach()) == pytest.approx(1.002)
    assert perturbation.perturb(torch.tensor([True, False]))[0].tolist() == [False, True]
    x = sp.Symbol("x")
    out, _ = perturbation.perturb(x ** 2)
    assert sp.simplify(out - (x ** 2 * sp.Rational(1001, 1000) + sp.Rational(1, 1000))) == 0
    assert perturbation.perturb(sp.true) == (sp.false, True)


def test_perturb_containers_and_objects():
    Pair = namedtuple("Pair", "name value")
    out, changed = perturbation.perturb({"a": [1.0, "text"], "b": Pair("n", 2)})
    # beside a float, an integer is structure (a size, an index): it stays
    assert changed and out == {"a": [pytest.approx(1.002), "text"], "b": Pair("n", 2)}
    assert perturbation.perturb({"b": Pair("n", 2), "c": (True, 4)}) == (
        {"b": Pair("n", 3), "c": (False, 5)}, True)  # no float anywhere: integers move
    tokens, metrics = perturbation.perturb((torch.tensor([0, 3]), {"m": np.array([0.5])}))[0]
    assert tokens.tolist() == [0, 3] and metrics["m"].tolist() == [pytest.approx(0.5015)]
    assert perturbation.perturb("text") == ("text", False)
    assert perturbation.perturb(None) == (None, False)
    assert perturbation.perturb(("a", None)) == (("a", None), False)

    @dataclasses.dataclass(frozen=True)
    class Config:
        name: str
        scale: float

    assert perturbation.perturb(Config("c", 1.0))[0] == Config("c", pytest.approx(1.002))

    @dataclasses.dataclass(frozen=True)
    class Built:  # a construction: a vocabulary size beside its float parameters
        vocab: int
        lam: float

    assert perturbation.perturb(Built(4, 8.0), step=-1e-3)[0] == Built(4, pytest.approx(
        8.0 * 0.999 - 0.001))
    layer = torch.nn.Linear(2, 2)
    before = layer.weight.detach().clone()
    copy, changed = perturbation.perturb(layer)
    assert changed and copy is not layer and torch.equal(layer.weight, before)
    assert torch.allclose(copy.weight, before * 1.001 + 0.001)


def test_targets_include_the_methods_of_a_derivation_class():
    from resharpen.claims import all_claims

    [c] = [c for c in all_claims() if c.id == "sc.model.decomposition"]
    names = [t.name for t in mutants.targets(c)]
    assert "resharpen.experiments.model.transformer.Transformer.forward" in names
    assert "resharpen.experiments.tasks.set_complement.sample_inputs" in names
    [postnorm] = [c for c in all_claims() if c.id == "fit.placements.ood_at_every_rung"]
    names = [t.name for t in mutants.targets(postnorm)]
    assert names and not [n for n in names if n.startswith(mutants.NOT_SUBJECTS)], names


def test_verify_mutate_prints_the_table_and_summary(capsys, tmp_path):
    code = main(["verify", "--mutate", "--only", "lang.dyck1.counts", "--only",
                 "dyn.matrix_lemma", "--json", str(tmp_path / "m.json")])
    out, _ = capsys.readouterr()
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:4] == ["id", "tried", "killed", "by"]
    assert any(line.startswith("lang.dyck1.counts") and "killed" in line for line in lines)
    assert any(line.startswith("dyn.matrix_lemma") and "untested" in line for line in lines)
    assert lines[-1].startswith("1 of 2 claims killed, 0 survive, 1 untested"), lines[-1]
    import json

    data = json.loads((tmp_path / "m.json").read_text())
    assert data["summary"]["killed"] == 1 and len(data["claims"]) == 2


def test_verify_mutate_rejects_the_ledger_outputs(capsys):
    assert main(["verify", "--mutate", "--markdown", "x.md"]) == 2
    assert "--mutate writes only --json" in capsys.readouterr().err


@pytest.mark.slow
def test_independent_checks_of_the_ledger_are_killed():
    """A handful of real claims whose checks compare two routes are killed by a mutation."""
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger import select

    chosen = select(all_claims(), ["lang.dyck2.oracle_agreement", "othello.perft",
                                   "collapse.rms_jacobian_formula", "sc.model.decomposition",
                                   "train.bema.limits"])
    results = mutation.run_mutations(chosen, "quick", costs=("fast", "slow"))
    assert [r.verdict for r in results] == ["killed"] * len(chosen), \
        mutation.format_table(results)
