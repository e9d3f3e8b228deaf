"""The public API re-exported from ``resharpen``: lazy, typed, and each entry works."""
import json
import subprocess
import sys

import numpy as np
import pytest

import resharpen as rs


def test_import_resharpen_loads_no_heavy_module():
    code = "import sys, resharpen; print(sorted(m for m in ('torch', 'sympy', 'scipy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves():
    for name in rs.__all__:
        assert getattr(rs, name) is not None, name
    with pytest.raises(AttributeError):
        rs.no_such_function  # noqa: B018


def test_build_evaluate_and_theory_margins_agree():
    import torch

    built = rs.build("tight", vocab=8, norm="none", lam=16.0)
    rows = rs.evaluate_lengths(built.model, vocab=8)
    assert [row["length"] for row in rows] == list(range(1, 8))
    tokens = torch.tensor([[0, 1, 2]])
    nonquery, query = rs.theory_margins(built, tokens)
    assert np.isfinite(nonquery).all() and np.isfinite(query).all()


def test_load_run_reads_a_run_folder_and_names_a_missing_file(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name, value in (("config.json", {"name": "x"}), ("per_length.json", []),
                        ("summary.json", {"loss": 1.0})):
        (folder / name).write_text(json.dumps(value))
    (folder / "metrics.jsonl").write_text('{"step": 0}\n{"step": 1}\n')
    run = rs.load_run(folder)
    assert run.config == {"name": "x"} and [r["step"] for r in run.history] == [0, 1]
    (folder / "summary.json").unlink()
    with pytest.raises(ValueError, match="summary.json"):
        rs.load_run(folder)


def test_run_claim_by_id_and_unknown_id():
    assert rs.run_claim("sc.metrics.closed_forms").status == "PASS"
    with pytest.raises(ValueError, match="no claim"):
        rs.run_claim("sc.no_such_claim")
