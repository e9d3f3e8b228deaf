"""The claim index: ``resharpen verify --list`` and ``--where`` without importing the slices.

The claims modules import sympy and scipy, and torch at the top or in their checks on a model,
so collecting the ledger (:func:`resharpen.claims.all_claims`) takes seconds. Listing the claims
and saying where their code is needs none of that: this module reads ``claims_index.json``
(beside it, shipped with the package), written from the imported ledger by

    python -m resharpen.claim_index --write

It holds every claim's fields (id, source, statement, kind, tolerance, erratum, module, expected
status, cost, and where its expected value comes from: expected_from, origin, derived_by) and, for ``--where``, the file and qualified name of its check and of each
derivation the check uses (:func:`resharpen.experiments.ledger.where`), plus the SHA-256 of the
files that declare claims (every claims module and ``resharpen/claims.py``) and of the claims'
analysis modules (``where`` reads their functions as the checks' own code, so they decide which
derivations a check names). The lines are found
when asked, in the source files' syntax trees (a function's or class's first decorator, else its
``def`` / ``class`` line, as ``inspect`` gives them), and the id's line by searching its module
for the quoted id, so editing a theory module does not make the index stale.

The index is used only while every hashed file is unchanged and every name is found; otherwise
(and when the file is missing) the commands import the ledger as before: the same output,
slower. ``tests/core/test_claim_index.py`` holds the committed index current and the fast
output equal to the slow one, and checks that ``verify --list`` imports no torch and no sympy.
This module imports only the standard library and the (torch-free) ledger registry.
"""
from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path

from resharpen.experiments.common.package_files import (module_file, package_file,
                                                       package_relative, shown)

PACKAGE = Path(__file__).parent
"""The front's folder (``resharpen/``): the index sits beside this module."""
INDEX = PACKAGE / "claims_index.json"
VERSION = 3  # 2: the origin of each expected value (expected_from, origin, derived_by);
# 3: the claims' analysis modules are hashed too


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _declaring_files(modules: list[str], analysis: list[str]) -> dict[str, str]:
    """{relative path: sha256} of the claims modules, their declarations, resharpen/claims.py and
    the claims' analysis modules (``analysis``)."""
    files = sorted({package_relative(module_file(m)) for m in modules}
                   | {package_relative(module_file(m).with_suffix(".toml")) for m in modules}
                   | {package_relative(module_file(m)) for m in analysis}
                   | {"claims.py"})
    return {rel: _digest(package_file(rel)) for rel in files}


# ----------------------------------------------------------------------------- writing
def build() -> dict:
    """The index of the imported ledger (imports every claims module)."""
    import inspect

    from resharpen.claims import PREFIX_MODULES, all_claims
    from resharpen.experiments.ledger.where import derivations, is_claims_analysis

    def place(obj) -> list[str]:
        path = inspect.getsourcefile(obj) or inspect.getfile(obj)
        return [package_relative(path), obj.__qualname__, f"{obj.__module__}.{obj.__qualname__}"]

    claims = []
    for c in all_claims():
        check = inspect.unwrap(c.check)
        claims.append({
            "id": c.id, "source": c.source, "statement": c.statement, "kind": c.kind,
            "tolerance": c.tolerance, "erratum": c.erratum, "module": c.module,
            "expected_status": c.expected_status, "cost": c.cost,
            "expected_from": c.expected_from, "origin": c.origin,
            "derived_by": list(c.derived_by),
            "where": [place(check)] + [place(obj) for obj in derivations(check)],
        })
    modules = sorted(set(PREFIX_MODULES.values()) | {c["module"] for c in claims})
    analysis = sorted(name for name in list(sys.modules)
                      if name.startswith("resharpen.") and is_claims_analysis(name))
    return {"version": VERSION, "modules": modules, "analysis": analysis,
            "files": _declaring_files(modules, analysis), "claims": claims}


def render(index: dict) -> str:
    from resharpen.experiments.common.json_text import dumps_json

    return dumps_json(index, indent=1) + "\n"


