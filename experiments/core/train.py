"""Training on the Set Complement Task as a language, with raw, EMA and BEMA weights side by side.

Data: each training sequence is a uniformly random ordering of L_train + 1 distinct tokens of
V = {0..v-1}; every position s = 1..L_train is a next-token example whose label is the token
that actually comes next (a *sample* from p*(t_1..t_s), not the soft target: the label noise,
trace 1 - 1/(v-s) per position, is the point). Loss: mean cross-entropy over all positions.

Optimizer: AdamW (decoupled weight decay on matrices only, not on norm gains), linear warm-up
then cosine / linear decay to ``min_lr_ratio * lr`` (or constant), gradient-norm clipping,
attention and residual dropout from the model config.

Every run tracks all three weight sets, so they are compared on the same trajectory:
raw (the optimizer's iterate), EMA (swa_utils, constant decay ``train.ema_decay``) and BEMA
(``train.bema_*``). ``train.ema`` picks the *primary* weights whose summary is the run's
headline (and the factor a sweep varies).

Evaluation is exact (float64, p* known) at every length s = 1..v-1 (resharpen.experiments.set_complement.evaluate).
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

import math
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from resharpen.experiments.core.averaging import BEMAConfig, make_averager
from resharpen.experiments.set_complement.evaluate import evaluate_lengths
from resharpen.experiments.core.model import ModelConfig, Transformer

WEIGHTS = ("raw", "ema", "bema")
SUMMARY_METRICS = ("invalid_mass", "kl", "tv")


def model_config(config: dict) -> ModelConfig:
    """The ``ModelConfig`` of a validated training config."""
    m, v = config["model"], config["task"]["vocab"]
    return ModelConfig(
        vocab=v, d_model=m["d_model"], n_layers=m["n_layers"], n_heads=m["n_heads"],
        d_head=m["d_head"] or None, norm=m["norm"], norm_kind=m["norm_kind"],
        mlp=None if m["mlp"] == "none" else m["mlp"], d_mlp=m["d_mlp"] or None,
        max_len=v if m["positional"] else None, attn_dropout=m["attn_dropout"],
        resid_dropout=m["resid_dropout"], init_std=m["init_std"])


def bema_config(train: dict) -> BEMAConfig:
    return BEMAConfig(update_freq=train["bema_update_freq"], ema_power=train["bema_ema_power"],
                      bias_power=train["bema_bias_power"], lag=train["bema_lag"],
                      update_after=train["bema_update_after"],
                      multiplier=train["bema_multiplier"])


def lr_factor(step: int, train: dict) -> float:
    """Multiplier of ``train.lr`` at optimizer step ``step`` (0-based)."""
    warmup, total, floor = train["warmup"], train["steps"], train["min_lr_ratio"]
    if warmup and step < warmup:
        return (step + 1) / warmup
    if train["schedule"] == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    progress = min(max(progress, 0.0), 1.0)
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if train["schedule"] == "cosine" \
        else 1.0 - progress
    return floor + (1.0 - floor) * shape


def sample_sequences(vocab: int, length: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` uniformly random orderings of ``length`` distinct tokens: LongTensor (count, length)."""
    return torch.rand(count, vocab, generator=generator).argsort(dim=1)[:, :length]


def make_optimizer(model: torch.nn.Module, train: dict) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": train["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=train["lr"],
                             betas=(train["beta1"], train["beta2"]))


def next_token_loss(model: torch.nn.Module, seqs: torch.Tensor,
                    ignore: int | None = None) -> torch.Tensor:
    """Mean next-token cross-entropy over the positions of sequences (B, S+1); positions whose
    label equals ``ignore`` (e.g. a PAD token) are left out of the mean."""
    logits = model(seqs[:, :-1])
    labels = seqs[:, 1:]
    if ignore is not None:
        labels = labels.masked_fill(labels == ignore, -100)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=-100)


def training_state(model: torch.nn.Module, train: dict) -> tuple:
    """(AdamW optimizer, warm-up + cosine schedule, {raw, ema, bema} averagers) of a run."""
    optimizer = make_optimizer(model, train)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: lr_factor(k, train))
    averagers = {"raw": make_averager("none", model),
                 "ema": make_averager("ema", model, decay=train["ema_decay"]),
                 "bema": make_averager("bema", model, bema=bema_config(train))}
    return optimizer, schedule, averagers


def train_step(model: torch.nn.Module, optimizer, schedule, seqs: torch.Tensor,
               grad_clip: float, ignore: int | None = None) -> float:
    """One step on sequences (B, S+1): :func:`next_token_loss`, gradient-norm clipping, the
    optimizer, the schedule. Returns the loss."""
    loss = next_token_loss(model, seqs, ignore)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    schedule.step()
    return loss.item()


