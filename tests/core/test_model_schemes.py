"""Every normalization scheme of the model's table against an independent transcription of its
paper's equations, plus frozen gains, the Mix-LN layer pattern, nGPT's re-normalization, RoPE,
and K models at once through torch.func.

The transcription below reads the model's weights by name (its state dict) and calls no model
code: plain torch, one head at a time, norms written out, RoPE as complex multiplication.
"""
import copy
import math

import pytest
import torch

from resharpen.experiments.training import loop as T
from resharpen.experiments.training.config import Schema, pick_fields
from resharpen.experiments.model.schemes import SCHEMES
from resharpen.experiments.model.transformer import (ModelConfig, Norm, Transformer,
                                              after_optimizer_step, layer_of)
from resharpen.experiments.training.schema import (FIRST_PLACEMENTS, MODEL_FIELDS,
                                                     NORM_PLACEMENTS)

EPS = 1e-6


# ----------------------------------------------------------------------------- transcription
def norm(sd: dict, name: str, kind: str, x: torch.Tensor) -> torch.Tensor:
    """RMSNorm g x / sqrt(mean x^2 + eps) or LayerNorm g (x - mu) / sqrt(var + eps) + b; gain 1
    and bias 0 where the state dict has none (frozen)."""
    if kind == "rms":
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)
    else:
        centred = x - x.mean(-1, keepdim=True)
        y = centred / torch.sqrt((centred * centred).mean(-1, keepdim=True) + EPS)
    y = y * sd.get(f"{name}.gain", 1.0)
    return y + sd[f"{name}.bias"] if f"{name}.bias" in sd else y


def sphere(v: torch.Tensor) -> torch.Tensor:
    return v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)


def rope(v: torch.Tensor) -> torch.Tensor:
    """RoFormer: coordinates (2i, 2i+1) as the complex number z_i, times exp(i p theta_i) at
    position p, theta_i = 10000^(-2i/e)."""
    n, e = v.shape[-2], v.shape[-1]
    z = torch.complex(v[..., 0::2], v[..., 1::2])
    theta = 10000.0 ** (-torch.arange(e // 2, dtype=torch.float64) * 2 / e)
    z = z * torch.polar(torch.ones(n, e // 2, dtype=torch.float64),
                        torch.arange(n, dtype=torch.float64)[:, None] * theta)
    return torch.stack((z.real, z.imag), dim=-1).reshape(v.shape)


def attention(cfg: ModelConfig, sd: dict, p: str, h: torch.Tensor, ngpt: bool) -> torch.Tensor:
    n, out = h.shape[1], torch.zeros_like(h)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    for head in range(cfg.n_heads):
        q, k = h @ sd[f"{p}attn.W_Q"][head], h @ sd[f"{p}attn.W_K"][head]
        v = h @ sd[f"{p}attn.W_V"][head]
        if cfg.rope:
            q, k = rope(q), rope(k)
        e = q.shape[-1]
        if ngpt:  # q <- s_qk Norm(q), k <- s_qk Norm(k), softmax scale sqrt(d_head)
            s_qk = sd[f"{p}attn.s_qk"][head] * math.sqrt(cfg.d_model)
            q, k = s_qk * sphere(q), s_qk * sphere(k)
            scores = q @ k.transpose(-1, -2) * math.sqrt(e)
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(e)
        weights = torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)
        out = out + weights @ v @ sd[f"{p}attn.W_O"][head]
    return out


def mlp(cfg: ModelConfig, sd: dict, p: str, h: torch.Tensor, ngpt: bool) -> torch.Tensor:
    gelu = lambda z: 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))  # noqa: E731
    silu = lambda z: z * torch.sigmoid(z)  # noqa: E731
    u = h @ sd[f"{p}mlp.W_in"]
    if cfg.mlp == "swiglu":
        nu = h @ sd[f"{p}mlp.W_gate"]
        if ngpt:  # u <- s_u u, nu <- s_nu sqrt(d) nu
            u, nu = sd[f"{p}mlp.s_u"] * u, sd[f"{p}mlp.s_nu"] * math.sqrt(cfg.d_model) * nu
        hidden = u * silu(nu)
    else:
        hidden = gelu(sd[f"{p}mlp.s_nu"] * math.sqrt(cfg.d_model) * u if ngpt else u)
    return hidden @ sd[f"{p}mlp.W_out"]


def mixln_is_post(layer: int, n_layers: int) -> bool:
    """Mix-LN: the first floor(0.25 L) layers Post-LN (here at least one)."""
    return layer < max(1, int(0.25 * n_layers))


