"""Claim declarations: every claim's metadata, declared once, in a TOML file beside its module.

A claims module ``experiments/<slice>/claims_x.py`` holds the checks; ``claims_x.toml`` beside it
declares, for each claim id of the module, in the order a reader meets them::

    ["fit.none.two_over_s"]
    source = "arXiv 2510.08341; ..."       an arXiv id with theorem or section, or "reconstructed"
    statement = "..."                       one line: what the claim says
    kind = "experiment"                     symbolic | numeric | experiment
    tolerance = "..."                       fixed before the measurement, in words
    cost = "slow"                           fast | slow (trains or reads sweeps, or > 3 s)
    quick = "PASS"                          the status expected in the quick profile
    full = "FAIL"                           the status expected at full size (absent: undecided)
    erratum = true                          (absent: false) the check reproduces a counterexample
    erratum_of = "paper"                    with erratum: whose statement is shown false (ERRATA_OF)
    expected_from = "paper"                 paper | derivation | statement | regression
    origin = "..."                          which paper number, derivation, constant or record
    derived_by = ["resharpen.theory..."]    the functions of an independent derivation
    figures = ["fig_fit_margins"]           the figures that show it

The file is plain data: ``resharpen verify --list``, the claim index, the baseline check, the
README's counts and the verdict pages read it without importing torch or sympy, and
``verify --only ID`` imports only the module whose file declares ID. ``@claim("ID")`` in the
module reads its entry when the module is imported (:mod:`.registry`).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from resharpen.experiments.common.package_files import figure_files, module_file
from resharpen.experiments.common.toml_files import parse_toml

KINDS = ("symbolic", "numeric", "experiment")
COSTS = ("fast", "slow")
EXPECTED_STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")
ORIGINS = ("paper", "derivation", "statement", "regression")
ERRATA_OF = {"paper": "the paper as its sources give it",
             "summary": "a secondary summary of the paper",
             "transcription": "an extension the paper's transcription states",
             "reconstruction": "the package's own reconstruction of the paper",
             "prior work": "prior work the paper builds on"}
"""Whose statement an erratum shows false (``erratum_of``), and the phrase the pages name it
by, after "of": "an erratum of the paper as its sources give it", "3 of prior work ..."."""
FIELDS = {"source": str, "statement": str, "kind": str, "tolerance": str, "cost": str,
          "quick": str, "full": str, "erratum": bool, "erratum_of": str, "expected_from": str,
          "origin": str, "derived_by": list, "figures": list, "transfer": bool}
REQUIRED = ("source", "statement", "kind", "tolerance", "cost", "quick", "expected_from",
            "origin")
CLAIMS_MODULES = (
    "resharpen.experiments.set_complement.claims",
    "resharpen.experiments.set_complement.claims_train",
    "resharpen.experiments.set_complement.claims_fit",
    "resharpen.experiments.languages.claims",
    "resharpen.experiments.languages.claims_train",
    "resharpen.experiments.dynamics.claims",
    "resharpen.experiments.collapse.claims",
)
"""Every module that declares claims, in the order of the papers' slices."""


def declaration_file(module: str) -> Path:
    """The TOML file declaring the claims of ``module`` (beside its source file)."""
    return module_file(module).with_suffix(".toml")


@cache
def declarations(module: str) -> dict[str, dict]:
    """id -> declared fields of every claim of ``module``, in file order; each entry checked
    (:func:`check_entry`). ValueError naming the file for a missing file or a bad entry."""
    path = declaration_file(module)
    try:
        data = parse_toml(path.read_text(), path.name)
    except FileNotFoundError:
        raise ValueError(f"{module} declares claims but has no declaration file {path.name}") \
            from None
    for claim_id, entry in data.items():
        check_entry(claim_id, entry, path.name)
    return {claim_id: {**entry, "module": module} for claim_id, entry in data.items()}


