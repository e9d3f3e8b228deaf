"""Argument types and the error convention shared by every subcommand.

Bad input is a :class:`UsageError`: it is raised where the input is parsed or validated (an
argument type, a choice, a config or grid file, an input or output folder), before any work or
write, and the command line prints it as one line ``error: ...`` with exit status 2. Library
functions reject bad values with ``ValueError``; a handler runs the library calls that validate
the user's input inside :func:`bad_input`, which turns exactly those into usage errors. Any
other exception is a bug: it keeps its traceback and exits 1.

This module is imported when the command line is parsed, so it imports nothing heavy.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_USAGE = 2


class UsageError(ValueError):
    """Bad input from the user: an argument, a config value, an input or output path."""


NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf$|^-nan$", re.I)
"""What a negative number looks like on the command line (``-1``, ``-1.5``, ``-1e3``, ``-.5``):
such an argument is a value, never an option, so ``--beta -1e3`` parses (argparse's own rule
misses exponents before Python 3.13)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER  # argparse's hook for this rule

    def error(self, message: str):  # one line, exit 2, never the usage block
        raise UsageError(message)


@contextmanager
def bad_input() -> Iterator[None]:
    """Run library calls that validate the user's input: the ``ValueError`` they raise (a bad
    value, named with what is allowed) and the ``FileNotFoundError`` (a missing input file or
    folder) become :class:`UsageError`. Keep only validation inside: an error raised by the work
    itself is a bug and must keep its traceback."""
    try:
        yield
    except UsageError:
        raise
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from exc


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


MAX_WORKERS = 256
"""The most worker processes (or Ray tasks at a time) of ``verify``, ``sweep`` and ``langs run``:
far more than a machine has cores; a larger count is a typo, refused before any work."""


def count(cap: int, low: int = 1):
    """An argument type for a count (workers, layers, samples, ...): an integer in
    [``low``, ``cap``], checked when the line is parsed, before any work. The cap is stated in
    the option's help; a count above it is refused rather than attempted (an overflow, a run
    that never ends)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if value < low:
            least = "a positive integer" if low == 1 else f"an integer >= {low}"
            raise argparse.ArgumentTypeError(f"expected {least}, got {_short(value)}")
        if value > cap:
            raise argparse.ArgumentTypeError(f"at most {cap:,}, got {_short(value)}")
        return value

    parse.__name__ = "count"
    return parse


def _short(value: int) -> str:
    """An integer as written, or its length when it is too long to print in one line."""
    text = str(value)
    return text if len(text) <= 30 else f"an integer of {len(text)} digits"


def nonempty(what: str = "a path"):
    """An argument type for a path, a name or a glob pattern: the text itself, refused when it
    is empty or blank (an empty ``--out ''`` is never "absent": a missing value is an error, not
    the default folder or the working folder)."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected {what}, got an empty string")
        return text

    parse.__name__ = "nonempty"
    return parse


PATH = nonempty("a path")
"""The argument type of every path option and argument (``--out``, ``--json``, a run folder)."""
PATTERN = nonempty("a name or glob pattern")
"""The argument type of every name or pattern option (``--only``, ``--where``)."""


def did_you_mean(word: str, names) -> str:
    """`` (did you mean 'x'?)`` naming the known name closest to ``word`` (difflib's ratio, at
    least 0.6), or "" when none is close. A glob pattern (``sc.theorm*``) is compared by its
    literal part before the first wildcard with the names cut to about that length, and the
    suggestion keeps the pattern's wildcard part (``sc.theorem*``)."""
    import difflib

    names = sorted(set(names))
    cut = min((i for i, ch in enumerate(word) if ch in "*?["), default=None)
    if cut is None:
        close = difflib.get_close_matches(word, names, n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""
    literal, rest = word[:cut], word[cut:]
    if not literal:
        return ""
    prefixes = {name[:n] for name in names for n in range(max(1, len(literal) - 2),
                                                              len(literal) + 3)}
    close = difflib.get_close_matches(literal, sorted(prefixes), n=1)
    return f" (did you mean {close[0] + rest!r}?)" if close else ""


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


SEED_MAX = 2**63 - 1


def seed_int(text: str) -> int:
    """A seed: an integer in [0, 2**63 - 1] (what numpy, torch and ``random`` all accept)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"a seed must be an integer in [0, 2**63 - 1], "
                                         f"got {value}")
    return value


def one_of(choices: tuple, message: str = "{!r} is not one of {}"):
    """An argument type for an enumerated option, used with ``choices=choices`` (so ``--help``
    lists them): a value outside ``choices`` is refused with ``message.format(value, allowed)``,
    the library's own wording (``norm 'x' is not one of none, attn_out, ...``)."""
    allowed = ", ".join(str(c) for c in choices)

    def parse(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(message.format(text, allowed))
        return text

    parse.__name__ = "choice"  # argparse names the type in its messages
    return parse


def require_finite(numbers: dict, what: str) -> None:
    """:class:`UsageError` naming the first non-finite value of ``numbers`` ({label: number,
    None allowed for "not defined"}): a command's headline numbers must all be finite for it to
    report success (exit 0); a NaN or an overflow is never printed as a result. ``what`` names
    the result and, when it is known, what to change."""
    import math

    for label, value in numbers.items():
        if value is not None and not math.isfinite(float(value)):
            raise UsageError(f"{what}: {label} is {float(value)}, not a finite number; no result "
                             "is reported or written")


def add_backend_options(parser) -> None:
    """``--workers``, ``--backend`` and ``--address``: where a sweep's runs execute (the local
    process pool or a Ray cluster), the same three options on every command that runs a sweep."""
    parser.add_argument("--workers", type=count(MAX_WORKERS), default=2,
                        help=f"parallel runs (default 2, at most {MAX_WORKERS})")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="run on this machine's process pool (local, the default) or as Ray "
                             "tasks (ray)")
    parser.add_argument("--address", default=None, type=nonempty("a Ray address"),
                        help="Ray cluster address ('auto' = the running cluster); ray backend only")
