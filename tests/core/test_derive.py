"""`resharpen derive`: the default set runs, --only filters, every printed symbol is in the
legend, forms are simplified, and --latex writes a document pdflatex compiles."""
from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from resharpen.cli import main

FUNCTIONS = {"exp", "log", "sqrt", "Piecewise", "True", "oo", "E", "pi"}


def printed_symbols(text: str) -> dict[str, set[str]]:
    """Per '# section', the identifiers in the expression lines (not titles or legends)."""
    out: dict[str, set[str]] = {}
    section, in_legend = None, False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# "):
            section, in_legend = line[2:], False
            out[section] = set()
        elif line.startswith("symbols:"):
            in_legend = True
        elif line and not line.startswith("## ") and not in_legend and i and lines[i - 1].startswith("## "):
            out[section] |= set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", line)) - FUNCTIONS
    return out


def legends(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    section, in_legend = None, False
    for line in text.splitlines():
        if line.startswith("# "):
            section, in_legend = line[2:], False
            out[section] = set()
        elif line.startswith("symbols:"):
            in_legend = True
        elif in_legend and line.startswith("  "):
            out[section].add(line.split()[0])
    return out


@pytest.fixture(scope="module")
def default_output():
    import contextlib
    import io

    buffer = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buffer):
        code = main(["derive"])
    seconds = time.perf_counter() - start
    print(f"\nresharpen derive (default set): {seconds:.1f} s")
    return code, buffer.getvalue(), seconds


def test_default_set_runs(default_output):
    code, out, seconds = default_output
    assert code == 0
    assert out.count("\n## ") >= 50 and out.count("symbols:") == 3
    assert "## sc.two_over_s:" in out and "(1, 2/3, 1/2, 2/5, 1/3, 2/7)" in out
    assert seconds < 60  # about 8 s on a loaded 2-core machine; each line streams as derived


def test_every_printed_symbol_is_in_its_legend(default_output):
    _, out, _ = default_output
    used, legend = printed_symbols(out), legends(out)
    assert set(used) == set(legend) and len(used) == 3
    for section, names in used.items():
        assert names <= legend[section], (section, names - legend[section])
        assert legend[section] <= names, (section, legend[section] - names)  # only the used ones


def test_forms_are_simplified_and_one_symbol_per_quantity(default_output):
    _, out, _ = default_output
    assert "s**2 - s*(s - v) - s" not in out and "s*(v - 1)" in out
    assert "-lambda/beta" in out and not re.search(r"\bb\b", out)


def test_only_filters_by_name(capsys):
    assert main(["derive", "--only", "sc.margin.*", "--only", "collapse.f1"]) == 0
    out = capsys.readouterr().out
    names = re.findall(r"^## (\S+):", out, flags=re.M)
    assert names == ["sc.margin.none", "sc.margin.attn_out", "sc.margin.post", "sc.margin.pre",
                     "collapse.f1"]
    assert out.count("symbols:") == 2


def test_only_matching_nothing_is_a_usage_error(capsys):
    assert main(["derive", "--only", "no.such.*"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "sc.invalid_mass" in err


def test_latex_is_a_standalone_document_that_compiles(capsys, tmp_path):
    tex = tmp_path / "derive.tex"
    assert main(["derive", "--only", "sc.*", "--only", "dyn.periln.*", "--only", "collapse.*",
                 "--latex", str(tex)]) == 0
    text = tex.read_text()
    assert text.startswith("\\documentclass{article}") and "\\usepackage{amsmath}" in text
    assert text.rstrip().endswith("\\end{document}")
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (Debian: apt-get install texlive-latex-base)")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "derive.pdf").stat().st_size > 10_000
