"""The names a Set Complement construction is built from (see
:mod:`resharpen.constructions.set_complement`).

Only names: the command line reads them when it parses its arguments, so this module imports
only the theory's names of the readouts (:mod:`resharpen.theory.set_complement.readouts`).
"""
from __future__ import annotations

from resharpen.theory.set_complement.readouts import READOUTS

VARIANTS = ("tight", "one_hot", "balanced", "unbalanced")
READOUT_NORMS = READOUTS
"""The readouts a construction is built with (the theory's :data:`READOUTS`)."""
NORM_KINDS = ("rms", "layer")
SYMMETRIC_VARIANTS = ("tight", "one_hot", "unbalanced")
"""The variants whose every input of a length gives the same metrics (permutation-symmetric:
:func:`resharpen.constructions.set_complement.Construction.symmetric`)."""
DEFAULT_LAM_PER_TOKEN = 2.0
"""lambda defaults to 2 v (``build(lam=None)``, ``construct`` without ``--lam``): the no-norm
non-query margin lambda / s is then >= 2 v / (v - 1) > 2 at every length s <= v - 1."""
