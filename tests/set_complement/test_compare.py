"""The lemma fit of trained weights (experiments/set_complement/compare.py) and `resharpen compare`.

Tolerances are fixed from float64 rounding: the constructions are built exactly, so a fit of
their B, D has a relative residual of a few 1e-15 and recovers lambda, beta to ~1e-13; the bounds
below leave three orders of magnitude."""
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from resharpen.cli import main
from resharpen.constructions.set_complement import (balanced, one_hot, random_lambdas, tight,
                                                    unbalanced)
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.set_complement.compare import compare_model, compare_run, fit_lemma

EXACT = 1e-10
BASE = Path(__file__).resolve().parents[2] / "experiments/configs/set_complement/base_sampled.toml"


def gaussian_model(vocab: int, seed: int, norm: str = "none") -> Transformer:
    torch.manual_seed(seed)
    return Transformer(ModelConfig(vocab=vocab, d_model=vocab, norm=norm, init_std=1.0)).double()


def test_tight_construction_fits_exactly_and_recovers_lambda_beta():
    fit = fit_lemma(*tight(10, lam=20.0, beta=1.5).model.logit_matrices())
    assert fit.relative_residual < EXACT
    np.testing.assert_allclose(fit.lambdas, 20.0, rtol=EXACT)
    np.testing.assert_allclose(fit.betas, 1.5, rtol=EXACT)
    assert abs(fit.u.sum()) < EXACT  # u is reported in 1-perp


def test_balanced_construction_recovers_per_token_lambdas():
    lambdas = 4.0 * random_lambdas(11, seed=3)
    fit = fit_lemma(*balanced(11, lambdas, beta=0.7).model.logit_matrices())
    assert fit.relative_residual < EXACT
    np.testing.assert_allclose(fit.lambdas, lambdas, rtol=EXACT)
    np.testing.assert_allclose(fit.betas, 0.7, rtol=EXACT)


def test_random_gaussian_model_is_far_from_the_family():
    for seed in range(3):
        assert fit_lemma(*gaussian_model(12, seed).logit_matrices()).relative_residual > 0.5


def test_residual_grows_linearly_with_a_weight_perturbation():
    def perturbed(eps: float) -> float:
        model = tight(10, lam=20.0, beta=1.5).model
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(eps * torch.randn(p.shape, generator=generator, dtype=p.dtype))
        return fit_lemma(*model.logit_matrices()).relative_residual

    small, large = perturbed(1e-5), perturbed(1e-4)
    assert 1e-7 < small < 1e-3
    assert 9.0 < large / small < 11.0  # first order in eps


def test_fit_is_the_docstrings_closed_form_minimizer():
    """u = (v-1)/(2v(v-2)) sum_x Pi_x (D~[x] - B~[x]), lambda_x = v/(v-1)(u_x - D~[x,x]),
    beta_x = -v/(v-1)(u_x + B~[x,x]), computed here by an independent route."""
    rng = np.random.default_rng(0)
    v = 7
    B, D = rng.normal(size=(v, v)), rng.normal(size=(v, v))
    P = np.eye(v) - 1.0 / v
    B_c, D_c = B @ P, D @ P
    u = np.zeros(v)
    for x in range(v):
        p = P[:, x]
        u += (P - np.outer(p, p) / (p @ p)) @ (D_c[x] - B_c[x])
    u *= (v - 1) / (2 * v * (v - 2))
    fit = fit_lemma(B, D)
    np.testing.assert_allclose(fit.u, u, atol=EXACT)
    np.testing.assert_allclose(fit.lambdas, v / (v - 1) * (u - np.diag(D_c)), atol=EXACT)
    np.testing.assert_allclose(fit.betas, -v / (v - 1) * (u + np.diag(B_c)), atol=EXACT)
    B_fit, D_fit = fit.matrices()
    residual = np.concatenate([(B - B_fit) @ P, (D - D_fit) @ P])
    scale = np.linalg.norm(np.concatenate([B_c, D_c]))
    assert fit.relative_residual == pytest.approx(np.linalg.norm(residual) / scale, rel=1e-12)


