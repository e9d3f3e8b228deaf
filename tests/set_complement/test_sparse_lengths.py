"""``construct`` evaluates by default the last position of each of a log-spaced set of lengths;
that sparse evaluation equals the full one (every position of one forward pass) at those
lengths, to 1e-10 in float64, on every construction and readout."""
import json

import pytest
import torch

import resharpen as rs
from resharpen.cli import main
from resharpen.experiments.set_complement.evaluate import (log_lengths, per_position_metrics,
                                                           position_metrics)
from resharpen.experiments.set_complement.report import construction_report

VOCAB = 150
BUILDS = [("tight", "none", "rms"), ("tight", "attn_out", "rms"), ("tight", "post", "rms"),
          ("tight", "pre", "rms"), ("one_hot", "post", "layer"), ("one_hot", "attn_out", "rms"),
          ("unbalanced", "none", "rms"), ("balanced", "none", "rms")]


def test_log_lengths():
    assert log_lengths(10) == list(range(1, 10))
    assert log_lengths(65) == list(range(1, 65))
    chosen = log_lengths(10_000)
    assert chosen[:64] == list(range(1, 65)) and chosen[-1] == 9999 and 5000 in chosen
    assert 120 <= len(chosen) <= 130 and chosen == sorted(set(chosen))


@pytest.mark.parametrize("variant, norm, kind", BUILDS)
def test_sparse_metrics_equal_the_full_evaluation(variant, norm, kind):
    built = rs.build(variant, vocab=VOCAB, norm=norm, norm_kind=kind)
    lengths = log_lengths(VOCAB, dense=10, spread=12)
    full, tokens = per_position_metrics(built.model, VOCAB, VOCAB - 1, 3, seed=1)
    sparse, same = position_metrics(built.model, VOCAB, lengths, 3, seed=1)
    assert torch.equal(tokens, same)
    columns = torch.tensor(lengths) - 1
    for name, values in sparse.items():
        expected = full[name][:, columns]
        assert values.shape == expected.shape
        assert torch.equal(torch.isnan(values), torch.isnan(expected)), name
        finite = torch.isfinite(expected)
        error = ((values - expected).abs() / expected.abs().clamp_min(1.0))[finite]
        assert error.max().item() < 1e-10, (name, error.max().item())


def test_sparse_report_equals_the_full_report_at_its_lengths():
    built = rs.build("tight", vocab=200, norm="attn_out")
    sparse = construction_report(built, lengths="log")
    full = {row["length"]: row for row in construction_report(built, lengths="all")["lengths"]}
    assert sparse["covered"]["kind"] == "log"
    assert [row["length"] for row in sparse["lengths"]] == log_lengths(200)
    for row in sparse["lengths"]:
        for key in ("margin_nonquery", "margin_query", "invalid_mass", "kl", "theory_kl",
                    "theory_margin_query", "log_valid_spread"):
            if row[key] is not None:
                assert row[key] == pytest.approx(full[row["length"]][key], rel=1e-10, abs=1e-10)


def test_construct_names_the_lengths_it_covers(tmp_path, capsys):
    report = tmp_path / "r.json"
    assert main(["construct", "--vocab", "100", "--json", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["covered"]["count"] == len(data["lengths"]) == len(log_lengths(100))
    assert "lengths: every s = 1..64" in capsys.readouterr().err
    assert main(["construct", "--vocab", "100", "--lengths", "all", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["covered"] == {
        "kind": "all", "count": 99, "text": "every length s = 1..99"}