def check_entry(claim_id: str, entry: object, where: str) -> None:
    """ValueError naming the claim and the file unless ``entry`` has every required field, no
    unknown one, and values of the allowed kinds."""
    def bad(why: str) -> ValueError:
        return ValueError(f"{where}: claim {claim_id!r}: {why}")

    if not isinstance(entry, dict):
        raise bad("must be a table of fields")
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise bad(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")
    missing = [f for f in REQUIRED if f not in entry]
    if missing:
        raise bad(f"missing field(s) {', '.join(missing)}")
    for name, value in entry.items():
        if not isinstance(value, FIELDS[name]):
            raise bad(f"{name} must be a {FIELDS[name].__name__}, got {value!r}")
    for name, allowed in (("kind", KINDS), ("cost", COSTS), ("quick", EXPECTED_STATUSES),
                          ("full", EXPECTED_STATUSES), ("expected_from", ORIGINS)):
        if name in entry and entry[name] not in allowed:
            raise bad(f"{name} {entry[name]!r} is not one of {', '.join(allowed)}")
    if entry.get("erratum", False) != ("erratum_of" in entry):
        raise bad("an erratum (erratum = true) names whose statement it shows false "
                  f"(erratum_of: one of {', '.join(ERRATA_OF)}), and only an erratum does")
    if "erratum_of" in entry and entry["erratum_of"] not in ERRATA_OF:
        raise bad(f"erratum_of {entry['erratum_of']!r} is not one of {', '.join(ERRATA_OF)}")
    if not entry["origin"].strip():
        raise bad("origin is empty; say which paper number, derivation, constant or record")
    for name in entry.get("derived_by", []):
        if not (isinstance(name, str) and name.startswith("resharpen.") and "." in name[10:]):
            raise bad(f"derived_by {name!r} must be a 'resharpen.<module>.<qualname>' name")
    if ("held against" in entry["source"]) != entry.get("transfer", False):
        raise bad("a claim that holds a paper's statement against models outside the setting "
                  "it is proved in says so twice: 'held against' in its source and "
                  "transfer = true")
    if entry["expected_from"] == "derivation" and not entry.get("derived_by"):
        raise bad("expected_from 'derivation' needs derived_by, the functions computing it")
    scripts = figure_files() if entry.get("figures") else {}
    missing = [name for name in entry.get("figures", []) if name not in scripts]
    if missing:
        raise bad(f"figure {missing[0]!r} is not a script of paper_figs "
                  "(paper_figs/<slice>/fig_*.py)")


_DECLARED_IN_CODE: dict[str, dict[str, dict]] = {}
"""module -> id -> fields of claims declared with :func:`declare` (a test's or a plug-in's
claims, whose module has no declaration file)."""


def declare(module: str, claim_id: str, **fields) -> None:
    """Declare claim ``claim_id`` of ``module`` in code, with the fields of a TOML entry (a test
    or a plug-in module without a declaration file); checked as a file's entry is."""
    check_entry(claim_id, fields, f"declare({module!r})")
    _DECLARED_IN_CODE.setdefault(module, {})[claim_id] = {**fields, "module": module}


def declaration(module: str, claim_id: str) -> dict | None:
    """The declared fields of claim ``claim_id`` of ``module``: declared in code
    (:func:`declare`) or in the module's file; None when neither declares it."""
    if claim_id in _DECLARED_IN_CODE.get(module, {}):
        return _DECLARED_IN_CODE[module][claim_id]
    if not module.startswith("resharpen.") or not declaration_file(module).is_file():
        return None  # a module outside the package declares its claims in code
    return declarations(module).get(claim_id)


def all_declarations() -> dict[str, dict]:
    """id -> declared fields (with ``module``) of every claim of the package, module by module
    in :data:`CLAIMS_MODULES` order, file order within a module."""
    out: dict[str, dict] = {}
    for module in CLAIMS_MODULES:
        for claim_id, entry in declarations(module).items():
            if claim_id in out:
                raise ValueError(f"claim {claim_id!r} is declared twice ({out[claim_id]['module']}"
                                 f" and {module})")
            out[claim_id] = entry
    return out