def reference_logits(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    cfg, sd = model.cfg, dict(model.state_dict())
    scheme, kind, L = cfg.norm, cfg.norm_kind, cfg.n_layers
    x = sd["W_E"][tokens]
    if cfg.max_len:
        x = x + sd["W_pos"][: tokens.shape[1]]
    if scheme == "ngpt":
        x = sphere(x)
    for layer in range(L):
        p = f"blocks.{layer}."
        subs = [("attn", lambda h: attention(cfg, sd, p, h, scheme == "ngpt"))]
        if cfg.mlp:
            subs.append(("mlp", lambda h: mlp(cfg, sd, p, h, scheme == "ngpt")))
        for s, f in subs:
            N_in = lambda z: norm(sd, f"{p}{s}_norm_in", kind, z)  # noqa: E731
            N_out = lambda z: norm(sd, f"{p}{s}_norm_out", kind, z)  # noqa: E731
            if scheme == "none":
                x = x + f(x)
            elif scheme in ("pre", "pre_nofinal"):
                x = x + f(N_in(x))
            elif scheme == "post" or (scheme == "mixln" and mixln_is_post(layer, L)):
                x = N_out(x + f(x))
            elif scheme == "mixln":
                x = x + f(N_in(x))
            elif scheme == "attn_out":
                x = x + N_out(f(x))
            elif scheme == "peri":
                x = x + N_out(f(N_in(x)))
            elif scheme == "ln_scaling":  # LN(x) / sqrt(l), l = 1..L
                x = x + f(N_in(x) / math.sqrt(layer + 1))
            elif scheme == "ngpt":  # h <- Norm(h + alpha (Norm(f(h)) - h))
                alpha = sd[f"{p}{s}_alpha"].abs() * 0.05 * math.sqrt(cfg.d_model)
                x = sphere(x + alpha * (sphere(f(x)) - x))
            else:
                raise AssertionError(scheme)
    if scheme in ("pre", "peri", "mixln", "ln_scaling"):
        x = norm(sd, "final_norm", kind, x)
    logits = x @ sd["W_U"]
    return logits * sd["s_z"] * math.sqrt(cfg.d_model) if scheme == "ngpt" else logits


def perturbed(cfg: ModelConfig, seed: int) -> Transformer:
    """A float64 model whose every parameter (gains, biases, nGPT's scalings too) is moved
    off its initial value, so that each enters the comparison."""
    torch.manual_seed(seed)
    model = Transformer(cfg).double()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.add_(0.3 * torch.randn_like(param) * (param.abs().mean() + 0.1))
    return model


# ----------------------------------------------------------------------------- the schemes
CASES = [dict(mlp=None, norm_kind="rms"), dict(mlp="gelu", norm_kind="layer"),
         dict(mlp="swiglu", norm_kind="rms", rope=True),
         dict(mlp="gelu", norm_kind="rms", max_len=7),
         dict(mlp="swiglu", norm_kind="layer", norm_gain="frozen", n_layers=3)]


@pytest.mark.parametrize("scheme", NORM_PLACEMENTS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_each_scheme_is_its_papers_equations(scheme, case):
    cfg = ModelConfig(**{**dict(vocab=11, d_model=8, n_layers=2, n_heads=2, norm=scheme,
                                init_std=0.4), **case})
    model = perturbed(cfg, seed=NORM_PLACEMENTS.index(scheme))
    tokens = torch.randint(0, 11, (3, 7), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        got, want = model(tokens), reference_logits(model, tokens)
    assert got.dtype == torch.float64 and torch.isfinite(want).all()
    assert torch.allclose(got, want, atol=1e-11, rtol=1e-11), (got - want).abs().max()


def test_the_table_and_the_config_name_the_same_schemes():
    assert tuple(SCHEMES) == NORM_PLACEMENTS and FIRST_PLACEMENTS == NORM_PLACEMENTS[:5]
    assert {n for n, p in SCHEMES.items() if p.final_norm} == {"pre", "peri", "mixln",
                                                                  "ln_scaling"}
    assert [n for n, p in SCHEMES.items() if p.after_step is not None] == ["ngpt"]


def test_frozen_gains_have_no_parameters_and_equal_unit_gains():
    for scheme in ("pre", "peri", "mixln", "post"):
        kw = dict(vocab=7, d_model=8, n_layers=2, norm=scheme, norm_kind="layer", mlp="gelu")
        torch.manual_seed(0)
        frozen = Transformer(ModelConfig(**kw, norm_gain="frozen"))
        torch.manual_seed(0)
        learned = Transformer(ModelConfig(**kw))
        names = [n for n, _ in frozen.named_parameters()]
        assert not any(n.endswith((".gain", ".bias")) for n in names), names
        assert names == [n for n, _ in learned.named_parameters()
                         if not n.endswith((".gain", ".bias"))]
        assert any(isinstance(m, Norm) for m in frozen.modules())
        tokens = torch.randint(0, 7, (2, 5))
        assert torch.equal(frozen(tokens), learned(tokens))  # learned gains start at 1, bias 0


@pytest.mark.parametrize("n_layers, post", [(1, [0]), (4, [0]), (8, [0, 1])])
def test_mixln_layer_pattern(n_layers, post):
    model = Transformer(ModelConfig(vocab=5, d_model=4, n_layers=n_layers, norm="mixln",
                                    mlp="gelu"))
    for i, block in enumerate(model.blocks):
        is_post = i in post
        assert layer_of("mixln", i, n_layers).output_norm == ("residual" if is_post else None)
        assert isinstance(block.attn_norm_out, Norm) == is_post
        assert isinstance(block.mlp_norm_in, Norm) != is_post
        assert hasattr(block, "hook_mlp_norm_out_input") == is_post
    assert isinstance(model.final_norm, Norm)
    assert [mixln_is_post(i, n_layers) for i in range(n_layers)] == \
        [i in post for i in range(n_layers)]


# ----------------------------------------------------------------------------- nGPT
SPHERE_DIMS = {"W_E": -1, "W_U": -2, "W_pos": -1, "attn.W_Q": -2, "attn.W_K": -2,
               "attn.W_V": -2, "attn.W_O": -1, "mlp.W_in": -2, "mlp.W_gate": -2, "mlp.W_out": -1}


def unit_along_d(params: dict, atol: float = 1e-12) -> None:
    for name, tensor in params.items():
        dims = [d for key, d in SPHERE_DIMS.items() if name == key or name.endswith("." + key)]
        if dims:
            norms = torch.linalg.vector_norm(tensor, dim=dims[0])
            assert torch.allclose(norms, torch.ones_like(norms), atol=atol), name


def test_ngpt_starts_on_the_sphere_and_is_renormalized_after_a_step():
    cfg = ModelConfig(vocab=9, d_model=8, n_layers=2, n_heads=2, norm="ngpt", mlp="swiglu",
                      max_len=6)
    torch.manual_seed(0)
    model = Transformer(cfg)
    unit_along_d(dict(model.named_parameters()), atol=1e-6)
    model = perturbed(cfg, 1)
    scalings = {n: p.clone() for n, p in model.named_parameters() if "W_" not in n}
    assert set(scalings) == {"s_z", "blocks.0.attn_alpha", "blocks.0.mlp_alpha",
                             "blocks.0.attn.s_qk", "blocks.0.mlp.s_u", "blocks.0.mlp.s_nu",
                             "blocks.1.attn_alpha", "blocks.1.mlp_alpha", "blocks.1.attn.s_qk",
                             "blocks.1.mlp.s_u", "blocks.1.mlp.s_nu"}
    model.after_optimizer_step()
    unit_along_d(dict(model.named_parameters()))
    assert all(torch.equal(p, scalings[n]) for n, p in model.named_parameters() if n in scalings)
    # through the training step
    train = dict(lr=0.05, warmup=0, steps=3, schedule="constant", min_lr_ratio=1.0,
                 weight_decay=0.0, beta1=0.9, beta2=0.98)
    opt = T.make_optimizer(model, train)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0)
    T.train_step(model, opt, sched, torch.randint(0, 9, (4, 6)), 1.0)
    unit_along_d(dict(model.named_parameters()))


def test_renormalization_works_on_a_stack_and_leaves_other_schemes_alone():
    from torch.func import stack_module_state

    cfg = ModelConfig(vocab=9, d_model=8, n_layers=2, n_heads=2, norm="ngpt", mlp="gelu")
    models = [perturbed(cfg, seed) for seed in range(3)]
    stacked, _ = stack_module_state(models)
    assert stacked["W_E"].shape == (3, 9, 8)
    after_optimizer_step(cfg, stacked)
    for k, model in enumerate(models):
        model.after_optimizer_step()
        for name, param in model.named_parameters():
            assert torch.equal(stacked[name][k], param.detach()), name
    unit_along_d({n: t[1] for n, t in stacked.items()})
    pre = ModelConfig(vocab=9, d_model=8, norm="pre")
    params = {n: p.detach().clone() for n, p in perturbed(pre, 0).named_parameters()}
    before = {n: t.clone() for n, t in params.items()}
    after_optimizer_step(pre, params)
    assert all(torch.equal(params[n], before[n]) for n in params)


# ----------------------------------------------------------------------------- RoPE
def test_rope_scores_depend_only_on_the_offset_and_any_length_runs():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab=13, d_model=8, n_heads=2, rope=True,
                                    init_std=0.5)).double()
    attn = model.blocks[0].attn
    tokens = torch.randint(0, 13, (2, 6))
    shift = torch.randint(0, 13, (2, 37))
    with torch.no_grad():
        plain = attn.scores(model.residual(tokens))
        shifted = attn.scores(model.residual(torch.cat([shift, tokens], dim=1)))
        assert torch.allclose(shifted[..., 37:, 37:], plain, atol=1e-12)
        assert not torch.allclose(shifted[..., 37:, :6], plain, atol=1e-3)  # positions matter
        long = torch.randint(0, 13, (1, 1500))
        logits = model.float()(long)
    assert logits.shape == (1, 1500, 13) and torch.isfinite(logits).all()


