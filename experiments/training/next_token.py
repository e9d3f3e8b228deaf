"""Next-token training on any registered task, with exact per-position evaluation.

Data. Every step draws ``train.batch_size`` fresh sequences of ``task.train_len + 1`` tokens from
the task's own sampler (every token uniform over the legal-next set of its prefix) and trains
the causal model on cross-entropy at every position: the output at position i (the prefix of
length i + 1) is scored, by ``train.target`` (:mod:`resharpen.experiments.training.targets`),
against the token that actually comes next, a *sample* from the exact target p*(prefix)
(``sampled``, the default), that token and k - 1 more i.i.d. draws from p*
(``train.labels_per_position = k``), or p* itself, H(p*, p) (``soft``); p*(prefix) is uniform on
the task's exact legal-next set (:func:`next_token_targets`). There is no BOS token, so the first
token (drawn from N(empty)) is never predicted; prefix lengths 1..train_len are trained. For a
task with a PAD token (Othello) the positions whose next token is PAD (game over) are ignored,
as in OthelloGPT (``ignore_index=0``), when ``task.ignore_pad`` is true (their p* is then the
empty row: no target).

Model. :class:`resharpen.experiments.model.transformer.Transformer`, decoder-only, any norm placement
(the core's ``[model]`` table); positions are learned absolute embeddings of ``task.eval_len``
slots (``model.positional = "learned"``, the OthelloGPT choice: the slots beyond ``train_len`` are
never trained) or absent (``"none"``: a causal model without positional encoding, as in the
one-layer Set Complement theory).

Optimization is the training core's (:mod:`resharpen.experiments.training.loop`: AdamW with decay on
matrices only, warm-up then cosine / linear / constant, gradient clipping; ``[train]`` without
``ema`` and ``eval_every``, with ``log_every``: a history row every k steps, and with
``target``, ``labels_per_position``). Raw, EMA
(``torch.optim.swa_utils``) and BEMA weights are tracked on the same trajectory
(``resharpen.experiments.training.averaging``) and all three are evaluated, so the comparison is
paired; all three are kept (``result["weights"]``, saved as safetensors by the core's
``save_run``).

Stopping rule (``fit.until_id_invalid_mass`` = m > 0, ``train.steps`` the cap): at every record
step (every ``train.log_every`` steps) the raw weights' mean invalid mass over the prefix lengths
1..train_len of the evaluation sequences (:func:`fit_measure`) is measured exactly; the run ends
at the first step where it is <= m, and the summary records ``fit_target``, ``fit_reached``,
``fit_step`` and ``steps_trained``. With ``fit.until_id_tv`` = tau > 0 the fit also asks that
the weights' mean total variation distance to the exact legal-next distribution over the same
lengths be <= tau (recorded as ``fit_id_tv``; the summary adds ``fit_tv_target``): invalid mass
alone is met by a degenerate model that puts its mass on a few always-legal tokens (an early
BEMA extrapolation on Dyck predicts opening brackets only: ID invalid mass 0.002 at TV 0.33),
which has not learned the task. With ``fit.stop = false`` the same measure is recorded at
every record step but the run trains to ``train.steps`` (a fixed budget; ``fit_step`` is then
when the raw weights first reached the fit, if they did). With ``fit.averages = "own_fit"``
each weight set is kept at its own first record step at the fit (ID invalid mass <= m, and TV
<= tau when set; the EMA and BEMA measures recorded as ``fit_id_invalid_mass_ema`` / ``_bema``
and ``fit_id_tv_ema`` / ``_bema`` until they reach it) and the run ends when all three have (or
at the cap, where a weight set that never reached the fit is kept as it is; with ``fit.averages_patience`` = q > 0 the run ends at the latest at the first record step
>= q times the raw weights' fit step); the summary's ``fit_steps`` holds each one's step (None:
not reached), so an average is compared with the raw weights at a matched fit, not at the raw
weights' fit step, when the average still lags behind. The config refuses an m that is not below a tenth of a
uniform prediction's ID invalid mass on the task (``config.uniform_id_invalid_mass``). In an
ensemble each member ends at its own fit.

Exact evaluation (float64), at every prefix length n = 1..eval_len, on ``eval.count`` sampled
sequences of length ``eval_len`` (seed ``eval.seed``, the same for every run): with p the
model's next-token distribution, S = N(prefix) the legal set and p* uniform on S,

    invalid_mass  = p(V minus S) = sigmoid(LSE_illegal - LSE_legal)
    tv            = (1/2) sum_j |p_j - p*_j|
    kl            = KL(p* || p) = -log|S| - mean_{j in S} log p_j
    top1_invalid  = 1 if max_{illegal} logit >= max_{legal} logit (ties count against the model)
    cross_entropy = -mean_{j in S} log p_j = kl + log|S|

Per-length records hold the mean over sequences (and ``invalid_mass_max``); positions without a
target (Othello after the game ended, when ``ignore_pad``) are left out, and a length where every
sequence is finished has ``count = 0`` and NaN metrics. Summaries (:func:`summarize`):
``id_<metric>`` = mean over lengths 1..train_len, ``ood_<metric>`` = mean over
train_len+1..eval_len, ``lg_score`` = largest n with mean invalid mass <= ``eval.threshold`` at
every length 1..n (lengths with no target are skipped), ``lg_fraction`` = lg_score / eval_len.
"""
from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from resharpen.experiments.tasks.metrics import METRICS, target_set_metrics
from resharpen.experiments.training.targets import TrainingTarget, label_generator, make_batch
from resharpen.experiments.training.loop import (fit_members, members_state, model_config,
                                              seeded_model, stacking_pays, weight_sets)
