"""Numbers and statuses in the docs that come from the records, checked against them.

* The mutation test's plain rate and score: every doc that quotes them holds the sentence of
  ``mutation_record.record_score_text`` (computed from experiments/configs/ledger/mutation.json) between
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
* The numbers in every claim's row: in each table row of the docs whose first cell names a
  declared claim (`` `id` ``), every number in the other cells (a measured value, n, p, a
  setting) is one that the claim's quick or full record (measured, expected, detail) or its
  declaration (source, statement, tolerance, origin) holds, to the precision it is written with:
  a number written to its last digit matches a record value that rounds to it there (0.47
  matches 0.469, 2e-8 matches 1.9e-08, 20 matches 20), a percentage also its fraction (0.26%
  matches 0.0026); signs are not compared, since the docs say "falls by" or write the
  difference the other way round (:func:`held`, the one matcher of every check here). A table
  whose numbers are another command's output opts out through the marker ``<!-- numbers from:
  <the command> -->`` among the comment lines right above it, naming that command.
* Every other mention of a claim's result: a sentence of the docs' prose, or a table row, that
  names a declared claim (its full id) together with a status word (PASS, FAIL, INCONCLUSIVE) or
  a p or an n (:func:`mentions`). Each status word must stand next to the claims it is about
  (`` `id` FAIL``, ``(`id`, INCONCLUSIVE)``, `` `a` and `b` PASS``, or the start of a cell in
  a row that names the claim first), and be that claim's status in the quick record or the full
  one: the one the sentence names ("quick"; "full size", "full profile", "at full"), the one of
  the cell's column, or else either. A status word about no claim it stands next to fails too
  (write the claim's id next to it, or the verb in lower case where no claim's status is
  meant). Every number of a mention with a p or an n (outside inline code, a link's target,
  references and the tables that opt out, as below) must be one that the records or
  declarations of the claims it names hold, as in the rows above. A table row names its claim
  by the full id (a row that names it by the end of its id only would escape these checks).
* The measured values quoted in prose: in every other sentence, or table row but a claim's own,
  that names declared claims by their full ids, every decimal number (written with a decimal
  point or an exponent: 0.47, 2e-8, 0.26%) must be one that the records or declarations of the
  claims it names hold, as above (:func:`quoted_numbers`). A sentence names the claims it is
  about, so a value of another claim needs that claim's id in the sentence. Not checked, each
  for its reason (:data:`NOT_MEASURED`): integers (sizes, steps, seeds, lengths, counts: mostly
  settings); inline code and a link's target (a command, a config key, a file name); the
  numbers of a theorem, section, equation or figure and arXiv ids (references, not values);
  tables opted out by a ``numbers from`` marker. Sentences end at ``.``, ``!`` or ``?`` before
  a capital or markup, or right after ``).`` (a sentence may start with a lower-case scheme
  name: "none's margins ...").
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from resharpen import verdicts
from resharpen.papers import PREFIX_PAPERS
from resharpen.experiments.ledger import baseline, mutation_record

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SCORE_START = "<!-- mutation score: python -m resharpen.experiments.ledger.mutation_record -->"
SCORE_END = "<!-- end of the mutation score -->"
CLAIMS_START = "<!-- mutation claims: python tests/core/test_docs_from_records.py --write -->"
CLAIMS_END = "<!-- end of the mutation claims -->"
OPERATORS_START = "<!-- mutation operators: python tests/core/test_docs_from_records.py --write -->"
OPERATORS_END = "<!-- end of the mutation operators -->"
QUICK_TABLE = "<!-- quick column: checked against experiments/configs/ledger/quick.json -->"
FULL_TABLE = "<!-- full column: checked against results/full/ledger.json -->"
COLUMN = {QUICK_TABLE: ("quick", "the baseline"), FULL_TABLE: ("full", "the full record")}
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE", "not run")
NUMBERS_FROM = "<!-- numbers from:"
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)(?:[eE]([-+]?\d+))?(?![\w.]*\d)"
                    r"(\s?%)?")


def _fast_and_slow() -> tuple[list[str], list[str]]:
    from resharpen.claims import all_claims

    claims = all_claims()
    return ([c.id for c in claims if c.cost == "fast"], [c.id for c in claims if c.cost != "fast"])


def score_text() -> str:
    return mutation_record.record_score_text(mutation_record.read_record(), _fast_and_slow()[0])


def claims_text() -> str:
    """The record's claims by verdict, and its pairs killed only by an exception."""
    record = mutation_record.read_record()
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
            f"them only by an exception), {verdict['survives']} "
            f"{'survives' if verdict['survives'] == 1 else 'survive'} and "
            f"{verdict['untested']} are untested; of the {len(slow)} slow claims, {skipped} are "
            f"skipped by their declared cost class and {len(slow) - skipped} keep entries from a "
            f"run of every operator (`--costs all`). Of the {len(exception_pairs)} pairs of the "
            f"fast claims killed only by an exception, {equivalent} are flagged equivalent.")


