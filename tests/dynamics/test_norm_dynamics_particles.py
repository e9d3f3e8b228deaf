"""resharpen.experiments.dynamics.particles, particles_discrete, random_stacks, the dyn.* ledger entries and figures."""
from __future__ import annotations

import math

import numpy as np
import pytest

from resharpen.experiments.dynamics import particles as P
from resharpen.experiments.dynamics.discrete import layer_update, run_layers
from resharpen.experiments.dynamics.random_stacks import norm_growth_exponent, run_stacks
from resharpen.experiments import ledger
from resharpen.theory.dynamics import speed as nd
from resharpen.theory.dynamics import ode
def random_qkv(d, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(3))


def test_attention_is_a_softmax_average():
    theta = P.uniform_sphere(7, 5, seed=1)
    A = P.attention(theta, 3.0)
    W = np.exp(3.0 * theta @ theta.T)
    np.testing.assert_allclose(A, (W / W.sum(1, keepdims=True)) @ theta, rtol=1e-13)
    assert np.linalg.norm(A, axis=1).max() <= 1 + 1e-12          # convex combination
    Q, K, V = random_qkv(5)
    S = 3.0 * (theta @ Q.T) @ (theta @ K.T).T
    W = np.exp(S - S.max(1, keepdims=True))
    np.testing.assert_allclose(P.attention(theta, 3.0, Q, K, V),
                               (W / W.sum(1, keepdims=True)) @ theta @ V.T, rtol=1e-12)


@pytest.mark.parametrize("scheme", nd.SCHEMES)
def test_velocity_is_tangent_and_scaled_by_table2(scheme):
    theta = P.uniform_sphere(6, 4, seed=2)
    r = np.linspace(1, 3, 6)
    dyn = P.Dynamics(scheme, 1.7, alpha0=0.3, tau=0.2)
    v, rdot = P.velocity(1.0, theta, r, dyn)
    assert np.abs(np.einsum("ij,ij->i", theta, v)).max() < 1e-14
    A = P.attention(theta, 1.7)
    a = np.linalg.norm(A, axis=1)
    radial = np.einsum("ij,ij->i", theta, A)
    PA = A - radial[:, None] * theta
    # resharpen.theory.dynamics.speed' symbolic Table 2 (lambdified) against the simulator's own branches
    s, expected_r = nd.table2_twin(scheme)(r, a, radial, 0.3, 1.0, 0.2)
    np.testing.assert_allclose(v, PA / np.broadcast_to(s, (6,))[:, None], rtol=1e-13)
    np.testing.assert_allclose(rdot, np.broadcast_to(expected_r, (6,)), rtol=1e-13)
    if scheme == "mixln":    # before the switch Mix-LN is Post-LN
        v0, r0dot = P.velocity(0.1, theta, r, dyn)
        np.testing.assert_allclose(v0, PA, rtol=1e-13)
        assert not r0dot.any()


@pytest.mark.parametrize("scheme", nd.SCHEMES)
def test_particles_follow_the_scalar_ode(scheme):
    t = np.linspace(0, 10, 11)
    tr = P.simulate(P.Dynamics(scheme, 2.0, tau=1.0), P.orthonormal_start(5, 7, seed=3), 10.0,
                    t_eval=t, r0=1.5, rtol=1e-10, atol=1e-13)
    ref = ode.solve_symmetric(scheme, 2.0, 5, 10.0, r0_=1.5, tau=1.0, t_eval=t)
    np.testing.assert_allclose(P.off_diagonal_mean(tr.gram()), ref.gamma, atol=1e-7)
    np.testing.assert_allclose(tr.r, np.repeat(ref.r[:, None], 5, axis=1), atol=1e-7)


def test_simulation_is_deterministic_and_d1_is_frozen():
    theta = P.uniform_sphere(5, 3, seed=4)
    a = P.simulate(P.Dynamics("periln", 1.0), theta, 3.0)
    b = P.simulate(P.Dynamics("periln", 1.0), theta, 3.0)
    np.testing.assert_array_equal(a.theta, b.theta)
    line = np.array([[1.0], [-1.0], [-1.0]])
    tr = P.simulate(P.Dynamics("postln", 1.0), line, 20.0)
    np.testing.assert_array_equal(tr.theta[-1], line)


