"""Set Complement training: its configs, data, summaries and short real training runs."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from resharpen.experiments.training import config as cfgmod
from resharpen.experiments.model.transformer import Transformer
from resharpen.experiments.training.loop import WEIGHTS
from resharpen.experiments.set_complement import train as T
from resharpen.experiments.set_complement.train import SCHEMA, load_config

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "set_complement"


def test_shipped_configs_load_with_real_sizes_and_quick_profile():
    base = load_config(CONFIGS / "base.toml")
    assert base["task"]["vocab"] == 64 and base["task"]["train_len"] == 16
    assert base["model"]["n_layers"] == 1 and base["model"]["mlp"] == "none"
    quick = load_config(CONFIGS / "base.toml", profile="quick")
    assert quick["task"]["vocab"] == 16 and quick["task"]["train_len"] == 4
    multi = load_config(CONFIGS / "multi_layer.toml", ["model.norm=post", "train.ema=bema"])
    assert multi["model"]["n_layers"] == 2 and multi["model"]["positional"] == "learned"
    assert multi["model"]["norm"] == "post" and multi["train"]["ema"] == "bema"
    assert T.sc_model_config(multi).max_len == 64 and T.sc_model_config(base).max_len is None
    base_sweep, settings, space = cfgmod.load_sweep(CONFIGS / "random_search.toml", SCHEMA)
    assert "train.lr" in space and settings["runs"] >= 1


@pytest.mark.parametrize("override, message", [
    ("model.nrm=post", "unknown key model.nrm; allowed in \\[model\\]: d_model"),
    ("model.norm=postnorm", "allowed: one of 'none', 'pre', 'post', 'attn_out', 'peri'"),
    ("train.lr=0", r"allowed: float in \(0.0, 10.0\]"),
    ("model.attn_dropout=1.0", r"allowed: float in \[0.0, 1.0\)"),
    ("task.train_len=64", "must be <= vocab - 1 = 63"),
    ("optim.lr=1", "unknown section 'optim'"),
    ("train.steps=1.5", "wrong type"),
    ("lr=1", "must be section.key"),
    ("model.positional=true", "allowed: one of 'none', 'learned'"),
])
def test_bad_values_name_what_is_allowed(override, message):
    with pytest.raises(ValueError, match=message):
        load_config(CONFIGS / "base.toml", [override])


def test_sweep_file_errors(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text(f'base = "{CONFIGS / "base.toml"}"\n[search]\n"train.lrr" = {{choice = [1]}}\n')
    with pytest.raises(ValueError, match="search key 'train.lrr' is not a config key"):
        cfgmod.load_sweep(bad, SCHEMA)
    bad.write_text(f'base = "{CONFIGS / "base.toml"}"\n[search]\n'
                   '"model.attn_dropout" = {uniform = [0.0, 1.5]}\n')
    with pytest.raises(ValueError, match="out of range"):
        cfgmod.load_sweep(bad, SCHEMA)
    bad.write_text(f'base = "{CONFIGS / "base.toml"}"\n[sweep]\nensemble = 0\n[search]\n'
                   '"train.lr" = {choice = [0.01]}\n')
    with pytest.raises(ValueError, match=r"sweep.ensemble = 0 is out of range; allowed: int in \[1, 1024\]"):
        cfgmod.load_sweep(bad, SCHEMA)


def test_sampled_configs_are_seeded_and_extend():
    base, settings, space = cfgmod.load_sweep(CONFIGS / "random_search.toml", SCHEMA)
    a = cfgmod.sample_configs(base, space, 5, 3, SCHEMA)
    b = cfgmod.sample_configs(base, space, 8, 3, SCHEMA)
    assert a == b[:5]
    assert len({c["train"]["lr"] for c in b}) == 8
    assert all(1e-3 <= c["train"]["lr"] <= 3e-2 for c in b)


def test_grid_keys_are_enumerated_balanced_and_random_keys_still_drawn(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(f'base = "{CONFIGS / "base.toml"}"\n[sweep]\nruns = 12\n[search]\n'
                    '"model.norm" = {grid = ["none", "post", "peri"]}\n'
                    '"train.seed" = {grid = [0, 1]}\n'
                    '"train.lr" = {loguniform = [1e-3, 1e-2]}\n')
    base, settings, space = cfgmod.load_sweep(path, SCHEMA)
    configs = cfgmod.sample_configs(base, space, settings["runs"], settings["seed"], SCHEMA)
    cells = [(c["model"]["norm"], c["train"]["seed"]) for c in configs]
    assert cells[:6] == [("none", 0), ("none", 1), ("post", 0), ("post", 1), ("peri", 0), ("peri", 1)]
    assert cells[6:] == cells[:6]  # runs = 2 N repeats the grid ...
    assert len({c["train"]["lr"] for c in configs}) == 12  # ... with fresh random draws
    path.write_text(f'base = "{CONFIGS / "base.toml"}"\n[search]\n'
                    '"model.norm" = {grid = ["post", "post"]}\n')
    with pytest.raises(ValueError, match="grid values repeat"):
        cfgmod.load_sweep(path, SCHEMA)
    path.write_text(f'base = "{CONFIGS / "base.toml"}"\n[search]\n"model.norm" = {{grid = []}}\n')
    with pytest.raises(ValueError, match="grid needs a non-empty list"):
        cfgmod.load_sweep(path, SCHEMA)


def test_training_sequences_are_permutation_prefixes_with_uniform_next_token():
    g = torch.Generator().manual_seed(0)
    seqs = T.sample_sequences(8, 4, 20000, g)
    assert all(len(set(row.tolist())) == 4 for row in seqs[:200])
    # the label at position 3 given the first 3 tokens is uniform on the 5 unused tokens
    prefix = seqs[:, :3]
    hits = (seqs[:, :3] == torch.tensor([0, 1, 2])).all(1)
    counts = torch.bincount(seqs[hits, 3], minlength=8).double()
    assert counts[:3].sum() == 0
    freq = counts[3:] / counts.sum()
    assert float((freq - 0.2).abs().max()) < 0.1 and int(hits.sum()) > 50
    assert prefix.shape == (20000, 3)


def test_summarize_and_exponent_on_synthetic_records():
    v, L = 12, 3
    records = [{"length": s, "invalid_mass": 0.01 * s, "kl": 0.1, "tv": 0.02 * s,
                "margin_nonquery_min": 6.0 / s ** 1.0 if s > 1 else float("nan")}
               for s in range(1, v)]
    out = T.summarize(records, v, L, threshold=0.05)
    assert out["lg_score"] == 5  # 0.05 at s = 5, 0.06 at s = 6
    assert out["id_invalid_mass"] == pytest.approx(0.02)
    assert out["ood_invalid_mass"] == pytest.approx(np.mean([0.01 * s for s in range(4, 12)]))
    assert out["margin_exponent"] == pytest.approx(1.0)
    s = np.arange(2, 12.0)
    assert T.fit_exponent(s, 3.0 * s ** -0.5) == pytest.approx(0.5)
    formula = T.fit_exponent(s, T.attn_out_margin(v, s))
    assert out["margin_exponent_attn_out_theory"] == pytest.approx(formula)
    assert formula < 0.5  # the normalized readout does not disperse like 1/s


def test_short_training_learns_the_in_distribution_complement():
    config = load_config(CONFIGS / "base_sampled.toml", ["task.vocab=8", "model.d_model=8",
                                                 "train.steps=300", "train.warmup=10",
                                                 "train.lr=3e-2", "train.eval_every=100",
                                                 "train.batch_size=64",
                                                 "eval.per_length=32"])
    untrained = T.summarize(T.evaluate_weights(Transformer(T.sc_model_config(config)), config),
                            8, 2, 0.05)
    result = T.train(config, progress=False)
    s = result["summary"]
    assert set(s["by_weights"]) == {"raw", "ema", "bema"}
    for kind in WEIGHTS:
        assert len(result["per_length"][kind]) == 7
    # untrained: invalid mass ~ s / v; trained: far lower in distribution
    assert untrained["id_invalid_mass"] > 0.15
    assert s["id_invalid_mass"] < 0.5 * untrained["id_invalid_mass"]
    assert [row["step"] for row in result["history"]] == [100, 200, 300]
    assert "ema" in result["history"][0] and math.isfinite(s["final_loss"])
    # same seed, same numbers
    again = T.train(config, progress=False)["summary"]
    assert json.dumps(again["by_weights"]) == json.dumps(s["by_weights"])  # NaN-safe


def test_train_command_writes_a_run_folder_and_reports_errors_in_one_line(tmp_path, capsys):
    from resharpen.cli import main

    out = tmp_path / "run"
    assert main(["train", str(CONFIGS / "base.toml"), "--profile", "quick", "--set",
                 "train.steps=20", "--set", "train.warmup=2", "--set", "model.norm=post",
                 "--set", "train.ema=bema", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bema" in printed and "* = primary" in printed
    for name in ("config.json", "metrics.jsonl", "per_length.json", "summary.json"):
        assert (out / name).exists()
    assert main(["train", str(CONFIGS / "base.toml"), "--set", "train.ema=swa"]) == 2
    assert "error: train.ema = 'swa' is not allowed" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "missing.toml")]) == 2


@pytest.mark.parametrize("norm", ["post", "peri"])
def test_multi_layer_model_trains_and_is_evaluated_at_every_length(norm):
    config = load_config(CONFIGS / "multi_layer.toml", ["train.steps=10", "train.warmup=2",
                                                        f"model.norm={norm}",
                                                        "model.attn_dropout=0.1",
                                                        "model.resid_dropout=0.1"],
                         profile="quick")
    result = T.train(config, progress=False)
    model = result["model"]
    assert model.cfg.n_layers == 2 and model.cfg.mlp == "gelu" and model.W_pos is not None
    assert [r["length"] for r in result["per_length"]["bema"]] == list(range(1, 16))
    assert math.isfinite(result["summary"]["ood_kl"])


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_config_loads_and_validates(path):
    raw = cfgmod.resolve(path, SCHEMA)
    if "search" in raw:
        base, settings, space = cfgmod.load_sweep(path, SCHEMA)
        assert space and settings["runs"] >= 1 and base["task"]["vocab"] >= 2
    else:
        assert load_config(path)["task"]["vocab"] >= 2
