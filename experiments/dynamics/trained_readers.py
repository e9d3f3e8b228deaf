"""The trained-dynamics claims ``dyn.trained.*`` (:mod:`.claims`) read the trained set here and
hand it to their tests (:mod:`.trained_checks`).

"init" reads every run of the profile's set at initialization (nothing is trained for it),
except where a statement's premise never holds at the package's usual initialization: the
first-layer order, the terminal order, the Pre-LN norm growth, the similarity recursion and the
backward gains at high similarity read their premise sets instead (:data:`PREMISE_SETS`, :mod:`.premise_sets`: the same models, initialized
so that the premise holds); "trained" reads the set trained to the fit
(:func:`resharpen.experiments.dynamics.trained.trained_set`: trained once per profile and
cached, so the claims share it), except the first-layer order and the backward gains, which
read their premise sets trained (:data:`TRAINED_PREMISE_SETS`). The tests decide on the runs inside each statement's premise,
with the factors and tolerances fixed beforehand in :mod:`.trained_checks`. The set and its tests are imported when a claim runs: they need torch,
which the other ``dyn.*`` claims do not.
"""
from __future__ import annotations

from resharpen.experiments.ledger import Outcome

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


PREMISE_SETS = {"first_layer_order": "unit_tokens", "preln_norm_growth": "small_embedding",
                "backward_gain_high_similarity": "paper_init",
                "recursion_at_init": "paper_init_many_seeds", "terminal_order": "terminal_depth"}
"""check -> the premise set its "init" claim reads (:data:`.premise_sets.SETS`)."""

TRAINED_PREMISE_SETS = {"first_layer_order": "unit_tokens",
                        "backward_gain_high_similarity": "paper_init"}
"""check -> the premise set its "trained" claim reads, trained (:func:`.premise_sets.
premise_set` with ``trained``): the package's usual trained models never meet these two
premises (their tokens are about a tenth of the sphere's radius; no trained layer's input
reaches a mean pairwise cosine of 0.9), so the models are trained from the initialization that
meets them."""


def trained_runs(profile: str, when: str) -> list:
    """The runs of ``profile``'s trained set, trained to the fit when ``when`` is "trained"."""
    from resharpen.experiments.dynamics.trained import trained_set

    return trained_set(profile, train=when == "trained")


def runs_for(check: str, profile: str, when: str) -> list:
    """The runs ``check`` reads ``when``: its premise set at init (:data:`PREMISE_SETS`) or
    trained (:data:`TRAINED_PREMISE_SETS`), else :func:`trained_runs`."""
    sets = PREMISE_SETS if when == "init" else TRAINED_PREMISE_SETS
    if check in sets:
        from resharpen.experiments.dynamics.premise_sets import premise_set

        return premise_set(profile, sets[check], trained=when == "trained")
    return trained_runs(profile, when)


def first_layer_order(profile: str, when: str) -> Outcome:
    """Theorem 4.2's first-layer order on the runs ``when`` (at init: tokens of radius R)."""
    from resharpen.experiments.dynamics.trained_checks import first_layer_order

    return first_layer_order(runs_for("first_layer_order", profile, when), when)


def terminal_order(profile: str, when: str) -> Outcome:
    """Theorems 4.1 and 4.3's terminal order on the runs ``when`` (at init: stacks near
    consensus for many layers)."""
    from resharpen.experiments.dynamics.trained_checks import terminal_order

    return terminal_order(runs_for("terminal_order", profile, when), when)


def preln_norm_growth(profile: str, when: str) -> Outcome:
    """Theorem 4.3(i)'s Pre-LN norm growth r ~ t on the runs ``when`` (at init: a small
    embedding)."""
    from resharpen.experiments.dynamics.trained_checks import preln_norm_growth

    return preln_norm_growth(runs_for("preln_norm_growth", profile, when), when)


def recursion_at_init(profile: str) -> Outcome:
    """arXiv 2608.09417's similarity recursion at initialization, on its premise set (the
    paper's own initialization, 48 layers, 24 seeds per task)."""
    from resharpen.experiments.dynamics.trained_checks import recursion_at_init

    return recursion_at_init(runs_for("recursion_at_init", profile, "init"))


def backward_gain_high_similarity(profile: str, when: str) -> Outcome:
    """arXiv 2608.09417's Theorem 3.6 (backward gains below 1 at high similarity) on the runs
    ``when`` (at init: the paper's own initialization, 48 layers)."""
    from resharpen.experiments.dynamics.trained_checks import backward_gain_high_similarity

    return backward_gain_high_similarity(runs_for("backward_gain_high_similarity", profile,
                                                  when), when)