def test_gamma_dot_and_variance_dot_match_finite_differences():
    dyn = P.Dynamics("preln", 1.2, *random_qkv(4, 5))
    theta0 = P.uniform_sphere(5, 4, seed=6)
    h = 1e-4
    tr = P.simulate(dyn, theta0, 1.0 + h, t_eval=[1.0 - h, 1.0, 1.0 + h], rtol=1e-12, atol=1e-14)
    G = tr.gram()
    fd = (G[2] - G[0]) / (2 * h)
    np.testing.assert_allclose(P.gamma_dot(tr.theta[1], tr.r[1], 1.0, dyn), fd, atol=1e-7)
    fd_var = (P.variance(tr.theta[2]) - P.variance(tr.theta[0])) / (2 * h)
    assert P.variance_dot(tr.theta[1], tr.r[1], 1.0, dyn) == pytest.approx(fd_var, abs=1e-7)


def test_initial_states():
    X = P.orthonormal_start(4, 6, seed=0)
    np.testing.assert_allclose(X @ X.T, np.eye(4), atol=1e-14)
    C = P.local_cone(6, 5, 0.01, seed=0)
    assert (C @ C.T).min() >= 0.99 - 1e-12
    with pytest.raises(ValueError, match="d >= n"):
        P.orthonormal_start(5, 3)


@pytest.mark.parametrize("scheme", nd.SCHEMES)
def test_one_layer_step_is_consistent_with_the_vector_field(scheme):
    dyn = P.Dynamics(scheme, 1.5, *random_qkv(4, 7), tau=10.0 if scheme != "mixln" else 0.5)
    theta = P.uniform_sphere(5, 4, seed=8)
    r = np.linspace(1, 2, 5)
    t, h = 1.0, 1e-6
    x_next = layer_update(r[:, None] * theta, t, h, dyn)
    r_next = np.linalg.norm(x_next, axis=1)
    v, rdot = P.velocity(t, theta, r, dyn)
    np.testing.assert_allclose((x_next / r_next[:, None] - theta) / h, v, atol=1e-5)
    np.testing.assert_allclose((r_next - r) / h, rdot, atol=1e-5)


def test_run_layers_order_one_convergence():
    dyn = P.Dynamics("preln", 1.0, *random_qkv(3, 9))
    theta = P.uniform_sphere(4, 3, seed=10)
    ref = P.simulate(dyn, theta, 1.0, t_eval=[1.0], rtol=1e-11, atol=1e-13)
    errs = [np.abs(run_layers(dyn, theta, h, round(1 / h))[1][-1] - ref.theta[-1]).max()
            for h in (0.02, 0.01)]
    assert 1.8 < errs[0] / errs[1] < 2.2


def test_random_stacks_share_draws_and_are_seeded():
    a = run_stacks(("postln", "periln"), n=8, d=32, layers=4, seed=3)
    b = run_stacks(("postln", "periln"), n=8, d=32, layers=4, seed=3)
    np.testing.assert_array_equal(a["postln"].cosine, b["postln"].cosine)
    assert a["postln"].cosine[0] == a["periln"].cosine[0]
    np.testing.assert_allclose(a["postln"].norm, 1.0, rtol=1e-14)
    assert a["periln"].norm[-1] > 1.5
    layers = np.arange(101, dtype=float)       # norm_l = l and sqrt(l): exponents 1 and 1/2
    assert norm_growth_exponent(layers) == pytest.approx(1.0, abs=1e-12)
    assert norm_growth_exponent(np.sqrt(layers)) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda: P.Dynamics("postln", 0.0), "beta must be"),
    (lambda: P.Dynamics("pre-ln", 1.0), "unknown scheme"),
    (lambda: P.simulate(P.Dynamics("postln", 1.0), np.ones((1, 3)), 1.0), "n .* >= 2"),
    (lambda: P.simulate(P.Dynamics("postln", 1.0), np.ones((3, 0)), 1.0), "d .* >= 1"),
    (lambda: P.simulate(P.Dynamics("postln", 1.0), np.ones((3, 2)), 0.0), "horizon"),
    (lambda: P.simulate(P.Dynamics("postln", 1.0, Q=np.eye(3)), np.ones((3, 2)), 1.0), "shape"),
    (lambda: P.simulate(P.Dynamics("preln", 1.0), np.ones((3, 2)), 1.0, r0=-1.0), "radii"),
    (lambda: run_layers(P.Dynamics("postln", 1.0), np.ones((3, 2)), 0.0, 3), "step h"),
    (lambda: run_layers(P.Dynamics("postln", 1.0), np.ones((3, 0)), 0.1, 3), "d .* >= 1"),
    (lambda: run_layers(P.Dynamics("postln", 1.0), np.ones((1, 2)), 0.1, 3), "n .* >= 2"),
    (lambda: run_stacks("postln", n=1), "n .* >= 2"),
    (lambda: run_stacks("postln", d=0), "d .* >= 1"),
])
def test_argument_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------- ledger and figures
def dyn_claims():
    """The dyn.* claims, importing only this topic's claim modules (not the whole ledger)."""
    import resharpen.experiments.dynamics.claims  # noqa: F401

    return [c for c in ledger.registered() if c.id.startswith("dyn.")]


