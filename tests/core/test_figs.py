"""`resharpen figs`: one style for every figure, selection by output stem, and never training."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from resharpen.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIGS = ROOT / "paper_figs"

# A colour written in a figure module instead of taken from paper_figs/style.py: a colour
# keyword with a string literal, a Matplotlib cycle or named colour map, a format string with a
# colour letter ("k--"), a tab: colour.
OWN_COLOUR = re.compile(r"""(colou?r\s*=\s*["'])|(["']C\d["'])|(["']tab:)|(plt\.cm\.)|"""
                        r"""(cmap\s*=)|(["'][bgrcmykw](--|-\.|-|:|o|\.)["'])""")

def trained_figures() -> list[str]:
    """The figures drawn from trained results: those that declare the commands making them
    (``DATA``); every other figure computes its data."""
    from resharpen.paper_figs import DATA

    return sorted(name for name, commands in DATA.items() if commands)


TRAINED = trained_figures()

READS_RESULTS = re.compile(r"MissingResults|paper_figs\.results|finished_grid|sweeps?_figures|"
                           r"trained_set|premise_set|fig_\w+ import [^\n]*\bruns\b")
"""What a figure module reads trained results through (each raises MissingResults; the last:
another figure's reader of its runs)."""


def figure_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in FIGS.rglob("*.py")
            if p.name != "style.py"}


def test_no_figure_writes_a_colour_of_its_own():
    found = {path: m.group(0) for path, text in figure_sources().items()
             for m in [OWN_COLOUR.search(text)] if m}
    assert not found, f"colours outside paper_figs/style.py: {found}"


def test_every_figure_module_draws_through_the_style():
    from resharpen.paper_figs import FIGURES

    for name, slice_ in FIGURES.items():
        text = (FIGS / slice_ / f"{name}.py").read_text()
        assert re.search(r"\bstyle\b|sweep_figures|figures_of", text), name
        assert "Claims shown" in text or "claim" in text.lower(), f"{name}: docstring names no claim"


def test_the_style_file_is_applied_on_import():
    import matplotlib

    from resharpen.paper_figs import style

    assert style.STYLE_FILE.is_file()
    assert matplotlib.rcParams["axes.spines.top"] is False
    assert matplotlib.rcParams["legend.fontsize"] == 7
    from resharpen.experiments.training.schema import NORM_PLACEMENTS

    assert tuple(style.PLACEMENT_COLORS) == NORM_PLACEMENTS
    assert len(set(style.PLACEMENT_COLORS.values())) == len(NORM_PLACEMENTS)


def test_outputs_list_every_module_and_every_grid_task():
    import tomllib

    from resharpen.paper_figs import FIGURES, LANGUAGE_TASKS, OUTPUTS

    assert set(OUTPUTS) == set(FIGURES)
    grid = tomllib.loads((ROOT / "experiments/configs/languages/grid.toml").read_text())
    assert set(LANGUAGE_TASKS) == set(grid["search"]["task.name"]["grid"])
    assert OUTPUTS["fig_langtrain_curves"] == tuple(f"fig_langtrain_{task}"
                                                    for task in LANGUAGE_TASKS)
    stems = [stem for name in FIGURES for stem in OUTPUTS[name]]
    assert len(stems) == len(set(stems)), "two figure modules write one file"


def test_a_new_figure_script_is_found_with_its_stems_and_no_list_edited(tmp_path):
    """The figures are the files: a copy of paper_figs with two new scripts, one declaring its
    stems (a ``{task}`` one among them) and one without (its own name), lists both beside the
    package's figures, with no other file of the copy edited; a ``fig_*.py`` outside a slice
    folder (no ``__init__.py``) is no figure."""
    import shutil

    from resharpen.paper_figs import FIGURES, declared_stems, discover_figures

    root = tmp_path / "paper_figs"
    shutil.copytree(FIGS, root, ignore=shutil.ignore_patterns("__pycache__"))
    declared = root / "languages" / "fig_langtrain_new.py"
    declared.write_text('"""A new figure. Claims shown: none."""\n'
                        'STEMS = ("fig_langtrain_new", "fig_langtrain_new_{task}")\n'
                        'def make(profile, outdir):\n    return []\n')
    plain = root / "collapse" / "fig_collapse_new.py"
    plain.write_text('"""Another. Claims shown: none."""\n')
    (root / "not_a_slice").mkdir()
    (root / "not_a_slice" / "fig_stray.py").write_text("")
    assert discover_figures(root) == {**FIGURES, "fig_langtrain_new": "languages",
                                      "fig_collapse_new": "collapse"}
    assert declared_stems(declared, ("dyck1", "anbn")) == (
        "fig_langtrain_new", "fig_langtrain_new_dyck1", "fig_langtrain_new_anbn")
    assert declared_stems(plain, ("dyck1",)) == ("fig_collapse_new",)
    edited = [p.relative_to(root) for p in root.rglob("*.py")
              if (FIGS / p.relative_to(root)).is_file()
              and p.read_bytes() != (FIGS / p.relative_to(root)).read_bytes()]
    assert not edited


