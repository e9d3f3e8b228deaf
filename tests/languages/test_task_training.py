"""Task training (experiments/training/next_token.py), the grid (grid.py), the `langs` CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

from resharpen.experiments.languages.grid import (load_grid, overview_lines, paired_effects, report, run_grid,
                                    summary_table, table_rows)
from resharpen.experiments.training.next_token import (eval_sequences, evaluate, make_config,
                                    position_metrics, summarize, train)
from resharpen.experiments.tasks.registry import get_task
from resharpen.experiments.training.next_token_config import build_task
from resharpen.experiments.training.loop import next_token_loss


class TargetModel(nn.Module):
    """A causal 'model' whose logits are log p* (exact) or zeros (uniform) at every position."""

    def __init__(self, task, kind: str):
        super().__init__()
        self.task, self.kind = task, kind
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, tokens):
        legal = torch.as_tensor(self.task.legal_next(tokens.numpy()))
        if self.kind == "uniform":
            return torch.zeros(legal.shape, dtype=torch.float64) + 0 * self.dummy
        size = legal.sum(-1, keepdim=True).clamp_min(1)
        return torch.where(legal, -torch.log(size.double()), float("-inf")) + 0 * self.dummy


def brute_force(logits: np.ndarray, legal: np.ndarray) -> dict:
    """The definitions, written out position by position."""
    out = {k: np.full(legal.shape[:2], np.nan) for k in ("invalid_mass", "tv", "kl", "top1")}
    for b in range(legal.shape[0]):
        for i in range(legal.shape[1]):
            s = legal[b, i]
            if not s.any():
                continue
            p = np.exp(logits[b, i] - logits[b, i].max())
            p /= p.sum()
            target = s / s.sum()
            out["invalid_mass"][b, i] = p[~s].sum()
            out["tv"][b, i] = 0.5 * np.abs(p - target).sum()
            out["kl"][b, i] = float(np.sum(target[s] * np.log(target[s] / p[s])))
            row = logits[b, i]
            out["top1"][b, i] = float((~s).any() and row[~s].max() >= row[s].max())
    return out


def test_metrics_match_the_definitions_on_random_logits():
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=3.0, size=(5, 7, 6))
    legal = rng.random((5, 7, 6)) < 0.5
    legal[0, 0] = False  # an empty set: no target
    legal[1, 1] = True  # every token legal
    got = position_metrics(torch.as_tensor(logits), legal)
    want = brute_force(logits, legal)
    for name, key in (("invalid_mass", "invalid_mass"), ("tv", "tv"), ("kl", "kl"),
                      ("top1_invalid", "top1")):
        np.testing.assert_allclose(got[name].numpy(), want[key], rtol=1e-10, atol=1e-13,
                                   equal_nan=True)
    assert math.isnan(float(got["invalid_mass"][0, 0]))
    assert float(got["invalid_mass"][1, 1]) == 0.0
    ce, sizes = got["cross_entropy"].numpy(), legal.sum(-1)
    np.testing.assert_allclose(ce[sizes > 0] - np.log(sizes[sizes > 0]),
                               got["kl"].numpy()[sizes > 0], atol=1e-12)


def test_top1_ties_count_against_the_model():
    legal = np.array([[[True, False, True]]])
    got = position_metrics(torch.zeros(1, 1, 3), legal)
    assert float(got["top1_invalid"]) == 1.0
    got = position_metrics(torch.tensor([[[0.1, 0.0, 0.0]]]), legal)
    assert float(got["top1_invalid"]) == 0.0


@pytest.mark.parametrize("name,length", [("dyck2", 30), ("anbn", 25), ("othello", 59)])
def test_exact_model_scores_zero_and_uniform_model_its_predicted_mass(name, length):
    task = get_task(name)
    config = make_config({"task": {"name": name, "train_len": min(20, length - 1),
                                   "eval_len": length}, "eval": {"count": 24, "seed": 3}})
    seqs, legal = eval_sequences(config)
    exact = evaluate(TargetModel(task, "exact"), seqs, legal)
    assert [r["length"] for r in exact] == list(range(1, length + 1))
    for r in exact:
        if r["count"]:
            assert r["invalid_mass"] == 0.0 and r["top1_invalid"] == 0.0
            assert abs(r["kl"]) < 1e-12 and r["tv"] < 1e-12
    uniform = evaluate(TargetModel(task, "uniform"), seqs, legal)
    sizes = legal.sum(-1).astype(float)
    for i, r in enumerate(uniform):
        has = sizes[:, i] > 0
        assert r["count"] == int(has.sum())
        if not has.any():
            assert math.isnan(r["invalid_mass"])
            continue
        k, v = sizes[has, i], task.size
        assert r["invalid_mass"] == pytest.approx(np.mean(1 - k / v), abs=1e-12)
        assert r["tv"] == pytest.approx(np.mean(1 - k / v), abs=1e-12)
        assert r["kl"] == pytest.approx(np.mean(np.log(v / k)), abs=1e-12)


def test_othello_finished_games_are_left_out_when_pad_is_ignored():
    config = make_config({"task": {"name": "othello", "train_len": 20, "eval_len": 60},
                          "eval": {"count": 300, "seed": 0}})
    seqs, legal = eval_sequences(config)
    over = get_task("othello").legal_next(seqs)[..., 0]
    assert over.any()  # some of 300 random games end before move 60
    assert not legal[over].any() and legal[~over].any(-1).all()
    kept = make_config({**{k: v for k, v in config.items() if k != "name"},
                        "task": {**config["task"], "ignore_pad": False}})
    _, full = eval_sequences(kept)
    assert full.any(-1).all()


def test_loss_ignores_pad_labels():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(5, 5))
    seqs = torch.tensor([[1, 2, 0, 0], [3, 4, 1, 2]])
    logits = model(seqs[:, :-1])
    labels = seqs[:, 1:]
    keep = labels != 0
    want = nn.functional.cross_entropy(logits[keep], labels[keep])
    assert next_token_loss(model, seqs, ignore=0).item() == pytest.approx(want.item(), rel=1e-6)
    assert next_token_loss(model, seqs).item() != pytest.approx(want.item(), rel=1e-3)


def test_summarize_splits_lengths_and_scores_generalization():
    records = [{"length": n, "count": 4, "invalid_mass": m, "tv": m, "kl": 2 * m,
                "top1_invalid": 0.0}
               for n, m in zip(range(1, 7), (0.01, 0.02, 0.04, 0.2, 0.01, 0.3))]
    records.append({"length": 7, "count": 0, "invalid_mass": math.nan, "tv": math.nan,
                    "kl": math.nan, "top1_invalid": math.nan})
    s = summarize(records, train_len=3, threshold=0.05)
    assert s["id_invalid_mass"] == pytest.approx(0.07 / 3)
    assert s["ood_invalid_mass"] == pytest.approx(0.51 / 3)
    assert s["ood_kl"] == pytest.approx(1.02 / 3)
    assert s["lg_score"] == 3 and s["lg_fraction"] == pytest.approx(3 / 7)
    assert s["last_invalid_mass"] == 0.3  # the last length with a target


def test_config_errors_name_the_value():
    with pytest.raises(ValueError, match="unknown key model.nrm"):
        make_config({"model": {"nrm": "post"}})
    with pytest.raises(ValueError, match="exceeds task.eval_len"):
        make_config({"task": {"train_len": 50, "eval_len": 40}})
    with pytest.raises(ValueError, match="length must be in"):
        make_config({"task": {"name": "othello", "train_len": 30, "eval_len": 61}})
    with pytest.raises(ValueError, match="task.name"):
        make_config({"task": {"name": "chess"}})
    with pytest.raises(ValueError, match="not divisible"):
        make_config({"model": {"d_model": 30, "n_heads": 4}})
    assert make_config({"model": {"d_model": 30, "n_heads": 4, "d_head": 8}})["model"]["d_head"] == 8
    with pytest.raises(ValueError, match="allowed: one of 'none', 'learned'"):
        make_config({"model": {"positional": True}})
    with pytest.raises(ValueError, match="unknown key train.eval_every"):
        make_config({"train": {"eval_every": 10}})


def tiny(task: str = "dyck1", **train) -> dict:
    return {"task": {"name": task, "train_len": 12, "eval_len": 30},
            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
            "train": {"steps": 60, "batch_size": 32, "lr": 1e-2, "warmup": 10, **train},
            "eval": {"count": 32}}


def test_training_learns_the_legal_sets_and_is_seeded():
    config = make_config(tiny())
    seqs, legal = eval_sequences(config)
    torch.manual_seed(config["train"]["seed"])
    from resharpen.experiments.model.transformer import Transformer
    from resharpen.experiments.training.loop import model_config

    untrained = summarize(evaluate(Transformer(model_config(config, 3, 30)), seqs, legal), 12, 0.05)
    result = train(config, progress=False)
    raw = result["summary"]["by_weights"]["raw"]
    assert set(result["per_length"]) == {"raw", "ema", "bema"}
    assert len(result["per_length"]["bema"]) == 30
    # Dyck-1 at init: about a third of the mass on illegal tokens; after 60 steps far less
    assert untrained["id_invalid_mass"] > 0.2
    assert raw["id_invalid_mass"] < 0.5 * untrained["id_invalid_mass"]
    assert result["history"][-1]["loss_smoothed"] < result["history"][0]["loss_smoothed"]
    again = train(make_config(tiny(steps=10)), progress=False)
    twice = train(make_config(tiny(steps=10)), progress=False)
    assert again["summary"]["by_weights"] == twice["summary"]["by_weights"]


def test_soft_and_k_label_targets_are_the_tasks_exact_targets(tmp_path):
    from resharpen.experiments.training.runs import load_run
    from resharpen.experiments.training.loop import save_run
    from resharpen.experiments.training.next_token import next_token_targets

    task = get_task("othello")
    seqs = torch.as_tensor(task.sample(200, 60, 0))
    p = next_token_targets(task, seqs, ignore_pad=True)
    over = torch.as_tensor(task.legal_next(seqs[:, :-1].numpy()))[..., 0]  # PAD next: no target
    assert over.any() and (p[over] == 0).all()
    assert torch.allclose(p[~over].sum(-1), torch.ones(int((~over).sum()), dtype=torch.float64))
    dyck = get_task("dyck2")
    words = torch.as_tensor(dyck.sample(8, 13, 1))
    assert torch.equal(next_token_targets(dyck, words, ignore_pad=True),
                       torch.as_tensor(dyck.targets(words[:, :-1].numpy())))
    with pytest.raises(ValueError, match="applies to train.target = 'sampled' only"):
        make_config(tiny(target="soft", labels_per_position=2))
    results = {}
    for target, k in (("sampled", 1), ("sampled", 4), ("soft", 1)):
        results[target, k] = train(make_config(tiny(steps=20, target=target,
                                                    labels_per_position=k)), progress=False)
    losses = {key: r["history"][-1]["loss"] for key, r in results.items()}
    assert len({round(v, 6) for v in losses.values()}) == 3 and all(map(math.isfinite, losses.values()))
    soft = results["soft", 1]
    save_run(soft, tmp_path / "soft")
    tokens = torch.as_tensor(dyck.sample(2, 12, 3)) % 3  # dyck1 tokens
    with torch.no_grad():
        assert torch.equal(load_run(tmp_path / "soft").model("ema")(tokens),
                           soft["averaged"]["ema"].eval()(tokens))


GRID = {"name": "t",
        "search": {"task.name": {"grid": ["dyck1"]}, "model.norm": {"grid": ["pre", "post"]},
                   "train.seed": {"grid": [0, 1]}},
        "task": {"train_len": 6, "eval_len": 12},
        "model": {"d_model": 8, "n_layers": 1, "n_heads": 1},
        "train": {"steps": 5, "batch_size": 8, "warmup": 0}, "eval": {"count": 8},
        "when": [{"task.name": "othello", "task": {"train_len": 5}}],
        "profile": {"quick": {"search": {"train.seed": {"grid": [0]}}, "train": {"steps": 3}}}}


def with_search(grid: dict, **axes) -> dict:
    """``grid`` with the [search] grids of ``axes`` (task_name="task.name", ...) replaced."""
    search = dict(grid["search"])
    for axis, values in axes.items():
        search[axis.replace("__", ".")] = {"grid": values}
    return {**grid, "search": search}


def test_grid_profiles_overrides_and_errors():
    full, quick = load_grid(GRID, "full"), load_grid(GRID, "quick")
    assert quick["name"] == "t-quick" and len(quick["configs"]) == 2
    assert [c["name"] for c in full["configs"]] == ["dyck1-pre-s0", "dyck1-pre-s1",
                                                    "dyck1-post-s0", "dyck1-post-s1"]
    assert quick["configs"][0]["train"]["steps"] == 3 and full["configs"][0]["train"]["steps"] == 5
    with_othello = load_grid(with_search(GRID, task__name=["dyck1", "othello"]), "full")
    assert [c["task"]["train_len"] for c in with_othello["configs"]
            if c["task"]["name"] == "othello"] == [5] * 4
    assert all(c["task"]["train_len"] == 6 for c in with_othello["configs"]
               if c["task"]["name"] == "dyck1")  # a [[when]] table acts on its task only
    with pytest.raises(ValueError, match="unknown top-level keys"):
        load_grid({**GRID, "norms": ["pre"]})
    with pytest.raises(ValueError, match="non-empty list"):
        load_grid(with_search(GRID, train__seed=[]))
    with pytest.raises(ValueError, match="names no registered task"):
        load_grid({**GRID, "when": [{"task.name": "chess", "task": {"train_len": 5}}]})
    with pytest.raises(ValueError, match="twice"):
        load_grid({**GRID, "sweep": {"runs": 8}})
    with pytest.raises(ValueError, match="no condition"):
        load_grid({**GRID, "when": [{"task": {"train_len": 5}}]})
    with pytest.raises(ValueError, match="unknown key model.width"):
        load_grid({**GRID, "when": [{"task.name": "dyck1", "model": {"width": 5}}]})


def test_grid_runs_resumes_and_reports(tmp_path, monkeypatch):
    root = run_grid(GRID, out=tmp_path / "g", workers=1, progress=False)
    runs = sorted(p.name for p in (root / "runs").iterdir())
    assert runs == ["dyck1-post-s0", "dyck1-post-s1", "dyck1-pre-s0", "dyck1-pre-s1"]
    for run in runs:
        names = {p.name for p in (root / "runs" / run).iterdir()}
        assert names == {"config.json", "metrics.jsonl", "per_length.json", "summary.json",
                         "provenance.json",
                         "weights_raw.safetensors", "weights_ema.safetensors",
                         "weights_bema.safetensors"}
    rows = table_rows(root)
    assert len(rows) == 12 and len((root / "table.jsonl").read_text().splitlines()) == 12
    # runs shorter than a checkpoint interval leave no checkpoint (tests/core/test_checkpoint.py)
    assert not list(root.glob("checkpoints/*"))
    # a rerun trains nothing
    import resharpen.experiments.languages.grid as ts

    monkeypatch.setattr(ts, "run_group",
                        lambda c, **kw: (_ for _ in ()).throw(AssertionError(c[0]["name"])))
    run_grid(GRID, out=root, workers=1, progress=False)
    with pytest.raises(ValueError, match="different grid"):
        run_grid(with_search(GRID, train__seed=[5]), out=root, workers=1, progress=False)
    text, data = report(root)
    assert "## dyck1" in text and (root / "report.md").exists()
    assert len(data["summary"]) == 6  # 2 norms x 3 weights
    from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

    paths = figures_of(root, tmp_path / "figs")
    assert {p.name for p in paths} == {"fig_langtrain_dyck1.png", "fig_langtrain_dyck1.pdf"}


def test_summary_table_and_paired_effects_statistics():
    rows = []
    for norm, base in (("pre", 0.3), ("post", 0.1)):
        for seed, noise in ((0, 0.0), (1, 0.02), (2, 0.07)):
            for weights, shift in (("raw", 0.0), ("ema", -0.05), ("bema", 0.01)):
                value = base + noise + shift
                rows.append({"run": f"x-{norm}-s{seed}", "task": "x", "norm": norm,
                             "seed": seed, "weights": weights, "seconds": 1.0,
                             "id_invalid_mass": value, "ood_invalid_mass": value,
                             "ood_tv": value, "ood_kl": value, "ood_top1_invalid": 0.0,
                             "lg_score": seed})
    table = summary_table(rows)
    pre_raw = next(e for e in table if e["norm"] == "pre" and e["weights"] == "raw")
    values = [0.3, 0.32, 0.37]
    assert pre_raw["ood_invalid_mass"]["mean"] == pytest.approx(np.mean(values))
    assert pre_raw["ood_invalid_mass"]["std"] == pytest.approx(np.std(values, ddof=1))
    assert pre_raw["ood_invalid_mass"]["max"] == pytest.approx(0.37)
    effects = {e["comparison"]: e for e in paired_effects(rows)}
    assert effects["ema - raw"]["mean"] == pytest.approx(-0.05)
    assert effects["ema - raw"]["negative"] == 6
    assert effects["bema - raw"]["negative"] == 0
    assert effects["post - pre (raw)"]["mean"] == pytest.approx(-0.2)
    header, _, line = overview_lines(rows)
    assert header.startswith("| task | pre (raw) | post (raw) | EMA − raw | BEMA − raw |")
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[0] == "x" and cells[1] == "0.33 ± 0.036 (max 0.37)"
    assert cells[3].startswith("-0.05 ± ") and cells[3].endswith("(6/6 lower)")
    assert cells[4].startswith("+0.01 ± ") and cells[4].endswith("(0/6 lower)")


def test_one_seed_has_no_spread_and_prints_no_nan():
    """A grid with one finished run per cell (a study that has just started) reports its values
    with "(one seed)" and no ± column: a sample std of one value is undefined, never nan or 0,
    and stays null in the JSON."""
    rows = [{"run": "x-pre-s0", "task": "x", "norm": "pre", "seed": 0, "weights": weights,
             "seconds": 1.0, "id_invalid_mass": value, "ood_invalid_mass": value,
             "ood_tv": value, "ood_kl": value, "ood_top1_invalid": 0.0, "lg_score": 3}
            for weights, value in (("raw", 0.15), ("ema", 0.145), ("bema", 0.223))]
    (entry,) = [e for e in summary_table(rows) if e["weights"] == "raw"]
    assert entry["ood_invalid_mass"]["std"] is None
    assert all(e["std"] is None for e in paired_effects(rows))
    _, _, line = overview_lines(rows)
    assert "nan" not in line and "±" not in line, line
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:] == ["0.15 (one seed)", "-0.005 (1/1 lower)", "+0.073 (0/1 lower)"]


def test_cli_train_and_errors(tmp_path, capsys):
    from resharpen.cli import main

    code = main(["langs", "train", "tomita5", "--set", "train.steps=3",
                 "--set", "task.train_len=5", "--set", "task.eval_len=9",
                 "--set", "model.d_model=8", "--set", "model.n_heads=1",
                 "--set", "model.norm=attn_out", "--out", str(tmp_path / "r")])
    assert code == 0
    assert "bema" in capsys.readouterr().out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["task"] == "tomita5" and summary["norm"] == "attn_out"
    assert main(["langs", "train", "dyck1", "--set", "model.nrm=post"]) == 2
    assert "error: unknown key model.nrm" in capsys.readouterr().err
    assert main(["langs", "report", str(tmp_path / "nothing")]) == 2


@pytest.mark.parametrize("name", ["grid.toml", "paper.toml", "othello.toml", "othello6.toml",
                                  "long.toml"])
def test_shipped_grid_files_validate_in_both_profiles(name):
    from resharpen.experiments.languages.grid import GRID_DIR

    quick, full = load_grid(GRID_DIR / name, "quick"), load_grid(GRID_DIR / name, "full")
    assert len(full["configs"]) >= len(quick["configs"]) >= 3
    for planned in (quick, full):
        names = [c["name"] for c in planned["configs"]]
        assert len(set(names)) == len(names)
        norms = {c["model"]["norm"] for c in planned["configs"]}
        # the Othello study's full profile trains what its claim compares (each run's EMA and
        # BEMA weights against its own raw weights): Pre-LN alone; every other grid file
        # trains the placements the Post-Norm claims compare
        wanted = {"pre"} if name == "othello.toml" and planned is full else \
            {"pre", "post", "attn_out"}
        assert wanted <= norms
        for c in planned["configs"]:
            if c["task"]["name"] == "othello":
                assert c["task"]["eval_len"] == 59 and c["task"]["train_len"] < 59
            if c["task"]["eval_len"] > c["task"]["train_len"]:  # length generalization:
                assert c["model"]["positional"] in ("none", "rope")  # positions that generalize
    assert len({c["train"]["seed"] for c in full["configs"]}) >= 3  # at least 3 seeds


def test_the_grids_train_to_a_fit_with_exact_targets():
    """Issue 21: the task grids train with the soft target and a stopping rule below a tenth of
    a uniform prediction's ID invalid mass (make_config refuses more), 8 seeds in full."""
    from resharpen.experiments.languages.grid import GRID_DIR

    for name in ("grid.toml", "paper.toml"):
        for profile in ("quick", "full"):
            for c in load_grid(GRID_DIR / name, profile)["configs"]:
                assert c["train"]["target"] == "soft" and c["fit"]["until_id_invalid_mass"] > 0
        full = load_grid(GRID_DIR / name, "full")["configs"]
        assert {c["train"]["seed"] for c in full} == set(range(8))
    schemes = {c["model"]["norm"] for c in load_grid(GRID_DIR / "grid.toml", "full")["configs"]}
    from resharpen.experiments.training.schema import NORM_PLACEMENTS

    assert schemes == set(NORM_PLACEMENTS)  # every trainable scheme, pre_nofinal (the control) too