def test_dyn_claims_are_registered_with_errata_flagged():
    claims = {c.id: c for c in dyn_claims()}
    assert len(claims) >= 40
    errata = {i for i, c in claims.items() if c.erratum}
    assert {"dyn.erratum.ngpt_constant_alpha", "dyn.erratum.small_beta_delta",
            "dyn.erratum.d1_antipodal", "dyn.erratum.thm43_ngpt_scale",
            "dyn.erratum.survey_bound_t0", "dyn.erratum.sync_symmetric_qk"} == errata
    # dyn.trained.collapse_* hold arXiv 2608.09417 against the trained set of this slice (issue 25)
    assert all(c.source.startswith(("arXiv 2510.22026", "arXiv 2312.10794"))
               or (i.startswith("dyn.trained.collapse_") and c.source.startswith("arXiv 2608.09417"))
               for i, c in claims.items())
    assert all(f"dyn.gamma_dot0.{s}" in claims for s in nd.SCHEMES)


# The quick status of every dyn.* claim is its declared one (``expected_status``: PASS for all
# but the dyn.trained.* findings),
# run by tests/core/test_registry.py: the claims declared ``cost="fast"`` in the default suite,
# the slow ones under `-m slow`.


@pytest.mark.parametrize("name", ["fig_dyn_gamma", "fig_dyn_mc_ratio",
                                  pytest.param("fig_dyn_initial_velocity", marks=pytest.mark.slow),
                                  pytest.param("fig_dyn_random_stacks", marks=pytest.mark.slow)])
def test_figure_writes_png_and_pdf(name, tmp_path):
    from resharpen.paper_figs import figure_module

    paths = figure_module(name).make("quick", tmp_path)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


# ----------------------------------------------------------------------------- CLI
def test_cli_dynamics_ode_and_simulate_json(tmp_path, capsys):
    import json

    from resharpen.cli import main

    assert main(["dynamics", "ode", "--beta", "2", "--n", "8", "--t-end", "100",
                 "--json", str(tmp_path / "ode.json")]) == 0
    rows = json.loads((tmp_path / "ode.json").read_text())["rows"]
    assert [r["scheme"] for r in rows] == list(nd.SCHEMES)
    assert rows[0]["gamma_dot0"] == pytest.approx(2 / (math.exp(2) + 7), rel=1e-12)
    capsys.readouterr()
    assert main(["dynamics", "simulate", "--scheme", "preln", "--n", "6", "--d", "3", "--t-end", "5",
                 "--start", "gaussian", "--qkv", "random", "--samples", "3", "--json", "-"]) == 0
    traj = json.loads(capsys.readouterr().out)["trajectory"]
    assert [row["t"] for row in traj] == [0.0, 2.5, 5.0]
    assert traj[-1]["mean_r"] > traj[0]["mean_r"] > 0 and -1 <= traj[0]["min_cos"] <= 1


@pytest.mark.parametrize("argv,message", [
    (["dynamics", "simulate", "--scheme", "postln-ish"], "unknown scheme"),
    (["dynamics", "simulate", "--scheme", "postln", "--beta", "-1"], "beta must be"),
    (["dynamics", "simulate", "--scheme", "postln", "--t-end", "0"], "horizon"),
    (["dynamics", "simulate", "--scheme", "postln", "--n", "1"], "n (number of tokens)"),
    (["dynamics", "simulate", "--scheme", "postln", "--start", "ring"], "unknown start"),
    (["dynamics", "simulate", "--scheme", "postln", "--start", "orthonormal", "--n", "9", "--d", "3"],
     "d >= n"),
])
def test_cli_dynamics_errors_are_one_line(argv, message, capsys):
    from resharpen.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_initial_velocity_grid_rows_and_range_check():
    from resharpen.experiments.dynamics.initial_velocity import initial_velocity_grid

    (n, d, ratio, proj), = initial_velocity_grid([(128, 64)], seeds=(0,))
    theta = P.uniform_sphere(128, 64, seed=0)
    A = P.attention(theta, 1.0)
    bound = math.sqrt(math.log(128) / 128) + math.log(128) / 64
    assert ratio == pytest.approx(np.linalg.norm(A, axis=1).max() / bound, rel=1e-12)
    assert 0.8 < proj <= 1.0
    with pytest.raises(ValueError, match="violates"):
        initial_velocity_grid([(64, 4096)])
