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
* the quick ledger (``results/quick/ledger.json``, written by ``make regenerate``);
* the full ledger (``results/full/ledger.json``) where the full profile has been run; a claim
  without a full record says so.

    python -m resharpen.verdicts --write                            # the pages from the records
    python -m resharpen.verdicts --write --quick out/ledger.json    # record a new quick ledger
    python -m resharpen.verdicts --write --full out/ledger_fit_full.json  # add full records

A recorded ledger keeps every claim's record and the provenance, without the timings (so the
record changes only when a result does). The full profile runs in parts (its sweeps take hours),
so the full record is merged: each claim keeps the provenance of the run that decided it
(:func:`merge`).

tests/core/test_verdicts.py fails when a committed page differs from what the records give.
"""
from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from resharpen.experiments.ledger.declarations import all_declarations
from resharpen.papers import is_transfer
from resharpen.papers import TITLES, home_paper
from resharpen.papers import paper_of as named_paper

ROOT = Path(__file__).resolve().parent.parent
QUICK_LEDGER = ROOT / "results" / "quick" / "ledger.json"
FULL_LEDGER = ROOT / "results" / "full" / "ledger.json"
PAGES = ROOT / "docs" / "verdicts"
DETAIL_CHARS = 600
"""The ledger's detail is shown up to this many characters; a longer one follows whole in a
folded block (``<details>``), so the test that decided a claim is always on its page."""


def paper_of(claim_id: str, source: str = "") -> str:
    """The arXiv id of the paper a claim belongs to: the one of
    :data:`resharpen.papers.TITLES` its declared ``source`` names (a ``dyn.trained`` claim
    testing arXiv 2608.09417's theorem belongs to that paper, as in the HTML report:
    :func:`resharpen.papers.paper_of`), else the paper of its id prefix
    (:func:`resharpen.papers.home_paper`)."""
    named = named_paper(source)
    return named if named in TITLES else home_paper(claim_id)


def supporting(claim_id: str, source: str) -> bool:
    """Whether a claim is a supporting check rather than one of a paper's statements: its
    source is a known sequence, a package round trip, a published count, prior work or a
    regression (:func:`resharpen.papers.claim_paper` gives "other")."""
    from resharpen.papers import claim_paper

    return claim_paper({"id": claim_id, "source": source}) == "other"


def read_records(path: Path) -> dict[str, dict]:
    """id -> record of a ledger JSON (``resharpen verify --json``); {} when there is none."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    records = data["claims"]  # resharpen.experiments.ledger.report.to_json
    runs = data.get("runs", [])  # a merged full record (merge): the run that decided each claim
    return {r["id"]: ({**r, "decided_by": runs[r["run"]]} if "run" in r else r) for r in records}


def _run_text(provenance: dict) -> str:
    """``commit 1a2b3c4, 2026-12-06`` of a run's provenance (what a reader checks out)."""
    commit = str(provenance.get("commit") or "unknown")[:7]
    dirty = " (with uncommitted changes)" if provenance.get("dirty") else ""
    return f"commit {commit}{dirty}, {str(provenance.get('created', ''))[:10]}"


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
             f"- **Source**: {decl['source']}"
             + (" (a supporting check, not a statement of the paper)"
                if supporting(claim_id, decl["source"]) else "")
             + (" (the paper's statement held against the package's transformers, beyond the "
                "idealized setting it is proved in)" if is_transfer(decl) else "")
             + f"; tolerance: {decl['tolerance']}"]
    for profile, record in (("quick", quick), ("full", full)):
        if record is None:
            continue
        lines.append(f"- **Measured ({profile})**: {_cell(record['measured'])}; expected: "
                     f"{_cell(record['expected'])}")
        detail = _cell(record.get("detail", ""))
        if detail:
            lines.append(f"- **How it was decided ({profile})**: {_cut(detail, DETAIL_CHARS)}"
                         + ("" if len(detail) <= DETAIL_CHARS else
                            f" <details><summary>the whole record "
                            f"({len(str(record['detail']))} characters)"
                            f"</summary>{html.escape(detail, quote=False)}</details>"))
        if "decided_by" in record:
            lines.append(f"- **Full-size run**: {_run_text(record['decided_by'])}")
    lines.append(f"- **Expected value from**: the {decl['expected_from']}: {decl['origin']}")
    figures = decl.get("figures", [])
    if figures:
        lines.append("- **Figures**: " + "; ".join(figure_text(f) for f in figures))
    restore = ("`resharpen archive restore` (which brings back the archived full-size runs, so "
               "a claim reads the runs it finds there instead of training them), then "
               if decl.get("kind") == "experiment" else "")
    lines.append(f"- **Reproduce**: `resharpen verify --only {claim_id}` (quick); {restore}"
                 f"`resharpen verify --only {claim_id} --profile full` (full size); "
                 f"`resharpen verify --where {claim_id}` shows the code")
    return "\n".join(lines)


