"""Training on the Set Complement Task as a language, with raw, EMA and BEMA weights side by side.

Data: each training sequence is a uniformly random ordering of L_train + 1 distinct tokens of
V = {0..v-1}; every position s = 1..L_train is a next-token example. What it is scored against
is ``train.target`` (:mod:`resharpen.experiments.training.targets`, with p*(t_1..t_s) uniform on the
v - s unseen tokens, :func:`next_token_targets`):

    sampled (default)  the token that actually comes next, a *sample* from p*: the label noise,
                       trace 1 - 1/(v-s) per position, is the point; with
                       ``train.labels_per_position = k`` > 1, the mean cross-entropy over that
                       token and k - 1 more i.i.d. draws from p* (label noise / k)
    soft               H(p*, p), the exact expectation of the sampled loss (no label noise)

Loss: the mean over all positions. Training itself is the core's
(:mod:`resharpen.experiments.training.loop`: AdamW, warm-up and decay, clipping, dropout from the
model config, raw / EMA / BEMA weights on one trajectory).

Stopping rule (``fit.until_id_invalid_mass`` = m > 0, ``train.steps`` the cap; needs
``train.eval_every`` > 0): at every evaluation step the raw weights' in-distribution invalid mass
is measured exactly, on the run's evaluation inputs (``eval.per_length`` per length, seed
``eval.seed``): the MEAN over the lengths s = 1..L_train of the mean invalid mass p(t) of the
inputs of length s, the final summary's ``by_weights.raw.id_invalid_mass`` up to float64
rounding (:func:`fit_measure`, which evaluates those lengths alone; the OOD lengths are
evaluated only at the steps whose records need them: a new rung, convergence, the cap). Each history row holds it as ``fit_id_invalid_mass``; the run ends at the
first step where it is <= m. The summary then records ``fit_target``, ``fit_reached``,
``fit_step`` (the step that reached it, or null) and ``steps_trained``, and every weight set is
evaluated at that step: runs are compared at their own fit. The learning-rate schedule spans
the cap, so a run that stops early stops before its decay has ended. On its way the run records
the fit ladder (``summary.ladder``, :func:`ladder_rungs`): at the first evaluation reaching each
rung 1e-2, 3e-3, 1e-3, 3e-4, 1e-4 above its target (and the target), the OOD invalid mass and the
per-length invalid mass and margins, so OOD behaviour can be read against the fit.

Convergence (``train.converge_window`` = W > 0 steps, ``train.converge_tolerance`` = tau;
OOD "at convergence, ID mass flat over 1000 steps"): the run does not end at its
fit but trains on, with ``train.steps`` still the cap, until the first evaluation step t with
t - W >= fit_step whose window is flat (:func:`converged_at`): with m_j the stopping rule's ID
invalid mass at the evaluation steps t_j in the window (t - W, t] (at least 3 of them) and b the
least-squares slope of ln m_j on t_j, the relative change of the trend across the window,

    delta = exp(b W) - 1,

satisfies |delta| < tau. The run's weights, per-length records and summary stay those of the
fit step (every other number of the run is unchanged); ``summary.converged`` records {window,
tolerance, converged, step, change, id_invalid_mass, ood_invalid_mass, per_length} at the step
that converged, or at the last evaluation with ``converged`` false when the cap came first (or
the fit was never reached); the ladder continues past the target to every rung of
:data:`FIT_LADDER` the run reaches. In an ensemble each member converges (and stops) on its
own, as at its fit.

Config (TOML, ``experiments/configs/set_complement/``; :data:`SCHEMA`, read without torch by
:mod:`resharpen.experiments.set_complement.config`)::

    [task]   vocab, train_len (0 = vocab // 4)
    [model]  the core's [model] table (learned positions: vocab slots)
    [train]  the core's [train] table without log_every; ema picks the *primary* weights,
             whose summary is the run's headline (and the factor a sweep varies);
             eval_every: evaluate the three weight sets every k steps; target,
             labels_per_position: the training target; converge_window,
             converge_tolerance: train on past the fit until convergence
    [fit]    until_id_invalid_mass: the stopping rule (the core's [fit] table)
    [eval]   per_length, seed, threshold

Evaluation is exact (float64, p* known) at every length s = 1..v-1
(:func:`resharpen.experiments.set_complement.evaluate.evaluate_lengths`).
Summaries (see :func:`summarize`):
    id_* / ood_*   mean over lengths s <= L_train / s > L_train of invalid mass, KL(p*||p), TV
    lg_score       the length-generalization score: the largest s such that the mean invalid
                   mass is <= eval.threshold at every length 1..s (0 if it fails at s = 1);
                   lg_fraction = lg_score / (v - 1)
    margin_exponent  a in  mean non-query min margin ~ c s^-a, least squares in log-log over the
                   lengths 2..v-1 where the margin is positive; the theory predicts a = 1 without
                   a norm and the exponent of the attn_out formula sqrt(v(v-1)/(s(v-s))) fitted
                   on the same lengths (``margin_exponent_attn_out_theory``).
"""
from __future__ import annotations