def fit_exponent(lengths: np.ndarray, margins: np.ndarray) -> float:
    """a in margins ~ c lengths^-a (least squares in log-log on positive margins); NaN if < 3."""
    keep = np.isfinite(margins) & (margins > 0)
    if keep.sum() < 3:
        return float("nan")
    slope = np.polyfit(np.log(lengths[keep]), np.log(margins[keep]), 1)[0]
    return float(-slope)


def attn_out_margin(vocab: int, s: np.ndarray) -> np.ndarray:
    """Non-query margin of the normalized readout (THEORY.md), beta = g = 1."""
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
                     ) -> list[dict]:
    ev, v = config["eval"], config["task"]["vocab"]
    return evaluate_lengths(module, v, None, per_length or ev["per_length"], ev["seed"])


def train(config: dict, *, log: Callable[[dict], None] | None = None, progress: bool = True,
          history_per_length: int = 16) -> dict:
    """Train one model; return {config, per_length: {raw, ema, bema}, summary, history, seconds}.

    ``log`` receives each history record (step, loss, lr and, every ``train.eval_every``
    steps, the ID/OOD summary of each weight set) as it is made."""
    from tqdm import tqdm

    start = time.perf_counter()
    task, tr = config["task"], config["train"]
    v, length = task["vocab"], task["train_len"]
    if tr["threads"]:
        torch.set_num_threads(tr["threads"])
    torch.manual_seed(tr["seed"])
    model = Transformer(model_config(config))
    data = torch.Generator().manual_seed(tr["seed"] + 1_000_003)
    optimizer, schedule, averagers = training_state(model, tr)
    history: list[dict] = []

    def record(step: int, loss: float, evaluate: bool) -> None:
        modules = {kind: a.module() for kind, a in averagers.items()} if evaluate else None
        row = history_row(config, step, loss, optimizer.param_groups[0]["lr"], modules,
                          history_per_length)
        history.append(row)
        if log is not None:
            log(row)

    model.train()
    running = float("nan")
    bar = tqdm(range(1, tr["steps"] + 1), desc=f"train {config.get('name', '')}".strip(),
               unit="step", disable=not progress or None, leave=False)
    for step in bar:
        seqs = sample_sequences(v, length + 1, tr["batch_size"], data)
        value = train_step(model, optimizer, schedule, seqs, tr["grad_clip"])
        for averager in averagers.values():
            averager.update(model, step)
        running = value if running != running else 0.98 * running + 0.02 * value
        if step % 50 == 0:
            bar.set_postfix(loss=f"{running:.4f}")
        if is_record_step(step, tr):
            record(step, value, evaluate=bool(tr["eval_every"]) or step == tr["steps"])
    bar.close()
    result = finish_run(config, {k: a.module() for k, a in averagers.items()}, history, start)
    return {**result, "model": model, "averaged": {k: a.module() for k, a in averagers.items()}}


def is_record_step(step: int, train: dict) -> bool:
    """Steps (1-based) with a history row: every ``eval_every`` steps and the last."""
    every = train["eval_every"]
    return step == train["steps"] or bool(every and step % every == 0)


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
    the summary's headline is the primary weights (``train.ema``), its ``seconds`` the time
    since ``start`` (``time.perf_counter``); ``extra`` goes into it."""
    v, length = config["task"]["vocab"], config["task"]["train_len"]
    per_length = {kind: evaluate_weights(module, config) for kind, module in modules.items()}
    threshold = config["eval"]["threshold"]
    summaries = {kind: summarize(recs, v, length, threshold) for kind, recs in per_length.items()}
    primary = {"none": "raw", "ema": "ema", "bema": "bema"}[config["train"]["ema"]]
    summary = {"primary": primary, **summaries[primary], "by_weights": summaries,
               "final_loss": history[-1]["loss"], **extra}
    summary["seconds"] = time.perf_counter() - start
    return {"config": config, "per_length": per_length, "summary": summary, "history": history}


def save_run(result: dict, folder: str | Path) -> Path:
    """Write config.json, metrics.jsonl, per_length.json, summary.json (last) atomically."""
    import json

    from resharpen.experiments.core.io import atomic_write_json, atomic_write_text, ensure_writable_dir

    folder = ensure_writable_dir(folder)
    atomic_write_json(folder / "config.json", result["config"])
    atomic_write_text(folder / "metrics.jsonl",
                      "".join(json.dumps(row) + "\n" for row in result["history"]))
    atomic_write_json(folder / "per_length.json", result["per_length"])
    atomic_write_json(folder / "summary.json", result["summary"])  # its presence = finished
    return folder
