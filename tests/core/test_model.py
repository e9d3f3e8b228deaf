import pytest
import torch

from resharpen.experiments.core.model import NORM_PLACEMENTS, ModelConfig, Transformer


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
