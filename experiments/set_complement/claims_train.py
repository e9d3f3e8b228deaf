"""Ledger claims ``train.*``, about training: BEMA's limits, batched ensembles, gradient noise,
and the measured effects of the random-search sweep (Post-Norm, dropout, EMA/BEMA, dispersion
exponent).

The experiment claims read the full sweep ``out/sweeps/random_search`` when it has finished
runs (``resharpen sweep experiments/configs/set_complement/random_search.toml``), otherwise they
run (once, then reuse) the quick-profile sweep ``out/sweeps/random_search-quick``. Each names its
test (paired t with Wilcoxon where the arms share seeds or runs, Welch with its degrees of
freedom where they do not, Spearman for a trend), the n, the p-value and the Holm-adjusted
p-value over its family (the tests of every claim that reads the same sweep), and which sweep
it read. Only the runs that learned the task in distribution decide (raw ID invalid mass <=
:data:`LEARNED_ID`; the others are counted in the detail): a length-generalization effect of a
model near chance in distribution says nothing about the theory. A claim has three outcomes
(:func:`resharpen.experiments.ledger.stats.decision`): PASS when its effect is shown at
Holm-adjusted p < 0.05, FAIL when the opposite effect is shown at the same level, else
INCONCLUSIVE (too few learned runs, fewer than stats.MIN_N per arm, or neither direction shown),
with the command that would decide.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import torch

from resharpen.experiments.ledger import Outcome, claim, stats
from resharpen.experiments.training.sweep import describe_runs
from resharpen.experiments.common.profiles import pick
from resharpen.experiments.ledger.stats import ALPHA

PAPER = "arXiv 2510.08341"


def _sweep_rows(name: str = "random_search") -> tuple[list[dict], Path]:
    """The table rows of sweep ``name`` (the full one when finished, else the quick one, run
    here), each with its raw weights' ID invalid mass (:data:`RAW_ID`, from the run's
    summary.json: the table has the primary weights' only)."""
    from resharpen.experiments.training.config import sweep_folder
    from resharpen.experiments.training.sweep import load_runs, read_table
    from resharpen.experiments.set_complement.sweep_report import ensure_sweep

    full = sweep_folder(name)
    if (full / "table.jsonl").exists() and read_table(full):
        root = full
    else:
        root = ensure_sweep("quick", runs_quick=12 if name == "random_search" else 10, name=name)
    raw_id = {run["config"]["name"]: run["summary"]["by_weights"]["raw"]["id_invalid_mass"]
              for run in load_runs(root)}
    rows = read_table(root)
    for row in rows:
        row.setdefault(RAW_ID, raw_id.get(row["run"], float("nan")))
    return rows, root


RAW_ID = "raw.id_invalid_mass"
LEARNED_ID = 0.05
"""A run has learned the task in distribution when its raw weights' invalid mass over the
training lengths 1..L_train is <= this: base.toml's ``eval.threshold`` (the bar of the LG score),
the same bar as the language grids' (``langtrain``'s LEARNED_ID), fixed before these claims were
rerun. Only such runs decide the sweep claims (:func:`learned`)."""


def learned(rows: list[dict]) -> list[dict]:
    """The rows of the runs whose raw weights learned the task in distribution."""
    return [r for r in rows if float(r.get(RAW_ID, float("nan"))) <= LEARNED_ID]


def learned_note(rows: list[dict]) -> str:
    """How many runs the fit rule kept, and the ID range of the ones it left out."""
    kept = learned(rows)
    ids = {id(r) for r in kept}
    out = np.array([r.get(RAW_ID, np.nan) for r in rows if id(r) not in ids], dtype=float)
    text = (f"{len(kept)} of {len(rows)} runs learned the task in distribution (raw ID invalid "
            f"mass <= {LEARNED_ID})")
    if out.size:
        text += (f"; left out {out.size} (raw ID invalid mass {np.nanmin(out):.3g}-"
                 f"{np.nanmax(out):.3g})" if np.isfinite(out).any() else
                 f"; left out {out.size} (raw ID invalid mass unknown)")
    return text


