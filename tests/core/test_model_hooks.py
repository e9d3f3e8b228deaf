"""The model in the public API (issue 24, requirement 2): Transformer, ModelConfig, the placement
table and the hook points exported from ``resharpen``; ``run_with_hooks`` reads and replaces
activations at named points and leaves the model as it was."""
from __future__ import annotations

import pytest
import torch

import resharpen as rs
from resharpen.experiments.model import hooks
from resharpen.experiments.model import transformer as M


def test_the_model_names_are_the_core_ones():
    assert rs.Transformer is M.Transformer and rs.ModelConfig is M.ModelConfig
    assert tuple(rs.SCHEMES)[:len(rs.NORM_PLACEMENTS)] == rs.NORM_PLACEMENTS
    assert rs.HookPoint is hooks.HookPoint


@pytest.mark.parametrize("norm", ["none", "post", "peri"])
@pytest.mark.parametrize("mlp", [None, "gelu"])
def test_hook_points_named_by_HOOK_POINTS(norm, mlp):
    model = rs.Transformer(rs.ModelConfig(vocab=7, d_model=8, n_layers=2, norm=norm, mlp=mlp))
    suffixes = {name.split(".", 2)[2] for name in model.hook_points()}
    assert suffixes <= set(rs.HOOK_POINTS)
    fired = []
    model.run_with_hooks(torch.tensor([[1, 2, 3]]),
                         [(lambda name: True, lambda x, name: fired.append(name))])
    assert sorted(fired) == sorted(model.hook_points()) and len(set(fired)) == len(fired)
    order = [s for s in rs.HOOK_POINTS if s in suffixes]  # HOOK_POINTS is the firing order
    for layer in range(2):
        prefix = f"blocks.{layer}."
        assert [n[len(prefix):] for n in fired if n.startswith(prefix)] == order


def _model(norm="none"):
    torch.manual_seed(0)
    return rs.Transformer(rs.ModelConfig(vocab=9, d_model=8, norm=norm)).double().eval()


def test_a_hook_that_returns_none_reads_without_changing_anything():
    model, tokens = _model("post"), torch.tensor([[0, 3, 5, 2]])
    seen = {}
    logits = model.run_with_hooks(tokens, [("blocks.*.hook_attn_out",
                                            lambda x, name: seen.update({name: x.clone()}))])
    assert torch.equal(logits, model(tokens))
    assert set(seen) == {"blocks.0.hook_attn_out"} and seen["blocks.0.hook_attn_out"].shape == (1, 4, 8)


def test_a_replacement_is_used_downstream_and_the_hooks_are_removed_after():
    model, tokens = _model(), torch.tensor([[0, 3, 5, 2]])
    state = {k: v.clone() for k, v in model.state_dict().items()}
    plain = model(tokens)
    zero = model.run_with_hooks(tokens, [("blocks.0.attn.hook_pattern",
                                          lambda p, name: torch.zeros_like(p))])
    # no attention: the logits are the direct path W_E[t] W_U alone
    assert torch.allclose(zero[0], model.W_E[tokens[0]] @ model.W_U)
    assert not torch.allclose(zero, plain)
    assert torch.equal(model(tokens), plain)  # hooks gone
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert all(not p._forward_hooks for p in model.hook_points().values())


def test_hooks_run_in_order_and_the_context_manager_covers_any_call():
    model, tokens = _model(), torch.tensor([[1, 2]])
    calls = []
    hooks = [("blocks.0.hook_resid_pre", lambda x, name: calls.append(("first", name))),
             ("blocks.0.hook_resid_pre", lambda x, name: calls.append(("second", name)))]
    with model.hooks(hooks):
        model(tokens)
        model(tokens)
    model(tokens)
    assert calls == [("first", "blocks.0.hook_resid_pre"), ("second", "blocks.0.hook_resid_pre")] * 2


def test_bad_patterns_and_replacements_are_refused_and_leave_no_hook():
    model, tokens = _model(), torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match="matches no capture point"):
        model.run_with_hooks(tokens, [("blocks.0.hook_nothing", lambda x, name: None)])
    with pytest.raises(TypeError, match="a hook point pattern"):
        model.run_with_hooks(tokens, [(3, lambda x, name: None)])
    with pytest.raises(ValueError, match=r"returned \(2,\); a replacement must be"):
        model.run_with_hooks(tokens, [("blocks.0.hook_attn_out", lambda x, name: x[0, :, 0])])
    assert all(not p._forward_hooks for p in model.hook_points().values())
    assert torch.equal(model(tokens), _model()(tokens))


def test_ablating_the_query_attention_of_a_construction_changes_its_margins_as_the_theory_says():
    v, lam = 10, 20.0
    built = rs.build("tight", vocab=v)  # lam defaults to 2 v
    assert built.lam == lam
    tokens = torch.tensor([[3, 7, 1, 8, 2, 5]])

    def ablate(pattern, name):
        pattern = pattern.clone()
        pattern[:, :, -1, :] = 0.0
        return pattern

    with torch.no_grad():
        plain = built.model(tokens)
        ablated = built.model.run_with_hooks(tokens, [("blocks.0.attn.hook_pattern", ablate)])
    for logits, nonquery, query in ((plain, lam / 6, 1 + lam / 6), (ablated, 0.0, 1.0)):
        f = logits[0, -1]
        seen = torch.zeros(v, dtype=torch.bool)
        seen[tokens[0]] = True
        mean = f[~seen].mean()
        assert torch.allclose(mean - f[tokens[0, :-1]], torch.full((5,), nonquery, dtype=f.dtype))
        assert abs(float(mean - f[tokens[0, -1]]) - query) < 1e-9
