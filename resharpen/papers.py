"""Which paper a claim checks, from its declared source: the one place that reads it.

The HTML report groups claims by paper (:mod:`resharpen.html_report`) and the verdict pages file
them (:mod:`resharpen.verdicts`) by these functions.
"""
from __future__ import annotations

import re

TITLES = {
    "2510.08341": "Post-Norm can Resharpen Attention",
    "2510.22026": "Normalization in Attention Dynamics",
    "2608.09417": "Why Post-Norm Transformers Collapse",
}
"""The papers whose claims the ledger checks, by arXiv id: their titles. Any other source is
"other"."""
PAPERS = {paper: f"{title} (arXiv {paper})" for paper, title in TITLES.items()}
"""arXiv id -> the paper's heading in the report: its title and id."""


def paper_of(source: str) -> str:
    """The arXiv id of a claim's ``source`` ("2510.08341", ...) or "other" (known sequences,
    package round trips, published perft counts)."""
    found = re.search(r"\b(\d{4}\.\d{5})\b", source)
    return found.group(1) if found and found.group(1) in PAPERS else "other"


PREFIX_PAPERS = {"sc": "2510.08341", "train": "2510.08341", "fit": "2510.08341",
                 "lang": "2510.08341", "othello": "2510.08341", "langtrain": "2510.08341",
                 "dyn": "2510.22026", "collapse": "2608.09417"}
"""The paper of a claim by its id's first part, when its source names no arXiv id."""


def home_paper(claim_id: str) -> str:
    """The paper of a claim's id prefix (:data:`PREFIX_PAPERS`); ValueError for a prefix of no
    paper."""
    prefix = claim_id.split(".", 1)[0]
    if prefix not in PREFIX_PAPERS:
        raise ValueError(f"claim {claim_id!r} belongs to no paper of {sorted(TITLES)}")
    return PREFIX_PAPERS[prefix]

_SUPPORTING = re.compile(r"^\s*(known sequence|package|published|regression)\b", re.I)
def is_transfer(declaration: dict) -> bool:
    """Whether a claim holds a paper's statement against models outside the idealized setting
    the paper proves it in (the dynamics paper's particles against the package's transformers):
    its declaration says ``transfer = true``. A test of how far the statement carries over, not
    of the statement itself."""
    return declaration.get("transfer") is True


def claim_paper(record: dict) -> str:
    """The paper a claim checks: the arXiv id its ``source`` names (one of :data:`PAPERS`);
    else "other" when the source is another paper (prior work), a known sequence, a package
    check or round trip, a published count or a regression; else the paper of its id's first part
    (:data:`PREFIX_PAPERS`: ``sc``, ``train``, ... -> 2510.08341, ``dyn`` -> 2510.22026,
    ``collapse`` -> 2608.09417)."""
    source = str(record.get("source", ""))
    named = paper_of(source)
    if named != "other":
        return named
    if re.search(r"\b\d{4}\.\d{5}\b", source) or _SUPPORTING.search(source):
        return "other"
    return PREFIX_PAPERS.get(str(record.get("id", "")).split(".")[0], "other")
