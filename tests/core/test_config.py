"""The config machinery: TOML reader, --set parser, profiles, schema, base chains, output root."""
from pathlib import Path

import pytest

from resharpen.experiments.training import config as C

SCHEMA = C.Schema({"task": {"vocab": C.Field(int, 8, 2, 100)},
                   "train": {"lr": C.Field(float, 0.1, 0.0, 1.0, lo_open=True),
                             "steps": C.Field(int, 10, 1, 1000),
                             "schedule": C.Field(str, "cosine", choices=("cosine", "constant"))}})


def test_toml_reader_names_a_missing_or_broken_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="grid file .*missing.toml' does not exist"):
        C.read_toml(tmp_path / "missing.toml", "grid file")
    bad = tmp_path / "bad.toml"
    bad.write_text("[task\n")
    with pytest.raises(ValueError, match="config file .* is not valid TOML"):
        C.read_toml(bad)


def test_set_parser_reads_toml_scalars_and_bare_words():
    assert C.parse_set("train.lr=1e-3") == ("train", "lr", 0.001)
    assert C.parse_set(" model.norm = post ") == ("model", "norm", "post")
    assert C.parse_set('model.norm="pre"') == ("model", "norm", "pre")
    assert C.parse_set("task.ignore_pad=false") == ("task", "ignore_pad", False)
    assert C.parse_sets(["a.x=1", "a.y=2", "b.x=3", "a.x=4"]) == {"a": {"x": 4, "y": 2},
                                                                  "b": {"x": 3}}
    for bad, message in (("lr", "not of the form section.key=value"),
                         ("lr=1", "must be section.key"), ("a.b.c=1", "must be section.key"),
                         (".x=1", "must be section.key")):
        with pytest.raises(ValueError, match=message):
            C.parse_set(bad)


def test_profiles_merge_over_the_file_and_unknown_profiles_are_refused():
    raw = {"name": "g", "seeds": [0, 1, 2], "base": {"train": {"lr": 0.1, "steps": 5}},
           "profile": {"quick": {"seeds": [0], "base": {"train": {"steps": 2}}}}}
    quick = C.apply_profile(raw, "quick")
    assert quick == {"name": "g", "seeds": [0], "base": {"train": {"lr": 0.1, "steps": 2}}}
    assert C.apply_profile(raw, "full") == {k: v for k, v in raw.items() if k != "profile"}
    assert raw["profile"]["quick"]["seeds"] == [0] and raw["seeds"] == [0, 1, 2]  # untouched
    with pytest.raises(ValueError, match="unknown profile 'fast' in the grid"):
        C.apply_profile({"profile": {"fast": {}}}, "quick", "the grid")
    with pytest.raises(ValueError, match="profile 'slow' is not one of"):
        C.apply_profile(raw, "slow")


def test_schema_fills_defaults_and_names_what_is_allowed():
    assert SCHEMA.validate({}) == {"task": {"vocab": 8},
                                   "train": {"lr": 0.1, "steps": 10, "schedule": "cosine"}}
    assert SCHEMA.validate({"train": {"lr": 1}})["train"]["lr"] == 1.0
    for raw, message in (({"optim": {}}, "unknown section 'optim'; allowed: task, train"),
                         ({"train": {"lrr": 1.0}}, r"unknown key train.lrr; allowed in \[train\]"),
                         ({"train": {"lr": 0.0}}, r"allowed: float in \(0.0, 1.0\]"),
                         ({"train": {"steps": 1.5}}, "wrong type"),
                         ({"train": {"schedule": "step"}}, "allowed: one of 'cosine', 'constant'"),
                         ({"train": 3}, "section 'train' must be a table")):
        with pytest.raises(ValueError, match=message):
            SCHEMA.validate(raw)
    with pytest.raises(ValueError, match="no such field 'x'"):
        C.pick_fields(SCHEMA.sections["train"], x=1)


def test_file_then_base_chain_then_profile_then_set(tmp_path):
    (tmp_path / "base.toml").write_text(
        "[train]\nlr = 0.2\nsteps = 20\n[profile.quick]\ntrain.steps = 3\ntrain.lr = 0.5\n")
    (tmp_path / "child.toml").write_text(
        'name = "child"\nbase = "base.toml"\n[task]\nvocab = 16\n[train]\nlr = 0.3\n'
        '[profile.quick]\ntask.vocab = 4\n')
    full = C.load(tmp_path / "child.toml", SCHEMA)
    assert full == {"task": {"vocab": 16}, "train": {"lr": 0.3, "steps": 20, "schedule": "cosine"},
                    "name": "child"}
    quick = C.load(tmp_path / "child.toml", SCHEMA, ["train.schedule=constant"], profile="quick")
    # the child's own lr = 0.3 wins over its base's [profile.quick] lr = 0.5
    assert quick["task"]["vocab"] == 4 and quick["train"] == {"lr": 0.3, "steps": 3,
                                                              "schedule": "constant"}
    with pytest.raises(ValueError, match="unknown section 'optim'"):
        C.load(tmp_path / "child.toml", SCHEMA, ["optim.lr=1"])
    (tmp_path / "loop.toml").write_text('base = "loop.toml"\n')
    with pytest.raises(ValueError, match="base chain loops"):
        C.load(tmp_path / "loop.toml", SCHEMA)


def test_a_childs_own_value_wins_over_its_bases_profile_table(tmp_path):
    """long_runs_v32 (vocab = 32, base long_runs with [profile.quick] task.vocab = 16) must run
    at v = 32 in the quick profile, not as a copy of long_runs-quick."""
    (tmp_path / "parent.toml").write_text(
        "[task]\nvocab = 64\n[train]\nsteps = 100\n"
        "[profile.quick]\ntask.vocab = 16\ntrain.steps = 5\n")
    (tmp_path / "child.toml").write_text('base = "parent.toml"\n[task]\nvocab = 32\n')
    parent = C.load(tmp_path / "parent.toml", SCHEMA, profile="quick")
    child = C.load(tmp_path / "child.toml", SCHEMA, profile="quick")
    assert parent["task"]["vocab"] == 16 and child["task"]["vocab"] == 32
    assert child["train"]["steps"] == 5  # what the child does not set still follows the profile
    assert C.load(tmp_path / "child.toml", SCHEMA)["task"]["vocab"] == 32  # full: no profile
    # the child's own profile table wins over both
    (tmp_path / "own.toml").write_text(
        'base = "parent.toml"\n[task]\nvocab = 32\n[profile.quick]\ntask.vocab = 8\n')
    assert C.load(tmp_path / "own.toml", SCHEMA, profile="quick")["task"]["vocab"] == 8
    assert C.load(tmp_path / "own.toml", SCHEMA, ["task.vocab=12"], profile="quick")["task"] == \
        {"vocab": 12}  # and --set over everything
    # a grandchild: its base's own value wins over the grandparent's profile table
    (tmp_path / "grandchild.toml").write_text('base = "child.toml"\n[train]\nlr = 0.5\n')
    assert C.load(tmp_path / "grandchild.toml", SCHEMA, profile="quick")["task"]["vocab"] == 32
    (tmp_path / "bad.toml").write_text('base = "parent.toml"\n[profile]\nquick = 3\n')
    with pytest.raises(ValueError, match="must be a table of section tables"):
        C.load(tmp_path / "bad.toml", SCHEMA, profile="quick")


def test_every_result_goes_under_one_output_root():
    assert C.OUT_ROOT == Path("out")
    assert C.run_folder("r") == Path("out/runs/r") and C.sweep_folder("s") == Path("out/sweeps/s")
    assert C.output_folder("collapse_train") == Path("out/collapse_train")
