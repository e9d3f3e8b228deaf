"""Per-length report of a model trained to a fit, held against the theory's readout margins.

For one run (a run folder of ``resharpen train`` / ``resharpen sweep``) and one weight set, per
prefix length s = 1..v-1 (the exact evaluation stored in the run's ``per_length.json``):

- ``margin``   m_s, the mean over inputs of the smallest non-query margin
               min_{x in t, x != t_s} (mean valid logit - f_x)   (``metrics.complement_metrics``);
- ``s_margin`` s * m_s, constant in s under the none placement's law m_s = lambda / s
               (docs/theory.md: the tight construction has lambda = 2, the "2/s law");
- ``invalid_mass`` the exact mean invalid mass sum_{x in t} p(x);
- ``uniformity`` of the attention (``compare.balance``): max over inputs and positions of
               |s w_i - 1|, 0 for uniform attention, the balance of the tight construction;
- ``theory``   the placement's closed-form margin (``theory.set_complement.formulas.
               readout_margins``) with its parameters fitted to the run's own in-distribution
               margins (s = 2..L_train, least squares on log m_s), evaluated at every s:
                   none      m_s = lambda / s                         (one parameter, lambda)
                   attn_out  m_s = beta g sqrt(d v / (s (v - s)))     (one parameter, beta g)
                   post      m_s = beta g sqrt(d) (K/s) / |c(e_q + (K/s) 1_t)|   (K, beta g)
               with d = d_model; pre and peri have no fitted closed form here (None).
               Past L_train the curve is a prediction: nothing out of distribution is fitted.

The effective K = lambda / beta of the logit maps, read off the weights
(:func:`effective_K`): the lemma fit (``compare.fit_lemma``) of the *gain-folded* matrices
B' = W_E diag(g) W_U and D' = W_E W_V W_O diag(g) W_U, with g the gain of the norm that
reaches the unembedding (post: the residual norm; attn_out: its branch norm, on D' only; none:
g = 1). For post the logits are (B'[t_s] + sum_i w_i D'[t_i]) / rms(r) with r the residual, so
the common factor 1/rms(r) does not change lambda/beta: K = median(lambda) / median(beta) is
the theory's K (the construction's attention output (K/s) 1_t against the query's e_q). The
relative residual of that fit says how far the weights are from the lemma's family.
"""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import scipy.optimize
import torch

from resharpen.experiments.model import schemes
from resharpen.experiments.model.transformer import Transformer
from resharpen.experiments.tasks.set_complement import sample_inputs
from resharpen.experiments.set_complement.compare import (PATTERN, WEIGHT_SETS, balance, fit_lemma,
                                                          readout)
from resharpen.theory.set_complement.formulas import readout_margins

K_RANGE = (1e-3, 1e6)
"""The range of post's fitted K (at the upper end the margins are the K -> oo limit, attn_out's)."""
def fitted_readouts() -> tuple[str, ...]:
    """The placements whose closed-form margin is fitted: the registered schemes that read out
    like a hand construction with no final norm (``names(construction=True, final_norm=False)``:
    none, attn_out, post), whose margins are the theory's functions of lambda, beta g and K
    alone. pre's goes through the final norm's rescaled K' = K g sqrt(d) / |c(e_x)| and is not
    fitted here; peri has no construction."""
    return schemes.names(construction=True, final_norm=False)


@torch.no_grad()
def gain_folded_matrices(model: Transformer) -> tuple[torch.Tensor, torch.Tensor]:
    """(B', D') of the one-layer model with the output norm's gain folded into W_U (see the
    module docstring); the plain (B, D) for none: the maps of ``compare.readout``, which
    ``resharpen compare`` fits for every placement. ValueError for pre and peri here (their
    closed-form margins are not fitted: :func:`fitted_readouts`)."""
    placement = model.cfg.norm
    if placement not in fitted_readouts():
        raise ValueError(f"effective K is read off placements {', '.join(fitted_readouts())}; "
                         f"got {placement!r}")
    form = readout(model)
    return form.B, form.D


