"""The config of a Set Complement training run (``experiments/configs/set_complement/``): its
schema and its reader. Plain data, no torch: ``resharpen train`` and ``resharpen sweep`` check a
config here and refuse a bad one before they import torch.

Tables (:data:`SCHEMA`; the keys' meaning: :mod:`resharpen.experiments.set_complement.train`)::

    [task]   vocab, train_len (0 = vocab // 4)
    [model]  the core's [model] table (learned positions: vocab slots)
    [train]  the core's [train] table without log_every; optimizer adamw (default) | sgd,
             momentum (sgd's); converge_window, converge_tolerance (past the fit: train on
             until the ID invalid mass is flat, :func:`resharpen.experiments.set_complement.
             train.converged_at`)
    [fit]    until_id_invalid_mass: the core's stopping rule
    [eval]   per_length, seed, threshold
"""
from __future__ import annotations

from pathlib import Path

from resharpen.experiments.training import config as cfgmod
from resharpen.experiments.training.config import Field, Schema, pick_fields
from resharpen.experiments.training.schema import (FIT_FIELDS, MODEL_FIELDS, TRAIN_FIELDS,
                                                     check_model_shape, check_target)


def _rules(config: dict) -> None:
    """train_len 0 -> vocab // 4 and at most vocab - 1; heads split d_model; warmup <= steps;
    a valid training target and optimizer (:func:`check_optimizer`); the stopping rule needs
    evaluation steps."""
    v = config["task"]["vocab"]
    if config["task"]["train_len"] == 0:
        config["task"]["train_len"] = v // 4
    if config["task"]["train_len"] > v - 1:
        raise ValueError(f"task.train_len = {config['task']['train_len']} must be <= vocab - 1 "
                         f"= {v - 1}")
    check_model_shape(config)
    if config["train"]["warmup"] > config["train"]["steps"]:
        raise ValueError(f"train.warmup = {config['train']['warmup']} exceeds train.steps = "
                         f"{config['train']['steps']}")
    check_target(config["train"])
    check_optimizer(config["train"])
    check_new_keys(config)
    if config["fit"]["until_id_invalid_mass"] > 0 and config["train"]["eval_every"] == 0:
        raise ValueError(f"fit.until_id_invalid_mass = "
                         f"{config['fit']['until_id_invalid_mass']} needs train.eval_every > 0 "
                         "(the rule is checked at the evaluation steps)")


def check_optimizer(train: dict) -> None:
    """``train.optimizer`` adamw (the default) or sgd; ``train.momentum`` is SGD's (ValueError
    when it is set away from its default under adamw). Under adamw both keys are left out of the
    normalized config, so a config written before they existed (a sweep's identity, a run
    folder's config.json) is unchanged and its runs resume."""
    if train["optimizer"] == "adamw":
        if train["momentum"] != TRAIN_FIELDS["momentum"].default:
            raise ValueError(f"train.momentum = {train['momentum']} applies to train.optimizer "
                             "= 'sgd' only (AdamW's momentum is train.beta1)")
        del train["optimizer"], train["momentum"]


NEW_KEY_DEFAULTS = (("model", "attn_out_multiplier", 1.0), ("train", "converge_window", 0),
                    ("train", "converge_tolerance", 0.1))
"""Keys added after sweeps had been run, left out of the normalized config at their
default (:func:`check_new_keys`)."""


def check_new_keys(config: dict) -> None:
    """Each key of :data:`NEW_KEY_DEFAULTS` is dropped from the normalized config when it holds
    its default, so a config written before the key existed (a sweep's identity, a run
    folder's config.json) is unchanged and its runs resume; readers use ``.get(key, default)``.
    ``train.converge_window`` continues training past the fit, so it applies only under the
    stopping rule: with ``fit.until_id_invalid_mass = 0`` (no fit; a fixed-budget config
    derived from a placement file, e.g. the noise grid) both convergence keys are dropped. A
    window holds at least 3 evaluations."""
    tr = config["train"]
    if not config["fit"]["until_id_invalid_mass"]:
        tr["converge_window"] = 0
    window = tr["converge_window"]
    if window:
        if tr["eval_every"] and window < 3 * tr["eval_every"]:
            raise ValueError(f"train.converge_window = {window} holds fewer than 3 evaluations "
                             f"(train.eval_every = {tr['eval_every']})")
    for section, key, default in NEW_KEY_DEFAULTS:
        if key == "converge_tolerance":  # kept with its window, refused without one
            if not window:
                if tr[key] != default:
                    raise ValueError(f"train.converge_tolerance = {tr[key]} applies only with "
                                     "train.converge_window > 0")
                del tr[key]
        elif config[section][key] == default:
            del config[section][key]


SCHEMA = Schema({
    "task": {
        "vocab": Field(int, 64, 4, 4096),
        "train_len": Field(int, 0, 0, 4095),
    },
    "model": pick_fields(
        MODEL_FIELDS, d_model=64, n_layers=1, n_heads=1, d_head=0, norm="none", norm_kind="rms",
        mlp="none", d_mlp=0, positional="none", attn_dropout=0.0, resid_dropout=0.0,
        init_std=0.02, attn_out_scale=1.0, attn_out_multiplier=1.0),
    "train": pick_fields(
        TRAIN_FIELDS, steps=3000, batch_size=32, lr=3e-3, min_lr_ratio=0.1, warmup=100,
        schedule="cosine", weight_decay=0.01, beta1=0.9, beta2=0.98, grad_clip=1.0,
        optimizer="adamw", momentum=0.9, seed=0,
        ema="none", ema_decay=0.999, bema_update_freq=1, bema_ema_power=0.5,
        bema_bias_power=0.2, bema_lag=10.0, bema_update_after=0, bema_multiplier=1.0,
        eval_every=0, threads=1, target="sampled", labels_per_position=1) | {
        # past the fit, train on until the ID invalid mass is flat over this many
        # steps (0 = stop at the fit); flat: its log-linear trend over the window changes it by
        # less than converge_tolerance (set_complement.train.converged_at)
        "converge_window": Field(int, 0, 0, 10**8),
        "converge_tolerance": Field(float, 0.1, 0.0, 1.0, lo_open=True, hi_open=True)},
    "fit": pick_fields(FIT_FIELDS, until_id_invalid_mass=0.0),
    "eval": {
        "per_length": Field(int, 64, 1, 10**6),
        "seed": Field(int, 1234, 0, 2**63 - 1),
        "threshold": Field(float, 0.05, 0.0, 1.0, lo_open=True, hi_open=True),
    },
}, rules=_rules)


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                profile: str = "full", sweep_file: bool = False) -> dict:
    """A Set Complement run config: the file, its base chain, ``[profile.<profile>]``, then the
    ``--set`` overrides (:func:`resharpen.experiments.training.config.load`). ``sweep_file``:
    ``path`` is a sweep file whose base config (model, task, training) is wanted, its sweep
    tables set aside, as a protocol that trains its own runs from a sweep's setting does."""
    return cfgmod.load(path, SCHEMA, overrides, profile, sweep_file=sweep_file)
