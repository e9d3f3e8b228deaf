"""Synthetic stream, collapse detector, training loop and CLI of the collapse demonstration."""
import json

import numpy as np
import pytest
import torch

from resharpen.cli import main
from resharpen.experiments.collapse.data import (markov_entropy_rate, sample_batch, stationary,
                                       zipf_markov_matrix)
from resharpen.experiments.collapse.detect import detect_collapse
from resharpen.experiments.collapse.train import (batch_frequency_loss, make_config, profile_config,
                                                  run, sweep, sweep_configs)


def test_stream_is_skewed_and_context_dependent():
    T = zipf_markov_matrix(32, 1.2, seed=0)
    assert np.allclose(T.sum(1), 1)
    pi = stationary(T)
    assert np.allclose(pi @ T, pi)
    unigram = float(-(pi * np.log(pi)).sum())
    assert markov_entropy_rate(T) < unigram - 0.5 < np.log(32)
    batch = sample_batch(T, 4000, 1, np.random.default_rng(0))
    counts = np.bincount(batch[:, 0].numpy(), minlength=32) / 4000
    assert np.abs(counts - pi).max() < 0.03
    with pytest.raises(ValueError):
        zipf_markov_matrix(1)


def test_batch_frequency_loss():
    labels = torch.tensor([[0, 0, 1, 1]])
    assert batch_frequency_loss(labels, 3) == pytest.approx(np.log(2))


def test_detector_requires_both_signals_for_patience_steps():
    steps = list(range(30))
    t = [0.1] * 10 + [0.99] * 20
    loss = [3.0] * 15 + [4.1] * 15
    det = detect_collapse(steps, t, loss, [4.1] * 30, patience=5)
    assert det.collapsed and det.step == 15
    # similar token states but a loss that beats the frequency predictor: not a collapse
    assert not detect_collapse(steps, t, [3.0] * 30, [4.1] * 30).collapsed
    assert not detect_collapse(steps, [0.1] * 30, loss, [4.1] * 30).collapsed  # loss alone
    transient = detect_collapse(steps, [0.99] * 12 + [0.1] * 18, [4.2] * 30, [4.1] * 30,
                                patience=5)
    assert transient.step == 0 and transient.recovered == 12 and not transient.collapsed
    blip = [0.99 if i in (20, 21) else 0.1 for i in steps]
    assert not detect_collapse(steps, blip, loss, [4.1] * 30, patience=5).collapsed
    with pytest.raises(ValueError):
        detect_collapse(steps, t, loss[:-1], [4.1] * 30)


def tiny(**model) -> dict:
    return make_config({"task": {"vocab": 16, "train_len": 8},
                        "model": {"n_layers": 2, "d_model": 16, "n_heads": 2, **model},
                        "train": {"batch_size": 4, "steps": 5}})


def test_training_logs_and_resumes(tmp_path):
    cfg = tiny()
    assert cfg["name"] == "post_L2_d16_lr0.001_s0"
    assert cfg["model"]["d_mlp"] == 48 and cfg["model"]["init_std"] == pytest.approx(48 ** -0.5)
    first = run(cfg, tmp_path, progress=False)
    assert len(first["history"]) == 5 and [m["step"] for m in first["history"]] == list(range(5))
    m = first["history"][0]
    assert len(m["resid_grad"]) == 2 and len(m["layer_t_sim"]) == 2
    assert len(m["contraction"]) == 4 and all(c > 0 for c in m["contraction"])  # 2 per block
    assert json.loads((tmp_path / cfg["name"] / "config.json").read_text()) == first["config"]
    again = run(cfg, tmp_path, progress=False)  # finished run is loaded, not retrained
    assert again["history"] == first["history"]
    assert run(tiny(norm="pre"), None, progress=False)["history"][0]["contraction"] is None


def test_archived_runs_are_read_in_place_and_never_retrained_or_written(tmp_path, monkeypatch):
    """A run packed into the archive (archive.pack_runs: compressed, only the runs named) is
    loaded from there when out/ lacks it, with nothing written to the archive or to out/; a run
    the archive lacks trains into out/."""
    from resharpen.experiments.collapse import train as collapse_train
    from resharpen.experiments.training.archive import pack_runs

    cfg = tiny()
    other = make_config({"task": {"vocab": 16, "train_len": 8},
                         "model": {"n_layers": 2, "d_model": 16, "n_heads": 2},
                         "train": {"batch_size": 4, "steps": 5, "lr": 2e-3}})
    first = collapse_train.run_all([cfg, other], tmp_path / "made", progress=False)
    archive = tmp_path / "archive"
    done = pack_runs(tmp_path / "made", "collapse_train", {cfg["name"]: cfg}, archive)
    assert done == {"cache": "collapse_train", "finished": 1, "added": 1}
    kept = archive / "collapse_train" / cfg["name"]
    assert sorted(p.name for p in kept.iterdir()) == ["config.json.gz", "metrics.jsonl.gz",
                                                      "provenance.json.gz", "summary.json.gz"]
    assert pack_runs(tmp_path / "made", "collapse_train", {cfg["name"]: cfg}, archive)["added"] == 0
    assert not list((archive / "collapse_train").glob(".staging-*"))
    before = sorted((p.name, p.stat().st_mtime_ns) for p in kept.iterdir())

    def no_training(*args, **kwargs):
        raise AssertionError("an archived run was trained again")
    monkeypatch.setattr(collapse_train, "train_group", no_training)
    out = tmp_path / "out"
    loaded, = collapse_train.run_all([cfg], out, progress=False, archive=archive / "collapse_train")
    assert loaded["history"] == first[0]["history"] and not out.exists()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in kept.iterdir()) == before
    with pytest.raises(AssertionError, match="trained again"):  # the archive lacks this one
        collapse_train.run_all([other], out, progress=False, archive=archive / "collapse_train")


