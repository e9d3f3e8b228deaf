"""The langtrain.* experiment claims: paired tests (EMA/BEMA within runs, placements by task and
seed on the raw weights, against each of the two controls), Holm over the claims that answer one
question (the averages, the placements, Othello), and INCONCLUSIVE on the tiny grid, too few
pairs, a control not trained or not at the fit (planted grid rows, no training)."""
import numpy as np
import pytest

from resharpen.claims import all_claims
from resharpen.experiments.ledger import run_claim

CLAIMS = {c.id: c for c in all_claims() if c.id.startswith("langtrain.")}
VS_NOFINAL, VS_PRE = "langtrain.postnorm.vs_nofinal", "langtrain.postnorm.vs_pre"


def planted(tasks=("dyck2", "anbn", "othello"), norms=("pre", "post", "attn_out"), seeds=3,
            ema=0.0, post=0.0, unlearned=()):
    """Grid rows: raw OOD invalid mass 0.3 + a placement effect + spread; EMA moves it by
    ``ema``, BEMA by +0.05. The tasks in ``unlearned`` have ID invalid mass 0.5 (not learned)
    and the opposite, ten times larger EMA and placement effects."""
    rng = np.random.default_rng(1)
    rows = []
    for task in tasks:
        sign, fit, tv = (-10.0, 0.5, 0.6) if task in unlearned else (1.0, 0.001, 0.02)
        for norm in norms:
            for seed in range(seeds):
                effect = sign * post if norm in ("post", "attn_out") else 0.0
                raw = 0.3 + effect + 0.01 * rng.normal()
                run = f"{task}-{norm}-s{seed}"
                for weights, value in (("raw", raw),
                                       ("ema", raw + sign * ema + 0.002 * rng.normal()),
                                       ("bema", raw + 0.05 + 0.002 * rng.normal())):
                    rows.append({"run": run, "task": task, "norm": norm, "seed": seed,
                                 "weights": weights, "ood_invalid_mass": value,
                                 "id_invalid_mass": fit, "id_tv": tv})
    return rows


@pytest.fixture
def grid(monkeypatch):
    import resharpen.experiments.languages.claims_train as module

    def use(rows, which="quick grid"):
        root = module.Path("out/sweeps/langs-quick")
        monkeypatch.setattr(module, "grid_rows", lambda profile, norms=None: (
            [r for r in rows if norms is None or r["norm"] in norms], root, which))
        monkeypatch.setattr(module, "othello_rows", lambda profile: (rows, root, which))
    return use


def status(claim_id):
    return run_claim(CLAIMS[claim_id], "quick")


def test_averaged_weights_are_paired_within_runs_per_task_and_decided_after_holm(grid):
    grid(planted(ema=-0.02))
    ema, bema, othello = (status(f"langtrain.{x}") for x in
                          ("ema.ood_invalid_mass", "bema.ood_invalid_mass", "othello.ema_ood"))
    assert ema.status == "PASS" and "dyck2: ema - raw: paired t" in ema.detail
    assert "n=9" in ema.detail  # one test per task: 3 placements x 3 seeds
    assert bema.status == "FAIL"  # BEMA is planted worse (+0.05): the opposite, shown
    assert othello.status == "PASS" and "othello: ema - raw" in othello.detail
    # one family per question: 3 EMA and 3 BEMA tests; the Othello claim's 1 test alone
    assert "family: 6 tests of the 2 langtrain claims of the averages question" in ema.detail
    assert "family: 1 tests of the 1 langtrain claims of the othello question" in othello.detail
    placement = status(f"{VS_PRE}.ood_invalid_mass")  # 3 tasks x 2 placements, + 2 pooled, x 2
    assert "family: 16 tests of the 4 langtrain claims of the placements question" \
        in placement.detail
    assert "Holm-adjusted p=" in othello.detail


