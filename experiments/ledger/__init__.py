"""The claim ledger: every statement the package checks, with its source, its check and what is
expected of it. The slices declare their claims with it; it imports no slice and no torch.

One module per job:

=============  ==============================================================================
registry       ``Outcome``, ``Claim``, ``Record``; the ``@claim`` decorator (a claim's source,
               statement, kind, tolerance, and its declared ``expected_status``, ``cost`` and
               the origin of its expected value, ``expected_from``),
               the registry (``registered``) and ``select`` (``--only`` globs)
runner         ``run_claim`` and ``run_claims`` (in this process or a spawn process pool)
where          ``where``: the file and line of a claim, its check and its derivations;
               ``shared_functions``: what a declared derivation and the measurement share
report         ``to_json`` and ``to_markdown`` of the records
stats          paired tests, Welch, Spearman, TOST, Holm's correction, the three outcomes
baseline       the committed baseline of statuses (``verify --baseline``), and its check
               against the declared statuses
mutation       the mutation test (``verify --mutate``) and its committed record
=============  ==============================================================================

The whole ledger, every slice's claims, is :func:`resharpen.claims.all_claims`, one layer up.
The names below are the ones a slice or the front needs; ``stats``, ``baseline`` and
``mutation`` are imported as modules (``from resharpen.experiments.ledger import stats``).
"""
from __future__ import annotations

from resharpen.experiments.ledger.registry import (COSTS, EXPECTED_STATUSES, KINDS, ORIGINS,
                                                   STATUSES, Claim, Outcome, Record, claim,
                                                   registered, select)
from resharpen.experiments.ledger.report import to_json, to_markdown
from resharpen.experiments.ledger.runner import format_value, run_claim, run_claims
from resharpen.experiments.ledger.where import where

__all__ = ["COSTS", "EXPECTED_STATUSES", "KINDS", "ORIGINS", "STATUSES", "Claim", "Outcome", "Record",
           "claim", "format_value", "registered", "run_claim", "run_claims", "select", "to_json",
           "to_markdown", "where"]
