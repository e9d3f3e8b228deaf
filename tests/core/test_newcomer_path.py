"""What a new user meets first: help on every option, text without internal references, the
version, "did you mean" answered at once, nothing written before an argument is refused (not
even matplotlib's cache), the README's example finite, the tutorial's output folder.
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"\b(issues?|requirements?|req\.)\s*#?\d+", re.I)
"""An internal reference ("issue 21", "Issue 13, requirement 4", "req. 5"): never shown."""


def parsers():
    """(command words, parser) of the top-level parser and every subcommand's, recursively."""
    from resharpen.cli import build_parser

    found = []

    def walk(parser, path):
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])

    walk(build_parser(), ["resharpen"])
    return found


def test_every_option_and_subcommand_has_help():
    missing = []
    for path, parser in parsers():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                missing += [" ".join(path + [choice.dest]) for choice in action._choices_actions
                            if not choice.help]
            elif not action.help:
                missing.append(" ".join(path + [action.option_strings[0] if action.option_strings
                                                else action.dest]))
    assert not missing, f"options without help text: {missing}"
    assert len(parsers()) > 20  # the walk reaches the nested subcommands


def user_texts() -> dict[str, str]:
    """Every user-visible string we can enumerate: help texts and descriptions of every parser,
    the packaged configs' descriptions (`resharpen configs`), every claim's statement, source
    and origin (the claim index: `verify --list`, the ledger, the HTML report's source column),
    and every string constant of the command-line and report modules (their messages)."""
    from resharpen.claim_index import INDEX
    from resharpen.experiments.training.config import list_configs

    texts = {}
    for path, parser in parsers():
        where = " ".join(path)
        texts[f"{where}: description"] = parser.description or ""
        for action in parser._actions:
            texts[f"{where} {action.dest}: help"] = action.help or ""
            for choice in getattr(action, "_choices_actions", ()):
                texts[f"{where} {choice.dest}: help"] = choice.help or ""
    for row in list_configs():
        texts[f"config {row['name']}"] = row["description"]
    for claim in json.loads(INDEX.read_text())["claims"]:
        for field in ("statement", "source", "origin"):
            texts[f"claim {claim['id']} {field}"] = str(claim[field])
    modules = [ROOT / "resharpen" / "cli.py", ROOT / "resharpen" / "html_report.py",
               ROOT / "experiments" / "common" / "cli_args.py",
               *sorted((ROOT / "experiments").glob("*/cli.py"))]
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts[f"{module.relative_to(ROOT)}:{node.lineno}"] = node.value
    return texts


def test_no_internal_issue_numbers_in_user_visible_text():
    texts = user_texts()
    assert len(texts) > 1000
    found = {where: INTERNAL.search(text).group(0) for where, text in texts.items()
             if INTERNAL.search(text)}
    assert not found, f"internal references in user-visible text: {found}"


def test_the_check_for_internal_references_can_fail():
    for text in ("Issue 13, requirement 4: dropout", "the grid (issue 21)", "see req. 5",
                 "requirement 4 of issue #4"):
        assert INTERNAL.search(text), text
    assert not INTERNAL.search("the issue is the noise; 21 runs")


def test_config_descriptions_are_complete_sentences():
    """`resharpen configs` prints each packaged config's first comment line: one complete
    sentence (a capital first, a full stop or question mark last, brackets closed)."""
    from resharpen.experiments.training.config import list_configs

    for row in list_configs():
        text = row["description"]
        assert re.fullmatch(r"[A-Z].*[.?]", text), (row["name"], text)
        assert text.count("(") == text.count(")"), (row["name"], text)
        assert not text.endswith(("e.g.", "i.e.")), (row["name"], text)