def test_placements_are_paired_by_seed_per_task_against_each_control(grid):
    with_control = ("pre", "pre_nofinal", "post", "attn_out")
    grid(planted(norms=with_control, post=-0.05, seeds=5))
    for claim_id, control in ((VS_NOFINAL, "pre_nofinal"), (VS_PRE, "pre")):
        record = status(f"{claim_id}.ood_invalid_mass")
        assert record.status == "PASS" and f"anbn: post - {control}: paired t" in record.detail
        assert f"control {control}: the" in record.detail  # the question it answers
        pooled = status(f"{claim_id}.pooled_log_ratio")
        assert pooled.status == "PASS"
        assert f"log(post / {control}), pooled over tasks" in pooled.detail
        assert "n=15" in pooled.detail  # 3 tasks x 5 seeds
    assert "does a norm before the readout help at all?" in status(
        f"{VS_NOFINAL}.ood_invalid_mass").detail
    # none in the grid is no control: the controls stay pre_nofinal and pre
    grid(planted(norms=("none",) + with_control, post=-0.05, seeds=5))
    record = status(f"{VS_PRE}.ood_invalid_mass")
    assert record.status == "PASS" and "- none" not in record.detail
    grid(planted(norms=with_control, post=+0.05, seeds=5))
    for claim_id in (VS_NOFINAL, VS_PRE):
        assert status(f"{claim_id}.ood_invalid_mass").status == "FAIL"
        assert status(f"{claim_id}.pooled_log_ratio").status == "FAIL"


def test_a_missing_control_or_too_few_runs_at_the_fit_are_inconclusive_with_why(grid):
    """A grid without pre_nofinal leaves its claims INCONCLUSIVE, saying the grid has no such
    runs, while the comparison with pre decides. pre_nofinal runs that learned the task but
    stopped above their stated fit (the step cap) count as not at the fit, however much better
    or worse they are planted: with 2 of 5 at the fit on every task, no task has a control at
    matched fit, nothing is compared, and the claims are INCONCLUSIVE with the counts. (Fewer
    than 5 runs of a control is too little data, not a failure to fit: a test that cannot
    decide, test_too_few_pairs_are_inconclusive.)"""
    grid(planted(post=-0.05, seeds=5))
    for suffix in ("ood_invalid_mass", "pooled_log_ratio"):
        missing = status(f"{VS_NOFINAL}.{suffix}")
        assert missing.status == "INCONCLUSIVE", suffix
        assert "the grid has no pre_nofinal runs" in missing.detail and "0 < 5" in missing.detail
        assert "resharpen langs run --profile full" in missing.detail
        assert status(f"{VS_PRE}.{suffix}").status == "PASS"
    rows = planted(norms=("pre", "pre_nofinal", "post", "attn_out"), post=-0.05, seeds=5)
    for r in rows:
        if r["norm"] == "pre_nofinal" and r["seed"] >= 2:  # learned, not at the fit of 0.015
            r["id_invalid_mass"], r["ood_invalid_mass"] = 0.03, r["ood_invalid_mass"] - 0.5
    grid([{**r, "fit_target": 0.015} for r in rows])
    few = status(f"{VS_NOFINAL}.ood_invalid_mass")
    assert few.status == "INCONCLUSIVE" and "no test could be made" in few.detail
    assert "pre_nofinal 2 of 5 runs at the fit, post 5 of 5 runs at the fit" in few.detail
    assert few.measured == ("not compared, the control at the fit in fewer than 5 runs: anbn, "
                            "dyck2, othello")
    assert "a control that reaches the fit would decide" in few.detail
    pooled = status(f"{VS_NOFINAL}.pooled_log_ratio")
    assert pooled.status == "INCONCLUSIVE" and "0 < 5" in pooled.detail
    assert "pre_nofinal 6 of 15 runs at the fit" in pooled.detail  # counted on every task
    assert "the grid has no" not in pooled.detail
    assert status(f"{VS_PRE}.ood_invalid_mass").status == "PASS"


