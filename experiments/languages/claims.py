"""Ledger claims ``lang.*`` and ``othello.*``: the task suite.

Every language's automaton against its independent oracle (``lang.<name>.oracle_agreement``),
its word counts against known sequences (``lang.<name>.counts``; both listed in
``LANGUAGE_CLAIMS``), the samplers' uniformity, and Othello's rules (perft, and the bitboard
generator against the square-by-square reference rules).

``CASES`` is the table shared with tests/test_languages.py: for each language, the oracle
enumeration bound (all strings up to ``member`` tokens) and the longest prefix whose legal-next
set the enumeration decides exactly (every valid prefix of ``prefix + 1`` tokens completes
within ``member`` tokens), for the quick and the full profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import comb, factorial
from typing import Callable

import numpy as np

from resharpen.experiments.ledger import Outcome, claim
from resharpen.experiments.common.profiles import pick
from resharpen.experiments.tasks.base import (count_members, invalid_words,
                                              legal_next_disagreements, oracle_legal_sets)
from resharpen.experiments.tasks.registry import LANGUAGES, get_task

SOURCE = "reconstructed (arXiv 2510.08341 v2 formal-language suite)"


def catalan(n: int) -> int:
    return comb(2 * n, n) // (n + 1)


def _even(f: Callable[[int], int]) -> Callable[[int], int]:
    return lambda n: f(n // 2) if n > 0 and n % 2 == 0 else 0


def _tribonacci(n: int) -> int:  # binary strings without 000: a(n) = a(n-1) + a(n-2) + a(n-3)
    a = [1, 2, 4]
    while len(a) <= n:
        a.append(a[-1] + a[-2] + a[-3])
    return a[n] if n > 0 else 0


def _multiset(v: int, k: int) -> Callable[[int], int]:
    """n! [x^n] (sum_{j<=k} x^j / j!)^v, exactly with fractions."""
    from fractions import Fraction

    def count(n: int) -> int:
        poly = [Fraction(1)]
        factor = [Fraction(1, factorial(j)) for j in range(k + 1)]
        for _ in range(v):
            poly = [sum(poly[i] * factor[d - i] for i in range(len(poly)) if 0 <= d - i <= k)
                    for d in range(len(poly) + k)]
        return int(poly[n] * factorial(n)) if 0 < n < len(poly) else 0
    return count


@dataclass(frozen=True)
class Case:
    name: str
    member: tuple[int, int]  # oracle enumeration bound, (quick, full)
    prefix: tuple[int, int]  # longest exactly decided prefix, (quick, full)
    known: Callable[[int], int] | None = None
    known_source: str = ""
    params: dict = field(default_factory=dict)
    count_top: tuple[int, int] = (14, 24)  # longest counted word, (quick, full)

    def task(self):
        return get_task(self.name, **self.params)


CASES = {c.name: c for c in (
    Case("dyck1", (14, 18), (6, 8), _even(catalan), "Catalan numbers C_n (OEIS A000108)"),
    Case("dyck2", (8, 10), (3, 4), _even(lambda m: 2 ** m * catalan(m)), "2^n C_n",
         count_top=(12, 16)),
    Case("dyck3", (6, 8), (2, 3), _even(lambda m: 3 ** m * catalan(m)), "3^n C_n",
         count_top=(8, 12)),
    Case("shuffle_dyck2", (8, 10), (3, 4), _even(lambda m: catalan(m) * catalan(m + 1)),
         "C_n C_(n+1) (OEIS A005568)"),
    Case("anbn", (14, 18), (6, 8), lambda n: int(n > 0 and n % 2 == 0), "one word per even length"),
    Case("anbncn", (9, 12), (2, 3), lambda n: int(n > 0 and n % 3 == 0),
         "one word per multiple of 3"),
    Case("tomita1", (12, 16), (9, 13), lambda n: int(n > 0), "one word per length"),
    Case("tomita2", (12, 16), (9, 13), lambda n: int(n > 0 and n % 2 == 0),
         "one word per even length"),
    Case("tomita3", (13, 16), (10, 13)),
    Case("tomita4", (12, 16), (9, 13), _tribonacci, "tribonacci (OEIS A000073, shifted by 3)"),
    Case("tomita5", (12, 16), (9, 13), _even(lambda m: 2 ** (2 * m - 1)), "2^(n-1), n even"),
    Case("tomita6", (12, 16), (9, 13),
         lambda n: sum(comb(n, j) for j in range(n + 1) if (n - 2 * j) % 3 == 0) if n else 0,
         "sum of binom(n, j) over (n - 2j) = 0 mod 3"),
    Case("tomita7", (12, 16), (9, 13),
         lambda n: sum(comb(n - 1, j) for j in range(4)) + sum(comb(n - 1, j) for j in range(3))
         if n else 0, "sum_{j<=3} binom(n-1,j) + sum_{j<=2} binom(n-1,j)"),
    Case("set_complement", (5, 6), (4, 5), lambda n: factorial(5) // factorial(5 - n) if 0 < n <= 5
         else 0, "v!/(v-n)! with v = 5", {"vocab": 5}, count_top=(4, 4)),
    Case("multiset_complement", (6, 8), (5, 7), _multiset(3, 2),
         "n! [x^n] (1 + x + x^2/2)^3", {"vocab": 3, "k": 2}, count_top=(5, 5)),
)}
assert set(CASES) == set(LANGUAGES), "every registered language needs a row in CASES"


@lru_cache(maxsize=None)
def oracle_table(name: str, member: int):
    return oracle_legal_sets(CASES[name].task(), member)


def agreement(name: str, profile: str) -> Outcome:
    case = CASES[name]
    task = case.task()
    member, prefix = pick(profile, *case.member), pick(profile, *case.prefix)
    table, oracle_counts = oracle_table(name, member)
    compared, bad, examples = legal_next_disagreements(task, member, prefix, oracle=table)
    automaton_counts = count_members(task, member)
    length = min(48, task.max_length or 48)
    invalid = invalid_words(task, task.sample(pick(profile, quick=50, full=200), length, seed=0))
    passed = bad == 0 and automaton_counts == oracle_counts and invalid == 0
    detail = (f"{compared} prefixes of length <= {prefix} compared against the oracle's "
              f"enumeration of all strings of length <= {member}; word counts per length "
              f"{'agree' if automaton_counts == oracle_counts else 'DIFFER'} "
              f"(automaton {automaton_counts}, oracle {oracle_counts}); {invalid} sampled words "
              f"rejected by the oracle")
    if examples:
        detail += f"; first disagreements (prefix, automaton, oracle): {examples}"
    return Outcome(measured=f"{bad} disagreements, {invalid} invalid words", expected="0, 0",
                   passed=passed, detail=detail)


def known_counts(name: str, profile: str) -> Outcome:
    case = CASES[name]
    top = pick(profile, *case.count_top)
    measured = count_members(case.task(), top)[1:]
    expected = [case.known(n) for n in range(1, top + 1)]
    return Outcome(measured=measured, expected=expected, passed=measured == expected,
                   detail=f"words of length 1..{top} accepted by the automaton vs "
                          f"{case.known_source}")


def oracle_agreement_claim(claim_id: str, name: str) -> None:
    """Register the claim that language ``name``'s automaton agrees with its oracle."""
    @claim(claim_id)
    def check_oracle_agreement(profile: str) -> Outcome:
        return agreement(name, profile)


