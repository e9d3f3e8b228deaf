"""Configs by name from any folder (issue 24, requirement 1): a packaged config is named by its
path under experiments/configs (with or without .toml, with or without a leading
experiments/configs/), a file that exists wins, and `resharpen configs` lists them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resharpen.experiments.training.config import CONFIG_DIR, find_config, list_configs

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.mark.parametrize("name", ["set_complement/fit_placements_v32",
                                  "set_complement/fit_placements_v32.toml",
                                  "experiments/configs/set_complement/fit_placements_v32.toml",
                                  "experiments/configs/set_complement/fit_placements_v32"])
def test_a_packaged_config_is_found_by_name_from_any_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_config(name) == CONFIG_DIR / "set_complement" / "fit_placements_v32.toml"


def test_an_existing_file_wins_over_a_packaged_config_of_the_same_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "set_complement" / "base.toml"
    own.parent.mkdir()
    own.write_text('name = "mine"\n[task]\nvocab = 6\n')
    assert find_config("set_complement/base.toml") == Path("set_complement/base.toml")
    assert find_config("set_complement/base") == CONFIG_DIR / "set_complement" / "base.toml"
    from resharpen.experiments.set_complement.config import load_config

    assert load_config("set_complement/base.toml", profile="quick")["name"] == "mine"
    assert load_config("set_complement/base", profile="quick")["name"] == "base"


@pytest.mark.parametrize("name", ["nosuch", "set_complement/nosuch", "../configs/x",
                                  "/set_complement/base"])
def test_an_unknown_name_is_refused_with_the_listing_command(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"does not exist .*`resharpen configs`"):
        find_config(name)


def test_sweep_and_grid_files_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from resharpen.experiments.languages.grid import load_grid
    from resharpen.experiments.set_complement.sweep import plan

    planned = plan("set_complement/fit_placements_v32", profile="quick")
    assert planned["name"] == "fit_placements_v32-quick" and len(planned["configs"]) == 40
    assert load_grid("languages/othello", "quick")["configs"]


def test_list_configs_names_every_packaged_file_with_its_command_and_description():
    rows = {row["name"]: row for row in list_configs()}
    files = {p.relative_to(CONFIG_DIR).with_suffix("").as_posix()
             for p in CONFIG_DIR.rglob("*.toml")}
    assert set(rows) == files
    assert rows["set_complement/base"]["command"] == "train"
    assert rows["set_complement/fit_placements_v32"]["command"] == "sweep"
    assert rows["set_complement/placements_v32"]["command"] == "sweep"  # [search] in its base
    assert rows["languages/grid"]["command"] == "langs run --grid"
    assert all(row["description"] for row in rows.values()), "every config has a first comment"
    assert rows["set_complement/base"]["description"].startswith("The default run: the one-layer")


def test_cli_configs_and_train_by_name_from_outside_the_repository(tmp_path):
    """`resharpen configs` and `resharpen train NAME` in an empty folder outside the checkout."""
    assert ROOT not in tmp_path.resolve().parents
    listed = subprocess.run([sys.executable, "-m", "resharpen", "configs"], cwd=tmp_path,
                            env=_env(), capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "set_complement/fit_placements_v32" in listed.stdout and "sweep" in listed.stdout
    done = subprocess.run(
        [sys.executable, "-m", "resharpen", "train", "set_complement/base", "--profile", "quick",
         "--set", "task.vocab=6", "--set", "model.d_model=6", "--set", "train.steps=5",
         "--set", "train.warmup=1", "--set", "eval.per_length=2", "--out", "out/runs/named"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads((tmp_path / "out" / "runs" / "named" / "config.json").read_text())
    assert config["name"] == "base" and config["task"]["vocab"] == 6
    missing = subprocess.run([sys.executable, "-m", "resharpen", "train", "set_complement/nosuch"],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    assert "`resharpen configs` lists those" in missing.stderr
    assert not (tmp_path / "out" / "runs" / "nosuch").exists()