@claim("train.bema.limits", source="Block & Zhang arXiv 2508.00180 (Alg. 1); TRL BEMACallback",
       statement="BEMA with alpha_t -> 0 (eta large) is the EMA with weights (rho+gamma t)^-kappa; "
                 "eta = 0 adds the full correction theta_t - theta_0 (not plain EMA)",
       kind="numeric", tolerance="1e-12 relative", cost="fast",
       expected_from="statement",
       origin="the statement's two limits (EMA with weights (rho + gamma t)^-kappa; that EMA "
              "plus theta_t - theta_0 at eta = 0), computed by the EMA recursion typed in the "
              "check (beta_t = (10 + t)^-1/2, no averaging code) against "
              "experiments.training.averaging.BEMA")
def check_bema_limits(profile: str) -> Outcome:
    from torch import nn

    from resharpen.experiments.training.averaging import BEMA, BEMAConfig

    values = np.random.default_rng(0).normal(size=40)
    results = {}
    for eta in (0.0, 300.0):
        model = nn.Linear(1, 1, bias=False).double()
        bema = BEMA(model, BEMAConfig(update_freq=1, bias_power=eta))
        out = []
        for t, value in enumerate(values):
            with torch.no_grad():
                model.weight.fill_(value)
            bema.update(model, t)
            out.append(float(bema.module().weight))
        results[eta] = np.array(out)
    ema, plain = values[0], [values[0]]
    for t, value in enumerate(values[1:], start=1):
        beta = (10.0 + t) ** -0.5
        ema = (1 - beta) * ema + beta * value
        plain.append(ema)
    plain = np.array(plain)
    err_ema = float(np.max(np.abs(results[300.0] - plain)))
    err_full = float(np.max(np.abs(results[0.0] - (plain + values - values[0]))))
    gap = float(np.max(np.abs(results[0.0] - plain)))
    return Outcome(measured=max(err_ema, err_full), expected=0.0,
                   passed=max(err_ema, err_full) < 1e-12 and gap > 0.1,
                   detail=f"max error of the eta->inf (EMA) limit {err_ema:.1e}, of eta = 0 "
                          f"(EMA + theta_t - theta_0) {err_full:.1e}; eta = 0 differs from plain "
                          f"EMA by up to {gap:.2f} (the notes' 'eta = 0 gives EMA' is the "
                          "eta -> inf limit)")


@claim("train.ensemble.batched_equals_sequential", source="reconstructed",
       statement="K models trained as one stacked computation equal the same K runs done one at "
                 "a time (per-model seeds, learning rates, weight decays and dropout rates, "
                 "dropout on: the masks are keyed by run seed and step)",
       kind="numeric", tolerance="max |weight difference| < 1e-5 (float32)", cost="fast",
       expected_from="statement",
       origin="an identity, difference 0 (< 1e-5 in float32): the batched ensemble (train_group)"
              " against the same runs trained one at a time (train), two routes")
def check_ensemble_batched_equals_sequential(profile: str) -> Outcome:
    """The runs of one batched ensemble (set_complement.train.train_group: the Transformer
    stacked and vectorized by the engine, its per-member AdamW) against the same runs trained
    alone (set_complement.train.train: the module with torch.optim.AdamW): two routes, so a
    change of either shows. The members differ in seed, learning rate, weight decay and
    dropout rate (0, 0.1, 0.2 on attention and residual, set here, not inherited); they must
    agree to float32 rounding, dropout included."""
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.set_complement.train import load_config, train, train_group

    seeds, lrs, decays, rates = [0, 5, 9], [1e-2, 3e-3, 2e-2], [0.0, 0.1, 0.01], [0.0, 0.1, 0.2]
    runs = [load_config(CONFIG_DIR / "set_complement" / "base_sampled.toml",
                        ["task.vocab=8", "model.d_model=8", "train.steps=15", "train.warmup=3",
                         "train.batch_size=8", "train.eval_every=0", "model.norm=post",
                         "train.until_id_invalid_mass=0",
                         f"model.attn_dropout={p}", f"model.resid_dropout={p}",
                         f"train.seed={s}", f"train.lr={lr}", f"train.weight_decay={wd}"])
            for s, lr, wd, p in zip(seeds, lrs, decays, rates)]
    batched = [r["weights"].tensors["raw"] for r in train_group(runs)]
    alone = [train(c, progress=False)["weights"].tensors["raw"] for c in runs]
    gaps = [max(float((x[name] - y[name]).abs().max()) for name in x)
            for x, y in zip(batched, alone)]
    diff = max(gaps)
    return Outcome(measured=diff, expected=0.0, passed=diff < 1e-5,
                   detail="K = 3, v = 8, post placement, 15 AdamW steps with clipping, dropout "
                          "rates 0 / 0.1 / 0.2, batched ensemble vs the trainer's runs; largest "
                          "weight difference per member " + ", ".join(f"{g:.2g}" for g in gaps))


