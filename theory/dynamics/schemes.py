"""The normalization schemes of arXiv 2510.22026 (Table 2), by name.

Only names: the command line reads them when it parses its arguments, so this module imports
nothing. The speed factor s_j and radial velocity r_j' of each scheme are stated and derived in
:mod:`resharpen.theory.dynamics.speed`.
"""
from __future__ import annotations

SCHEMES = ("postln", "preln", "mixln", "periln", "ngpt", "sqrt")
SCHEME_LABELS = {"postln": "Post-LN", "preln": "Pre-LN", "mixln": "Mix-LN", "periln": "Peri-LN",
                 "ngpt": "nGPT", "sqrt": "sqrt-scaling (CoD)"}
# Each scheme's name in the trained model is in the scheme registry
# (resharpen.experiments.model.schemes, Scheme.dynamics_name): sqrt is the paper's model of
# LayerNorm Scaling (CoD), whose trained form scales layer l's input norms by 1/sqrt(l).
RADIAL_SCHEMES = ("preln", "mixln", "periln")  # the schemes whose radii r_j move

# The paper's orderings of the schemes, which the trained-dynamics claims hold trained models to
# (resharpen.experiments.dynamics.trained_checks):
FIRST_LAYER_FAST = ("periln", "ngpt")
"""Thm 4.2: these move tokens in the first layer by an amount of order one ..."""
FIRST_LAYER_SLOW = ("postln", "preln")
"""... these by O(sqrt(log n / n) + log n / d)."""
TERMINAL_FASTEST = "postln"
"""Thm 4.1, 4.3: near consensus 1 - gamma decays exponentially, at a constant rate, under this
scheme ..."""
TERMINAL_SLOWER = ("preln", "mixln", "periln")
"""... and polynomially, at a rate that slows like 1/t, under each of these, so that in the
long run this scheme is the fastest. nGPT is not among them: with a constant alpha its decay is
exponential too (rate 2 alpha, the erratum ``dyn.erratum.ngpt_constant_alpha``), and whether
2 alpha is below Post-LN's 2 depends on how a layer maps to the theory's time."""
ALPHA_SCHEDULES = ("const", "inverse")  # alpha_t = alpha0, or alpha0 / (t + 1)
