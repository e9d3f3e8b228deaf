"""Numbers and statuses in the docs that come from the records, checked against them.

* The mutation test's plain rate and score: every doc that quotes them holds the sentence of
  ``mutation.record_score_text`` (computed from experiments/configs/ledger/mutation.json) between
  the markers below; so do the record's counts of claims by verdict (:func:`claims_text`) and its
  per-operator table (:func:`operators_table`). ``python tests/core/test_docs_from_records.py
  --write`` rewrites those passages after the record changes.
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

import json
import re
from collections import Counter
from pathlib import Path

from resharpen import verdicts
from resharpen.experiments.ledger import baseline, mutation

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SCORE_START = "<!-- mutation score: python -m resharpen.experiments.ledger.mutation -->"
SCORE_END = "<!-- end of the mutation score -->"
CLAIMS_START = "<!-- mutation claims: python tests/core/test_docs_from_records.py --write -->"
CLAIMS_END = "<!-- end of the mutation claims -->"
OPERATORS_START = "<!-- mutation operators: python tests/core/test_docs_from_records.py --write -->"
OPERATORS_END = "<!-- end of the mutation operators -->"
QUICK_TABLE = "<!-- quick column: checked against experiments/configs/ledger/quick.json -->"
FULL_TABLE = "<!-- full column: checked against results/full/ledger.json -->"
COLUMN = {QUICK_TABLE: ("quick", "the baseline"), FULL_TABLE: ("full", "the full record")}
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "not run")


def _fast_and_slow() -> tuple[list[str], list[str]]:
    from resharpen.claims import all_claims

    claims = all_claims()
    return ([c.id for c in claims if c.cost == "fast"], [c.id for c in claims if c.cost != "fast"])


def score_text() -> str:
    return mutation.record_score_text(mutation.read_record(), _fast_and_slow()[0])


def claims_text() -> str:
    """The record's claims by verdict, and its pairs killed only by an exception."""
    record = mutation.read_record()
    fast, slow = _fast_and_slow()
    verdict = Counter(record[i]["verdict"] for i in fast)
    pairs = {i: list(record[i].get("functions", {}).values()) for i in fast}
    by_exception = sum(record[i]["verdict"] == "killed"
                       and not any(p["verdict"] == "killed" for p in pairs[i]) for i in fast)
    skipped = sum(record[i]["verdict"] == "skipped" for i in slow)
    exception_pairs = [p for i in fast for p in pairs[i]
                       if p["verdict"] == "killed by an exception"]
    equivalent = sum(bool(p.get("equivalent")) for p in exception_pairs)
    return (f"Of the {len(fast)} fast claims, {verdict['killed']} are killed ({by_exception} of "
            f"them only by an exception), {verdict['survives']} survive and "
            f"{verdict['untested']} are untested; of the {len(slow)} slow claims, {skipped} are "
            f"skipped by their declared cost class and {len(slow) - skipped} keep entries from a "
            f"run of every operator (`--costs all`). Of the {len(exception_pairs)} pairs of the "
            f"fast claims killed only by an exception, {equivalent} are flagged equivalent.")


def operators_table() -> str:
    """The record's ``per_operator`` counts as a Markdown table."""
    counts = json.loads(Path(mutation.RECORD).read_text())["per_operator"]
    return "\n".join(["| operator | perturbed | killed | by an exception |", "|---|---|---|---|"]
                     + [f"| `{op}` | {c['perturbed']} | {c['killed']} | {c['by an exception']} |"
                        for op, c in counts.items()])


PASSAGES = {SCORE_START: (SCORE_END, score_text), CLAIMS_START: (CLAIMS_END, claims_text),
            OPERATORS_START: (OPERATORS_END, operators_table)}


def passages(text: str, start: str = SCORE_START) -> list[str]:
    """The text between each pair of ``start`` and its end marker."""
    end = PASSAGES[start][0]
    return [part.split(end, 1)[0].strip() for part in text.split(start)[1:]]


def score_passages(text: str) -> list[str]:
    """The text between each pair of score markers."""
    return passages(text, SCORE_START)


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


def test_every_quoted_mutation_count_and_table_is_the_records():
    for start in (CLAIMS_START, OPERATORS_START):
        text = " ".join(PASSAGES[start][1]().split())
        quoted = {doc.name: passages(doc.read_text(), start) for doc in DOCS}
        assert quoted["ledger.md"], f"docs/ledger.md lacks {start}"
        for name, found in quoted.items():
            for passage in found:
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
                         "the docs' mutation passages from the record)")
    texts = {start: make() for start, (end, make) in PASSAGES.items()}
    for doc in DOCS:
        old = new = doc.read_text()
        for start, (end, make) in PASSAGES.items():
            if start not in new:
                continue
            head, *parts = new.split(start)
            new = head + "".join(f"{start}\n{texts[start]}\n{end}{part.split(end, 1)[1]}"
                                 for part in parts)
        if new != old:
            doc.write_text(new)
            print(f"wrote {doc}")
