import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resharpen.constructions import set_complement as cons
from resharpen.experiments.set_complement.metrics import complement_metrics
from resharpen.experiments.set_complement.report import construction_errors
from resharpen.experiments.tasks.set_complement import sample_inputs

BUILDS = [("tight", "none", "rms"), ("tight", "attn_out", "rms"), ("tight", "post", "rms"),
          ("tight", "pre", "rms"), ("one_hot", "none", "rms"), ("one_hot", "attn_out", "layer"),
          ("one_hot", "post", "layer"), ("one_hot", "pre", "rms"), ("balanced", "none", "rms"),
          ("unbalanced", "none", "rms")]


@given(build=st.sampled_from(BUILDS), vocab=st.integers(4, 40), data=st.data())
@settings(max_examples=60, deadline=None)
def test_construction_matches_theory_on_random_inputs(build, vocab, data):
    variant, norm, kind = build
    lam = data.draw(st.floats(0.05, 200.0))
    beta = data.draw(st.floats(0.05, 20.0))
    gain = data.draw(st.floats(0.05, 5.0))
    built = cons.build(variant, vocab, norm=norm, norm_kind=kind, lam=lam, beta=beta, gain=gain,
                       seed=data.draw(st.integers(0, 100)))
    length = data.draw(st.integers(1, vocab - 1))
    tokens = sample_inputs(vocab, length, 5, seed=data.draw(st.integers(0, 10**6)))
    with torch.no_grad():
        m = complement_metrics(built.model(tokens)[:, -1], tokens, vocab)
    nonquery, query = cons.theory_margins(built, tokens)
    scale = max(1.0, float(np.max(np.abs(query))))
    assert np.allclose(m["margin_query"].detach().numpy(), query, rtol=0, atol=1e-10 * scale)
    if length > 1:
        for key in ("margin_nonquery_min", "margin_nonquery_max"):
            assert np.allclose(m[key].detach().numpy(), nonquery, rtol=0, atol=1e-10 * scale)
    assert float((m["valid_spread"] - 1).abs().max()) < 1e-10 * scale


def test_tight_is_at_the_bound_and_one_hot_above_it():
    tight = cons.tight(9, lam=2.0)
    assert tight.model.cfg.d_model == tight.model.cfg.value_width == 8
    _, D = tight.model.logit_matrices()
    assert int(torch.linalg.matrix_rank(D)) == 8
    assert cons.one_hot(9, lam=2.0).model.cfg.d_model == 9
    Q = cons.complement_basis(9)
    assert torch.allclose(Q.T @ Q, torch.eye(8, dtype=torch.float64), atol=1e-14)
    assert torch.allclose(Q.sum(0), torch.zeros(8, dtype=torch.float64), atol=1e-14)


def test_no_norm_margin_decays_like_one_over_s_and_attn_out_does_not():
    rows_none = construction_errors(cons.tight(32, lam=32.0), per_length=4)
    rows_norm = construction_errors(cons.tight(32, lam=32.0, norm="attn_out"), per_length=4)
    assert rows_none[-1]["margin_nonquery"] == pytest.approx(32.0 / 31, rel=1e-12)
    assert min(r["margin_nonquery"] for r in rows_norm[1:]) == pytest.approx(2 * np.sqrt(31 / 32), rel=1e-3)


def test_negative_beta_lets_the_query_win_at_long_lengths():
    rows = construction_errors(cons.tight(12, lam=5.5, beta=-1.0), per_length=4)
    assert [r["top1_invalid"] for r in rows] == [0.0] * 5 + [1.0] * 6


def test_save_load_round_trip(tmp_path):
    built = cons.build("balanced", 7, lam=3.0, beta=0.5, seed=4)
    cons.save(built, tmp_path / "c")
    again = cons.load(tmp_path / "c")
    for a, b in zip(built.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    assert again.params() == built.params()


def test_load_reports_a_broken_config(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a valid construction config"):
        cons.load(tmp_path)
    with pytest.raises(ValueError, match="config.json missing"):
        cons.load(tmp_path / "nothing")


@pytest.mark.parametrize("kwargs, message", [
    (dict(variant="tight", vocab=5, norm="post", norm_kind="layer"), "LayerNorm on the tight"),
    (dict(variant="tight", vocab=5, norm="post", beta=-1.0), "normalized readouts need beta > 0"),
    (dict(variant="tight", vocab=5, lam=-1.0), r"lambda \(--lam\) must be a finite number > 0"),
    (dict(variant="tight", vocab=5, gain=0.0), "gain must be a finite number > 0"),
    (dict(variant="tight", vocab=5, beta=0.0), "beta must be a finite non-zero number"),
    (dict(variant="tight", vocab=5, norm="sideways"), "norm 'sideways' is not one of"),
    (dict(variant="magic", vocab=5), "variant 'magic' is not one of"),
    (dict(variant="balanced", vocab=5, norm="post"), "readout 'none' only"),
    (dict(variant="tight", vocab=1), "vocabulary size must be >= 2"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cons.build(**kwargs)
