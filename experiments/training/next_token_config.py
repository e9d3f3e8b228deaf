"""The config of a run of next-token training on a registered task: its schema and its reader.
Plain data, no torch: ``resharpen langs run`` and ``langs train`` check every run's config here
and refuse a bad one before they import torch. The keys' meaning:
:mod:`resharpen.experiments.training.next_token`.
"""
from __future__ import annotations

import functools

from resharpen.experiments.training.config import Field, Schema, pick_fields
from resharpen.experiments.training.schema import (FIT_FIELDS, MODEL_FIELDS, TRAIN_FIELDS,
                                                     check_model_shape, check_target)
from resharpen.experiments.tasks.registry import TASKS, get_task

SCHEMA = Schema({
    "task": {
        "name": Field(str, "dyck2", choices=lambda: tuple(TASKS)),  # plug-ins included
        "vocab": Field(int, 0, 0, 4096),  # task parameter (set/multiset complement); 0 = default
        "train_len": Field(int, 40, 1, 4096),
        "eval_len": Field(int, 200, 1, 4096),
        "ignore_pad": Field(bool, True, choices=(False, True)),
    },
    "model": pick_fields(
        MODEL_FIELDS, d_model=64, n_layers=2, n_heads=4, d_head=0, norm="pre", norm_kind="layer",
        mlp="gelu", d_mlp=0, positional="none", attn_dropout=0.0, resid_dropout=0.0,
        init_std=0.02, attn_out_scale=1.0, embed_std=0.0),
    "train": pick_fields(
        TRAIN_FIELDS, steps=2000, batch_size=32, lr=1e-3, min_lr_ratio=0.1, warmup=100,
        schedule="cosine", weight_decay=0.1, beta1=0.9, beta2=0.95, grad_clip=1.0, seed=0,
        ema_decay=0.99, bema_update_freq=1, bema_ema_power=0.5, bema_bias_power=0.2,
        bema_lag=10.0, bema_update_after=0, bema_multiplier=1.0, threads=1, log_every=50,
        target="sampled", labels_per_position=1),
    # the stopping rule (FIT_FIELDS), checked on the raw weights' mean ID invalid mass (and, with
    # until_id_tv, their mean ID total variation) on the evaluation set at every record step; the
    # invalid-mass bar must be below a tenth of a uniform prediction's (uniform_id_invalid_mass)
    "fit": pick_fields(FIT_FIELDS, until_id_invalid_mass=0.0) | {
        # false: measure and record the fit at every record step but train to train.steps (a
        # fixed budget, e.g. the noise grid: averaging windows well inside every run); left out
        # of the normalized config at its default (see make_config)
        "stop": Field(bool, True, choices=(False, True)),
        # where the EMA and BEMA weights are kept: "raw_fit", the raw weights' fit step (the run
        # ends there); "own_fit", each average at the first record step where it meets the fit
        # itself (the run trains on until all three have, or the cap, or averages_patience), so an average is compared with the raw weights at a matched fit; left out of the
        # normalized config at its default (see make_config)
        "averages": Field(str, "raw_fit", choices=("raw_fit", "own_fit")),
        # the fit's second condition: the mean ID total variation distance to the exact
        # legal-next distribution must be <= this too (0 = invalid mass alone), so that a model
        # that avoids illegal tokens by predicting a few always-legal ones is not at the fit;
        # left out of the normalized config at its default (see make_config)
        "until_id_tv": Field(float, 0.0, 0.0, 1.0, hi_open=True),
        # with averages = "own_fit": how long to wait for an average, in multiples of the raw
        # weights' fit step; a run whose raw weights fit at step s ends at the first record step
        # >= patience * s even where an average has not reached its own fit (kept as it ends,
        # not at the fit). 0 = wait to train.steps; left out at its default and where averages
        # are kept at the raw fit (no effect there; see make_config)
        "averages_patience": Field(float, 0.0, 0.0, None),
    },
    "eval": {
        "count": Field(int, 128, 1, 10**6),
        "seed": Field(int, 1234, 0, 2**63 - 1),
        "threshold": Field(float, 0.05, 0.0, 1.0, lo_open=True, hi_open=True),
    },
})


INITIALIZATION_DEFAULTS = {"attn_out_scale": 1.0, "embed_std": 0.0}
"""``model`` keys of the initialization (W_O's scale, the embeddings' std), left out of the
normalized config at these defaults."""