def figure_text(name: str) -> str:
    """```name```, a link to each committed copy of the files it writes (its output stems,
    ``paper_figs.OUTPUTS``: ``docs/figures/<stem>.png``) labelled with the data it was drawn
    from (:func:`copy_label`), and the command that draws the figure at that profile."""
    from resharpen.paper_figs import OUTPUTS

    copies = [(stem, ROOT / "docs" / "figures" / f"{stem}.png")
              for stem in OUTPUTS.get(name, (name,))]
    copies = [(stem, path) for stem, path in copies if path.is_file()]
    labels = [copy_label(path) for _, path in copies]
    links = ", ".join(f"[{stem if len(copies) > 1 else 'PNG'}](../figures/{stem}.png) ({label})"
                      for (stem, _), label in zip(copies, labels))
    full = any(label.startswith("full size") for label in labels)
    command = f"`resharpen figs --only {name}{' --profile full' if full else ''}`"
    return (f"`{name}` {links}; {command}" if links else
            f"`{name}` (no copy in docs/figures: the command draws it); {command}")


def copy_label(png: Path) -> str:
    """What a committed figure copy was drawn from, read from its provenance (the PNG text chunk
    ``paper_figs.PROVENANCE_KEY``): ``full size, commit 1a2b3c4`` / ``quick profile, ...`` /
    ``no profile (analytic, or drawn by a report), ...``, or ``provenance not recorded``."""
    from PIL import Image

    from resharpen.paper_figs import PROVENANCE_KEY

    with Image.open(png) as image:
        text = image.info.get(PROVENANCE_KEY["png"])
    try:
        record = json.loads(text) if text else None
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return "provenance not recorded"
    drawn = record.get("profile")
    if drawn == "full":
        profile = "full size"
    elif drawn == "quick":
        profile = "quick profile"
    else:
        profile = "no profile (analytic, or drawn by a report)"
    return f"{profile}, {_run_text(record)}"


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
    by_paper: dict[str, list[str]] = {paper: [] for paper in TITLES}
    for claim_id in declared:
        by_paper[paper_of(claim_id, declared[claim_id]['source'])].append(claim_id)
    for paper, ids in by_paper.items():  # a claim of another slice testing this paper: last
        ids.sort(key=lambda i: home_paper(i) != paper)
    out = {}
    index = ["# Verdicts by paper", "",
             "Generated by `python -m resharpen.verdicts --write` from the claim declarations, "
             "the quick ledger (`results/quick/ledger.json`, written by `make regenerate`) and "
             "the full-size ledger (`results/full/ledger.json`). Do not edit by hand.", "",
             "The column \"the paper's own statements\" counts a paper's claims without its "
             "supporting checks (known sequences, published counts, prior work, package "
             "checks, round trips, regressions) and without the statements held against the "
             "package's transformers, outside the idealized setting they are proved in; those "
             "have a column of their own. An erratum is a statement shown false: its PASS "
             "means that the counterexample is reproduced, and the column counts such PASSes "
             "apart, by whose statement it is (the paper's text as the sources give it, a "
             "secondary summary, a transcription's extension, the package's reconstruction).",
             "",
             "| paper | claims | quick | full size | full size, the paper's own statements | "
             "full size, held against the package's transformers |",
             "|---|---|---|---|---|---|"]
    for paper, ids in by_paper.items():
        title = TITLES[paper]
        held = [i for i in ids if is_transfer(declared[i])]
        own = [i for i in ids if not supporting(i, declared[i]["source"]) and i not in held]
        errata = errata_counts(own, declared, full)
        index.append(f"| [arXiv {paper}, {title}]({paper}.md) | {len(ids)} | "
                     f"{counts(quick, ids)} | {counts(full, ids)} | {len(own)}: "
                     f"{counts(full, own)}"
                     + (f" (errata among the PASSes, their counterexample reproduced: {errata})"
                        if errata else "") + " | "
                     + (f"{len(held)}: {counts(full, held)}" if held else "none") + " |")
        body = [f"# arXiv {paper}: {title}", "",
                "What the package concludes about this paper's statements, generated from the "
                "records (`python -m resharpen.verdicts --write`; do not edit by hand). Each "
                "statement gives its verdict in the quick profile (minutes on 2 CPU cores) and "
                "at full size, what was measured against what was expected, how the data "
                "decided it, and how to reproduce it. Supporting checks (known sequences, "
                "published counts, checks of prior work, package checks, round trips, "
                "regressions) are "
                "among them and are marked so, as are the statements held against the package's "
                "transformers, beyond the idealized setting the paper proves them in. The terms "
                "are defined at the end of the [index](README.md#terms).", "",
                f"Quick: {counts(quick, ids)}. Full size: {counts(full, ids)}.", "",
                *findings(ids, declared, full), *glance(ids, declared, quick, full), "",
                "## The statements", ""]
        for claim_id in ids:
            body += [entry(claim_id, declared[claim_id], quick.get(claim_id), full.get(claim_id)),
                     ""]
        out[f"{paper}.md"] = "\n".join(body).rstrip("\n") + "\n"
    out["README.md"] = "\n".join(index + ["", *GLOSSARY]) + "\n"
    return out


