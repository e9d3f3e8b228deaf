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
    assert done == {"sweep": "arch", "finished": 2, "added": 2, "tables": []}
    kept = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())
    assert kept == [f"sweeps/arch/runs/dyck1-pre-s{seed}/{name}.gz" for seed in (0, 1)
                    for name in ("config.json", "metrics.jsonl", "provenance.json",
                                 "summary.json")] + ["sweeps/arch/sweep.json.gz",
                                                     "sweeps/arch/table.jsonl"]
    assert archive.pack(first, store)["added"] == 0  # packing again adds nothing

    # a fresh checkout: restore, then the same command trains nothing
    fresh = tmp_path / "session2" / "arch"
    assert archive.restore("arch", fresh, store) == {"sweep": "arch", "restored": 2,
                                                     "archived": 2}
    assert archive.restore("arch", fresh, store)["restored"] == 0
    monkeypatch.setattr(grid, "run_group",
                        lambda c, **kw: (_ for _ in ()).throw(AssertionError(c[0]["name"])))
    grid.run_grid(GRID, out=fresh, workers=1, progress=False)
    run = load_run(fresh / "runs" / "dyck1-pre-s0")
    assert run.summary == load_run(first / "runs" / "dyck1-pre-s0").summary
    for name in ("config.json", "metrics.jsonl", "provenance.json", "summary.json"):
        restored = fresh / "runs" / "dyck1-pre-s0" / name  # plain again, byte for byte
        assert restored.read_bytes() == (first / "runs" / "dyck1-pre-s0" / name).read_bytes()
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
    assert done == {"sweep": "window_study", "finished": 1, "added": 1, "tables": []}
    assert archive.archived_sweeps(tmp_path / "archive") == {"window_study": 1}
    assert archive.planned_runs("window_study", tmp_path / "archive") is None  # no sweep file
    fresh = tmp_path / "fresh"
    assert archive.restore("window_study", fresh, tmp_path / "archive")["restored"] == 1
    assert (fresh / "results.json").read_text() == '{"rows": [1, 2]}'
    (fresh / "results.json").write_text("mine")
    assert archive.restore("window_study", fresh, tmp_path / "archive")["restored"] == 0
    assert (fresh / "results.json").read_text() == "mine"
    (study / "results.json").write_text("not json")
    with pytest.raises(ValueError):
        archive.pack(study, tmp_path / "archive2")


