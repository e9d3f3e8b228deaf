"""The trained-model measurements (experiments.dynamics.trained) on hand-built cases with a
known answer, and every dyn.trained check able to pass, fail and be inconclusive on synthetic
runs (no training here)."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.dynamics import trained as T
from resharpen.experiments.dynamics import trained_checks as C
from resharpen.theory.collapse.recursion import recursion


def _model(norm: str, layers: int = 3, d: int = 16, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(ModelConfig(vocab=5, d_model=d, n_layers=layers, n_heads=2, norm=norm,
                                   max_len=8, init_std=0.2, eps=0.0)).double()


def _batch(seed: int = 0, b: int = 3, n: int = 8):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 5, (b, n), generator=g)
    targets = torch.softmax(torch.randn(b, n, 5, generator=g, dtype=torch.float64), -1)
    return tokens, targets


# ------------------------------------------------------------------------- geometry
def test_cosine_of_equal_tokens_is_one_and_of_orthogonal_is_zero():
    x = torch.randn(1, 16, dtype=torch.float64).expand(6, 16) * torch.arange(1, 7)[:, None]
    assert float(T.mean_pairwise_cosine(x)) == pytest.approx(1.0, abs=1e-12)
    assert float(T.t_sim(x[:1].expand(6, 16))) == pytest.approx(1.0, abs=1e-12)
    assert float(T.mean_pairwise_cosine(torch.eye(5, dtype=torch.float64))) == pytest.approx(0.0)
    assert float(T.t_sim(torch.eye(5, dtype=torch.float64))) == pytest.approx(1 / 5)


def test_angular_displacement_known_angles():
    x = torch.randn(4, 7, 8, dtype=torch.float64)
    assert float(T.angular_displacement(x, 3.0 * x).abs().max()) < 1e-6
    e1, e2 = torch.eye(2, dtype=torch.float64)
    rotated = math.cos(0.3) * e1 + math.sin(0.3) * e2
    assert float(T.angular_displacement(e1[None], rotated[None])[0]) == pytest.approx(0.3)


def test_identity_layer_has_zero_displacement_and_attention():
    model = _model("none")
    with torch.no_grad():
        model.blocks[1].attn.W_O.zero_()  # layer 1 is the identity
    m = T.measure(model, *_batch())
    assert m["disp"][1] == pytest.approx(0.0, abs=1e-7)
    assert m["attn"][1] == 0.0
    assert m["cos"][1] == pytest.approx(m["cos"][2], abs=1e-12)
    assert m["disp"][0] > 1e-3 and m["disp"][2] > 1e-3
    assert len(m["cos"]) == 4 and len(m["disp"]) == 3 and m["n_tokens"] == 8


def test_attn_rel_is_at_most_one_for_equal_norm_tokens():
    """|sum_k P_jk h_k W| <= |W|_op max |h_k|: with RMS-normalized inputs (pre) the ratio to
    |W|_op mean|h| is <= 1 (a convex combination)."""
    m = T.measure(_model("pre"), *_batch())
    assert all(0 < a <= 1 + 1e-9 for a in m["attn_rel"])


def test_input_norm_gain_matches_the_projection_formula():
    """RMSNorm without gain (eps 0): J^T g = (sqrt(d)/|x|)(g - x<x, g>/|x|^2), computed here
    from the captured x and g, independently of the vjp the measurement takes."""
    model = _model("pre")
    tokens, targets = _batch()
    with model.capture("blocks.1.hook_resid_pre", "blocks.1.hook_attn_in",
                       retain_grad=True) as cache:
        T.soft_loss(model(tokens), targets).backward()
    x, g = cache["blocks.1.hook_resid_pre"].detach(), cache["blocks.1.hook_attn_in"].grad
    xn = x.norm(dim=-1, keepdim=True)
    jtg = math.sqrt(x.shape[-1]) / xn * (g - x * (x * g).sum(-1, keepdim=True) / xn ** 2)
    gains = T.norm_gains(model, cache, 1)
    assert [e["kind"] for e in gains] == ["in"]
    assert gains[0]["gain"] == pytest.approx(float(jtg.norm() / g.norm()), rel=1e-9)


def test_post_norm_gain_and_ngpt_gain_against_autograd():
    m = T.measure(_model("post"), *_batch())
    assert all(len(layer) == 1 and layer[0]["post"] for layer in m["gains"])
    model = _model("ngpt")
    tokens, targets = _batch()
    with model.capture("blocks.0.hook_resid_pre", "blocks.0.hook_attn_out",
                       "blocks.0.hook_resid_post", retain_grad=True) as cache:
        T.soft_loss(model(tokens), targets).backward()
    block = model.blocks[0]
    x, f = cache["blocks.0.hook_resid_pre"].detach(), cache["blocks.0.hook_attn_out"].detach()
    y = (x + block._eigen_rate(block.attn_alpha).detach() * (f / f.norm(dim=-1, keepdim=True)
                                                            - x)).requires_grad_(True)
    g = cache["blocks.0.hook_resid_post"].grad
    (gy,) = torch.autograd.grad(torch.nn.functional.normalize(y, dim=-1), y, g)
    (gain,) = T.norm_gains(model, cache, 0)
    assert gain["kind"] == "sphere"
    assert gain["gain"] == pytest.approx(float(gy.norm() / g.norm()), rel=1e-8)


def test_every_scheme_measures():
    for scheme in T.SCHEMES:
        m = T.measure(_model(scheme), *_batch())
        assert all(math.isfinite(v) for v in m["cos"] + m["disp"] + m["r"])
        kinds = {g["kind"] for layer in m["gains"] for g in layer}
        assert kinds == {"none": set(), "pre": {"in"}, "post": {"out"}, "mixln": {"in", "out"},
                         "peri": {"in", "out"}, "ngpt": {"sphere"},
                         "ln_scaling": {"in"}}[scheme]


# ------------------------------------------------------------------------- synthetic runs
def _m(L=4, n=16, d=32, disp0=0.1, rise=0.0, r=None, t=None, gains=None, cos=None):
    cos = cos if cos is not None else [0.1, 0.2] + [0.2 + rise * j for j in range(1, L)]
    return {"n_tokens": n, "d_model": d, "cos": cos, "t_sim": t or [0.2] * (L + 1),
            "r": r or [1.0 + j for j in range(L + 1)], "r2": [1.0] * (L + 1),
            "disp": [disp0] + [0.05] * (L - 1), "attn": [0.1] * L, "attn_rel": [0.1] * L,
            "value_gain": [1.0] * L, "value_frob2": [0.0] * L, "gains": gains}


def _runs(per_scheme: dict, seeds=range(6), fit=True):
    return [{"task": "t", "scheme": s, "depth": 4, "seed": k, "fit_reached": fit,
             "diverged": False, "init": m(k), "trained": m(k)}
            for s, m in per_scheme.items() for k in seeds]


def _noisy(value, k):
    return value * (1 + 0.05 * ((k * 7919) % 5 - 2) / 2)


def _status(outcome) -> str:
    return "INCONCLUSIVE" if outcome.inconclusive else ("PASS" if outcome.passed else "FAIL")


def _unit_radius(scheme: str, d: int = 32) -> list[float]:
    """Residual norms whose x_0 lies on the sphere the scheme's norm projects to (Thm 4.2's
    premise): radius sqrt(d), 1 for nGPT."""
    r0 = 1.0 if scheme == "ngpt" else math.sqrt(d)
    return [r0] * 5


@pytest.mark.parametrize("fast, status", [(1.0, "PASS"), (0.02, "FAIL")])
def test_first_layer_order_can_pass_and_fail(fast, status):
    runs = _runs({"peri": lambda k: _m(disp0=_noisy(fast, k), r=_unit_radius("peri")),
                  "ngpt": lambda k: _m(disp0=_noisy(fast, k + 1), r=_unit_radius("ngpt")),
                  "post": lambda k: _m(disp0=_noisy(0.02, k + 2), r=_unit_radius("post")),
                  "pre": lambda k: _m(disp0=_noisy(0.02, k + 3), r=_unit_radius("pre"))})
    for when in ("init", "trained"):
        assert _status(C.first_layer_order(runs, when)) == status


def test_first_layer_order_inconclusive_with_few_runs_or_unfitted():
    per = {s: (lambda k, s=s: _m(disp0=_noisy(1.0, k), r=_unit_radius(s))) for s in ("peri", "ngpt")}
    per.update({s: (lambda k, s=s: _m(disp0=_noisy(0.02, k + 2), r=_unit_radius(s)))
                for s in ("post", "pre")})  # other noise than the fast arms': a paired s.e. > 0
    assert _status(C.first_layer_order(_runs(per, seeds=range(3)), "init")) == "INCONCLUSIVE"
    unfitted = _runs(per, fit=False)
    assert _status(C.first_layer_order(unfitted, "trained")) == "INCONCLUSIVE"
    assert _status(C.first_layer_order(unfitted, "init")) == "PASS"


@pytest.mark.parametrize("fast", [1.0, 0.02])
def test_first_layer_order_outside_thm42_premise_is_inconclusive(fast):
    """Tokens at |x_0| = 0.8 against a sqrt(d) sphere (the package's init) do not meet Thm 4.2's
    unit radius: neither the order nor its opposite decides, and the radius is reported."""
    small = [0.8] * 5
    runs = _runs({"peri": lambda k: _m(disp0=_noisy(fast, k), r=small),
                  "ngpt": lambda k: _m(disp0=_noisy(fast, k + 1), r=_unit_radius("ngpt")),
                  "post": lambda k: _m(disp0=_noisy(0.02, k + 2), r=small),
                  "pre": lambda k: _m(disp0=_noisy(0.02, k + 3), r=small)})
    outcome = C.first_layer_order(runs, "init")
    assert _status(outcome) == "INCONCLUSIVE"
    assert "premise" in outcome.inconclusive and "0.141" in outcome.detail


def _exponential(rate: float, L: int = 40, start: float = 0.2) -> list[float]:
    """Cosines whose 1 - cos decays exponentially, by e^{-rate} a layer, from 1 - start."""
    return [1.0 - (1.0 - start) * math.exp(-rate * j) for j in range(L + 1)]


def _polynomial(power: float = 2.0, L: int = 40, offset: float = 1.0) -> list[float]:
    """Cosines with 1 - cos = 0.8 (offset / (j + offset))^power: Thm 4.1's t^{-2} for
    gamma (t^{-3} for gamma'), a rate that slows like power / j."""
    return [1.0 - 0.8 * (offset / (j + offset)) ** power for j in range(L + 1)]


def test_the_terminal_window_starts_where_the_stack_stays_near_consensus_and_stops_at_the_floor():
    cos = [0.1, 0.95, 0.5] + [0.9 + 0.01 * j for j in range(1, 10)]
    assert C.terminal_window(cos) == (3, 11)
    assert C.terminal_window(cos, first=6) == (6, 11)  # Mix-LN: after its Post-LN layers
    assert C.terminal_window([0.1] * 5 + [0.5]) is None
    # an exponential decay reaching float64's rounding: the window ends before the first layer
    # under the floor, even when a later (noisy) one is above it again
    cos = _exponential(1.0, L=60)
    start, stop = C.terminal_window(cos)
    assert 1.0 - cos[stop] >= C.TERMINAL_FLOOR > 1.0 - cos[stop + 1]
    noisy = list(cos)
    noisy[stop + 5] = 1.0 - 10 * C.TERMINAL_FLOOR
    assert C.terminal_window(noisy) == (start, stop)
    # a cosine of 1 (or above) inside is below the floor: the window stops before it
    exact = list(_exponential(0.2, L=40))
    exact[30] = 1.0
    assert C.terminal_window(exact)[1] == 29


def test_a_pair_is_read_on_the_layers_both_stacks_are_terminal():
    late = _m(cos=[0.1] * 10 + [0.9 + 0.001 * j for j in range(31)])  # near consensus from 10
    early = _m(cos=[0.1] + [0.95] * 40)  # from 1
    assert list(C.pair_window(late, early, "post", "pre")) == list(range(10, 41))
    mixed = _m(cos=[0.1] + [0.95] * 40)  # Mix-LN at 40 layers: 10 Post-LN layers first
    assert list(C.pair_window(early, mixed, "post", "mixln")) == list(range(10, 41))


def test_a_pair_window_stops_where_the_first_of_its_stacks_reaches_the_floor():
    fast = _m(cos=_exponential(1.0, L=60))  # 1 - cos under the float floor from about layer 27
    slow = _m(cos=_exponential(0.2, L=60))
    window = C.pair_window(fast, slow, "post", "pre")
    assert window[-1] == C.terminal_window(fast["cos"])[1] < C.terminal_window(slow["cos"])[1]


def test_the_decay_premise_is_a_halving_over_the_first_half():
    """r_1 (h - 1) >= log 2: over a 16-layer window (halves of 8 layers, 7 steps), an
    exponential of rate log(2)/7 per layer just halves over the first half, one a little slower
    does not."""
    window = np.arange(1, 17)
    at = math.log(2.0) / 7
    assert C.decaying(_exponential(at * 1.001, L=16, start=0.95), window)
    assert not C.decaying(_exponential(at * 0.95, L=16, start=0.95), window)


def test_deceleration_is_one_for_an_exponential_decay_and_below_one_for_a_polynomial():
    """Expected values from the forms, not from the function: e^{-rate j} has the same slope
    on both halves (D = 1, any rate, so any time unit); (j + 1)^{-2}'s slope on log scale is
    -2/(j + 1), smaller on the later half."""
    for rate, L in ((0.1, 80), (0.3, 40)):
        cos = _exponential(rate, L=L)
        window = np.arange(*(lambda w: (w[0], w[1] + 1))(C.terminal_window(cos)))
        assert C.deceleration(cos, window) == pytest.approx(1.0, abs=1e-9)
        assert C.decaying(cos, window)
    cos = _polynomial(2.0, L=40)
    window = np.arange(2, 41)  # 0.8 (1/(j+1))^2 <= 0.1 from j = 2
    assert list(np.arange(*(lambda w: (w[0], w[1] + 1))(C.terminal_window(cos)))) == \
        list(window)
    # halves 2..20 and 21..40: the rates are about 2/11 and 2/31, so D is near 11/31
    assert 0.3 < C.deceleration(cos, window) < 0.5 and C.decaying(cos, window)
    plateau = [0.1] + [0.97 + 0.0001 * j for j in range(40)]
    assert not C.decaying(plateau, np.arange(1, 41))


@pytest.mark.parametrize("post, other, status", [("exp", "poly", "PASS"),
                                                 ("poly", "exp", "FAIL")])
def test_terminal_order_can_pass_and_fail(post, other, status):
    shape = {"exp": lambda k: _exponential(_noisy(0.2, k)),
             "poly": lambda k: _polynomial(2.0, offset=_noisy(1.0, k))}
    runs = _runs({"post": lambda k: _m(cos=shape[post](k)),
                  **{s: (lambda k, s=s: _m(cos=shape[other](k + len(s))))
                     for s in ("pre", "mixln", "peri")}})
    assert _status(C.terminal_order(runs, "init")) == status


def test_a_failing_test_inside_the_premise_fails_the_claim_despite_pairs_outside():
    """Pairs outside the premise leave a claim undecided only when the pairs inside agree with
    it: here Post-LN slows down (polynomial) and the others keep their rate, and some pairs are
    plateaus, so the claim FAILs."""
    plateau = [0.1] + [0.97 + 0.0001 * j for j in range(40)]
    runs = _runs({"post": lambda k: _m(cos=_polynomial(2.0, offset=_noisy(1.0, k))),
                  **{s: (lambda k: _m(cos=_exponential(_noisy(0.2, k)) if k < 6 else plateau))
                     for s in ("pre", "mixln", "peri")}}, seeds=range(8))
    outcome = C.terminal_order(runs, "init")
    assert _status(outcome) == "FAIL" and "6/8 pairs inside" in outcome.measured


def test_terminal_order_far_from_consensus_or_on_a_plateau_is_inconclusive():
    """A terminal (t -> infinity) rate is not read off layers far from consensus, nor off a
    plateau near it (1 - cos that stops shrinking): the pairs are outside the premise, whichever
    way their decelerations are ordered."""
    far = [0.1 + 0.005 * j for j in range(41)]
    runs = _runs({s: (lambda k: _m(cos=far)) for s in ("post", "pre", "mixln", "peri")})
    outcome = C.terminal_order(runs, "init")
    assert _status(outcome) == "INCONCLUSIVE" and "premise" in outcome.inconclusive
    plateau = [0.1] + [0.97 + 0.0001 * j for j in range(40)]
    runs = _runs({"post": lambda k: _m(cos=_exponential(_noisy(0.2, k))),
                  **{s: (lambda k: _m(cos=plateau)) for s in ("pre", "mixln", "peri")}})
    outcome = C.terminal_order(runs, "init")
    assert _status(outcome) == "INCONCLUSIVE" and "does not halve" in outcome.measured


@pytest.mark.parametrize("power, status", [(1.0, "PASS"), (0.5, "FAIL")])
def test_preln_norm_growth_can_pass_and_fail(power, status):
    runs = _runs({"pre": lambda k: _m(r=[0.01] + [_noisy(j ** power, k) for j in range(1, 5)])})
    assert _status(C.preln_norm_growth(runs, "init")) == status
    assert _status(C.preln_norm_growth(runs[:2], "init")) == "INCONCLUSIVE"


def test_preln_norm_growth_before_the_asymptotic_regime_is_inconclusive():
    """Exact linear growth from a large initial radius (r_L / r_0 = 1.45 over 4 layers, the
    package's init) fits an exponent near 0.2: outside r ~ t's premise, not a FAIL."""
    runs = _runs({"pre": lambda k: _m(r=[1.0 + 0.1125 * j for j in range(5)])})
    outcome = C.preln_norm_growth(runs, "init")
    assert _status(outcome) == "INCONCLUSIVE" and "0.45" in outcome.detail


def _recursion_runs(shift: float, scatter: float, seeds=range(8), s: float = 0.5):
    """Post-LN models whose t_sim is the recursion's from their own s and t0 = 0.3, shifted by
    ``shift`` x j/(L-1) and scattered per model by +-``scatter`` (alternating in sign, so the
    mean over an even number of models is the shifted curve), s set through value_frob2."""
    n, d, L = 16, 32, 4
    pred = recursion(n, L - 1, 0.3, s, "post")["t"]

    def m(k):
        wobble = scatter * (1 if k % 2 else -1) * np.arange(L) / (L - 1)
        out = _m(L=L, n=n, d=d, t=[0.2] + list(pred + shift * np.arange(L) / (L - 1) + wobble))
        out["value_frob2"] = [0.0] + [s * d] * (L - 1)
        return out
    return _runs({"post": m}, seeds=seeds)


@pytest.mark.parametrize("shift, status", [(0.0, "PASS"), (0.02, "PASS"), (0.1, "FAIL"),
                                           (-0.1, "FAIL")])
def test_recursion_check_can_pass_and_fail(shift, status):
    """Eight models scattered by +-0.01 about a curve shifted from the recursion by up to
    ``shift``: within 0.05 everywhere PASSes, 0.1 off at the last layer FAILs."""
    assert _status(C.recursion_at_init(_recursion_runs(shift, 0.01))) == status


def test_recursion_check_cannot_decide_on_scattered_or_few_models():
    """The mean over models is what the recursion predicts: when the models scatter too much
    for their number, or there are fewer than stats.MIN_N, the check says so, neither PASS
    nor FAIL, even when the mean is exactly the recursion."""
    scattered = C.recursion_at_init(_recursion_runs(0.0, 0.2))
    assert _status(scattered) == "INCONCLUSIVE" and "95% t" in scattered.detail
    assert _status(C.recursion_at_init(_recursion_runs(0.0, 0.0, seeds=range(2)))) == \
        "INCONCLUSIVE"


def test_recursion_gaps_start_at_zero_and_average_the_models():
    """Each model's prediction starts from its own t0, so its gap is 0 at the start; the
    row's curves are the means over the models."""
    row, = C.recursion_gaps(_recursion_runs(0.1, 0.01))
    gaps = np.asarray(row["gaps"])
    assert gaps.shape == (8, 4) and np.all(gaps[:, 0] == 0)
    assert abs(row["gap"] - 0.1) < 1e-12 and row["models"] == 8


def test_recursion_check_of_a_flat_stack_is_inconclusive():
    """A group whose t_sim barely moves (rise below the tolerance) cannot tell the recursion
    from a constant: it does not decide, and the claim is INCONCLUSIVE, not PASS."""
    runs = _recursion_runs(0.0, 0.0, s=0.01)
    row, = C.recursion_gaps(runs)
    assert abs(row["rise"]) < C.RECURSION_TOL
    outcome = C.recursion_at_init(runs)
    assert _status(outcome) == "INCONCLUSIVE" and "premise" in outcome.inconclusive


@pytest.mark.parametrize("gain, status", [(0.8, "PASS"), (1.2, "FAIL")])
def test_backward_gain_check_can_pass_fail_and_be_inconclusive(gain, status):
    high = [0.95] * 5
    gains = [[{"kind": "out", "post": True, "gain": gain}] for _ in range(4)]
    runs = _runs({"post": lambda k: _m(cos=high, gains=gains)}, seeds=range(2))
    assert _status(C.backward_gain_high_similarity(runs, "trained")) == status
    low = _runs({"post": lambda k: _m(cos=[0.1] * 5, gains=gains)}, seeds=range(2))
    outcome = C.backward_gain_high_similarity(low, "trained")
    assert _status(outcome) == "INCONCLUSIVE"
    assert "0 qualifying" in outcome.inconclusive and "would qualify" in outcome.inconclusive


# ------------------------------------------------------------------------- the cache, the figures
def test_the_init_set_is_cached_and_a_missing_group_is_reported(tmp_path):
    only = {"task": ("dyck1",), "scheme": ("post",)}
    with pytest.raises(LookupError, match="no finished group"):
        T.trained_set("quick", out=tmp_path, cached_only=True, only=only)
    runs = T.trained_set("quick", out=tmp_path, train=False, only=only)
    assert [(r["scheme"], r["seed"], r["trained"]) for r in runs] == [
        ("post", 0, None), ("post", 1, None), ("post", 2, None)]
    again = T.trained_set("quick", out=tmp_path, train=False, cached_only=True, only=only)
    assert again == runs
    assert {r["init"]["n_tokens"] for r in runs} == {T.sizes("quick").train_len}


def _snapshot(folder):
    return {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in sorted(folder.iterdir())}


def test_a_group_out_lacks_is_read_from_the_archive_which_is_never_written(tmp_path,
                                                                           monkeypatch):
    """A full-size group packed (``archive pack-dyn``) and then missing from ``out/`` is read
    from the archive, equal to the original, with nothing written there or to ``out/``; a group
    in neither place trains as before and is written to ``out/`` only."""
    import gzip

    from resharpen.experiments.common.io import atomic_write_json
    from resharpen.experiments.training import archive

    p = T.sizes("full")
    key = T.group_key(p, T.group_configs(p, "dyck1", "post", 8))
    fake = [{"seed": 0, "fit_reached": True, "fit_step": 7, "steps": 7, "diverged": False,
             "init": {"r": [1.0, 2.5]}, "trained": {"r": [1.0, 3.0]}}]
    session = tmp_path / "session1" / "full"
    session.mkdir(parents=True)
    atomic_write_json(session / "dyck1_post_L8.json", {"key": key, "runs": fake})
    (session / "dyck1_post_L8.json.lock").touch()
    store = tmp_path / "archive"
    assert archive.pack_cache(session, "dyn_trained", store) == {
        "cache": "dyn_trained", "files": 1, "added": 1, "replaced": 0}
    kept = archive.cache_folder("dyn_trained", store)
    assert sorted(f.name for f in kept.iterdir()) == ["dyck1_post_L8.json.gz"]  # no lock
    assert gzip.decompress((kept / "dyck1_post_L8.json.gz").read_bytes()) == \
        (session / "dyck1_post_L8.json").read_bytes()
    assert archive.pack_cache(session, "dyn_trained", store)["added"] == 0
    assert archive.archived_caches(store) == {"dyn_trained": 1}
    before = _snapshot(kept)

    def train(sz, task, scheme, depth, trains):
        assert (task, scheme, depth) == ("dyck1", "post", 24), "an archived group was trained"
        return [{**fake[0], "seed": 1}]
    monkeypatch.setattr(T, "train_group_measured", train)
    fresh = tmp_path / "session2"
    only = {"task": ("dyck1",), "scheme": ("post",), "depth": (8,)}
    runs = T.trained_set("full", out=fresh, only=only, archive=kept)
    assert runs == [{"task": "dyck1", "scheme": "post", "depth": 8, **r} for r in fake]
    assert T.trained_set("full", out=fresh, only=only, archive=kept, cached_only=True) == runs
    assert list((fresh / "full").iterdir()) == []  # read in place: nothing copied, no lock
    with pytest.raises(LookupError, match="no finished group"):  # only full-size sets there
        T.trained_set("quick", out=fresh, only={**only, "depth": (4,)}, archive=kept,
                      cached_only=True)
    deep = T.trained_set("full", out=fresh, only={**only, "depth": (24,)}, archive=kept)
    assert [r["seed"] for r in deep] == [1]  # in neither place: trained, written to out/
    assert sorted(f.name for f in (fresh / "full").iterdir()) == [
        "dyck1_post_L24.json", "dyck1_post_L24.json.lock"]
    assert _snapshot(kept) == before


def test_the_archived_full_set_matches_the_current_keys():
    """Every group of the full-size set is in the repository's archive
    (results/full/dyn_trained) under the key the code computes now, so a fresh checkout decides
    the dyn.trained claims without training; a measurement change (VERSION) must be followed by
    ``resharpen dynamics trained --profile full`` and ``resharpen archive pack-dyn``."""
    from resharpen.experiments.common.stored import read_json

    p = T.sizes("full")
    for task in T.TASKS:
        for scheme in T.SCHEMES:
            for depth in p.depths:
                key = T.group_key(p, T.group_configs(p, task, scheme, depth))
                for suffix, mark in (("", ""), ("_init", "i")):
                    path = T.ARCHIVED / f"{task}_{scheme}_L{depth}{suffix}.json"
                    assert read_json(path)["key"] == key + mark, path


@pytest.mark.parametrize("module", ["resharpen.paper_figs.dynamics.fig_dyn_trained",
                                    "resharpen.paper_figs.collapse.fig_collapse_trained"])
def test_figures_never_train(module, monkeypatch, tmp_path):
    import importlib

    from resharpen.paper_figs import MissingResults

    def missing(*args, **kwargs):
        assert kwargs.get("cached_only") is True
        raise LookupError("no finished group")
    monkeypatch.setattr(T, "trained_set", missing)
    with pytest.raises(MissingResults):
        importlib.import_module(module).make("quick", tmp_path)


@pytest.mark.parametrize("module, command", [
    ("resharpen.paper_figs.dynamics.fig_dyn_terminal", "resharpen verify --only dyn.trained"),
    ("resharpen.paper_figs.collapse.fig_collapse_trained", "resharpen verify --only dyn.trained"),
    ("resharpen.paper_figs.dynamics.fig_dyn_trained",
     "resharpen dynamics trained --profile quick --premise-set unit_tokens")])
def test_figures_of_premise_sets_never_measure_nor_create_folders(module, command, monkeypatch,
                                                                  tmp_path):
    """A figure drawn from a premise set reads it (out/, the archive) and never measures it:
    with neither holding it, the figure is skipped with the claim's command, and no out/ folder
    appears in the working folder."""
    import importlib

    from resharpen.experiments.dynamics import premise_sets
    from resharpen.paper_figs import MissingResults

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(premise_sets, "measure_group", lambda *a, **k: pytest.fail("measured"))
    monkeypatch.setattr(premise_sets, "ARCHIVED", tmp_path / "no_archive")
    monkeypatch.setattr(premise_sets.premise_set, "__defaults__",
                        (tmp_path / "out" / "dyn_trained", tmp_path / "no_archive", False,
                         False, False, None))
    monkeypatch.setattr(T, "trained_set", lambda *a, **k: [])
    with pytest.raises(MissingResults, match=command):
        importlib.import_module(module).make("quick", tmp_path / "figs")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------- premise sets
def test_embed_std_sets_the_embeddings_alone_and_is_left_out_of_the_dict_at_its_default():
    base = ModelConfig(vocab=7, d_model=64, n_layers=2, n_heads=2, max_len=400, init_std=0.1)
    assert "embed_std" not in base.to_dict()
    assert ModelConfig.from_dict(base.to_dict()) == base
    wide = ModelConfig(**{**base.to_dict(), "embed_std": 0.5})
    assert ModelConfig.from_dict(wide.to_dict()) == wide
    torch.manual_seed(0)
    model = Transformer(wide)
    assert float(model.W_pos.detach().std()) == pytest.approx(0.5, rel=0.05)  # 25,600 draws
    assert float(model.W_U.detach().std()) == pytest.approx(0.1, rel=0.1)
    assert float(model.blocks[0].attn.W_V.detach().std()) == pytest.approx(0.1, rel=0.1)
    for bad in (0.0, -1.0, math.inf, True):
        with pytest.raises((ValueError, TypeError)):
            ModelConfig(**{**base.to_dict(), "embed_std": bad})


def test_each_premise_set_meets_the_premise_it_was_built_for():
    """The quick sets, measured here (nothing written): tokens of radius about R = sqrt(d) in
    unit_tokens (Thm 4.2's band: a factor 2), the Pre-LN growth at least 20 times the initial
    radius in small_embedding, and at least 5 Post-LN norms at input similarity >= 0.9 in
    paper_init, whose W_O has the std of W_V (no 1/sqrt(2L))."""
    from resharpen.experiments.dynamics.premise_sets import SETS, premise_set

    unit = premise_set("quick", "unit_tokens", out=None)
    assert {r["scheme"] for r in unit} == set(SETS["unit_tokens"].schemes)
    low, high = C.TOKEN_RADIUS_BAND
    assert all(low <= C.token_radius(r["init"], r["scheme"]) <= high for r in unit)
    small = premise_set("quick", "small_embedding", out=None)
    assert len(small) >= 3
    assert all(C.growth_over_offset(r["init"]) >= C.GROWTH_OVER_OFFSET for r in small)
    paper = premise_set("quick", "paper_init", out=None)
    high_norms = [c for c, _ in C.post_norm_gains(paper, "init") if c >= C.HIGH_SIMILARITY]
    assert len(high_norms) >= C.MIN_NORMS
    from resharpen.experiments.dynamics.premise_sets import set_run_config
    from resharpen.experiments.training.loop import model_config

    d = 64
    sz = replace(T.sizes("full"), seeds=(0,))
    base, = T.group_configs(replace(sz, depths=(48,)), "tomita3", "post", 48)
    torch.manual_seed(0)
    w = Transformer(model_config(set_run_config(SETS["paper_init"], base), 5, 32))
    assert float(w.blocks[0].attn.W_O.detach().std()) == pytest.approx(1 / math.sqrt(3 * d),
                                                                         rel=0.05)
    torch.manual_seed(0)
    w = Transformer(model_config(set_run_config(SETS["unit_tokens"], base), 5, 32))
    assert float(w.W_pos.detach().std()) == pytest.approx(1 / math.sqrt(2), rel=0.05)
    assert float(w.blocks[0].attn.W_O.detach().std()) == pytest.approx(
        1 / math.sqrt(3 * d) / math.sqrt(96), rel=0.05)  # unchanged: the package's 1/sqrt(2L)


def test_the_archived_full_premise_sets_match_the_current_keys():
    """The full-size premise sets are archived beside the trained set under the keys the code
    computes now (a fresh checkout reads them; ``resharpen archive pack-dyn`` packs them)."""
    from resharpen.experiments.common.stored import read_json
    from resharpen.experiments.dynamics.premise_sets import SETS, set_group

    from resharpen.experiments.dynamics.trained_readers import TRAINED_PREMISE_SETS

    trained_sets = set(TRAINED_PREMISE_SETS.values())
    for name, spec in SETS.items():
        for task in T.TASKS:
            for scheme in spec.schemes:
                for depth in spec.depths or T.sizes("full").depths:
                    for trained in (False, True) if name in trained_sets else (False,):
                        key, file = set_group("full", name, task, scheme, depth, trained)
                        assert read_json(T.ARCHIVED / file)["key"] == key, file


# ------------------------------------------------------------------------- trained premise sets
def test_a_trained_premise_set_has_its_own_seeds_key_and_file(monkeypatch):
    """A set trains its ``trained_seeds`` (default: its seeds) under a key of its own run
    configs, apart from its init key; the init key and sizes stay the set's."""
    from dataclasses import replace as swap

    from resharpen.experiments.dynamics import premise_sets as P

    spec = P.SETS["paper_init"]
    assert P.set_sizes(spec, "quick", trained=True).seeds == spec.seeds == (0, 1, 2)
    monkeypatch.setitem(P.SETS, "one_seed", swap(spec, trained_seeds=(0,)))
    one = P.SETS["one_seed"]
    assert P.set_sizes(one, "quick").seeds == (0, 1, 2)
    assert P.set_sizes(one, "quick", trained=True).seeds == (0,)
    assert one.describe().endswith("3 seeds per task")
    assert one.describe(trained=True).endswith("1 seed per task")
    init_key, init_file = P.set_group("quick", "paper_init", "tomita3", "post", 48)
    key, file = P.set_group("quick", "paper_init", "tomita3", "post", 48, trained=True)
    assert (init_file, file) == ("tomita3_post_L48_paper_init_init.json",
                                 "tomita3_post_L48_paper_init_trained.json")
    assert key != init_key
    assert P.set_group("quick", "one_seed", "tomita3", "post", 48, trained=True)[0] \
        .split("-")[0] != key.split("-")[0]
    configs = P.set_configs("quick", "one_seed", "tomita3", "post", 48, trained=True)
    assert [c["train"]["seed"] for c in configs] == [0]
    assert configs[0]["model"]["attn_out_scale"] == pytest.approx(math.sqrt(96))
    unit = P.set_configs("quick", "unit_tokens", "tomita3", "post", 4, trained=True)
    assert unit[0]["model"]["embed_std"] == pytest.approx(1 / math.sqrt(2))
    assert "attn_out_scale" not in unit[0]["model"]  # left out at its default


def test_the_initialization_keys_are_left_out_of_a_run_config_at_their_defaults():
    """``model.attn_out_scale`` and ``model.embed_std`` are left out of a normalized language
    config at their defaults (the grids' configs, identities and caches stay as they were),
    kept otherwise, and normalizing twice changes nothing."""
    from resharpen.experiments.training.loop import model_config
    from resharpen.experiments.training.next_token_config import make_config

    plain = make_config({"task": {"name": "tomita3", "train_len": 8, "eval_len": 8}})
    assert "attn_out_scale" not in plain["model"] and "embed_std" not in plain["model"]
    set_ = make_config({"task": {"name": "tomita3", "train_len": 8, "eval_len": 8},
                        "model": {"attn_out_scale": 2.0, "embed_std": 0.5}})
    assert (set_["model"]["attn_out_scale"], set_["model"]["embed_std"]) == (2.0, 0.5)
    again = make_config({k: v for k, v in set_.items() if k != "name"}, name=set_["name"])
    assert again == set_
    cfg = model_config(set_, 3, 8)
    assert (cfg.attn_out_scale, cfg.embed_std) == (2.0, 0.5)
    assert model_config(plain, 3, 8).embed_std is None
    with pytest.raises(ValueError, match="embed_std"):
        make_config({"model": {"embed_std": -1.0}})


def test_a_premise_set_reads_only_the_groups_asked_for(monkeypatch, tmp_path):
    from resharpen.experiments.dynamics import premise_sets as P

    asked = []

    def fake(profile, name, task, scheme, depth, trained=False):
        asked.append((task, scheme, depth, trained))
        return [{"seed": 0, "fit_reached": False, "fit_step": None, "steps": 0,
                 "diverged": False, "init": {}, "trained": None}]
    monkeypatch.setattr(P, "measure_group", fake)
    runs = P.premise_set("quick", "paper_init", out=tmp_path, trained=True,
                         only={"task": ("dyck1",), "scheme": ("mixln",)})
    assert asked == [("dyck1", "mixln", 48, True)]
    assert [(r["task"], r["scheme"], r["premise_set"]) for r in runs] == [
        ("dyck1", "mixln", "paper_init")]
    assert (tmp_path / "quick" / "dyck1_mixln_L48_paper_init_trained.json").is_file()


def _gain_run(scheme, seed, fit, diverged, cos, gain):
    m = {"cos": [cos, cos], "gains": [[{"gain": gain, "post": True}], [{"gain": gain,
                                                                         "post": True}]]}
    return {"task": "tomita3", "scheme": scheme, "depth": 2, "seed": seed, "fit_reached": fit,
            "diverged": diverged, "init": m, "trained": None if diverged else m}


def test_the_trained_backward_gain_counts_unfitted_runs_never_diverged_ones():
    """Trained, Thm 3.6's check reads every run trained to its end, at the fit or not (a
    collapsed stack does not fit), never a diverged one, and names each run it read."""
    runs = [_gain_run("post", s, fit=False, diverged=False, cos=0.99, gain=0.8) for s in range(3)]
    runs.append(_gain_run("post", 3, fit=False, diverged=True, cos=0.99, gain=5.0))
    runs.append(_gain_run("mixln", 0, fit=True, diverged=False, cos=0.2, gain=0.9))
    out = C.backward_gain_high_similarity(runs, "trained")
    assert out.passed and "100% of 6" in out.measured
    assert "post tomita3 s0 (not at the fit, 2 qualifying norms)" in out.detail
    assert "mixln tomita3 s0 (at the fit, 0 qualifying norms)" in out.detail
    assert "s3" not in out.detail
    runs[0]["trained"] = {**runs[0]["trained"], "gains": [[{"gain": 1.1, "post": True}]] * 2}
    assert not C.backward_gain_high_similarity(runs, "trained").passed
    assert C.post_norm_gains(runs, "trained") == [(0.2, 0.9)] * 2  # fitted only by default


def test_the_premise_set_option_lists_every_set():
    """The help of ``dynamics trained --premise-set`` names every set (the CLI does not import
    the sets, which need torch)."""
    from resharpen.experiments.dynamics.premise_sets import SETS
    from resharpen.experiments.dynamics import cli

    source = Path(cli.__file__).read_text()
    start = source.index('"--premise-set"')
    help_text = source[start:source.index("set_defaults", start)]
    assert all(name in help_text for name in SETS), help_text