GLOSSARY = (
    "## Terms",
    "",
    "- **invalid mass**: the probability a model puts on next tokens that the task's exact "
    "legal-next set excludes, averaged over positions; **ID** / **OOD**: at the training "
    "lengths / at longer ones (out of distribution).",
    "- **fit**, **matched fit**: a run has reached its fit when its in-distribution invalid mass "
    "(and total variation, on the language grid) is at most a stated level, checked as it "
    "trains; it stops there. Arms are compared at a matched fit: trained to the same level "
    "(the fit.* placement sweeps; on the language grid each run to its task's level, its EMA "
    "and BEMA weights read where its raw weights stopped), or, for the sampled-label noise "
    "arms, which cannot reach it, trained for one budget and checked to be past a common "
    "level. A **rung** is one level of the fit ladder (1e-2, 3e-3, 1e-3, ...), read at the "
    "first evaluation that reaches it.",
    "- **raw / EMA / BEMA**: a run's trained weights theta_t; their exponential moving average "
    "EMA_t; and BEMA_t = alpha_t (theta_t - theta_0) + EMA_t (Block and Zhang, arXiv "
    "2508.00180), the EMA with a decaying share of the distance travelled added back.",
    "- **placements**: none, pre (Pre-LN with its final norm), pre_nofinal (Pre-LN without it: "
    "no norm between the last attention and the readout, the no-resharpening control), post, "
    "attn_out (a norm on the attention output before the residual sum), peri, mixln, ngpt, "
    "ln_scaling.",
    "- **K** = lambda/beta: in Post-Norm's readout N(x + o), the size of the attention output o "
    "against the token's own embedding x (on trained weights, |c(E W_V W_O)|_F / |c(E)|_F; "
    "docs/theory.md); post tends to attn_out, N(o) alone, as K grows. **t_sim**(X) = "
    "||Pi_1 X||_F^2 / ||X||_F^2 with Pi_1 = 11^T/n: the similarity of a layer's token "
    "representations (1 when every row is the same, 1/n for orthogonal rows of one norm; "
    "docs/collapse.md); distinct from the mean pairwise cosine the dynamics claims read.",
    "- **premise set**: models built to meet a theorem's hypotheses (e.g. tokens of radius 1), "
    "so that a claim tests the theorem inside them; a run outside the premise is named, not "
    "tested.",
    "- **2nd-hand, re-derived**: the source is a summary of the paper, not its text; the package "
    "derives the statement again before testing it.",
    "- **Holm**, **TOST**: Holm's step-down correction over a family of tests; two one-sided "
    "tests, which show a quantity inside a band.",
)
"""The terms the verdict pages use, defined once at the end of the index."""


