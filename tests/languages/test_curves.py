"""The per-length curves of a task grid (experiments/languages/curves.py): the language figures
draw the same numbers from the run folders' per-length records and from the curve table the
archive keeps instead of them (in place, or restored into out/)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from number_fingerprint import figure_data

from resharpen.experiments.common.stored import read_json
from resharpen.experiments.languages.curves import (STATISTICS, TABLE_FILE, grid_table,
                                                    group_entry, pack_table, run_rows)
from resharpen.experiments.training import archive

GRID = {"name": "cv",
        "search": {"task.name": {"grid": ["dyck1", "anbn"]}, "model.norm": {"grid": ["pre", "post"]},
                   "train.seed": {"grid": [0, 1]}},
        "task": {"train_len": 6, "eval_len": 12},
        "model": {"d_model": 8, "n_layers": 1, "n_heads": 1},
        "train": {"steps": 5, "batch_size": 8, "warmup": 0}, "eval": {"count": 8}}


@pytest.fixture(scope="module")
def grid_folder(tmp_path_factory):
    """A finished tiny grid: 2 tasks x 2 placements x 2 seeds, each with its per-length records."""
    from resharpen.experiments.languages.grid import run_grid

    return run_grid(GRID, out=tmp_path_factory.mktemp("grid") / "cv", workers=1, progress=False)


def drawn(root) -> dict:
    """{task: (figure_data, RGBA pixels)} of every per-task figure of the grid folder ``root``."""
    import matplotlib.pyplot as plt

    from resharpen.paper_figs.languages.fig_langtrain_curves import grid_lines, task_figure

    out = {}
    for task, lines in sorted(grid_lines(root).items()):
        fig = task_figure(task, lines, "cv")
        fig.canvas.draw()
        out[task] = (figure_data(fig), np.asarray(fig.canvas.buffer_rgba()).copy())
        plt.close(fig)
    return out


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[t][0] == b[t][0] and np.array_equal(a[t][1], b[t][1]) for t in a)


def test_the_figures_drawn_from_the_archive_equal_those_from_the_run_folders(grid_folder,
                                                                           tmp_path):
    from resharpen.cli import archive_tables

    store = tmp_path / "archive"
    done = archive.pack(grid_folder, store, tables=archive_tables())  # as `archive pack` does
    assert done["tables"] == [TABLE_FILE] and done["added"] == 8
    packed = store / "sweeps" / "cv"
    assert (packed / (TABLE_FILE + ".gz")).is_file() and not (packed / TABLE_FILE).exists()
    assert not list(packed.rglob("per_length.json*"))  # the records themselves stay in out/
    fresh = tmp_path / "restored" / "cv"
    archive.restore("cv", fresh, store)
    assert (fresh / TABLE_FILE).is_file() and not list(fresh.rglob("per_length.json"))
    from_runs = drawn(grid_folder)
    assert set(from_runs) == {"anbn", "dyck1"}
    assert same(from_runs, drawn(packed)) and same(from_runs, drawn(fresh))
    # the table holds what the figure draws and nothing more: no tv, no per-seed curves
    table = read_json(packed / TABLE_FILE, "curve table")
    assert table["statistics"] == STATISTICS and len(table["groups"]) == 4
    line = table["groups"][0]["lines"]
    assert set(line) == {"raw", "ema", "bema"} and set(line["ema"]) == {"length", "n", "mean"}
    assert set(line["raw"]["lo"]) == {"invalid_mass", "kl", "top1_invalid"}
    assert line["raw"]["n"] == 2 and line["raw"]["length"] == list(range(1, 13))


def test_one_function_makes_the_statistics_from_either_source(grid_folder):
    """The entry of a group equals the mean, min and max over its runs' per-length records
    (invalid mass and KL floored at 1e-8), NaN ignored; pack writes exactly grid_table's."""
    runs = sorted((grid_folder / "runs").glob("dyck1-post-s*"))
    records = [read_json(r / "per_length.json") for r in runs]
    entry = next(e for e in grid_table(grid_folder)[0] if (e["task"], e["norm"]) == ("dyck1", "post"))
    for metric, floor in (("invalid_mass", 1e-8), ("kl", 1e-8), ("top1_invalid", None)):
        values = np.array([[r[metric] for r in rec["raw"]] for rec in records])
        values = np.clip(values, floor, None) if floor else values
        assert entry["lines"]["raw"]["mean"][metric] == np.nanmean(values, axis=0).tolist()
        assert entry["lines"]["raw"]["hi"][metric] == np.nanmax(values, axis=0).tolist()
    assert entry["runs"] == ["dyck1-post-s0", "dyck1-post-s1"]
    rows = [{"run": "r", "task": "t", "norm": "pre", "train_len": 2, "weights": "raw",
             "length": [1, 2], "invalid_mass": [float("nan"), 0.5], "kl": [0.0, 1.0],
             "top1_invalid": [0.0, 1.0]}]
    rows.append({**rows[0], "run": "s", "invalid_mass": [float("nan"), 0.25]})
    made = group_entry(rows)["lines"]["raw"]
    assert np.isnan(made["mean"]["invalid_mass"][0]) and made["mean"]["invalid_mass"][1] == 0.375
    assert made["lo"]["kl"] == [1e-8, 1.0]  # floored
    with pytest.raises(ValueError, match="different lengths"):
        group_entry([rows[0], {**rows[1], "length": [1, 3]}])
    with pytest.raises(ValueError, match=r"per-length records: raw\[0\].kl is missing"):
        run_rows({"name": "x", "task": {"name": "t", "train_len": 2}, "model": {"norm": "pre"}},
                 {"raw": [{"length": 1, "invalid_mass": 0.1, "top1_invalid": 0.0}]})