def test_a_stems_declaration_that_is_not_a_literal_is_refused(tmp_path):
    from resharpen.paper_figs import declared_stems

    path = tmp_path / "fig_bad.py"
    for text in ('STEMS = tuple("ab")\n', 'STEMS = ("a", 1)\n', 'STEMS = ()\n', 'STEMS = "a"\n'):
        path.write_text(text)
        with pytest.raises(ValueError, match="STEMS must be a literal tuple"):
            declared_stems(path)


def test_a_claim_naming_a_figure_without_a_script_is_refused():
    """Every figure the declarations name is a discovered script, and a declaration naming a
    figure that has no ``paper_figs/<slice>/fig_*.py`` is an error when it is read."""
    from resharpen.experiments.ledger.declarations import all_declarations, check_entry
    from resharpen.paper_figs import FIGURES

    named = {f for entry in all_declarations().values() for f in entry.get("figures", [])}
    assert named and named <= set(FIGURES), sorted(named - set(FIGURES))
    entry = {"source": "s", "statement": "s", "kind": "numeric", "tolerance": "exact",
             "cost": "fast", "quick": "PASS", "expected_from": "statement", "origin": "o",
             "figures": ["fig_sc_margins", "fig_no_such_figure"]}
    with pytest.raises(ValueError, match="'fig_no_such_figure' is not a script of paper_figs"):
        check_entry("sc.example", entry, "claims.toml")
    check_entry("sc.example", {**entry, "figures": ["fig_sc_margins"]}, "claims.toml")


@pytest.mark.parametrize("only, chosen", [
    (["sc_margins"], ["fig_sc_margins"]),
    (["fig_sc_margins"], ["fig_sc_margins"]),
    (["sc_attn_out_over_sv"], ["fig_sc_attn_out_sv"]),
    (["fig_langtrain_dyck2"], ["fig_langtrain_curves"]),
    (["fig_langtrain_study_othello6"], ["fig_langtrain_othello_study"]),
    (["fig_train_grid_*"], ["fig_train_grids"]),
    (["sc_*"], ["fig_sc_attn_out_sv", "fig_sc_invalid_mass", "fig_sc_margins"]),
])
def test_only_selects_by_output_stem_or_module(only, chosen):
    from resharpen.paper_figs import select_figures

    assert select_figures(only) == chosen


