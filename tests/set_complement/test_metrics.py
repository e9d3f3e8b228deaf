import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resharpen.experiments.set_complement.metrics import complement_metrics
from resharpen.experiments.tasks.set_complement import sample_inputs
from resharpen.theory.set_complement.formulas import invalid_mass, kl_from_invalid_mass


def equal_valid_logits(vocab, tokens, margins, offset=0.0):
    logits = torch.full((1, vocab), offset, dtype=torch.float64)
    logits[0, tokens[0]] = offset - torch.as_tensor(margins, dtype=torch.float64)
    return logits


@given(vocab=st.integers(3, 40), data=st.data())
@settings(max_examples=60, deadline=None)
def test_identities_when_valid_logits_are_equal(vocab, data):
    length = data.draw(st.integers(1, vocab - 1))
    tokens = sample_inputs(vocab, length, 1, seed=data.draw(st.integers(0, 1000)))
    margins = data.draw(st.lists(st.floats(-5, 700), min_size=length, max_size=length))
    offset = data.draw(st.floats(-50, 50))
    m = complement_metrics(equal_valid_logits(vocab, tokens, margins, offset), tokens, vocab)
    mass = float(m["invalid_mass"][0])
    assert math.isclose(mass, invalid_mass(vocab, length, margins), rel_tol=1e-12, abs_tol=1e-300)
    assert math.isclose(float(m["tv"][0]), mass, rel_tol=1e-9, abs_tol=1e-15)
    # KL = spread term + softplus(x); with equal valid logits the spread term is zero up to the
    # rounding of their mean, a few ulps of the logit scale |offset| (hypothesis found 1.8e-15 at
    # offset -12.8, margin 5: KL 1.3e-3 off by 1.3e-12 relative)
    floor = 4 * np.finfo(np.float64).eps * max(1.0, abs(offset))
    assert math.isclose(float(m["kl"][0]), kl_from_invalid_mass(mass), rel_tol=1e-12, abs_tol=floor)
    assert math.isclose(float(m["cross_entropy"][0]), math.log(vocab - length) + float(m["kl"][0]),
                        rel_tol=1e-12)
    assert np.isclose(float(m["margin_min"][0]), min(margins), rtol=1e-12, atol=1e-9)
    assert float(m["valid_spread"][0]) == 1.0


@given(vocab=st.integers(3, 30), seed=st.integers(0, 10**6))
@settings(max_examples=40, deadline=None)
def test_matches_direct_definitions_for_arbitrary_logits(vocab, seed):
    gen = torch.Generator().manual_seed(seed)
    tokens = sample_inputs(vocab, vocab - 1, 3, seed)
    logits = torch.randn(3, vocab - 1, vocab, generator=gen, dtype=torch.float64) * 3
    m = complement_metrics(logits, tokens, vocab)
    for n in range(3):
        for i in range(vocab - 1):
            p = torch.softmax(logits[n, i], 0)
            invalid = torch.zeros(vocab, dtype=torch.bool)
            invalid[tokens[n, : i + 1]] = True
            target = (~invalid).double() / (~invalid).sum()
            kl = float((target[~invalid] * (target[~invalid] / p[~invalid]).log()).sum())
            assert math.isclose(float(m["invalid_mass"][n, i]), float(p[invalid].sum()), rel_tol=1e-10)
            assert math.isclose(float(m["tv"][n, i]), 0.5 * float((p - target).abs().sum()), rel_tol=1e-10)
            assert math.isclose(float(m["kl"][n, i]), kl, rel_tol=1e-9, abs_tol=1e-14)
            top_invalid = bool(invalid[int(logits[n, i].argmax())])
            assert float(m["top1_invalid"][n, i]) == float(top_invalid)


def test_stable_at_huge_margins():
    tokens = torch.tensor([[0, 1, 2]])
    m = complement_metrics(equal_valid_logits(8, tokens, [1e5, 2e5, 3e5]), tokens, 8)
    assert all(torch.isfinite(v).all() for k, v in m.items() if not k.startswith("margin_nonquery"))
    assert float(m["invalid_mass"][0]) == 0.0 and float(m["kl"][0]) == 0.0
    tiny = complement_metrics(equal_valid_logits(8, tokens, [40.0, 40.0, 40.0]), tokens, 8)
    assert math.isclose(float(tiny["kl"][0]), 3 * math.exp(-40) / 5, rel_tol=1e-12)