def test_a_task_where_the_control_reaches_no_fit_is_named_and_not_compared(grid):
    """The rule is asymmetric: a task where the control reached the fit in fewer than 5 runs has
    no control at matched fit and is left out, named with each arm's fit count (the others
    decide); a task where the control fits and a Post-Norm placement does not stays in, and
    leaves the claim INCONCLUSIVE: a placement's failure to fit is not hidden."""
    rows = [{**r, "fit_target": 0.01} for r in
            planted(norms=("pre", "pre_nofinal", "post", "attn_out"), post=-0.05, seeds=5)]
    for r in rows:
        if r["task"] == "anbn" and r["norm"] == "pre":  # learned, never at the fit
            r["id_invalid_mass"], r["ood_invalid_mass"] = 0.03, 0.01
    grid(rows)
    for suffix in ("ood_invalid_mass", "pooled_log_ratio"):
        record = status(f"{VS_PRE}.{suffix}")
        assert record.status == "PASS", suffix
        assert "not compared, the control at the fit in fewer than 5 runs: anbn" \
            in record.measured
        assert "anbn: pre 0 of 5 runs at the fit, post 5 of 5 runs at the fit" in record.detail
    assert "anbn: post - pre" not in status(f"{VS_PRE}.ood_invalid_mass").detail
    assert "n=10" in status(f"{VS_PRE}.pooled_log_ratio").detail  # dyck2 and othello only
    rows = [{**r, "fit_target": 0.01} for r in
            planted(norms=("pre", "pre_nofinal", "post", "attn_out"), post=-0.05, seeds=5)]
    for r in rows:  # now post, not the control, misses the fit on anbn
        if r["task"] == "anbn" and r["norm"] == "post":
            r["id_invalid_mass"] = 0.03
    grid(rows)
    record = status(f"{VS_PRE}.ood_invalid_mass")
    assert record.status == "INCONCLUSIVE" and "anbn: post - pre" in record.detail
    assert "not compared" not in record.measured


def test_seeds_at_the_fit_in_one_arm_only_are_dropped_with_their_partner(grid):
    """post at the fit on seeds 1-6, pre_nofinal on 0-5: seeds 1-5 pair (paired t, n = 5),
    never a Welch test of different seeds."""
    rows = planted(norms=("pre", "pre_nofinal", "post", "attn_out"), post=-0.05, seeds=7)
    for r in rows:
        if (r["norm"], r["seed"]) in (("post", 0), ("pre_nofinal", 6)):
            r["id_invalid_mass"] = 0.03
    grid([{**r, "fit_target": 0.015} for r in rows])
    record = status(f"{VS_NOFINAL}.ood_invalid_mass")
    assert "dyck2: post - pre_nofinal: paired t (scipy.stats.ttest_rel), n=5" in record.detail
    assert "Welch" not in record.detail


def test_one_task_against_the_effect_fails_the_per_task_claim(grid):
    """The per-task claim needs every task: a task where Post-Norm is planted worse fails it,
    while the pooled log ratio (two tasks better, one worse) does not decide for the worse."""
    rows = [r for r in planted(post=-0.05, seeds=5) if r["task"] != "anbn"]
    rows += [r for r in planted(post=+0.05, seeds=5) if r["task"] == "anbn"]
    grid(rows)
    assert status(f"{VS_PRE}.ood_invalid_mass").status == "FAIL"
    assert status(f"{VS_PRE}.pooled_log_ratio").status != "FAIL"


def test_too_few_pairs_are_inconclusive(grid):
    grid(planted(tasks=("dyck2",), seeds=1, post=-0.05))
    record = status(f"{VS_PRE}.ood_invalid_mass")
    assert record.status == "INCONCLUSIVE" and "1 < 5" in record.detail
    assert "resharpen langs run" in record.detail