GLANCE_CHARS = 110
"""A statement is shown up to this many characters in a page's table at a glance."""


def glance(ids: list[str], declared: dict[str, dict], quick: dict, full: dict) -> list[str]:
    """A paper page's table at a glance: one row per statement, in the page's order, with its
    id linked to its section below, the statement cut at :data:`GLANCE_CHARS`, and its quick
    and full-size verdicts (:func:`_verdict`)."""
    rows = ["## At a glance", "", "| claim | statement | quick | full size |", "|---|---|---|---|"]
    for claim_id in ids:
        decl = declared[claim_id]
        rows.append(f"| [`{claim_id}`](#{claim_id.replace('.', '').lower()}) | "
                    f"{_cell(_cut(decl['statement'], GLANCE_CHARS))} | "
                    f"{_verdict(quick.get(claim_id), decl['quick'])} | "
                    f"{_verdict(full.get(claim_id), decl.get('full'))} |")
    return rows


def errata_counts(ids: list[str], declared: dict[str, dict], full: dict) -> str:
    """``3 of the paper as its sources give it, 1 of a secondary summary of the paper``: the
    errata among ``ids`` whose full-size record PASSes (the counterexample reproduced), counted
    by whose statement they show false (``erratum_of``), each named by its phrase in
    :data:`~resharpen.experiments.ledger.declarations.ERRATA_OF`; "" when there are none."""
    from resharpen.experiments.ledger.declarations import ERRATA_OF

    found = [declared[i]["erratum_of"] for i in ids if declared[i].get("erratum")
             and full.get(i, {}).get("status") == "PASS"]
    return ", ".join(f"{found.count(k)} of {ERRATA_OF[k]}" for k in ERRATA_OF if k in found)


FINDING_CHARS = 160
"""A full-size record's measured and expected values are shown up to this many characters in a
paper page's table of what does not hold or is undecided (:func:`findings`)."""


def findings(ids: list[str], declared: dict[str, dict], full: dict) -> list[str]:
    """A paper page's first table: every one of its claims whose full-size record is not PASS,
    is the PASS of an erratum (a statement shown false: whose, from ``erratum_of``) or is
    missing ("not run"), with what was measured against what was expected (each cut at
    :data:`FINDING_CHARS`) and, when INCONCLUSIVE, the reason the record gives; a supporting
    check (:func:`supporting`) and a statement held against the package's transformers
    (:func:`is_transfer`) are marked so. Every other claim of the page PASSes at full size. A
    paper with none says so."""
    from resharpen.experiments.ledger.declarations import ERRATA_OF

    rows = []
    for claim_id in ids:
        record, decl = full.get(claim_id), declared[claim_id]
        link = f"[`{claim_id}`](#{claim_id.replace('.', '').lower()})"
        if record is None:
            rows.append(f"| {link} | not run | | | |")
            continue
        erratum = bool(decl.get("erratum")) and record["status"] == "PASS"
        if record["status"] == "PASS" and not erratum:
            continue
        verdict = (f"PASS: an erratum of {ERRATA_OF[decl['erratum_of']]}, reproduced"
                   if erratum else record["status"])
        if is_transfer(decl):
            verdict += " (in the package's transformers)"
        if supporting(claim_id, decl["source"]):
            verdict += " (a supporting check)"
        why = why_not_decided(record) if record["status"] == "INCONCLUSIVE" else ""
        rows.append(f"| {link} | {verdict} | {_cell(_cut(record['measured'], FINDING_CHARS))} | "
                    f"{_cell(_cut(record['expected'], FINDING_CHARS))} | "
                    f"{_cell(_cut(why, FINDING_CHARS))} |")
    head = ["## What does not hold, or is undecided, at full size", ""]
    if not rows:
        return head + ["Every claim of this page PASSes at full size, and none is an erratum.",
                       ""]
    return head + ["The claims whose full-size verdict is not a plain PASS: a FAIL (a measured "
                   "disagreement), an INCONCLUSIVE (not decided, with what would decide it), "
                   "an erratum (a statement shown false, its counterexample reproduced) or a "
                   "claim not run at full size. Every other claim of the page, supporting "
                   "checks included, PASSes at full size.", "",
                   "| claim | full size | measured | expected | undecided, because |",
                   "|---|---|---|---|---|", *rows, ""]