# ----------------------------------------------------------------------------- torch.func
@pytest.mark.parametrize("scheme", NORM_PLACEMENTS)
def test_vmap_over_stacked_members_equals_each_model(scheme):
    from torch.func import functional_call, stack_module_state, vmap

    cfg = ModelConfig(vocab=9, d_model=8, n_layers=2, n_heads=2, norm=scheme, mlp="swiglu",
                      norm_kind="layer", rope=scheme in ("ngpt", "mixln"), init_std=0.3)
    models = [perturbed(cfg, seed).float() for seed in range(3)]
    params, buffers = stack_module_state(models)
    shape = copy.deepcopy(models[0]).to("meta")
    tokens = torch.randint(0, 9, (4, 7), generator=torch.Generator().manual_seed(2))

    def call(p, b):
        return functional_call(shape, (p, b), (tokens,))

    with torch.no_grad():
        stacked = vmap(call)(params, buffers)
        for k, model in enumerate(models):
            assert torch.allclose(stacked[k], model(tokens), atol=1e-5, rtol=1e-5), (scheme, k)


# ----------------------------------------------------------------------------- configs
@pytest.mark.parametrize("kwargs, message", [
    (dict(norm="middle"), "norm placement 'middle' is not one of none, pre, post, attn_out, "
                          "peri, pre_nofinal, mixln, ln_scaling, ngpt"),
    (dict(norm_gain="fixed"), "norm gain 'fixed' is not one of learned, frozen"),
    (dict(rope=True, d_head=3), "d_head must be even, got d_head=3; allowed: an even d_head"),
    (dict(rope=True, max_len=8), "positions are one of none, learned .max_len. or rope"),
    (dict(rope=1), "rope must be True or False"),
])
def test_config_errors_name_the_allowed_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(vocab=5, d_model=4, **kwargs)


