import os

import pytest
from hypothesis import settings
from registry_guard import restored_registries

os.environ.setdefault("MPLBACKEND", "Agg")

# Property tests are reproducible by default: every run of `make test` (and CI) draws the same
# examples, so a clean clone passes or fails deterministically. To explore new examples, run
# `pytest --hypothesis-profile=explore` (fresh random draws each run); a failure it finds is
# printed with an @example(...) line to pin it in the test.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture
def registries():
    """:func:`restored_registries` around one test."""
    with restored_registries():
        yield


DEEPNET_PLUGIN = '''"""DeepNet's Post-LN (Wang et al. 2022): N(alpha x + f(x)), alpha a constant."""
from resharpen.experiments.model.schemes import Layer, Scheme, register

ALPHA = 2.0
RULE = Layer(lambda x, f, p: p.n_out(ALPHA * x + f(x)), output_norm="residual")
register(Scheme("{name}", lambda l, L: RULE, final_norm=False, label="DeepNet",
                color="#000000", marker="o"))
'''


@pytest.fixture(scope="session")
def deepnet_plugin():
    """``write(folder, name)``: a plug-in file ``folder/my_norms.py`` that registers the DeepNet
    scheme N(2 x + f(x)) as ``name``; returns its path."""
    def write(folder, name: str) -> str:
        path = folder / "my_norms.py"
        path.write_text(DEEPNET_PLUGIN.replace("{name}", name))
        return str(path)
    return write
