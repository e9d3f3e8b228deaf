"""The per-seed table of the 6 x 6 Othello study in docs/othello_search.md ("The study: every
seed") is the archived study's (results/full/sweeps/othello: each run's summary, as
`resharpen archive pack` kept it), row for row. It is written, not typed:

    python tests/languages/test_othello_study_table.py --write

rewrites the table between its markers from the archive (`python -m resharpen.regenerate` runs
it too)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "othello_search.md"
ARCHIVE = ROOT / "results" / "full" / "sweeps" / "othello"
START = "<!-- othello study table: python tests/languages/test_othello_study_table.py --write -->"
END = "<!-- end of the othello study table -->"
HEADER = ("| seed | raw fit step | EMA fit step | raw ID invalid / TV | EMA ID invalid / TV | "
          "raw OOD invalid | EMA OOD invalid | EMA − raw | BEMA at the cap: ID / OOD invalid |\n"
          "|---|---|---|---|---|---|---|---|---|")


def _step(step) -> str:
    return "not reached" if step is None else str(step)


def table(archive: Path = ARCHIVE) -> str:
    """The Markdown table, one row per archived run (by seed): the raw and EMA weights' fit steps
    (the first record step at ID illegal-move mass <= the study's fit; EMA kept at its own), their
    ID invalid mass and total variation, their OOD invalid mass (moves L_train+1..32) and its
    paired difference, and the BEMA weights as they ended (they never reached the fit in these
    runs), followed by the number of runs."""
    from resharpen.experiments.training.sweep import load_runs

    runs = sorted(load_runs(archive), key=lambda run: run["summary"]["seed"])
    lines = [HEADER]
    for run in runs:
        s = run["summary"]
        raw, ema, bema = (s["by_weights"][w] for w in ("raw", "ema", "bema"))
        steps = s["fit_steps"]
        lines.append(
            f"| {s['seed']} | {_step(steps['raw'])} | {_step(steps['ema'])} | "
            f"{raw['id_invalid_mass']:.4f} / {raw['id_tv']:.3f} | "
            f"{ema['id_invalid_mass']:.4f} / {ema['id_tv']:.3f} | "
            f"{raw['ood_invalid_mass']:.4f} | {ema['ood_invalid_mass']:.4f} | "
            f"{ema['ood_invalid_mass'] - raw['ood_invalid_mass']:+.4f} | "
            + ("at the fit, step " + str(steps["bema"]) + ": " if steps["bema"] is not None
               else "")
            + f"{bema['id_invalid_mass']:.4f} / {bema['ood_invalid_mass']:.4f} |")
    from resharpen.experiments.languages.grid import GRID_DIR, load_grid

    planned = len(load_grid(GRID_DIR / "othello.toml", "full")["configs"])
    lines.append("")
    lines.append(f"{len(runs)} of the study's {planned} runs archived.")
    return "\n".join(lines)


def _section(text: str) -> tuple[int, int]:
    start = text.index(START) + len(START)
    return start, text.index(END, start)


def test_the_docs_othello_study_table_is_the_archives():
    text = DOC.read_text()
    start, end = _section(text)
    assert text[start:end].strip() == table().strip(), (
        "docs/othello_search.md's study table is not the archive's: run "
        "`python tests/languages/test_othello_study_table.py --write`")


def write() -> Path:
    text = DOC.read_text()
    start, end = _section(text)
    DOC.write_text(text[:start] + "\n" + table() + "\n" + text[end:])
    return DOC


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/languages/test_othello_study_table.py --write")
    print(f"wrote {write()}")
