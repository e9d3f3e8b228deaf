"""Post-Norm's effective K read off the weights, and its closed-form margins.

**The theory's K** (docs/theory.md, section 8). In the tight construction E = Q (v x (v-1),
orthonormal columns spanning 1-perp), M = W_V W_O = K I and U = -beta Q^T, so with uniform
attention the residual of input t (query q, length s) is

    r(t) = E[q] + (1/s) sum_i (E M)[t_i] = Q^T z,   z = e_q + (K/s) 1_[t],

N(r) = g sqrt(d) r / |r| with |r| = |Q^T z| = |c(z)| (c: centring over the v tokens), and the
logits are -beta g sqrt(d) z / |c(z)| (mod 1): non-query margin

    m_s = beta g sqrt(d) (K/s) / |c(e_q + (K/s) 1_[t])| = lambda g sqrt(d) / (s |c(z)|).

K enters three times: the size of the attention output against the embedding in the residual
(the K^2 term of |c(z)|^2 = (1 - 1/v) + 2K (1/s - 1/v) + K^2 (1/s - 1/v) + ...), their overlap
(the 2K cross term) and the logit ratio lambda/beta. In the construction the three are one
number; on trained weights they part, so one of them has to be *the* K.

**The definition.** K is the size of the attention output against the embedding in the residual
stream, where the norm acts: with c the centring over tokens (the token-identity part; the
construction's embedding has mean 0), and, under LayerNorm, over the d coordinates too,

    K = |c(E M)|_F / |c(E)|_F,     e = |c(E)|_F / sqrt(v - 1),

where M is the value-output map the residual sees: W_V W_O times the model's fixed
``attn_out_multiplier`` (``Attention.value_output``; 1 by default), the knob that sets K
from outside training.

e the embedding scale (1 for E = Q). It is the K of post's limit statement (post -> attn_out as
K -> oo: the residual's norm is the attention output's) and needs no fit. The logit scales are
read off the lemma fit (``compare.fit_lemma``) of the gain-folded logit maps B' = E diag(g) W_U,
D' = E M diag(g) W_U (``compare.readout``; post's residual gain g folded into W_U):
beta g = median(beta'_x) / e and lambda g = median(lambda'_x) / e, in the construction's units.
The closed form read off the weights (:func:`closed_form_margins`; nothing fitted to margins):

    m_s = lambda g sqrt(d) / (s |c(e_q + (K/s) 1_[t])|).

**The other readings and why they differ** (:func:`readings`, on the same weights):

- ``K_cross`` = <c(E) M, c(E)>_F / |c(E)|_F^2, the least-squares scalar of c(E) M ~ K c(E) (the
  construction's M = K I). It is K times the cosine ``alignment`` between the attention output
  and the embedding; trained models put the attention output nearly orthogonal to the
  embedding (alignment << 1), so K_cross << K. ``K_logit_parallel``, the lemma fit of D' with
  the orthogonal part of c(E) M removed, recovers K_cross.
- ``K_logit`` = median(lambda') / median(beta') (lambda/beta of the logit maps) = K times
  ``readout_gain`` = (lambda' / |c(E M)|) / (beta' / |c(E)|): W_U reads the attention output
  more (or less) strongly per unit of residual norm than the embedding. 1 in the construction;
  the theory's identity lambda = K beta holds exactly when it is 1.
- ``K_norm_ratio`` = median_x |(E M)[x]| / median_x |E[x]| (the older residual-norm reading):
  K without the centring (the constant parts mean(E) and mean(E) M, ``constant_ratio``) and
  with medians for the Frobenius ratio.
- the margin fit (``fit_report.fit_theory``) fits (K, beta g) to the in-distribution margins
  and absorbs every broken assumption (attention balance, the query share) into K.

**Assumptions of the closed form**, measured per length by :func:`margin_diagnosis`: uniform
attention (max_i |s w_i - 1|; the query's share s w_s, 1 in the theory), the lemma form of
(B', D') (``relative_residual``), equal lambdas (mean vs min non-query margin), and the
residual norm |r| = e |c(z)| (an isotropic embedding, no constant part, the cross term): the
measured sqrt(mean |r|^2) against e |c(z)|; and ``numerator_prediction`` lambda' sqrt(d) /
(s |r|) with the *measured* |r| isolates the numerator (lemma form, uniform attention).
"""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.model.transformer import Transformer
from resharpen.experiments.tasks.set_complement import sample_inputs
from resharpen.experiments.set_complement.compare import PATTERN, fit_lemma, readout
from resharpen.experiments.set_complement.fit_report import theory_margins
from resharpen.experiments.set_complement.metrics import complement_metrics