def operators_table() -> str:
    """The record's ``per_operator`` counts as a Markdown table."""
    counts = json.loads(Path(mutation_record.RECORD).read_text())["per_operator"]
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


def numbers(text: str) -> list[tuple[str, float, float]]:
    """Each number written in ``text``: its spelling (with its ``%``, if any), its magnitude
    and the half-width of the interval of values that round to it at its last written digit."""
    found = []
    for match in NUMBER.finditer(text.replace("\u2212", "-")):
        mantissa, exponent = match.group(1), int(match.group(2) or 0)
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        spelling = match.group(0).replace(" ", "")
        found.append((spelling, float(spelling.rstrip("%")),
                      0.5 * 10.0 ** (exponent - decimals)))
    return found


def held(number: tuple[str, float, float], pool: list[float]) -> bool:
    """Whether a number of the docs (:func:`numbers`) is one of ``pool``'s record values to the
    precision it is written with, sign aside; a percentage is also held by its fraction."""
    spelling, value, half = number
    readings = [(value, half)] + ([(value / 100, half / 100)] if spelling.endswith("%") else [])
    return any(abs(value - v) <= half * (1 + 1e-9) for value, half in readings for v in pool)


def decimal(spelling: str) -> bool:
    """Whether a number is written with a decimal point or an exponent (a measured value, as
    prose writes them; an integer is mostly a setting)."""
    return bool(re.search(r"[.eE]", spelling))


def record_numbers(claim_id: str, records: list[dict[str, dict]],
                   declarations: dict) -> list[float]:
    """The magnitudes of the numbers in a claim's records and declaration."""
    texts = [str(record[claim_id].get(key, "")) for record in records if claim_id in record
             for key in ("measured", "expected", "detail")]
    texts += [str(declarations.get(claim_id, {}).get(key, ""))
              for key in ("source", "statement", "tolerance", "origin")]
    return [value for text in texts for _, value, _ in numbers(text)]


CLAIM_ID = re.compile(r"(?<![\w.])(?:%s)\.[\w.]*\w" % "|".join(
    sorted(PREFIX_PAPERS, key=len, reverse=True)))
"""A claim's id: one of the papers' id prefixes, a dot, the rest (declared ids only count)."""
STATUS_WORD = re.compile(r"(?<![\w-])(PASS|FAIL|INCONCLUSIVE)(?:es|s|ed)?(?![\w-])")
P_OR_N = re.compile(r"(?<![\w.])[pn]\s*(?:=|<|<=|\u2264)?\s*[-\u2212]?\.?\d")
NEXT_TO = re.compile(r"(?:[\s`*|,:()]|\b(?:is|are|was|were|so|and|or|each|both|stays|remains|"
                     r"quick|full|size|full-size|at)\b)*")
