"""Sweep runs trained together as one batched ensemble (:class:`resharpen.experiments.set_complement.ensemble.Ensemble`).

Runs can share an ensemble when their configs differ only in the per-model factors
:data:`PER_MODEL_KEYS` (seed, learning rate, weight decay, dropout rates, EMA kind and decay):
same task, shapes, norm placement, schedule, batch size and steps (:func:`group_key`).
:func:`train_group` trains such a group and returns, for every run, exactly what
:func:`resharpen.experiments.set_complement.train.train` returns (config, exact per-length metrics of the raw, EMA and
BEMA weights, summary, history), so a sweep stores grouped and single runs alike.

Run k of a group starts from the trainer's initialization for its seed and sees the trainer's
batches; its AdamW, clipping and learning-rate schedule are the trainer's, per model. Its EMA is
``torch.optim.swa_utils.AveragedModel`` over the stacked weights with a per-model decay
(theta_ema <- theta_ema + (1 - decay_k) (theta - theta_ema), the arithmetic of
``get_ema_multi_avg_fn``), its BEMA is :class:`resharpen.experiments.core.averaging.BEMA` on the stacked weights
(BEMA is elementwise with a schedule shared by the group). So without dropout a grouped run
equals the same run trained alone up to float32 rounding (tests/set_complement/test_ensemble_train.py); with
dropout it is a run of the same distribution (the masks are drawn for the whole group). The
training target (``train.target``, ``train.labels_per_position``) is shared by the group; run
k's extra labels come from its own run's label generator, so they are the lone run's labels.

Stopping rule (``train.until_id_invalid_mass``, shared by the group). Each run has its own fit
step: at every evaluation step the rule's measure (:func:`resharpen.experiments.set_complement.train.fit_measure`)
of each run that has not yet reached its fit is taken; a run that reaches it keeps a snapshot
of its raw, EMA and BEMA weights at that step and its history ends there. The ensemble trains
on (the finished runs' stacked weights keep moving, unused) until every run has reached its fit
or the cap. Each run is then evaluated, summarized and saved from its snapshot (from the
weights at the cap if it never reached the fit): exactly what the run trained alone, which stops
at its fit, gives; so runs are compared each at its own fit.
"""
from __future__ import annotations

import json
import time

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from resharpen.experiments.core.averaging import BEMA
from resharpen.experiments.core.model import Transformer
from resharpen.experiments.core.targets import label_generator
from resharpen.experiments.core.train import (bema_config, is_record_step, lr_factor,
                                              weight_sets)
from resharpen.experiments.set_complement.ensemble import Ensemble, choose_path, data_stream, unstack
from resharpen.experiments.set_complement.train import (finish_run, fit_measure, fit_reached,
                                                        history_row, sc_model_config,
                                                        target_batches, train)

PER_MODEL_KEYS = (("train", "seed"), ("train", "lr"), ("train", "weight_decay"),
                  ("train", "ema"), ("train", "ema_decay"), ("model", "attn_dropout"),
                  ("model", "resid_dropout"))


def group_key(config: dict) -> str:
    """The part of a run config that runs of one ensemble share (all but the name and
    :data:`PER_MODEL_KEYS`), as canonical JSON."""
    shared = json.loads(json.dumps(config))
    shared.pop("name", None)
    for section, key in PER_MODEL_KEYS:
        shared.get(section, {}).pop(key, None)
    return json.dumps(shared, sort_keys=True)


def group_runs(configs: list[dict], size: int) -> list[list[int]]:
    """Indices of ``configs`` in groups of at most ``size`` runs with one :func:`group_key`,
    in order of first appearance (a deterministic function of the list: a resumed sweep
    re-forms the same groups)."""
    if size < 1:
        raise ValueError(f"ensemble size must be >= 1, got {size}")
    groups: list[list[int]] = []
    open_group: dict[str, list[int]] = {}
    for index, config in enumerate(configs):
        key = group_key(config)
        group = open_group.get(key)
        if group is None or len(group) == size:
            group = open_group[key] = []
            groups.append(group)
        group.append(index)
    return groups


