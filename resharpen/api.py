"""Functions of the public API that combine parts of the package."""
from __future__ import annotations

from resharpen.experiments.core.ledger import Record


def run_claim(claim_id: str, profile: str = "quick") -> Record:
    """Run one ledger claim by its exact id and return its record (status PASS, FAIL or ERROR,
    measured and expected values, detail). ValueError for an unknown id or profile."""
    from resharpen.claims import all_claims
    from resharpen.experiments.core import ledger

    claims = {c.id: c for c in all_claims()}
    if claim_id not in claims:
        raise ValueError(f"no claim {claim_id!r}; `resharpen verify --list` lists them")
    return ledger.run_claim(claims[claim_id], profile)