def test_only_matching_nothing_is_a_usage_error(capsys, tmp_path):
    code = main(["figs", "--only", "no_such_figure", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "sc_margins" in err
    assert not (tmp_path / "f").exists()


def test_figs_only_stem_draws_placements_in_their_colours(capsys, tmp_path, monkeypatch):
    """`figs --only sc_margins` writes sc_margins.png/.pdf; every placement's lines are drawn in
    the colour of the one table."""
    from matplotlib.colors import to_hex

    from resharpen.paper_figs import style

    drawn = []
    stamp = style.stamp
    monkeypatch.setattr(style, "stamp", lambda fig, profile: (drawn.append(fig), stamp(fig, profile)))
    assert main(["figs", "--only", "sc_margins", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"sc_margins.png", "sc_margins.pdf"}
    (fig,) = drawn
    lines = [line for line in fig.axes[0].lines if not line.get_label().startswith("_")]
    for line in lines:
        norm = line.get_label().split(":")[0].split(",")[0]
        if norm in style.PLACEMENT_COLORS:
            assert to_hex(line.get_color()) == style.PLACEMENT_COLORS[norm].lower(), norm
        else:  # the 1/s and 2/s laws: black, above the data
            assert line.get_zorder() > max(x.get_zorder() for x in lines
                                           if x.get_label().split(":")[0] in style.PLACEMENT_COLORS)


def test_figs_never_trains_and_lists_the_skipped(capsys, tmp_path, monkeypatch):
    """On an empty output root the figures drawn from trained results cannot be drawn: one error
    line each names the command that makes its results, the exit status is 1; nothing trains."""
    import resharpen.experiments.collapse.train as collapse_train
    import resharpen.experiments.languages.grid as grid
    import resharpen.experiments.set_complement.sweep as sc_sweep

    def refuse(*args, **kwargs):
        raise AssertionError("figs must not train")

    monkeypatch.setattr(sc_sweep, "run_sweep", refuse)
    monkeypatch.setattr(grid, "run_grid", refuse)
    monkeypatch.setattr(collapse_train, "train", refuse)
    monkeypatch.chdir(tmp_path)
    code = main(["figs", *sum((["--only", p] for p in TRAINED), []), "--out", "figs"])
    out, err = capsys.readouterr()
    assert code == 1, out  # a requested figure that cannot be drawn is an error
    from resharpen.paper_figs import select_figures

    skipped = select_figures(TRAINED)
    assert skipped
    lines = [line for line in err.splitlines() if line.startswith("error: figure ")]
    assert len(lines) == len(skipped)
    for pattern in TRAINED:  # every pattern names a figure (no count to edit when one is added)
        assert select_figures([pattern]), pattern
    from resharpen.paper_figs import DATA, data_command

    for name in skipped:  # the command it names is one the figure declares (figs --list)
        declared = [data_command(c).format(profile="quick") for c in DATA[name]]
        assert any(re.fullmatch(rf"error: figure {name} cannot be drawn .*make them with: "
                                rf"{re.escape(c)}", line) for c in declared for line in lines), \
            (name, declared, err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("summary.json"))


def test_a_figure_that_reads_trained_results_declares_the_commands_that_make_them():
    """A figure module that reads trained results (through MissingResults or the readers that
    raise it) declares DATA, and one that declares DATA reads them: the list's data line cannot
    say "computed" of a figure that needs a sweep."""
    from resharpen.paper_figs import DATA, FIGURES

    for name, slice_name in FIGURES.items():
        text = (FIGS / slice_name / f"{name}.py").read_text()
        assert bool(READS_RESULTS.search(text)) == bool(DATA[name]), name


def test_every_declared_command_is_one_the_cli_accepts():
    """Each DATA command, at either profile, parses with the CLI's own parser, and a sweep it
    names is a packaged config."""
    import shlex

    from resharpen.cli import build_parser
    from resharpen.experiments.training.config import find_config
    from resharpen.paper_figs import DATA, data_command

    parser = build_parser()
    for name, commands in DATA.items():
        for command in map(data_command, commands):
            for profile in ("quick", "full"):
                words = shlex.split(command.format(profile=profile))
                assert words[0] == "resharpen", (name, command)
                args = parser.parse_args(words[1:])
                assert args.profile == profile, (name, command)
                if words[1] == "sweep":
                    assert find_config(words[2]).is_file(), (name, command)


def test_a_data_declaration_that_is_not_a_command_is_refused(tmp_path):
    from resharpen.paper_figs import declared_data

    path = tmp_path / "fig_bad.py"
    for text in ('DATA = ("make it",)\n', 'DATA = ("resharpen sweep x",)\n', 'DATA = ()\n',
                 'DATA = ("make it # --profile {profile}",)\n'):
        path.write_text(text)
        with pytest.raises(ValueError, match="DATA"):
            declared_data(path)
    path.write_text('"""Computed."""\n')
    assert declared_data(path) == ()
    noted = 'resharpen sweep x --profile {profile} # full size only'
    path.write_text(f'DATA = ("{noted}",)\n')
    assert declared_data(path) == (noted,)


def test_figs_list_names_every_figure_with_its_claims(capsys):
    """`figs --list` draws nothing and lists every figure with its files and the claims whose
    declarations name it."""
    from resharpen.paper_figs import FIGURES

    assert main(["figs", "--list"]) == 0
    out = capsys.readouterr().out
    for name in FIGURES:
        assert f"{name} (" in out
    block = out.split("fig_fit_margins (", 1)[1].split("\n", 4)
    assert "fit.none.two_over_s" in block[2]
    assert block[3] == ("  data: resharpen sweep set_complement/fit_placements_v32 --profile "
                        "PROFILE --workers 2; resharpen sweep set_complement/fit_post_large_k_v32 "
                        "--profile PROFILE --workers 2 (optional: the large-K panel); resharpen "
                        "sweep set_complement/fit_placements_v64 --profile PROFILE --workers 2 "
                        "(full size only, optional: the v = 64 row)")
    assert out.split("fig_sc_margins (", 1)[1].split("\n", 4)[3] == \
        "  data: computed when drawn (no trained results)"
