"""Sizes are bounded before allocation (issue 16, requirement 4), and construct scales.

The memory estimates of experiments/common/limits.py refuse, with one line naming the estimate,
what does not fit the available memory or --max-memory; the construction report evaluates a
bounded number of inputs per length in bounded memory and stays finite at any v (v = 10^4 in the
slow suite) and at extreme scales (requirement 6)."""
from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from resharpen.cli import main
from resharpen.constructions import set_complement as cons
from resharpen.experiments.common import limits
from resharpen.experiments.tasks.set_complement import sample_inputs
from resharpen.experiments.set_complement import evaluate
from resharpen.experiments.set_complement.report import (bounded_inputs, construction_report,
                                                         theory_metrics)


@pytest.mark.parametrize("text, expected", [("8G", 8 * 2 ** 30), ("512MB", 512 * 2 ** 20),
                                            ("1.5GiB", int(1.5 * 2 ** 30)), ("2e9", 2 * 10 ** 9),
                                            ("10k", 10240), (4096, 4096)])
def test_parse_size(text, expected):
    assert limits.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "G", "8X", "-1G", "0", "nan", "inf", "1e400"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError, match="memory size"):
        limits.parse_size(text)


def test_require_names_the_estimate_and_the_limit():
    assert limits.require(100, "x", max_memory=1000) == 100
    with pytest.raises(ValueError, match=r"^work --n 5 needs about 1\.95 KiB of memory \(estimate\), "
                                         r"more than the --max-memory limit of 1000 B"):
        limits.require(2000, "work --n 5", max_memory=1000)
    available = limits.available_memory()
    assert available is None or available > 0
    if available is not None:
        with pytest.raises(ValueError, match="available memory"):
            limits.require(available * 4, "work")


def test_the_sizes_of_the_issue_are_refused_before_allocation():
    assert limits.construct_bytes("tight", 100_000) > 2 ** 40  # 1.3 TiB: the weights alone 80 GB
    assert limits.simulate_bytes(100_000, 16, 11) > 74 * 2 ** 30  # n x n float64 = 74.5 GiB
    assert limits.stacks_bytes(32, 100_000) > 74 * 2 ** 30
    assert limits.sample_bytes(10 ** 9, 16, 5) > 2 ** 40 / 8
    with pytest.raises(ValueError, match=r"construction at v = 100000 \(--vocab\) needs about"):
        cons.build("tight", 100_000)