import copy
import math
import time
from typing import Callable

import numpy as np
import torch

from resharpen.experiments.model.transformer import ModelConfig
from resharpen.experiments.tasks.set_complement import seen_mask
from resharpen.experiments.training.targets import Batch, TrainingTarget, label_generator, make_batch
from resharpen.experiments.tasks.base import STREAM_SALT
from resharpen.experiments.training.loop import (fit_members, members_state, model_config,
                                              seeded_model, stacking_pays, weight_sets)
from resharpen.experiments.set_complement.config import SCHEMA, load_config
from resharpen.experiments.set_complement.evaluate import evaluate_lengths

SUMMARY_METRICS = ("invalid_mass", "kl", "tv")


def sc_model_config(config: dict) -> ModelConfig:
    """The model of a Set Complement config: v tokens, v learned position slots if any."""
    v = config["task"]["vocab"]
    return model_config(config, vocab=v, max_len=v)


def sample_sequences(vocab: int, length: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` uniformly random orderings of ``length`` distinct tokens: LongTensor (count, length)."""
    return torch.rand(count, vocab, generator=generator).argsort(dim=1)[:, :length]


def next_token_targets(seqs: torch.Tensor, vocab: int) -> torch.Tensor:
    """p* at every input position of sequences (..., S+1) of distinct tokens: float64
    (..., S, v), row i uniform on the v - i tokens not among t_1..t_i."""
    inputs = seqs[..., :-1]
    seen = seen_mask(inputs.reshape(-1, inputs.shape[-1]), vocab).view(*inputs.shape, vocab)
    valid = (~seen).to(torch.float64)
    return valid / valid.sum(-1, keepdim=True)


def target_batches(vocab: int, train: dict, generators=None
                   ) -> Callable[[torch.Tensor], Batch]:
    """sequences (..., B, S+1) -> the training batch for ``train.target`` with p* of the Set
    Complement Task (:func:`resharpen.experiments.training.targets.make_batch`). ``generators``:
    the extra labels' generator, or one per model of a stack (default: the run's own,
    :func:`~resharpen.experiments.training.targets.label_generator` of ``train.seed``)."""
    target = TrainingTarget.of(train)
    if generators is None and target.labels > 1:
        generators = label_generator(train["seed"])
    return lambda seqs: make_batch(seqs, target, lambda s: next_token_targets(s, vocab),
                                   generators)


def fit_exponent(lengths: np.ndarray, margins: np.ndarray) -> float:
    """a in margins ~ c lengths^-a (least squares in log-log on positive margins); NaN if < 3."""
    keep = np.isfinite(margins) & (margins > 0)
    if keep.sum() < 3:
        return float("nan")
    slope = np.polyfit(np.log(lengths[keep]), np.log(margins[keep]), 1)[0]
    return float(-slope)


def attn_out_margin(vocab: int, s: np.ndarray) -> np.ndarray:
    """Non-query margin of the normalized readout (docs/theory.md), beta = g = 1."""
    return np.sqrt(vocab * (vocab - 1) / (s * (vocab - s)))


def summarize(records: list[dict], vocab: int, train_len: int, threshold: float) -> dict:
    """ID/OOD means, the length-generalization score and the margin exponent of one evaluation."""
    out: dict = {}
    by_len = {r["length"]: r for r in records}
    ind = [r for r in records if r["length"] <= train_len]
    ood = [r for r in records if r["length"] > train_len]
    for name in SUMMARY_METRICS:
        out[f"id_{name}"] = float(np.mean([r[name] for r in ind])) if ind else float("nan")
        out[f"ood_{name}"] = float(np.mean([r[name] for r in ood])) if ood else float("nan")
    score = 0
    for s in range(1, vocab):
        if s not in by_len or not by_len[s]["invalid_mass"] <= threshold:
            break
        score = s
    out["lg_score"] = score
    out["lg_fraction"] = score / (vocab - 1)
    s = np.array([r["length"] for r in records if r["length"] >= 2], dtype=float)
    m = np.array([r["margin_nonquery_min"] for r in records if r["length"] >= 2], dtype=float)
    out["margin_exponent"] = fit_exponent(s, m)
    keep = np.isfinite(m) & (m > 0)
    out["margin_exponent_attn_out_theory"] = (fit_exponent(s[keep], attn_out_margin(vocab, s[keep]))
                                              if keep.sum() >= 3 else float("nan"))
    out["margin_exponent_none_theory"] = 1.0
    out["margin_fit_lengths"] = int(keep.sum())
    return out


def evaluate_weights(module: torch.nn.Module, config: dict, per_length: int | None = None,
                     lengths=None) -> list[dict]:
    """:func:`evaluate_lengths` of ``module`` on the run's evaluation inputs (``eval.seed``,
    ``eval.per_length`` or ``per_length`` per length) at ``lengths`` (default 1..v-1)."""
    ev, v = config["eval"], config["task"]["vocab"]
    return evaluate_lengths(module, v, lengths, per_length or ev["per_length"], ev["seed"])


def fit_measure(module: torch.nn.Module, config: dict) -> float:
    """The stopping rule's measure (module docstring): the mean over lengths 1..L_train of the
    exact mean invalid mass of ``module`` on the run's evaluation inputs. Only those lengths are
    evaluated: the inputs are the prefixes of the same seeded orderings as the full evaluation's
    (:func:`evaluate_lengths`) and the model is causal, so the number is the summary's
    ``id_invalid_mass`` up to float64 rounding (matrix products of other shapes), at a quarter
    of the cost."""
    records = evaluate_weights(module, config, lengths=range(1, config["task"]["train_len"] + 1))
    return float(np.mean([r["invalid_mass"] for r in records]))


def fit_reached(config: dict, row: dict) -> bool:
    """Whether a history row meets the stopping rule (False when the rule is off)."""
    target = config["fit"]["until_id_invalid_mass"]
    return bool(target) and row.get("fit_id_invalid_mass", float("inf")) <= target


def fit_summary(config: dict, history: list[dict]) -> dict:
    """{fit_target, fit_reached, fit_step (the first history step meeting the rule, or None),
    steps_trained} of a run under the stopping rule; {} when the rule is off."""
    target = config["fit"]["until_id_invalid_mass"]
    if not target:
        return {}
    reached = [row["step"] for row in history if fit_reached(config, row)]
    return {"fit_target": target, "fit_reached": bool(reached),
            "fit_step": reached[0] if reached else None,
            "steps_trained": history[-1]["step"] if history else 0}


def train(config: dict, *, log: Callable[[dict], None] | None = None, progress: bool = True,
          history_per_length: int = 16) -> dict:
    """Train one model; return {config, per_length: {raw, ema, bema}, summary, history,
    weights (a :class:`~resharpen.experiments.training.loop.WeightSets`), model, averaged}.

    ``log`` receives each history record (step, loss, lr and, every ``train.eval_every``
    steps, the ID/OOD summary of each weight set) as it is made. Under the stopping rule the run
    ends at its fit (module docstring)."""
    (result,), state = _train_members([config], log=log, progress=progress,
                                      history_per_length=history_per_length)
    return {**result, "model": state.model, "averaged": state.weights()}


def train_group(configs: list[dict], *, progress: bool = False,
                history_per_length: int = 16) -> list[dict]:
    """Train runs that share an ensemble (:func:`resharpen.experiments.training.sweep.group_key`:
    configs equal but for seed, lr, weight decay, EMA and init scale) as one batched
    computation (:mod:`resharpen.experiments.training.engine`), a run alone as one model; return
    each run's {config, per_length, summary, history, weights}, what :func:`train` gives for it
    alone (up to float32 rounding). Under the stopping rule each member ends at its own fit:
    its weights are kept at that step while the others train on."""
    first = configs[0]
    if len(configs) > 1 and not stacking_pays(sc_model_config(first), first["train"]["batch_size"],
                                              first["task"]["train_len"]):
        return [result for config in configs for result in train_group(
            [config], progress=progress, history_per_length=history_per_length)]
    return _train_members(configs, progress=progress, history_per_length=history_per_length)[0]


def _train_members(configs: list[dict], *, log: Callable[[dict], None] | None = None,
                   progress: bool = True, history_per_length: int = 16) -> tuple[list, object]:
    from resharpen.experiments.training.sweep import check_shared

    start = time.perf_counter()
    check_shared(configs)
    k, first = len(configs), configs[0]
    task, tr, until = first["task"], first["train"], first["fit"]["until_id_invalid_mass"]
    v, length = task["vocab"], task["train_len"]
    models = [seeded_model(c, vocab=v, max_len=v) for c in configs]
    state = members_state(models, [c["train"] for c in configs])
    seeds = [c["train"]["seed"] for c in configs]
    streams = SetComplementStreams(v, seeds, tr["batch_size"], length + 1, tr["steps"])
    batch = target_batches(v, tr, None if k == 1 else [label_generator(s) for s in seeds])

    def next_batch(step: int) -> Batch:
        tokens = streams.draw()
        return batch(tokens[0] if k == 1 else tokens)

    ladders: list[list[dict]] = [[] for _ in configs]
    window, tolerance = tr.get("converge_window", 0), tr.get("converge_tolerance", 0.1)
    trails: list[list[tuple[int, float]]] = [[] for _ in configs]  # (step, ID mass) per member
    at_fit: dict[int, dict] = {}  # member -> its weights at its fit step (convergence on)
    fit_steps: dict[int, int] = {}
    converged: dict[int, dict] = {}
    last: dict[int, dict] = {}  # member -> its latest convergence record

    def record(i: int, step: int, loss: float) -> dict:
        config = configs[i]
        evaluate = bool(tr["eval_every"]) or step == tr["steps"]
        weights = state.member_weights(i) if evaluate else None
        row = history_row(config, step, loss, state.lr(i), weights, history_per_length)
        if until:
            fit = row["fit_id_invalid_mass"] = fit_measure(weights["raw"], config)
            full: list = []  # every length, evaluated only when a record needs it

            def records() -> list[dict]:
                if not full:
                    full.append(evaluate_weights(weights["raw"], config))
                return full[0]

            if pending_rungs(ladders[i], until, fit, bool(window)):
                ladders[i] += ladder_rungs(ladders[i], until, step, fit,
                                           records(), length, beyond=bool(window))
            if window:
                trails[i].append((step, fit))
                if i not in fit_steps and fit_reached(config, row):
                    fit_steps[i] = step
                    at_fit[i] = {kind: copy.deepcopy(module)
                                 for kind, module in state.snapshot(i).items()}
                flat, change = converged_at(trails[i], fit_steps.get(i), window, tolerance)
                if flat or step == tr["steps"]:  # the member's last evaluation
                    last[i] = convergence_record(window, tolerance, flat, step, change, fit,
                                                 records(), length)
                if flat:
                    converged[i] = last[i]
        if weights is not None and post_K_tracked(config):  # K over training
            from resharpen.experiments.set_complement.effective_k import post_K
            row["post_K"] = post_K(weights["raw"])
        if log is not None:
            log(row)
        return row

    def stop(i: int, row: dict) -> bool:
        return i in converged if window else fit_reached(configs[i], row)

    fitted = fit_members(state, tr, next_batch, every=tr["eval_every"], record=record,
                         stop=stop, smoothing=0.02,
                         names=[c.get("name", "") for c in configs], progress=progress)
    extra = {} if k == 1 else {"ensemble": k}
    results = []
    for i, (config, history, weights, ladder) in enumerate(zip(
            configs, fitted.histories, fitted.weights, ladders)):
        fields = {"ladder": ladder} if until else {}
        if window:  # the run's result is its fit; convergence is recorded beside it
            weights = at_fit.get(i, weights)
            fields["converged"] = last.get(i) or convergence_record(
                window, tolerance, False, None, math.nan, math.nan, [], length)
        result = finish_run(config, weights, history, start, **extra, **fields)
        results.append({**result, "weights": weight_sets(weights)})
    if k > 1:  # the group's wall time, shared evenly
        for result in results:
            result["summary"]["seconds"] = (time.perf_counter() - start) / k
    return results, state


def post_K_tracked(config: dict) -> bool:
    """Whether a run's evaluation rows record post's effective K read off the raw weights
    (``row["post_K"]``, :func:`resharpen.experiments.set_complement.effective_k.post_K`): every
    one-layer, one-head, attention-only post model."""
    m = config["model"]
    return (m["norm"] == "post" and m["n_layers"] == 1 and m["n_heads"] == 1
            and m["mlp"] == "none" and m["positional"] == "none")


FIT_LADDER = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4)
"""The rungs of in-distribution fit at which a run under the stopping rule records its OOD
behaviour on the way to its fit (:func:`ladder_rungs`)."""


def ladder_rungs(done: list[dict], target: float, step: int, fit: float, records: list[dict],
                 train_len: int, beyond: bool = False) -> list[dict]:
    """The rungs of :data:`FIT_LADDER` (those >= the run's ``target``, and the target itself;
    ``beyond``: every rung, for a run that trains on past its fit) that the raw weights' ID
    invalid mass ``fit`` reaches for the first time at ``step``: for each, {rung, step,
    id_invalid_mass, ood_invalid_mass, per_length: [length, invalid mass, non-query min margin,
    query margin]} from the evaluation ``records`` of that step, so the OOD mass and the
    margins can be read against the fit, rung by rung, not only at the stop."""
    new = pending_rungs(done, target, fit, beyond)
    if not new:
        return []
    ood, table = _ood_and_table(records, train_len)
    return [{"rung": rung, "step": step, "id_invalid_mass": fit, "ood_invalid_mass": ood,
             "per_length": table} for rung in new]


def pending_rungs(done: list[dict], target: float, fit: float, beyond: bool = False
                  ) -> list[float]:
    """The rungs :func:`ladder_rungs` records at an evaluation whose ID invalid mass is
    ``fit``: those of the ladder (every rung with ``beyond``, else those >= ``target``, and
    ``target``) that ``fit`` reaches and that are not among the ``done`` entries yet; largest
    first."""
    rungs = sorted({r for r in FIT_LADDER if beyond or r >= target} | {target}, reverse=True)
    reached = {entry["rung"] for entry in done}
    return [r for r in rungs if r not in reached and fit <= r]


def _ood_and_table(records: list[dict], train_len: int) -> tuple[float, list[list[float]]]:
    """(mean invalid mass over the lengths > ``train_len``, per-length rows [length, invalid
    mass, non-query min margin, query margin]) of one evaluation's ``records``."""
    ood = [r["invalid_mass"] for r in records if r["length"] > train_len]
    table = [[r["length"], r["invalid_mass"], r["margin_nonquery_min"], r["margin_query"]]
             for r in records]
    return (float(np.mean(ood)) if ood else float("nan")), table


def converged_at(trail: list[tuple[int, float]], fit_step: int | None, window: int,
                 tolerance: float) -> tuple[bool, float]:
    """(flat, delta) of a run's ID invalid mass ``trail`` [(step, m)] at its last step t (module
    docstring, "Convergence"): delta = exp(b W) - 1 with b the least-squares slope of ln m on the
    step over the evaluations in (t - W, t]; flat when the fit was reached (``fit_step`` not
    None), t - W >= fit_step, the window holds at least 3 evaluations and |delta| < tolerance.
    delta is NaN when there is no such window yet."""
    if fit_step is None or not trail or trail[-1][0] - window < fit_step:
        return False, math.nan
    t = trail[-1][0]
    points = [(s, m) for s, m in trail if s > t - window]
    if len(points) < 3:
        return False, math.nan
    steps = np.array([s for s, _ in points], dtype=np.float64)
    logs = np.log(np.maximum([m for _, m in points], np.finfo(np.float64).tiny))
    slope = np.polyfit(steps, logs, 1)[0]
    change = float(np.expm1(slope * window))
    return abs(change) < tolerance, change


def convergence_record(window: int, tolerance: float, flat: bool, step: int | None,
                       change: float, fit: float, records: list[dict], train_len: int) -> dict:
    """``summary.converged``: the rule's window and tolerance, whether the run converged, the
    evaluation step (the one that converged, else the last), the window's relative change
    (:func:`converged_at`), and the ID / OOD invalid mass and per-length rows (as a ladder
    rung's) of the raw weights there."""
    ood, table = _ood_and_table(records, train_len) if records else (math.nan, [])
    return {"window": window, "tolerance": tolerance, "converged": bool(flat), "step": step,
            "change": change, "id_invalid_mass": fit, "ood_invalid_mass": ood,
            "per_length": table}


DATA_CHUNK = 64  # training steps of data drawn at once per run


class SetComplementStreams:
    """The Set Complement slice's :class:`~resharpen.experiments.tasks.base.Streams`: run k's
    batches are exactly the ones ``sample_sequences(vocab, length, batch, g_k)`` gives step
    after step, g_k = ``torch.Generator().manual_seed(seeds[k] + STREAM_SALT)`` (a CPU
    generator fills ``rand(n * batch, vocab)`` with the same numbers as n draws of
    ``rand(batch, vocab)``), drawn :data:`DATA_CHUNK` steps at a time with one argsort for all
    runs, and never past ``steps`` draws."""

    def __init__(self, vocab: int, seeds, batch: int, length: int, steps: int | None = None):
        self.vocab, self.batch, self.length = vocab, batch, length
        self.generators = [torch.Generator().manual_seed(s + STREAM_SALT) for s in seeds]
        self.left = steps
        self.chunk: list = []

    def draw(self) -> torch.Tensor:
        """The next step's tokens, (K, batch, length)."""
        if not self.chunk:
            n = DATA_CHUNK if self.left is None else max(1, min(DATA_CHUNK, self.left))
            keys = torch.stack([torch.rand(n * self.batch, self.vocab, generator=g)
                                for g in self.generators])
            drawn = keys.argsort(dim=-1)[..., :self.length]
            self.chunk = list(drawn.reshape(len(self.generators), n, self.batch,
                                            self.length).unbind(1))[::-1]
            if self.left is not None:
                self.left -= n
        return self.chunk.pop()


def history_row(config: dict, step: int, loss: float, lr: float, modules: dict | None,
                per_length: int = 16) -> dict:
    """{step, loss, lr} and, when ``modules`` ({raw, ema, bema} -> module) is given, the ID/OOD
    summary of each weight set on ``per_length`` sequences per length."""
    row = {"step": step, "loss": loss, "lr": lr}
    v, length = config["task"]["vocab"], config["task"]["train_len"]
    for kind, module in (modules or {}).items():
        records = evaluate_weights(module, config, per_length)
        summary = summarize(records, v, length, config["eval"]["threshold"])
        row[kind] = {k: summary[k] for k in ("id_invalid_mass", "ood_invalid_mass",
                                             "id_kl", "ood_kl", "lg_score")}
    return row


def finish_run(config: dict, modules: dict, history: list[dict], start: float,
               **extra) -> dict:
    """{config, per_length, summary, history} of a finished run: every weight set of
    ``modules`` ({raw, ema, bema} -> module) evaluated exactly at every length and summarized;
    the summary's headline is the primary weights (``train.ema``), with the stopping rule's
    fields (:func:`fit_summary`), its ``seconds`` the time since ``start``
    (``time.perf_counter``); ``extra`` goes into it."""
    v, length = config["task"]["vocab"], config["task"]["train_len"]
    per_length = {kind: evaluate_weights(module, config) for kind, module in modules.items()}
    threshold = config["eval"]["threshold"]
    summaries = {kind: summarize(recs, v, length, threshold) for kind, recs in per_length.items()}
    primary = {"none": "raw", "ema": "ema", "bema": "bema"}[config["train"]["ema"]]
    summary = {"primary": primary, **summaries[primary], "by_weights": summaries,
               "final_loss": history[-1]["loss"], **fit_summary(config, history), **extra}
    summary["seconds"] = time.perf_counter() - start
    return {"config": config, "per_length": per_length, "summary": summary, "history": history}


__all__ = ["SCHEMA", "SUMMARY_METRICS", "load_config", "sc_model_config", "sample_sequences",
           "next_token_targets", "target_batches", "summarize", "evaluate_weights", "fit_measure",
           "fit_reached", "fit_summary", "train", "train_group", "SetComplementStreams", "history_row", "finish_run",
           "attn_out_margin", "fit_exponent", "ladder_rungs", "pending_rungs", "converged_at",
           "convergence_record", "FIT_LADDER"]