def known_counts_claim(claim_id: str, name: str) -> None:
    """Register the claim that language ``name`` has its known number of words per length."""
    @claim(claim_id)
    def check_known_counts(profile: str) -> Outcome:
        return known_counts(name, profile)


# Every language's claims: (language, oracle-agreement claim, known-counts claim or None when
# the word counts follow no known sequence).
LANGUAGE_CLAIMS = (
    ("dyck1", "lang.dyck1.oracle_agreement", "lang.dyck1.counts"),
    ("dyck2", "lang.dyck2.oracle_agreement", "lang.dyck2.counts"),
    ("dyck3", "lang.dyck3.oracle_agreement", "lang.dyck3.counts"),
    ("shuffle_dyck2", "lang.shuffle_dyck2.oracle_agreement", "lang.shuffle_dyck2.counts"),
    ("anbn", "lang.anbn.oracle_agreement", "lang.anbn.counts"),
    ("anbncn", "lang.anbncn.oracle_agreement", "lang.anbncn.counts"),
    ("tomita1", "lang.tomita1.oracle_agreement", "lang.tomita1.counts"),
    ("tomita2", "lang.tomita2.oracle_agreement", "lang.tomita2.counts"),
    ("tomita3", "lang.tomita3.oracle_agreement", None),
    ("tomita4", "lang.tomita4.oracle_agreement", "lang.tomita4.counts"),
    ("tomita5", "lang.tomita5.oracle_agreement", "lang.tomita5.counts"),
    ("tomita6", "lang.tomita6.oracle_agreement", "lang.tomita6.counts"),
    ("tomita7", "lang.tomita7.oracle_agreement", "lang.tomita7.counts"),
    ("set_complement", "lang.set_complement.oracle_agreement", "lang.set_complement.counts"),
    ("multiset_complement", "lang.multiset_complement.oracle_agreement",
     "lang.multiset_complement.counts"),
)
assert [row[0] for row in LANGUAGE_CLAIMS] == list(CASES), "one row per row of CASES, in order"
assert all((counts is None) == (CASES[name].known is None) for name, _, counts in LANGUAGE_CLAIMS)
for _name, _agreement_id, _counts_id in LANGUAGE_CLAIMS:
    oracle_agreement_claim(_agreement_id, _name)
    if _counts_id is not None:
        known_counts_claim(_counts_id, _name)


