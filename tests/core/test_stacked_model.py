"""The stacked forward equals K separate Transformer modules, for every architecture switch."""
import pytest
import torch

from resharpen.experiments.core.model import NORM_PLACEMENTS, ModelConfig, Transformer
from resharpen.experiments.core.stacked_model import stacked_logits

CASES = [dict(norm=p) for p in NORM_PLACEMENTS] + [
    dict(norm="peri", norm_kind="layer"),
    dict(norm="post", norm_kind="layer", n_layers=2, n_heads=2, mlp="gelu", max_len=7),
    dict(norm="pre", n_layers=2, n_heads=4, mlp="swiglu", max_len=9, d_head=3, d_value=5),
]


def stacked(models):
    names = [n for n, _ in models[0].named_parameters()]
    return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]) for n in names}


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_stacked_logits_equal_each_module(case):
    cfg = ModelConfig(vocab=11, d_model=8, init_std=0.3, **case)
    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        model = Transformer(cfg)
        with torch.no_grad():  # non-trivial gains and biases
            for name, p in model.named_parameters():
                if "norm" in name:
                    p.add_(0.5 * torch.randn_like(p))
        models.append(model)
    tokens = torch.randint(0, 11, (3, 4, 7))
    got = stacked_logits(stacked(models), cfg, tokens)
    with torch.no_grad():
        want = torch.stack([m(tokens[k]) for k, m in enumerate(models)])
    assert got.shape == (3, 4, 7, 11)
    assert float((got - want).abs().max()) < 1e-5 * float(want.abs().max())
    assert float((want[0] - want[1]).abs().max()) > 1e-2  # the models differ


def test_stacked_gradients_equal_each_module():
    cfg = ModelConfig(vocab=9, d_model=6, norm="attn_out", n_heads=2, init_std=0.3)
    models = [Transformer(cfg) for _ in range(2)]
    params = {n: p.requires_grad_(True) for n, p in stacked(models).items()}
    tokens = torch.randint(0, 9, (2, 3, 5))
    stacked_logits(params, cfg, tokens).pow(2).sum().backward()
    for k, model in enumerate(models):
        model(tokens[k]).pow(2).sum().backward()
        for name, p in model.named_parameters():
            scale = float(p.grad.abs().max())  # float32 rounding relative to the gradient's size
            assert float((params[name].grad[k] - p.grad).abs().max()) < 1e-5 * scale, name


def test_dropout_only_in_training_and_length_check():
    cfg = ModelConfig(vocab=9, d_model=6, attn_dropout=0.5, resid_dropout=0.5, max_len=4)
    params = stacked([Transformer(cfg) for _ in range(2)])
    tokens = torch.randint(0, 9, (2, 3, 4))
    assert torch.equal(stacked_logits(params, cfg, tokens), stacked_logits(params, cfg, tokens))
    assert not torch.equal(stacked_logits(params, cfg, tokens, training=True),
                           stacked_logits(params, cfg, tokens, training=True))
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        stacked_logits(params, cfg, torch.randint(0, 9, (2, 3, 5)))


def test_per_model_dropout_rates():
    from resharpen.experiments.core.stacked_model import dropout_rates

    cfg = ModelConfig(vocab=9, d_model=6, max_len=4)
    params = stacked([Transformer(cfg) for _ in range(3)])
    tokens = torch.randint(0, 9, (3, 5, 4))
    rates = dropout_rates(cfg, 3, ([0.0, 0.5, 0.0], [0.0, 0.0, 0.3]))
    plain = stacked_logits(params, cfg, tokens)
    dropped = stacked_logits(params, cfg, tokens, training=True, dropout=rates)
    assert torch.equal(dropped[0], plain[0])  # rate 0: untouched
    assert not torch.allclose(dropped[1], plain[1]) and not torch.allclose(dropped[2], plain[2])
    assert dropout_rates(cfg, 3) == (None, None)  # the config has no dropout
    with pytest.raises(ValueError, match=r"dropout rates must lie in \[0, 1\)"):
        dropout_rates(cfg, 3, (1.0, 0.0))


def test_compiled_embedding_is_the_same_gather(monkeypatch):
    """Under torch.compile the embedding is one-hot @ table (resharpen.experiments.core.stacked_model._embed,
    branch taken when torch.compiler.is_compiling()): the same rows bit for bit, and the
    table's gradient sums the same rows' upstream gradients. Eager tokens out of range raise."""
    from resharpen.experiments.core.stacked_model import _embed

    torch.manual_seed(0)
    table = torch.randn(3, 11, 5, requires_grad=True)
    tokens = torch.randint(0, 11, (3, 4, 6))
    weights = torch.randn(3, 4, 6, 5)
    eager = _embed(table, tokens)
    (grad_eager,) = torch.autograd.grad((eager * weights).sum(), table)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    fused = _embed(table, tokens)
    (grad_fused,) = torch.autograd.grad((fused * weights).sum(), table)
    monkeypatch.undo()
    assert torch.equal(fused, eager)
    torch.testing.assert_close(grad_fused, grad_eager, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="tokens must lie in 0..10"):
        _embed(table, torch.full((3, 1, 2), 11))
