"""The seven Tomita grammars (Tomita 1982), regular languages over {0, 1}; the empty string is
excluded, as in every language of this suite.

    1  1*                      only 1s
    2  (10)*                   repetitions of 10
    3  no maximal run of 1s of odd length is immediately followed by a maximal run of 0s of
       odd length (a run at the end of the string counts as maximal)
    4  no three consecutive 0s
    5  an even number of 0s and an even number of 1s
    6  (number of 0s - number of 1s) divisible by 3
    7  0*1*0*1*

Each grammar is a minimal DFA (``TRANSITIONS``, states 0..s-1 with 0 the start and -1 the
dead state) with its accepting states. Legal-next: a symbol is legal when it leads to a live
state (one from which an accepting state is reachable); EOS when the current state accepts and
the string is nonempty. The membership oracles read the definitions above directly (regular
expressions, counts, runs), not the DFAs. Grammars 3, 5 and 7 have several legal next symbols
at almost every prefix; 1 and 2 are mostly deterministic and kept for completeness.
"""
from __future__ import annotations

import re
from itertools import groupby
from typing import Sequence

import numpy as np

from resharpen.experiments.tasks.base import Task, check_int

# state -> (next on "0", next on "1"); -1 is the dead state
TRANSITIONS = {
    1: ({0: (-1, 0)}, {0}),
    2: ({0: (-1, 1), 1: (0, -1)}, {0}),
    # 0: no pending odd run of 1s, 1: odd run of 1s, 2: odd 1s then odd 0s, 3: odd 1s then even 0s
    3: ({0: (0, 1), 1: (2, 0), 2: (3, -1), 3: (2, 1)}, {0, 1, 3}),
    # state = trailing 0s (0, 1, 2)
    4: ({0: (1, 0), 1: (2, 0), 2: (-1, 0)}, {0, 1, 2}),
    # state = 2 * (zeros mod 2) + (ones mod 2)
    5: ({0: (2, 1), 1: (3, 0), 2: (0, 3), 3: (1, 2)}, {0}),
    # state = (zeros - ones) mod 3
    6: ({0: (1, 2), 1: (2, 0), 2: (0, 1)}, {0}),
    # block of 0*1*0*1* being read
    7: ({0: (0, 1), 1: (2, 1), 2: (2, 3), 3: (-1, 3)}, {0, 1, 2, 3}),
}


def _runs_ok(text: str) -> bool:
    runs = [(ch, len(list(group))) for ch, group in groupby(text)]
    return not any(a[0] == "1" and a[1] % 2 == 1 and b[0] == "0" and b[1] % 2 == 1
                   for a, b in zip(runs, runs[1:]))


ORACLES = {
    1: lambda s: re.fullmatch("1+", s) is not None,
    2: lambda s: re.fullmatch("(10)+", s) is not None,
    3: _runs_ok,
    4: lambda s: "000" not in s,
    5: lambda s: s.count("0") % 2 == 0 and s.count("1") % 2 == 0,
    6: lambda s: (s.count("0") - s.count("1")) % 3 == 0,
    7: lambda s: re.fullmatch("0*1*0*1*", s) is not None,
}


class Tomita(Task):
    """Tomita grammar ``number``. State row: [DFA state (dead = number of states), nonempty]."""

    def __init__(self, number: int = 3):
        self.number = check_int("Tomita grammar number", number, 1, 7)
        self.name = f"tomita{self.number}"
        self.vocab = ("0", "1", "$")
        self.eos = 2
        table, accepting = TRANSITIONS[self.number]
        states = len(table)
        dead = states
        self._next = np.full((states + 1, 2), dead, dtype=np.int64)
        for state, targets in table.items():
            for symbol, target in enumerate(targets):
                self._next[state, symbol] = dead if target < 0 else target
        self._accepting = np.zeros(states + 1, dtype=bool)
        self._accepting[list(accepting)] = True
        live = self._accepting.copy()
        for _ in range(states + 1):  # fixed point: can reach an accepting state
            live = live | live[self._next].any(axis=1)
        self._live_next = live[self._next]  # (state, symbol) -> successor is live

    def start(self, count, capacity):
        return np.zeros((count, 2), dtype=np.int64)

    def legal(self, states):
        mask = np.zeros((len(states), 3), dtype=bool)
        mask[:, :2] = self._live_next[states[:, 0]]
        mask[:, 2] = self._accepting[states[:, 0]] & (states[:, 1] == 1)
        return mask

    def advance(self, states, tokens):
        new = states.copy()
        symbol = np.minimum(tokens, 1)
        new[:, 0] = self._next[states[:, 0], symbol]
        new[:, 1] = 1
        return new

    def is_member(self, string: Sequence[int]) -> bool:
        text = "".join(self.vocab[t] for t in string)
        return bool(text) and "$" not in text and ORACLES[self.number](text)
