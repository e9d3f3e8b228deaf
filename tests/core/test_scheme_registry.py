"""Every list of schemes is a filter over the scheme registry: no module of the package (outside
the registry, ``experiments/model/schemes.py``) writes a literal list, tuple, set or dict keys of 3
or more registered scheme names, so a new scheme needs only its registry entry. The families the
filters give are the ones the package's numbers were made with."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from resharpen.experiments.model import schemes

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("resharpen", "theory", "constructions", "experiments", "paper_figs", "benchmarks")
REGISTRY = Path("experiments/model/schemes.py")
EXEMPT = {
    # The theory may not import experiments: its readouts of the Set Complement constructions
    # are its own vocabulary, defined once here; the registry maps each scheme onto one of them
    # (Scheme.construction, checked by register), as dynamics_name maps onto the dynamics paper's.
    (Path("theory/set_complement/readouts.py"), "RESIDUAL_RULES"),
}


def literal_scheme_lists(path: Path, known: set[str]) -> list[tuple[int, str | None, list[str]]]:
    """(line, assigned name or None, the names) of each literal list, tuple, set or dict's keys
    in ``path`` that holds 3 or more distinct names of ``known``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    targets = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Name) and node.value is not None:
                    targets[id(node.value)] = target.id
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        else:
            continue
        names = [e.value for e in elements if isinstance(e, ast.Constant) and e.value in known]
        if len(set(names)) >= 3:
            found.append((node.lineno, targets.get(id(node)), names))
    return found


def package_files() -> list[Path]:
    return sorted(p for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_no_module_lists_schemes_by_hand():
    known = set(schemes.names(builtin=True))
    offenders = []
    for path in package_files():
        relative = path.relative_to(ROOT)
        if relative == REGISTRY:
            continue
        offenders += [f"{relative}:{line}: {names}"
                      for line, target, names in literal_scheme_lists(path, known)
                      if (relative, target) not in EXEMPT]
    assert not offenders, ("lists of schemes written by hand (filter the registry instead: "
                           "resharpen.experiments.model.schemes.names):\n" + "\n".join(offenders))


def test_the_walk_finds_a_hand_written_list(tmp_path):
    """The check can fail: a module with a literal tuple of three scheme names is found."""
    module = tmp_path / "mine.py"
    module.write_text('ARMS = ("pre", "post", "peri")\nOK = ("pre", "post")\n'
                      'COLOURS = {"none": 1, "pre": 2, "ngpt": 3}\n')
    found = literal_scheme_lists(module, set(schemes.names(builtin=True)))
    assert [(line, target) for line, target, _ in found] == [(1, "ARMS"), (3, "COLOURS")]


def test_the_exemption_is_the_theorys_one_definition():
    """The theory's readouts are the registry's construction names, and nothing else is exempt."""
    from resharpen.theory.set_complement.readouts import READOUTS

    (path, name), = EXEMPT
    assert [t for _, t, _ in literal_scheme_lists(ROOT / path, set(schemes.SCHEMES))] == [name]
    constructed = {schemes.get(n).construction for n in schemes.names(construction=True)}
    assert constructed == set(READOUTS)
    for name in schemes.names(construction=True, builtin=True):  # the figures pass the name on
        assert schemes.get(name).construction == name


def test_the_families_are_the_ones_the_numbers_were_made_with():
    from resharpen.experiments.dynamics import trained_plan as trained
    from resharpen.experiments.set_complement import compare, fit_report
    from resharpen.experiments.set_complement import fit_sweep_tests as claims_fit

    assert set(compare.placements()) == {"none", "pre", "pre_nofinal", "post", "attn_out", "peri"}
    assert set(fit_report.fitted_readouts()) == {"none", "attn_out", "post"}
    assert set(claims_fit.NORMALIZED) == {"attn_out", "post", "peri"}
    assert claims_fit.LADDER_ARMS == ("pre", "post", "attn_out", "peri")
    assert set(trained.SCHEMES) == {"none", "pre", "post", "mixln", "peri", "ngpt", "ln_scaling"}
    assert set(trained.sizes("quick").trained_schemes) == {"pre", "post", "mixln", "peri",
                                                              "ngpt"}


def test_the_paper_orderings_name_registered_schemes():
    from resharpen.experiments.dynamics.trained_checks import trained_names
    from resharpen.theory.dynamics import schemes as paper

    assert trained_names(paper.FIRST_LAYER_FAST) == ("peri", "ngpt")
    assert trained_names(paper.FIRST_LAYER_SLOW) == ("post", "pre")
    assert trained_names((paper.TERMINAL_FASTEST, *paper.TERMINAL_SLOWER)) == ("post", "pre",
                                                                                "mixln", "peri")


@pytest.mark.parametrize("fields, message", [
    ({"construction": "peri"}, "construction must be None or one of none, attn_out, post, pre"),
    ({"lemma_readout": True, "layer": lambda l, L: schemes.NGPT},
     "lemma_readout needs a one-layer model"),
    ({"lemma_readout": True, "layer": lambda l, L: schemes.POST, "final_norm": True},
     "at most one norm on the residual"),
])
def test_register_refuses_a_family_it_cannot_have(registries, fields, message):
    entry = {"name": "mine", "layer": lambda l, L: schemes.PRE, "final_norm": False,
             "label": "mine", "color": "#000000", "marker": "o", **fields}
    with pytest.raises(ValueError, match=message):
        schemes.register(schemes.Scheme(**entry))
