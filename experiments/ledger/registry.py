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

KINDS = ("symbolic", "numeric", "experiment")
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")
"""PASS and FAIL: the measurement agrees / disagrees with the expectation at the tolerance fixed
beforehand (an experiment claim: its effect shown / the opposite effect shown, after Holm).
INCONCLUSIVE: the data cannot decide (too few runs for the test's power, runs that did not learn
the task, a tiny grid, a standard error that is not finite, or a test that shows neither
direction); the detail says why and which command would decide it. ERROR: the check itself
raised."""
EXPECTED_STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")
"""The statuses a claim may declare as expected (a check that raises is never expected)."""
ORIGINS = ("paper", "derivation", "statement", "regression")
"""Where a claim's expected value comes from (``@claim(expected_from=...)``): a number printed
in a paper; an independent derivation (``derived_by``: the functions computing it, sharing no
theory or construction function with the measurement); a constant of the statement (0 for an
identity's residual, a bound, an ordering, a sign); a value recorded from this code."""
COSTS = ("fast", "slow")
"""A claim's cost class: ``slow`` claims run in the ``slow`` test suite only."""


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


def claim(id: str, *, source: str, statement: str, kind: str, tolerance: str, cost: str,
          erratum: bool = False, expected_status: str = "PASS", expected_from: str | None = None,
          origin: str = "", derived_by: str | Sequence[str] = ()) -> Callable:
    """Decorator registering ``check(profile) -> Outcome`` as the check of a claim.

    ``cost`` (``fast`` | ``slow``) and ``expected_status`` (its quick-profile status, ``PASS``
    unless a known finding is FAIL or the quick data are INCONCLUSIVE) are declared here once;
    the baseline, the README's table and the tests' selections are checked against them.
    ``expected_from`` (one of :data:`ORIGINS`) with ``origin`` (a non-empty sentence) says where
    the expected value comes from; ``derived_by`` ("module.qualname", one or several) names the
    functions of an independent derivation, required when ``expected_from == "derivation"``.
    A missing or unknown origin is a ValueError naming the claim."""
    if kind not in KINDS:
        raise ValueError(f"claim kind {kind!r} is not one of {KINDS}")
    if cost not in COSTS:
        raise ValueError(f"claim {id!r}: cost {cost!r} is not one of {COSTS}")
    if expected_status not in EXPECTED_STATUSES:
        raise ValueError(f"claim {id!r}: expected_status {expected_status!r} is not one of "
                         f"{EXPECTED_STATUSES}")
    derived_by = (derived_by,) if isinstance(derived_by, str) else tuple(derived_by)
    validate_origin(id, expected_from, origin, derived_by)

    def register(check: Callable[[str], Outcome]) -> Callable[[str], Outcome]:
        if id in _REGISTRY and _REGISTRY[id].module != check.__module__:
            raise ValueError(f"claim id {id!r} is registered twice "
                             f"({_REGISTRY[id].module} and {check.__module__})")
        _REGISTRY[id] = Claim(id, source, statement, kind, tolerance, check, erratum,
                              check.__module__, expected_status, cost, expected_from, origin,
                              derived_by)
        return check

    return register


def validate_origin(id: str, expected_from: str | None, origin: str,
                    derived_by: tuple[str, ...]) -> None:
    """ValueError naming the claim unless ``expected_from`` is one of :data:`ORIGINS`, ``origin``
    says something, ``derived_by`` holds dotted names, and a ``"derivation"`` names at least one
    derivation function."""
    if expected_from is None:
        raise ValueError(f"claim {id!r}: expected_from is missing; say where its expected value "
                         f"comes from, one of {ORIGINS}")
    if expected_from not in ORIGINS:
        raise ValueError(f"claim {id!r}: expected_from {expected_from!r} is not one of {ORIGINS}")
    if not isinstance(origin, str) or not origin.strip():
        raise ValueError(f"claim {id!r}: origin is missing; say which paper number, which "
                         "derivation (and why it shares no code with the measurement), which "
                         "constant of the statement or which recorded value")
    if any(not isinstance(n, str) or not n.startswith("resharpen.") or "." not in n[10:]
           for n in derived_by):
        raise ValueError(f"claim {id!r}: derived_by {derived_by!r} must be "
                         "'resharpen.<module>.<qualname>' names")
    if expected_from == "derivation" and not derived_by:
        raise ValueError(f"claim {id!r}: expected_from 'derivation' needs derived_by, the "
                         "function(s) that compute the expected value")


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
