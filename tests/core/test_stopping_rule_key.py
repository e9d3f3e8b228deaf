"""One stopping-rule key for every trainer: ``fit.until_id_invalid_mass``.

* both trainers' schemas (Set Complement, next-token) take the rule from the one ``[fit]`` field
  of :data:`resharpen.experiments.training.schema.FIT_FIELDS`, and neither ``[train]`` has it;
* the old spelling ``train.until_id_invalid_mass`` is refused wherever a config is written (a
  ``--set``, a file's table, a profile table, a sweep's ``[search]``, a Python mapping) with one
  line naming the new key;
* results written with the old spelling (a run's config.json, a sweep's identity) are read in the
  new one, so their runs still count as finished and a sweep resumes from them.
"""
from __future__ import annotations

import json

import pytest

from resharpen.experiments.training import schema
from resharpen.experiments.training.config import CONFIG_DIR

OLD, NEW = "train.until_id_invalid_mass", "fit.until_id_invalid_mass"
SC_BASE = CONFIG_DIR / "set_complement" / "base.toml"


def _schemas():
    from resharpen.experiments.set_complement.config import SCHEMA as SC
    from resharpen.experiments.training.next_token_config import SCHEMA as NEXT_TOKEN

    return {"set_complement": SC, "next_token": NEXT_TOKEN}


@pytest.mark.parametrize("trainer", ["set_complement", "next_token"])
def test_every_trainer_reads_the_rule_from_the_one_fit_field(trainer):
    sections = _schemas()[trainer].sections
    assert "until_id_invalid_mass" not in sections["train"]
    field, shared = sections["fit"]["until_id_invalid_mass"], schema.FIT_FIELDS[
        "until_id_invalid_mass"]
    assert (field.kind, field.default, field.lo, field.hi) == (shared.kind, shared.default,
                                                                shared.lo, shared.hi)


def _sc(overrides=(), path=SC_BASE):
    from resharpen.experiments.set_complement.config import load_config

    return load_config(path, list(overrides), profile="quick")


def _sweep(path):
    from resharpen.experiments.set_complement.config import SCHEMA
    from resharpen.experiments.training.config import load_sweep

    return load_sweep(path, SCHEMA, profile="quick")


def _next_token(table):
    from resharpen.experiments.training.next_token_config import make_config

    return make_config(table)


def _file(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(f'base = "{SC_BASE}"\n' + text)
    return path


@pytest.mark.parametrize("write", [
    pytest.param(lambda tmp: _sc([f"{OLD}=0.01"]), id="--set"),
    pytest.param(lambda tmp: _sc(path=_file(tmp, "[train]\nuntil_id_invalid_mass = 0.01\n")),
                 id="a file's [train] table"),
    pytest.param(lambda tmp: _sc(path=_file(
        tmp, "[profile.full.train]\nuntil_id_invalid_mass = 0.01\n")), id="a profile table"),
    pytest.param(lambda tmp: _sweep(_file(
        tmp, '[search]\n"train.until_id_invalid_mass" = { grid = [0.01, 0.02] }\n')),
        id="a sweep's [search]"),
    pytest.param(lambda tmp: _next_token({"train": {"until_id_invalid_mass": 0.01}}),
                 id="a next-token mapping"),
])
def test_the_old_spelling_is_refused_naming_the_new_key(tmp_path, write):
    with pytest.raises(ValueError) as info:
        write(tmp_path)
    message = str(info.value)
    assert OLD in message and NEW in message and "\n" not in message, message


def test_the_command_line_refuses_the_old_spelling_in_one_line(capsys):
    from resharpen.cli import main

    assert main(["train", "set_complement/base", "--set", f"{OLD}=0.01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and NEW in err and len(err.splitlines()) == 1, err


def _old_spelling(config: dict) -> dict:
    """``config`` as a Set Complement result written before the rule moved to [fit] holds it."""
    old = json.loads(json.dumps(config))
    old["train"]["until_id_invalid_mass"] = old.pop("fit")["until_id_invalid_mass"]
    return old


def test_results_written_with_the_old_spelling_are_read_in_the_new_one(tmp_path):
    """A sweep folder whose sweep.json and run config.json hold the old key resumes: its
    finished run counts as finished (nothing is trained), and every reader gives the config
    with the rule in [fit]."""
    from resharpen.experiments.training.archive import ARCHIVED_MARKER
    from resharpen.experiments.training.runs import load_run
    from resharpen.experiments.training.sweep import execute, load_runs, read_sweep_file

    config = {**_sc(), "name": "old-0000"}
    assert config["fit"]["until_id_invalid_mass"] == 1e-3
    identity = {"name": "old", "profile": "quick", "base": {**_sc(), "name": "old"}, "seed": 0}
    root = tmp_path / "old"
    run = root / "runs" / config["name"]
    run.mkdir(parents=True)
    (root / "sweep.json").write_text(json.dumps(
        {"identity": {**identity, "base": _old_spelling(identity["base"])}, "runs": 1}))
    (run / "config.json").write_text(json.dumps(_old_spelling(config)))
    (run / "summary.json").write_text(json.dumps({"primary": "raw"}))
    (run / ARCHIVED_MARKER).write_text("")

    def must_not_train(configs):
        raise AssertionError(f"trained {[c['name'] for c in configs]}: the run was finished")

    execute(root, identity, [config], must_not_train, lambda: None, progress=False)
    assert read_sweep_file(root)["identity"] == identity
    assert [r["config"] for r in load_runs(root)] == [config]
    assert load_run(run).config == config
    assert schema.stored_config(config) is config  # today's spelling passes unchanged


def test_ema_window_results_made_before_the_rename_are_todays_protocol():
    """The EMA-window protocol's stored key (its common settings) written with the old
    stopping-rule spelling is read as today's protocol."""
    from resharpen.experiments.set_complement.ema_window import protocol_key, stored_key

    today = protocol_key("full")
    old = {**today, "common": [s.replace("fit.until_id_invalid_mass", "train.until_id_invalid_mass")
                               for s in today["common"]]}
    assert old != today and stored_key(old) == today
    assert stored_key(None) is None
