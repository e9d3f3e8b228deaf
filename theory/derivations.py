"""All printed derivations of `resharpen derive`, gathered from the theory modules that have them."""
from __future__ import annotations

import importlib

MODULES = ("theory.set_complement", "theory.norm_dynamics", "theory.collapse")


def derivations(latex: bool = False) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        if hasattr(module, "derivations"):
            rows.extend(module.derivations(latex=latex))
    return rows