def test_only_runs_that_learned_the_task_decide(grid):
    """Runs whose raw ID invalid mass is above LEARNED_ID are left out (and listed): an
    unlearned task with a ten times larger opposite effect changes no verdict (it is outside
    the claims' premise, not tested), and a claim with no learned run is INCONCLUSIVE. A task
    that only a scheme the placement claims do not compare learned is outside their premise
    too: they read their four schemes' runs only."""
    grid(planted(tasks=("dyck2", "anbn", "tomita5"), ema=-0.02, post=-0.05, seeds=5,
                 unlearned=("tomita5",)))
    ema = status("langtrain.ema.ood_invalid_mass")
    assert ema.status == "PASS" and "n=15" in ema.detail and "tomita5: ema" not in ema.detail
    assert "left out, not learned in distribution" in ema.detail and "tomita5 15" in ema.detail
    post = status(f"{VS_PRE}.ood_invalid_mass")
    assert post.status == "PASS" and "tomita5:" not in post.detail
    rows = planted(tasks=("dyck2", "anbn", "tomita5"), norms=("pre", "post", "attn_out", "none"),
                   post=-0.05, seeds=5, unlearned=("tomita5",))
    for r in rows:  # tomita5 learned by none only, planted much better than any placement
        if r["task"] == "tomita5" and r["norm"] == "none":
            r["id_invalid_mass"], r["id_tv"], r["ood_invalid_mass"] = 0.001, 0.02, 0.01
    grid(rows)
    post = status(f"{VS_PRE}.ood_invalid_mass")
    assert post.status == "PASS" and "tomita5:" not in post.measured, post.measured
    grid(planted(ema=-0.02, unlearned=("othello",)))
    othello = status("langtrain.othello.ema_ood")
    assert othello.status == "INCONCLUSIVE" and "othello: no run at matched fit" in othello.detail


def test_averages_count_only_where_they_reached_their_runs_own_fit(grid):
    """matched fit: an EMA model whose ID invalid mass (0.03) is under the learned bar (0.05)
    but above its run's stated fit (0.015, where the raw weights stopped) is left out; planted
    much worse there, it would otherwise decide the claim against EMA. A row with no stated fit
    falls back to the learned bar."""
    rows = planted(ema=-0.02, seeds=5)
    for r in rows:
        if r["task"] == "anbn" and r["weights"] == "ema":
            r["id_invalid_mass"], r["ood_invalid_mass"] = 0.03, r["ood_invalid_mass"] + 0.2
    grid([{**r, "fit_target": 0.015} for r in rows])
    ema = status("langtrain.ema.ood_invalid_mass")
    assert ema.status == "INCONCLUSIVE" and "anbn: no run at matched fit" in ema.detail
    assert "raw weights both reached the run's fit (ID invalid mass <= 0.015" in ema.detail
    grid(rows)  # no fit_target: the learned bar 0.05 lets the lagging EMA models in
    assert status("langtrain.ema.ood_invalid_mass").status == "FAIL"


def test_an_average_is_not_compared_with_raw_weights_short_of_the_fit(grid):
    """matched fit both ways: a run whose raw weights learned the task (ID invalid mass 0.03,
    under the learned bar 0.05) but ended short of the run's stated fit (0.015), at the step
    cap, while its BEMA weights reached it, is left out; planted with BEMA far better out of
    distribution there, it would otherwise decide anbn for BEMA at a fit the raw weights never
    had."""
    rows = planted(seeds=5)
    for r in rows:
        if r["task"] == "anbn" and r["weights"] == "raw":
            r["id_invalid_mass"] = 0.03
        if r["task"] == "anbn" and r["weights"] == "bema":
            r["id_invalid_mass"], r["ood_invalid_mass"] = 0.005, 0.001
    grid([{**r, "fit_target": 0.015} for r in rows])
    bema = status("langtrain.bema.ood_invalid_mass")
    assert "anbn: no run at matched fit" in bema.detail, bema.detail
    assert "anbn: bema - raw: paired t (scipy.stats.ttest_rel), n=0" in bema.detail, bema.detail