def _lstsq_member(B: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, lambda, beta) by a dense least-squares solve of the fit's 2v^2 x (3v - 1) design
    (u = Q a, Q an orthonormal basis of 1-perp): the reference the closed form is held to."""
    import scipy.linalg
    v = B.shape[0]
    P = np.eye(v) - 1.0 / v
    Q = scipy.linalg.null_space(np.ones((1, v)))
    row, entries = np.repeat(np.arange(v), v), np.arange(v * v)
    design = np.zeros((2 * v * v, 3 * v - 1))
    design[: v * v, : v - 1] = np.tile(Q, (v, 1))
    design[entries, v - 1 + row] = -P.ravel()
    design[v * v:, : v - 1] = -np.tile(Q, (v, 1))
    design[v * v + entries, 2 * v - 1 + row] = -P.ravel()
    theta = scipy.linalg.lstsq(design, np.concatenate([(D @ P).ravel(), (B @ P).ravel()]))[0]
    return Q @ theta[: v - 1], theta[v - 1: 2 * v - 1], theta[2 * v - 1:]


@pytest.mark.parametrize("v, seed", [(3, 0), (7, 1), (32, 2), (64, 3)])
def test_closed_form_equals_the_least_squares_solve(v, seed):
    rng = np.random.default_rng(seed)
    B, D = rng.normal(size=(v, v)), rng.normal(size=(v, v)) * 5.0
    u, lambdas, betas = _lstsq_member(B, D)
    fit = fit_lemma(B, D)
    np.testing.assert_allclose(fit.u, u, atol=EXACT)
    np.testing.assert_allclose(fit.lambdas, lambdas, atol=EXACT)
    np.testing.assert_allclose(fit.betas, betas, atol=EXACT)


def test_fit_ignores_row_shifts():
    rng = np.random.default_rng(1)
    B, D = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    shifted = fit_lemma(B + rng.normal(size=(6, 1)), D + rng.normal(size=(6, 1)))
    plain = fit_lemma(B, D)
    np.testing.assert_allclose(shifted.lambdas, plain.lambdas, atol=EXACT)
    np.testing.assert_allclose(shifted.betas, plain.betas, atol=EXACT)
    assert shifted.relative_residual == pytest.approx(plain.relative_residual, rel=1e-12)


@pytest.mark.parametrize("bad, fragment", [
    ((np.zeros((2, 2)), np.eye(2)), "v >= 3"),
    ((np.eye(4), np.eye(5)), "square v x v"),
    ((np.ones((4, 4)), np.ones((4, 4))), "constant along every row"),
    ((np.full((4, 4), np.nan), np.eye(4)), "finite"),
])
def test_fit_rejects_bad_matrices(bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        fit_lemma(*bad)


def test_tight_construction_comparison_matches_the_theory():
    lam, beta, v = 20.0, 1.5, 10
    record = compare_run(tight(v, lam=lam, beta=beta).model, train_len=4, count=32)
    assert record["relative_residual"] < EXACT and record["lambdas_positive"]
    assert record["attention"]["uniformity_max"] < EXACT  # W_Q = W_K = 0: uniform attention
    assert record["attention"]["imbalance_max"] < EXACT
    for row in record["per_length"]:
        s = row["length"]
        for source in ("trained", "fit", "construction"):
            assert row[f"{source}_margin_query"] == pytest.approx(beta + lam / s, rel=1e-9)
            if s > 1:
                assert row[f"{source}_margin_nonquery_min"] == pytest.approx(lam / s, rel=1e-9)
    json.dumps(record, allow_nan=False)


def test_balanced_construction_is_balanced_but_not_uniform():
    lambdas = 4.0 * random_lambdas(9, seed=5)
    record = compare_model(balanced(9, lambdas, beta=0.7).model, train_len=4, count=32)
    assert record["attention"]["uniformity_max"] > 0.1
    assert record["attention"]["imbalance_max"] < EXACT
    for row in record["per_length"][1:]:
        assert row["construction_margin_nonquery_min"] == pytest.approx(
            row["trained_margin_nonquery_min"], rel=1e-9)
        assert row["construction_invalid_mass"] == pytest.approx(row["trained_invalid_mass"],
                                                                 rel=1e-9)


def test_unbalanced_attention_is_seen_and_the_fit_column_isolates_it():
    """Same B, D as tight (exact fit), attention bonus on the query: the fit with the model's
    own attention reproduces the model; the balanced construction does not."""
    record = compare_model(unbalanced(10, lam=20.0, beta=1.0, self_score=1.5).model,
                           train_len=4, count=32)
    assert record["relative_residual"] < EXACT
    assert record["attention"]["imbalance_max"] > 0.5
    row = record["per_length"][4]  # s = 5
    assert row["fit_margin_nonquery_min"] == pytest.approx(row["trained_margin_nonquery_min"],
                                                           rel=1e-9)
    assert row["construction_margin_nonquery_min"] > 1.5 * row["trained_margin_nonquery_min"]


def test_gaussian_model_comparison_is_json_ready():
    record = compare_model(gaussian_model(8, 0), count=16)
    assert record["relative_residual"] > 0.5 and record["train_len"] == 2
    if not record["lambdas_positive"]:
        assert record["per_length"][2]["construction_invalid_mass"] is None
    json.dumps(record, allow_nan=False)


def test_other_placements_and_misuse_are_refused():
    for norm in ("mixln", "ngpt", "ln_scaling"):
        with pytest.raises(ValueError, match=f"placements none, pre, .*; this model has "
                                             f"norm='{norm}'"):
            compare_model(gaussian_model(8, 0, norm=norm))
    with pytest.raises(ValueError, match="train_len|input length"):
        compare_model(tight(8, lam=8.0).model, train_len=8)
    with pytest.raises(ValueError, match="run folder"):
        compare_run(tight(8, lam=8.0).model, weights="ema")


# ----------------------------------------------------------------------------- the CLI
@pytest.fixture
def fake_runs(monkeypatch, tmp_path):
    """Run folders whose ``load_run(path).model(weights)`` returns a construction (none) or a
    mixln model (folder named 'mixln', a placement compare refuses): the CLI's path, without
    training."""
    calls = []

    def load_run(folder):
        folder = tmp_path / folder
        if not folder.is_dir():
            raise ValueError(f"run folder {str(folder)!r} does not exist")

        def model(weights):
            calls.append(weights)
            if folder.name == "mixln":
                return gaussian_model(8, 0, norm="mixln")
            return tight(8, lam=16.0, beta=1.0).model

        return SimpleNamespace(summary={"primary": "ema"}, config={"task": {"train_len": 2}},
                               model=model)

    monkeypatch.setattr("resharpen.experiments.training.runs.load_run", load_run)
    (tmp_path / "none").mkdir()
    (tmp_path / "mixln").mkdir()
    return tmp_path, calls


def test_cli_compare_prints_a_table_and_writes_json(fake_runs, capsys):
    root, calls = fake_runs
    code = main(["compare", "none", "--json", str(root / "c.json"), "--count", "8"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert calls == ["ema"]  # the run's primary weights by default
    record = json.loads((root / "c.json").read_text())
    assert record["weights"] == "ema" and record["train_len"] == 2
    assert len(record["per_length"]) == 7 and record["relative_residual"] < EXACT
    assert "relative residual" in out and "uniformity" in out
    assert main(["compare", "none", "--weights", "raw", "--count", "8"]) == 0
    assert calls[-1] == "raw"


@pytest.mark.parametrize("args, fragment", [
    (["compare", "missing"], "does not exist"),
    (["compare", "mixln"], "this model has norm='mixln'"),
    (["compare", "none", "--weights", "swa"], "invalid choice: 'swa'"),
])
def test_cli_compare_bad_input_is_one_line_and_exit_2(fake_runs, capsys, args, fragment):
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0]


def test_compare_a_trained_run_folder(tmp_path, capsys):
    """End to end on a real (short) run: its saved weights are loaded and compared."""
    from resharpen.experiments.training.loop import save_run
    from resharpen.experiments.set_complement.train import load_config, train

    config = load_config(BASE, ["train.steps=30", "train.eval_every=0", "task.vocab=8",
                                "model.d_model=8"], profile="quick")
    folder = save_run(train(config, progress=False), tmp_path / "run")
    record = compare_run(folder, weights="bema", count=8)
    assert record["weights"] == "bema" and record["train_len"] == config["task"]["train_len"]
    assert 0.0 < record["relative_residual"] < 1.0
    assert main(["compare", str(folder), "--count", "8"]) == 0
    assert "(raw weights)" in capsys.readouterr().out  # train.ema = none: raw is primary


# ----------------------------------------------------------------------------- every placement
def perturbed(model: Transformer, seed: int) -> Transformer:
    """``model`` with every norm gain and bias moved off 1 and 0 (the fold must carry them)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("gain", "bias")):
                param.add_(0.3 * torch.randn(param.shape, generator=generator,
                                             dtype=param.dtype))
    return model


