"""Argument types and the one-line error convention shared by every subcommand."""
from __future__ import annotations

import argparse

EXIT_USAGE = 2


class UsageError(ValueError):
    """A bad command-line argument."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, never the usage block
        raise UsageError(message)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value