def noise_share(model, vocab: int, length: int, count: int = 64) -> tuple[float, float]:
    """(mean noise share, mean ||p - p*||^2) of ``model`` at ``length`` over ``count`` inputs,
    exactly over y ~ p*: E||p - e_y||^2 = sum_y p*(y) ||p - e_y||^2 = noise + ||p - p*||^2, the
    noise (the same sum at p = p*, trace 1 - 1/(v-s)) not depending on the model."""
    from resharpen.experiments.tasks.set_complement import exact_target, sample_inputs

    tokens = sample_inputs(vocab, length, count, seed=100 + length)
    with torch.no_grad():
        p = torch.softmax(model(tokens)[:, -1].double(), -1)
    target = exact_target(tokens, vocab)
    eye = torch.eye(vocab, dtype=torch.float64)
    second = torch.einsum("ny,nyv->n", target, (p[:, None, :] - eye) ** 2)
    noise = torch.einsum("ny,nyv->n", target, (target[:, None, :] - eye) ** 2)
    return float((noise / second).mean()), float(((p - target) ** 2).sum(-1).mean())


@claim("train.noise.trace", source=f"{PAPER} (abstract: noisy gradients); docs/theory.md",
       statement="the label noise (the trace 1 - 1/(v-s) of Cov(e_y), y ~ p*) is most of the "
                 "mean squared logit gradient E||p - e_y||^2 = trace + ||p - p*||^2 already at "
                 "initialization (a near-uniform model is near p*) and a larger share after "
                 "training, which brings the model nearer p* (||p - p*||^2 below its value at "
                 "initialization) at every trained length",
       kind="numeric", tolerance="at every trained length: noise share trace / E||p - e_y||^2 "
                                 "after training > at initialization (the same seed's model), "
                                 "and >= 0.8 at both (mean over 64 inputs)", cost="slow",
       expected_from="statement",
       origin="the statement's ordering (noise share after training > at initialization, ||p - "
              "p*||^2 smaller) and the share threshold 0.8 fixed beforehand; the noise is summed"
              " exactly over y ~ p* in noise_share, no theory value enters")
def check_noise_trace(profile: str) -> Outcome:
    """The same model at initialization and after 400 steps: the threshold 0.8 alone is met by
    the untrained model (0.978 at v = 16), so the claim that training moves the model towards p*
    is the comparison of the two, length by length."""
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.training.loop import seeded_model
    from resharpen.experiments.set_complement.train import load_config, train

    v = pick(profile, quick=16, full=32)
    config = load_config(CONFIG_DIR / "set_complement" / "base_sampled.toml",
                         [f"task.vocab={v}", f"model.d_model={v}", "train.steps=400",
                          "train.warmup=20", "train.lr=3e-2", "train.eval_every=0",
                          "eval.per_length=16"])
    initial = seeded_model(config, vocab=v, max_len=v).double().eval()  # the same seed's init
    model = train(config, progress=False)["model"].double().eval()
    lengths = range(1, config["task"]["train_len"] + 1)
    trained = {s: noise_share(model, v, s) for s in lengths}
    start = {s: noise_share(initial, v, s) for s in lengths}
    low, low_init = (min(share for share, _ in x.values()) for x in (trained, start))
    rises = all(trained[s][0] > start[s][0] for s in lengths)
    closer = all(trained[s][1] < start[s][1] for s in lengths)
    return Outcome(measured=f"noise share min over lengths: init {low_init:.4f}, trained {low:.4f}",
                   expected="trained > init at every length; >= 0.8 at both",
                   passed=bool(low >= 0.8 and low_init >= 0.8 and rises and closer),
                   detail=f"v = {v}, one model trained 400 steps (base.toml, lr 3e-2, seed 0), "
                          f"lengths 1..{config['task']['train_len']}, 64 inputs each, exact "
                          "expectations over y ~ p*; noise share per length trained "
                          + ", ".join(f"{trained[s][0]:.4f}" for s in lengths) + " vs at init "
                          + ", ".join(f"{start[s][0]:.4f}" for s in lengths)
                          + "; ||p - p*||^2 per length trained "
                          + ", ".join(f"{trained[s][1]:.3g}" for s in lengths) + " vs at init "
                          + ", ".join(f"{start[s][1]:.3g}" for s in lengths)
                          + f"; higher after training at {sum(trained[s][0] > start[s][0] for s in lengths)}"
                            f" of {len(lengths)} lengths")