from resharpen.experiments.training.next_token_config import (SCHEMA, averages_at_own_fit, build_task,
                                                  make_config, stops_at_fit)

SUMMARY_METRICS = ("invalid_mass", "tv", "kl", "top1_invalid")

# ------------------------------------------------------------------------- exact metrics
def position_metrics(logits: torch.Tensor, legal) -> dict[str, torch.Tensor]:
    """Every metric at every position: logits (N, L, V), legal bool (N, L, V) -> float64 (N, L):
    :func:`core.metrics.target_set_metrics` with the legal-next set as the valid set (NaN where
    it is empty)."""
    return target_set_metrics(logits, torch.as_tensor(np.asarray(legal), dtype=torch.bool))


def target_sets(task, seqs: np.ndarray, ignore_pad: bool) -> np.ndarray:
    """The legal-next sets (count, length, V) of sequences, emptied where the position has no
    target (the game is over, PAD next, and ``ignore_pad``)."""
    legal = task.legal_next(seqs)
    pad = getattr(task, "pad", None)
    if pad is not None and ignore_pad:
        over = legal[..., pad]  # the game is over: the only legal token is PAD
        legal = legal.copy()
        legal[over] = False
    return legal


def next_token_targets(task, seqs: torch.Tensor, ignore_pad: bool) -> torch.Tensor:
    """p* at every input position of training sequences (..., B, S+1): float64 (..., B, S, V),
    uniform on the legal-next set of the prefix (:func:`target_sets`; a row of zeros: no
    target)."""
    flat = seqs.reshape(-1, seqs.shape[-1])
    legal = torch.as_tensor(target_sets(task, flat[:, :-1].numpy(), ignore_pad))
    legal = legal.reshape(seqs.shape[:-1] + legal.shape[1:])
    size = legal.sum(-1, keepdim=True).clamp_min(1)
    return legal.to(torch.float64) / size


def eval_sequences(config: dict, task=None) -> tuple[np.ndarray, np.ndarray]:
    """The fixed evaluation set: sequences (count, eval_len) and their legal-next sets
    (count, eval_len, V), with the legal set emptied where the position has no target (PAD next, if ignored)."""
    task = task or build_task(config)
    t, ev = config["task"], config["eval"]
    seqs = task.sample(ev["count"], t["eval_len"], ev["seed"])
    return seqs, target_sets(task, seqs, t["ignore_pad"])