@torch.no_grad()
def effective_K(model: Transformer) -> dict:
    """Two readings of K off the weights (:mod:`resharpen.experiments.set_complement.effective_k`
    defines one K and says why these differ from it):

    - ``K``: median(lambda) / median(beta) of the lemma fit of the gain-folded logit maps
      (with the fit's relative residual and the medians);
    - ``K_residual``: median_x |W_E W_V W_O [x]| / median_x |W_E[x]|, the attention output of
      one token against the query's embedding in the residual stream, where the norm acts (in
      the construction (K/s) 1_t against e_q: a ratio K / sqrt(s) at uniform attention)."""
    B, D = gain_folded_matrices(model)
    fit = fit_lemma(B.numpy(), D.numpy())
    lam, beta = float(np.median(fit.lambdas)), float(np.median(fit.betas))
    attn = model.blocks[0].attn
    evo = (model.W_E @ attn.value_output(0)).double()  # c W_V W_O (attn_out_multiplier c)
    residual = float(evo.norm(dim=1).median() / model.W_E.double().norm(dim=1).median())
    return {"K": lam / beta if beta != 0 else math.inf, "lambda_median": lam,
            "beta_median": beta, "relative_residual": fit.relative_residual,
            "K_residual": residual}


def _fitted_construction(placement: str) -> str | None:
    """The theory's readout name of a placement of :func:`fitted_readouts` (None otherwise)."""
    return schemes.get(placement).construction if placement in fitted_readouts() else None


def theory_margins(placement: str, vocab: int, width: int, lengths: np.ndarray,
                   params: dict) -> np.ndarray:
    """The placement's closed-form non-query margin at ``lengths`` for fitted ``params``."""
    s = np.asarray(lengths, dtype=np.float64)
    readout = _fitted_construction(placement)
    if readout == "none":
        return readout_margins("none", vocab, s, params["lambda"], 1.0, 1.0, width)[0]
    if readout == "attn_out":
        return readout_margins("attn_out", vocab, s, 1.0, params["beta_g"], 1.0, width)[0]
    if readout == "post":
        return readout_margins("post", vocab, s, params["K"] * params["beta_g"],
                               params["beta_g"], 1.0, width)[0]
    raise ValueError(f"no fitted closed form for placement {placement!r}; allowed: "
                     f"{', '.join(fitted_readouts())}")


def fit_theory(placement: str, vocab: int, width: int, lengths, margins) -> dict | None:
    """Least-squares fit (on log margins) of the placement's closed form to ``margins`` at
    ``lengths`` (the in-distribution lengths 2..L_train); None for pre/peri or when a margin
    is not positive (a log fit needs a model that separates)."""
    s, m = np.asarray(lengths, dtype=np.float64), np.asarray(margins, dtype=np.float64)
    if placement not in fitted_readouts() or not (np.isfinite(m).all() and (m > 0).all()):
        return None
    readout = _fitted_construction(placement)
    if readout == "none":  # log m = log lambda - log s: the mean of log(s m)
        return {"lambda": float(np.exp(np.mean(np.log(s * m))))}
    if readout == "attn_out":
        shape = theory_margins("attn_out", vocab, width, s, {"beta_g": 1.0})
        return {"beta_g": float(np.exp(np.mean(np.log(m / shape))))}

    def residual(theta: np.ndarray) -> np.ndarray:
        params = {"K": float(np.exp(theta[0])), "beta_g": float(np.exp(theta[1]))}
        return np.log(theory_margins("post", vocab, width, s, params)) - np.log(m)

    bounds = ([math.log(K_RANGE[0]), -math.inf], [math.log(K_RANGE[1]), math.inf])
    best = min((scipy.optimize.least_squares(residual, [np.log(k0), 0.0], bounds=bounds)
                for k0 in (1.0, 10.0, 100.0)), key=lambda r: r.cost)
    return {"K": float(np.exp(best.x[0])), "beta_g": float(np.exp(best.x[1]))}


