"""Claims modules hold checks; the analysis they call lives in the slices' analysis modules.

* no claims module (``experiments/<slice>/claims*.py``) exceeds :data:`MAX_LINES` lines;
* an analysis module of the claims (one that sets ``CLAIMS_ANALYSIS = True``) imports no claims
  module, at the top or inside a function;
* ``verify --where`` and the mutation test read an analysis module's functions as the check's own
  code (:func:`resharpen.experiments.ledger.where.is_claims_analysis`): they follow them to the
  derivations behind them and never list them as derivations, so a check reads the same whether
  its helpers sit in its claims module or in an analysis module. The test can fail: without the
  mark, the analysis function itself is listed.
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
CLAIMS_FILES = sorted((ROOT / "experiments").glob("*/claims*.py"))


def _marked(path: Path) -> bool:
    """Whether the module at ``path`` sets ``CLAIMS_ANALYSIS = True`` at its top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name)
                                                    and t.id == "CLAIMS_ANALYSIS"
                                                    for t in node.targets)
               and isinstance(node.value, ast.Constant) and node.value.value is True
               for node in tree.body)


ANALYSIS_FILES = sorted(p for p in (ROOT / "experiments").glob("*/*.py")
                        if not p.name.startswith("claims") and _marked(p))


def test_the_files_are_found():
    assert len(CLAIMS_FILES) >= 7 and len(ANALYSIS_FILES) >= 4


@pytest.mark.parametrize("path", CLAIMS_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_claims_module_exceeds_the_line_limit(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"{path.relative_to(ROOT)} has {lines} lines (> {MAX_LINES}): move its analysis (data "
        "readers, row builders, multiple-testing families, simulations whose numbers a check "
        "decides on) into the slice's analysis modules, keeping each @claim check here")


def _claims_imports(text: str, package: list[str]) -> list[str]:
    """The claims modules (``resharpen.experiments.<slice>.claims*``) that an import statement
    of ``text`` names, inside functions too; ``package``: the module's package, for a relative
    import."""
    names = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return [name for name in names if name.startswith("resharpen.experiments.")
            and len(name.split(".")) > 3 and name.split(".")[3].startswith("claims")]


@pytest.mark.parametrize("path", ANALYSIS_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_an_analysis_module_imports_no_claims_module(path):
    package = ["resharpen", *path.relative_to(ROOT).parent.parts]
    claims = _claims_imports(path.read_text(encoding="utf-8"), package)
    assert claims == [], f"{path.relative_to(ROOT)} imports a claims module: {claims}"


def test_a_claims_module_import_is_seen():
    """The import reader can fail: a claims module imported inside a function, relatively or by
    its full name, or as a name of its package."""
    package = ["resharpen", "experiments", "set_complement"]
    text = ("import math\nfrom resharpen.experiments.set_complement import fit_report\n"
            "def f():\n    from .claims_fit import in_family\n"
            "    from resharpen.experiments.dynamics import claims\n"
            "    import resharpen.experiments.collapse.claims\n")
    assert _claims_imports(text, package) == [
        "resharpen.experiments.set_complement.claims_fit",
        "resharpen.experiments.set_complement.claims_fit.in_family",
        "resharpen.experiments.dynamics.claims",
        "resharpen.experiments.collapse.claims"]


def _derivation_modules(claim_id: str) -> list[str]:
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger.where import derivations

    (c,) = [c for c in all_claims() if c.id == claim_id]
    return [f"{obj.__module__}.{obj.__qualname__}"
            for obj in derivations(inspect.unwrap(c.check))]


def test_where_follows_the_analysis_modules_to_the_derivations_behind_them():
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger.where import derivations, is_claims_analysis

    listed = [obj for c in all_claims() for obj in derivations(inspect.unwrap(c.check))]
    assert not [obj for obj in listed if is_claims_analysis(obj.__module__)]
    assert "resharpen.experiments.set_complement.fit_report.ladder_rows" in _derivation_modules(
        "fit.placements.ood_at_every_rung")


def test_without_the_mark_the_analysis_function_is_listed(monkeypatch):
    from resharpen.experiments.set_complement import fit_sweep_tests

    monkeypatch.setattr(fit_sweep_tests, "CLAIMS_ANALYSIS", False)
    found = _derivation_modules("fit.placements.ood_at_every_rung")
    assert "resharpen.experiments.set_complement.fit_sweep_tests.ood_at_rungs_tests" in found
    assert "resharpen.experiments.set_complement.fit_report.ladder_rows" not in found