# ----------------------------------------------------------------------------- statistics
# The experiment claims below decide with tests that fit each sweep's design
# (resharpen.experiments.ledger.stats): placements against the control `none` on the raw weights,
# paired by seed where the placements ran the same seeds, else Welch (seeds drawn per run);
# EMA/BEMA against the raw weights of the same run, paired; dropout by Spearman's rank
# correlation. The claims that read one sweep form one family of tests, Holm-adjusted together,
# each deciding at adjusted p < ALPHA; a test with fewer than stats.MIN_N runs per arm or a
# standard error that is not finite makes its claim INCONCLUSIVE, with the command that decides.
CONTROL = "none"
"""The control of "normalization resharpens": no norm at all. In one layer, ``pre`` with its
final norm is a normalized readout (claim sc.readout.pre), not an unnormalized model, so it is
reported as its own arm and never pooled with the control."""
RAW_MASS = "raw.ood_invalid_mass"
RAW_KL = "raw.ood_kl"
Tests = Callable[[list[dict]], list[tuple[str, object]]]
"""rows -> the (label, stats result) tests of one claim on a sweep's runs."""

_FAMILIES: dict[str, list[tuple[str, Tests]]] = {}
"""For each sweep, the claims that decide on its runs and how each computes its tests."""


def join_family(sweep: str, claim_id: str, tests: Tests) -> None:
    """Declare that ``claim_id`` decides on ``sweep`` with the tests ``tests(rows)``."""
    _FAMILIES.setdefault(sweep, []).append((claim_id, tests))


def family(sweep: str) -> tuple[dict[str, list], Path]:
    """Every test of every claim that reads ``sweep``, on the runs that learned the task in
    distribution (:func:`learned`), Holm-adjusted together (they share the sweep's runs; every
    planned test counts, one that cannot decide as p = 1), by claim id (stats.FamilyTest lists);
    and the folder read."""
    rows, root = _sweep_rows(sweep)
    rows = learned(rows)
    tests = stats.family([(claim_id, label, result) for claim_id, make in _FAMILIES[sweep]
                          for label, result in make(rows)])
    return {claim_id: tests.get(claim_id, []) for claim_id, _ in _FAMILIES[sweep]}, root


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _effect(result) -> float:
    return result.rho if hasattr(result, "rho") else result.mean_diff


def _decide_command(sweep: str, root: Path) -> str:
    toml = f"experiments/configs/set_complement/{sweep}.toml"
    from resharpen.experiments.training.config import folder_profile
    if folder_profile(root) == "quick":
        return f"run the full sweep (`resharpen sweep {toml} --workers 2`) to decide"
    return (f"more runs that learn the task in distribution decide (`resharpen sweep {toml} "
            f"--runs <more> --workers 2`, or longer training)")


