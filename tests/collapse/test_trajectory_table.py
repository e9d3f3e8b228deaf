"""The archived table behind fig_collapse_trajectory at full size: written and read back, read
only for the claims' current stacks, and equal in what it decides to the claims' full records."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from resharpen.experiments.collapse import stack_checks, trajectory_table

ROOT = Path(__file__).resolve().parents[2]


def _shrink(monkeypatch, n: int = 16) -> None:
    monkeypatch.setattr(stack_checks, "TRAJECTORY_SAMPLES", (3, 3))
    monkeypatch.setattr(stack_checks, "stack_sizes",
                        lambda profile: dict(n=n, d=n, depth=3, samples=3))


def test_the_table_reads_back_only_for_the_claims_current_stacks(tmp_path, monkeypatch):
    """Written at a shrunk full size, the table reads back row for row; it is not read at the
    quick profile, nor once the claims' stacks differ from those it was made for."""
    _shrink(monkeypatch)
    path = tmp_path / "trajectories.json"
    written = trajectory_table.write(path, "full")
    assert written.name == "trajectories.json.gz"
    found = trajectory_table.archived_rows("full", path)
    assert [(r["norm"], r["mlp"], r["k"]) for r in found] == list(trajectory_table.CASES)
    fresh = trajectory_table.rows("full")
    for old, new in zip(found, fresh):
        assert np.allclose(old["gap"], new["gap"]) and np.allclose(old["se"], new["se"])
    assert trajectory_table.archived_rows("quick", path) is None
    _shrink(monkeypatch, n=12)  # other stacks: the table is not theirs
    assert trajectory_table.archived_rows("full", path) is None


def test_the_archived_table_decides_as_the_claims_full_records():
    """Each archived row, put through the claims' interval rule, gives the status and the
    largest gap of that claim's full-size record (the record made by running the claim, the
    table by the writer: two runs of the same seeded stacks)."""
    found = trajectory_table.archived_rows("full")
    assert found is not None, ("the archive's trajectory table is missing or made for other "
                               "stacks: python -m resharpen.experiments.collapse."
                               "trajectory_table --write")
    records = {c["id"]: c for c in
               json.loads((ROOT / "results" / "full" / "ledger.json").read_text())["claims"]}
    for row in found:
        claim_id = (f"collapse.stack_{row['norm']}_{row['mlp'] or 'attention'}_"
                    f"x{int(row['k'])}")
        record = records[claim_id]
        decided = stack_checks.interval_status(row["gap"], row["se"],
                                               row["config"]["samples"])
        assert decided["status"] == record["status"], claim_id
        largest = float(re.search(r"max gap ([0-9.]+)", record["measured"]).group(1))
        assert abs(max(abs(g) for g in row["gap"]) - largest) <= 0.0005, claim_id