def test_a_degenerate_average_that_only_avoids_illegal_tokens_is_not_at_the_fit(grid):
    """An average can meet the invalid-mass fit by predicting a few always-legal tokens (BEMA's
    early extrapolation on Dyck: ID invalid mass 0.002 at total variation 0.33 to the exact
    legal-next distribution). Planted so, with a far lower OOD invalid mass than its raw
    weights, it would decide the BEMA claim in its favour; the total-variation bar (the run's
    fit_tv_target 0.1, else LEARNED_TV) leaves it out, and a raw model like it is not learned."""
    rows = planted(seeds=5)
    for r in rows:
        if r["task"] == "anbn" and r["weights"] == "bema":
            r["id_invalid_mass"], r["id_tv"], r["ood_invalid_mass"] = 0.002, 0.33, 0.001
    grid([{**r, "fit_target": 0.01, "fit_tv_target": 0.3} for r in rows])
    bema = status("langtrain.bema.ood_invalid_mass")
    assert "anbn: no run at matched fit" in bema.detail and "total variation <= 0.3" in bema.detail
    grid([{**r, "fit_target": 0.01, "fit_tv_target": 0.4} for r in rows])  # the run's own bar
    bema = status("langtrain.bema.ood_invalid_mass")  # lets them in: they decide anbn
    assert "anbn: bema - raw: paired t (scipy.stats.ttest_rel), n=15" in bema.detail
    grid(rows)  # no stated TV bar: LEARNED_TV (0.1) leaves them out
    assert "anbn: no run at matched fit" in status("langtrain.bema.ood_invalid_mass").detail
    for r in rows:
        if r["task"] == "anbn" and r["weights"] == "raw":
            r["id_tv"] = 0.33
    grid(rows)
    ema = status("langtrain.ema.ood_invalid_mass")
    assert "anbn 15 (ID 0.001-0.001, TV 0.33-0.33)" in ema.detail
    assert "not both raw ID invalid mass <= 0.05, ID total variation <= 0.1" in ema.detail


