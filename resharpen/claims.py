"""The whole claim ledger: every slice's claim modules, imported explicitly.

Each claims module declares its claims' metadata in the TOML file beside it
(:mod:`resharpen.experiments.ledger.declarations`) and holds their checks::

    sc.*         resharpen.experiments.set_complement.claims
    train.*      resharpen.experiments.set_complement.claims_train
    fit.*        resharpen.experiments.set_complement.claims_fit   (models trained to a fit)
    lang.*, othello.*   resharpen.experiments.languages.claims
    langtrain.*  resharpen.experiments.languages.claims_train
    dyn.*        resharpen.experiments.dynamics.claims
    collapse.*   resharpen.experiments.collapse.claims

:func:`claims_for` imports only the modules whose declarations match the patterns given, so
``resharpen verify --only ID`` pays for one module, not seven.
"""
from __future__ import annotations

import fnmatch
import importlib
from typing import Sequence

from resharpen.experiments.ledger import Claim, registered, select
from resharpen.experiments.ledger.declarations import CLAIMS_MODULES, all_declarations

PREFIX_MODULES = {
    "sc": "resharpen.experiments.set_complement.claims",
    "train": "resharpen.experiments.set_complement.claims_train",
    "fit": "resharpen.experiments.set_complement.claims_fit",
    "lang": "resharpen.experiments.languages.claims",
    "othello": "resharpen.experiments.languages.claims",
    "langtrain": "resharpen.experiments.languages.claims_train",
    "dyn": "resharpen.experiments.dynamics.claims",
    "collapse": "resharpen.experiments.collapse.claims",
}


def all_claims() -> list[Claim]:
    """Every registered claim of every slice, by id."""
    for module in CLAIMS_MODULES:
        importlib.import_module(module)
    return registered()


def claims_for(patterns: Sequence[str] | None) -> list[Claim]:
    """The claims whose ids match any glob of ``patterns`` (every claim when None or empty),
    importing only the modules that declare them (ValueError for a pattern matching no
    declared id, as :func:`resharpen.experiments.ledger.select`)."""
    if not patterns:
        return all_claims()
    declared = all_declarations()
    modules = {entry["module"] for claim_id, entry in declared.items()
               if any(fnmatch.fnmatchcase(claim_id, p) for p in patterns)}
    for module in sorted(modules):
        importlib.import_module(module)
    return select([c for c in registered() if c.module in modules], patterns)