"""What may stand between a claim's id and its status word (markup, "is", "and", a profile)."""
FULL_WORDS = re.compile(r"\bfull(?:[- ]size| profile)\b|--profile full|\bat full\b", re.I)
QUICK_WORDS = re.compile(r"\bquick\b", re.I)
CODE_OR_TARGET = re.compile(r"`[^`]*`|\]\([^)]*\)")
REFERENCE = re.compile(
    r"\b(?:Theorems?|Thms?|Lemmas?|Propositions?|Props?|Corollar(?:y|ies)|Definitions?|"
    r"Sections?|Secs?|Appendix|App|Assumptions?|Remarks?|Eqs?|eqs?|Equations?|equations?|"
    r"Figures?|Figs?|Tables?)\.?\s*\(?[A-Z]?\d+(?:\.\d+)*"
    r"(?:\)?(?:\s*(?:,|and|or|-|\u2013)\s*)\(?[A-Z]?\d+(?:\.\d+)*)*|\u00a7\s*\d+(?:\.\d+)*"
    r"|\b\d{4}\.\d{4,5}(?:v\d+)?\b")
"""A reference: a theorem's, section's, equation's or figure's number, an arXiv id."""
NOT_MEASURED = {
    "an integer": "sizes, steps, seeds, lengths and counts, mostly settings (a sentence with a "
                  "p or an n has each of its integers checked too)",
    "inline code, a link's target": "a command, a config key, a file name: "
                                    ":data:`CODE_OR_TARGET`",
    "a reference": "a theorem's, section's, equation's or figure's number, an arXiv id: "
                   ":data:`REFERENCE`",
    "a table opted out": "another command's output, named by its ``numbers from`` marker",
}
"""What the check of the numbers quoted in prose skips, and why."""


def units(text: str) -> list[dict]:
    """The sentences of ``text``'s prose (paragraphs and list items joined over their lines,
    split after ``.``, ``!`` or ``?`` before a capital or markup, and after ``).``) and its
    table rows but the header (the row above a ``|---|`` line), outside code blocks and
    comments: ``{"text", "header", "cells", "opted_out"}`` (the last three for rows;
    ``opted_out`` when a ``numbers from`` marker is among the comment lines right above the
    table)."""
    out: list[dict] = []
    paragraph: list[str] = []
    header, opted_out, comments = None, False, []

    def flush():
        joined = " ".join(paragraph)
        out.extend({"text": sentence} for sentence in
                   re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[])|(?<=\)[.!?])\s+", joined)
                   if sentence)
        paragraph.clear()

    lines = re.sub(r"```.*?```", "", text, flags=re.S).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("<!--"):
            comments.append(line)
            continue
        if line.startswith("|"):
            flush()
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if header is None:
                opted_out = any(c.startswith(NUMBERS_FROM) for c in comments)
                below = lines[i + 1] if i + 1 < len(lines) else ""
                header = cells if re.fullmatch(r"\|[-:| ]*\|\s*", below) else []
                if header:
                    comments = []
                    continue
            if not all(set(c) <= set("-: ") for c in cells):
                out.append({"text": line, "header": header, "cells": cells,
                            "opted_out": opted_out})
            comments = []
            continue
        header, comments = None, []
        if not line.strip() or re.match(r"\s*(?:[-*]|\d+\.|#+)\s", line):
            flush()
        if line.strip():
            paragraph.append(line.strip())
    flush()
    return out


def row_claim(cells: list[str], claim_ids) -> str | None:
    """The claim a table row is about: the declared id its first cell starts with (`` `id` ``)."""
    found = re.match(r"\s*\**`([^`]+)`", cells[0]) if cells else None
    return found.group(1) if found and found.group(1) in claim_ids else None


def claim_rows(text: str, claim_ids) -> list[tuple[str, str]]:
    """(claim id, the row's other cells) for each table row whose first cell names a claim,
    outside the tables opted out by a ``numbers from`` marker."""
    return [(row_claim(unit["cells"], claim_ids), " | ".join(unit["cells"][1:]))
            for unit in units(text) if "cells" in unit and not unit["opted_out"]
            and row_claim(unit["cells"], claim_ids)]