@pytest.mark.parametrize("argv", [
    ["construct", "--vocab", "100000"],
    ["construct", "--vocab", "200", "--max-memory", "1M"],
    ["tasks", "sample", "dyck2", "--count", "1000000", "--length", "10000"],  # under the count cap
    ["dynamics", "simulate", "--scheme", "preln", "--n", "100000"],
    ["dynamics", "stacks", "--d", "100000"],
    ["collapse", "stack", "--d", "100000"],
])
def test_cli_refuses_with_one_line_and_writes_nothing(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["--json", str(tmp_path / "out.json")] if argv[0] != "tasks" else argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "needs about" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_max_memory_flag_is_checked_by_argparse(capsys):
    assert main(["construct", "--vocab", "8", "--max-memory", "lots"]) == 2
    assert "--max-memory" in capsys.readouterr().err


def test_construct_estimate_bounds_the_measured_peak():
    """Peak RSS of build + report at v = 1000 (a fresh process) against the estimate: above it
    by no more than the interpreter and torch (0.6 GB), below it by at most a factor of 4."""
    code = ("import resource, sys\n"
            "from resharpen.constructions.set_complement import build\n"
            "from resharpen.experiments.set_complement.report import construction_report\n"
            "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "construction_report(build('tight', 1000, lam=2000.0), per_length=4)\n"
            "print(base * 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    base, peak = map(int, out.stdout.split())
    estimate = limits.construct_bytes("tight", 1000, inputs=4)
    assert peak - base <= estimate + 600 * 2 ** 20
    assert estimate <= 4 * peak


# ----------------------------------------------------------------------------- construct scales
def test_complement_basis_is_the_helmert_basis_bit_for_bit():
    """The vectorized basis equals the column-by-column one it replaced, at a size (v = 700)
    where torch's vectorized sqrt would differ in the last bit (from k = 223 on)."""
    Q = cons.complement_basis(700)
    for k in range(1, 700):
        column = torch.zeros(700, dtype=torch.float64)
        column[:k], column[k] = 1.0, -float(k)
        column /= math.sqrt(k * (k + 1))
        assert torch.equal(Q[:, k - 1], column), k


@pytest.mark.parametrize("variant, norm", [("tight", "none"), ("tight", "post"),
                                           ("one_hot", "attn_out"), ("balanced", "none"),
                                           ("unbalanced", "none")])
def test_theory_margins_by_length_match_theory_margins(variant, norm):
    built = cons.build(variant, 12, norm=norm, lam=7.0, beta=0.5, seed=3)
    tokens = sample_inputs(12, 11, 5, seed=2)
    nq, q = cons.theory_margins_by_length(built, tokens)
    for s in range(1, 12):
        nq_s, q_s = cons.theory_margins(built, tokens[:, :s])
        np.testing.assert_allclose(nq[:, s - 1], nq_s, rtol=1e-14)
        np.testing.assert_allclose(q[:, s - 1], q_s, rtol=1e-14)


def test_chunked_evaluation_gives_the_same_numbers_to_rounding(monkeypatch):
    """Chunks change only the shapes the vectorized kernels see: rounding-level differences."""
    model = cons.build("tight", 40, norm="post", lam=80.0).model
    whole, tokens = evaluate.per_position_metrics(model, 40, 39, 9, seed=1)
    monkeypatch.setattr(evaluate, "evaluation_chunk_inputs", lambda per_input, inputs: 2)
    chunked, again = evaluate.per_position_metrics(model, 40, 39, 9, seed=1)
    assert torch.equal(tokens, again)
    for name in whole:
        torch.testing.assert_close(chunked[name], whole[name], rtol=1e-13, atol=1e-300,
                                   equal_nan=True, msg=name)


def test_inputs_per_length_are_bounded_by_the_flop_budget():
    def stub(vocab):
        d = vocab - 1
        return SimpleNamespace(vocab=vocab, model=SimpleNamespace(
            cfg=SimpleNamespace(d_model=d, head_width=d, value_width=d)))
    assert bounded_inputs(stub(64), 16) == 16
    assert bounded_inputs(stub(10_000), 16) == 1
    assert bounded_inputs(stub(2000), 16) == 4


def _all_values(report):
    for row in report["lengths"]:
        for key, value in row.items():
            if key != "valid_spread" and isinstance(value, float):
                yield key, value


@pytest.mark.parametrize("kwargs", [
    dict(variant="unbalanced", beta=-1e3, lam=1e3),   # np.exp overflowed here (issue 16)
    dict(variant="tight", norm="post", gain=1e15),    # valid_spread = inf
    dict(variant="tight", lam=1e6, beta=-1e5),  # the query wins by 1e5 nats
])
def test_extreme_scales_give_finite_numbers_and_small_relative_errors(kwargs):
    report = construction_report(cons.build(vocab=200, **kwargs), per_length=2)
    assert all(math.isfinite(value) for _, value in _all_values(report))
    assert max(r["rel_error_margin"] for r in report["lengths"]) < 1e-12
    assert max(r["rel_valid_spread"] for r in report["lengths"]) < 1e-12


def test_theory_metrics_in_log_space_match_the_direct_formula_and_do_not_overflow():
    s = np.arange(1, 50.0)
    nq, q = 100.0 / s, 1.0 + 100.0 / s
    total = (s - 1) * np.exp(-nq) + np.exp(-q)
    got = theory_metrics(50, s, nq, q)
    np.testing.assert_allclose(got["invalid_mass"], total / (50 - s + total), rtol=1e-13)
    np.testing.assert_allclose(got["kl"], np.log1p(total / (50 - s)), rtol=1e-13)
    huge = theory_metrics(50, s, -1e3 + 0 * s, -2e3 + 0 * s)
    assert np.all(huge["invalid_mass"] == 1.0) and np.all(np.isfinite(huge["kl"]))
    np.testing.assert_allclose(huge["kl"], 2e3 - np.log(50 - s), rtol=1e-12)


def test_construct_at_a_mid_size_is_finite():
    report = construction_report(cons.build("tight", 600, lam=1200.0))
    assert report["per_length_inputs"] == 1 and "symmetric" in report  # one permutation
    assert all(math.isfinite(value) for _, value in _all_values(report))
    assert max(r["rel_error_margin"] for r in report["lengths"]) < 1e-12


@pytest.mark.slow
def test_construct_at_v_ten_thousand_is_finite():
    """v = 10^4 (compass: no NaN up to v = 10^4): one input per length, every length."""
    report = construction_report(cons.build("tight", 10_000, lam=20_000.0))
    assert report["per_length_inputs"] == 1 and "symmetric" in report
    assert len(report["lengths"]) == 9999
    assert all(math.isfinite(value) for _, value in _all_values(report))
    assert all(r["valid_spread"] is not None and math.isfinite(r["valid_spread"])
               for r in report["lengths"])
    assert max(r["rel_error_margin"] for r in report["lengths"]) < 1e-10
    assert max(r["metric_error_ratio"] for r in report["lengths"]) <= 1.0
