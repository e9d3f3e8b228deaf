"""Every registered claim id: its metadata, where it is declared, and its quick-profile status.

Each claim declares, with its ``@claim``, its quick-profile status (``expected_status``: PASS,
a known finding that FAILs, or INCONCLUSIVE when the quick data are too few to decide) and its
cost class (``cost``): the test below runs every claim and asserts the declared status, and a
claim declared ``slow`` (over ~3 s in the quick ledger of ``make reproduce``, two workers on two
cores, or it trains or reads sweeps) carries the ``slow`` marker; the fast ones add about 35 s to
the default suite. The committed baseline is checked against the same declarations
(test_baseline.py). The checks run in a scratch folder, so that the sweeps they train are the
quick ones and land outside the repository.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from resharpen.claims import PREFIX_MODULES, all_claims
from resharpen.experiments import ledger

CLAIMS = {c.id: c for c in all_claims()}


def by_cost(ids):
    """The ids, those of claims declared ``cost="slow"`` with the ``slow`` marker."""
    return [pytest.param(i, marks=pytest.mark.slow) if CLAIMS[i].cost == "slow" else i
            for i in ids]


def location(entry: str) -> tuple[Path, int, str]:
    """(file, line, what) of one ``where`` entry, ``"path:line what"``."""
    match = re.fullmatch(r"(.+?):(\d+) (.+)", entry)
    assert match, entry
    return Path(match[1]), int(match[2]), match[3]


def source_line(path: Path, number: int) -> str:
    assert path.is_file(), path
    return path.read_text().splitlines()[number - 1]


def test_every_prefix_has_its_module():
    assert {i.split(".")[0] for i in CLAIMS} == set(PREFIX_MODULES)


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_claim_metadata_and_where_it_is_declared(claim_id):
    c = CLAIMS[claim_id]
    assert c.source.strip() and c.statement.strip() and c.tolerance.strip()
    assert c.kind in ledger.KINDS
    assert c.cost in ledger.COSTS and c.expected_status in ledger.EXPECTED_STATUSES
    assert c.check.__name__.startswith("check_"), c.check.__name__
    assert c.module == c.check.__module__ == PREFIX_MODULES[claim_id.split(".")[0]]
    entries = ledger.where(c)
    path, number, what = location(entries[0])
    assert what.startswith(claim_id)
    assert f'"{claim_id}"' in source_line(path, number)  # the id is written where it is declared
    check = [e for e in entries if e.endswith(f"{c.check.__module__}.{c.check.__qualname__}")]
    assert check, entries
    path, number, _ = location(check[0])
    assert "@claim(" in source_line(path, number)
    for entry in entries[1:]:
        path, number, _ = location(entry)
        assert source_line(path, number).strip()


@pytest.fixture(scope="module")
def scratch_folder(tmp_path_factory):
    """A working folder for the checks: sweeps they train go to its out/, not the repository's."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("ledger"))
    yield
    os.chdir(before)


@pytest.mark.parametrize("claim_id", by_cost(sorted(CLAIMS)))
def test_claim_quick_status_is_the_declared_one(claim_id, scratch_folder):
    record = ledger.run_claim(CLAIMS[claim_id], "quick")
    assert record.status == CLAIMS[claim_id].expected_status, record


def test_where_names_the_derivations_a_check_uses():
    readout = ledger.where(CLAIMS["sc.readout.reconstruction_regression"])
    assert any(e.endswith("resharpen.theory.set_complement.formulas.readout_margins")
               and "theory/set_complement/formulas.py:" in e for e in readout), readout
    # a check made by a factory: the line with the id, the factory's check, and what the
    # module's helpers call (trajectory_outcome -> simulate, recursion)
    stack = ledger.where(CLAIMS["collapse.stack_post_attention_x2"])
    assert "collapse/claims.py:" in stack[0] and stack[0].endswith(" collapse.stack_post_attention_x2")
    assert any(e.endswith("resharpen.theory.collapse.recursion.recursion") for e in stack), stack
    assert any(e.endswith("resharpen.experiments.collapse.stack.simulate") for e in stack), stack
    # names imported inside the check are followed too
    bema = ledger.where(CLAIMS["train.bema.limits"])
    assert any(e.endswith("resharpen.experiments.training.averaging.BEMA") for e in bema), bema
