"""Python 3.10 (allowed by pyproject's requires-python) has no ``tomllib``.

The package reads TOML in one place, :mod:`resharpen.experiments.common.toml_files`, which falls back
to ``tomli`` (the same parser, a dependency on Python < 3.11 and in the dev extra). The first test
runs that module as Python 3.10 would (no ``tomllib``) on any interpreter; the second keeps every
other module from importing ``tomllib`` itself.
"""
from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("resharpen", "theory", "constructions", "experiments", "paper_figs")
TOML_READER = Path("experiments/common/toml_files.py")


def test_the_toml_reader_falls_back_to_tomli_without_tomllib(monkeypatch, tmp_path):
    tomli = pytest.importorskip("tomli", reason="tomli is in the dev extra: pip install -e '.[dev]'")
    from resharpen.experiments.common import toml_files as config

    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    monkeypatch.setitem(sys.modules, "tomllib", None)  # `import tomllib` fails, as on 3.10
    spec = importlib.util.spec_from_file_location("config_as_on_python310", config.__file__)
    as_on_310 = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, as_on_310)  # dataclasses look their module up
    spec.loader.exec_module(as_on_310)

    assert as_on_310.tomllib is tomli
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text('name = "x"\n[model]\nnorm = "post"\nd_model = 16\n')
    bad.write_text("[model\n")
    assert as_on_310.read_toml(good) == {"name": "x", "model": {"norm": "post", "d_model": 16}}
    with pytest.raises(ValueError, match="not valid TOML"):
        as_on_310.read_toml(bad)
    assert as_on_310.parse_value("1e-3") == 0.001 and as_on_310.parse_value("post") == "post"


def test_only_the_config_module_imports_tomllib():
    """Any other module that needs TOML goes through the config module's reader."""
    offenders = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) else [])
                if "tomllib" in names and path.relative_to(ROOT) != TOML_READER:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"import TOML through {TOML_READER}, not tomllib: {offenders}"