def _parts(model: Transformer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mean embedding mu, centred embedding c(E), M = W_V W_O) of a one-layer one-head model,
    float64; under LayerNorm c also centres the d coordinates (what the norm sees)."""
    attn = model.blocks[0].attn
    E = model.W_E.detach().double()
    M = attn.value_output(0).detach().double()  # c W_V W_O, c the fixed attn_out_multiplier
    mu = E.mean(0)
    Ec = E - mu
    if model.blocks[0].attn_norm_out.kind == "layer":
        Ec = Ec - Ec.mean(1, keepdim=True)
        M = M - M.mean(1, keepdim=True)
    return mu, Ec, M


def _check_post(model: Transformer) -> None:
    cfg = model.cfg
    if not (cfg.norm == "post" and cfg.n_layers == 1 and cfg.n_heads == 1):
        raise ValueError(f"the effective K is read off one-layer, one-head post models; got "
                         f"norm={cfg.norm!r}, {cfg.n_layers} layers, {cfg.n_heads} heads")


@torch.no_grad()
def post_K(model: Transformer) -> dict:
    """The module's one definition, off the weights of a post model: {K, e, beta_g, lambda_g,
    gain_rms} (module docstring). K and e need no fit; beta g and lambda g need the lemma fit of
    (B', D') (one v x v least-squares problem: cheap enough for every evaluation step)."""
    _check_post(model)
    _, Ec, M = _parts(model)
    K = float((Ec @ M).norm() / Ec.norm())
    e = float(Ec.norm() / math.sqrt(model.cfg.vocab - 1))
    form = readout(model)
    fit = fit_lemma(form.B.numpy(), form.D.numpy())
    gain = model.blocks[0].attn_norm_out.gain
    g = 1.0 if gain is None else float(gain.detach().double().pow(2).mean().sqrt())
    return {"K": K, "e": e, "beta_g": float(np.median(fit.betas)) / e,
            "lambda_g": float(np.median(fit.lambdas)) / e, "gain_rms": g}


@torch.no_grad()
def readings(model: Transformer) -> dict:
    """:func:`post_K` and the other readings of K on the same weights (module docstring), with
    the quantities that say why they differ; JSON-ready."""
    out = post_K(model)
    mu, Ec, M = _parts(model)
    K, e, v = out["K"], out["e"], model.cfg.vocab
    EcM = Ec @ M
    K_cross = float((EcM * Ec).sum() / (Ec * Ec).sum())
    P = EcM - K_cross * Ec  # the attention output's part orthogonal (Frobenius) to c(E)
    form = readout(model)
    B = form.B.numpy()
    fit = fit_lemma(B, form.D.numpy())
    lam, beta = float(np.median(fit.lambdas)), float(np.median(fit.betas))
    norm = model.blocks[0].attn_norm_out
    d = model.cfg.d_model
    g = (torch.ones(d, dtype=torch.float64) if norm.gain is None else norm.gain.detach().double())
    centre = torch.eye(d, dtype=torch.float64) - (1.0 / d if norm.kind == "layer" else 0.0)
    U = model.W_U.detach().double()
    fit_par = fit_lemma(B, ((form.V - P) @ (centre * g) @ U).numpy())  # D' without P
    E = model.W_E.detach().double()
    V = E @ model.blocks[0].attn.value_output(0).detach().double()
    K_logit = lam / beta if beta else math.inf
    out.update({
        "K_cross": K_cross, "alignment": K_cross / K if K else math.nan,
        "K_logit_parallel": float(np.median(fit_par.lambdas) / np.median(fit_par.betas)),
        "K_logit": K_logit, "readout_gain": K_logit / K if K else math.nan,
        "lambda_prime": lam, "beta_prime": beta, "relative_residual": fit.relative_residual,
        "K_norm_ratio": float(V.norm(dim=1).median() / E.norm(dim=1).median()),
        "constant_ratio": float((mu + mu @ M).norm() / (e * math.sqrt((v - 1) / v))),
        "vocab": v, "d_model": d})
    return out


def residual_norm(vocab: int, lengths, K: float) -> np.ndarray:
    """|c(e_q + (K/s) 1_[t])| at each s: z is 1 + K/s on the query, K/s on the s - 1 other input
    tokens and 0 elsewhere, so |c(z)|^2 = |z|^2 - (sum z)^2 / v = (1 + K/s)^2 + (s-1)(K/s)^2
    - (1 + K)^2 / v."""
    s = np.asarray(lengths, dtype=np.float64)
    return np.sqrt((1 + K / s) ** 2 + (s - 1) * (K / s) ** 2 - (1 + K) ** 2 / vocab)


def closed_form_margins(params: dict, lengths, strict: bool = False) -> np.ndarray:
    """The closed form m_s = lambda g sqrt(d) / (s |c(e_q + (K/s) 1_[t])|) at ``lengths`` with
    K and lambda g read off the weights (:func:`readings`): ``formulas.readout_margins``'s post
    margin (through ``fit_report.theory_margins``, width d_model) at that K and beta g =
    lambda g / K. ``strict``: the one-K form, lambda g = K beta g (beta g read off B')."""
    lam_g = params["K"] * params["beta_g"] if strict else params["lambda_g"]
    return theory_margins("post", params["vocab"], params["d_model"], np.asarray(lengths),
                          {"K": params["K"], "beta_g": lam_g / params["K"]})


@torch.no_grad()
def margin_diagnosis(model: Transformer, count: int = 128, seed: int = 0) -> list[dict]:
    """Per length s = 2..v-1 on ``count`` random inputs (float64): the measured non-query margins
    (mean of the per-input minimum, and mean of all), the closed form (:func:`closed_form_margins`),
    the measured residual norm sqrt(mean |r|^2) against the theory's e |c(z)|, the "numerator"
    prediction lambda' sqrt(d) / (s |r|) with the *measured* |r| (lemma form and uniform attention
    only), and the attention: max_i |s w_i - 1| and the mean query share s w_s."""
    params = readings(model)
    model = copy.deepcopy(model).to(torch.float64).eval()
    v, d = model.cfg.vocab, model.cfg.d_model
    tokens = sample_inputs(v, v - 1, count, seed)
    with model.capture(PATTERN, "blocks.0.hook_attn_norm_out_input") as cache:
        logits = model(tokens)
    w = cache[PATTERN][:, 0]  # (N, S, S)
    resid = cache["blocks.0.hook_attn_norm_out_input"]  # (N, S, d)
    if model.blocks[0].attn_norm_out.kind == "layer":
        resid = resid - resid.mean(-1, keepdim=True)
    met = complement_metrics(logits, tokens, v)
    S = tokens.shape[1]
    lengths = np.arange(2, S + 1)
    theory = closed_form_margins(params, lengths)
    strict = closed_form_margins(params, lengths, strict=True)
    rows = []
    for s, th, st in zip(lengths, theory, strict):
        i = s - 1
        ws = w[:, i, :s]
        logit = logits[:, i]
        seen = tokens[:, :s - 1]  # the non-query input tokens
        valid = torch.ones_like(logit, dtype=torch.bool).scatter(1, tokens[:, :s], False)
        fbar = (logit * valid).sum(1) / valid.sum(1)
        nq = fbar[:, None] - logit.gather(1, seen)
        rnorm = float(resid[:, i].pow(2).sum(-1).mean().sqrt())
        rows.append({
            "length": int(s),
            "margin_min": float(met["margin_nonquery_min"][:, i].mean()),
            "margin_mean": float(nq.mean()),
            "theory": float(th), "theory_strict": float(st),
            "residual_norm": rnorm,
            "residual_norm_theory": params["e"] * float(residual_norm(v, s, params["K"])),
            "numerator_prediction": float(params["lambda_prime"] * math.sqrt(d) / (s * rnorm)),
            "uniformity": float((s * ws - 1).abs().amax()),
            "query_share": float((s * ws[:, -1]).mean())})
    return rows


def deviation(rows: list[dict], train_len: int, key: str = "margin_min") -> float:
    """max over s > L_train of |measured / theory - 1| of :func:`margin_diagnosis` rows."""
    past = [r for r in rows if r["length"] > train_len]
    return max(abs(r[key] / r["theory"] - 1.0) for r in past)


def closed_form_row(report: dict, count: int = 64) -> dict:
    """One post run (a ``fit_report.run_report`` of raw weights) held against the closed form
    read off its weights: :func:`readings`, the deviation max_{s > L_train} |m_s / m_s^theory - 1|
    of the run's stored margins (mean over inputs of the smallest non-query margin, exact
    evaluation) from the closed form and from the strict one-K form, their mean signed
    deviation, and the assumptions past L_train from :func:`margin_diagnosis` on ``count``
    inputs per length (attention uniformity, query share, measured |r| / e |c(z)|, the numerator
    alone, min / mean non-query margin) and the margin-fitted K of the report."""
    from resharpen.experiments.training.runs import load_run, measured

    folder = report["run"]
    params = run_readings(folder)
    diag = measured(folder, f"margin_diagnosis_raw_{count}",
                    lambda: margin_diagnosis(load_run(folder).model("raw"), count=count))
    diag = [r for r in diag if r["length"] > report["train_len"]]
    rows = [r for r in report["per_length"] if r["margin"] is not None]
    s = np.array([r["length"] for r in rows], dtype=np.float64)
    m = np.array([r["margin"] for r in rows], dtype=np.float64)
    past = s > report["train_len"]
    theory = closed_form_margins(params, s[past])
    strict = closed_form_margins(params, s[past], strict=True)
    return {**params, "seed": report["seed"], "vocab": report["vocab"],
            "attn_out_scale": report["attn_out_scale"],
            "attn_out_multiplier": report.get("attn_out_multiplier", 1.0),
            "deviation": float(np.max(np.abs(m[past] / theory - 1.0))),
            "signed": float(np.mean(m[past] / theory - 1.0)),
            "deviation_strict": float(np.max(np.abs(m[past] / strict - 1.0))),
            "uniformity": max(r["uniformity"] for r in diag),
            "query_share": float(np.mean([r["query_share"] for r in diag])),
            "norm_ratio": [r["residual_norm"] / r["residual_norm_theory"] for r in diag],
            "numerator": max(abs(r["numerator_prediction"] / r["margin_min"] - 1) for r in diag),
            "min_vs_mean": float(np.mean([r["margin_min"] / r["margin_mean"] for r in diag])),
            "fitted_K": (report["theory_params"] or {}).get("K", math.nan)}


def run_readings(folder: str | Path) -> dict:
    """:func:`readings` of a run folder's raw weights, kept with the run
    (:func:`resharpen.experiments.training.runs.measured`)."""
    from resharpen.experiments.training.runs import load_run, measured

    return measured(folder, "readings_raw", lambda: readings(load_run(folder).model("raw")))


def readings_table(rows: list[dict]) -> str:
    """Markdown: one line per (attn_out_multiplier, attn_out_scale) of :func:`closed_form_row`
    rows (mean ± sd)."""
    def cell(key: str) -> str:
        a = np.array([r[key] for r in mine], dtype=np.float64)
        return f"{a.mean():.3g} ± {a.std(ddof=1) if a.size > 1 else 0.0:.2g}"

    lines = ["| multiplier | init scale | n | K | K_cross (alignment) | K_logit (readout gain) | old "
             "residual-norm K | margin-fitted K | deviation: closed form | deviation: one-K "
             "form | max abs(s w_i - 1) | query share s w_s | measured abs(r) / e abs(c(z)) | "
             "min / mean margin |", "|" + "---|" * 14]
    for c, scale in sorted({(r["attn_out_multiplier"], r["attn_out_scale"]) for r in rows}):
        mine = [r for r in rows if (r["attn_out_multiplier"], r["attn_out_scale"]) == (c, scale)]
        ratio = [x for r in mine for x in r["norm_ratio"]]
        lines.append(
            f"| {c:g} | {scale:g} | {len(mine)} | {cell('K')} | {cell('K_cross')} ({cell('alignment')}) | "
            f"{cell('K_logit')} ({cell('readout_gain')}) | {cell('K_norm_ratio')} | "
            f"{cell('fitted_K')} | {cell('deviation')} | {cell('deviation_strict')} | "
            f"{cell('uniformity')} | {cell('query_share')} | {min(ratio):.2f}-{max(ratio):.2f} | "
            f"{cell('min_vs_mean')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m resharpen.experiments.set_complement.effective_k SWEEP_FOLDER``: the readings
    and the closed-form deviation of every post run of a finished sweep that reached its fit,
    one table line per (attn_out_multiplier, attn_out_scale) (:func:`readings_table`)."""
    import argparse

    from resharpen.experiments.set_complement.fit_report import sweep_reports

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("sweep", help="a finished sweep folder (out/sweeps/<name>)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    reports = [r for r in sweep_reports(args.sweep, "raw") if r["placement"] == "post"
               and r["fit_reached"]]
    print(readings_table([closed_form_row(r) for r in reports]))


if __name__ == "__main__":
    main()