@pytest.mark.slow
def test_quick_grid_learns_shuffle_dyck2_in_distribution(tmp_path):
    """The quick profile's Shuffle-Dyck-2 slice (3 placements x 5 seeds, trained to the fit):
    every raw model puts less than 0.1 mass on illegal tokens in distribution, far below the
    uniform prediction's 0.302 (docs/task_training.md, "Fit search")."""
    from resharpen.experiments.languages.grid import GRID_DIR

    root = run_grid(GRID_DIR / "grid.toml", profile="quick", out=tmp_path / "q", workers=2,
                    progress=False, only=["shuffle_dyck2"])
    rows = [r for r in table_rows(root) if r["weights"] == "raw"]
    assert len(rows) == 15
    assert max(r["id_invalid_mass"] for r in rows) < 0.1


def test_grid_only_rejects_a_task_outside_the_grid(tmp_path):
    with pytest.raises(ValueError, match="--only 'othello' is not a task"):
        run_grid(GRID, out=tmp_path / "g", workers=1, progress=False, only=["othello"])
    assert not (tmp_path / "g").exists()  # nothing created


def test_stopping_rule_ends_each_member_at_its_own_fit():
    """fit.until_id_invalid_mass ends a run at its first record step at the fit; in an
    ensemble each member ends at its own step, as it would alone; a fit not well below chance
    is refused."""
    from resharpen.experiments.training.next_token_config import uniform_id_invalid_mass
    from resharpen.experiments.training.next_token import train_group

    def config(seed: int, lr: float) -> dict:
        return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                            "train": {"seed": seed, "lr": lr, "steps": 400, "warmup": 5,
                                      "log_every": 20, "target": "soft"},
                            "fit": {"until_id_invalid_mass": 0.02},
                            "eval": {"count": 32}})

    configs = [config(0, 1e-2), config(1, 5e-3)]  # rates at which rounding is not amplified
    grouped = train_group(configs)
    for cfg, got in zip(configs, grouped):
        alone = train(cfg, progress=False)
        s = got["summary"]
        assert s["fit_reached"] and s["fit_step"] == alone["summary"]["fit_step"] < 400
        assert s["steps_trained"] == s["fit_step"] == got["history"][-1]["step"]
        assert got["history"][-1]["fit_id_invalid_mass"] <= 0.02
        assert s["by_weights"]["raw"]["id_invalid_mass"] == pytest.approx(
            alone["summary"]["by_weights"]["raw"]["id_invalid_mass"], rel=1e-3, abs=1e-6)
    assert grouped[0]["summary"]["fit_step"] != grouped[1]["summary"]["fit_step"]
    chance = uniform_id_invalid_mass(build_task(configs[0]), 8)
    assert 0.2 < chance < 0.8
    with pytest.raises(ValueError, match="not below a tenth of the in-distribution invalid mass"):
        make_config({"task": {"name": "dyck1"}, "fit": {"until_id_invalid_mass": chance / 5}})


