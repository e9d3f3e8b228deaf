"""`resharpen langs compare`: two grids compared run by run, paired by seed (planted tables,
no training), and its bad inputs."""
import numpy as np
import pytest

from resharpen.cli import main


def planted(shift_post=0.0, seeds=8, unlearned_seed=None, tasks=("dyck1", "anbn")):
    rng = np.random.default_rng(0)
    rows = []
    for task in tasks:
        for norm in ("pre", "post"):
            for seed in range(seeds):
                run = f"{task}-{norm}-s{seed}"
                value = 0.1 + 0.01 * rng.normal() + (shift_post if norm == "post" else 0.0)
                fit = 0.5 if seed == unlearned_seed else 0.001
                for weights in ("raw", "ema", "bema"):
                    rows.append({"run": run, "task": task, "norm": norm, "seed": seed,
                                 "weights": weights, "ood_invalid_mass": value,
                                 "id_invalid_mass": fit, "id_tv": 0.02})
    return rows


@pytest.fixture
def grids(monkeypatch):
    import resharpen.experiments.languages.grid as grid

    def use(a, b):
        monkeypatch.setattr(grid, "table_rows", lambda root: {"A": a, "B": b}[str(root)])
    return use


def test_each_cell_pairs_by_seed_and_holm_adjusts(grids):
    from resharpen.experiments.languages.compare_grids import compare_grids, compare_table

    base = planted()
    noise = np.random.default_rng(1).normal(0, 0.005, len(base))
    shifted = [{**r, "ood_invalid_mass": r["ood_invalid_mass"] + noise[i]
                + (0.05 if r["norm"] == "post" else 0.0)} for i, r in enumerate(base)]
    grids(base, shifted)
    rows = {(r["task"], r["norm"]): r for r in compare_grids("A", "B")}
    post, pre = rows["dyck1", "post"], rows["dyck1", "pre"]
    assert post["n"] == 8 and post["mean_diff"] == pytest.approx(0.05, abs=0.01)
    assert post["p_holm"] < 1e-4 and post["p_holm"] >= post["p"]
    assert abs(pre["mean_diff"]) < 0.01 and pre["p_holm"] > 0.05  # no planted difference
    table = compare_table(list(rows.values()), "A", "B", "ood_invalid_mass")
    assert "| dyck1 | post | 8 |" in table and "Holm over the 4 cells" in table


def test_runs_not_learned_in_either_grid_are_left_out(grids):
    from resharpen.experiments.languages.compare_grids import compare_grids

    grids(planted(), planted(unlearned_seed=3))
    rows = compare_grids("A", "B")
    assert all(r["n"] == 7 and r["left_out"] == 1 for r in rows)


def test_grids_with_nothing_in_common_or_an_unknown_metric_are_refused(grids):
    from resharpen.experiments.languages.compare_grids import compare_grids

    grids(planted(tasks=("dyck1",)), planted(tasks=("anbn",)))
    with pytest.raises(ValueError, match="share no"):
        compare_grids("A", "B")
    grids(planted(), planted())
    with pytest.raises(ValueError, match="not a column"):
        compare_grids("A", "B", metric="nope")


def test_the_command_refuses_a_folder_that_is_not_a_task_grid(tmp_path, capsys):
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "sweep.json").write_text('{"kind": "set_complement_sweep"}')
    for a, b in ((tmp_path / "missing", tmp_path / "sc"), (tmp_path / "sc", tmp_path / "sc")):
        assert main(["langs", "compare", str(a), str(b)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "is not a task grid folder" in err
