"""The names a Set Complement construction is built from (see
:mod:`resharpen.constructions.set_complement`).

Only names: the command line reads them when it parses its arguments, so this module imports
nothing.
"""
from __future__ import annotations

VARIANTS = ("tight", "one_hot", "balanced", "unbalanced")
READOUT_NORMS = ("none", "attn_out", "post", "pre")