NON_PASS_CHARS = 300
"""A non-PASS record's measured value and reason are shown up to this many characters in the
table of docs/ledger.md (the verdict page shows more, the ledger all)."""


def _cut(text: object, limit: int) -> str:
    """``text`` on one line, cut at the last space before ``limit`` characters (`` [...]``)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " [...]"


def why_not_decided(record: dict) -> str:
    """The reason an INCONCLUSIVE record gives: the text after ``inconclusive:`` in its detail
    (:func:`resharpen.experiments.ledger.runner` appends it there), or ""."""
    detail = str(record.get("detail", ""))
    return detail.rsplit("inconclusive: ", 1)[1] if "inconclusive: " in detail else ""


def anchor(claim_id: str, source: str = "") -> str:
    """The link to a claim's section of its verdict page (:func:`paper_of`), from docs/: its
    heading ``### `id` `` has the anchor of the id without its dots."""
    return f"verdicts/{paper_of(claim_id, source)}.md#{claim_id.replace('.', '').lower()}"


def non_pass_section(declared: dict[str, dict] | None = None, quick: dict | None = None,
                     full: dict | None = None) -> str:
    """docs/ledger.md's table of every claim that does not PASS in the quick record or the full
    record: its status in each, and from each non-PASS record the measured value against the
    expected one and, when INCONCLUSIVE, the reason the record gives (each cut at
    :data:`NON_PASS_CHARS`), with a link to the claim's verdict page; the sentence above it
    counts them."""
    declared = all_declarations() if declared is None else declared
    quick = read_records(QUICK_LEDGER) if quick is None else quick
    full = read_records(FULL_LEDGER) if full is None else full
    ids = [i for i in declared
           if any(r.get(i, {}).get("status", "PASS") != "PASS" for r in (quick, full))]
    not_quick = sum(quick.get(i, {}).get("status", "PASS") != "PASS" for i in ids)
    not_full = sum(full.get(i, {}).get("status", "PASS") != "PASS" for i in ids)
    rows = [f"Of the {len(declared)} claims, {len(ids)} do not PASS in the records: {not_quick} "
            f"in the quick record (`results/quick/ledger.json`) and {not_full} in the full-size "
            f"record (`results/full/ledger.json`), which holds {len(full)} of the claims. For each record that does not PASS the table gives what it measured "
            "against what was expected and, for an INCONCLUSIVE one, the reason the record "
            "gives; the claim's verdict page has the rest (the test, its n and p).", "",
            "<!-- quick column: checked against experiments/configs/ledger/quick.json -->",
            "<!-- full column: checked against results/full/ledger.json -->",
            "| claim | quick | full size | what the record says |", "|---|---|---|---|"]
    for claim_id in ids:
        said = []
        for profile, record in (("quick", quick.get(claim_id)), ("full size", full.get(claim_id))):
            if record is None or record["status"] == "PASS":
                continue
            text = (f"**{profile}**: measured {_cut(record['measured'], NON_PASS_CHARS)}; "
                    f"expected {_cut(record['expected'], NON_PASS_CHARS)}")
            reason = why_not_decided(record)
            if reason:
                text += f"; undecided because: {_cut(reason, NON_PASS_CHARS)}"
            said.append(_cell(text))
        decl = declared[claim_id]
        rows.append(f"| `{claim_id}` ([page]({anchor(claim_id, decl['source'])})) | "
                    f"{_verdict(quick.get(claim_id), decl['quick'])} | "
                    f"{_verdict(full.get(claim_id), decl.get('full'))} | {'<br>'.join(said)} |")
    return "\n".join(rows)


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


