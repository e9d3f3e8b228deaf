"""The archive of full-size results (results/full): pack keeps a sweep's small files, restore
puts them back so that the same sweep resumes and trains only what the archive lacks."""
from __future__ import annotations

import pytest

from resharpen.experiments.training import archive
from resharpen.experiments.training.runs import load_run

GRID = {"name": "arch",
        "sweep": {"ensemble": 2},
        "search": {"task.name": {"grid": ["dyck1"]}, "model.norm": {"grid": ["pre"]},
                   "train.seed": {"grid": [0, 1]}},
        "task": {"train_len": 8, "eval_len": 12},
        "model": {"d_model": 8, "n_layers": 1, "n_heads": 1},
        "train": {"steps": 4, "batch_size": 8, "warmup": 1, "log_every": 2},
        "eval": {"count": 4}}


def test_pack_then_restore_resumes_the_sweep_without_retraining(tmp_path, monkeypatch):
    from resharpen.experiments.languages import grid

    first = grid.run_grid(GRID, out=tmp_path / "session1" / "arch", workers=1, progress=False)
    store = tmp_path / "archive"
    done = archive.pack(first, store)
    assert done == {"sweep": "arch", "finished": 2, "added": 2}
    kept = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())
    assert kept == [f"sweeps/arch/runs/dyck1-pre-s{seed}/{name}" for seed in (0, 1)
                    for name in ("config.json", "metrics.jsonl", "provenance.json",
                                 "summary.json")] + ["sweeps/arch/sweep.json",
                                                     "sweeps/arch/table.jsonl"]
    assert archive.pack(first, store)["added"] == 0  # packing again adds nothing

    # a fresh checkout: restore, then the same command trains nothing
    fresh = tmp_path / "session2" / "arch"
    assert archive.restore("arch", fresh, store) == {"sweep": "arch", "restored": 2,
                                                     "archived": 2}
    assert archive.restore("arch", fresh, store)["restored"] == 0
    monkeypatch.setattr(grid, "run_group",
                        lambda c: (_ for _ in ()).throw(AssertionError(c[0]["name"])))
    grid.run_grid(GRID, out=fresh, workers=1, progress=False)
    run = load_run(fresh / "runs" / "dyck1-pre-s0")
    assert run.summary == load_run(first / "runs" / "dyck1-pre-s0").summary
    with pytest.raises(ValueError, match="restored from the archive"):
        run.model("raw")
    assert archive.pack(fresh, store)["added"] == 0  # restored runs are not packed twice


def test_restore_refuses_an_unknown_sweep_and_pack_a_non_sweep(tmp_path):
    with pytest.raises(ValueError, match="has no sweep 'nothing'"):
        archive.restore("nothing", tmp_path / "out", tmp_path / "archive")
    with pytest.raises(ValueError, match="not a sweep folder"):
        archive.pack(tmp_path, tmp_path / "archive")
    with pytest.raises(ValueError, match="sweep name"):
        archive.restore("../up", tmp_path / "out", tmp_path / "archive")


def test_a_measured_table_travels_with_its_run(tmp_path):
    """A table an analysis measured on a run's weights is kept with the run: computed once,
    read back from the restored archive without weights, where computing it again fails."""
    from resharpen.experiments.training.runs import measured

    sweep = tmp_path / "out" / "sw"
    run = sweep / "runs" / "sw-0"
    run.mkdir(parents=True)
    (sweep / "sweep.json").write_text('{"identity": {}, "runs": 1}')
    for name in ("config.json", "provenance.json"):
        (run / name).write_text("{}")
    (run / "summary.json").write_text('{"primary": "raw"}')
    calls = []
    value = measured(run, "probe", lambda: calls.append(1) or {"K": 1.5, "rows": [0.25, 0.5]})
    assert value == {"K": 1.5, "rows": [0.25, 0.5]} and calls == [1]
    assert measured(run, "probe", lambda: calls.append(1)) == value and calls == [1]
    archive.pack(sweep, tmp_path / "archive")
    fresh = tmp_path / "fresh"
    archive.restore("sw", fresh, tmp_path / "archive")
    assert measured(fresh / "runs" / "sw-0", "probe", lambda: 1 / 0) == value
    with pytest.raises(ZeroDivisionError):
        measured(fresh / "runs" / "sw-0", "other", lambda: 1 / 0)


def test_a_study_result_file_is_packed_and_restored_whole(tmp_path):
    """A study that writes one table (the EMA-window protocol's results.json) is kept as that
    file; restoring never replaces one that exists."""
    study = tmp_path / "out" / "sweeps" / "window_study"
    study.mkdir(parents=True)
    (study / "results.json").write_text('{"rows": [1, 2]}')
    done = archive.pack(study, tmp_path / "archive")
    assert done == {"sweep": "window_study", "finished": 1, "added": 1}
    assert archive.archived_sweeps(tmp_path / "archive") == {"window_study": 1}
    fresh = tmp_path / "fresh"
    assert archive.restore("window_study", fresh, tmp_path / "archive")["restored"] == 1
    assert (fresh / "results.json").read_text() == '{"rows": [1, 2]}'
    (fresh / "results.json").write_text("mine")
    assert archive.restore("window_study", fresh, tmp_path / "archive")["restored"] == 0
    assert (fresh / "results.json").read_text() == "mine"
    (study / "results.json").write_text("not json")
    with pytest.raises(ValueError):
        archive.pack(study, tmp_path / "archive2")
