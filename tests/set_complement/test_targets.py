"""The training target (train.target, train.labels_per_position): soft = the exact expectation of
the sampled loss, the mean sampled gradient = the soft gradient within Monte Carlo error, k labels
divide the label noise by k, and one loop and one batched path serve every target."""
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.targets import (IGNORE, Batch, TrainingTarget, cross_entropy,
                                                label_generator, make_batch,
                                                per_model_cross_entropy, sample_labels)
from resharpen.experiments.set_complement.train import (next_token_targets, train_group,
                                                        sample_sequences, train)

from tiny_configs import tiny  # noqa: E402 (a sibling helper module)
Z_MAX = 5.0  # fixed before measuring: max |z| over the gradient's coordinates (~200 of them)


def small_model(vocab: int = 6) -> Transformer:
    torch.manual_seed(3)
    return Transformer(ModelConfig(vocab=vocab, d_model=8, init_std=0.5)).double()


def with_labels(tokens: torch.Tensor, labels: torch.Tensor) -> Batch:
    """A batch scoring the inputs of ``tokens`` against ``labels`` (B, S) instead of the next tokens."""
    return Batch(torch.cat([tokens[..., :1], labels], dim=-1))


def test_set_complement_targets_are_uniform_on_the_unseen_tokens():
    seqs = torch.tensor([[2, 0, 3, 1], [1, 2, 0, 3]])
    p = next_token_targets(seqs, 5)
    assert p.shape == (2, 3, 5) and p.dtype == torch.float64
    assert torch.equal(p[0, 1], torch.tensor([0, 1 / 3, 0, 1 / 3, 1 / 3], dtype=torch.float64))
    assert torch.allclose(p.sum(-1), torch.ones(2, 3, dtype=torch.float64))
    stacked = next_token_targets(torch.stack([seqs, seqs.flip(0)]), 5)  # a model axis first
    assert torch.equal(stacked[1], p.flip(0))


def test_soft_loss_is_the_exact_expectation_of_the_sampled_loss():
    """Exhaustive: every joint label assignment of 2 sequences x 2 positions (v = 5)."""
    seqs = torch.tensor([[4, 1, 0], [2, 3, 1]])
    logits = torch.randn(2, 2, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                         requires_grad=True)
    p = next_token_targets(seqs, 5)
    soft = cross_entropy(logits, Batch(seqs, soft=p))
    (soft_grad,) = torch.autograd.grad(soft, logits)
    support = [torch.nonzero(p[b, i]).flatten().tolist() for b in range(2) for i in range(2)]
    expected, expected_grad = torch.zeros((), dtype=torch.float64), torch.zeros_like(logits)
    for labels in itertools.product(*support):
        weight = np.prod([float(p[b, i, y]) for (b, i), y in
                          zip(itertools.product(range(2), range(2)), labels)])
        loss = cross_entropy(logits, with_labels(seqs, torch.tensor(labels).view(2, 2)))
        (grad,) = torch.autograd.grad(loss, logits)
        expected, expected_grad = expected + weight * loss.detach(), expected_grad + weight * grad
    assert len(list(itertools.product(*support))) == 4 * 3 * 4 * 3
    assert soft.item() == pytest.approx(expected.item(), rel=1e-13)
    torch.testing.assert_close(soft_grad, expected_grad, rtol=1e-12, atol=1e-14)
    # the soft loss is H(p*, p), written out
    manual = -(p * logits.log_softmax(-1)).sum(-1).mean()
    assert soft.item() == pytest.approx(manual.item(), rel=1e-14)


def test_mean_sampled_gradient_equals_the_soft_gradient_within_monte_carlo_error():
    """The parameter gradient of a small model (v = 6) on fixed inputs: the mean over 2000 label
    draws from p* against the soft gradient, coordinate by coordinate in standard errors."""
    model, v, draws = small_model(), 6, 2000
    seqs = sample_sequences(v, 4, 8, torch.Generator().manual_seed(1))
    p = next_token_targets(seqs, v)
    params = {name: q.detach() for name, q in model.named_parameters()}

    def loss(params: dict, batch: Batch) -> torch.Tensor:
        return cross_entropy(functional_call(model, params, (seqs[:, :-1],)), batch)

    def flat(grads: dict) -> torch.Tensor:
        return torch.cat([g.flatten(start_dim=g.dim() - params[n].dim()) for n, g in grads.items()],
                         dim=-1)

    soft = flat(grad(loss)(params, Batch(seqs, soft=p)))
    per_draw = vmap(lambda labels: grad(loss)(params, with_labels(seqs, labels)))
    gen = torch.Generator().manual_seed(2)

    def z_scores(rows: torch.Tensor) -> torch.Tensor:
        labels = sample_labels(rows, draws, gen).permute(2, 0, 1)  # (draws, B, S)
        samples = flat(per_draw(labels))
        se = samples.std(0) / draws ** 0.5
        keep = se > 1e-12  # coordinates the labels move (all but a few)
        return ((samples.mean(0) - soft) / se)[keep]

    z = z_scores(p)
    assert z.numel() > 100 and z.abs().max() <= Z_MAX, float(z.abs().max())
    # the test can fail: labels uniform over all v tokens (seen ones too) are rejected
    biased = z_scores(torch.full_like(p, 1.0 / v))
    assert biased.abs().max() > 4 * Z_MAX, float(biased.abs().max())


