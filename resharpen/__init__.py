"""resharpen: symbolic and numeric verification of how normalization placement shapes attention.

The public API (imported on first use, so ``import resharpen`` is instant)::

    import resharpen as rs
    built = rs.build("tight", vocab=16, norm="attn_out", lam=32.0)   # explicit weights
    rows = rs.evaluate_lengths(built.model, vocab=16)                # exact metrics per length
    nonquery, query = rs.theory_margins(built, tokens)               # the theory's margins
    run = rs.train("experiments/configs/set_complement/base.toml")    # train, save to out/runs/base
    run = rs.load_run("out/runs/base")                                # a finished run, read back
    model = run.model("raw")                                          # ... and its weights
    report = rs.compare_run("out/runs/base")                          # trained vs the lemma's form
    record = rs.run_claim("sc.theorem.two_over_s")                    # one ledger claim

docs/api.md documents each name (generated from the docstrings). The packages: ``resharpen.theory`` (sympy, no torch), ``resharpen.constructions`` (explicit
weights), ``resharpen.experiments`` (one sub-package per slice over a shared core) and
``resharpen.paper_figs``; docs/architecture.md walks them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> (module, attribute)
_API = {
    "build": ("resharpen.constructions.set_complement", "build"),
    "load_construction": ("resharpen.constructions.set_complement", "load"),
    "save_construction": ("resharpen.constructions.set_complement", "save"),
    "theory_margins": ("resharpen.constructions.set_complement", "theory_margins"),
    "Construction": ("resharpen.constructions.set_complement", "Construction"),
    "evaluate_lengths": ("resharpen.experiments.set_complement.evaluate", "evaluate_lengths"),
    "load_run": ("resharpen.experiments.core.runs", "load_run"),
    "Run": ("resharpen.experiments.core.runs", "Run"),
    "compare_run": ("resharpen.experiments.set_complement.compare", "compare_run"),
    "fit_lemma": ("resharpen.experiments.set_complement.compare", "fit_lemma"),
    "run_claim": ("resharpen.api", "run_claim"),
    "train": ("resharpen.api", "train"),
    "all_claims": ("resharpen.claims", "all_claims"),
}

__all__ = sorted(_API)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from resharpen.api import run_claim, train
    from resharpen.claims import all_claims
    from resharpen.constructions.set_complement import Construction, build, theory_margins
    from resharpen.constructions.set_complement import load as load_construction
    from resharpen.constructions.set_complement import save as save_construction
    from resharpen.experiments.core.runs import Run, load_run
    from resharpen.experiments.set_complement.compare import compare_run, fit_lemma
    from resharpen.experiments.set_complement.evaluate import evaluate_lengths


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'resharpen' has no attribute {name!r}")
    import importlib

    module, attribute = _API[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
