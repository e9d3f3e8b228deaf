"""What the trained-dynamics set is, without torch: its tasks and schemes, its sizes per
profile, each group's run configs and cache key, and where the cache lives
(``out/dyn_trained/<profile>/``, archived at full size in ``results/full/dyn_trained``).

:mod:`.trained` trains and measures the set; this module only describes it, so that the command
line and the premise sets (:mod:`.premise_sets`) can check a request against it, and refuse a
bad one, before torch is loaded.
"""
from __future__ import annotations

import hashlib
import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.model import schemes
from resharpen.experiments.training.archive import cache_folder
from resharpen.experiments.training.config import output_folder
from resharpen.theory.dynamics.schemes import (FIRST_LAYER_FAST, FIRST_LAYER_SLOW,
                                               TERMINAL_FASTEST, TERMINAL_SLOWER)

SCHEMES = schemes.names(trained_dynamics=True)
"""The schemes the study trains and measures: the registry's ``trained_dynamics`` entries."""
TASKS = ("tomita3", "dyck1")  # bounded (regular) and unbounded (counter)
FIT_FRACTION = 0.09  # the fit: ID invalid mass <= 0.09 x the uniform prediction's (< 0.1 x)
VERSION = 2  # bump when a measurement changes: the cache is keyed by it
CACHE = "dyn_trained"
OUT = output_folder(CACHE)
ARCHIVED = cache_folder(CACHE)
"""The archived full-size set (``results/full/dyn_trained``): read, never written, by
:func:`~.trained.trained_set` at full size for the groups ``out/`` lacks."""


@dataclass(frozen=True)
class Sizes:
    """The sizes of a trained set (a profile's: :func:`sizes`): the models (d_model, n_heads,
    the depths), their training (train_len tokens, batch_size, lr, warmup, the cap steps, a
    record every log_every steps, eval_count evaluation sequences), the seeds, the measurement
    batch (measure_count sequences drawn with measure_seed) and the schemes trained (every
    scheme is measured at initialization)."""

    d_model: int
    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    train_len: int
    steps: int  # the cap; the fit usually ends a run earlier
    batch_size: int
    lr: float
    warmup: int
    log_every: int
    n_heads: int
    eval_count: int
    measure_count: int  # sequences of the measurement batch
    measure_seed: int
    trained_schemes: tuple[str, ...]


def compared_schemes() -> tuple[str, ...]:
    """The schemes of :data:`SCHEMES` that the dynamics paper's orderings name
    (:mod:`resharpen.theory.dynamics.schemes`: FIRST_LAYER_FAST, FIRST_LAYER_SLOW,
    TERMINAL_FASTEST, TERMINAL_SLOWER), which the ``dyn.trained.*`` claims compare trained."""
    named = {*FIRST_LAYER_FAST, *FIRST_LAYER_SLOW, TERMINAL_FASTEST, *TERMINAL_SLOWER}
    return tuple(s for s in SCHEMES if schemes.get(s).dynamics_name in named)


def sizes(profile: str) -> Sizes:
    """The sizes of ``profile``'s trained set, chosen by :func:`~resharpen.experiments.common.
    profiles.pick`; quick trains only the schemes a claim compares (the others: init only)."""
    return Sizes(d_model=pick(profile, quick=32, full=64),
                 depths=pick(profile, quick=(4,), full=(8, 24)), seeds=(0, 1, 2),
                 train_len=pick(profile, quick=16, full=32),
                 steps=pick(profile, quick=300, full=1000), batch_size=16, lr=3e-3, warmup=20,
                 log_every=pick(profile, quick=20, full=25), n_heads=4,
                 eval_count=pick(profile, quick=64, full=128),
                 measure_count=pick(profile, quick=16, full=32), measure_seed=4321,
                 trained_schemes=pick(profile, quick=compared_schemes(), full=SCHEMES))


def group_configs(sz: Sizes, task: str, scheme: str, depth: int) -> list[dict]:
    """The run configs of one group (every seed of ``sz``): the language trainer's."""
    from resharpen.experiments.training.next_token_config import (build_task, make_config,
                                                        uniform_id_invalid_mass)

    base = {"task": {"name": task, "train_len": sz.train_len,
                     "eval_len": sz.train_len},
            "model": {"d_model": sz.d_model, "n_layers": depth, "n_heads": sz.n_heads,
                      "norm": scheme, "norm_kind": "rms", "mlp": "none",
                      "positional": "learned", "init_std": 1.0 / math.sqrt(3 * sz.d_model)},
            "train": {"steps": sz.steps, "batch_size": sz.batch_size,
                      "lr": sz.lr, "warmup": sz.warmup, "log_every": sz.log_every,
                      "target": "soft", "threads": 1},
            "eval": {"count": sz.eval_count}}
    probe = make_config(base)
    fit = FIT_FRACTION * uniform_id_invalid_mass(build_task(probe), sz.train_len)
    return [make_config({**base, "train": {**base["train"], "seed": s},
                         "fit": {"until_id_invalid_mass": fit}}) for s in sz.seeds]


def group_key(sz: Sizes, configs: list[dict]) -> str:
    from resharpen.experiments.common.json_text import dumps_json

    # the group's own configs and sizes: not the list of the other schemes trained, so that a
    # scheme added to the registry leaves every other group's cache valid
    fields = {k: v for k, v in asdict(sz).items() if k != "trained_schemes"}
    text = dumps_json({"version": VERSION, "profile": fields, "configs": configs},
                      indent=None, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_group(path: Path | None, key: str, archived: Path | None = None) -> list | None:
    """The runs of the cached group file ``path`` when its key matches, else of its archived
    copy ``archived`` (either form, plain or ``.gz``; read only) when that key matches, else
    None."""
    from resharpen.experiments.common.stored import read_json, stored_exists

    for source in (path, archived):
        if source is None or not stored_exists(source):
            continue
        cached = read_json(source, "trained-set file")
        if isinstance(cached, dict) and cached.get("key") == key:
            return cached["runs"]
    return None


@contextmanager
def group_lock(path: Path | None):
    """An exclusive lock (fcntl) on ``<path>.lock`` while a group is trained, so that ledger
    workers that need the same group wait for one of them and then read its file."""
    if path is None:
        yield
        return
    from resharpen.experiments.common.locks import hold_lock

    with hold_lock(path.with_name(path.name + ".lock"), "", wait=True):  # never follows a link
        yield


__all__ = ["SCHEMES", "TASKS", "FIT_FRACTION", "VERSION", "CACHE", "OUT", "ARCHIVED", "Sizes",
           "compared_schemes", "sizes", "group_configs", "group_key", "cached_group", "group_lock"]