def _read_ledger(ledger: str | Path) -> dict:
    from resharpen.experiments.common.stored import read_json

    data = read_json(Path(ledger), "ledger JSON file", dict)
    if not isinstance(data.get("claims"), list):
        raise ValueError(f"{ledger} is not a ledger JSON (no list of claims)")
    return data


def record(ledger: str | Path, target: Path) -> Path:
    """Copy the ledger JSON ``ledger`` (``resharpen verify --json``) to ``target`` without the
    per-claim timings."""
    from resharpen.experiments.common.io import atomic_write_text
    from resharpen.experiments.common.json_text import dumps_json

    data = _read_ledger(ledger)
    for claim in data["claims"]:
        claim.pop("seconds", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, dumps_json(data, indent=1) + "\n")
    return target


def update_quick(records: list[dict], keep, target: Path = QUICK_LEDGER,
                 made: dict | None = None) -> Path:
    """Add or replace the records ``records`` (ledger JSON records: ``dataclasses.asdict`` of a
    :class:`~resharpen.experiments.ledger.registry.Record`) in the quick record ``target`` and
    drop the records of ids not in ``keep`` (the claims no longer declared); every other record,
    and the provenance of the run that wrote the record, as they were. The records are sorted
    by id, the summary counted again, and the provenance's ``note`` names the claims recorded
    alone afterwards and the commit they were run on, from ``made``: the provenance of the run
    that made ``records``, taken before it wrote anything (default: this process's provenance,
    whose dirty flag is the tree's state when the process first asked for it)."""
    from resharpen.experiments.common.io import atomic_write_text
    from resharpen.experiments.common.json_text import dumps_json
    from resharpen.experiments.common.provenance import provenance

    data = _read_ledger(target)
    kept = set(keep)
    claims = {c["id"]: c for c in data["claims"] if c["id"] in kept}
    claims.update({r["id"]: {k: v for k, v in r.items() if k != "seconds"} for r in records})
    data["claims"] = [claims[claim_id] for claim_id in sorted(claims)]
    data["summary"] = {s: sum(c["status"] == s for c in data["claims"])
                       for s in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    if records:
        now = made if made is not None else provenance("quick")
        commit = str(now.get("commit") or "unknown")[:7]
        dirty = " with uncommitted changes" if now.get("dirty") else ""
        added = (f"{', '.join(sorted(r['id'] for r in records))} recorded alone afterwards "
                 f"(commit {commit}{dirty}; python -m resharpen.regenerate)")
        note = data["provenance"].get("note", "")
        data["provenance"]["note"] = f"{note}; {added}" if note else added
    atomic_write_text(target, dumps_json(data, indent=1) + "\n")
    return target


def merge(ledgers: list[str | Path], target: Path = FULL_LEDGER, keep=None,
          report=print) -> Path:
    """Add the records of ``ledgers`` (``resharpen verify --profile full --json``, each of a part
    of the claims) to the full-size record ``target``, replacing the records of the same ids,
    and drop the records of ids not in ``keep`` (default: the declared claims; a claim removed
    from the ledger loses its record), naming them with ``report``.

    The full profile is run in parts (a sweep of hours decides a few claims), so the record
    keeps, for every claim, which run decided it: ``runs`` lists the provenance of each ledger
    merged (commit, machine, versions, date) and each claim's ``run`` indexes it. A ledger of
    another profile is refused; runs no claim refers to any more are dropped."""
    from resharpen.experiments.common.io import atomic_write_text
    from resharpen.experiments.common.json_text import dumps_json

    merged: dict[str, dict] = {}
    runs: list[dict] = []
    if target.is_file():
        old = _read_ledger(target)
        runs = list(old.get("runs", []))
        merged = {c["id"]: c for c in old["claims"]}
    for ledger in ledgers:
        data = _read_ledger(ledger)
        profile = data.get("profile") or (data.get("provenance") or {}).get("profile")
        if profile != "full":
            raise ValueError(f"{ledger} is a ledger of the {profile!r} profile, not 'full'")
        runs.append(data.get("provenance") or {})
        for claim in data["claims"]:
            claim = {k: v for k, v in claim.items() if k != "seconds"}
            merged[claim["id"]] = {**claim, "run": len(runs) - 1}
    kept = set(all_declarations() if keep is None else keep)
    dropped = sorted(set(merged) - kept)
    if dropped:
        report(f"dropped the records of {len(dropped)} claims no longer declared: "
               f"{', '.join(dropped)}")
    merged = {claim_id: c for claim_id, c in merged.items() if claim_id in kept}
    used = sorted({c["run"] for c in merged.values()})
    renumber = {old: new for new, old in enumerate(used)}
    claims = [{**c, "run": renumber[c["run"]]} for _, c in sorted(merged.items())]
    summary = {s: sum(c["status"] == s for c in claims)
               for s in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    out = {"profile": "full", "summary": summary, "runs": [runs[i] for i in used],
           "claims": claims}
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, dumps_json(out, indent=1) + "\n")
    return target


def declare_full(target: Path = FULL_LEDGER) -> list[str]:
    """Write each claim's status in the full record as its declared full status: the line
    ``full = "STATUS"`` of its table in the declaration file beside its claims module (after
    its ``quick`` line; replaced when there is one). Returns the ids whose declaration changed.

    As with the quick baseline, a full-size finding that changes on purpose changes its
    declaration; tests/core/test_verdicts.py holds the record and the declarations equal."""
    import re

    from resharpen.experiments.ledger.declarations import declaration_file

    records = read_records(target)
    changed = []
    by_file: dict[Path, list[tuple[str, str]]] = {}
    for claim_id, decl in all_declarations().items():
        record = records.get(claim_id)
        if record is not None and decl.get("full") != record["status"]:
            by_file.setdefault(declaration_file(decl["module"]), []).append(
                (claim_id, record["status"]))
    for path, entries in by_file.items():
        text = path.read_text()
        for claim_id, status in entries:
            head = f'["{claim_id}"]\n'
            start = text.index(head)
            end = text.find("\n[", start + len(head))
            end = len(text) if end < 0 else end + 1
            table = text[start:end]
            line = f'full = "{status}"\n'
            if re.search(r"^full = .*\n", table, flags=re.M):
                table = re.sub(r"^full = .*\n", line, table, count=1, flags=re.M)
            else:
                table = re.sub(r"^(quick = .*\n)", lambda m: m.group(1) + line, table, count=1,
                               flags=re.M)
            text = text[:start] + table + text[end:]
            changed.append(claim_id)
        path.write_text(text)
    return changed


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m resharpen.verdicts",
                                     description="Write the verdict pages from the records.")
    parser.add_argument("--write", action="store_true", required=True,
                        help="write docs/verdicts/ (and record the ledgers given)")
    parser.add_argument("--quick", metavar="LEDGER", help="record this quick ledger first")
    parser.add_argument("--full", metavar="LEDGER", action="append", default=[],
                        help="add the records of this full-size ledger (a part of the claims: "
                             "repeatable) to results/full/ledger.json first")
    parser.add_argument("--declare-full", action="store_true",
                        help="write each recorded full-size status into its claim's declaration")
    args = parser.parse_args(argv)
    if args.quick:
        print(f"recorded {record(args.quick, QUICK_LEDGER)}")
    if args.full:
        print(f"merged {', '.join(args.full)} into {merge(args.full)}")
    if args.declare_full:
        changed = declare_full()
        print(f"declared the full status of {len(changed)} claims"
              + (f": {', '.join(changed)}" if changed else ""))
    for path in write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