@torch.no_grad()
def attention_uniformity(model: Transformer, count: int = 128, seed: int = 0) -> list[float]:
    """Per length s = 1..v-1: max over ``count`` inputs of max_i |s w_i - 1| (0 at s = 1)."""
    model = copy.deepcopy(model).to(torch.float64).eval()
    vocab = model.cfg.vocab
    tokens = sample_inputs(vocab, vocab - 1, count, seed)
    with model.capture(PATTERN) as cache:
        model(tokens)
    uniformity, _ = balance(cache[PATTERN][:, 0], tokens, None)
    return [float(u) for u in uniformity]


def run_report(folder: str | Path, weights: str = "raw") -> dict:
    """The per-length report of one run folder's ``weights`` (raw, ema or bema); see the
    module docstring. JSON-ready."""
    from resharpen.experiments.training.runs import load_run, measured

    if weights not in WEIGHT_SETS:
        raise ValueError(f"weights {weights!r} is not one of {', '.join(WEIGHT_SETS)}")
    run = load_run(folder)
    config = run.config
    vocab, train_len = config["task"]["vocab"], config["task"]["train_len"] or (
        config["task"]["vocab"] // 4)
    placement, width = config["model"]["norm"], config["model"]["d_model"]

    def measure() -> dict:  # what the report reads off the weights and per-length records
        model = run.model(weights)
        return {"per_length": [{key: r[key] for key in ("length", "margin_nonquery_min",
                                                         "invalid_mass")}
                               for r in run.per_length[weights]],
                "uniformity": attention_uniformity(model),
                "effective_K": effective_K(model) if placement in fitted_readouts() else None}

    measurement = measured(folder, f"report_{weights}", measure)
    rows = measurement["per_length"]
    lengths = np.array([r["length"] for r in rows])
    margin = np.array([np.nan if r["margin_nonquery_min"] is None else r["margin_nonquery_min"]
                       for r in rows], dtype=np.float64)
    in_dist = (lengths >= 2) & (lengths <= train_len)
    params = fit_theory(placement, vocab, width, lengths[in_dist], margin[in_dist])
    theory = (theory_margins(placement, vocab, width, lengths, params) if params
              else np.full(len(lengths), np.nan))
    uniformity, K = measurement["uniformity"], measurement["effective_K"]
    past = (lengths > train_len) & np.isfinite(theory) & (theory > 0)
    deviation = (float(np.max(np.abs(margin[past] / theory[past] - 1.0)))
                 if params and past.any() else None)
    summary = run.summary
    return {
        "run": str(folder), "weights": weights, "placement": placement, "vocab": vocab,
        "train_len": train_len, "d_model": width, "seed": config["train"]["seed"],
        "attn_out_scale": config["model"].get("attn_out_scale", 1.0),
        "attn_out_multiplier": config["model"].get("attn_out_multiplier", 1.0),
        "fit_reached": summary.get("fit_reached"), "fit_step": summary.get("fit_step"),
        "id_invalid_mass": summary["by_weights"][weights]["id_invalid_mass"],
        "ood_invalid_mass": summary["by_weights"][weights]["ood_invalid_mass"],
        "theory_params": params, "effective_K": K,
        "ood_margin_deviation_max": deviation,
        "per_length": [
            {"length": int(s), "margin": None if not np.isfinite(m) else float(m),
             "s_margin": None if not np.isfinite(m) else float(s * m),
             "theory_margin": None if s < 2 or not np.isfinite(t) else float(t),
             "invalid_mass": r["invalid_mass"], "uniformity": u if s > 1 else None}
            for s, m, t, r, u in zip(lengths, margin, theory, rows, uniformity)],
    }


def sweep_reports(root: str | Path, weights: str = "raw") -> list[dict]:
    """:func:`run_report` of every finished run of a sweep folder (``runs/<name>``)."""
    from resharpen.experiments.common.stored import stored_exists

    runs = sorted(p for p in (Path(root) / "runs").iterdir() if stored_exists(p / "summary.json"))
    return [run_report(p, weights) for p in runs]


def _cell(values) -> str:
    a = np.asarray([x for x in values if x is not None], dtype=float)
    a = a[np.isfinite(a)]
    if not a.size:
        return "—"
    return f"{a.mean():.3g} ± {a.std(ddof=1) if a.size > 1 else 0.0:.2g}"


def _margin_exponent(report: dict) -> float:
    """a of m_s ~ s^-a, least squares of log m_s on log s over s = 2..L_train."""
    rows = [r for r in report["per_length"] if 2 <= r["length"] <= report["train_len"]
            and r["margin"] is not None and r["margin"] > 0]
    if len(rows) < 2:
        return math.nan
    s, m = zip(*((r["length"], r["margin"]) for r in rows))
    return float(-np.polyfit(np.log(s), np.log(m), 1)[0])


def _s_margin_spread(report: dict) -> float:
    values = [r["s_margin"] for r in report["per_length"]
              if 2 <= r["length"] <= report["train_len"] and r["s_margin"]]
    return max(values) / min(values) if values and min(values) > 0 else math.nan


def fit_table(reports: list[dict]) -> str:
    """Markdown: one row per (placement, attn_out_scale, attn_out_multiplier) of a fit sweep's
    reports (one weight
    set): runs that reached the fit, fit step (median, range), ID / OOD invalid mass, the margin
    exponent a (m_s ~ s^-a on s = 2..L_train), max/min of s m_s there, the fitted closed form's
    parameters and K read off the weights (mean ± sd over the runs)."""
    groups: dict[tuple, list[dict]] = {}
    for r in reports:
        groups.setdefault((r["placement"], r["attn_out_scale"],
                           r.get("attn_out_multiplier", 1.0)), []).append(r)
    head = ("| placement | reached | fit step (median, range) | ID inv. mass | OOD inv. mass | "
            "margin exponent a | s·m_s max/min | fitted closed form | K (residual) | "
            "K (logit maps) |")
    lines = [head, "|" + "---|" * 10]
    for (placement, scale, multiplier), reps in groups.items():
        steps = sorted(r["fit_step"] for r in reps if r["fit_step"] is not None)
        step = (f"{int(np.median(steps))} ({steps[0]}-{steps[-1]})" if steps else "—")
        params = [r["theory_params"] for r in reps if r["theory_params"]]
        fitted = ", ".join(f"{key} {_cell(p[key] for p in params)}"
                           for key in (params[0] if params else {}) if key != "residual")
        Ks = [r["effective_K"] for r in reps if r["effective_K"]]
        name = placement + (f" (attn_out_scale {scale:g})" if scale != 1.0 else "") + (
            f" (attn_out_multiplier {multiplier:g})" if multiplier != 1.0 else "")
        lines.append(
            f"| {name} | {sum(bool(r['fit_reached']) for r in reps)}/{len(reps)} | {step} | "
            f"{_cell(r['id_invalid_mass'] for r in reps)} | "
            f"{_cell(r['ood_invalid_mass'] for r in reps)} | "
            f"{_cell(map(_margin_exponent, reps))} | {_cell(map(_s_margin_spread, reps))} | "
            f"{fitted or '—'} | {_cell(k.get('K_residual') for k in Ks)} | "
            f"{_cell(k.get('K') for k in Ks)} |")
    return "\n".join(lines)


def ladder_table(root: str | Path) -> str:
    """Markdown: the OOD invalid mass of the raw weights against the fit, for a sweep whose runs
    record the fit ladder (``summary.ladder``, ``summary.converged``;
    :func:`ladder_rows`): one row per rung, from
    the loosest to convergence, one column per placement, each cell the mean (sample sd) over the
    runs that reached the rung, with n where it is not every run of that placement; "not
    reached" where none did (at convergence: "none converged"). Columns in the order of
    ``train_config.NORM_PLACEMENTS``."""
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.training.schema import NORM_PLACEMENTS

    rows = ladder_rows(root)
    counts: dict[str, int] = {}
    for run in load_runs(root):
        placement = run["config"]["model"]["norm"]
        counts[placement] = counts.get(placement, 0) + 1
    placements = [p for p in NORM_PLACEMENTS if p in counts] + sorted(
        p for p in counts if p not in NORM_PLACEMENTS)
    lines = ["| rung (ID invalid mass) | " + " | ".join(placements) + " |",
             "|" + "---|" * (len(placements) + 1)]
    for rung in rung_order({r["rung"] for r in rows}):
        cells = []
        for placement in placements:
            values = np.array([r["ood"] for r in rows
                               if r["placement"] == placement and r["rung"] == rung])
            if not values.size:
                cells.append("none converged" if rung == CONVERGED else "not reached")
                continue
            cell = f"{values.mean():.3f}" + (f" ({values.std(ddof=1):.3f})"
                                              if values.size > 1 else "")
            cells.append(cell + (f", n = {values.size}" if values.size != counts[placement]
                                 else ""))
        label = "converged" if rung == CONVERGED else f"{rung:g}"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


CONVERGED = "converged"
"""The last rung of a run trained on past its fit (``train.converge_window``): its
``summary.converged`` record when the run converged (ID invalid mass flat over the window)."""


def ladder_rows(root: Path) -> list[dict]:
    """One row per (run, rung) of a sweep: placement, seed, the rung (an in-distribution
    invalid-mass level, ``summary.ladder``), the ID and OOD invalid mass of the raw weights at
    the first evaluation that reached it; and, for a run that converged, one more row with rung
    :data:`CONVERGED` (``summary.converged``; a run that met the cap first has none)."""
    from resharpen.experiments.training.sweep import load_runs

    out = []
    for run in load_runs(root):
        summary = run["summary"]
        key = {"placement": run["config"]["model"]["norm"],
               "seed": run["config"]["train"]["seed"]}
        for rung in summary.get("ladder") or []:
            out.append({**key, "rung": rung["rung"], "id": rung["id_invalid_mass"],
                        "ood": rung["ood_invalid_mass"]})
        done = summary.get("converged")
        if done and done["converged"]:
            out.append({**key, "rung": CONVERGED, "id": done["id_invalid_mass"],
                        "ood": done["ood_invalid_mass"], "step": done["step"]})
    return out


def at_own_fit(history: list[dict], level: float, weights: str) -> tuple[float, float]:
    """(ID, OOD invalid mass) of ``weights`` at the first evaluation of a run's history (the rows
    of ``metrics.jsonl``) where that weight set's own ID invalid mass is <= ``level``; (NaN, NaN)
    when no evaluation reaches it. Two weight sets read this way are compared at a matched
    in-distribution fit, as the fit ladder reads the raw weights (:func:`ladder_rows`)."""
    for row in history:
        mine = row.get(weights)
        if mine and mine["id_invalid_mass"] <= level:
            return mine["id_invalid_mass"], mine["ood_invalid_mass"]
    return math.nan, math.nan


def reached_rungs(rows: list[dict]) -> dict:
    """{rung: {placement: the seeds whose run reached it}} of :func:`ladder_rows`' rows."""
    out: dict = {}
    for r in rows:
        out.setdefault(r["rung"], {}).setdefault(r["placement"], set()).add(r["seed"])
    return out


def rung_order(rungs) -> list:
    """The rungs of :func:`ladder_rows` in training order: the fit levels from the loosest
    down, then :data:`CONVERGED`."""
    rungs = set(rungs)
    levels = sorted((r for r in rungs if r != CONVERGED), reverse=True)
    return levels + ([CONVERGED] if CONVERGED in rungs else [])


def rung_label(rung) -> str:
    return rung if rung == CONVERGED else f"{rung:g}"
