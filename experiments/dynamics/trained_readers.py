"""The trained-dynamics claims ``dyn.trained.*`` (:mod:`.claims`) read the trained set here and
hand it to their tests (:mod:`.trained_checks`).

"init" reads every run of the profile's set at initialization (nothing is trained for it);
"trained" reads the set trained to the fit (:func:`resharpen.experiments.dynamics.trained.
trained_set`: trained once per profile and cached, so the claims share it). The tests decide on
the runs inside each statement's premise, with the factors and tolerances fixed beforehand in
:mod:`.trained_checks`. The set and its tests are imported when a claim runs: they need torch,
which the other ``dyn.*`` claims do not.
"""
from __future__ import annotations

from resharpen.experiments.ledger import Outcome

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def trained_runs(profile: str, when: str) -> list:
    """The runs of ``profile``'s trained set, trained to the fit when ``when`` is "trained"."""
    from resharpen.experiments.dynamics.trained import trained_set

    return trained_set(profile, train=when == "trained")


def first_layer_order(profile: str, when: str) -> Outcome:
    """Theorem 4.2's first-layer order on the runs ``when``."""
    from resharpen.experiments.dynamics.trained_checks import first_layer_order

    return first_layer_order(trained_runs(profile, when), when)


def terminal_order(profile: str, when: str) -> Outcome:
    """Theorems 4.1 and 4.3's terminal order on the runs ``when``."""
    from resharpen.experiments.dynamics.trained_checks import terminal_order

    return terminal_order(trained_runs(profile, when), when)


def preln_norm_growth(profile: str, when: str) -> Outcome:
    """Theorem 4.3(i)'s Pre-LN norm growth r ~ t on the runs ``when``."""
    from resharpen.experiments.dynamics.trained_checks import preln_norm_growth

    return preln_norm_growth(trained_runs(profile, when), when)


def recursion_at_init(profile: str) -> Outcome:
    """arXiv 2608.09417's similarity recursion on the runs at initialization."""
    from resharpen.experiments.dynamics.trained_checks import recursion_at_init

    return recursion_at_init(trained_runs(profile, "init"))


def backward_gain_high_similarity(profile: str, when: str) -> Outcome:
    """arXiv 2608.09417's Theorem 3.6 (backward gains below 1 at high similarity) on the runs
    ``when``."""
    from resharpen.experiments.dynamics.trained_checks import backward_gain_high_similarity

    return backward_gain_high_similarity(trained_runs(profile, when), when)