class StackedWeights(nn.Module):
    """The stacked tensors of an ensemble as the parameters of a module (sharing storage), so
    the averagers of :mod:`resharpen.experiments.core.averaging` and swa_utils can follow them."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        super().__init__()
        self.names = list(tensors)
        self.stack = nn.ParameterList(nn.Parameter(t.detach(), requires_grad=False)
                                      for t in tensors.values())

    def unstacked(self, cfg, index: int) -> Transformer:
        """Model ``index`` of the stack as a Transformer (a copy of its weights)."""
        return unstack(cfg, dict(zip(self.names, self.stack)), index)


def per_model_ema(decays: torch.Tensor):
    """swa_utils ``multi_avg_fn``: theta_ema <- lerp(theta_ema, theta, 1 - decay_k) per model."""
    def update(averaged: list, current: list, num_averaged) -> None:
        for ema, theta in zip(averaged, current):
            ema.lerp_(theta, (1.0 - decays).view((-1,) + (1,) * (ema.dim() - 1)).to(ema.dtype))
    return update


def train_group(configs: list[dict], *, path: str = "auto", progress: bool = False) -> list[dict]:
    """Train runs with one :func:`group_key` as one ensemble; return each run's result as
    :func:`resharpen.experiments.set_complement.train.train` would (with its ``weights``,
    without the module objects); under the stopping rule each run at its own fit (module
    docstring). ``path``: as
    :func:`resharpen.experiments.set_complement.ensemble.choose_path` (``auto``) or forced ``batched`` / ``compiled``;
    a group of one, or ``sequential``, trains each run with the ordinary trainer."""
    if not configs:
        raise ValueError("train_group needs at least one config")
    if len({group_key(c) for c in configs}) > 1:
        raise ValueError("these runs cannot share an ensemble: their configs differ in more "
                         f"than {', '.join(f'{s}.{k}' for s, k in PER_MODEL_KEYS)}")
    first, k = configs[0], len(configs)
    task, tr = first["task"], first["train"]
    if path == "auto":
        path = choose_path(tr["batch_size"], task["train_len"], k, tr["steps"])
    if path == "sequential" or k == 1:
        keep = ("config", "per_length", "summary", "history", "weights")
        return [{key: r[key] for key in keep}
                for r in (train(c, progress=False) for c in configs)]
    start = time.perf_counter()
    if tr["threads"]:
        torch.set_num_threads(tr["threads"])
    trains = [c["train"] for c in configs]
    cfg = sc_model_config(first)
    ens = Ensemble(cfg, [t["seed"] for t in trains], lr=[t["lr"] for t in trains],
                   weight_decay=[t["weight_decay"] for t in trains],
                   betas=(tr["beta1"], tr["beta2"]), grad_clip=tr["grad_clip"],
                   dropout=([c["model"]["attn_dropout"] for c in configs],
                            [c["model"]["resid_dropout"] for c in configs]),
                   compile=path == "compiled")
    stacked = StackedWeights(ens.params)
    ema = AveragedModel(stacked, multi_avg_fn=per_model_ema(
        torch.tensor([t["ema_decay"] for t in trains])), use_buffers=True)
    bema = BEMA(stacked, bema_config(tr))
    gens = [torch.Generator().manual_seed(t["seed"] + 1_000_003) for t in trains]
    stream = data_stream(gens, cfg.vocab, task["train_len"] + 1, tr["batch_size"], tr["steps"])
    batch = target_batches(cfg.vocab, tr, [label_generator(t["seed"]) for t in trains])
    histories: list[list[dict]] = [[] for _ in configs]
    at_fit: dict[int, dict] = {}  # run index -> its weights at its fit step (stopping rule)

    def weights(index: int) -> dict:
        return {"raw": stacked.unstacked(cfg, index), "ema": ema.module.unstacked(cfg, index),
                "bema": bema.module().unstacked(cfg, index)}

    from resharpen.experiments.core.progress import Progress, bar

    desc = f"ensemble of {k}"
    lines = Progress(desc, tr["steps"], enabled=progress)
    for step in bar(range(1, tr["steps"] + 1), desc=desc, unit="step", enabled=progress):
        total, losses = ens.loss(batch(next(stream)))
        total.backward()
        ens.step(lr_factor(step - 1, tr))
        ema.update_parameters(stacked)
        bema.update(stacked, step)
        if is_record_step(step, tr["eval_every"], tr["steps"]):
            evaluate = bool(tr["eval_every"]) or step == tr["steps"]
            for i, config in enumerate(configs):
                if i in at_fit:
                    continue
                modules = weights(i) if evaluate else None  # the rule implies evaluate
                row = history_row(config, step, float(losses[i]),
                                  config["train"]["lr"] * lr_factor(step, tr), modules)
                if tr["until_id_invalid_mass"]:
                    row["fit_id_invalid_mass"] = fit_measure(modules["raw"], config)
                histories[i].append(row)
                if fit_reached(config, row):
                    at_fit[i] = modules
            fits = [h[-1].get("fit_id_invalid_mass", h[-1].get("raw", {}).get(
                "id_invalid_mass")) for h in histories if h]
            lines.line(step, **{"mean loss": float(losses.mean()),
                                "worst ID invalid mass": max(fits) if fits else None,
                                "at the fit": f"{len(at_fit)}/{k}"})
            if len(at_fit) == k:
                break
    final = {i: at_fit.get(i) or weights(i) for i in range(k)}
    results = [finish_run(config, final[i], histories[i], start, ensemble=k, path=path)
               for i, config in enumerate(configs)]
    for i, result in enumerate(results):
        result["weights"] = weight_sets(final[i])
    for result in results:  # the group's wall time, shared evenly
        result["summary"]["seconds"] = (time.perf_counter() - start) / k
    return results
