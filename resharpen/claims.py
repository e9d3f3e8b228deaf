"""The whole claim ledger: every slice's claim modules, imported explicitly.

Each id prefix is declared in one module (docs/architecture.md has the table)::

    sc.*         resharpen.experiments.set_complement.claims
    train.*      resharpen.experiments.set_complement.claims_train
    fit.*        resharpen.experiments.set_complement.claims_fit   (models trained to a fit)
    lang.*, othello.*   resharpen.experiments.languages.claims
    langtrain.*  resharpen.experiments.languages.claims_train
    dyn.*        resharpen.experiments.dynamics.claims
    collapse.*   resharpen.experiments.collapse.claims
"""
from __future__ import annotations

from resharpen.experiments.ledger import Claim, registered

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
    from resharpen.experiments.collapse import claims as _collapse  # noqa: F401
    from resharpen.experiments.dynamics import claims as _dynamics  # noqa: F401
    from resharpen.experiments.languages import claims as _languages  # noqa: F401
    from resharpen.experiments.languages import claims_train as _languages_train  # noqa: F401
    from resharpen.experiments.set_complement import claims as _sc  # noqa: F401
    from resharpen.experiments.set_complement import claims_fit as _sc_fit  # noqa: F401
    from resharpen.experiments.set_complement import claims_train as _sc_train  # noqa: F401

    return registered()