def test_old_saved_configs_load_and_the_model_table_maps_to_the_config():
    old = {"vocab": 5, "d_model": 4, "n_layers": 1, "n_heads": 1, "d_head": None,
           "d_value": None, "norm": "post", "norm_kind": "rms", "mlp": None, "d_mlp": None,
           "max_len": 9, "attn_dropout": 0.0, "resid_dropout": 0.0, "eps": 1e-6,
           "init_std": 0.02, "attn_out_scale": 1.0}
    cfg = ModelConfig.from_dict(old)
    assert (cfg.rope, cfg.norm_gain, cfg.positional) == (False, "learned", "learned")
    schema = Schema({"model": pick_fields(MODEL_FIELDS, **{k: f.default
                                                          for k, f in MODEL_FIELDS.items()})})
    table = schema.validate({"model": {"positional": "rope", "norm_gain": "frozen",
                                       "norm": "ngpt"}})
    made = T.model_config(table, vocab=7, max_len=20)
    assert (made.rope, made.max_len, made.norm_gain, made.norm) == (True, None, "frozen", "ngpt")
    assert made.positional == "rope"
    assert T.model_config(schema.validate({}), vocab=7, max_len=20).positional == "none"
    with pytest.raises(ValueError, match="allowed: one of 'learned', 'frozen'"):
        schema.validate({"model": {"norm_gain": "fixed"}})


def test_the_dynamics_schemes_map_onto_trainable_placements():
    """Every scheme of the dynamics paper is one registered scheme, and back."""
    from resharpen.experiments.model.schemes import by_dynamics_name, names
    from resharpen.theory.dynamics.schemes import SCHEMES as PAPER

    assert {by_dynamics_name(key).name for key in PAPER} == set(names(dynamics=True))
    assert len(names(dynamics=True)) == len(PAPER)
    assert by_dynamics_name("sqrt").name == "ln_scaling"