def test_a_repack_keeps_the_groups_whose_records_are_gone(grid_folder, tmp_path):
    """Packing again from a folder restored from the archive (no per-length records) keeps the
    archived groups; a group the table does not cover makes the figure name the command."""
    from resharpen.paper_figs import MissingResults
    from resharpen.paper_figs.languages.fig_langtrain_curves import grid_lines

    store = tmp_path / "archive"
    archive.pack(grid_folder, store, tables={TABLE_FILE: pack_table})
    table = read_json(store / "sweeps" / "cv" / TABLE_FILE)
    fresh = tmp_path / "restored" / "cv"
    archive.restore("cv", fresh, store)
    (fresh / TABLE_FILE).unlink()
    with pytest.raises(MissingResults, match="anbn/post, anbn/pre, dyck1/post, dyck1/pre"):
        grid_lines(fresh)
    archive.pack(fresh, store, tables={TABLE_FILE: pack_table})
    assert read_json(store / "sweeps" / "cv" / TABLE_FILE) == table
    # a table of other statistics is not read; one that covers other runs neither
    other = {**table, "statistics": {**STATISTICS, "floor": 1e-6}}
    (fresh / TABLE_FILE).write_text(json.dumps(other))
    assert grid_table(fresh)[1] == ["anbn/post", "anbn/pre", "dyck1/post", "dyck1/pre"]
    short = {**table, "groups": [{**g, "runs": g["runs"][:1]} for g in table["groups"]]}
    (fresh / TABLE_FILE).write_text(json.dumps(short))
    assert len(grid_table(fresh)[1]) == 4


def test_pack_makes_no_table_of_a_sweep_that_is_not_a_task_grid(tmp_path):
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps({"identity": {}, "runs": 0}))
    assert pack_table(tmp_path / "sw", None) is None
    done = archive.pack(tmp_path / "sw", tmp_path / "archive", tables={TABLE_FILE: pack_table})
    assert done["tables"] == []
    with pytest.raises(ValueError, match="sweep table is named"):
        archive.pack(tmp_path / "sw", tmp_path / "archive", tables={"curves.json": pack_table})


def test_the_full_profile_reads_a_language_grid_from_the_archive(grid_folder, tmp_path,
                                                                monkeypatch):
    """With no grid in out/, the full profile's language figures read the archived copy in
    place (here the tiny grid, archived as the Othello study's folder would be)."""
    from resharpen.paper_figs.languages import finished_grid
    from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

    store = tmp_path / "archive"
    archive.pack(grid_folder, store, tables={TABLE_FILE: pack_table})
    packed = store / "sweeps" / "cv"
    monkeypatch.chdir(tmp_path)  # no out/ here
    monkeypatch.setattr(archive, "archived_sweep",
                        lambda name: packed if name == "othello" else None)
    assert finished_grid("othello.toml", "full", "Othello study") == packed
    paths = figures_of(packed, tmp_path / "figs", prefix="fig_langtrain_study_", profile="full")
    assert sorted(p.name for p in paths if p.suffix == ".png") == [
        "fig_langtrain_study_anbn.png", "fig_langtrain_study_dyck1.png"]


