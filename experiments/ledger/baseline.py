"""The committed baseline of the ledger's statuses: a known finding versus a regression.

A baseline file (JSON) maps every claim id of one profile to its expected status and a one-line
reason (why it is not PASS, or "" for PASS)::

    {"profile": "quick", "claims": {"sc.theorem.two_over_s": {"status": "PASS", "reason": ""},
                                    "train.ema.ood_kl": {"status": "FAIL", "reason": "..."}}}

:func:`differences` compares a run of the ledger with it. Any change counts, in either
direction: a FAIL that now passes is as much news as a PASS that now fails, so that the baseline
is updated (``resharpen verify --write-baseline``) when a finding changes on purpose. The ledger
itself still shows every FAIL as FAIL.

The statuses of the quick baseline are not a second declaration: each claim declares its quick
status once (``@claim(..., expected_status=...)``), and :func:`against_declarations` lists where
a baseline and the declarations disagree (tests/core/test_baseline.py holds the committed one to
them). A finding that changes on purpose changes both, the declaration and the baseline's entry.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from resharpen.experiments.common.io import atomic_write_text
from resharpen.experiments.common.json_text import dumps_json
from resharpen.experiments.common.stored import read_json
from resharpen.experiments.ledger.registry import STATUSES, Claim, Record

BASELINES = Path(__file__).resolve().parents[1] / "configs" / "ledger"
"""The committed baselines: ``experiments/configs/ledger/<profile>.json``."""


def default_path(profile: str) -> Path:
    return BASELINES / f"{profile}.json"


def read(path: str | Path, profile: str) -> dict[str, dict]:
    """The baseline's ``{id: {"status", "reason"}}``; ValueError naming the file when it is
    missing, not JSON, of another profile, or holds an unknown status. A ledger JSON (``verify
    --json``, its ``claims`` a list of records) is read as a baseline too (reasons ""). Ledgers
    of different profiles are never compared: a file of another profile (its ``profile``, or its
    provenance's) is refused."""
    path = Path(path)
    try:
        try:
            data = read_json(path, "ledger baseline", dict)  # capped: never /dev/zero to the end
        except ValueError as exc:
            raise ValueError(f"{path} is not a ledger baseline ({exc})") from None
        claims = data["claims"]
        found_profile = data["profile"]
        if isinstance(claims, list):  # a ledger JSON: its records' statuses
            claims = {c["id"]: {"status": c["status"], "reason": ""} for c in claims}
        recorded = (data.get("provenance") or {}).get("profile", found_profile)
    except FileNotFoundError:
        raise ValueError(f"no ledger baseline {str(path)!r}; write one with "
                         f"`resharpen verify --profile {profile} --write-baseline {path}`") from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError,
            AttributeError) as exc:
        raise ValueError(f"{path} is not a ledger baseline ({type(exc).__name__}: {exc})") from None
    if found_profile != profile or recorded not in (None, profile):
        raise ValueError(f"refusing to compare ledgers of different profiles: {path} is of "
                         f"profile {recorded if recorded != profile else found_profile!r}, this "
                         f"run is {profile!r}")
    if not isinstance(claims, dict):
        raise ValueError(f"{path} is not a ledger baseline ('claims' is not a mapping)")
    for claim_id, entry in claims.items():
        if not isinstance(entry, dict) or entry.get("status") not in STATUSES:
            raise ValueError(f"{path}: claim {claim_id!r} has no valid status (one of {STATUSES})")
    return claims


def differences(records: Sequence[Record], baseline: dict[str, dict],
                complete: bool = True) -> list[str]:
    """One line per claim whose status differs from the baseline (and, when ``complete``, per
    baseline claim that was not run)."""
    lines = []
    ran = {r.id: r for r in records}
    for r in records:
        expected = baseline.get(r.id)
        if expected is None:
            lines.append(f"{r.id}: {r.status}, not in the baseline (new claim)")
        elif expected["status"] != r.status:
            why = f" (baseline: {expected['reason']})" if expected.get("reason") else ""
            lines.append(f"{r.id}: {expected['status']} -> {r.status}{why}")
    if complete:
        lines += [f"{claim_id}: in the baseline, not run" for claim_id in baseline
                  if claim_id not in ran]
    return lines


def against_declarations(baseline: dict[str, dict], claims: Iterable[Claim]) -> list[str]:
    """One line per claim whose baseline status is not its declared ``expected_status``, per
    claim missing from the baseline and per baseline entry that is no registered claim."""
    declared = {c.id: c.expected_status for c in claims}
    lines = [f"{claim_id}: declared {status}, baseline {baseline[claim_id]['status']}"
             for claim_id, status in declared.items()
             if claim_id in baseline and baseline[claim_id]["status"] != status]
    lines += [f"{claim_id}: declared {status}, not in the baseline"
              for claim_id, status in declared.items() if claim_id not in baseline]
    lines += [f"{claim_id}: in the baseline, not a registered claim" for claim_id in baseline
              if claim_id not in declared]
    return lines


def reason(record: Record) -> str:
    """Why a non-PASS claim is not PASS, from its record alone (what it measured against what
    it expected), so that a baseline entry never carries a number its record does not; "" for
    a PASS."""
    if record.status == "PASS":
        return ""
    return f"measured {record.measured}; expected {record.expected}"[:REASON_CHARS]


REASON_CHARS = 300


def entries(records: Sequence[Record]) -> dict[str, dict]:
    """The baseline entries ``{id: {"status", "reason"}}`` of ``records`` (:func:`reason`)."""
    return {r.id: {"status": r.status, "reason": reason(r)}
            for r in sorted(records, key=lambda r: r.id)}


def _write_claims(path: str | Path, claims: dict[str, dict], profile: str) -> Path:
    """Write the baseline file of ``claims`` (sorted by id), atomically."""
    text = dumps_json({"profile": profile, "claims": claims}, indent=1, sort_keys=True) + "\n"
    return atomic_write_text(path, text)


def write(path: str | Path, records: Sequence[Record], profile: str) -> Path:
    """Write the statuses of ``records`` as the baseline (:func:`entries`)."""
    return _write_claims(path, entries(records), profile)


def update(path: str | Path, records: Sequence[Record], profile: str,
           keep: Iterable[str]) -> Path:
    """Rewrite the baseline at ``path`` with the entries of ``records`` added or replaced
    (:func:`entries`) and the entries of
    ids not in ``keep`` (the claims no longer declared) dropped; every other entry as it was."""
    old = read(path, profile)
    kept = set(keep)
    claims = {claim_id: entry for claim_id, entry in old.items() if claim_id in kept}
    claims.update(entries(records))
    return _write_claims(path, claims, profile)