@torch.no_grad()
def evaluate(module: torch.nn.Module, seqs: np.ndarray, legal: np.ndarray,
             batch: int = 256) -> list[dict]:
    """Per-length records (length n = 1..L): mean of every metric over the sequences that have a
    target at that position, ``invalid_mass_max``, and ``count``. float64 forward pass."""
    model = copy.deepcopy(module).to(torch.float64)
    model.eval()
    parts = []
    tokens = torch.as_tensor(seqs, dtype=torch.int64)
    for lo in range(0, len(tokens), batch):
        parts.append(position_metrics(model(tokens[lo:lo + batch]), legal[lo:lo + batch]))
    metrics = {k: torch.cat([p[k] for p in parts]) for k in METRICS}
    records = []
    for i in range(tokens.shape[1]):
        column = metrics["invalid_mass"][:, i]
        keep = ~column.isnan()
        count = int(keep.sum())
        record = {"length": i + 1, "count": count}
        for name in METRICS:
            record[name] = float(metrics[name][keep, i].mean()) if count else float("nan")
        record["invalid_mass_max"] = float(column[keep].max()) if count else float("nan")
        records.append(record)
    return records


def summarize(records: list[dict], train_len: int, threshold: float) -> dict:
    """ID (lengths <= train_len) and OOD (> train_len) means of each metric, the
    length-generalization score and fraction, and the last evaluated length's metrics."""
    out: dict = {}
    scored = [r for r in records if r["count"]]
    for name in SUMMARY_METRICS:
        ind = [r[name] for r in scored if r["length"] <= train_len]
        ood = [r[name] for r in scored if r["length"] > train_len]
        out[f"id_{name}"] = float(np.mean(ind)) if ind else float("nan")
        out[f"ood_{name}"] = float(np.mean(ood)) if ood else float("nan")
        out[f"last_{name}"] = scored[-1][name] if scored else float("nan")
    score = 0
    for r in scored:
        if not r["invalid_mass"] <= threshold:
            break
        score = r["length"]
    out["lg_score"] = score
    out["lg_fraction"] = score / len(records) if records else 0.0
    return out


def fit_measure(module: torch.nn.Module, seqs: np.ndarray, legal: np.ndarray,
                train_len: int) -> tuple[float, float]:
    """The stopping rule's measures: (invalid mass, total variation), each the mean over prefix
    lengths 1..train_len of the exact mean over the evaluation sequences cut at train_len (a
    causal model's outputs there do not depend on the rest)."""
    records = [r for r in evaluate(module, seqs[:, :train_len], legal[:, :train_len])
               if r["count"]]
    return (float(np.mean([r["invalid_mass"] for r in records])),
            float(np.mean([r["tv"] for r in records])))


def meets_fit(fit: dict, mass: float, tv: float) -> bool:
    """Whether weights with ID invalid mass ``mass`` and ID total variation ``tv`` are at the
    stated fit: mass <= ``fit.until_id_invalid_mass`` and, when ``fit.until_id_tv`` is set,
    tv <= it."""
    tau = fit.get("until_id_tv", 0.0)
    return mass <= fit["until_id_invalid_mass"] and (not tau or tv <= tau)


def fit_summary(fit: dict, history: list[dict]) -> dict:
    """{fit_target, [fit_tv_target,] fit_reached, fit_step (the first record step meeting the
    rule, or None), steps_trained} under the stopping rule; {} when it is off."""
    until = fit["until_id_invalid_mass"]
    if not until:
        return {}
    reached = [row["step"] for row in history
               if meets_fit(fit, row["fit_id_invalid_mass"], row.get("fit_id_tv", 0.0))]
    tv = {"fit_tv_target": fit["until_id_tv"]} if fit.get("until_id_tv") else {}
    return {"fit_target": until, **tv, "fit_reached": bool(reached),
            "fit_step": reached[0] if reached else None,
            "steps_trained": history[-1]["step"] if history else 0}


