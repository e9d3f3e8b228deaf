"""fit.none.two_over_s and fit.attn_out.closed_form_band on synthetic reports whose answer is
known: margins built from a stated law, so each test can pass, fail and be inconclusive."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from resharpen.experiments.ledger import stats
from resharpen.experiments.set_complement import fit_sweep_tests as F
from resharpen.experiments.set_complement.fit_report import fit_theory, theory_margins

V, D, L_TRAIN = 32, 64, 8


def report(placement: str, seed: int, margins: np.ndarray) -> dict:
    """A per-length report (the fields the tests read) of margins at s = 1..v-1."""
    s = np.arange(1, V)
    ind = (s >= 2) & (s <= L_TRAIN)
    params = fit_theory(placement, V, D, s[ind], margins[ind])
    theory = theory_margins(placement, V, D, s, params) if params else None
    past = s > L_TRAIN
    deviation = (float(np.max(np.abs(margins[past] / theory[past] - 1))) if params else None)
    return {"placement": placement, "seed": seed, "vocab": V, "d_model": D,
            "train_len": L_TRAIN, "fit_reached": True, "theory_params": params,
            "ood_margin_deviation_max": deviation,
            "per_length": [{"length": int(k), "margin": float(m), "s_margin": float(k * m),
                            "uniformity": 0.1} for k, m in zip(s, margins)]}


def power_law(exponents) -> list[dict]:
    """none runs whose margins are 20 s^-a exactly, one exponent per seed."""
    s = np.arange(1, V, dtype=float)
    return [report("none", k, 20.0 * s ** -a) for k, a in enumerate(exponents)]


def decide(part) -> str:
    return stats.decision(stats.family([("c", label, r) for label, r in part.tests])["c"])[0]


@pytest.mark.parametrize("exponents, status", [
    ([0.98, 0.99, 1.00, 1.01, 1.02, 1.00], "PASS"),    # inside 1 +- 0.1
    ([1.19, 1.20, 1.21, 1.22, 1.20, 1.21], "FAIL"),    # beyond it (as the trained models)
    ([1.00, 1.05, 1.10, 1.15, 1.20, 1.10], "INCONCLUSIVE"),  # across its upper end
])
def test_two_over_s_decides_by_tost_on_the_exponent(monkeypatch, exponents, status):
    monkeypatch.setattr(F, "placement_data",
                        lambda profile: ([("sweep", Path("sweep"), power_law(exponents))], None))
    part = F.none_two_over_s_tests("quick")
    assert decide(part) == status
    mean = float(np.mean(exponents))
    assert f"a = {mean:.4g} [" in part.measured  # the fitted exponent with its interval


def closed_form(beta_g: float, wobble: float, seed: int) -> np.ndarray:
    """attn_out's closed form times (1 + wobble) past L_train (a seed-dependent sign)."""
    s = np.arange(1, V, dtype=float)
    m = theory_margins("attn_out", V, D, s, {"beta_g": beta_g})
    sign = 1 if seed % 2 else -1
    return m * np.where(s > L_TRAIN, 1 + sign * wobble * (1 + 0.1 * seed), 1.0)


def test_attn_out_band_passes_on_its_closed_form_and_fails_on_a_power_law(monkeypatch):
    sweeps = {}
    monkeypatch.setattr(F, "sweep_root", lambda name, profile: Path(name))
    monkeypatch.setattr(F, "reports", lambda root: sweeps[str(root)])
    monkeypatch.setattr(F, "attn_out_sweeps", lambda profile: ("unseen",))
    monkeypatch.setattr(F, "attn_out_seen", lambda profile: ("seen",))
    sweeps["unseen"] = [report("attn_out", k, closed_form(1.4, 0.05, k)) for k in range(6)]
    sweeps["seen"] = [report("attn_out", k, closed_form(1.4, 0.6, k)) for k in range(6)]
    part = F.attn_out_band_tests("quick")
    assert decide(part) == "PASS"  # within 0.25 on the unseen sweep; the seen one only reported
    assert all("in-sample v, not deciding" in label for label, _ in part.reported)
    assert stats.decision(stats.family([("r", lab, r) for lab, r in part.reported])["r"])[0] \
        == "FAIL"  # the seen sweep is 0.6 off: reported, it does not decide
    s = np.arange(1, V, dtype=float)
    sweeps["unseen"] = [report("attn_out", k, 3.0 * s ** -(0.45 + 0.01 * k)) for k in range(6)]
    part = F.attn_out_band_tests("quick")
    assert decide(part) == "FAIL"  # a power law: beyond the band, and the rival fits it exactly
    assert F.power_law_deviation(sweeps["unseen"][0]) == pytest.approx(0.0, abs=1e-9)