def decide(claim_id: str, sweep: str, expected: str, extra: str = "") -> Outcome:
    """The outcome of ``claim_id`` from its tests in the family of ``sweep``
    (:func:`resharpen.experiments.ledger.stats.decision`): PASS when every one shows the effect
    at Holm-adjusted p < ALPHA, FAIL when one shows the opposite effect at that level, else
    INCONCLUSIVE with why and the command that would decide."""
    tests, root = family(sweep)
    rows, _ = _sweep_rows(sweep)
    mine = tests[claim_id]
    size = sum(len(t) for t in tests.values())
    kept = len(learned(rows))
    measured = (f"{kept} of {len(rows)} runs learned; "
                + "; ".join(f"{t.label} {_effect(t.result):+.4g} (n={t.result.n}, Holm p "
                            f"{t.adjusted_p:.2g})" for t in mine))
    detail = " | ".join([t.describe() for t in mine] + ([extra] if extra else [])
                        + [learned_note(rows),
                           f"family: {_count(size, 'test')} of {_count(len(tests), 'claim')} "
                           f"on {sweep} ({', '.join(sorted(tests))}), Holm at alpha {ALPHA} "
                           "in each direction",
                           describe_runs(root), str(root)])
    passed, unsure = stats.verdict(mine, ALPHA)
    if unsure and kept < stats.MIN_N:
        unsure = f"{learned_note(rows)}; {unsure}"
    return Outcome(measured, expected, passed=passed, detail=detail,
                   inconclusive=f"{unsure}; {_decide_command(sweep, root)}" if unsure else "")


def arm(rows: list[dict], norm: str, metric: str) -> dict:
    """``{seed: metric}`` of the runs of placement ``norm`` (``{run: metric}`` when a seed
    repeats within the placement, so that such runs are never paired by seed)."""
    runs = [r for r in rows if r["model.norm"] == norm]
    seeds = [r.get("train.seed") for r in runs]
    if None not in seeds and len(set(seeds)) == len(seeds):
        return {seed: r[metric] for seed, r in zip(seeds, runs)}
    return {r["run"]: r[metric] for r in runs}


# ----------------------------------------------------------------------------- Post-Norm
# Post-Norm against the control, one claim per sweep: (claim id, sweep, Post-Norm placements
# in its search space, setting and design as the statement names them).
POSTNORM_SWEEPS = (
    ("train.postnorm.ood_invalid_mass", "placements", ("post", "attn_out"),
     "at fixed hyper-parameters (placements sweep; seeds drawn per run: Welch)"),
    ("train.postnorm.balanced_grid", "placements_grid", ("post", "attn_out"),
     "at fixed hyper-parameters with 16 runs per placement (placements_grid, one batched "
     "ensemble per placement; seeds drawn per run: Welch)"),
    ("train.postnorm.random_search", "random_search", ("post", "attn_out"),
     "over the random search (all other factors varying; Welch)"),
    ("train.postnorm.random_search_v32", "random_search_v32", ("post", "attn_out"),
     "over the random search at v = 32 (all other factors varying; Welch)"),
    ("train.postnorm.long_runs", "long_runs", ("post",),
     "at 6x the sweeps' training budget (long_runs: 12000 steps, post against none; seeds "
     "drawn per run: Welch)"),
    ("train.postnorm.long_runs_v32", "long_runs_v32", ("post",),
     "at 6x the sweeps' training budget at v = 32 (long_runs_v32: 12000 steps, post against "
     "none; seeds drawn per run: Welch)"),
    ("train.postnorm.multi_layer", "placements_multi_layer", ("post", "attn_out"),
     "in the 2-layer transformer with GELU MLPs and learned positions (grid of placements x "
     "seeds 0, 1: paired by seed)"),
)


def postnorm_tests(arms: tuple[str, ...]) -> Tests:
    """One-sided tests (lower raw OOD invalid mass) of each Post-Norm placement against none."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        control = arm(rows, CONTROL, RAW_MASS)
        return [(f"{norm} - {CONTROL}", stats.compare(arm(rows, norm, RAW_MASS), control, "less"))
                for norm in arms]

    return tests


def postnorm_effect(claim_id: str, sweep: str) -> Outcome:
    """Whether every Post-Norm placement of ``sweep`` lowers the raw OOD invalid mass below
    none's; pre reported as its own arm (not part of the decision)."""
    rows = learned(_sweep_rows(sweep)[0])
    means = ", ".join(f"{norm} {np.mean(list(values.values())):.4f} (n={len(values)})"
                      for norm in ("none", "pre", "post", "attn_out")
                      if (values := arm(rows, norm, RAW_MASS)))
    pre = arm(rows, "pre", RAW_MASS)
    extra = f"raw OOD invalid mass by placement (learned runs): {means or 'no run'}"
    if pre:
        extra += (f"; pre - none (its own arm, not decided): "
                  f"{stats.compare(pre, arm(rows, CONTROL, RAW_MASS), 'two-sided').describe()}")
    return decide(claim_id, sweep, expected=f"< 0 at Holm-adjusted p < {ALPHA}", extra=extra)


