"""A sweep file's ``[profile.<name>]`` table may set ``sweep.*`` and replace ``search`` entries
(the quick noise grid runs 4 of the full grid's 8 seeds), and a child file's own search wins."""
from __future__ import annotations

from resharpen.experiments.training.config import CONFIG_DIR
from resharpen.experiments.set_complement.sweep import plan


def write(path, text):
    path.write_text(text)
    return path


def test_profile_replaces_search_entries_and_sweep_settings(tmp_path):
    base = write(tmp_path / "grid.toml", """
name = "grid"
[task]
vocab = 16
[sweep]
runs = 4
[search]
"train.seed" = { grid = [0, 1, 2, 3] }
[profile.quick]
sweep.runs = 2
search."train.seed" = { grid = [5, 6] }
""")
    full, quick = plan(base, profile="full"), plan(base, profile="quick")
    assert [c["train"]["seed"] for c in full["configs"]] == [0, 1, 2, 3]
    assert full["settings"]["runs"] == 4
    assert [c["train"]["seed"] for c in quick["configs"]] == [5, 6]
    assert quick["settings"]["runs"] == 2


def test_child_search_wins_over_base_profile(tmp_path):
    write(tmp_path / "grid.toml", """
name = "grid"
[sweep]
runs = 2
[search]
"train.seed" = { grid = [0, 1] }
[profile.quick]
search."train.seed" = { grid = [7] }
sweep.runs = 1
""")
    child = write(tmp_path / "child.toml", """
name = "child"
base = "grid.toml"
[sweep]
runs = 3
[search]
"train.seed" = { grid = [0, 1, 2] }
""")
    assert [c["train"]["seed"] for c in plan(child, profile="quick")["configs"]] == [0, 1, 2]


def test_the_noise_grid_quick_profile_is_a_seed_subset_of_the_full_grid():
    path = CONFIG_DIR / "set_complement" / "fit_noise_v32.toml"
    full, quick = plan(path, profile="full"), plan(path, profile="quick")
    seeds = lambda p: sorted({c["train"]["seed"] for c in p["configs"]})  # noqa: E731
    assert seeds(full) == list(range(8)) and seeds(quick) == [0, 1, 2, 3]
    # quick: k = 1, 16 and one EMA decay (issue 22: the quick claims within 60 s)
    assert len(full["configs"]) == 96 and len(quick["configs"]) == 16
