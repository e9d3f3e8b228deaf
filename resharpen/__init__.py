"""resharpen: symbolic and numeric verification of how normalization placement shapes attention.

The public API (imported on first use, so ``import resharpen`` is instant)::

    import resharpen as rs
    built = rs.build("tight", vocab=16, norm="attn_out", lam=32.0)   # explicit weights
    rows = rs.evaluate_lengths(built.model, vocab=16)                # exact metrics per length
    nonquery, query = rs.theory_margins(built, tokens)               # the theory's margins
    run = rs.train("set_complement/base")                             # train, save to out/runs/base
    run = rs.load_run("out/runs/base")                                # a finished run, read back
    model = run.model("raw")                                          # ... and its weights
    report = rs.compare_run("out/runs/base")                          # trained vs the lemma's form
    record = rs.run_claim("sc.theorem.two_over_s")                    # one ledger claim
    model = rs.Transformer(rs.ModelConfig(vocab=16, d_model=16, norm="post"))  # the model
    logits = model.run_with_hooks(tokens, [("blocks.0.attn.hook_pattern", edit)])  # hooks

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
    "load_run": ("resharpen.experiments.training.runs", "load_run"),
    "Run": ("resharpen.experiments.training.runs", "Run"),
    "compare_run": ("resharpen.experiments.set_complement.compare", "compare_run"),
    "fit_lemma": ("resharpen.experiments.set_complement.compare", "fit_lemma"),
    "run_claim": ("resharpen.api", "run_claim"),
    "train": ("resharpen.api", "train"),
    "all_claims": ("resharpen.claims", "all_claims"),
    "Transformer": ("resharpen.experiments.model.transformer", "Transformer"),
    "ModelConfig": ("resharpen.experiments.model.transformer", "ModelConfig"),
    "SCHEMES": ("resharpen.experiments.model.schemes", "SCHEMES"),
    "Scheme": ("resharpen.experiments.model.schemes", "Scheme"),
    "Layer": ("resharpen.experiments.model.schemes", "Layer"),
    "register_scheme": ("resharpen.experiments.model.schemes", "register"),
    "NORM_PLACEMENTS": ("resharpen.experiments.training.schema", "NORM_PLACEMENTS"),
    "HookPoint": ("resharpen.experiments.model.hooks", "HookPoint"),
    "HOOK_POINTS": ("resharpen.experiments.model.hooks", "HOOK_POINTS"),
}

# what the constants of the API are (docs/api.md shows them; they have no docstring of their own)
CONSTANT_DOCS = {
    "SCHEMES": "The scheme registry: normalization scheme name -> its Scheme (the residual "
               "rule each layer gets, whether a final norm follows, nGPT's sphere, its label, "
               "colour and marker). ModelConfig(norm=NAME) picks an entry; register_scheme adds "
               "one; importing it loads no torch.",
    "NORM_PLACEMENTS": "The names of the package's own normalization schemes, the built-in keys "
                       "of SCHEMES in order; importing it loads no torch.",
    "HOOK_POINTS": "The capture points of block i, named blocks.<i>.<name>, in the order they "
                   "fire (the norm-output points only with an output norm, the MLP points only "
                   "with an MLP); Transformer.hook_points() lists a model's, Block's docstring "
                   "gives their mathematics.",
}

__all__ = sorted(_API)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from resharpen.api import run_claim, train
    from resharpen.claims import all_claims
    from resharpen.constructions.set_complement import Construction, build, theory_margins
    from resharpen.constructions.set_complement import load as load_construction
    from resharpen.constructions.set_complement import save as save_construction
    from resharpen.experiments.model.schemes import SCHEMES, Layer, Scheme
    from resharpen.experiments.model.schemes import register as register_scheme
    from resharpen.experiments.model.hooks import HOOK_POINTS, HookPoint
    from resharpen.experiments.model.transformer import ModelConfig, Transformer
    from resharpen.experiments.training.runs import Run, load_run
    from resharpen.experiments.training.schema import NORM_PLACEMENTS
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