def postnorm_claim(claim_id: str, sweep: str, arms: tuple[str, ...], setting: str) -> None:
    """Register the claim that Post-Norm lowers the OOD invalid mass in ``sweep``."""
    join_family(sweep, claim_id, postnorm_tests(arms))
    placements = " and ".join(arms)

    @claim(claim_id, source=f"{PAPER} v2 (Post-Norm can resharpen attention)",
           statement=f"{setting}, {placements} {'each give' if len(arms) > 1 else 'gives'} "
                     f"lower OOD invalid mass than no norm (raw weights of the runs that learned "
                     f"the task in distribution; pre, a normalized readout in one layer, "
                     f"reported as its own arm)",
           kind="experiment",
           tolerance=f"one-sided test per placement against none (paired t by seed when the "
                     f"placements share seeds, else Welch), Holm-adjusted p < {ALPHA} over "
                     f"the sweep's family: PASS when shown, FAIL when the opposite is shown; "
                     f"only runs with raw ID invalid mass <= {LEARNED_ID}; < 5 such runs per "
                     f"arm or neither direction shown is INCONCLUSIVE",
           cost="slow", expected_status="INCONCLUSIVE",
           expected_from="statement",
           origin="the statement's effect sign (invalid mass of the placement minus none's < 0) "
                  "at Holm-adjusted alpha 0.05; no theory value enters")  # every quick sweep: < 5 runs per arm
    def check_postnorm_lowers_ood_invalid_mass(profile: str) -> Outcome:
        return postnorm_effect(claim_id, sweep)


for _claim_id, _sweep, _arms, _setting in POSTNORM_SWEEPS:
    postnorm_claim(_claim_id, _sweep, _arms, _setting)


# ----------------------------------------------------------------------------- dropout
def dropout_tests(rows: list[dict]) -> list[tuple[str, object]]:
    return [("Spearman(attn_dropout, raw OOD KL)",
             stats.spearman([r["model.attn_dropout"] for r in rows], [r[RAW_KL] for r in rows],
                      alternative="less"))]


join_family("random_search", "train.dropout.ood_kl", dropout_tests)


@claim("train.dropout.ood_kl", source=f"{PAPER} v1 (dropout counters attention dispersion)",
       statement="over the random search, more attention dropout goes with lower OOD KL of the "
                 "raw weights (rank correlation over the runs that learned the task in "
                 "distribution)",
       kind="experiment",
       tolerance=f"Spearman rank correlation < 0, one-sided, Holm-adjusted p < {ALPHA} over "
                 f"the random search's family: PASS when shown, FAIL when rho > 0 is shown; "
                 f"only runs with raw ID invalid mass <= {LEARNED_ID}; < 5 such runs or "
                 "neither direction shown is INCONCLUSIVE",
       expected_status="INCONCLUSIVE", cost="slow",
       expected_from="statement",
       origin="the statement's sign (Spearman rho of dropout vs OOD KL < 0) at Holm-adjusted "
              "alpha 0.05")
def check_dropout_ood_kl(profile: str) -> Outcome:
    return decide("train.dropout.ood_kl", "random_search", expected=f"rho < 0 at Holm p < {ALPHA}")


# ----------------------------------------------------------------------------- EMA / BEMA
def averaging_tests(kind: str) -> Tests:
    """The paired test (within each run) of OOD KL(``kind`` weights) < OOD KL(raw weights)."""
    def tests(rows: list[dict]) -> list[tuple[str, object]]:
        return [(f"{kind} - raw", stats.compare({r["run"]: r[f"{kind}.ood_kl"] for r in rows},
                                          {r["run"]: r[RAW_KL] for r in rows}, "less"))]

    return tests