@pytest.mark.parametrize("k", [4, 16])
def test_k_labels_divide_the_label_noise_by_k(k):
    """n draws of one position (input token 5, v = 8): its own next token ~ p* and k - 1 extra
    labels; over the draws the loss's variance is 1/k of the one-label variance and its mean is
    the soft loss. The n draws are n "models" of one sequence each (per-model losses)."""
    v, n = 8, 20000
    gen = torch.Generator().manual_seed(k)
    p = next_token_targets(torch.tensor([[5, 0]]), v)  # p* after (5): (1, 1, v)
    own = sample_labels(p.expand(n, 1, v), 1, gen)  # (n, 1, 1)
    tokens = torch.cat([torch.full((n, 1), 5), own[:, 0]], 1)[:, None]  # (n, 1, 2)
    logits = torch.randn(v, dtype=torch.float64, generator=gen).expand(n, 1, 1, v)

    def losses(labels: int) -> torch.Tensor:
        batch = make_batch(tokens, TrainingTarget("sampled", labels),
                           lambda s: next_token_targets(s, v), gen)
        return per_model_cross_entropy(logits, batch.tokens, batch.extra_labels)

    one, many = losses(1), losses(k)
    soft = per_model_cross_entropy(logits[:1], tokens[:1], soft=p[None])
    ratio = float(many.var() / one.var())
    assert ratio * k == pytest.approx(1.0, abs=0.15), ratio
    assert abs(float(many.mean() - soft)) <= 4 * float(many.std()) / n ** 0.5
    assert abs(float(one.mean() - soft)) <= 4 * float(one.std()) / n ** 0.5


def test_one_sampled_label_is_the_plain_next_token_loss_and_labels_come_from_p_star():
    seqs = sample_sequences(7, 4, 5, torch.Generator().manual_seed(0))
    logits = torch.randn(5, 3, 7, generator=torch.Generator().manual_seed(1))
    plain = F.cross_entropy(logits.reshape(-1, 7), seqs[:, 1:].reshape(-1))
    assert torch.equal(cross_entropy(logits, Batch(seqs)), plain)
    stacked = torch.stack([logits, 2 * logits])
    per = per_model_cross_entropy(stacked, torch.stack([seqs, seqs]))
    assert torch.equal(per[0], F.cross_entropy(logits.reshape(-1, 7), seqs[:, 1:].reshape(-1),
                                               reduction="none").mean())
    # k labels that all repeat the next token score like one
    repeated = Batch(seqs, extra_labels=seqs[:, 1:, None].expand(5, 3, 3))
    assert cross_entropy(logits, repeated).item() == pytest.approx(plain.item(), rel=1e-6)
    # extra labels: never a seen token, IGNORE on rows without a target, per-model generators
    p = next_token_targets(seqs, 7)
    labels = sample_labels(p, 50, label_generator(0))
    seen = torch.gather(p, -1, labels) == 0
    assert labels.shape == (5, 3, 50) and not seen.any()
    empty = p.clone()
    empty[0, 1] = 0
    assert (sample_labels(empty, 4, label_generator(0))[0, 1] == IGNORE).all()
    both = sample_labels(torch.stack([p, p]), 2, [label_generator(4), label_generator(9)])
    assert torch.equal(both[1], sample_labels(p, 2, label_generator(9)))




def test_target_keys_are_validated():
    with pytest.raises(ValueError, match="labels_per_position = 4 applies to train.target = "
                                         "'sampled' only"):
        tiny("x", **{"train.target": "soft", "train.labels_per_position": 4})
    with pytest.raises(ValueError, match="train.target = 'exact' is not allowed"):
        tiny("x", **{"train.target": "exact"})
    with pytest.raises(ValueError, match="labels_per_position = 0"):
        tiny("x", **{"train.labels_per_position": 0})
    assert tiny("x")["train"]["target"] == "sampled"


@pytest.mark.parametrize("target, k", [("soft", 1), ("sampled", 3)])
def test_every_target_trains_by_one_loop_and_one_batched_path(target, k):
    sets = {"train.target": target, "train.labels_per_position": k}
    configs = [tiny("a", **sets, **{"train.seed": 0, "train.lr": 1e-2}),
               tiny("b", **sets, **{"train.seed": 5, "train.lr": 3e-3, "train.ema": "ema"})]
    grouped = train_group(configs)
    sampled = train(tiny("a", **{"train.seed": 0, "train.lr": 1e-2}), progress=False)
    for config, got in zip(configs, grouped):
        want = train(config, progress=False)
        for kind in ("raw", "ema", "bema"):
            a = np.array([r["invalid_mass"] for r in got["per_length"][kind]])
            b = np.array([r["invalid_mass"] for r in want["per_length"][kind]])
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
        for h, w in zip(got["history"], want["history"]):
            assert h["loss"] == pytest.approx(w["loss"], rel=1e-5)
    # the target changes the run
    a = np.array([r["invalid_mass"] for r in grouped[0]["per_length"]["raw"]])
    b = np.array([r["invalid_mass"] for r in sampled["per_length"]["raw"]])
    assert np.abs(a / b - 1).max() > 1e-3