def test_a_partial_full_grid_draws_its_finished_placements_only(grid_folder, tmp_path,
                                                                monkeypatch):
    """While the full grid is not finished, its figure draws the (task, placement) groups whose
    every planned run has finished, names them and the count in the title, and leaves out a
    group with a seed missing; no finished group at all skips it with the command."""
    import shutil

    from resharpen.experiments.languages import grid as grid_module
    from resharpen.experiments.training import archive as archive_module
    from resharpen.paper_figs import MissingResults, results
    from resharpen.paper_figs.languages import fig_langtrain_curves as figure

    partial = tmp_path / "out" / "cv"
    shutil.copytree(grid_folder, partial)
    shutil.rmtree(partial / "runs" / "anbn-post-s1")  # anbn/post lacks a seed
    monkeypatch.setattr(grid_module, "grid_file", lambda profile: GRID)
    monkeypatch.setattr(grid_module, "default_root", lambda name: partial)
    monkeypatch.setattr(archive_module, "archived_sweep", lambda name: None)
    root, groups, finished, planned = results.finished_placements("full")
    assert (root, finished, planned) == (partial, 7, 8)
    assert groups == {("anbn", "pre"), ("dyck1", "pre"), ("dyck1", "post")}
    titles = []
    monkeypatch.setattr(figure, "task_figure", lambda task, lines, grid, profile, part:
                        titles.append((task, sorted({n for n, _ in lines}), part)) or
                        __import__("matplotlib.pyplot").pyplot.figure())
    figure.figures_of(root, tmp_path / "figs", profile="full", groups=groups,
                      part=f"{finished} of the grid's {planned} runs finished")
    assert titles == [("anbn", ["pre"], "7 of the grid's 8 runs finished\nshown: the placements "
                       "whose runs on this task have all finished, pre"),
                      ("dyck1", ["post", "pre"], "7 of the grid's 8 runs finished\nshown: the "
                       "placements whose runs on this task have all finished, post, pre")]
    # the archive's copy wins when it holds more complete groups; a run outside the plan
    # is not counted
    monkeypatch.setattr(archive_module, "archived_sweep", lambda name: grid_folder)
    extra = partial / "runs" / "extra-run"
    shutil.copytree(grid_folder / "runs" / "anbn-pre-s0", extra)
    config = json.loads((extra / "config.json").read_text())
    (extra / "config.json").write_text(json.dumps({**config, "name": "extra-run"}))
    assert results.finished_placements("full") == (grid_folder, {
        ("anbn", "pre"), ("anbn", "post"), ("dyck1", "pre"), ("dyck1", "post")}, 8, 8)
    monkeypatch.setattr(archive_module, "archived_sweep", lambda name: None)
    assert results.finished_placements("full")[2] == 7
    monkeypatch.setattr(grid_module, "default_root", lambda name: tmp_path / "none")
    with pytest.raises(MissingResults, match="resharpen langs run --profile full"):
        results.finished_placements("full")


@pytest.mark.parametrize("count", [2, 9])
def test_the_x_labels_of_a_task_figure_do_not_overlap(count):
    """With many placement columns (the full grid has nine) one x label sits under them all;
    with few, each column has its own. Either way no two x labels overlap when drawn."""
    import matplotlib.pyplot as plt

    from resharpen.paper_figs import style
    from resharpen.paper_figs.languages.fig_langtrain_curves import METRICS, task_figure

    norms = list(style.PLACEMENT_COLORS)[:count]
    assert len(norms) == count
    length = np.arange(1, 13)
    curve = {metric: np.linspace(1e-3, 0.5, 12) for metric, _, _ in METRICS}
    lines = {(norm, "raw"): {"length": length, "n": 8, "train_len": 6, "mean": curve}
             for norm in norms}
    fig = task_figure("dyck1", lines, "cv")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [ax.xaxis.label for ax in fig.axes if ax.get_xlabel()]
    labels += [text for text in fig.texts if fig.get_supxlabel()
               and text.get_text() == fig.get_supxlabel()]  # the figure's one x label
    boxes = [label.get_window_extent(renderer) for label in labels]
    plt.close(fig)
    assert boxes, "the figure names its x axis"
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