UNIFORM_MARGIN = 0.2
"""An equivalence margin fixed beforehand: each legal token's probability within 20 % of 1/k
(k the size of the legal set) counts as uniform."""
MIN_DRAWS_PER_TOKEN = 1000
"""A legal-set size k is tested when it has at least this many draws per token (1000 k in all):
enough for the TOST to show the margin at these sample sizes."""


def rank_draws(task, count: int, length: int, seed: int) -> tuple[int, dict[int, np.ndarray]]:
    """(illegal draws, {legal-set size k: the rank of every legal draw among its k legal
    tokens}) over ``count`` sampled sequences: the sampler's choices, grouped by the size of the
    legal set it chose from."""
    seqs = task.sample(count, length, seed)
    after = task.legal_next(seqs)
    before = np.concatenate([np.broadcast_to(task.initial_legal(), (count, 1, task.size)),
                             after[:, :-1]], axis=1)
    chosen = np.take_along_axis(before, seqs[..., None], axis=2)[..., 0]
    sizes = before.sum(axis=2)
    rank = np.take_along_axis(np.cumsum(before, axis=2), seqs[..., None], axis=2)[..., 0] - 1
    return (int((~chosen).sum()),
            {int(k): rank[(sizes == k) & chosen] for k in np.unique(sizes) if k >= 2})


@claim("lang.sampler_uniform")
def check_sampler_uniform(profile: str) -> Outcome:
    """Uniformity is a claim of no effect, so it is shown by an equivalence test (a chi-square
    that does not reject shows nothing): per legal-set size, the indicator of each rank, TOST
    against 1/k +- UNIFORM_MARGIN/k."""
    from resharpen.experiments.ledger import stats

    count = pick(profile, quick=1000, full=4000)
    illegal, tests, skipped, worst = 0, [], 0, 0.0
    for name in LANGUAGES:
        task = CASES[name].task()
        bad, groups = rank_draws(task, count, min(24, task.max_length or 24), seed=1)
        illegal += bad
        for k, ranks in groups.items():
            if len(ranks) < MIN_DRAWS_PER_TOKEN * k:
                skipped += 1
                continue
            for r in range(k):
                hits = (ranks == r).astype(float)
                worst = max(worst, abs(hits.mean() * k - 1.0))
                tests.append((f"{name} k={k} token {r}",
                              stats.equivalence(hits, np.full(hits.size, 1.0 / k),
                                                UNIFORM_MARGIN / k)))
    family = stats.family([("uniform", label, result) for label, result in tests]).get(
        "uniform", [])
    status, why = stats.decision(family)
    weakest = max(family, key=lambda t: t.adjusted_p, default=None)
    groups = len({label.rsplit(" token", 1)[0] for label, _ in tests})
    return Outcome(measured=f"{illegal} illegal; {len(tests)} token frequencies in {groups} "
                            f"(language, set size) groups, max |p k - 1| = {worst:.3g}",
                   expected="0 illegal; every |p k - 1| < 0.2 (TOST)",
                   passed=illegal == 0 and status == "PASS",
                   detail=f"{len(LANGUAGES)} languages, {count} sequences each; {skipped} "
                          f"(language, set size) groups with < {MIN_DRAWS_PER_TOKEN} k draws "
                          "untested; weakest test: "
                          + (weakest.describe() if weakest else "none"),
                   inconclusive="" if illegal or status != "INCONCLUSIVE" else
                   f"{why[:400]}; more draws decide (`resharpen verify --only "
                   "lang.sampler_uniform --profile full`: 4000 sequences)")


