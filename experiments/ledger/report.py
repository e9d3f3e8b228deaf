"""The ledger's records as JSON (``resharpen verify --json``, with its provenance at the top level)
and Markdown (``--markdown``)."""
from __future__ import annotations

from dataclasses import asdict
from typing import Sequence

from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.ledger.registry import STATUSES, Record


def to_json(records: Sequence[Record], profile: str, provenance: dict | None = None) -> str:
    """The ledger as JSON: ``profile``, ``summary`` (count per status), ``provenance`` (where and
    how it was run: commit, dirty flag, versions, machine, profile, time; by default
    :func:`resharpen.experiments.common.provenance.provenance` now) and ``claims`` (one record per
    claim; the provenance is at the top level only, never inside a claim's record)."""
    from resharpen.experiments.common.provenance import provenance as made_now

    summary = {s: sum(r.status == s for r in records) for s in STATUSES}
    return dumps_json({"profile": profile, "summary": summary,
                       "provenance": provenance if provenance is not None else made_now(profile),
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