def averaging_effect(claim_id: str, kind: str, sweep: str) -> Outcome:
    """Whether ``kind`` (ema | bema) weights have lower OOD KL than the raw weights of the same
    runs of ``sweep``."""
    rows, _ = _sweep_rows(sweep)
    diff = np.array([r[f"{kind}.ood_kl"] - r[RAW_KL] for r in rows], dtype=float)
    better = np.mean(diff[np.isfinite(diff)] < 0) if np.isfinite(diff).any() else np.nan
    kept = np.array([r[f"{kind}.ood_kl"] - r[RAW_KL] for r in learned(rows)], dtype=float)
    return decide(claim_id, sweep, expected=f"< 0 at Holm-adjusted p < {ALPHA}",
                  extra=f"OOD KL({kind}) - OOD KL(raw): {kind} better in {better:.0%} of all "
                        f"{len(rows)} runs (mean {np.nanmean(diff) if diff.size else np.nan:+.3g}"
                        f"), in {int(np.sum(kept < 0))} of the {kept.size} learned runs "
                        "(reported: only the learned runs decide)")


# The sweeps the EMA/BEMA claims read, with the setting as their statements name it.
AVERAGING_SETTINGS = {
    "random_search": "",
    "placements": "at fixed hyper-parameters (placements sweep), ",
    "long_runs": "at 6x the sweeps' training budget (long_runs: 12000 steps, none and "
                 "post, EMA decay 0.99 and 0.999), ",
    "long_runs_v32": "at 6x the sweeps' training budget at v = 32, closest to p* "
                     "(long_runs_v32: 12000 steps, none and post), ",
}
AVERAGING_SOURCES = {"bema": f"{PAPER} v1 (BEMA improves length generalization)",
                     "ema": f"{PAPER} (EMA counters noisy gradients)"}
# Averaged against raw weights, one claim per sweep and kind: (claim id, weights, sweep, the
# claim's expected quick status). EMA and BEMA are decided by the same rule on the same runs:
# the quick sweeps' models stay near chance in distribution, so no run decides either.
AVERAGING_CLAIMS = (
    ("train.bema.ood_kl", "bema", "random_search", "INCONCLUSIVE"),
    ("train.ema.ood_kl", "ema", "random_search", "INCONCLUSIVE"),
    ("train.bema.ood_kl.fixed", "bema", "placements", "INCONCLUSIVE"),
    ("train.ema.ood_kl.fixed", "ema", "placements", "INCONCLUSIVE"),
    ("train.bema.ood_kl.long", "bema", "long_runs", "INCONCLUSIVE"),
    ("train.ema.ood_kl.long", "ema", "long_runs", "INCONCLUSIVE"),
    ("train.bema.ood_kl.long_v32", "bema", "long_runs_v32", "INCONCLUSIVE"),
    ("train.ema.ood_kl.long_v32", "ema", "long_runs_v32", "INCONCLUSIVE"),
)


def averaging_claim(claim_id: str, weights: str, sweep: str, expected_status: str) -> None:
    """Register the claim that ``weights`` (ema | bema) beat the raw weights in ``sweep``."""
    join_family(sweep, claim_id, averaging_tests(weights))

    @claim(claim_id, source=AVERAGING_SOURCES[weights],
           statement=f"{AVERAGING_SETTINGS[sweep]}{weights.upper()} weights have lower OOD KL than "
                     "the raw weights of the same run (paired within each run, every run of the "
                     "sweep that learned the task in distribution)",
           kind="experiment",
           tolerance=f"paired t on the per-run differences (Wilcoxon reported), one-sided, "
                     f"Holm-adjusted p < {ALPHA} over the sweep's family: PASS when shown, FAIL "
                     f"when the averaged weights are shown worse; only runs with raw ID invalid "
                     f"mass <= {LEARNED_ID}; < 5 such runs or neither direction shown is "
                     "INCONCLUSIVE",
           cost="slow", expected_status=expected_status,
           expected_from="statement",
           origin="the statement's effect sign (averaged weights' OOD KL minus the raw weights' "
                  "< 0) at Holm-adjusted alpha 0.05")
    def check_averaged_weights_lower_ood_kl(profile: str) -> Outcome:
        return averaging_effect(claim_id, weights, sweep)


for _claim_id, _weights, _sweep, _expected_status in AVERAGING_CLAIMS:
    averaging_claim(_claim_id, _weights, _sweep, expected_status=_expected_status)


