"""The two tables of the full language grid in docs/task_training.md, the Post-Norm comparisons
and the EMA/BEMA comparisons, are the archived grid's (results/full/sweeps/langs), cell for cell:
each cell is a test of the claims that read those runs, made by the claims' own code
(``claims_train.family_tests``: the same runs, pairs and Holm family as the records; while the
grid is unfinished, the EMA/BEMA table is an interim look at the archived runs, which the claims
themselves do not decide on). They are written, not typed:

    python tests/languages/test_grid_tables.py --write

rewrites both between their markers from the archive (`python -m resharpen.regenerate` runs it
too)."""
from __future__ import annotations

import functools
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "task_training.md"
ARCHIVE = ROOT / "results" / "full" / "sweeps" / "langs"
COMMAND = "python tests/languages/test_grid_tables.py --write"
TABLES = ("placements", "averages")


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of table ``name`` in the doc."""
    return (f"<!-- full grid {name} table: {COMMAND} -->",
            f"<!-- end of the full grid {name} table -->")


def cell(test) -> str:
    """A test's cell: mean paired difference, n and Holm-adjusted p (the opposite's too when it
    is shown), or why it was not tested."""
    result = test.result
    if result.n == 0:
        return "no pair at the fit"
    if result.inconclusive:
        return f"{result.mean_diff:+.3g} (n = {result.n}, not tested)"
    text = f"{result.mean_diff:+.3g} (n = {result.n}, Holm p {test.adjusted_p:.2g}"
    from resharpen.experiments.ledger.stats import ALPHA

    if test.adjusted_opposite < ALPHA:
        text += f"; the opposite shown, Holm p {test.adjusted_opposite:.2g}"
    return text + ")"


def _rows(archive: Path) -> list[dict]:
    """The table rows of the archived runs that the full grid plans (as the claims read them,
    ``claims_train.grid_rows``)."""
    from resharpen.experiments.languages.grid import grid_file, load_grid, table_rows

    planned = {c["name"] for c in load_grid(grid_file("full"), "full")["configs"]}
    return [r for r in table_rows(archive) if r["run"] in planned]


def _family_size(tests: dict) -> int:
    return sum(len(claim_tests) for claim_tests in tests.values())


def placements_table(rows: list[dict]) -> tuple[str, int]:
    """Per task, each Post-Norm placement against each control (raw weights, paired by seed at
    matched fit), from the rows of the four schemes the placement claims read; a task where a
    control reached the fit in fewer than 5 runs is not compared against it. With the number of
    tests in the claims' Holm family."""
    from resharpen.experiments.languages import claims_train as ct
    from resharpen.experiments.languages.postnorm_controls import (
        CONTROLS, POST_NORMS, fit_count, left_out_tasks, tasks_of)

    mine = [r for r in rows if r["norm"] in ct.QUESTION_NORMS["placements"]]
    tests = ct.family_tests("placements", lambda claim_id: mine)
    by_label = {t.label: t for claim_tests in tests.values() for t in claim_tests}
    lines = ["| task | " + " | ".join(f"{norm} − {control}" for control in CONTROLS
                                       for norm in POST_NORMS) + " |",
             "|---" * (1 + len(CONTROLS) * len(POST_NORMS)) + "|"]
    for task in tasks_of(mine):
        cells = []
        for control in CONTROLS:
            if task in left_out_tasks(mine, control):
                fitted, runs = fit_count(mine, control, task)
                cells += [f"not compared ({control} at the fit in {fitted} of {runs} runs)"
                          ] * len(POST_NORMS)
                continue
            cells += [cell(by_label[f"{task}: {norm} - {control}"]) for norm in POST_NORMS]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines), _family_size(tests)


def averages_table(rows: list[dict]) -> tuple[str, int]:
    """Per task, EMA and BEMA weights against the raw weights of the same runs (every scheme and
    seed whose raw weights learned the task and whose raw and averaged weights both reached the
    run's fit), with the number of tests in the claims' Holm family."""
    from resharpen.experiments.languages import claims_train as ct
    from resharpen.experiments.languages.postnorm_controls import tasks_of

    tests = ct.family_tests("averages", lambda claim_id: rows)
    by_label = {t.label: t for claim_tests in tests.values() for t in claim_tests}
    lines = ["| task | EMA − raw | BEMA − raw |", "|---|---|---|"]
    for task in tasks_of(rows):
        cells = [cell(by_label[f"{task}: {weights} - raw"]) for weights in ("ema", "bema")]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines), _family_size(tests)


@functools.cache
def tables(archive: Path = ARCHIVE) -> dict[str, str]:
    """name -> the Markdown table the archive gives, with a footer naming the runs it read per
    scheme and the size of the Holm family its p-values are adjusted over."""
    from resharpen.experiments.languages.claims_train import QUESTION_NORMS
    from resharpen.experiments.languages.grid import grid_file, load_grid

    rows = _rows(archive)
    planned = Counter(c["model"]["norm"] for c in load_grid(grid_file("full"), "full")["configs"])
    norms = QUESTION_NORMS["placements"]
    placements, placement_tests = placements_table(rows)
    averages, average_tests = averages_table(rows)

    def footer(read: tuple[str, ...], tests: int) -> str:
        runs = Counter(r["norm"] for r in rows if r["weights"] == "raw")
        counts = ", ".join(f"{norm} {runs[norm]} of {planned[norm]}" for norm in read)
        return (f"\n\nArchived runs read, per scheme: {counts}. Holm's correction is over the "
                f"{tests} tests of the claims that read them.")

    return {"placements": placements + footer(norms, placement_tests),
            "averages": averages + footer(tuple(planned), average_tests)}


def _section(text: str, name: str) -> tuple[int, int]:
    start_marker, end_marker = markers(name)
    start = text.index(start_marker) + len(start_marker)
    return start, text.index(end_marker, start)


@pytest.mark.parametrize("name", TABLES)
def test_the_docs_grid_table_is_the_archives(name):
    text = DOC.read_text()
    start, end = _section(text, name)
    assert text[start:end].strip() == tables()[name].strip(), (
        f"docs/task_training.md's full grid {name} table is not the archive's: run `{COMMAND}`")


def write() -> Path:
    made = tables()
    text = DOC.read_text()
    for name in TABLES:
        start, end = _section(text, name)
        text = text[:start] + "\n" + made[name] + "\n" + text[end:]
    DOC.write_text(text)
    return DOC


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(f"usage: {COMMAND}")
    print(f"wrote {write()}")