# ---------------------------------------------------------------------------------- Othello
PERFT = (4, 12, 56, 244, 1396, 8200, 55092, 390216)  # published perft counts, depths 1..8


@claim("othello.perft")
def check_othello_perft(profile: str) -> Outcome:
    from resharpen.experiments.tasks.othello import perft

    depths = range(1, pick(profile, quick=7, full=9))
    measured = [perft(d) for d in depths]
    expected = list(PERFT[:len(measured)])
    return Outcome(measured=measured, expected=expected, passed=measured == expected,
                   detail="breadth-first on numpy bitboards; a pass is a ply, a finished game a "
                          "dead end")


@claim("othello.reference_perft")
def check_othello_reference_perft(profile: str) -> Outcome:
    from resharpen.experiments.tasks.othello import reference_perft

    depths = range(1, pick(profile, quick=6, full=7))
    measured = [reference_perft(d) for d in depths]
    expected = list(PERFT[:len(measured)])
    return Outcome(measured=measured, expected=expected, passed=measured == expected,
                   detail="plain recursion over a 64-square list board, no bit tricks")


@claim("othello.generator_vs_reference")
def check_othello_generator_vs_reference(profile: str) -> Outcome:
    import numpy as np

    from resharpen.experiments.tasks.othello import Othello, reference_replay

    task = Othello()
    games = task.sample(pick(profile, quick=24, full=400), 60, seed=2)
    masks = task.legal_next(games)
    invalid = mismatched = 0
    for game, mask in zip(games.tolist(), masks):
        sets = reference_replay(game)
        if sets is None:
            invalid += 1
            continue
        mismatched += sum(frozenset(np.flatnonzero(m).tolist()) != s for m, s in zip(mask, sets))
    ended = int((games[:, -1] == 0).sum())
    return Outcome(measured=f"{invalid} invalid games, {mismatched} set mismatches",
                   expected="0, 0", passed=invalid == 0 and mismatched == 0,
                   detail=f"{len(games)} games of up to 60 moves ({ended} ended before move 60)")


# the optimal game record of Takizawa, "Othello is solved" (arXiv 2310.19387, Fig. 1)
SOLVED_GAME = ("F5D6C3D3 C4F4F6F3 E6E7D7C5 B6D8C6C7 D2B5A5A6 A7G5E3B4 C8G6G4C2 E8D1F7E2 "
               "G3H4F1E1 F2G1B1F8 G8B3H3B2 H5B7A3A4 A1A2C1H2 H1G2B8A8 G7H8H7H6")


def solved_game_moves() -> str:
    """The record as space-separated lowercase squares, as ``Othello.encode`` reads them."""
    letters = SOLVED_GAME.replace(" ", "").lower()
    return " ".join(letters[i:i + 2] for i in range(0, len(letters), 2))


@claim("othello.solved_game")
def check_othello_solved_game(profile: str) -> Outcome:
    import numpy as np

    from resharpen.experiments.tasks.othello import Othello, reference_replay

    task = Othello()
    game = task.encode(solved_game_moves())
    states = task.start(1, len(game))
    for token in game:
        states = task.step(states, np.array([token]))
    discs = sorted(bin(int(x)).count("1") for x in states[0, :2])
    masks = task.legal_next(game)
    reference = reference_replay(game)
    # legal on both, and the two agree on the legal-next set after every move
    legal = reference is not None and bool(masks.any(axis=2).all()) \
        and len(reference) == masks.shape[1] and all(
        frozenset(np.flatnonzero(m).tolist()) == s for m, s in zip(masks[0], reference))
    over = int(states[0, 2]) == 0
    return Outcome(measured=f"{len(game)} moves, legal={legal}, over={over}, discs {discs}",
                   expected="60 moves, legal=True, over=True, discs [32, 32]",
                   passed=len(game) == 60 and legal and over and discs == [32, 32],
                   detail="replayed on bitboards (disc count) and on the reference board "
                          "(legality; the two legal-next sets agree after every move)")
