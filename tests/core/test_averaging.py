"""EMA (swa_utils) and BEMA: closed forms at small t, the two eta limits, burn-in, errors."""
import math

import pytest
import torch
from torch import nn

from resharpen.experiments.training.averaging import BEMA, EMA, BEMAConfig, make_averager


class Scalar(nn.Module):
    def __init__(self, value: float):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([value], dtype=torch.float64))


def drive(averager, model, values, start=1):
    """Set the weight to values[i] at step start + i and update after each."""
    out = []
    for i, v in enumerate(values):
        with torch.no_grad():
            model.w.fill_(v)
        averager.update(model, start + i)
        out.append(float(averager.module().w))
    return out


def test_bema_closed_form_small_t():
    cfg = BEMAConfig(update_freq=1, ema_power=0.5, bias_power=0.2, lag=10.0, multiplier=1.0,
                     update_after=0)
    model = Scalar(0.0)
    bema = BEMA(model, cfg)
    theta = [3.0, 5.0, -2.0, 7.0]  # theta at steps 0 (= theta_0), 1, 2, 3
    got = drive(bema, model, theta, start=0)
    # hand-derived closed form
    b = lambda t: (10.0 + t) ** -0.5  # noqa: E731
    a = lambda t: (10.0 + t) ** -0.2  # noqa: E731
    ema0 = 3.0
    ema1 = (1 - b(1)) * ema0 + b(1) * 5.0
    ema2 = (1 - b(2)) * ema1 + b(2) * -2.0
    ema3 = (1 - b(3)) * ema2 + b(3) * 7.0
    expected = [3.0, a(1) * (5.0 - 3.0) + ema1, a(2) * (-2.0 - 3.0) + ema2,
                a(3) * (7.0 - 3.0) + ema3]
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert got[1] != pytest.approx(5.0)  # the average is not the raw weight


def test_bema_large_eta_is_the_ema_part_and_eta_zero_is_full_correction():
    values = [1.0, 4.0, 2.0, 8.0, -1.0, 0.5]
    m1, m2 = Scalar(0.0), Scalar(0.0)
    no_bias = BEMA(m1, BEMAConfig(update_freq=1, bias_power=200.0))  # alpha_t ~ 0
    full = BEMA(m2, BEMAConfig(update_freq=1, bias_power=0.0))  # alpha_t = 1
    got_ema = drive(no_bias, m1, values, start=0)
    got_full = drive(full, m2, values, start=0)
    ema, plain = values[0], [values[0]]
    for t, v in enumerate(values[1:], start=1):
        beta = (10.0 + t) ** -0.5
        ema = (1 - beta) * ema + beta * v
        plain.append(ema)
    assert got_ema == pytest.approx(plain, rel=1e-12)
    assert got_full == pytest.approx([e + (v - values[0]) for e, v in zip(plain, values)],
                                     rel=1e-12)


def test_bema_kappa_zero_disables_ema():
    m = Scalar(0.0)
    bema = BEMA(m, BEMAConfig(update_freq=1, ema_power=0.0, bias_power=0.5))
    values = [2.0, 3.0, 10.0]
    got = drive(bema, m, values, start=0)
    expected = [v + (10.0 + t) ** -0.5 * (v - 2.0) for t, v in enumerate(values)]
    assert got == pytest.approx(expected, rel=1e-12)


def test_bema_burn_in_and_update_freq():
    cfg = BEMAConfig(update_freq=2, update_after=3, bias_power=0.3)
    m = Scalar(0.0)
    bema = BEMA(m, cfg)
    # steps 1, 2: raw weights pass through; step 3 snapshots theta_0 = 9
    got = drive(bema, m, [100.0, -50.0, 9.0, 11.0, 13.0, 20.0], start=1)
    assert got[:2] == [100.0, -50.0]
    assert got[2] == pytest.approx(9.0)  # t = 0: EMA_0 = theta_0, no displacement
    assert got[3] == got[2]  # t = 1 is not a multiple of update_freq: unchanged
    beta, alpha = (10.0 + 2) ** -0.5, (10.0 + 2) ** -0.3
    ema2 = (1 - beta) * 9.0 + beta * 13.0
    assert got[4] == pytest.approx(alpha * (13.0 - 9.0) + ema2, rel=1e-12)
    assert bema.last_t == 2
    # the burn-in values (100, -50) never enter: theta_0 is the step-3 snapshot


def test_ema_matches_swa_utils_recursion_and_is_not_raw():
    model = nn.Linear(3, 2)
    ema = make_averager("ema", model, decay=0.9)
    assert isinstance(ema, EMA)
    torch.manual_seed(0)
    expected = None
    for step in range(1, 6):
        with torch.no_grad():
            model.weight.add_(torch.randn_like(model.weight))
        ema.update(model, step)
        w = model.weight.detach().clone()
        expected = w if expected is None else 0.9 * expected + 0.1 * w
    torch.testing.assert_close(ema.module().weight, expected)
    assert not torch.allclose(ema.module().weight, model.weight)


def test_errors_name_the_allowed_values():
    with pytest.raises(ValueError, match="none, ema, bema"):
        make_averager("swa", nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        make_averager("ema", nn.Linear(2, 2), decay=1.0)
    with pytest.raises(ValueError, match="update_freq"):
        BEMAConfig(update_freq=0)
    assert math.isclose(BEMAConfig().alpha(0), 10 ** -0.2)
