"""The package's layout holds: one import name, no symlinks, no import cycles, and the layering
contracts of tests/import_contracts.toml (import-linter).

Dependencies point one way: the front (``resharpen.cli``, ``resharpen.claims``,
``resharpen.api``) -> ``paper_figs`` -> the experiment slices (independent of each other) ->
``constructions`` and the ledger -> ``experiments.training`` -> ``experiments.model`` and
``experiments.tasks`` -> ``experiments.common`` -> ``theory``. docs/architecture.md draws it.

setup.py installs the four top-level folders beneath ``resharpen`` (``theory/`` as
``resharpen.theory``); import-linter's graph builder walks one folder per package, so these
tests stage the five folders as one tree (links in a temporary folder, outside the checkout)
and build the graph there. Every import counts, imports inside functions included.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("theory", "constructions", "experiments", "paper_figs")
CONTRACTS = ROOT / "tests" / "import_contracts.toml"


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    """A folder holding ``resharpen/`` as installed: the front's files and the four folders, as
    links into the checkout."""
    stage = tmp_path_factory.mktemp("stage")
    package = stage / "resharpen"
    package.mkdir()
    for entry in (ROOT / "resharpen").iterdir():
        (package / entry.name).symlink_to(entry)
    for folder in FOLDERS:
        (package / folder).symlink_to(ROOT / folder)
    return stage


def run_in(stage: Path, code: str) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(stage)}
    return subprocess.run([sys.executable, "-c", code], cwd=stage, capture_output=True,
                          text=True, timeout=180, env=env)


def lint(stage: Path, config: Path) -> subprocess.CompletedProcess:
    """``lint-imports --config config`` over the staged tree, without writing a cache."""
    return run_in(stage, "from importlinter.cli import lint_imports_command\n"
                         f"lint_imports_command.main(args=['--no-cache', '--config', {str(config)!r}], "
                         "prog_name='lint-imports')\n")


def expected_modules() -> set[str]:
    """Every module of the package: each ``.py`` file of the front and the four folders that
    sits inside packages (folders with an ``__init__.py``)."""
    modules = set()
    for top, base in [("", ROOT / "resharpen")] + [(f, ROOT / f) for f in FOLDERS]:
        for path in base.rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            if all((base.joinpath(*parts[:i]) / "__init__.py").exists() for i in range(len(parts))):
                modules.add(".".join(("resharpen", *([top] if top else []), *parts))
                            .removesuffix(".__init__"))
    return modules


def test_no_symlink_in_the_tree():
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True,
                             text=True).stdout.splitlines()
    if not tracked:
        pytest.skip("not a git checkout")
    links = [line.split("\t", 1)[1] for line in tracked if line.startswith("120000")]
    assert links == []


def test_each_module_has_one_import_name():
    """From the checkout's root, ``theory`` or ``experiments.training.loop`` is refused: the only
    name is ``resharpen.theory``."""
    for folder in FOLDERS:
        done = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and f"import this folder as resharpen.{folder}" in done.stderr


def test_the_import_graph_sees_every_module(staged):
    done = run_in(staged, "import grimp; print('\\n'.join(sorted(grimp.build_graph('resharpen', "
                          "cache_dir=None).modules)))")
    assert done.returncode == 0, done.stderr
    seen = set(done.stdout.split())
    assert expected_modules() - seen == set(), "the import graph misses these modules"
    assert len(seen) > 100


def test_no_import_cycle(staged):
    """No strongly connected component of two or more modules in the import graph (scipy's
    strongly connected components), imports inside functions counted."""
    code = ("import grimp, json\n"
            "g = grimp.build_graph('resharpen', cache_dir=None)\n"
            "mods = sorted(m for m in g.modules if m.startswith('resharpen'))\n"
            "print(json.dumps([mods, [[t for t in g.find_modules_directly_imported_by(m) "
            "if t.startswith('resharpen')] for m in mods]]))\n")
    done = run_in(staged, code)
    assert done.returncode == 0, done.stderr
    import json

    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    mods, imported = json.loads(done.stdout)
    index = {m: i for i, m in enumerate(mods)}
    edges = [(index[a], index[b]) for a, targets in zip(mods, imported) for b in targets]
    rows, cols = zip(*edges)
    graph = csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(len(mods), len(mods)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    cycles = [[m for m, label in zip(mods, labels) if label == c]
              for c in set(labels) if (labels == c).sum() > 1]
    assert cycles == []


def test_a_cycle_is_found():
    """The cycle test can fail: a planted two-module cycle is one component of two."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    graph = csr_matrix((np.ones(3), ([0, 1, 1], [1, 0, 2])), shape=(3, 3))
    _, labels = connected_components(graph, directed=True, connection="strong")
    assert labels[0] == labels[1] != labels[2]


def test_layering_contracts_hold(staged):
    done = lint(staged, CONTRACTS)
    if done.returncode != 0:
        pytest.fail("import-linter: broken contracts (tests/import_contracts.toml)\n"
                    + done.stdout + done.stderr, pytrace=False)


def test_the_ledger_imports_no_torch():
    """import-linter sees every import, the one ``import torch`` inside the mutation test's
    forked child included (an ignored import of the ledger-light contract); importing the ledger
    itself loads no torch."""
    code = ("import sys\n"
            "from resharpen.experiments.ledger import baseline, mutation, stats  # noqa: F401\n"
            "import resharpen.experiments.ledger as ledger\n"
            "print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_broken_contract_is_reported(tmp_path, staged):
    """The linter can fail: theory does import sympy, so a contract forbidding it must break."""
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "resharpen"\ninclude_external_packages = true\n'
        '[[tool.importlinter.contracts]]\nname = "theory imports no sympy (false)"\n'
        'type = "forbidden"\n'
        'source_modules = ["resharpen.theory"]\nforbidden_modules = ["sympy"]\n')
    done = lint(staged, config)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "resharpen.theory.set_complement.formulas -> sympy" in done.stdout, done.stdout


def test_the_wheel_installs_one_top_level_name(tmp_path):
    """Built as a user's ``pip install .`` builds it: only ``resharpen`` (and its metadata)."""
    import shutil
    import zipfile

    source = tmp_path / "source"  # a copy, so the build writes nothing into the repository
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "out", "build", "*.egg-info", "__pycache__", ".hypothesis"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("resharpen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"resharpen", wheel.name.split("-py")[0] + ".dist-info"}
    for folder in FOLDERS:
        assert f"resharpen/{folder}/__init__.py" in names
    assert any(name.startswith("resharpen/experiments/configs/") for name in names)
