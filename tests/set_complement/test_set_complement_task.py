import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resharpen.experiments.tasks.set_complement import exact_target, sample_inputs, validate_inputs


@given(vocab=st.integers(2, 60), data=st.data())
@settings(max_examples=40, deadline=None)
def test_samples_are_valid_inputs(vocab, data):
    length = data.draw(st.integers(1, vocab - 1))
    tokens = sample_inputs(vocab, length, 7, seed=data.draw(st.integers(0, 10**6)))
    assert tokens.shape == (7, length) and tokens.dtype == torch.int64
    validate_inputs(tokens, vocab)
    target = exact_target(tokens, vocab)
    assert torch.allclose(target.sum(1), torch.ones(7, dtype=torch.float64))
    assert (target.gather(1, tokens) == 0).all()
    assert ((target > 0).sum(1) == vocab - length).all()


def test_same_seed_same_inputs_and_uniform_first_token():
    assert torch.equal(sample_inputs(10, 4, 50, seed=3), sample_inputs(10, 4, 50, seed=3))
    assert not torch.equal(sample_inputs(10, 4, 50, seed=3), sample_inputs(10, 4, 50, seed=4))
    counts = torch.bincount(sample_inputs(5, 2, 20000, seed=0)[:, 0], minlength=5).double()
    assert (counts / 20000 - 0.2).abs().max() < 0.02


@pytest.mark.parametrize("args, message", [
    ((1, 1, 3), "vocabulary size must be >= 2"),
    ((5, 0, 3), r"input length must be an integer in \[1, 4\]"),
    ((5, 5, 3), r"input length must be an integer in \[1, 4\]"),
    ((5, 2, 0), "count must be a positive integer"),
    (("5", 2, 1), "vocabulary size must be an integer"),
])
def test_sampler_rejects_bad_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        sample_inputs(*args)


@pytest.mark.parametrize("tokens, message", [
    (torch.tensor([[1, 2, 1]]), "repeats a token"),
    (torch.tensor([[1, 7]]), r"tokens must lie in \[0, 5\]"),
    (torch.tensor([[-1, 2]]), r"tokens must lie in \[0, 5\]"),
    (torch.tensor([[1.0, 2.0]]), "integer dtype"),
    (torch.tensor([0, 1, 2, 3, 4, 5]).reshape(1, 6), r"input length must be an integer in \[1, 5\]"),
    (torch.tensor([1, 2]), r"shape \(count, length\)"),
])
def test_validation_names_the_problem(tokens, message):
    with pytest.raises(ValueError, match=message):
        validate_inputs(tokens, 6)