def test_pack_runs_refuses_a_run_of_other_settings_a_link_out_and_a_corrupt_file(tmp_path):
    """A run whose config is not the expected one (same name, other settings), a run folder
    linked from outside the source, or a corrupt run file is refused before anything is
    copied, and the archive stays empty."""
    from resharpen.experiments.training.archive import pack_runs

    cfg = tiny()
    run(cfg, tmp_path / "made", progress=False)
    archive = tmp_path / "archive"
    other = {**cfg, "train": {**cfg["train"], "steps": 6}}
    with pytest.raises(ValueError, match="another config"):
        pack_runs(tmp_path / "made", "collapse_train", {cfg["name"]: other}, archive)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / cfg["name"]).symlink_to(tmp_path / "made" / cfg["name"])
    with pytest.raises(ValueError, match="leads outside"):
        pack_runs(linked, "collapse_train", {cfg["name"]: cfg}, archive)
    (tmp_path / "made" / cfg["name"] / "metrics.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        pack_runs(tmp_path / "made", "collapse_train", {cfg["name"]: cfg}, archive)
    assert not archive.exists()


def test_bad_training_settings():
    with pytest.raises(ValueError, match="allowed: post, pre"):
        make_config({"model": {"norm": "peri"}})
    with pytest.raises(ValueError, match=r"train.lr = 0.0 is out of range"):
        make_config({"train": {"lr": 0.0}})
    with pytest.raises(ValueError, match="unknown key model.widths"):
        sweep("quick", out=None, progress=False, overrides=["model.widths=3"])
    with pytest.raises(ValueError, match="--set train.lr: the sweep sets"):
        sweep_configs("quick", overrides=["train.lr=0.1"])


def test_the_sweep_file_gives_each_profile_its_runs():
    quick, full = sweep_configs("quick"), sweep_configs("full")
    assert [(c["model"]["norm"], c["train"]["lr"]) for c in quick] == [
        ("post", 3e-3), ("post", 3e-2), ("pre", 3e-3), ("pre", 3e-2)]
    assert len(full) == 10 and {c["model"]["n_layers"] for c in full} == {48}
    q = quick[0]
    assert (q["model"]["n_layers"], q["task"]["train_len"], q["train"]["steps"]) == (24, 32, 80)
    assert (q["train"]["schedule"], q["train"]["warmup"], q["train"]["beta2"]) == ("constant", 0, 0.95)
    shorter = profile_config("quick", norm="pre", lr=0.1, seed=3, overrides=["train.steps=7"])
    assert shorter["name"] == "pre_L24_d32_lr0.1_s3" and shorter["train"]["steps"] == 7


def test_post_norm_collapses_at_high_rate():
    """The CPU-size demonstration (quick sizes but 12 layers, 45 steps)."""
    post = run(make_config({"model": {"norm": "post", "n_layers": 12}, "task": {"train_len": 32},
                            "train": {"lr": 3e-2, "steps": 45}}), None, progress=False)["summary"]
    assert post["collapsed"] and post["final_t_sim"] > 0.95
    assert abs(post["final_loss"] - post["l_freq_stream"]) < 0.1
    assert post["first_over_last_resid_grad"] < 1e-2


def test_cli_collapse_stack_and_errors(capsys, tmp_path):
    out = tmp_path / "stack.json"
    assert main(["collapse", "stack", "--n", "16", "--d", "16", "--depth", "3", "--samples", "2",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert len(data["layers"]) == 3 and data["layers"][0]["layer"] == 1
    assert main(["collapse", "stack", "--norm", "peri"]) == 2
    assert "error: argument --norm: norm 'peri' is not one of post, pre" in capsys.readouterr().err
    assert main(["collapse", "detect", str(tmp_path / "missing")]) == 2


def test_training_collapse_without_a_shown_effect_is_inconclusive_not_fail(monkeypatch):
    """Every post@hi seed collapses and every control ends well outside the detector's region,
    but the paired t of final t_sim (Holm over the two controls) does not reach alpha: no effect
    shown is INCONCLUSIVE (the ledger's rule), never FAIL; with a clear gap it PASSes."""
    from resharpen.experiments.collapse import claims as collapse_claims
    from resharpen.experiments.collapse import train as collapse_train

    def fake_config(profile, norm, lr, seed):
        return {"norm": norm, "lr": lr, "seed": seed, "model": {"n_layers": 24, "d_model": 32},
                "train": {"steps": 80}}

    def summaries(control_t):
        def run_all(configs, out, progress=False):
            results = []
            for c in configs:
                post_hi = c["norm"] == "post" and c["lr"] > 1e-2
                t = 0.99 if post_hi else control_t[c["seed"]]
                results.append({"summary": {
                    "collapsed": post_hi, "final_t_sim": t, "l_freq_stream": 2.0,
                    "final_loss": 2.0 if post_hi else 1.0,
                    "first_over_last_resid_grad": 1e-3 if post_hi else 0.5}})
            return results
        return run_all

    monkeypatch.setattr(collapse_train, "profile_config", fake_config)
    monkeypatch.setattr(collapse_train, "run_all", summaries([0.79, 0.79, 0.79, 0.79, 0.09]))
    outcome = collapse_claims.check_training_collapse("full")
    assert not outcome.passed and "neither the effect nor the opposite" in outcome.inconclusive
    monkeypatch.setattr(collapse_train, "run_all", summaries([0.5, 0.52, 0.48, 0.51, 0.49]))
    outcome = collapse_claims.check_training_collapse("full")
    assert outcome.passed and not outcome.inconclusive


def test_cli_pack_collapse_packs_only_the_full_size_runs_and_refuses_a_missing_folder(
        tmp_path, monkeypatch, capsys):
    """``resharpen archive pack-collapse FOLDER`` packs the finished full-size runs it finds; a
    folder of quick runs (none of them full-size) and a folder that does not exist are refused
    with one line and exit 2, and nothing is written to the archive."""
    from resharpen.experiments.training import archive

    monkeypatch.setattr(archive, "ARCHIVE_ROOT", tmp_path / "archive")
    monkeypatch.setattr(archive.pack_runs, "__defaults__", (tmp_path / "archive", None))
    cfg = tiny()
    run(cfg, tmp_path / "made", progress=False)  # a finished run, but not a full-size one
    assert main(["archive", "pack-collapse", str(tmp_path / "made")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds none of the" in err[0]
    assert not (tmp_path / "archive").exists()
    assert main(["archive", "pack-collapse", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a folder" in err[0]


def test_the_archives_compact_history_keeps_what_its_readers_read(tmp_path):
    """archived_history keeps every row and its scalars exactly (what the collapse detector
    reads), rounds the per-layer series to 4 significant digits and leaves out the series no
    reader reads; a run loaded from that form gives the same summary (collapse step, final loss
    and t_sim, gradient ratio to 4 digits)."""
    from resharpen.experiments.collapse import train as collapse_train
    from resharpen.experiments.training.archive import pack_runs

    cfg = tiny()
    made = collapse_train.run_all([cfg], tmp_path / "made", progress=False)[0]
    text = (tmp_path / "made" / cfg["name"] / "metrics.jsonl").read_text()
    rows = [json.loads(line) for line in collapse_train.archived_history(text).splitlines()]
    assert len(rows) == len(made["history"]) == 5
    for row, full in zip(rows, made["history"]):
        assert set(row) == set(full) - {"layer_t_sim", "block_grad"}
        assert all(row[k] == full[k] for k in ("step", "loss", "l_freq", "t_sim"))
        assert row["resid_grad"] == [float(f"{x:.4g}") for x in full["resid_grad"]]
    pack_runs(tmp_path / "made", "collapse_train", {cfg["name"]: cfg}, tmp_path / "archive",
              history=collapse_train.archived_history)
    loaded, = collapse_train.run_all([cfg], tmp_path / "out", progress=False,
                                     archive=tmp_path / "archive" / "collapse_train")
    a, b = loaded["summary"], made["summary"]
    assert (a["collapse_step"], a["final_loss"], a["final_t_sim"]) == \
        (b["collapse_step"], b["final_loss"], b["final_t_sim"])
    assert a["first_over_last_resid_grad"] == pytest.approx(b["first_over_last_resid_grad"],
                                                            rel=1e-3)


def test_detect_reads_an_archived_run_in_its_compressed_form(tmp_path, capsys):
    """An archived run keeps metrics.jsonl and summary.json only as .gz (results/full); detect
    reads that form and finds what it finds in the plain one."""
    import gzip
    import json

    from resharpen import cli

    rows = [{"step": s, "t_sim": 0.97, "loss": 5.0} for s in range(1, 30)]
    summary = {"l_freq_stream": 4.0}
    for name, packed in (("plain", False), ("packed", True)):
        run = tmp_path / name
        run.mkdir()
        files = {"metrics.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
                 "summary.json": json.dumps(summary)}
        for file, text in files.items():
            if packed:
                (run / (file + ".gz")).write_bytes(gzip.compress(text.encode()))
            else:
                (run / file).write_text(text)
        assert cli.main(["collapse", "detect", str(run)]) in (0, None)
    plain, packed = capsys.readouterr().out.strip().splitlines()
    assert plain == packed and plain.startswith("collapsed at step")
