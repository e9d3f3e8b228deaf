"""How far a training run of ``collapse.training_collapse`` (:mod:`.claims`) ends outside the
collapse detector's region (:mod:`.detect`): the control arms must end clearly outside it.
"""
from __future__ import annotations

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def control_separation(summary: dict, t_threshold: float = 0.95,
                       loss_margin: float = 0.05) -> float:
    """How far a run ends outside the collapse detector's region: the larger of
    t_threshold - final t_sim and (L_freq - loss_margin) - final loss (negative: inside it)."""
    return max(t_threshold - summary["final_t_sim"],
               summary["l_freq_stream"] - loss_margin - summary["final_loss"])