def test_version(tmp_path):
    from importlib.metadata import version

    done = subprocess.run([sys.executable, "-m", "resharpen", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"resharpen {version('resharpen')}"


PROBE = """
import json, sys
from resharpen.cli import main
status = main(sys.argv[1:])
heavy = sorted(m for m in ("torch", "sympy", "resharpen.experiments.set_complement.claims",
                           "resharpen.experiments.dynamics.claims") if m in sys.modules)
print(json.dumps({"status": status, "heavy": heavy}))
"""


@pytest.mark.parametrize("args, suggestion", [
    (["verify", "--only", "sc.theorm*"], "did you mean 'sc.theorem*'?"),
    (["verify", "--only", "collapse.atn*"], "did you mean 'collapse.attn*'?"),
    (["verify", "--where", "sc.theorem.two_ovr_s"], "did you mean 'sc.theorem.two_over_s'?"),
    (["train", "set_complement/fit_placement_v32"],
     "did you mean 'set_complement/fit_placements_v32'?"),
])
def test_did_you_mean_at_once(args, suggestion, tmp_path):
    """A misspelt claim pattern or config name is answered with the closest known one, from the
    claim index: no claims module, no torch, no sympy imported, which is what keeps it quick
    (benchmarks/bench_cli.py times it; no wall-clock bound is asserted here)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, text=True,
                          capture_output=True, timeout=120)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 2 and suggestion in done.stderr, done.stderr
    assert result["heavy"] == [], result


@pytest.mark.parametrize("claim_id", ["sc.metrics.closed_forms",
                                      "sc.readout.reconstruction_regression",
                                      "collapse.delta_attn_formula", "dyn.terminal.ode.postln"])
def test_a_claim_without_a_model_runs_without_torch(claim_id, tmp_path):
    """``verify --only`` on a claim that needs no model imports its claims module and no torch
    (the checks on a model import it themselves), so it takes less than importing torch
    (benchmarks/bench_waits.py times it)."""
    done = subprocess.run([sys.executable, "-c", PROBE, "verify", "--only", claim_id],
                          cwd=tmp_path, text=True, capture_output=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 0, done.stderr
    assert "torch" not in result["heavy"], result


def test_did_you_mean_for_figures():
    from resharpen.paper_figs import select_figures

    with pytest.raises(ValueError, match=r"no figure matches 'fig_dyn_gama' \(did you mean "
                                         r"'fig_dyn_gamma'\?\)"):
        select_figures(["fig_dyn_gama"])


def test_did_you_mean_keeps_the_wildcards_and_stays_quiet_when_nothing_is_close():
    from resharpen.experiments.common.cli_args import did_you_mean

    ids = ["sc.theorem.two_over_s", "sc.lemma.balance", "dyn.ode.preln"]
    assert did_you_mean("sc.lema.*", ids) == " (did you mean 'sc.lemma.*'?)"
    assert did_you_mean("sc.theorem.two_ovr_s", ids) == " (did you mean 'sc.theorem.two_over_s'?)"
    assert did_you_mean("zzzz*", ids) == ""
    assert did_you_mean("*", ids) == ""


# ---------------------------------------------------------------------- nothing written first
BAD_RUNS = [
    ["figs", "--only", "no_such_figure"],  # imports matplotlib to know the figures
    ["figs", "--out", ""],
    ["verify", "--only", "sc.theorm*"],
    ["train", "set_complement/bse"],
    ["dynamics", "stacks", "--layers", "1000000000"],
    ["collapse", "train", "--out", ""],
    ["report", "--html", "r.html", "--ledger", "missing.json"],
]


@pytest.mark.parametrize("args", BAD_RUNS, ids=[" ".join(a) for a in BAD_RUNS])
def test_a_refused_run_writes_nothing_anywhere(args, tmp_path):
    """Run with HOME and the working folder in empty temporary folders and MPLCONFIGDIR unset:
    after the one-line refusal both are still empty (matplotlib's cache included, which would
    otherwise land in ~/.config/matplotlib or ~/.cache/matplotlib)."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME",
                                                            "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "resharpen", *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert list(home.rglob("*")) == [] and list(work.rglob("*")) == [], (
        sorted(map(str, home.rglob("*"))) + sorted(map(str, work.rglob("*"))))


def test_matplotlib_cache_goes_to_the_temporary_folder(tmp_path):
    """With MPLCONFIGDIR unset, the command line points it at a folder of this user in the
    temporary folder; a value the user set is kept."""
    probe = ("import os, tempfile\nfrom resharpen.cli import matplotlib_cache\n"
             "folder = matplotlib_cache()\nimport matplotlib\n"
             "print(folder, matplotlib.get_configdir(), tempfile.gettempdir())")
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"}
    env["HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          timeout=120)
    folder, configdir, tmp = done.stdout.split()
    assert Path(configdir) == Path(folder).resolve(), done.stderr
    assert Path(folder).parent == Path(tmp) and Path(folder).name.startswith("resharpen-")
    assert list(tmp_path.iterdir()) == []
    env["MPLCONFIGDIR"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split()[0] == "None"
    assert Path(done.stdout.split()[1]) == (tmp_path / "mine").resolve()


# ---------------------------------------------------------------------- the README and the tutorial
def test_a_flat_vector_normalizes_to_zero_with_eps_zero():
    """N(0) = 0 for RMSNorm and N(c 1) = b for LayerNorm when eps = 0 (the constructions'
    norms), where the formula is 0/0; every other row is the formula's value, bit for bit."""
    import torch
    import torch.nn.functional as F

    from resharpen.experiments.model.transformer import Norm

    x = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 0.5, 3.0], [2.0, 2.0, 2.0, 2.0]],
                     dtype=torch.float64)
    rms = Norm(4, "rms", 0.0).double()
    with torch.no_grad():
        rms.gain.fill_(1.5)
    out = rms(x)
    assert torch.equal(out[0], torch.zeros(4, dtype=torch.float64))
    assert torch.equal(out[1:], F.rms_norm(x[1:], (4,), rms.gain, 0.0))
    layer = Norm(4, "layer", 0.0).double()
    with torch.no_grad():
        layer.bias.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    out = layer(x)
    assert torch.equal(out[0], layer.bias) and torch.equal(out[2], layer.bias)
    assert torch.equal(out[1], F.layer_norm(x[1:2], (4,), layer.gain, layer.bias, 0.0)[0])
    assert torch.isnan(F.rms_norm(x[:1], (4,), rms.gain, 0.0)).all()  # what it replaces
    eps = Norm(4, "rms", 1e-6).double()
    assert torch.equal(eps(x), F.rms_norm(x, (4,), eps.gain, 1e-6))  # eps > 0: unchanged