def write(path: Path | None = None) -> Path:
    """Write the index of the current ledger to ``path`` (default :data:`INDEX`, atomically)."""
    from resharpen.experiments.common.io import atomic_write_text

    return atomic_write_text(INDEX if path is None else path, render(build()))


# ----------------------------------------------------------------------------- reading
class Index:
    """A read, current claim index: :meth:`claims` and :meth:`where`."""

    def __init__(self, data: dict):
        self.data = data
        self._by_id = {entry["id"]: entry for entry in data["claims"]}
        self._trees: dict[Path, ast.Module | None] = {}

    def claims(self) -> list:
        """Every claim as a :class:`~resharpen.experiments.ledger.Claim` without its check
        (``check`` is None: enough to select, list and locate, not to run), by id."""
        from resharpen.experiments.ledger.registry import Claim

        fields = ("id", "source", "statement", "kind", "tolerance")
        return [Claim(*(e[f] for f in fields), check=None, erratum=e["erratum"],
                      module=e["module"], expected_status=e["expected_status"], cost=e["cost"],
                      expected_from=e["expected_from"], origin=e["origin"],
                      derived_by=tuple(e["derived_by"]))
                for e in self.data["claims"]]

    def where(self, claim_id: str) -> list[str] | None:
        """The lines of ``resharpen verify --where`` for one claim (as
        :func:`resharpen.experiments.ledger.where` prints them), or None when a name is not
        found in its file (the caller then asks the imported ledger)."""
        entry = self._by_id.get(claim_id)
        if entry is None:
            return None
        entries = []
        module_path = module_file(entry["module"])
        declared = _id_line(module_path, claim_id)
        if declared is not None:
            entries.append((str(module_path), declared, claim_id))
        for rel, qualname, label in entry["where"]:
            path = package_file(rel)
            line = self._locate(path, qualname)
            if line is None:
                return None
            entries.append((str(path), line, label))
        lines: dict[tuple[str, int], list[str]] = {}
        for path, line, what in entries:
            lines.setdefault((path, line), []).append(what)
        return [f"{shown(path)}:{line} {', '.join(whats)}"
                for (path, line), whats in lines.items()]

    def _locate(self, path: Path, qualname: str) -> int | None:
        """The first line (first decorator, else ``def`` / ``class``) of the definition
        ``qualname`` in ``path``; None when it is missing or defined twice."""
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                self._trees[path] = None
        tree = self._trees[path]
        if tree is None:
            return None
        nodes: list[ast.AST] = [tree]
        for part in (p for p in qualname.split(".") if p != "<locals>"):
            nodes = [d for node in nodes for d in _definitions(node) if d.name == part]
        if len(nodes) != 1:
            return None
        node = nodes[0]
        return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def _definitions(node: ast.AST):
    """The function and class definitions in ``node``'s own scope (through if, for, with, try
    blocks, not into other definitions)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield child
        elif isinstance(child, ast.stmt) or isinstance(child, ast.excepthandler):
            yield from _definitions(child)


def _id_line(path: Path, claim_id: str) -> int | None:
    """The first line of ``path`` that writes ``claim_id`` as a string (as ``where`` finds it)."""
    quoted = (f'"{claim_id}"', f"'{claim_id}'")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(text.splitlines(), start=1):
        if any(q in line for q in quoted):
            return number
    return None


def load(path: Path | None = None) -> Index | None:
    """The index at ``path`` (default :data:`INDEX`) when it is current (every file that
    declares claims, and every analysis module of the claims, unchanged since it was written),
    else None (missing, unreadable, another
    version, or stale)."""
    path = INDEX if path is None else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            return None
        if _declaring_files(data["modules"], data["analysis"]) != data["files"]:
            return None
        from resharpen.claims import PREFIX_MODULES

        if not set(PREFIX_MODULES.values()) <= set(data["modules"]):
            return None
        return Index(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--write"]:
        print(f"wrote {write()}")
        return 0
    if argv == ["--check"]:
        current = INDEX.is_file() and INDEX.read_text(encoding="utf-8") == render(build())
        print("claims_index.json is current" if current else
              "claims_index.json is stale: run `python -m resharpen.claim_index --write`")
        return 0 if current else 1
    print("usage: python -m resharpen.claim_index --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