# ------------------------------------------------------------------------- training
def train(config: dict, *, progress: bool = True, log: Callable[[dict], None] | None = None,
          eval_data: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Train one model; return {config, per_length: {raw, ema, bema}, summary, history,
    weights (a :class:`~resharpen.experiments.training.loop.WeightSets`), model, averaged}. ``summary`` holds the raw/EMA/BEMA summaries under ``by_weights`` and the run
    time in ``seconds``; ``history`` one record (step, loss, smoothed loss, lr) every
    ``train.log_every`` steps."""
    (result,), state = _train_members([config], progress=progress, log=log, eval_data=eval_data)
    return {**result, "model": state.model, "averaged": state.weights()}


def train_group(configs: list[dict], *, progress: bool = False, heartbeat: float | None = None,
                eval_data: tuple[np.ndarray, np.ndarray] | None = None,
                checkpoints: str | Path | None = None) -> list[dict]:
    """Train runs that share an ensemble (:func:`resharpen.experiments.training.sweep.group_key`:
    one task, model shape and schedule; seeds, lr, weight decay, EMA and init scale free) as
    one batched computation (:mod:`resharpen.experiments.training.engine`), a run alone as one
    model; return each run's {config, per_length, summary, history, weights}: what
    :func:`train` gives for it alone, up to float32 rounding (each member draws its data from
    its own run's generator). ``heartbeat``: in a log, a progress line at most that many
    seconds apart once a run has lasted that long (:func:`~resharpen.experiments.training.loop.fit_members`).
    ``checkpoints``: a folder where each run trained alone keeps a mid-run checkpoint
    (:mod:`resharpen.experiments.training.checkpoint`) and from which it resumes."""
    first = configs[0]
    if len(configs) > 1 and not stacking_pays(
            model_config(first, build_task(first).size, first["task"]["eval_len"]),
            first["train"]["batch_size"], first["task"]["train_len"]):
        return [result for config in configs
                for result in train_group([config], progress=progress, heartbeat=heartbeat,
                                          eval_data=eval_data, checkpoints=checkpoints)]
    return _train_members(configs, progress=progress, heartbeat=heartbeat,
                          eval_data=eval_data,
                          checkpoints=checkpoints if len(configs) == 1 else None)[0]


def _train_members(configs: list[dict], *, progress: bool = True, heartbeat: float | None = None,
                   log: Callable[[dict], None] | None = None,
                   eval_data: tuple[np.ndarray, np.ndarray] | None = None,
                   checkpoints: str | Path | None = None) -> tuple[list, object]:
    from resharpen.experiments.training.sweep import check_shared

    start = time.perf_counter()
    before = [0.0]  # the run time of the sessions before a checkpoint it resumes from
    check_shared(configs)
    k, first = len(configs), configs[0]
    t, tr = first["task"], first["train"]
    task = build_task(first)
    models = [seeded_model(c, vocab=task.size, max_len=t["eval_len"]) for c in configs]
    seeds = [c["train"]["seed"] for c in configs]
    streams = task.streams(seeds, tr["batch_size"], t["train_len"] + 1)
    pad = getattr(task, "pad", None) if t["ignore_pad"] else None
    state = members_state(models, [c["train"] for c in configs])
    target = TrainingTarget.of(tr)
    labels = None
    if target.labels > 1:
        labels = label_generator(seeds[0]) if k == 1 else [label_generator(s) for s in seeds]

    def next_batch(step: int):
        samples = torch.as_tensor(streams.draw())
        seqs = samples[0] if k == 1 else samples
        return make_batch(seqs, target, lambda s: next_token_targets(task, s, t["ignore_pad"]),
                          labels)

    seqs, legal = eval_data if eval_data is not None else eval_sequences(first, task)
    fit = first["fit"]
    until, tv_fit = fit["until_id_invalid_mass"], bool(fit.get("until_id_tv"))
    ends = stops_at_fit(first)  # else the fit is only recorded (fit.stop = false)
    own = ends and averages_at_own_fit(first)
    kept: list[dict] = [{} for _ in configs]  # member -> {weights kind: copy at its own fit}
    fit_steps: list[dict] = [{} for _ in configs]  # member -> {weights kind: its fit step}
    kinds: list[int] = [0 for _ in configs]  # member -> how many weight sets it keeps

    def record(i: int, step: int, loss: float) -> dict:
        smoothed = state.smoothed_loss if k == 1 else state.smoothed_loss[i]
        row = {"step": step, "loss": loss, "loss_smoothed": smoothed, "lr": state.lr(i)}
        if until:
            weights = state.member_weights(i)
            raw = fit_measure(weights["raw"], seqs, legal, t["train_len"])
            row["fit_id_invalid_mass"] = raw[0]
            if tv_fit:
                row["fit_id_tv"] = raw[1]
            if own:
                kinds[i] = len(weights)
                for kind, module in weights.items():
                    if kind in fit_steps[i]:
                        continue
                    mass, tv = raw if kind == "raw" else fit_measure(
                        module, seqs, legal, t["train_len"])
                    if kind != "raw":
                        row[f"fit_id_invalid_mass_{kind}"] = mass
                        if tv_fit:
                            row[f"fit_id_tv_{kind}"] = tv
                    if meets_fit(fit, mass, tv):
                        fit_steps[i][kind] = step
                        kept[i][kind] = copy.deepcopy(state.snapshot(i)[kind])
        if log is not None:
            log(row)
        return row

    patience = fit.get("averages_patience", 0.0)

    def stop(i: int, row: dict) -> bool:
        if own:
            raw_step = fit_steps[i].get("raw")
            return len(fit_steps[i]) == kinds[i] or (
                bool(patience) and raw_step is not None and row["step"] >= patience * raw_step)
        return ends and meets_fit(fit, row["fit_id_invalid_mass"], row.get("fit_id_tv", 0.0))

    checkpoint, resumed = None, []
    if checkpoints is not None:
        checkpoint = _checkpoint(checkpoints, first, state, streams, labels, kept, fit_steps,
                                 kinds, lambda: before[0] + time.perf_counter() - start,
                                 before.__setitem__, resumed)
    fitted = fit_members(state, tr, next_batch, every=tr["log_every"], record=record,
                         stop=stop, ignore=pad, raise_on_nonfinite=True, smoothing=0.05,
                         names=[c["name"] for c in configs], progress=progress,
                         heartbeat=heartbeat, checkpoint=checkpoint)
    results = []
    for i, (config, history, weights) in enumerate(zip(configs, fitted.histories,
                                                       fitted.weights)):
        own_fit = {}
        if own:  # each weight set at its own fit step (as it ended where it never reached it)
            weights = {kind: kept[i].get(kind, module) for kind, module in weights.items()}
            own_fit = {"fit_steps": {kind: fit_steps[i].get(kind) for kind in weights}}
        per_length = {kind: evaluate(module, seqs, legal) for kind, module in weights.items()}
        summaries = {kind: summarize(recs, t["train_len"], config["eval"]["threshold"])
                     for kind, recs in per_length.items()}
        summary = {"task": t["name"], "norm": config["model"]["norm"],
                   "seed": config["train"]["seed"], "by_weights": summaries,
                   "final_loss": history[-1]["loss_smoothed"],
                   "seconds": (before[0] + time.perf_counter() - start) / k,
                   **fit_summary(fit, history), **own_fit,
                   **({"resumed_from": list(resumed)} if resumed else {}),
                   **({} if k == 1 else {"ensemble": k})}
        results.append({"config": config, "per_length": per_length, "summary": summary,
                        "history": history, "weights": weight_sets(weights)})
    return results, state


def _checkpoint(folder, config: dict, state, streams, labels, kept: list[dict],
                fit_steps: list[dict], kinds: list[int], elapsed: Callable[[], float],
                set_before: Callable[[int, float], None], resumed: list[int]):
    """The mid-run checkpoint of one run (:mod:`resharpen.experiments.training.checkpoint`):
    besides the training state, its data generators, the weights its own-fit rule has kept, the
    run time so far and the steps it has resumed from (``resumed``, filled on a resume)."""
    from resharpen.experiments.training.checkpoint import Checkpoint

    def get_extra() -> dict:
        return {"streams": [g.bit_generator.state for g in streams.generators],
                "labels": None if labels is None else labels.get_state(),
                "kept": {kind: module.state_dict() for kind, module in kept[0].items()},
                "fit_steps": dict(fit_steps[0]), "kinds": kinds[0], "elapsed": elapsed(),
                "resumed_from": list(resumed)}

    def set_extra(extra: dict) -> None:
        for generator, saved in zip(streams.generators, extra["streams"]):
            generator.bit_generator.state = saved
        if labels is not None:
            labels.set_state(extra["labels"])
        weights = state.snapshot(0)
        for kind, saved in extra["kept"].items():
            kept[0][kind] = copy.deepcopy(weights[kind])
            kept[0][kind].load_state_dict(saved)
        fit_steps[0].update(extra["fit_steps"])
        kinds[0] = extra["kinds"]
        set_before(0, extra["elapsed"])
        resumed[:] = [*extra["resumed_from"], extra["at_step"]]

    return Checkpoint(Path(folder), config, get_extra, set_extra)


__all__ = ["METRICS", "SCHEMA", "make_config", "position_metrics", "target_sets", "fit_measure",
           "meets_fit", "fit_summary",
           "next_token_targets", "eval_sequences",
           "evaluate", "summarize", "train", "train_group"]
