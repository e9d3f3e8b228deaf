"""The numeric twin of the readout margins evaluates the derivation as it stands (no sympy
simplification on the common path) and agrees with the simplified closed forms; a construction
is built without the meta device (whose first use imports torch's compiler, seconds)."""
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from resharpen.theory.set_complement import formulas as f


@pytest.mark.parametrize("readout", f.READOUTS)
@pytest.mark.parametrize("centred", [True, False])
def test_raw_margins_equal_the_simplified_ones(readout, centred):
    args = (f.v, f.s, f.K, f.beta, f.g, f.d)
    tidy = sp.lambdify(args, f.readout_margin_exprs(readout, centred), "numpy")
    for vocab in (3.0, 12.0, 4000.0):
        lengths = np.arange(1.0, vocab)
        for k in (1e-6, 0.5, 1e3):
            for beta in (1e-3, 1.0, 1e4):
                raw = np.broadcast_arrays(*f.readout_margins(readout, vocab, lengths, k * beta,
                                                             beta, 1.3, vocab - 1, centred))
                ref = np.broadcast_arrays(*tidy(vocab, lengths, k, beta, 1.3, vocab - 1))
                for a, b in zip(raw, ref):
                    assert np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))) < 1e-13


def test_numeric_margins_need_no_simplification(monkeypatch):
    f._readout_margin_fn.cache_clear()

    def refuse(*args, **kwargs):
        raise AssertionError("sp.simplify on the numeric path")

    monkeypatch.setattr(f.sp, "simplify", refuse)
    try:
        nq, q = f.readout_margins("attn_out", 16, np.arange(1, 16), 32.0, 1.0, 1.0, 15)
    finally:
        f._readout_margin_fn.cache_clear()
    assert np.all(np.isfinite(nq)) and np.all(np.isfinite(q))


def test_build_runs_no_meta_device_operation():
    code = ("import sys, resharpen as rs; b = rs.build('tight', vocab=16, norm='attn_out'); "
            "print('torch._dynamo' in sys.modules, b.model.W_E.dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "torch.float64"]
