"""No two experiment claims are decided on identical data unless they say so.

Every experiment claim of train.* and langtrain.* names the sweep or grid it decides on
(``claim_data()`` of its module). Claims naming the same one say that they share its runs (and
are Holm-adjusted together, or, on the task grid, per question:
``languages.claims_train.QUESTIONS``). Claims naming different ones must get different runs: the
planned run configs (names aside) of every pair of named sweeps differ, in both profiles. This
is what caught ``long_runs_v32-quick`` being row for row ``long_runs-quick`` (a base's
``[profile.quick]`` overriding the child's own ``vocab = 32``). Nothing is trained here.
"""
from __future__ import annotations

import itertools
import json

import pytest

from resharpen.claims import all_claims
from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.common.profiles import PROFILES
from resharpen.experiments.languages import claims_train as lang_claims
from resharpen.experiments.languages.grid import GRID_DIR, load_grid
from resharpen.experiments.set_complement import claims_train as sc_claims
from resharpen.experiments.set_complement.sweep import plan

CLAIMS = {c.id: c for c in all_claims()}
MODULES = {"train": sc_claims, "langtrain": lang_claims}


def planned_runs(source: str, profile: str) -> str:
    """The run configs a named sweep (Set Complement) or grid (languages) plans, names dropped,
    as one canonical JSON string."""
    if source in ("langs", "othello", "noise"):
        path = GRID_DIR / ("grid.toml" if source == "langs" else f"{source}.toml")
        configs = load_grid(path, profile)["configs"]
    else:
        configs = plan(CONFIG_DIR / "set_complement" / f"{source}.toml", 16, profile)["configs"]
    return json.dumps([{k: v for k, v in c.items() if k != "name"} for c in configs],
                      sort_keys=True)


def test_every_experiment_claim_names_its_data():
    for prefix, module in MODULES.items():
        named = module.claim_data()
        experiments = {i for i, c in CLAIMS.items()
                       if i.startswith(prefix + ".") and c.kind == "experiment"}
        assert experiments == set(named), (prefix, experiments ^ set(named))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("prefix", sorted(MODULES))
def test_claims_naming_different_data_get_different_runs(prefix, profile):
    sources = sorted(set(MODULES[prefix].claim_data().values()))
    runs = {source: planned_runs(source, profile) for source in sources}
    same = [(a, b) for a, b in itertools.combinations(sources, 2) if runs[a] == runs[b]]
    assert not same, f"{profile}: these sweeps plan identical runs: {same}"


def test_a_detail_says_what_the_runs_were(tmp_path):
    """describe_runs reads the runs themselves: a quick run of a "12000-step, v = 32" sweep says
    it ran 200 steps at v = 32 with its seeds."""
    from resharpen.experiments.training.sweep import describe_runs

    (tmp_path / "sweep.json").write_text(json.dumps({"identity": {"profile": "quick"}}))
    for i, (seed, steps) in enumerate([(3, 200), (7, 200), (9, 300)]):
        run = tmp_path / "runs" / f"r{i}"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"task": {"vocab": 32}, "model": {"d_model": 16},
                                                     "train": {"seed": seed, "steps": steps}}))
        if i < 2:  # the third is unfinished: no summary
            (run / "summary.json").write_text("{}")
    text = describe_runs(tmp_path)
    assert text == (f"ran {tmp_path.name}; profile quick; 2 finished runs; 2 seeds; v 32; "
                    "d_model 16; steps 200")
