"""What the package concludes, paper by paper: the verdict pages, generated from the records.

One Markdown page per paper (``docs/verdicts/<arXiv id>.md``) lists the paper's statements as
the ledger checks them, in the order they are declared (the declaration files follow each
paper's sections), and for each one: the statement and its source, the verdict at the quick
profile and at full size, the measured and expected values, the test with its n and p where the
claim is statistical (the ledger's detail, which also says whether the models had learned their
task), the figures that show it and the commands that reproduce it. A short index
(``docs/verdicts/README.md``) counts the verdicts per paper; the README's table is that index.

The inputs are committed, so a reader checks every verdict without retraining:

* the declarations (:mod:`resharpen.experiments.ledger.declarations`): statement, source,
  tolerance, the expected quick and full statuses, figures;
* the quick ledger (``results/quick/ledger.json``, written by ``make reproduce``);
* the full ledger (``results/full/ledger.json``) where the full profile has been run; a claim
  without a full record says so.

    python -m resharpen.verdicts --write    # regenerate docs/verdicts/ from the records

tests/core/test_verdicts.py fails when a committed page differs from what the records give.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from resharpen.experiments.ledger.declarations import all_declarations

ROOT = Path(__file__).resolve().parent.parent
QUICK_LEDGER = ROOT / "results" / "quick" / "ledger.json"
FULL_LEDGER = ROOT / "results" / "full" / "ledger.json"
PAGES = ROOT / "docs" / "verdicts"
PAPERS = {
    "2510.08341": ("Post-Norm can Resharpen Attention", ("sc", "train", "fit", "lang",
                                                          "othello", "langtrain")),
    "2510.22026": ("Normalization in Attention Dynamics", ("dyn",)),
    "2608.09417": ("Why Post-Norm Transformers Collapse", ("collapse",)),
}
"""arXiv id -> (title, the id prefixes of its claims)."""
DETAIL_CHARS = 600
"""The ledger's detail is shown up to this many characters (the full text is in the ledger)."""


def paper_of(claim_id: str) -> str:
    """The arXiv id of the paper a claim belongs to, by its id prefix."""
    prefix = claim_id.split(".", 1)[0]
    for paper, (_, prefixes) in PAPERS.items():
        if prefix in prefixes:
            return paper
    raise ValueError(f"claim {claim_id!r} belongs to no paper of {sorted(PAPERS)}")


def read_records(path: Path) -> dict[str, dict]:
    """id -> record of a ledger JSON (``resharpen verify --json``); {} when there is none."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    records = data["claims"]  # resharpen.experiments.ledger.report.to_json
    return {r["id"]: r for r in records}


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _verdict(record: dict | None, declared: str | None) -> str:
    if record is None:
        return "not run" + (f" (declared {declared})" if declared else "")
    return record["status"]


def entry(claim_id: str, decl: dict, quick: dict | None, full: dict | None) -> str:
    """One statement's section of a verdict page."""
    lines = [f"### `{claim_id}`", "", f"> {decl['statement']}", "",
             f"- **Verdict**: quick **{_verdict(quick, decl['quick'])}**, full size "
             f"**{_verdict(full, decl.get('full'))}**",
             f"- **Source**: {decl['source']}; tolerance: {decl['tolerance']}"]
    for profile, record in (("quick", quick), ("full", full)):
        if record is None:
            continue
        lines.append(f"- **Measured ({profile})**: {_cell(record['measured'])}; expected: "
                     f"{_cell(record['expected'])}")
        detail = _cell(record.get("detail", ""))
        if detail:
            cut = detail if len(detail) <= DETAIL_CHARS else detail[:DETAIL_CHARS] + " [...]"
            lines.append(f"- **How it was decided ({profile})**: {cut}")
    lines.append(f"- **Expected value from**: the {decl['expected_from']}: {decl['origin']}")
    figures = decl.get("figures", [])
    if figures:
        shown = ", ".join(f"`{f}` ([PNG](../figures/{f}.png))"
                          if (ROOT / "docs" / "figures" / f"{f}.png").is_file() else f"`{f}`"
                          for f in figures)
        lines.append(f"- **Figures**: {shown}; `resharpen figs --only {figures[0]}`")
    lines.append(f"- **Reproduce**: `resharpen verify --only {claim_id}` (quick), "
                 f"`resharpen verify --only {claim_id} --profile full` (full size); "
                 f"`resharpen verify --where {claim_id}` shows the code")
    return "\n".join(lines)


def counts(records: dict[str, dict], ids: list[str]) -> str:
    """``12 PASS, 3 FAIL, 1 INCONCLUSIVE`` of the records among ``ids`` (``not run`` when none)."""
    found = [records[i]["status"] for i in ids if i in records]
    if not found:
        return "not run"
    order = ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")
    return ", ".join(f"{found.count(s)} {s}" for s in order if s in found)


def pages(declared: dict[str, dict] | None = None, quick: dict | None = None,
          full: dict | None = None) -> dict[str, str]:
    """file name -> Markdown: one page per paper and the index."""
    declared = all_declarations() if declared is None else declared
    quick = read_records(QUICK_LEDGER) if quick is None else quick
    full = read_records(FULL_LEDGER) if full is None else full
    by_paper: dict[str, list[str]] = {paper: [] for paper in PAPERS}
    for claim_id in declared:
        by_paper[paper_of(claim_id)].append(claim_id)
    out = {}
    index = ["# Verdicts by paper", "",
             "Generated by `python -m resharpen.verdicts --write` from the claim declarations, "
             "the quick ledger (`results/quick/ledger.json`, written by `make reproduce`) and "
             "the full-size ledger (`results/full/ledger.json`). Do not edit by hand.", "",
             "| paper | claims | quick | full size |", "|---|---|---|---|"]
    for paper, ids in by_paper.items():
        title = PAPERS[paper][0]
        index.append(f"| [arXiv {paper}, {title}]({paper}.md) | {len(ids)} | "
                     f"{counts(quick, ids)} | {counts(full, ids)} |")
        body = [f"# arXiv {paper}: {title}", "",
                "What the package concludes about this paper's statements, generated from the "
                "records (`python -m resharpen.verdicts --write`; do not edit by hand). Each "
                "statement gives its verdict in the quick profile (minutes on 2 CPU cores) and "
                "at full size, what was measured against what was expected, how the data "
                "decided it, and how to reproduce it.", "",
                f"Quick: {counts(quick, ids)}. Full size: {counts(full, ids)}.", ""]
        for claim_id in ids:
            body += [entry(claim_id, declared[claim_id], quick.get(claim_id), full.get(claim_id)),
                     ""]
        out[f"{paper}.md"] = "\n".join(body).rstrip("\n") + "\n"
    out["README.md"] = "\n".join(index) + "\n"
    return out


def summary_table() -> str:
    """The index's table (for the README)."""
    text = pages()["README.md"]
    return "\n".join(line.replace("](", "](docs/verdicts/") if line.startswith("| [") else line
                     for line in text.splitlines() if line.startswith("|"))


def write(folder: Path = PAGES) -> list[Path]:
    """Write every page into ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages().items():
        (folder / name).write_text(text)
        written.append(folder / name)
    return written


def _main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python -m resharpen.verdicts --write", file=sys.stderr)
        return 2
    for path in write():
        print(f"wrote {path}")
    return 0



if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
