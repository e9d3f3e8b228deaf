"""The ``[model]``, ``[train]`` and ``[fit]`` tables every trainer reads, with their checks: plain
data, no torch, so that a command checks a config and refuses a bad one before it imports torch.

:data:`MODEL_FIELDS`, :data:`TRAIN_FIELDS` and :data:`FIT_FIELDS` are the keys, types, defaults
and ranges
(:class:`resharpen.experiments.training.config.Field`); a trainer picks the keys it uses and its
defaults with :func:`resharpen.experiments.training.config.pick_fields`. :class:`TrainingTarget` is
``train.target`` and ``train.labels_per_position`` (their meaning:
:mod:`resharpen.experiments.training.targets`). The names of the norm placements and kinds come from
the scheme registry (:mod:`resharpen.experiments.model.schemes`). ``model.positional``: none, learned (absolute slots) or rope (rotary);
``model.norm_gain``: learned, or frozen at 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from resharpen.experiments.model.schemes import FIRST as FIRST_PLACEMENTS  # noqa: F401
from resharpen.experiments.model.schemes import NORM_GAINS, NORM_KINDS, names
from resharpen.experiments.training.config import Field

NORM_PLACEMENTS = names(builtin=True)
"""The package's own normalization schemes, in registry order (:mod:`resharpen.experiments.model.schemes`;
``model.norm`` accepts every registered scheme, plug-ins included)."""
POSITIONAL = ("none", "learned", "rope")
TARGETS = ("sampled", "soft")
AVERAGING_KINDS = ("none", "ema", "bema")  # train.ema: the averaging of the primary weights
OPTIMIZERS = ("adamw", "sgd")  # train.optimizer (the engine's MemberAdamW / MemberSGD)

MODEL_FIELDS: dict[str, Field] = {
    "d_model": Field(int, 64, 1, 4096),
    "n_layers": Field(int, 1, 1, 48),
    "n_heads": Field(int, 1, 1, 64),
    "d_head": Field(int, 0, 0, 4096),  # 0 = d_model // n_heads
    "norm": Field(str, "none", choices=names),  # every registered scheme, read when checked
    "norm_kind": Field(str, "rms", choices=NORM_KINDS),
    "norm_gain": Field(str, "learned", choices=NORM_GAINS),
    "mlp": Field(str, "none", choices=("none", "gelu", "swiglu")),
    "d_mlp": Field(int, 0, 0, 65536),  # 0 = 4 d_model
    "positional": Field(str, "none", choices=POSITIONAL),
    "attn_dropout": Field(float, 0.0, 0.0, 1.0, hi_open=True),
    "resid_dropout": Field(float, 0.0, 0.0, 1.0, hi_open=True),
    "init_std": Field(float, 0.02, 0.0, None, lo_open=True),
    "attn_out_scale": Field(float, 1.0, 0.0, None, lo_open=True),  # W_O init x this
    # the init std of the token and position embeddings W_E, W_pos (0: init_std, the model's
    # default): the size of the tokens entering the first block
    "embed_std": Field(float, 0.0, 0.0, None),
    # a fixed, untrained factor on the attention output (ModelConfig.attn_out_multiplier)
    "attn_out_multiplier": Field(float, 1.0, 0.0, None, lo_open=True),
}
"""The ``[model]`` table, the same for every trainer (defaults differ)."""

TRAIN_FIELDS: dict[str, Field] = {
    "steps": Field(int, 3000, 1, 10**8),
    "batch_size": Field(int, 32, 1, 65536),
    "lr": Field(float, 3e-3, 0.0, 10.0, lo_open=True),
    "min_lr_ratio": Field(float, 0.1, 0.0, 1.0),
    "warmup": Field(int, 100, 0, 10**8),
    "schedule": Field(str, "cosine", choices=("cosine", "linear", "constant")),
    "weight_decay": Field(float, 0.01, 0.0, 10.0),
    "beta1": Field(float, 0.9, 0.0, 1.0, hi_open=True),
    "beta2": Field(float, 0.98, 0.0, 1.0, hi_open=True),
    "grad_clip": Field(float, 1.0, 0.0, None),  # 0 = off
    "optimizer": Field(str, "adamw", choices=OPTIMIZERS),  # adamw | sgd (with momentum)
    "momentum": Field(float, 0.9, 0.0, 1.0, hi_open=True),  # SGD's momentum (sgd only)
    "seed": Field(int, 0, 0, 2**63 - 1),
    "ema": Field(str, "none", choices=AVERAGING_KINDS),  # the primary weights of a run
    "ema_decay": Field(float, 0.999, 0.0, 1.0, lo_open=True, hi_open=True),
    "bema_update_freq": Field(int, 1, 1, 10**8),
    "bema_ema_power": Field(float, 0.5, 0.0, 10.0),
    "bema_bias_power": Field(float, 0.2, 0.0, 100.0),
    "bema_lag": Field(float, 10.0, 0.0, None, lo_open=True),
    "bema_update_after": Field(int, 0, 0, 10**8),
    "bema_multiplier": Field(float, 1.0, 0.0, None),
    "eval_every": Field(int, 0, 0, 10**8),  # evaluate the weights every k steps (0 = at the end)
    "log_every": Field(int, 50, 1, 10**8),  # a history row every k steps
    "threads": Field(int, 1, 0, 1024),  # torch threads (0 = leave torch's setting)
    "target": Field(str, "sampled", choices=TARGETS),  # what a position is scored against
    "labels_per_position": Field(int, 1, 1, 4096),  # k sampled labels (target = "sampled")
}
"""The ``[train]`` keys; each trainer reads the schedule and optimizer keys and those it uses."""

FIT_FIELDS: dict[str, Field] = {
    # the stopping rule: a run ends at the first record step whose raw weights' mean
    # in-distribution invalid mass is <= this (0 = off; train.steps is the cap)
    "until_id_invalid_mass": Field(float, 0.0, 0.0, 1.0, hi_open=True),
}
"""The ``[fit]`` table: the stated in-distribution fit at which runs are compared, one key for
every trainer (a trainer adds the keys of its own that refine the rule)."""


def stored_config(config: dict) -> dict:
    """A run config read from a results file (a run's config.json, a sweep identity's base), in
    today's spelling. Set Complement results written before the stopping rule had one key for
    every trainer hold it as ``train.until_id_invalid_mass``; it moves to
    ``fit.until_id_invalid_mass`` (a new dict; the file is left as it is), so that those runs
    still count as finished and their readers find the rule where new runs keep it. Any other
    config is returned as it is."""
    train = config.get("train")
    if not isinstance(train, dict) or "until_id_invalid_mass" not in train:
        return config
    fit = config.get("fit") if isinstance(config.get("fit"), dict) else {}
    return {**config, "train": {k: v for k, v in train.items() if k != "until_id_invalid_mass"},
            "fit": {**fit, "until_id_invalid_mass": train["until_id_invalid_mass"]}}


def check_model_shape(config: dict) -> None:
    """ValueError unless the heads split ``d_model`` (when ``model.d_head`` is 0)."""
    m = config["model"]
    if m["d_head"] == 0 and m["d_model"] % m["n_heads"]:
        raise ValueError(f"model.d_model = {m['d_model']} is not divisible by model.n_heads = "
                         f"{m['n_heads']}; set model.d_head")


@dataclass(frozen=True)
class TrainingTarget:
    """``train.target`` and ``train.labels_per_position`` of a config (the losses they name:
    :mod:`resharpen.experiments.training.targets`)."""

    kind: str = "sampled"
    labels: int = 1

    def __post_init__(self) -> None:
        if self.kind not in TARGETS:
            raise ValueError(f"train.target = {self.kind!r} is not one of {', '.join(TARGETS)}")
        if isinstance(self.labels, bool) or not isinstance(self.labels, int) or self.labels < 1:
            raise ValueError(f"train.labels_per_position = {self.labels!r} must be an integer "
                             ">= 1")
        if self.kind == "soft" and self.labels != 1:
            raise ValueError(f"train.labels_per_position = {self.labels} applies to "
                             "train.target = 'sampled' only; the soft target is exact (set "
                             "labels_per_position = 1)")

    @classmethod
    def of(cls, train: dict) -> "TrainingTarget":
        """The target of a validated ``[train]`` table (sampled, 1 label where it has no keys)."""
        return cls(train.get("target", "sampled"), train.get("labels_per_position", 1))

    @property
    def needs_exact(self) -> bool:
        """Whether batches need p* (soft, or labels beyond the sequence's own)."""
        return self.kind == "soft" or self.labels > 1


def check_target(train: dict) -> None:
    """ValueError unless the ``[train]`` table's target keys are a valid combination."""
    TrainingTarget.of(train)
