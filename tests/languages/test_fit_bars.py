"""The numbers docs/task_training.md ("What does the fit ask?") and grid.toml state about the
first 64 full-grid runs, trained with the invalid-mass fit alone, checked against the table
kept from them (results/full/langs_fit_by_invalid_mass_alone.jsonl: one row per run and
weight set with its fit step, ID invalid mass, ID total variation and OOD invalid mass)."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "results" / "full" / "langs_fit_by_invalid_mass_alone.jsonl"


@pytest.fixture(scope="module")
def rows():
    return [json.loads(line) for line in TABLE.read_text().splitlines() if line]


def fitted(rows, weights):
    return [r for r in rows if r["weights"] == weights and r["fit_step"] is not None]


def test_bema_met_the_invalid_mass_fit_degenerately(rows):
    assert len({r["run"] for r in rows}) == 64
    bema = fitted(rows, "bema")
    above = [r["id_tv"] for r in bema if r["id_tv"] > 0.1]
    assert len(bema) == 64 and len(above) == 45
    assert round(min(above), 3) == 0.114 and round(max(above), 3) == 0.555


def test_dyck_bema_kept_from_step_50_while_raw_never_fitted(rows):
    dyck = [r for r in rows if r["task"] in ("dyck2", "dyck3")]
    bema = [r for r in dyck if r["weights"] == "bema"]
    assert len(bema) == 16 and {r["fit_step"] for r in bema} == {50}
    assert 0.0001 <= min(r["id_invalid_mass"] for r in bema)
    assert max(r["id_invalid_mass"] for r in bema) <= 0.003
    assert round(min(r["id_tv"] for r in bema), 3) == 0.249
    assert round(max(r["id_tv"] for r in bema), 2) == 0.33
    assert all(r["fit_step"] is None and r["steps_trained"] == 5000
               for r in dyck if r["weights"] == "raw")


def test_ema_and_raw_fits_were_not_degenerate_and_ema_lagged_at_most_3_33x(rows):
    ema, raw = fitted(rows, "ema"), fitted(rows, "raw")
    assert len(ema) == len(raw) == 41 and max(r["id_tv"] for r in ema) <= 0.07
    assert sum(r["id_tv"] <= 0.1 for r in raw) == 40
    step = {(r["run"], r["weights"]): r["fit_step"] for r in rows}
    ratios = [step[(r["run"], "ema")] / step[(r["run"], "raw")] for r in raw
              if step[(r["run"], "ema")] is not None]
    assert len(ratios) == 41 and round(max(ratios), 2) == 3.33
