"""What the random-stack claims ``dyn.stack.*`` (:mod:`.claims`) measure on the paper's
random-weight stacks (:mod:`.random_stacks`: d = 512, a fresh N(0, 1/d) (Q, K, V) per layer,
beta = sqrt(d), one discrete update per layer).

* :func:`similarity_steps`: the first layer's rise of the mean pairwise cosine, cos_1 - cos_0,
  per scheme (Theorem 4.2: of order one for Peri-LN and nGPT, small for Post-LN and Pre-LN),
  and the Post-LN and Pre-LN cosines at layer 32;
* :func:`preln_norm_exponents`: the growth exponent of Pre-LN's mean token norm (the slope of
  log r_j on log j over the last three quarters of the layers), with fresh weights (about 1/2:
  nearly independent vectors add) and with tied weights Q = K = V = I (about 1: r ~ t).
"""
from __future__ import annotations

from resharpen.experiments.dynamics.random_stacks import norm_growth_exponent, run_stacks

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def similarity_steps(n: int, layers: int) -> tuple[dict, float, float]:
    """({scheme: cos_1 - cos_0}, Post-LN cos_32, Pre-LN cos_32) of Post-LN, Pre-LN, Peri-LN and
    nGPT stacks of ``layers`` layers on ``n`` tokens (seed 0)."""
    runs = run_stacks(("postln", "preln", "periln", "ngpt"), n=n, d=512, layers=layers, seed=0)
    step1 = {s: r.cosine[1] - r.cosine[0] for s, r in runs.items()}
    return step1, runs["postln"].cosine[32], runs["preln"].cosine[32]


def preln_norm_exponents(n: int, layers: int) -> tuple[float, float]:
    """(exponent with fresh weights, exponent with tied weights) of Pre-LN's mean token norm
    over ``layers`` layers on ``n`` tokens (seed 0), fitted from layer ``layers // 4`` on."""
    random_ = run_stacks("preln", n=n, d=512, layers=layers, seed=0)["preln"]
    tied = run_stacks("preln", n=n, d=512, layers=layers, seed=0, tied=True)["preln"]
    return norm_growth_exponent(random_.norm, layers // 4), norm_growth_exponent(tied.norm, layers // 4)