def unmatched_numbers(text: str, records: list[dict[str, dict]], declarations: dict) -> list[str]:
    """One line per number in a claim's row that no record or declaration of the claim holds."""
    claim_ids = set(declarations).union(*records)
    wrong = []
    for claim_id, cells in claim_rows(text, claim_ids):
        pool = record_numbers(claim_id, records, declarations)
        wrong += [f"{claim_id}: {number[0]}" for number in numbers(cells)
                  if not held(number, pool)]
    return wrong


def _profile(words: str) -> str | None:
    """"quick" or "full" when ``words`` name one profile only, else None."""
    full, quick = bool(FULL_WORDS.search(words)), bool(QUICK_WORDS.search(words))
    return "full" if full and not quick else "quick" if quick and not full else None


def _next_to(text: str, claim_ids) -> list[tuple[list[str], str]]:
    """(the claims it stands next to, possibly none; the status) for each status word of
    ``text``: the run of ids right before it (or else right after it), each separated from the
    next by :data:`NEXT_TO` only."""
    ids = [m for m in CLAIM_ID.finditer(text) if m.group(0) in claim_ids]
    found = []
    for word in STATUS_WORD.finditer(text):
        before = [m for m in ids if m.end() <= word.start()]
        named, edge = [], word.start()
        for m in reversed(before):
            if not NEXT_TO.fullmatch(text[m.end():edge]):
                break
            named.insert(0, m.group(0))
            edge = m.start()
        if not named:
            after = [m for m in ids if m.start() >= word.end()]
            if after and NEXT_TO.fullmatch(text[word.end():after[0].start()]):
                named = [after[0].group(0)]
        found.append((named, word.group(1)))
    return found


def status_words(unit: dict, claim_ids) -> list[tuple[list[str], str, str | None]]:
    """(claims, status, profile or None) for each status word of a unit: in a row whose first
    cell names claims, a cell that starts with a status word is theirs, in its column's profile;
    any other status word is about the claims it stands next to, in the profile its sentence
    (or column) names."""
    if "cells" not in unit:
        return [(named, status, _profile(unit["text"]))
                for named, status in _next_to(unit["text"], claim_ids)]
    first = [m.group(0) for m in CLAIM_ID.finditer(unit["cells"][0]) if m.group(0) in claim_ids]
    found = [(named, status, None) for named, status in _next_to(unit["cells"][0], claim_ids)]
    heads = unit["header"] or [""] * len(unit["cells"])
    for head, cell in zip(heads[1:], unit["cells"][1:]):
        profile = _profile(head) or ("full" if head.lower().startswith("full") else None)
        words = _next_to(cell, claim_ids)
        if first and words and STATUS_WORD.match(cell.lstrip("*` ")):
            found.append((first, words[0][1], profile))
            words = words[1:]
        found += [(named, status, profile) for named, status in words]
    return found


def quoted_numbers(unit: dict, claim_ids) -> list[tuple[str, float, float]]:
    """The numbers of a sentence or row that its claims' records must hold: every one in a unit
    with a p or an n, else the decimal ones (:func:`decimal`); none in a claim's own row
    (:func:`unmatched_numbers` checks those) or a table opted out. Skipped: inline code, a
    link's target, references (:data:`NOT_MEASURED`)."""
    if unit.get("opted_out") or ("cells" in unit and row_claim(unit["cells"], claim_ids)):
        return []
    body = " | ".join(unit["cells"][1:]) if "cells" in unit else unit["text"]
    every = bool(P_OR_N.search(unit["text"]))
    return [number for number in numbers(REFERENCE.sub(" ", CODE_OR_TARGET.sub(" ", body)))
            if every or decimal(number[0])]


