import math

import pytest
import torch

from resharpen.experiments.model.schemes import SCHEMES
from resharpen.experiments.training.schema import NORM_PLACEMENTS
from resharpen.experiments.model.transformer import (Attention,
                                              ModelConfig, Norm,
                                              Parts, Transformer, layer_of, unit)


@pytest.mark.parametrize("norm", NORM_PLACEMENTS)
@pytest.mark.parametrize("mlp", [None, "gelu", "swiglu"])
def test_every_placement_runs_and_is_causal(norm, mlp):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab=11, d_model=16, n_layers=2, n_heads=2, norm=norm,
                                    mlp=mlp, max_len=9)).double()
    tokens = torch.randint(0, 11, (3, 9))
    logits, attention = model(tokens, return_attention=True)
    assert logits.shape == (3, 9, 11) and len(attention) == 2
    assert torch.allclose(attention[0].sum(-1), torch.ones(3, 2, 9, dtype=torch.float64))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 11
    assert torch.allclose(model(changed)[:, :-1], logits[:, :-1])  # the past ignores the future


def test_one_layer_logits_are_direct_path_plus_weighted_displacements():
    torch.manual_seed(1)
    model = Transformer(ModelConfig(vocab=9, d_model=12, d_head=4, d_value=3, init_std=0.7)).double()
    tokens = torch.tensor([[3, 0, 7, 5], [1, 2, 8, 4]])
    logits, attention = model(tokens, return_attention=True)
    B, D = model.logit_matrices()
    w = attention[0][:, 0]
    expected = B[tokens] + torch.einsum("nqk,nkv->nqv", w, D[tokens])
    assert torch.allclose(expected, logits, atol=1e-13, rtol=0)
    A = model.attention_scores()
    scores = A[tokens[0, -1], tokens[0]]
    assert torch.allclose(torch.softmax(scores, 0), w[0, -1], atol=1e-14)


