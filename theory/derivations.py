"""All printed derivations of `resharpen derive`, gathered from the theory slices that have them."""
from __future__ import annotations


def derivations(latex: bool = False) -> list[tuple[str, str]]:
    """(title, statement) pairs of every slice, Set Complement first."""
    from resharpen.theory.collapse import attention
    from resharpen.theory.dynamics import speed
    from resharpen.theory.set_complement import formulas

    rows: list[tuple[str, str]] = []
    for module in (formulas, speed, attention):
        rows.extend(module.derivations(latex=latex))
    return rows