def test_a_part_of_the_full_grid_decides_nothing(monkeypatch, tmp_path):
    """The full profile decides a claim on every run it reads, never on a part: with 8 runs
    finished the placement claims (which read the 352 runs of pre, pre_nofinal, post and
    attn_out) and the averaging claims (all 792) are INCONCLUSIVE with their own counts and the
    command that makes the rest; once the 352 placement runs have finished, the placement
    claims decide while the averaging claims still wait. The quick profile never reads the full
    grid."""
    import resharpen.experiments.languages.claims_train as module
    import resharpen.experiments.languages.grid as grid
    from resharpen.experiments.ledger.registry import _REGISTRY
    from resharpen.experiments.ledger.runner import run_claim

    roots = {"langs": tmp_path / "langs", "langs-quick": tmp_path / "langs-quick"}
    for root in roots.values():
        root.mkdir()
    planned = grid.load_grid(grid.grid_file("full"), "full")["configs"]
    placement_runs = [c for c in planned if c["model"]["norm"] in module.QUESTION_NORMS[
        "placements"]]
    finished = planned[:8]
    monkeypatch.setattr(module, "_CACHE", {})
    monkeypatch.setattr(grid, "default_root", lambda name: roots[name])
    monkeypatch.setattr(grid, "load_runs", lambda root: [
        {"folder": root / "runs" / c["name"]} for c in finished] if root == roots["langs"]
        else [])
    record = run_claim(_REGISTRY["langtrain.postnorm.vs_pre.ood_invalid_mass"], "full")
    assert (record.status, record.measured) == ("INCONCLUSIVE", "8 of 352 runs finished"), record
    assert "8 of the full grid's 352 runs of pre_nofinal, pre, post, attn_out" in record.detail
    assert "resharpen langs run --profile full" in record.detail
    ema = run_claim(_REGISTRY["langtrain.ema.ood_invalid_mass"], "full")
    assert (ema.status, ema.measured) == ("INCONCLUSIVE", "8 of 792 runs finished"), ema

    finished = placement_runs + [c for c in planned if c["model"]["norm"] == "none"][:3]
    monkeypatch.setattr(module, "_CACHE", {})
    rng = np.random.default_rng(0)
    monkeypatch.setattr(grid, "table_rows", lambda root: [
        {"run": c["name"], "task": c["task"]["name"], "norm": c["model"]["norm"],
         "seed": c["train"]["seed"], "weights": w, "ood_invalid_mass": 0.3 + 0.01 * rng.normal(),
         # the finished none runs have not learned their task: the placement claims never
         # read them, so their details say every run they read learned
         "id_invalid_mass": 0.5 if c["model"]["norm"] == "none" else 0.001, "id_tv": 0.02,
         "fit_target": c["fit"]["until_id_invalid_mass"]}
        for c in finished for w in ("raw", "ema", "bema")])
    decided = run_claim(_REGISTRY["langtrain.postnorm.vs_pre.ood_invalid_mass"], "full")
    assert "runs finished" not in decided.measured and decided.status != "ERROR", decided
    assert "every run learned its task in distribution" in decided.detail, \
        "the placement claims read their four schemes only"
    assert "full grid (11 tasks x 4 schemes x 8 seeds" in decided.detail
    ema = run_claim(_REGISTRY["langtrain.ema.ood_invalid_mass"], "full")
    assert (ema.status, ema.measured) == ("INCONCLUSIVE", "355 of 792 runs finished"), ema

    trained = []
    monkeypatch.setattr(grid, "run_grid", lambda *a, **k: trained.append(a) or roots["langs-quick"])
    monkeypatch.setattr(grid, "table_rows", lambda root: [])
    rows, root, _ = module.grid_rows("quick")
    assert root == roots["langs-quick"] and trained, "the quick profile reads its own grid"


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_both_controls_and_both_post_norms_are_trained_on_every_task_of_the_grid(grid, profile):
    """The task grid of each profile trains pre_nofinal and pre beside post and attn_out on
    every task with the same seeds (so the claims can pair them), and the claims decide on rows
    shaped like its runs (the full grid's nine schemes, none among them, included): every test
    is paired, n = the grid's seeds, pre_nofinal and pre the only controls."""
    from resharpen.experiments.languages.grid import grid_file, load_grid
    from resharpen.experiments.languages.postnorm_controls import CONTROLS, POST_NORMS

    configs = load_grid(grid_file(profile), profile)["configs"]
    arms = {}
    for c in configs:
        arms.setdefault(c["task"]["name"], {}).setdefault(c["model"]["norm"], set()).add(
            c["train"]["seed"])
    for task, norms in arms.items():
        seeds = [norms.get(n) for n in (*CONTROLS, *POST_NORMS)]
        assert all(seeds) and all(s == seeds[0] for s in seeds), (profile, task, norms.keys())
    rows, rng = [], np.random.default_rng(2)
    for c in configs:
        for weights in ("raw", "ema", "bema"):
            rows.append({"run": c["name"], "task": c["task"]["name"], "norm": c["model"]["norm"],
                         "seed": c["train"]["seed"], "weights": weights,
                         "ood_invalid_mass": 0.3 + 0.01 * rng.normal(),
                         "id_invalid_mass": 0.001, "id_tv": 0.02,
                         "fit_target": c["fit"]["until_id_invalid_mass"]})
    grid(rows)
    n = len({c["train"]["seed"] for c in configs})
    for claim_id, control in ((VS_NOFINAL, "pre_nofinal"), (VS_PRE, "pre")):
        record = status(f"{claim_id}.ood_invalid_mass")
        assert record.status != "ERROR", record.detail
        assert f"set_complement: post - {control}: paired t (scipy.stats.ttest_rel), n={n}" \
            in record.detail
        assert "- none" not in record.detail and "Welch" not in record.detail


def test_othello_claim_reads_the_full_study_only_when_every_run_has_finished(tmp_path,
                                                                            monkeypatch):
    """The full profile decides the Othello claim on the whole study or not at all (a part of
    it is INCONCLUSIVE with the run count); the quick profile never reads the full study."""
    import resharpen.experiments.languages.claims_train as module
    import resharpen.experiments.languages.grid as grid_module

    study = tmp_path / "othello"
    (study / "runs" / "othello6-pre-s0").mkdir(parents=True)
    monkeypatch.setattr(grid_module, "default_root", lambda name: tmp_path / name)
    monkeypatch.setattr(grid_module, "load_runs", lambda root: [
        {"folder": study / "runs" / "othello6-pre-s0"}] if root == study else [])
    out = run_claim(CLAIMS["langtrain.othello.ema_ood"], "full")
    assert (out.status, out.measured, out.expected) == (
        "INCONCLUSIVE", "1 of 8 runs finished", "all 8 runs finished")
    assert "1 of the Othello study's 8 runs" in out.detail
    assert "resharpen langs run --grid languages/othello --profile full" in out.detail
    quick = object()
    monkeypatch.setattr(module, "grid_rows", lambda profile, norms=None: quick)
    assert module.othello_rows("quick") is quick

