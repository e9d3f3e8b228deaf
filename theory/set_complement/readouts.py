"""The readouts of the Set Complement constructions, by name: the theory's own vocabulary.

Only names: the scheme registry (``Scheme.construction``) and the command line read them, so this
module imports nothing. The margin of each readout is derived in
:mod:`resharpen.theory.set_complement.formulas` (``readout_residual``, ``readout_margins``).
"""
from __future__ import annotations

RESIDUAL_RULES = {"none": "x + o", "attn_out": "x + N(o)", "post": "N(x + o)",
                  "pre": "N(x) into attention"}
"""The readouts the constructions are built with, each with its residual rule in the notation of
the figures (x the token's embedding, o the attention output, N the norm)."""

READOUTS = tuple(RESIDUAL_RULES)
"""The residual rules' names: z = e_q + (K/s) 1_t (none), e_q + N((K/s) 1_t) (attn_out),
N(e_q + (K/s) 1_t) (post), N(e_q + (K'/s) 1_t) (pre, N before attention). The trained schemes
that read out through one of them say so in the scheme registry
(``resharpen.experiments.model.schemes``, ``Scheme.construction``)."""
