"""The claims of the ledger: what a claim declares, the ``@claim`` decorator and the registry.

A *claim* is a registered, re-runnable statement: an id, a source (an arXiv id with a theorem or
section, or "reconstructed"), a one-line statement, a kind (``symbolic`` | ``numeric`` |
``experiment``), a tolerance stated in words, and a check. The check is a function of the profile
(``quick`` or ``full``) returning an :class:`Outcome` (measured, expected, passed, detail).

An *erratum* is a claim whose check reproduces a counterexample to a paper's statement; it passes
when the counterexample is reproduced.

Each claim also declares, once, what the ledger and the tests expect of it:

* ``expected_status``: its status in the quick profile, PASS (the default), FAIL (a known
  finding) or INCONCLUSIVE (the quick data cannot decide). The committed baseline
  (``experiments/configs/ledger/quick.json``, :mod:`.baseline`) and the README's table of claim
  families are checked against it (tests/core/test_baseline.py, test_docs_code_blocks.py), and
  tests/core/test_registry.py runs every claim and asserts it.
* ``expected_from``, ``origin`` and ``derived_by``: where the expected value comes from (see
  :data:`ORIGINS`): ``"paper"`` (a number printed in a paper; ``origin`` says which),
  ``"derivation"`` (an independent derivation: ``derived_by`` names the function(s) computing it,
  ``origin`` says why they share no code with the measurement), ``"statement"`` (a constant of the
  statement: a residual 0, a bound, an ordering, a sign; ``origin`` says which) or
  ``"regression"`` (a value recorded from this code; ``origin`` says when and how). A claim of
  another origin may name ``derived_by`` too (a second, computed side of its check).
  tests/core/test_expected_origin.py fails a claim whose ``derived_by`` functions and the rest of
  its check reach a common function of ``resharpen.theory`` or ``resharpen.constructions``.
* ``cost``: ``fast`` or ``slow``. A slow claim took more than about 3 s in the quick ledger
  (``make reproduce``: two workers on two cores) or trains or reads sweeps; its tests carry
  pytest's ``slow`` marker, and the default mutation test (test_mutation_record.py) leaves it out.

Claims are declared in one module per id prefix, in the experiment slice they belong to
(``resharpen.experiments.<slice>.claims*``); :func:`resharpen.claims.all_claims` imports them all.
This module imports no slice and no torch.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from resharpen.experiments.ledger.declarations import (COSTS, EXPECTED_STATUSES,  # noqa: F401
                                                       KINDS, ORIGINS)

STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")
"""PASS and FAIL: the measurement agrees / disagrees with the expectation at the tolerance fixed
beforehand (an experiment claim: its effect shown / the opposite effect shown, after Holm).
INCONCLUSIVE: the data cannot decide (too few runs for the test's power, runs that did not learn
the task, a tiny grid, a standard error that is not finite, or a test that shows neither
direction); the detail says why and which command would decide it. ERROR: the check itself
raised."""
class MissingData(LookupError):
    """Raised by a check, however deep, whose data is not there yet (a full-size grid that is
    only partly trained): the ledger records the claim INCONCLUSIVE with this message, which says
    how much data there is and names the command that makes the rest, and what the record's
    measured and expected columns show (e.g. "28 of 792 runs finished" against "all 792 runs
    finished"). Not for a bug: any other exception is an ERROR."""

    def __init__(self, message: str, measured: str = "no data", expected: str = "-"):
        super().__init__(message)
        self.measured, self.expected = measured, expected


@dataclass(frozen=True)
class Outcome:
    """What a check measured, what the theory expects, and whether they agree."""

    measured: object
    expected: object
    passed: bool
    detail: str = ""
    inconclusive: str = ""  # why the data cannot decide, and the command that would ("" = it can)


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    kind: str
    tolerance: str
    check: Callable[[str], Outcome] = field(repr=False, compare=False)
    erratum: bool = False
    module: str = ""
    expected_status: str = "PASS"  # its status in the quick profile (EXPECTED_STATUSES)
    cost: str = "fast"  # COSTS
    expected_from: str = ""  # ORIGINS
    origin: str = ""  # which paper number / derivation and why independent / constant / record
    derived_by: tuple[str, ...] = ()  # "module.qualname" of the functions giving the expectation
    expected_full: str = ""  # its status at full size ("" = not yet decided at full size)
    figures: tuple[str, ...] = ()  # the figures (paper_figs scripts) that show it


@dataclass(frozen=True)
class Record:
    """One row of the ledger: the claim, its outcome and how long the check took."""

    id: str
    source: str
    statement: str
    kind: str
    tolerance: str
    erratum: bool
    measured: str
    expected: str
    status: str  # one of STATUSES
    detail: str
    seconds: float


_REGISTRY: dict[str, Claim] = {}


def claim(id: str) -> Callable:
    """Decorator registering ``check(profile) -> Outcome`` as the check of claim ``id``, whose
    metadata is declared once in the TOML file beside the check's module
    (:mod:`.declarations`): source, statement, kind, tolerance, cost, the expected quick and
    full statuses, where the expected value comes from and the figures that show it. A claim
    without a declaration, or registered from two modules, is a ValueError naming it."""
    def register(check: Callable[[str], Outcome]) -> Callable[[str], Outcome]:
        from resharpen.experiments.ledger.declarations import declaration

        module = check.__module__
        if id in _REGISTRY and _REGISTRY[id].module != module:
            raise ValueError(f"claim id {id!r} is registered twice "
                             f"({_REGISTRY[id].module} and {module})")
        entry = declaration(module, id)
        if entry is None:
            raise ValueError(f"claim {id!r} has no declaration (in {module}'s TOML file, or "
                             "declared in code with ledger.declarations.declare)")
        _REGISTRY[id] = Claim(id, entry["source"], entry["statement"], entry["kind"],
                              entry["tolerance"], check, entry.get("erratum", False), module,
                              entry["quick"], entry["cost"], entry["expected_from"],
                              entry["origin"], tuple(entry.get("derived_by", ())),
                              entry.get("full", ""), tuple(entry.get("figures", ())))
        return check

    return register


def registered() -> list[Claim]:
    """Every claim registered so far, by id. The claim modules register on import; the whole
    ledger is :func:`resharpen.claims.all_claims`, which imports every slice's claim modules."""
    return sorted(_REGISTRY.values(), key=lambda c: c.id)


def select(claims: Iterable[Claim], patterns: Sequence[str] | None) -> list[Claim]:
    """Claims whose id matches any glob in ``patterns`` (all when None or empty).

    A pattern matching no claim is an error: a typo must not silently verify nothing."""
    claims = list(claims)
    if not patterns:
        return claims
    chosen = []
    for pattern in patterns:
        hits = [c for c in claims if fnmatch.fnmatchcase(c.id, pattern)]
        if not hits:
            from resharpen.experiments.common.cli_args import did_you_mean

            hint = did_you_mean(pattern, (c.id for c in claims))
            raise ValueError(f"claim pattern {pattern!r} matches no claim{hint}; "
                             f"`resharpen verify --list` lists the ids")
        chosen.extend(c for c in hits if c not in chosen)
    return sorted(chosen, key=lambda c: c.id)