def test_averages_at_their_own_fit_keep_the_raw_run_and_match_the_fit():
    """fit.averages = "own_fit": the raw weights are those of the run that stops at the raw fit
    (same step, same numbers); each average is kept at its own first record step at the fit
    (its ID invalid mass <= the fit, recorded in the history) or, never reaching it, as it
    ends at the cap; the run ends when all three reached it. Without the stopping rule it is
    refused."""
    def config(averages: str, steps: int = 400) -> dict:
        return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                            "train": {"seed": 0, "lr": 1e-2, "steps": steps, "warmup": 5,
                                      "log_every": 20, "target": "soft", "ema_decay": 0.95},
                            "fit": {"until_id_invalid_mass": 0.02, "averages": averages},
                            "eval": {"count": 32}})

    at_raw = train(config("raw_fit"), progress=False)
    own = train(config("own_fit"), progress=False)
    assert "averages" not in config("raw_fit")["fit"]  # the default is left out (identities)
    a, b = at_raw["summary"], own["summary"]
    assert b["fit_step"] == a["fit_step"] == b["fit_steps"]["raw"]
    assert b["by_weights"]["raw"] == a["by_weights"]["raw"]
    for kind in ("ema", "bema"):
        step = b["fit_steps"][kind]
        assert step is not None and step >= a["fit_step"]
        assert b["by_weights"][kind]["id_invalid_mass"] <= 0.02
        if kind == "ema":  # the history's EMA measure at that step is the kept model's
            row = next(r for r in own["history"] if r["step"] == step)
            assert row["fit_id_invalid_mass_ema"] == pytest.approx(
                b["by_weights"]["ema"]["id_invalid_mass"], rel=1e-9)
    assert b["steps_trained"] == max(b["fit_steps"].values())
    assert a["by_weights"]["ema"]["id_invalid_mass"] > 0.02  # it lagged at the raw fit
    short = train(config("own_fit", steps=a["fit_step"]), progress=False)["summary"]
    assert short["fit_steps"]["ema"] is None  # the cap came first: kept as it ended
    with pytest.raises(ValueError, match="needs the stopping rule"):
        make_config({"task": {"name": "dyck1"}, "fit": {"averages": "own_fit"}})