def mentions(text: str, records: list[dict[str, dict]], declarations: dict
             ) -> list[tuple[str, list[str]]]:
    """(the unit, what is wrong with it) for each sentence or row of ``text`` that names a
    declared claim with a status word, a p, an n or a decimal number (:func:`quoted_numbers`);
    ``records`` are the quick and the full."""
    claim_ids = set(declarations)
    quick, full = records
    found = []
    for unit in units(text):
        named = [m.group(0) for m in CLAIM_ID.finditer(unit["text"]) if m.group(0) in claim_ids]
        words = status_words(unit, claim_ids) if named else []
        quoted = quoted_numbers(unit, claim_ids) if named else []
        if not named or not (words or quoted or P_OR_N.search(unit["text"])):
            continue
        wrong = []
        for claims, status, profile in words:
            if not claims:
                wrong.append(f"{status} next to no claim")
            for claim_id in claims:
                recorded = {"quick": quick.get(claim_id, {}).get("status"),
                            "full": full.get(claim_id, {}).get("status")}
                allowed = {recorded[profile]} if profile else set(recorded.values())
                if status not in allowed:
                    wrong.append(f"{claim_id}: {status}" + (f" ({profile})" if profile else "")
                                 + f", the records quick {recorded['quick']}, full "
                                 f"{recorded['full'] or 'not run'}")
        pool = [v for claim_id in set(named)
                for v in record_numbers(claim_id, records, declarations)]
        wrong += [f"{number[0]} in no record of {', '.join(sorted(set(named)))}"
                  for number in quoted if not held(number, pool)]
        found.append((unit["text"], wrong))
    return found


def shortened_ids(text: str, claim_ids) -> list[str]:
    """The first cells of table rows that name a claim by the end of its id only (`` `loss_floor` ``
    for ``collapse.loss_floor``: the end of exactly one declared id, with a ``_`` or a ``.``),
    which the checks of a claim's row would not see."""
    found = []
    for line in text.splitlines():
        first = re.match(r"\|\s*`([^`]+)`", line)
        if not first or first.group(1) in claim_ids or not re.search(r"[_.]", first.group(1)):
            continue
        tail = "." + first.group(1).lstrip(".")
        if sum(claim_id.endswith(tail) for claim_id in claim_ids) == 1:
            found.append(first.group(1))
    return found


def _records_and_declarations():
    from resharpen.experiments.ledger.declarations import all_declarations

    return ([verdicts.read_records(verdicts.QUICK_LEDGER),
             verdicts.read_records(verdicts.FULL_LEDGER)], all_declarations())


def test_every_number_in_a_claims_row_is_in_its_record():
    records, declarations = _records_and_declarations()
    wrong = {doc.name: unmatched_numbers(doc.read_text(), records, declarations) for doc in DOCS}
    wrong = {name: found for name, found in wrong.items() if found}
    assert not wrong, "numbers the records do not hold: " + "; ".join(
        f"{name}: " + ", ".join(found) for name, found in wrong.items())


def test_every_mention_of_a_claims_result_is_its_records():
    records, declarations = _records_and_declarations()
    wrong = {doc.name: [(unit[:120], problems) for unit, problems in
                        mentions(doc.read_text(), records, declarations) if problems]
             for doc in DOCS}
    wrong = {name: found for name, found in wrong.items() if found}
    assert not wrong, "mentions the records do not hold: " + "; ".join(
        f"{name}: {unit!r}: {', '.join(problems)}" for name, found in wrong.items()
        for unit, problems in found)


def test_every_claims_row_names_it_by_its_full_id():
    _, declarations = _records_and_declarations()
    wrong = {doc.name: shortened_ids(doc.read_text(), declarations) for doc in DOCS}
    assert not any(wrong.values()), f"rows naming a claim by the end of its id: {wrong}"
    assert shortened_ids("| `loss_floor` | 1 |\n| `stack.x` | 2 |\n| `pre` | 3 |\n| `b.c` | 4 |",
                         {"collapse.loss_floor", "dyn.stack.x", "fit.stack.x", "sc.pre",
                          "fit.b.c"}) == ["loss_floor", "b.c"]


