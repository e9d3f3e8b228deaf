"""Sizes by profile are set one way for each kind of thing (docs/architecture.md, "Sizes by
profile"): a config file's ``[profile.*]`` tables for what a trainer reads from it, and
``pick(profile, quick=..., full=...)`` for everything sized in code. No module of the package keys
a table by the profiles' names, but the two that do not hold sizes of a profile (:data:`EXEMPT`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("resharpen", "theory", "constructions", "experiments", "paper_figs", "benchmarks")
EXEMPT = {
    # the battery's sizes: quick, full and tiny, each naming the profile its configs are read at
    (Path("experiments/battery/run.py"), "SIZES"),
    # a claim's declared fields, among them its expected status in each profile
    (Path("experiments/ledger/declarations.py"), "FIELDS"),
}


def profile_tables(path: Path) -> list[tuple[int, str | None]]:
    """(line, assigned name or None) of each dict literal or ``dict(...)`` call in ``path``
    whose keys include both ``"quick"`` and ``"full"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = {id(node.value): target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "dict":
            keys = {k.arg for k in node.keywords}
        else:
            continue
        if {"quick", "full"} <= keys:
            found.append((node.lineno, names.get(id(node))))
    return found


def test_no_module_keys_a_table_by_the_profiles():
    offenders = [f"{path.relative_to(ROOT)}:{line} {name or ''}"
                 for folder in PACKAGE_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
                 for line, name in profile_tables(path)
                 if (path.relative_to(ROOT), name) not in EXEMPT]
    assert not offenders, ("sizes keyed by profile name (write pick(profile, quick=..., "
                           "full=...) where the size is used, or a config file's [profile.*] "
                           "table):\n" + "\n".join(offenders))


def test_the_scan_finds_a_table_keyed_by_the_profiles(tmp_path):
    module = tmp_path / "mine.py"
    module.write_text('SIZES = {"quick": 8, "full": 64}\nOK = {"quick": 8}\n'
                      'def f():\n    return dict(quick=1, full=2)[p]\n')
    assert profile_tables(module) == [(1, "SIZES"), (4, None)]


def test_the_trained_set_is_sized_by_pick():
    """The trained-dynamics sizes of both profiles come from one function; the two differ where
    the study's sizes do, and an unknown profile is an error."""
    import pytest

    from resharpen.experiments.dynamics.trained_plan import sizes

    quick, full = sizes("quick"), sizes("full")
    assert (quick.d_model, quick.depths, quick.steps) == (32, (4,), 300)
    assert (full.d_model, full.depths, full.steps) == (64, (8, 24), 1000)
    assert set(quick.trained_schemes) < set(full.trained_schemes)
    with pytest.raises(ValueError, match="profile 'tiny' is not one of"):
        sizes("tiny")
