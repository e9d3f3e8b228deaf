"""The layering contracts of pyproject.toml ``[tool.importlinter]`` hold (import-linter).

Dependencies point one way: the front (``resharpen.cli``, ``resharpen.claims``,
``resharpen.api``) -> ``paper_figs`` -> the experiment slices (independent of each other) ->
``constructions`` and the ledger (``experiments.ledger``, independent of each other) ->
``experiments.core`` -> ``theory``; ``theory`` imports no torch, ``experiments.core`` no
matplotlib, and the ledger no torch, no matplotlib and from the core only ``io`` and
``profiles``. docs/architecture.md draws the layers.

``resharpen/`` links the four top-level folders in (``resharpen/theory -> ../theory``, ...), so
import-linter's graph builder walks the whole package from ``resharpen/``, and a plain
``lint-imports`` in the repository checks the same contracts as this test.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("theory", "constructions", "experiments", "paper_figs")


def lint(config: Path) -> subprocess.CompletedProcess:
    """``lint-imports --config config`` in the repository root, without writing a cache."""
    code = ("from importlinter.cli import lint_imports_command\n"
            f"lint_imports_command.main(args=['--no-cache', '--config', {str(config)!r}], "
            "prog_name='lint-imports')\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def expected_modules() -> set[str]:
    """Every module of the package: each ``.py`` file under ``resharpen/`` and its linked folders
    that sits inside packages (folders with an ``__init__.py``)."""
    modules = set()
    for path in (ROOT / "resharpen").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        packages = (ROOT.joinpath(*parts[:i]) for i in range(1, len(parts)))
        if all((package / "__init__.py").exists() for package in packages):
            modules.add(".".join(parts).removesuffix(".__init__"))
    return modules


def test_the_package_folders_are_linked_into_resharpen():
    for folder in FOLDERS:
        link = ROOT / "resharpen" / folder
        assert link.is_symlink() and link.resolve() == (ROOT / folder).resolve(), folder


def test_the_import_graph_sees_every_module():
    code = "import grimp; print('\\n'.join(sorted(grimp.build_graph('resharpen', cache_dir=None).modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = set(done.stdout.split())
    assert expected_modules() - seen == set(), "the import graph misses these modules"
    assert len(seen) > 100


def test_layering_contracts_hold():
    done = lint(ROOT / "pyproject.toml")
    if done.returncode != 0:
        pytest.fail("import-linter: broken contracts (pyproject.toml [tool.importlinter])\n"
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


def test_a_broken_contract_is_reported(tmp_path):
    """The linter can fail: theory does import sympy, so a contract forbidding it must break."""
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "resharpen"\ninclude_external_packages = true\n'
        '[[tool.importlinter.contracts]]\nname = "theory imports no sympy (false)"\n'
        'type = "forbidden"\n'
        'source_modules = ["resharpen.theory"]\nforbidden_modules = ["sympy"]\n')
    done = lint(config)
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
