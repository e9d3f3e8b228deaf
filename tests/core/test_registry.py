"""Every registered claim id: its metadata, where it is declared, and its quick-profile status.

The statuses are those of the quick-profile ledger (``resharpen verify --profile quick``): every
claim passes except the known findings in ``KNOWN_FAIL``, which are measured disagreements the
ledger reports (a committed baseline tells a regression from a known finding), and the
experiment claims in ``KNOWN_INCONCLUSIVE``, whose quick data are too few to decide. Claims whose
quick check took more than ~3 s in that ledger (``make reproduce``: two workers on two cores),
and the experiment claims that train or read sweeps, carry the ``slow`` marker; the rest add
about 35 s to the default suite. The checks run in a scratch folder, so that the sweeps they train are
the quick ones and land outside the repository.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from resharpen.claims import PREFIX_MODULES, all_claims
from resharpen.experiments.core import ledger

CLAIMS = {c.id: c for c in all_claims()}

KNOWN_FAIL = {
    "collapse.gradient_contraction", "collapse.stack_post_attention_x2",
    "collapse.stack_post_attention_x4", "collapse.stack_post_swiglu_x2",
    "collapse.stack_post_swiglu_x4", "train.bema.ood_kl", "train.dropout.ood_kl", "train.ema.ood_kl", "train.ema.ood_kl.fixed",
    "train.ema.ood_kl.long", "train.ema.ood_kl.long_v32",
    "fit.dropout.ood", "fit.none.two_over_s", "fit.noise.ema_gain",  # measured findings
    "fit.noise.bema_gain",
}
KNOWN_INCONCLUSIVE = {  # quick data too small to decide (docs/ledger.md)
    "langtrain.bema.ood_illegal_mass", "langtrain.ema.ood_illegal_mass",
    "langtrain.othello.ema_ood", "langtrain.postnorm.ood_illegal_mass",
    "train.dispersion.margin_exponent", "train.postnorm.balanced_grid",
    "train.postnorm.long_runs", "train.postnorm.long_runs_v32", "train.postnorm.multi_layer",
    "train.postnorm.ood_invalid_mass", "train.postnorm.random_search",
    "train.postnorm.random_search_v32",
}
SLOW = {
    "collapse.attn_step_one_layer", "collapse.contraction_bound", "collapse.ffn_step_one_layer",
    "collapse.gradient_contraction",
    "collapse.prefix_averaging", "collapse.training_collapse", "dyn.stack.preln_norm",
    "sc.rank.below_bound", "sc.rank.symbolic", "train.noise.trace",
    # experiment claims that train (or read) sweeps and task grids
    "fit.attn_out.closed_form_band", "fit.dropout.ood", "fit.none.lemma_residual",
    "fit.none.two_over_s", "fit.noise.ema_gain", "fit.noise.bema_gain",
    "fit.normalized_beat_none_ood",
    "fit.post.approaches_attn_out",
    "langtrain.bema.ood_illegal_mass", "langtrain.ema.ood_illegal_mass",
    "langtrain.othello.ema_ood", "langtrain.postnorm.ood_illegal_mass",
    "train.bema.ood_kl", "train.bema.ood_kl.fixed", "train.bema.ood_kl.long",
    "train.bema.ood_kl.long_v32", "train.dispersion.margin_exponent", "train.dropout.ood_kl",
    "train.ema.ood_kl", "train.ema.ood_kl.fixed", "train.ema.ood_kl.long",
    "train.ema.ood_kl.long_v32", "train.lengthgen.degrades", "train.postnorm.balanced_grid",
    "train.postnorm.long_runs", "train.postnorm.long_runs_v32", "train.postnorm.multi_layer",
    "train.postnorm.ood_invalid_mass", "train.postnorm.random_search",
    "train.postnorm.random_search_v32",
}


def by_speed(ids):
    return [pytest.param(i, marks=pytest.mark.slow) if i in SLOW else i for i in ids]


def location(entry: str) -> tuple[Path, int, str]:
    """(file, line, what) of one ``where`` entry, ``"path:line what"``."""
    match = re.fullmatch(r"(.+?):(\d+) (.+)", entry)
    assert match, entry
    return Path(match[1]), int(match[2]), match[3]


def source_line(path: Path, number: int) -> str:
    assert path.is_file(), path
    return path.read_text().splitlines()[number - 1]


def test_the_status_tables_name_registered_claims():
    assert KNOWN_FAIL | KNOWN_INCONCLUSIVE <= set(CLAIMS) and SLOW <= set(CLAIMS)
    assert {i.split(".")[0] for i in CLAIMS} == set(PREFIX_MODULES)


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_claim_metadata_and_where_it_is_declared(claim_id):
    c = CLAIMS[claim_id]
    assert c.source.strip() and c.statement.strip() and c.tolerance.strip()
    assert c.kind in ledger.KINDS
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


@pytest.mark.parametrize("claim_id", by_speed(sorted(CLAIMS)))
def test_claim_quick_status_is_the_known_one(claim_id, scratch_folder):
    record = ledger.run_claim(CLAIMS[claim_id], "quick")
    expected = "FAIL" if claim_id in KNOWN_FAIL else \
        "INCONCLUSIVE" if claim_id in KNOWN_INCONCLUSIVE else "PASS"
    assert record.status == expected, record


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
    assert any(e.endswith("resharpen.experiments.core.averaging.BEMA") for e in bema), bema