def test_the_fit_asks_for_total_variation_too_when_it_states_it():
    """fit.until_id_tv: weights are at the fit when their ID invalid mass AND their ID total
    variation to the exact legal-next distribution are within the bars (meets_fit). On this
    tiny Dyck-1 run with the TV bar 0.04, BEMA meets the invalid-mass bar at a record step whose
    TV is above 0.04 and sharpens from there (invalid mass toward 0, TV up): it is never kept as
    at the fit, while the raw and EMA weights are kept where both bars hold; the history records
    the TVs. A TV bar needs an invalid-mass fit, and at its default it is left out of the
    config (identities)."""
    from resharpen.experiments.training.next_token import meets_fit

    fit = {"until_id_invalid_mass": 0.01, "until_id_tv": 0.1}
    assert meets_fit(fit, 0.005, 0.05) and not meets_fit(fit, 0.002, 0.33)
    assert not meets_fit(fit, 0.02, 0.05) and meets_fit({"until_id_invalid_mass": 0.01}, 0.002, 0.33)

    def config(tv: float) -> dict:
        return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                            "train": {"seed": 0, "lr": 1e-2, "steps": 400, "warmup": 5,
                                      "log_every": 20, "target": "soft", "ema_decay": 0.95},
                            "fit": {"until_id_invalid_mass": 0.02, "until_id_tv": tv,
                                    "averages": "own_fit"},
                            "eval": {"count": 32}})

    assert "until_id_tv" not in config(0.0)["fit"]
    run = train(config(0.04), progress=False)
    s, history = run["summary"], run["history"]
    assert s["fit_tv_target"] == 0.04 and s["fit_reached"]
    bema_mass = [r for r in history if r.get("fit_id_invalid_mass_bema", 1.0) <= 0.02]
    assert bema_mass and all(r["fit_id_tv_bema"] > 0.04 for r in bema_mass)
    assert s["fit_steps"]["bema"] is None and s["steps_trained"] == 400
    assert s["by_weights"]["bema"]["id_invalid_mass"] < 0.001 < 0.1 < s["by_weights"]["bema"]["id_tv"]
    for kind in ("raw", "ema"):
        assert s["fit_steps"][kind] is not None
        assert s["by_weights"][kind]["id_invalid_mass"] <= 0.02
        assert s["by_weights"][kind]["id_tv"] <= 0.04
    row = next(r for r in history if r["step"] == s["fit_step"])
    assert row["fit_id_tv"] <= 0.04
    unreachable = train(config(1e-6), progress=False)["summary"]  # TV 1e-6: never in 400 steps
    assert not unreachable["fit_reached"] and unreachable["steps_trained"] == 400
    with pytest.raises(ValueError, match="fit.until_id_tv is the fit's second condition"):
        make_config({"task": {"name": "dyck1"}, "fit": {"until_id_tv": 0.1}})


