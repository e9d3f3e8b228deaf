"""Numbers and statuses in the docs that come from the records, checked against them.

* The mutation test's plain rate and score: every doc that quotes them holds the sentence of
  ``mutation.record_score_text`` (computed from experiments/configs/ledger/mutation.json) between
  the markers below; ``python tests/core/test_docs_from_records.py --write`` rewrites those
  passages after the record changes.
* The quick statuses of claims in the docs' tables: a table preceded by the quick marker below
  has a column whose header starts with "quick"; in each row whose first cell names a claim
  (`` `id` ``), that cell starts with the claim's status in the committed quick baseline
  (experiments/configs/ledger/quick.json).
* The full-size statuses likewise: a table preceded by the full marker has a column whose header
  starts with "full", and each of its cells starts with the claim's status in the archived full
  ledger (results/full/ledger.json), or with "not run" for a claim the archive does not hold.
  A table may carry both markers, one line each, above it.
"""
from __future__ import annotations

import re
from pathlib import Path

from resharpen import verdicts
from resharpen.experiments.ledger import baseline, mutation

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SCORE_START = "<!-- mutation score: python -m resharpen.experiments.ledger.mutation -->"
SCORE_END = "<!-- end of the mutation score -->"
QUICK_TABLE = "<!-- quick column: checked against experiments/configs/ledger/quick.json -->"
FULL_TABLE = "<!-- full column: checked against results/full/ledger.json -->"
COLUMN = {QUICK_TABLE: ("quick", "the baseline"), FULL_TABLE: ("full", "the full record")}
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "not run")


def score_text() -> str:
    from resharpen.claims import all_claims

    return mutation.record_score_text(mutation.read_record(),
                                      [c.id for c in all_claims() if c.cost == "fast"])


def score_passages(text: str) -> list[str]:
    """The text between each pair of score markers."""
    return [part.split(SCORE_END, 1)[0].strip() for part in text.split(SCORE_START)[1:]]


def marked_tables(text: str, marker: str = QUICK_TABLE) -> list[list[list[str]]]:
    """The rows (cells stripped) of each Markdown table that follows ``marker`` (other markers
    between it and the table skipped)."""
    tables = []
    for part in text.split(marker)[1:]:
        rows = []
        lines = part.lstrip("\n").splitlines()
        while lines and lines[0].startswith("<!--"):
            lines.pop(0)
        for line in lines:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        tables.append(rows)
    return tables


def status_mismatches(text: str, statuses: dict[str, dict], marker: str = QUICK_TABLE) -> list[str]:
    """One line per row of a table marked with ``marker`` whose quick (or full) cell does not
    start with the record's status of its claim ("not run" for a claim the record lacks), or
    names no status."""
    prefix, source = COLUMN[marker]
    wrong = []
    for rows in marked_tables(text, marker):
        header = rows[0]
        column = next(i for i, h in enumerate(header) if h.lower().startswith(prefix))
        for row in rows[1:]:
            found = re.match(r"`([^`]+)`", row[0])
            if not found:
                continue
            claim_id, cell = found.group(1), row[column]
            word = next((s for s in STATUSES if cell.startswith(s)), None)
            expected = statuses.get(claim_id, {}).get("status", "not run")
            if word != expected:
                wrong.append(f"{claim_id}: the doc says {word or cell[:30]!r}, {source} "
                             f"{expected}")
    return wrong


def quick_status_mismatches(text: str, statuses: dict[str, dict]) -> list[str]:
    return status_mismatches(text, statuses, QUICK_TABLE)


def test_every_quoted_mutation_score_is_the_records():
    text = score_text()
    quoted = {doc.name: score_passages(doc.read_text()) for doc in DOCS}
    assert quoted["ledger.md"] and quoted["results.md"], "the score passages are missing"
    for name, passages in quoted.items():
        for passage in passages:
            assert " ".join(passage.split()) == text, (name, passage)


def test_every_marked_quick_column_is_the_baselines():
    statuses = baseline.read(baseline.default_path("quick"), "quick")
    marked = [doc for doc in DOCS if QUICK_TABLE in doc.read_text()]
    assert any(doc.name == "training.md" for doc in marked)
    for doc in marked:
        wrong = quick_status_mismatches(doc.read_text(), statuses)
        assert not wrong, f"{doc.name}: " + "; ".join(wrong)


def test_every_marked_full_column_is_the_archives():
    statuses = verdicts.read_records(verdicts.FULL_LEDGER)
    marked = [doc for doc in DOCS if FULL_TABLE in doc.read_text()]
    assert any(doc.name == "training.md" for doc in marked)
    for doc in marked:
        wrong = status_mismatches(doc.read_text(), statuses, FULL_TABLE)
        assert not wrong, f"{doc.name}: " + "; ".join(wrong)


def test_a_wrong_full_status_is_caught():
    doc = (f"{FULL_TABLE}\n{QUICK_TABLE}\n| claim | full | quick |\n|---|---|---|\n"
           "| `a.b` | PASS | FAIL |\n| `c.d` | not run | PASS |\n| `e.f` | FAIL | PASS |\n")
    full = {"a.b": {"status": "PASS"}, "e.f": {"status": "INCONCLUSIVE"}}
    assert status_mismatches(doc, full, FULL_TABLE) == [
        "e.f: the doc says 'FAIL', the full record INCONCLUSIVE"]
    quick = {"a.b": {"status": "FAIL"}, "c.d": {"status": "PASS"}, "e.f": {"status": "FAIL"}}
    assert quick_status_mismatches(doc, quick) == [
        "e.f: the doc says 'PASS', the baseline FAIL"]


def test_a_wrong_quick_status_is_caught():
    doc = (f"{QUICK_TABLE}\n| claim | full | quick (v = 16) |\n|---|---|---|\n"
           "| `a.b` | PASS: x | FAIL: y |\n| `c.d` | FAIL | INCONCLUSIVE \\| z |\n")
    statuses = {"a.b": {"status": "INCONCLUSIVE"}, "c.d": {"status": "INCONCLUSIVE"}}
    assert quick_status_mismatches(doc, statuses) == [
        "a.b: the doc says 'FAIL', the baseline INCONCLUSIVE"]


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/core/test_docs_from_records.py --write  (rewrites "
                         "the docs' mutation-score passages from the record)")
    text = score_text()
    for doc in DOCS:
        old = doc.read_text()
        if SCORE_START not in old:
            continue
        head, *parts = old.split(SCORE_START)
        new = head + "".join(f"{SCORE_START}\n{text}\n{SCORE_END}{part.split(SCORE_END, 1)[1]}"
                             for part in parts)
        doc.write_text(new)
        print(f"wrote {doc}")