# ----------------------------------------------------------------------------- dispersion
def dispersion_tests(rows: list[dict]) -> list[tuple[str, object]]:
    return [("a(none) - a(attn_out)", stats.compare(arm(rows, CONTROL, "margin_exponent"),
                                              arm(rows, "attn_out", "margin_exponent"),
                                              "greater"))]


join_family("placements", "train.dispersion.margin_exponent", dispersion_tests)


@claim("train.dispersion.margin_exponent", source=f"{PAPER}; docs/theory.md (dispersion, resharpening)",
       statement="at fixed hyper-parameters (placements sweep, BEMA weights, the sweep's one "
                 "weight set), learned margins decay faster with length without a norm than "
                 "with attn_out: fitted exponent a(none) > a(attn_out) (seeds drawn per run: "
                 "Welch; the runs that learned the task in distribution)",
       kind="experiment",
       tolerance=f"one-sided test of a(none) - a(attn_out) > 0 (Welch; paired by seed if the "
                 f"placements share seeds), Holm-adjusted p < {ALPHA} over the placements "
                 f"family: PASS when shown, FAIL when a(none) < a(attn_out) is shown; only runs "
                 f"with raw ID invalid mass <= {LEARNED_ID}; < 5 such runs per arm or neither "
                 "direction shown is INCONCLUSIVE",
       expected_status="INCONCLUSIVE", cost="slow",
       expected_from="statement",
       origin="the statement's sign (margin exponent of none minus attn_out > 0) at Holm-"
              "adjusted alpha 0.05")
def check_dispersion_margin_exponent(profile: str) -> Outcome:
    rows = learned(_sweep_rows("placements")[0])
    theory = float(np.nanmean([r["margin_exponent_attn_out_theory"] for r in rows] or [np.nan]))
    means = {norm: float(np.nanmean(list(arm(rows, norm, "margin_exponent").values()) or [np.nan]))
             for norm in (CONTROL, "attn_out")}
    return decide("train.dispersion.margin_exponent", "placements",
                  expected=f"> 0 at Holm-adjusted p < {ALPHA}",
                  extra=f"a(none) = {means[CONTROL]:.3f} (theory 1), a(attn_out) = "
                        f"{means['attn_out']:.3f} (theory {theory:.3f} on the fitted lengths)")


@claim("train.lengthgen.degrades", source=f"{PAPER} (length generalization with reduced precision)",
       statement="trained models beat the uninformative s/v invalid mass beyond L_train, with "
                 "precision degrading: OOD invalid mass > ID invalid mass",
       kind="experiment", tolerance="mean OOD invalid mass / mean OOD s/v < 1 and OOD > ID in "
                                    "every run", cost="slow",
       expected_from="statement",
       origin="the statement's orderings: OOD invalid mass below the uninformative s/v (ratio < "
              "1, s/v computed in the check) and OOD > ID in every run")
def check_lengthgen_degrades(profile: str) -> Outcome:
    import json

    rows, root = _sweep_rows()
    base = json.loads((root / "sweep.json").read_text())["identity"]["base"]["task"]
    v, length = base["vocab"], base["train_len"]
    chance = float(np.mean([s / v for s in range(length + 1, v)]))
    ratio = float(np.mean([r["ood_invalid_mass"] for r in rows])) / chance
    degrade = all(r["ood_invalid_mass"] > r["id_invalid_mass"] for r in rows)
    return Outcome(measured=round(ratio, 4), expected="< 1", passed=bool(ratio < 1 and degrade),
                   detail=f"OOD invalid mass / uninformative s/v = {ratio:.3f}; OOD > ID in "
                          f"{'every' if degrade else 'not every'} run; n={len(rows)}; "
                          f"{describe_runs(root)}; {root}")


def claim_data() -> dict[str, str]:
    """The sweep each experiment claim of this module decides on. Claims that name one sweep
    share its runs by design (a family, Holm-adjusted together); distinct names must be distinct
    data (tests/core/test_claim_data.py plans both profiles' runs and compares them)."""
    data = {claim_id: sweep for sweep, members in _FAMILIES.items() for claim_id, _ in members}
    data["train.lengthgen.degrades"] = "random_search"
    return data