def test_a_wrong_mention_is_caught():
    records = [{"sc.b": {"status": "FAIL", "measured": "slope 0.47", "detail": "n = 8, p 0.004"},
                "fit.d": {"status": "PASS"}, "dyn.f": {"status": "INCONCLUSIVE"}},
               {"sc.b": {"status": "FAIL"}, "fit.d": {"status": "FAIL"}}]
    declarations = {"sc.b": {}, "fit.d": {}, "dyn.f": {}}
    doc = ("So `sc.b` FAILs (slope 0.47, n = 8, p 0.004), and `fit.d` is FAIL at full size.\n"
           "At full size `fit.d` PASS. `dyn.f` and `fit.d` PASS. Quick: `fit.d` PASS (n = 9).\n"
           "A biased sampler FAILs, says `dyn.f`. The `dyn.f` INCONCLUSIVE is known.\n\n"
           "| claim | full | quick |\n|---|---|---|\n| `fit.d` | FAIL | FAIL: x |\n"
           "| `dyn.f` | not run | INCONCLUSIVE, p 0.3 |\n\n"
           "<!-- numbers from: resharpen verify -->\n| x | y |\n|---|---|\n"
           "| the `dyn.f` row | INCONCLUSIVE at n = 3 |\n\n```\n`sc.b` PASS\n```\n")
    assert [problems for _, problems in mentions(doc, records, declarations)] == [
        [], ["fit.d: PASS (full), the records quick PASS, full FAIL"],
        ["dyn.f: PASS, the records quick INCONCLUSIVE, full not run"],
        ["9 in no record of fit.d"], ["FAIL next to no claim"], [],
        ["fit.d: FAIL (quick), the records quick PASS, full FAIL"], [], []]


def test_a_wrong_number_in_a_sentence_naming_a_claim_is_caught():
    records = [{"fit.x": {"status": "FAIL", "measured": "a = 1.211 [1.204, 1.218]",
                          "detail": "debiased 0.0026 (95% upper 0.0164)"}},
               {"sc.y": {"status": "PASS", "measured": "deviates by 2.933"}}]
    declarations = {"fit.x": {"tolerance": "|a - 1| < 0.1"}, "sc.y": {}, "dyn.z": {}}
    doc = ("`fit.x` measures a = 1.211 [1.204, 1.218] at v = 32, \u22121.2 rounded, within the "
           "margin 0.1 of 1; its distance is 0.26% (upper bound 1.64%).\n"
           "`fit.x` measures a = 1.221 at v = 32, 0.5% from C_n. By Theorem 4.2 of arXiv "
           "2510.08341, `fit.x` trains 1500 steps to a = 1.211 (`train.lr = 3e-3`, "
           "[verdicts/2510.08341.md](verdicts/2510.08341.md#fitx)).\n"
           "So `sc.y` deviates by 2.9, above `fit.x`'s 1.2 (`sc.y` and `fit.x`). none's margins "
           "fall by 0.47. `fit.x` deviates by 2.9.\n\n"
           "| what | value |\n|---|---|\n| the margin of `fit.x` | 1.3 at 1e-2 |\n\n"
           "<!-- numbers from: resharpen report out/x -->\n| what | value |\n|---|---|\n"
           "| the margin of `fit.x` | 1.3 |\n\n```\n`fit.x` measures 9.9\n```\n"
           "`dyn.z` is a claim with no record, quoted as 0.7.\n")
    assert [problems for _, problems in mentions(doc, records, declarations)] == [
        [], ["1.221 in no record of fit.x", "0.5% in no record of fit.x"], [], [],
        ["2.9 in no record of fit.x"], ["1.3 in no record of fit.x", "1e-2 in no record of fit.x"],
        ["0.7 in no record of dyn.z"]]


def test_the_prose_check_reads_the_docs_measured_values():
    """It sees the values the docs' prose quotes, and a wrong one planted in a real sentence."""
    records, declarations = _records_and_declarations()
    quoted = [number[0] for doc in DOCS for unit in units(doc.read_text())
              for number in quoted_numbers(unit, set(declarations))
              if any(m.group(0) in declarations for m in CLAIM_ID.finditer(unit["text"]))]
    assert len(quoted) > 50 and "1.211" in quoted, quoted
    text = (ROOT / "docs" / "training.md").read_text()
    sentence = "the exponent a = 1.211 [1.204, 1.218] at v = 32"
    assert sentence in text
    planted = text.replace(sentence, sentence.replace("1.211", "1.251"))
    assert [problems for _, problems in mentions(planted, records, declarations) if problems] \
        == [["1.251 in no record of fit.none.two_over_s"]]