@pytest.mark.parametrize("norm_kind", ["rms", "layer"])
@pytest.mark.parametrize("norm", ["none", "pre", "pre_nofinal", "post", "attn_out", "peri"])
def test_the_readout_form_is_the_models_own_logits(norm, norm_kind):
    """f = c (B*[t_s] + a sum_i w_i D*[t_i]) + e with the model's attention reproduces its
    logits at every prefix, for every placement compare takes, RMSNorm and LayerNorm."""
    from resharpen.experiments.tasks.set_complement import sample_inputs
    from resharpen.experiments.set_complement.compare import PATTERN, readout

    torch.manual_seed(1)
    model = perturbed(Transformer(ModelConfig(vocab=9, d_model=12, norm=norm, norm_kind=norm_kind,
                                              init_std=0.5)).double().eval(), 2)
    tokens = sample_inputs(9, 8, 5, seed=0)
    with model.capture(PATTERN) as cache:
        logits = model(tokens)
    form = readout(model)
    rebuilt = form.logits(form.B, form.D, cache[PATTERN][:, 0], tokens)
    torch.testing.assert_close(rebuilt, logits, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", ["attn_out", "post", "pre"])
@pytest.mark.parametrize("norm_kind", ["rms", "layer"])
def test_normalized_constructions_fit_exactly(norm, norm_kind):
    """The constructions with a normalized readout lie on the lemma's family once the gains are
    folded: residual ~ 0, and the fitted maps give the model's own margins (LayerNorm on the
    one-hot embedding: the tight one is not exact with it)."""
    build = tight if norm_kind == "rms" else one_hot
    model = build(9, lam=18.0, beta=1.0, norm=norm, norm_kind=norm_kind).model
    record = compare_model(model, train_len=3, count=8)
    assert record["relative_residual"] < 1e-8
    assert record["random_relative_residual"] > 0.5
    for row in record["per_length"][1:]:
        assert row["fit_margin_nonquery_min"] == pytest.approx(
            row["trained_margin_nonquery_min"], rel=1e-7, abs=1e-9)


def test_the_random_reference_is_computed_and_leaves_the_global_seed():
    from resharpen.experiments.set_complement.compare import random_residual

    torch.manual_seed(5)
    expected = torch.rand(1)
    torch.manual_seed(5)
    cfg = ModelConfig(vocab=10, d_model=16, norm="post")
    value = random_residual(cfg, seed=0)
    assert torch.rand(1) == expected  # the global random state is untouched
    assert 0.5 < value < 1.0 and value == random_residual(cfg, seed=0)


@pytest.mark.parametrize("norm", ["none", "pre", "post", "attn_out", "peri"])
def test_compare_every_placement_on_a_tiny_trained_run(norm, tmp_path, capsys):
    """``resharpen compare RUN`` on a run trained 30 steps: exit 0, the residual with its random
    reference, the chance invalid mass, the fitted construction's margins beside the trained
    ones, every symbol explained, no 'nan'."""
    run = tmp_path / norm
    assert main(["train", str(BASE), "--profile", "quick", "--set", "train.steps=30",
                 "--set", "task.vocab=8", "--set", "model.d_model=8", "--set",
                 "train.eval_every=0", "--set", f"model.norm={norm}", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["compare", str(run), "--count", "8", "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert f"placement {norm}" in out and "for a random model of this config" in out
    for column in ("inv chance", "m_nq trained", "m_nq constr"):
        assert column in out
    assert "chance = s/v" in out and "- = not defined" in out and "nan" not in out.lower()
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["placement"] == norm and 0.0 <= record["relative_residual"] <= 1.0
    assert record["per_length"][1]["chance_invalid_mass"] == pytest.approx(2 / 8)