def readme_python() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 1, "the README has one Python block"
    return blocks[0]


def printed_numbers(text: str) -> list[str]:
    return re.findall(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf)", text, re.I)


def test_readme_python_block_prints_only_finite_numbers(tmp_path):
    """The README's Python block, run as a user would (an empty folder outside the checkout),
    exits 0 and every number it prints is finite: the ablation at its end prints logits, not
    NaN."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", readme_python()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    numbers = printed_numbers(done.stdout)
    assert len(numbers) > 20, done.stdout
    bad = [n for n in numbers if not math.isfinite(float(n))]
    assert not bad, f"non-finite numbers printed: {bad}\n{done.stdout}"


def test_the_finite_check_can_fail():
    numbers = printed_numbers("tensor([nan, 0.1250, -inf], dtype=torch.float64)\n7 2.8 1e-3")
    assert [n for n in numbers if not math.isfinite(float(n))] == ["nan", "-inf"]


def tutorial_setup_cell() -> str:
    cells = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return code[0]


@pytest.mark.parametrize("layout", ["checkout", "elsewhere"])
def test_the_tutorial_writes_to_the_working_folder_out(layout, tmp_path):
    """Opened from a checkout's docs/ (where Jupyter starts the kernel), the tutorial works in
    the checkout's root, so its out/ is the checkout's, never docs/out/; opened anywhere else,
    out/ is the working folder's."""
    docs = tmp_path / "docs"
    docs.mkdir()
    if layout == "checkout":
        (tmp_path / "pyproject.toml").write_text("")
        (docs / "tutorial.ipynb").write_text("{}")
    done = subprocess.run([sys.executable, "-c", tutorial_setup_cell()], cwd=docs,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = Path(done.stdout.split("results go to", 1)[1].strip())
    assert out == ((tmp_path if layout == "checkout" else docs) / "out").resolve()
