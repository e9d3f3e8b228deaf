"""The multiple-testing families of the ``fit.*`` claims (:mod:`.claims_fit`): the claims that
read the same runs form one family (:data:`FAMILIES`), whose tests are Holm-adjusted together
(:func:`in_family`); a member without data counts its planned tests (:data:`PLANNED_TESTS`) as
p = 1.
"""
from __future__ import annotations

from typing import Callable

from resharpen.experiments.ledger import Outcome, stats
from resharpen.experiments.ledger.stats import ALPHA
from resharpen.experiments.set_complement.fit_data import Part, placement_sweeps
from resharpen.experiments.set_complement.fit_noise_tests import (
    noise_bema_gain_tests, noise_bema_temperature_tests, noise_ema_gain_tests,
    noise_ema_ood_tests, noise_ema_window_tests)
from resharpen.experiments.set_complement.fit_sweep_tests import (
    attn_out_band_tests, attn_out_sweeps, dropout_ood_tests, lemma_residual_tests,
    none_two_over_s_tests, normalized_beat_none_tests, ood_at_rungs_tests, post_closed_form_tests,
    post_k_tests)

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


FAMILIES: dict[str, dict[str, Callable[[str], "Part | Outcome"]]] = {
    "fit_placements (v = 32, v = 64)": {
        "fit.none.two_over_s": none_two_over_s_tests,
        "fit.attn_out.closed_form_band": attn_out_band_tests,
        "fit.normalized_beat_none_ood": normalized_beat_none_tests,
        "fit.none.lemma_residual": lemma_residual_tests},
    "fit_noise (k = 1, 4, 16, soft)": {
        "fit.noise.ema_gain": noise_ema_gain_tests,
        "fit.noise.ema_ood_at_fit": noise_ema_ood_tests,
        "fit.noise.bema_gain": noise_bema_gain_tests,
        "fit.noise.bema_vs_temperature": noise_bema_temperature_tests},
    "fit_noise_window (EMA windows 500-2000 at the floor, AdamW and SGD)": {
        "fit.noise.ema_long_window": noise_ema_window_tests},
    "fit_dropout": {"fit.dropout.ood": dropout_ood_tests},
    "fit_post_closed_form (the post runs of the placement sweeps)": {
        "fit.post.closed_form_weights": post_closed_form_tests},
    "fit_post_k_sweep": {"fit.post.ood_falls_with_k": post_k_tests},
    "fit_ladder (two settings)": {"fit.placements.ood_at_every_rung": ood_at_rungs_tests},
}
"""family name -> {claim id -> its test maker}: the claims that read the same runs."""


PLANNED_TESTS = {"fit.none.two_over_s": 1, "fit.attn_out.closed_form_band": 2,
                 "fit.post.closed_form_weights": 1, "fit.post.ood_falls_with_k": 1,
                 "fit.normalized_beat_none_ood": 3,
                 "fit.none.lemma_residual": 1, "fit.noise.ema_gain": 6,
                 "fit.noise.ema_ood_at_fit": 6,
                 "fit.noise.bema_gain": 2, "fit.noise.bema_vs_temperature": 1,
                 "fit.noise.ema_long_window": 6, "fit.dropout.ood": 1,
                 "fit.placements.ood_at_every_rung": 24}
"""The tests each claim plans (per placement sweep for the placement claims): what a member
without data still counts in its family's Holm correction, as p = 1 each."""


def planned_tests(claim_id: str, profile: str) -> int:
    """How many tests ``claim_id`` plans in ``profile`` (1 for a claim not listed)."""
    per = PLANNED_TESTS.get(claim_id, 1)
    if claim_id == "fit.attn_out.closed_form_band":
        per *= len(attn_out_sweeps(profile))
    elif claim_id in ("fit.none.two_over_s", "fit.normalized_beat_none_ood",
                      "fit.none.lemma_residual"):
        per *= len(placement_sweeps(profile))
    return per


def in_family(maker: Callable[[str], "Part | Outcome"], profile: str) -> Outcome:
    """The outcome of the claim whose tests ``maker`` makes: the tests of every claim of its
    family (the claims that decide on the same runs) Holm-adjusted together, each direction
    (:func:`resharpen.experiments.ledger.stats.decision`): PASS when each of this claim's tests
    shows its effect at adjusted p < ALPHA, FAIL when one shows the opposite at that level,
    INCONCLUSIVE otherwise. Every planned test counts: a member that has no data (an Outcome)
    counts its planned tests (:func:`planned_tests`) as p = 1. (A check names its own maker, so
    that ``verify --where`` and the mutation test follow it to the derivations it uses.)"""
    name, members = next((n, m) for n, m in FAMILIES.items() if maker in m.values())
    claim_id = next(cid for cid, make in members.items() if make is maker)
    parts = {cid: make(profile) for cid, make in members.items()}
    mine = parts[claim_id]
    if isinstance(mine, Outcome):
        return mine
    tests = [(cid, label, result) for cid, part in parts.items() if isinstance(part, Part)
             for label, result in part.tests]
    absent = {cid: planned_tests(cid, profile) for cid, part in parts.items()
              if not isinstance(part, Part)}
    uncomputed = stats.paired([], [], "less")  # p = NaN: counted by Holm as p = 1
    family = stats.family(tests + [(cid, "not computed (no data)", uncomputed)
                                   for cid, count in absent.items() for _ in range(count)])
    own = family.get(claim_id, [])
    passed, unsure = stats.verdict(own, ALPHA)
    reported = stats.family([("reported", label, r) for label, r in mine.reported]).get(
        "reported", [])
    claims = [cid for cid, part in parts.items() if isinstance(part, Part)]
    counted = len(tests) + sum(absent.values())
    missing_note = (f"; {sum(absent.values())} planned tests of {', '.join(absent)} not computed "
                    "(no data), counted as p = 1" if absent else "")
    return Outcome(mine.measured, mine.expected, passed=passed,
                   detail=" | ".join([t.describe() for t in own]
                                     + [f"reported, not deciding: {t.describe()}"
                                        for t in reported]
                                     + mine.detail
                                     + [f"family {name}: {counted} tests of {len(claims)} "
                                        f"claims ({', '.join(claims)}), Holm-adjusted together "
                                        f"in each direction{missing_note}"]),
                   inconclusive=f"{unsure}; {mine.decide_with}" if unsure else "")