def test_averages_patience_ends_a_run_that_waits_for_an_average_too_long():
    """fit.averages_patience = q: the raw weights reach the fit at step s and the EMA does not
    catch up in time (decay 0.999: a 1000-step window), so the run ends at the first record step >= q * s, keeping that average as it ends (fit step
    None); without patience it trains to the cap. Refused without own_fit or below 1."""
    def config(patience: float) -> dict:
        return make_config({"task": {"name": "dyck1", "train_len": 8, "eval_len": 12},
                            "model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                            "train": {"seed": 0, "lr": 1e-2, "steps": 400, "warmup": 5,
                                      "log_every": 20, "target": "soft", "ema_decay": 0.999},
                            "fit": {"until_id_invalid_mass": 0.02, "averages": "own_fit",
                                    "averages_patience": patience},
                            "eval": {"count": 32}})

    waited = train(config(2.0), progress=False)["summary"]
    s = waited["fit_steps"]["raw"]
    assert s is not None and waited["fit_steps"]["ema"] is None
    assert waited["steps_trained"] == min(400, -(-2 * s // 20) * 20)
    assert train(config(0.0), progress=False)["summary"]["steps_trained"] == 400
    assert "averages_patience" not in config(0.0)["fit"]
    with pytest.raises(ValueError, match="fit.averages_patience = 0.5"):
        make_config({"task": {"name": "dyck1"}, "fit": {"until_id_invalid_mass": 0.02,
                                                         "averages_patience": 0.5,
                                                         "averages": "own_fit"}})
    at_raw = make_config({"task": {"name": "dyck1"},  # no effect at the raw fit: left out
                          "fit": {"until_id_invalid_mass": 0.02, "averages_patience": 2.0}})
    assert "averages_patience" not in at_raw["fit"]


def test_a_group_where_stacking_does_not_pay_trains_one_run_at_a_time():
    from resharpen.experiments.training.next_token import train_group

    configs = [make_config({"task": {"name": "dyck2", "train_len": 40, "eval_len": 41},
                            "model": {"d_model": 64, "n_layers": 2, "n_heads": 4},
                            "train": {"seed": seed, "steps": 2, "warmup": 1, "batch_size": 32},
                            "eval": {"count": 4}}) for seed in (0, 1)]
    results = train_group(configs)
    assert [r["config"]["train"]["seed"] for r in results] == [0, 1]
    assert all("ensemble" not in r["summary"] for r in results)
    alone = train(configs[1], progress=False)
    assert results[1]["weights"].tensors["raw"]["W_U"].equal(alone["weights"].tensors["raw"]["W_U"])


def test_an_untested_comparison_reads_not_tested_whatever_its_mean():
    """A per-task test with too few pairs has a finite mean and an adjusted p of 1: the claim's
    measured text says "not tested" with its n, not an effect with "Holm p 1"."""
    from types import SimpleNamespace

    from resharpen.experiments.languages.claims_train import effect_text

    def planned(n, inconclusive):
        return SimpleNamespace(label="tomita5: post - pre_nofinal", adjusted_p=1.0,
                               adjusted_opposite=1.0,
                               result=SimpleNamespace(mean_diff=0.0075, n=n,
                                                      inconclusive=inconclusive))
    assert effect_text(planned(4, "4 < 5 pairs/runs per arm")) == \
        "tomita5: post - pre_nofinal not tested (n=4)"
    assert effect_text(planned(8, "")) == "tomita5: post - pre_nofinal +0.0075 (Holm p 1)"