def make_config(overrides: dict | None = None, name: str | None = None) -> dict:
    """A validated run config: the defaults updated by ``overrides`` ({section: {key: value}},
    optionally ``name``). ValueError names an unknown section or key, a bad value, or an
    impossible length."""
    overrides = dict(overrides or {})
    name = overrides.pop("name", name)
    config = SCHEMA.validate(overrides)
    t = config["task"]
    task = build_task(config)
    if t["train_len"] > t["eval_len"]:
        raise ValueError(f"task.train_len = {t['train_len']} exceeds task.eval_len = "
                         f"{t['eval_len']}")
    # the sampler must produce train_len + 1 tokens; evaluation uses eval_len tokens
    task.check_length(t["train_len"] + 1)
    task.check_length(t["eval_len"])
    check_model_shape(config)
    check_target(config["train"])
    target = config["fit"]["until_id_invalid_mass"]
    if target:
        uniform = chance_id_invalid_mass(t["name"], t["vocab"], t["train_len"])
        if not target < 0.1 * uniform:
            raise ValueError(f"fit.until_id_invalid_mass = {target:g} is not below a tenth of "
                             f"the in-distribution invalid mass of a uniform prediction on task "
                             f"{t['name']!r} ({uniform:.4g}): a fit must be well above chance")
    if config["fit"]["stop"]:  # a key added after grids had run: left out at its default, so
        del config["fit"]["stop"]  # their configs (identities, config.json) are unchanged
    elif not target:
        raise ValueError("fit.stop = false records the fit without stopping: it needs "
                         "fit.until_id_invalid_mass > 0 (the level recorded)")
    if not config["fit"]["until_id_tv"]:  # left out at its default, as fit.stop
        del config["fit"]["until_id_tv"]
    elif not target:
        raise ValueError("fit.until_id_tv is the fit's second condition: it needs "
                         "fit.until_id_invalid_mass > 0")
    patience = config["fit"]["averages_patience"]
    if patience and patience < 1:
        raise ValueError(f"fit.averages_patience = {patience:g} waits for the averages after "
                         "the raw weights' fit, in multiples of its step: it must be >= 1 (0 "
                         "waits to train.steps)")
    if not patience or config["fit"]["averages"] != "own_fit":  # no effect: left out
        del config["fit"]["averages_patience"]
    if config["fit"]["averages"] == "raw_fit":  # left out at its default, as fit.stop
        del config["fit"]["averages"]
    elif not stops_at_fit(config):
        raise ValueError("fit.averages = 'own_fit' keeps each average at its own fit step: it "
                         "needs the stopping rule (fit.until_id_invalid_mass > 0, fit.stop = "
                         "true)")
    for key, default in INITIALIZATION_DEFAULTS.items():  # keys added after grids had run:
        if config["model"][key] == default:  # left out at their defaults, as fit.stop
            del config["model"][key]
    config["name"] = name or f"{t['name']}-{config['model']['norm']}-s{config['train']['seed']}"
    return config


def stops_at_fit(config: dict) -> bool:
    """Whether a run ends at its fit (``fit.until_id_invalid_mass`` > 0 and ``fit.stop``, true
    when left out), rather than recording it and training to ``train.steps``."""
    return bool(config["fit"]["until_id_invalid_mass"]) and config["fit"].get("stop", True)


def averages_at_own_fit(config: dict) -> bool:
    """Whether the run keeps its EMA and BEMA weights at their own fit steps
    (``fit.averages = "own_fit"``) rather than at the raw weights' fit step."""
    return config["fit"].get("averages", "raw_fit") == "own_fit"


def target_tag(train: dict) -> str:
    """The training target of a ``[train]`` table in a run name: ``soft``, or ``k<k>`` for k
    sampled labels per position (``k1``: the token that comes next)."""
    return "soft" if train["target"] == "soft" else f"k{train['labels_per_position']}"


def build_task(config: dict):
    t = config["task"]
    params = {"vocab": t["vocab"]} if t["vocab"] else {}
    return get_task(t["name"], **params)


@functools.lru_cache(maxsize=None)
def chance_id_invalid_mass(name: str, vocab: int, train_len: int) -> float:
    """:func:`uniform_id_invalid_mass` of the task ``name`` (vocabulary ``vocab``; 0: the task's
    own) at ``train_len``, computed once per process: a grid's hundreds of run configs share a
    few tasks, and each value samples 256 sequences."""
    return uniform_id_invalid_mass(build_task({"task": {"name": name, "vocab": vocab}}), train_len)


def uniform_id_invalid_mass(task, train_len: int, count: int = 256, seed: int = 0) -> float:
    """The mean invalid mass, over the prefix lengths 1..train_len of ``count`` sampled
    sequences, of the prediction uniform over the task's vocabulary: 1 - |N(prefix)| / |V|
    (positions without a legal token left out). The chance level a stated fit is held against."""
    import numpy as np

    seqs = task.sample(count, train_len, seed)
    sizes = task.legal_next(seqs).sum(axis=-1)
    return float(np.mean(1.0 - sizes[sizes > 0] / task.size))