@pytest.mark.parametrize("kwargs, message", [
    (dict(vocab=1, d_model=4), "vocab must be >= 2"),
    (dict(vocab=5, d_model=4, norm="middle"), "norm placement 'middle' is not one of"),
    (dict(vocab=5, d_model=4, norm_kind="batch"), "norm kind 'batch' is not one of"),
    (dict(vocab=5, d_model=6, n_heads=4), "not divisible by n_heads"),
    (dict(vocab=5, d_model=4, attn_dropout=1.0), r"attn_dropout must be in \[0, 1\)"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kwargs)


def test_theory_matrices_refuse_deep_models():
    with pytest.raises(ValueError, match="one-layer, one-head, attention-only"):
        Transformer(ModelConfig(vocab=5, d_model=4, n_layers=2)).logit_matrices()


# -- the placement table ---------------------------------------------------------------------
def test_placement_table_final_norms_and_names():
    assert NORM_PLACEMENTS == ("none", "pre", "post", "attn_out", "peri", "pre_nofinal",
                               "mixln", "ln_scaling", "ngpt")
    assert {name for name, p in SCHEMES.items() if p.final_norm} == {"pre", "peri", "mixln",
                                                                        "ln_scaling"}
    assert all(name == p.name for name, p in SCHEMES.items())
    for name, placement in SCHEMES.items():
        model = Transformer(ModelConfig(vocab=5, d_model=4, n_layers=2, norm=name, mlp="gelu"))
        assert isinstance(model.final_norm, Norm) == placement.final_norm
        for i, block in enumerate(model.blocks):
            layer = layer_of(name, i, 2)
            for norm_in, norm_out, alpha in ((block.attn_norm_in, block.attn_norm_out,
                                              block.attn_alpha),
                                             (block.mlp_norm_in, block.mlp_norm_out,
                                              block.mlp_alpha)):
                assert isinstance(norm_in, Norm) == layer.input_norm
                assert isinstance(norm_out, Norm) == (layer.output_norm is not None)
                assert (alpha is not None) == layer.eigen_rate


class _Symbol(str):
    """A formula as text, so a placement's rule can be read back."""

    def __add__(self, other):
        return _Symbol(f"{self} + {other}")

    def __sub__(self, other):
        return _Symbol(f"({self} - {other})")

    def __mul__(self, other):
        return _Symbol(f"{self} * {other}")

    __rmul__ = __mul__


@pytest.mark.parametrize("name, layer, formula", [
    ("none", 0, "x + f(x)"), ("pre", 0, "x + f(N_in(x))"), ("post", 0, "N_out(x + f(x))"),
    ("attn_out", 0, "x + N_out(f(x))"), ("peri", 0, "x + N_out(f(N_in(x)))"),
    ("pre_nofinal", 0, "x + f(N_in(x))"), ("mixln", 0, "N_out(x + f(x))"),
    ("mixln", 1, "x + f(N_in(x))"), ("ln_scaling", 0, "x + f(N_in(x) * 1.0)"),
    ("ln_scaling", 3, "x + f(N_in(x) * 0.5)"),
    ("ngpt", 0, "u(x + alpha * (u(f(x)) - x))")])
def test_placement_rules_put_the_norms_where_the_record_says(name, layer, formula, monkeypatch):
    import resharpen.experiments.model.schemes as schemes_module

    rule = layer_of(name, layer, 4)
    monkeypatch.setattr(schemes_module, "unit", lambda h: _Symbol(f"u({h})"))
    apply = {n: (lambda n: lambda h: _Symbol(f"{n}({h})"))(n) for n in ("f", "N_in", "N_out")}
    text = rule.rule(_Symbol("x"), apply["f"], Parts(apply["N_in"], apply["N_out"],
                                                     _Symbol("alpha")))
    assert text == formula
    assert ("N_in" in text) == rule.input_norm and ("alpha" in text) == rule.eigen_rate
    assert rule.output_norm == {"N_out(x + f(x))": "residual",
                                "x + N_out(f(x))": "branch",
                                "x + N_out(f(N_in(x)))": "branch"}.get(text)


# -- named capture points --------------------------------------------------------------------
def _expected_points(model: Transformer, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every capture point recomputed from the docstring's formulas, module by module."""
    expected, x = {}, model.residual(tokens)
    for i, block in enumerate(model.blocks):
        placement = layer_of(model.cfg.norm, i, model.cfg.n_layers)
        expected[f"blocks.{i}.hook_resid_pre"] = x
        sublayers = [("attn", block.attn_norm_in, block.attn_norm_out, block.attn)]
        if block.mlp is not None:
            sublayers.append(("mlp", block.mlp_norm_in, block.mlp_norm_out, block.mlp))
        for s, norm_in, norm_out, layer in sublayers:
            if s == "mlp":
                expected[f"blocks.{i}.hook_resid_mid"] = x
            h = norm_in(x) if placement.input_norm else x
            if model.cfg.norm == "ln_scaling":
                h = h * (1.0 / math.sqrt(i + 1))
            out = layer(h)
            if s == "attn":
                out, expected[f"blocks.{i}.attn.hook_pattern"] = out
            expected[f"blocks.{i}.hook_{s}_in"], expected[f"blocks.{i}.hook_{s}_out"] = h, out
            if placement.output_norm == "residual":  # post: N(x + f)
                into = x + out
                x = norm_out(into)
            elif placement.output_norm == "branch":  # x + N(f)
                into = out
                x = x + norm_out(into)
            elif placement.eigen_rate:  # nGPT: u(x + alpha (u(f) - x))
                alpha = block._eigen_rate(getattr(block, f"{s}_alpha"))
                x = unit(x + alpha * (unit(out) - x))
            else:
                x = x + out
            if placement.output_norm is not None:
                expected[f"blocks.{i}.hook_{s}_norm_out_input"] = into
                expected[f"blocks.{i}.hook_{s}_norm_out_output"] = norm_out(into)
        expected[f"blocks.{i}.hook_resid_post"] = x
    return expected


@pytest.mark.parametrize("norm", NORM_PLACEMENTS)
@pytest.mark.parametrize("mlp", [None, "swiglu"])
def test_every_capture_point_has_the_value_and_shape_it_claims(norm, mlp):
    torch.manual_seed(2)
    model = Transformer(ModelConfig(vocab=11, d_model=8, n_layers=2, n_heads=2, norm=norm,
                                    norm_kind="layer", mlp=mlp, max_len=6, init_std=0.5)).double()
    tokens = torch.randint(0, 11, (3, 6))
    with torch.no_grad():
        plain = model(tokens)
        with model.capture() as cache:
            logits, attention = model(tokens, return_attention=True)
        expected = _expected_points(model, tokens)
    assert torch.equal(plain, logits)  # capturing changes no number
    assert set(cache) == set(expected) == set(model.hook_points())
    for name, value in expected.items():
        assert cache[name].shape == value.shape, name
        assert torch.equal(cache[name], value), name  # the same operations in the same order
        width = (3, 2, 6, 6) if name.endswith("hook_pattern") else (3, 6, 8)
        assert cache[name].shape == width, name
    for i, weights in enumerate(attention):
        pattern = cache[f"blocks.{i}.attn.hook_pattern"]
        assert pattern is weights
        assert torch.allclose(pattern.sum(-1), torch.ones(3, 2, 6, dtype=torch.float64))
        assert torch.all(pattern.triu(1) == 0)  # causal
    last = cache["blocks.1.hook_resid_post"]
    if model.s_z is None:
        assert torch.equal(model.final_norm(last) @ model.W_U, logits)


def test_capture_points_exist_only_where_the_block_has_the_part():
    pre = Transformer(ModelConfig(vocab=5, d_model=4, norm="pre"))
    assert sorted(pre.hook_points()) == sorted(f"blocks.0.{p}" for p in (
        "hook_resid_pre", "hook_attn_in", "attn.hook_pattern", "hook_attn_out", "hook_resid_post"))
    post = Transformer(ModelConfig(vocab=5, d_model=4, norm="post", mlp="gelu"))
    assert {"blocks.0.hook_resid_mid", "blocks.0.hook_mlp_norm_out_input",
            "blocks.0.hook_mlp_norm_out_output"} <= set(post.hook_points())
    assert not any("hook" in key for key in post.state_dict())


def test_capture_selects_by_pattern_keeps_the_graph_and_closes():
    torch.manual_seed(3)
    model = Transformer(ModelConfig(vocab=7, d_model=8, n_layers=3, norm="post",
                                    mlp="gelu")).double()
    tokens = torch.randint(0, 7, (2, 5))
    with model.capture("blocks.*.hook_attn_norm_out_input", "blocks.2.hook_resid_post") as cache:
        logits = model(tokens)
    assert sorted(cache) == [f"blocks.{i}.hook_attn_norm_out_input" for i in range(3)] + [
        "blocks.2.hook_resid_post"]
    (grad,) = torch.autograd.grad(logits.sum(), cache["blocks.1.hook_attn_norm_out_input"])
    assert grad.shape == (2, 5, 8) and bool(grad.abs().sum() > 0)  # the model's own tensor
    with model.capture("blocks.0.hook_resid_mid", retain_grad=True) as kept:
        model(tokens).sum().backward()
    assert kept["blocks.0.hook_resid_mid"].grad.shape == (2, 5, 8)
    before = cache["blocks.2.hook_resid_post"]
    model(tokens)  # closed: nothing is recorded any more
    assert cache["blocks.2.hook_resid_post"] is before
    with pytest.raises(ValueError, match="matches no capture point"):
        model.capture("blocks.*.hook_mlp_nothing")
    pre = Transformer(ModelConfig(vocab=5, d_model=4, norm="pre"))
    with pytest.raises(ValueError, match="matches no capture point"):
        pre.capture("blocks.*.hook_attn_norm_out_*")  # Pre-Norm has no output norm


def _dense(monkeypatch):
    """Turn the distinct-token projection off (every position projected)."""
    monkeypatch.setattr(Transformer, "token_rows", lambda self, tokens: None)


@pytest.mark.parametrize("norm", NORM_PLACEMENTS)
@pytest.mark.parametrize("extra", [{}, {"rope": True, "n_heads": 2},
                                   {"mlp": "gelu", "n_layers": 2}])
def test_distinct_token_projection_is_the_dense_product(norm, extra, monkeypatch):
    """The first attention's projections of the u distinct tokens, gathered back (one head:
    with W_V W_O folded into the table), against every position projected: float64 forward and
    gradients equal to 1e-12 (relative to the largest entry); the float32 forward to 1e-5 (its
    rounding), and bit for bit with the fold off (only the rows are gathered then)."""
    torch.manual_seed(3)
    model = Transformer(ModelConfig(vocab=13, d_model=16, norm=norm, **extra))
    tokens = torch.randint(0, 13, (24, 7))
    assert model.token_rows(tokens) is not None

    def run(m):
        m.zero_grad()
        out = m(tokens)
        out.square().sum().backward()
        return out.detach(), {n: p.grad.clone() for n, p in m.named_parameters()}

    out32, _ = run(model)
    with monkeypatch.context() as patch:
        patch.setattr(Attention, "fold_value_output", False)
        unfolded32, _ = run(model)
    out64, grads64 = run(model.double())
    with monkeypatch.context() as patch:
        _dense(patch)
        dense64, dense_grads64 = run(model)
        dense32, _ = run(model.float())
    assert torch.equal(unfolded32, dense32)
    assert torch.allclose(out32, dense32, rtol=0, atol=1e-5 * float(dense32.abs().max()))
    assert torch.allclose(out64, dense64, rtol=0, atol=1e-12 * float(dense64.abs().max()))
    for name, grad in dense_grads64.items():
        assert torch.allclose(grads64[name], grad, rtol=0,
                              atol=1e-12 * float(grad.abs().max())), name


def test_distinct_token_projection_only_where_rows_are_the_token_s():
    torch.manual_seed(4)
    tokens = torch.randint(0, 5, (16, 6))
    plain = Transformer(ModelConfig(vocab=5, d_model=8))
    rows = plain.token_rows(tokens)
    flat = tokens.reshape(-1)
    for token in range(5):  # each token's first place (every token occurs here)
        assert int(rows.first[token]) == int((flat == token).nonzero()[0])
    assert torch.equal(rows.inverse, tokens)
    assert Transformer(ModelConfig(vocab=5, d_model=8, max_len=6)).token_rows(tokens) is None
    assert plain.token_rows(torch.arange(9)[None] % 5) is None  # fewer than 2 v positions
    for point in ("blocks.0.hook_resid_pre", "blocks.0.hook_attn_in"):
        with plain.capture(point):
            assert plain.token_rows(tokens) is None
    with plain.capture("blocks.0.hook_attn_out"):  # after the projections: no effect
        assert plain.token_rows(tokens) is not None


def test_gradients_at_each_position_survive_the_distinct_token_projection(monkeypatch):
    """A capture of what attention reads, with its gradient, sees every position's own
    gradient (the projection is dense while the hook is open), as with the fast path off."""
    torch.manual_seed(5)
    model = Transformer(ModelConfig(vocab=5, d_model=8, norm="pre")).double()
    tokens = torch.randint(0, 5, (16, 6))

    def gradient():
        with model.capture("blocks.0.hook_attn_in", retain_grad=True) as cache:
            model(tokens).square().sum().backward()
        return cache["blocks.0.hook_attn_in"].grad

    fast = gradient()
    _dense(monkeypatch)
    assert torch.allclose(fast, gradient(), rtol=0, atol=1e-12)
    assert bool((fast.abs().sum(-1) > 0).all())