def _tree(root) -> dict:
    """relative path -> bytes of every file under ``root``."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_packed_run_is_compressed_and_read_back_equal(tmp_path, monkeypatch):
    """A run written as a trainer writes it, packed: every file of it is kept gzip-compressed
    in the archive, and every reader (the run, the sweep's runs, its history, a measured
    table) reads back from the archive, in place, exactly what it reads from the run; the
    archive holds nothing in the plain form but the table."""
    import gzip
    import json

    from resharpen.experiments.common.stored import read_json, read_jsonl, stored_exists
    from resharpen.experiments.training.runs import measured
    from resharpen.experiments.training.sweep import load_runs, read_table

    sweep = tmp_path / "out" / "sw"
    run = sweep / "runs" / "sw-0"
    run.mkdir(parents=True)
    (sweep / "sweep.json").write_text('{"identity": {"name": "sw"}, "runs": 1}')
    (sweep / "table.jsonl").write_text('{"run": "sw-0", "loss": 0.1}\n')
    history = [{"step": s, "loss": 1 / (s + 3), "raw": {"id_kl": 0.1 ** s}} for s in range(50)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    (run / "config.json").write_text(json.dumps({"task": {"vocab": 32}, "name": "sw-0"}))
    (run / "provenance.json").write_text('{"commit": "abc"}')
    (run / "summary.json").write_text(json.dumps({"primary": "raw", "seconds": 1.5,
                                                  "ladder": [0.1 * k for k in range(9)]},
                                                 indent=2))
    probe = measured(run, "probe", lambda: {"K": 1 / 3, "rows": [2 ** -40, 1e300]})
    (run / "per_length.json").write_text("{}")  # not archived: a run read in place has none
    store = tmp_path / "archive"
    monkeypatch.setattr(archive, "ARCHIVE_ROOT", store)  # read in place as the archive's
    archive.pack(sweep, store)
    packed = store / "sweeps" / "sw"
    files = sorted(p.relative_to(packed).as_posix() for p in packed.rglob("*") if p.is_file())
    assert files == ["runs/sw-0/" + f + ".gz" for f in (
        "config.json", "measured_probe.json", "metrics.jsonl", "provenance.json",
        "summary.json")] + ["sweep.json.gz", "table.jsonl"]
    for name in ("config.json", "metrics.jsonl", "summary.json", "measured_probe.json"):
        kept = packed / "runs" / "sw-0" / f"{name}.gz"
        assert gzip.decompress(kept.read_bytes()) == (run / name).read_bytes()
        assert stored_exists(packed / "runs" / "sw-0" / name)
    in_place = packed / "runs" / "sw-0"
    assert load_run(in_place).history == load_run(run).history == history
    assert load_run(in_place).summary == load_run(run).summary
    assert load_run(in_place).config == load_run(run).config
    assert [(r["config"], r["summary"]) for r in load_runs(packed)] == \
        [(r["config"], r["summary"]) for r in load_runs(sweep)]
    assert read_jsonl(in_place / "metrics.jsonl") == history
    assert read_json(packed / "sweep.json") == read_json(sweep / "sweep.json")
    assert read_table(packed) == read_table(sweep)
    assert measured(in_place, "probe", lambda: 1 / 0) == probe  # read, not computed
    assert archive.archived_sweeps(store) == {"sw": 1}
    first = _tree(packed)
    assert archive.pack(sweep, store)["added"] == 0  # packing again adds nothing,
    assert _tree(packed) == first  # and the refreshed sweep files are the same bytes


def test_repack_compresses_an_archive_kept_as_text_without_changing_a_byte(tmp_path):
    """An archive whose files were kept as text (the older form) is rewritten compressed by
    repack: every file expands to the bytes it had, nothing else is written, readers read
    the same, a second repack rewrites nothing, and a restore gives the text files back."""
    import gzip

    from resharpen.experiments.common.stored import read_jsonl

    sweep = tmp_path / "out" / "sw"
    run = sweep / "runs" / "sw-0"
    run.mkdir(parents=True)
    (sweep / "sweep.json").write_text('{"identity": {}, "runs": 1}')
    (sweep / "table.jsonl").write_text('{"run": "sw-0"}\n')
    for name, text in (("config.json", "{}"), ("provenance.json", '{"commit": "c"}'),
                       ("metrics.jsonl", '{"step": 1, "loss": 0.30000000000000004}\n'),
                       ("measured_report_raw.json", '{"K": 2.5}'),
                       ("summary.json", '{"primary": "raw"}')):
        (run / name).write_text(text)
    old = tmp_path / "archive" / "sweeps" / "sw"  # what an older pack kept: plain copies
    (old / "runs").mkdir(parents=True)
    for name in ("sweep.json", "table.jsonl"):
        (old / name).write_bytes((sweep / name).read_bytes())
    (old / "runs" / "sw-0").mkdir()
    for p in run.iterdir():
        (old / "runs" / "sw-0" / p.name).write_bytes(p.read_bytes())
    before = _tree(old)
    history = read_jsonl(old / "runs" / "sw-0" / "metrics.jsonl")
    assert archive.repack(tmp_path / "archive") == {"sweeps": 1, "rewritten": 6}
    after = _tree(old)
    assert sorted(after) == sorted(n if n == "table.jsonl" else n + ".gz" for n in before)
    assert all((gzip.decompress(after[n + ".gz"]) if n != "table.jsonl" else after[n])
               == data for n, data in before.items())
    assert read_jsonl(old / "runs" / "sw-0" / "metrics.jsonl") == history
    assert archive.repack(tmp_path / "archive") == {"sweeps": 1, "rewritten": 0}
    assert _tree(old) == after
    fresh = tmp_path / "fresh"
    archive.restore("sw", fresh, tmp_path / "archive")
    restored = _tree(fresh)
    assert restored.pop("runs/sw-0/ARCHIVED")
    assert restored == before


def test_a_corrupt_or_oversized_compressed_file_is_one_error_naming_it(tmp_path):
    """A compressed file that is not gzip data, or that expands beyond the read limit, is
    refused with one ValueError naming it; a missing file is named in its plain form."""
    import gzip

    from resharpen.experiments.common.stored import read_json

    (tmp_path / "bad.json.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match=r"bad\.json\.gz.*not a gzip-compressed"):
        read_json(tmp_path / "bad.json")
    (tmp_path / "big.json.gz").write_bytes(gzip.compress(b" " * 5000 + b"{}"))
    with pytest.raises(ValueError, match=r"big\.json\.gz.*expands to more than 1000 bytes"):
        read_json(tmp_path / "big.json", max_bytes=1000)
    assert read_json(tmp_path / "big.json") == {}
    with pytest.raises(FileNotFoundError, match=r"none\.json' does not exist"):
        read_json(tmp_path / "none.json")


def test_the_status_counts_a_grids_archived_runs_against_the_runs_it_plans(tmp_path, capsys,
                                                                        monkeypatch):
    """A language grid's identity lists its run configs: `archive status` says how many of them
    the archive holds (planted: 2 of 3), and a sweep whose identity does not list them only its
    count; each line and a last one give the bytes stored."""
    import gzip
    import json

    from resharpen.cli import main

    store = tmp_path / "archive"
    grid = store / "sweeps" / "grid"
    for run in ("a", "b"):
        (grid / "runs" / run).mkdir(parents=True)
        with gzip.open(grid / "runs" / run / "summary.json.gz", "wt") as f:
            f.write("{}")
    with gzip.open(grid / "sweep.json.gz", "wt") as f:
        json.dump({"identity": {"name": "grid", "profile": "full",
                                "configs": [{"n": 1}, {"n": 2}, {"n": 3}]}}, f)
    assert archive.planned_runs("grid", store) == 3
    monkeypatch.setattr(archive, "ARCHIVE_ROOT", store)
    monkeypatch.setattr(archive.archived_sweeps, "__defaults__", (store,))
    monkeypatch.setattr(archive.archived_caches, "__defaults__", (store,))
    monkeypatch.setattr(archive.planned_runs, "__defaults__", (store,))
    assert main(["archive", "status"]) == 0
    planted = [grid / "runs" / "a" / "summary.json.gz", grid / "runs" / "b" / "summary.json.gz",
               grid / "sweep.json.gz"]  # every file the test wrote, each counted once
    mb = f"{sum(path.stat().st_size for path in planted) / 1e6:.2f} MB"
    assert capsys.readouterr().out.splitlines() == [
        f"grid: 2 finished runs archived of the 3 it plans ({mb})",
        f"the archive ({store}): 3 files, {mb} as stored (the ledger, run records and tables; "
        "no weights)"]


def test_restore_without_a_name_brings_back_every_archived_sweep(tmp_path, capsys, monkeypatch):
    """`archive restore` with no SWEEP restores each archived sweep into out/sweeps/NAME (two
    planted sweeps, 2 and 1 runs), a second call restores nothing, and --out without a name is
    refused before anything is written."""
    import gzip

    from resharpen.cli import main

    store = tmp_path / "archive"
    for sweep, runs in (("one", ("a", "b")), ("two", ("c",))):
        for run in runs:
            (store / "sweeps" / sweep / "runs" / run).mkdir(parents=True)
            with gzip.open(store / "sweeps" / sweep / "runs" / run / "summary.json.gz",
                           "wt") as f:
                f.write("{}")
        with gzip.open(store / "sweeps" / sweep / "sweep.json.gz", "wt") as f:
            f.write('{"identity": {"name": "%s"}}' % sweep)
    monkeypatch.setattr(archive.archived_sweeps, "__defaults__", (store,))
    monkeypatch.setattr(archive.restore, "__defaults__", (store,))
    monkeypatch.setattr(archive.check_restore, "__defaults__", (store,))
    monkeypatch.chdir(tmp_path)
    assert main(["archive", "restore", "--out", "elsewhere"]) == 2
    assert "needs a SWEEP name" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "elsewhere").exists()
    blocked = tmp_path / "out" / "sweeps" / "two" / "runs" / "c"  # a file where a run goes
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a run folder")
    assert main(["archive", "restore"]) == 2  # refused before sweep "one" is written
    assert "run folder" in capsys.readouterr().err
    assert not (tmp_path / "out" / "sweeps" / "one").exists()
    blocked.unlink()
    assert main(["archive", "restore"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["one: 2 of 2 archived runs restored", "two: 1 of 1 archived runs restored"]
    assert sorted(p.name for p in (tmp_path / "out" / "sweeps" / "one" / "runs").iterdir()) \
        == ["a", "b"]
    assert (tmp_path / "out" / "sweeps" / "two" / "runs" / "c" / "summary.json").is_file()
    assert main(["archive", "restore"]) == 0
    assert "one: 0 of 2 archived runs restored" in capsys.readouterr().out
    monkeypatch.setattr(archive.archived_sweeps, "__defaults__", (tmp_path / "empty",))
    assert main(["archive", "restore"]) == 2
    assert "holds no sweep" in capsys.readouterr().err
