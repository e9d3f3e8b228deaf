import os

from hypothesis import settings

os.environ.setdefault("MPLBACKEND", "Agg")

# Property tests are reproducible by default: every run of `make test` (and CI) draws the same
# examples, so a clean clone passes or fails deterministically. To explore new examples, run
# `pytest --hypothesis-profile=explore` (fresh random draws each run); a failure it finds is
# printed with an @example(...) line to pin it in the test.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
