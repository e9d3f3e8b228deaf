"""Every code block of README.md and docs/api.md runs, so the quickstart cannot rot.

A fenced block is run unless the line before it (blank lines aside) is an HTML comment that
starts with ``<!-- skip-test`` (``make reproduce``, real-size runs, a Ray cluster):

- ``python`` blocks run as a script in a fresh interpreter;
- ``sh`` / ``bash`` / ``shell`` blocks run in bash with ``set -e``, and every command in them is
  a ``resharpen`` command (anything else has to be marked skip-test).

Each runs in its own empty temporary folder outside the repository (the output root ``out/``
is there), as a user would run it from anywhere: a config is named by its packaged name
(``set_complement/base``), which resolves from any working folder (issue 24). The README's table
of claim families is checked against the claims' declared quick statuses (``expected_status``).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/api.md")
SHELLS = ("sh", "bash", "shell")
FENCE = re.compile(r"^```([A-Za-z]*)\s*$")


def code_blocks(path: Path) -> list[tuple[int, str, str, bool]]:
    """(line, language, code, skipped) of every fenced block of ``path``."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        end = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == "```")
        blocks.append((i + 1, opened.group(1).lower(), "\n".join(lines[i + 1:end]) + "\n",
                       before.startswith("<!-- skip-test")))
        i = end + 1
    return blocks


def blocks_to_run() -> list:
    return [pytest.param(doc, line, lang, code, id=f"{doc}:{line}")
            for doc in DOCS for line, lang, code, skipped in code_blocks(ROOT / doc)
            if not skipped]


def commands(code: str) -> list[str]:
    """The commands of a shell block: its lines without comments and blank lines."""
    return [line.split(" #")[0].strip() for line in code.splitlines()
            if line.strip() and not line.strip().startswith("#")]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder outside the repository: nothing of the checkout is linked in."""
    assert ROOT not in tmp_path.resolve().parents
    return tmp_path


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.mark.parametrize("doc, line, lang, code", blocks_to_run())
def test_code_block_runs(doc, line, lang, code, workdir):
    if lang == "python":
        cmd = [sys.executable, "-c", code]
    elif lang in SHELLS:
        for command in commands(code):
            assert command.startswith("resharpen "), (
                f"{doc}:{line}: {command!r} is not a resharpen command; mark the block "
                "<!-- skip-test: why --> if it must not run")
        cmd = ["bash", "-c", "set -euo pipefail\n" + code]
    else:
        pytest.fail(f"{doc}:{line}: a ```{lang} block: use python or sh, or mark it "
                    "<!-- skip-test: why -->")
    done = subprocess.run(cmd, cwd=workdir, env=environment(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{doc}:{line} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_docs_skip_only_a_few_blocks():
    skipped = [(doc, line) for doc in DOCS for line, *_, s in code_blocks(ROOT / doc) if s]
    assert len(skipped) <= 4, skipped


def test_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) < 200  # a front page


def test_readme_claim_families_match_the_declarations():
    """Each row of the README's family table (first cell: the backticked id prefixes) holds the
    claim and status counts of those prefixes as the claims declare them (``expected_status``,
    the quick profile; the committed baseline holds the same, test_baseline.py)."""
    from resharpen.claims import all_claims

    declared = {c.id: c.expected_status for c in all_claims()}
    counts = Counter()
    for claim_id, status in declared.items():
        counts[claim_id.split(".")[0], status] += 1
    text = (ROOT / "README.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| family |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = [line for line in text.splitlines() if re.match(r"\| `[a-z]+\.`", line)]
    covered = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        prefixes = re.findall(r"`([a-z]+)\.`", cells[0])
        covered |= set(prefixes)
        for status in ("PASS", "FAIL", "INCONCLUSIVE"):
            want = sum(counts[p, status] for p in prefixes)
            assert int(cells[columns.index(status)]) == want, (row, status, want)
        total = sum(n for (p, _), n in counts.items() if p in prefixes)
        assert int(cells[columns.index("claims")]) == total, (row, total)
    assert covered == {p for p, _ in counts}, "every family of claims has a row"
    assert f"{len(declared)} claims" in text
