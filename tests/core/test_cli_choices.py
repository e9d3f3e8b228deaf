"""Every enumerated option of the command line lists its choices in ``--help`` (argparse
``choices`` from the package's own tuples), and a value outside them is refused with the
choices named (issue 24, requirement 2)."""
from __future__ import annotations

import argparse

import pytest

from resharpen.cli import build_parser, main


def _parsers(parser: argparse.ArgumentParser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, path + (name,))


def test_every_option_with_choices_lists_them_in_its_help():
    checked = 0
    for path, parser in _parsers(build_parser()):
        text = parser.format_help()
        for action in parser._actions:
            if action.choices and not isinstance(action, argparse._SubParsersAction):
                listed = "{" + ",".join(map(str, action.choices)) + "}"
                assert listed in text, (path, action.dest)
                checked += 1
    assert checked >= 15


@pytest.mark.parametrize("command, option, values", [
    (("construct",), "--norm", ("none", "attn_out", "post", "pre")),
    (("construct",), "--norm-kind", ("rms", "layer")),
    (("construct",), "--variant", ("tight", "one_hot", "balanced", "unbalanced")),
    (("collapse", "stack"), "--norm", ("post", "pre")),
    (("collapse", "stack"), "--mlp", ("none", "swiglu")),
    (("dynamics", "simulate"), "--scheme", ("postln", "preln", "mixln", "periln", "ngpt", "sqrt")),
    (("dynamics", "simulate"), "--start", ("uniform", "orthonormal", "gaussian")),
])
def test_the_enumerated_options_have_choices(command, option, values):
    parsers = dict(_parsers(build_parser()))
    action = next(a for a in parsers[command]._actions if option in a.option_strings)
    assert tuple(action.choices) == values


def test_the_choices_are_the_package_tuples():
    from resharpen.constructions.set_complement_names import NORM_KINDS, READOUT_NORMS, VARIANTS
    from resharpen.experiments.collapse import cli as collapse_cli, stack
    from resharpen.experiments.training.schema import NORM_KINDS as MODEL_NORM_KINDS

    assert NORM_KINDS == MODEL_NORM_KINDS
    assert collapse_cli.STACK_NORMS == stack.PLACEMENTS
    assert tuple(m or "none" for m in stack.MLPS) == collapse_cli.STACK_MLPS
    assert READOUT_NORMS and VARIANTS


def test_a_bad_choice_is_one_line_naming_the_choices(capsys):
    assert main(["construct", "--vocab", "8", "--norm", "peri"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err == ("error: argument --norm: norm 'peri' is not one of none, attn_out, post, pre")
