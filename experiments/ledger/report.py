"""The ledger's records as JSON (``resharpen verify --json``) and Markdown (``--markdown``)."""
from __future__ import annotations

from dataclasses import asdict
from typing import Sequence

from resharpen.experiments.core.io import dumps_json
from resharpen.experiments.ledger.registry import STATUSES, Record


def to_json(records: Sequence[Record], profile: str) -> str:
    summary = {s: sum(r.status == s for r in records) for s in STATUSES}
    return dumps_json({"profile": profile, "summary": summary,
                       "claims": [asdict(r) for r in records]}, indent=2)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: Sequence[Record], profile: str) -> str:
    lines = [f"Claim ledger, profile `{profile}`: "
             f"{sum(r.status == 'PASS' for r in records)}/{len(records)} PASS.", "",
             "| id | source | statement | measured | expected | tolerance | status |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        status = r.status + (" (erratum reproduced)" if r.erratum and r.status == "PASS" else "")
        lines.append("| " + " | ".join(_cell(x) for x in (
            r.id, r.source, r.statement, r.measured, r.expected, r.tolerance, status)) + " |")
    return "\n".join(lines) + "\n"