def test_every_numbers_from_marker_names_a_command():
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            if line.startswith(NUMBERS_FROM):
                command = line[len(NUMBERS_FROM):].removesuffix("-->").strip()
                assert command.startswith(("resharpen ", "python ", "make ")), (doc.name, line)


def test_a_wrong_number_in_a_claims_row_is_caught():
    records = [{"a.b": {"measured": "slope 0.469, n = 20", "expected": "< 0",
                        "detail": "Holm p 1.9e-08"}},
               {"c.d": {"measured": "rho -0.71"}}]
    declarations = {"a.b": {"statement": "at k = 4"}, "c.d": {"tolerance": "abs 1e-12"},
                    "e.f": {}}
    doc = ("| claim | measured |\n|---|---|\n"
           "| `a.b` | FAIL: slope +0.47 (n = 20, k = 4, Holm p 2e-8) |\n"
           "| `c.d` | rho \u22120.710 within 1e-12 |\n"
           "| `e.f` | 0.3 |\n"
           "| `a.b` | slope 0.066, n = 21, p 2.0e-8 |\n"
           "\n<!-- numbers from: resharpen report out/x -->\n| claim | value |\n|---|---|\n"
           "| `e.f` | 0.3 |\n\n| `e.f` | 0.4 |\n")
    assert unmatched_numbers(doc, records, declarations) == [
        "e.f: 0.3", "a.b: 0.066", "a.b: 21", "a.b: 2.0e-8", "e.f: 0.4"]


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



DISAGREE_HEADING = "## Which findings disagree with the papers, and why?"


def disagreement_table_gaps(text: str, quick: dict[str, dict], full: dict[str, dict]) -> list[str]:
    """The claims that do not PASS in the quick baseline or the full record but have no row in
    the table under ``DISAGREE_HEADING``, and the rows of claims that PASS in both."""
    section = text.split(DISAGREE_HEADING, 1)[1].split("\n#", 1)[0]  # to the next heading
    listed = {m.group(1) for rows in marked_tables(section, QUICK_TABLE) for row in rows[1:]
              if (m := re.match(r"`([^`]+)`", row[0]))}
    failing = {cid for record in (quick, full) for cid, r in record.items()
               if r["status"] != "PASS"}
    return ([f"{cid}: does not PASS, and the table has no row for it"
             for cid in sorted(failing - listed)]
            + [f"{cid}: PASSes in both records, yet the table lists it"
               for cid in sorted(listed - failing)])


def test_the_disagreement_table_lists_every_claim_that_does_not_pass():
    """docs/results.md's table of the findings that disagree has a row for each claim whose quick
    baseline or full record is not PASS, and for no other."""
    quick = baseline.read(baseline.default_path("quick"), "quick")
    full = verdicts.read_records(verdicts.FULL_LEDGER)
    gaps = disagreement_table_gaps((ROOT / "docs" / "results.md").read_text(), quick, full)
    assert not gaps, "; ".join(gaps)


def test_a_missing_disagreement_row_is_caught():
    doc = (f"{DISAGREE_HEADING}\n\n{QUICK_TABLE}\n| claim | quick | full size |\n|---|---|---|\n"
           f"| `a.b` | FAIL | FAIL |\n| `e.f` | PASS | PASS |\n\n### Errata\n{QUICK_TABLE}\n"
           "| claim | quick |\n|---|---|\n| `c.d` | PASS |\n")
    quick = {"a.b": {"status": "FAIL"}, "c.d": {"status": "PASS"}, "e.f": {"status": "PASS"}}
    full = {"a.b": {"status": "FAIL"}, "c.d": {"status": "INCONCLUSIVE"},
            "e.f": {"status": "PASS"}}
    assert disagreement_table_gaps(doc, quick, full) == [
        "c.d: does not PASS, and the table has no row for it",
        "e.f: PASSes in both records, yet the table lists it"]

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
