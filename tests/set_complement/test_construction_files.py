"""Constructions saved as safetensors with their config in the metadata (an older weights.pt is
still read, tensors only); lambda's one default, 2 v; and the permutation symmetry that lets
``construct`` evaluate one input per length (issue 24, requirements 2 and 9)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors import safe_open

import resharpen as rs
from resharpen.constructions import set_complement as cons
from resharpen.experiments.set_complement.evaluate import per_position_metrics
from resharpen.experiments.set_complement.report import construction_report


class Payload:
    """An object that is not a tensor (a pickled weights.pt may hold code)."""


@pytest.mark.parametrize("variant, kwargs", [("tight", dict(norm="attn_out")),
                                             ("balanced", dict(lam=3.0, beta=0.5, seed=4))])
def test_saved_as_safetensors_with_the_config_in_the_metadata(tmp_path, variant, kwargs):
    built = rs.build(variant, vocab=7, **kwargs)
    rs.save_construction(built, tmp_path / "c")
    assert {p.name for p in (tmp_path / "c").iterdir()} == {"weights.safetensors", "config.json"}
    with safe_open(str(tmp_path / "c" / "weights.safetensors"), framework="pt") as handle:
        metadata = handle.metadata()
    assert json.loads(metadata["model_config"]) == built.model.cfg.to_dict()
    assert json.loads(metadata["construction"]) == built.params()
    (tmp_path / "c" / "config.json").unlink()  # the weights file alone is enough
    again = rs.load_construction(tmp_path / "c")
    for (name, a), (_, b) in zip(built.model.state_dict().items(),
                                 again.model.state_dict().items()):
        assert a.dtype == b.dtype == torch.float64 and torch.equal(a, b), name
    assert again.params() == built.params()


def test_an_old_weights_pt_folder_is_still_read_with_weights_only(tmp_path):
    built = rs.build("tight", vocab=6, norm="post", lam=5.0)
    folder = tmp_path / "old"
    folder.mkdir()
    torch.save(built.model.state_dict(), folder / "weights.pt")
    (folder / "config.json").write_text(json.dumps({"model": built.model.cfg.to_dict(),
                                                    "construction": built.params()}))
    again = rs.load_construction(folder)
    assert all(torch.equal(a, b) for a, b in zip(built.model.state_dict().values(),
                                                 again.model.state_dict().values()))
    assert again.params() == built.params()

    torch.save({"W_E": Payload()}, folder / "weights.pt")  # weights_only refuses to unpickle it
    with pytest.raises(ValueError, match="weights.pt is not a weights file"):
        rs.load_construction(folder)


def test_corrupt_or_missing_weights_are_named(tmp_path):
    built = rs.build("tight", vocab=5)
    rs.save_construction(built, tmp_path / "c")
    (tmp_path / "c" / "weights.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="weights.safetensors is not a construction's weights"):
        rs.load_construction(tmp_path / "c")
    (tmp_path / "c" / "weights.safetensors").unlink()
    with pytest.raises(ValueError, match="weights.safetensors or weights.pt missing"):
        rs.load_construction(tmp_path / "c")


def test_lambda_has_one_default_two_v_in_the_api_and_the_cli(tmp_path):
    assert rs.build("tight", vocab=8).lam == 16.0
    assert rs.build("one_hot", vocab=5, norm="attn_out").lam == 10.0
    balanced = rs.build("balanced", vocab=6)  # lambda_x = lam r_x, lam = 2 v
    assert np.allclose(balanced.lambdas, 12.0 * cons.random_lambdas(6, 0), rtol=0, atol=0)
    out = tmp_path / "c"
    done = subprocess.run([sys.executable, "-m", "resharpen", "construct", "--vocab", "8",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "report.json").read_text())["construction"]["lam"] == 16.0
    assert rs.load_construction(out).lam == 16.0


# ----------------------------------------------------------------------------- symmetry
SYMMETRIC = [("tight", dict(norm="none")), ("tight", dict(norm="attn_out", gain=1.7)),
             ("tight", dict(norm="post", lam=3.0)), ("tight", dict(norm="pre", beta=0.5)),
             ("one_hot", dict(norm="none")), ("one_hot", dict(norm="attn_out")),
             ("one_hot", dict(norm="post", norm_kind="layer")),
             ("unbalanced", dict(lam=9.0, self_score=1.5))]


@pytest.mark.parametrize("variant, kwargs", SYMMETRIC, ids=[f"{v}-{k}" for v, k in SYMMETRIC])
def test_a_symmetric_construction_gives_every_input_of_a_length_the_same_metrics(variant, kwargs):
    """The property :attr:`Construction.symmetric` states: 24 random inputs per length give
    the same metrics as the prefixes of one permutation, to float64 rounding."""
    v = 11
    built = rs.build(variant, vocab=v, **kwargs)
    assert built.symmetric
    many, _ = per_position_metrics(built.model, v, v - 1, per_length=24, seed=5)
    one, _ = per_position_metrics(built.model, v, v - 1, per_length=1, seed=99)
    for name in ("invalid_mass", "kl", "tv", "margin_query", "margin_nonquery_min",
                 "margin_nonquery_max", "margin_min", "top1_invalid"):
        a, b = many[name].numpy(), one[name].numpy()
        scale = max(1.0, float(np.nanmax(np.abs(b))))
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12 * scale, equal_nan=True), name


def test_the_balanced_construction_is_not_symmetric_and_keeps_random_inputs():
    built = rs.build("balanced", vocab=11, lam=3.0, seed=2)
    assert not built.symmetric
    many, _ = per_position_metrics(built.model, 11, 10, per_length=24, seed=5)
    assert float(many["margin_nonquery_min"][:, 4].std()) > 1e-3  # inputs differ
    report = construction_report(built, per_length=16)
    assert report["per_length_inputs"] == 16 and "symmetric" not in report


def test_construct_evaluates_one_permutation_for_a_symmetric_construction():
    report = construction_report(rs.build("tight", vocab=40, norm="attn_out"), per_length=16)
    assert report["per_length_inputs"] == 1 and "permutation-symmetric" in report["symmetric"]
    assert [r["length"] for r in report["lengths"]] == list(range(1, 40))
    assert max(r["rel_error_margin"] for r in report["lengths"]) < 1e-12
    assert max(r["metric_error_ratio"] for r in report["lengths"]) <= 1.0
    assert cons.build("one_hot", 5).symmetric and cons.build("unbalanced", 5).symmetric
