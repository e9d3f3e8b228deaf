"""Models built at initialization to meet one statement's premise: the sets the ``*.init``
claims of :mod:`.trained_checks` decide on, and two of them trained for the ``*.trained`` claims
whose premise the package's usual trained models never meet.

The trained set (:func:`resharpen.experiments.dynamics.trained.trained_set`) measures the
package's models at their usual initialization, where three theorems' premises never hold:
the tokens are far smaller than the sphere the norms project to (Thm 4.2 wants radius 1), the
Pre-LN residual norm stays near its initial radius (Thm 4.3(i)'s r ~ t is asymptotic), and no
Post-LN layer comes near collapse (arXiv 2608.09417's Thm 3.6). A premise set changes only the
initialization, so that the premise holds, and keeps everything else of the trained set's
models (attention only, RMSNorm, d_model, heads, learned positions, W_Q, W_K, W_V of std
init_std = 1/sqrt(3 d), the measurement batch):

``unit_tokens`` (Thm 4.2, :func:`~.trained_checks.first_layer_order`)
    W_E and W_pos of std 1/sqrt(2), so a token x_0 = W_E[t] + W_pos[i] has E|x_0|^2 = d: radius
    sqrt(d), the radius R of RMSNorm's sphere (nGPT's embeddings are on its unit sphere
    either way); the schemes the theorem orders, at the profile's depths.
``small_embedding`` (Thm 4.3(i), :func:`~.trained_checks.preln_norm_growth`)
    W_E and W_pos of std init_std / 20, so that the growth of the Pre-LN residual stream
    dominates its initial radius (r_L - r_0 >= 20 r_0); Pre-LN's first attention sees
    N(x_0), the same input as at the usual initialization. 24 layers.
``paper_init`` (Thm 3.6, :func:`~.trained_checks.backward_gain_high_similarity`)
    arXiv 2608.09417's own initialization: W_O of std init_std like W_V (s = |W_V W_O|_F^2 / d
    = 1/9), without the package's 1/sqrt(2L) factor (``attn_out_scale`` = sqrt(2L) cancels
    it); 48 layers, where Post-LN layers reach input similarities above 0.9.
``paper_init_many_seeds`` (Stage I's recursion, :func:`~.trained_checks.recursion_at_init`)
    arXiv 2608.09417's initialization as ``paper_init``, for Post-LN and Pre-LN, 48 layers and
    24 seeds per task: at the package's initialization Post-LN's t_sim hardly moves (a flat
    curve matches any constant prediction), and the recursion is a statement about the mean
    over models, whose Monte Carlo error the check measures from the seeds.
``terminal_depth`` (Thm 4.1, 4.3's terminal rates, :func:`~.trained_checks.terminal_order`)
    arXiv 2608.09417's initialization with W_O twice as large (4 x its s, the variance of its
    Fig. 1), for the schemes the terminal order compares, 48 layers, 12 seeds per task (seeds
    12-23: seeds 0-2 of the same models were looked at while the test was designed): at the
    paper's own s the full-size Post-LN stacks reach a mean pairwise cosine of 0.9 in 5 of 6
    stacks, and then only over their last 3-14 layers, too few to read how the decay's rate
    changes; at 4 x s from about layer 10.
``paper_init_4x`` (no claim: the alternative the design weighed)
    the same with W_O twice as large, 4 x the paper's s (its Fig. 1's variance); measured so
    that a reader can see what the choice of ``paper_init`` left out.

Each set is measured at init (nothing trains: seconds of CPU) by :func:`~.trained.measure` in
float64 exactly as the trained set is, and cached and archived beside it
(``out/dyn_trained/<profile>/<task>_<scheme>_L<depth>_<set>_init.json``, keyed by the trained
set's group key and the set's initialization). ``premise_set(..., trained=True)`` trains a set's
models (its ``trained_seeds``) as the trained set is, to the fit or the cap, and measures each
at init and at its end (``..._<set>_trained.json``, keyed by the set's own run configs):
``unit_tokens`` for the first-layer order after training, ``paper_init`` for the backward
contraction after training (:data:`.trained_readers.TRAINED_PREMISE_SETS`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from resharpen.experiments.dynamics.trained_plan import (ARCHIVED, OUT, TASKS, cached_group,
                                                         group_configs, group_key, group_lock,
                                                         sizes)
from resharpen.experiments.model.schemes import by_dynamics_name
from resharpen.theory.dynamics.schemes import (FIRST_LAYER_FAST, FIRST_LAYER_SLOW,
                                               TERMINAL_FASTEST, TERMINAL_SLOWER)


@dataclass(frozen=True)
class PremiseSet:
    """A premise set: ``schemes`` x the trained set's tasks x ``depths`` (None: the
    profile's) x ``seeds`` (trained: ``trained_seeds``), with the embeddings' std :meth:`embedding_std` (None: init_std), W_O
    without the 1/sqrt(2L) factor when ``paper_w_o``, and W_O further x ``w_o_factor``."""

    premise: str
    schemes: tuple[str, ...]
    depths: tuple[int, ...] | None
    seeds: tuple[int, ...] = (0, 1, 2)
    embed_factor: float | None = None  # embed_std = embed_factor x init_std
    embed_std: float | None = None  # or an absolute std
    paper_w_o: bool = False
    w_o_factor: float = 1.0  # W_O further x this
    trained_seeds: tuple[int, ...] | None = None  # the seeds trained (None: ``seeds``)

    def embedding_std(self, init_std: float) -> float | None:
        """The std of W_E and W_pos for a model whose other weights have std ``init_std``."""
        if self.embed_std is not None:
            return self.embed_std
        return None if self.embed_factor is None else self.embed_factor * init_std

    def describe(self, trained: bool = False) -> str:
        """The set's initialization, for a claim's detail (``trained``: with the seeds
        trained)."""
        parts = []
        if self.embed_std is not None:
            parts.append(f"W_E, W_pos of std {self.embed_std:.3g}")
        if self.embed_factor is not None:
            parts.append(f"W_E, W_pos of std init_std x {self.embed_factor:g}")
        if self.paper_w_o:
            parts.append("W_O of std init_std (no 1/sqrt(2L))")
        if self.w_o_factor != 1.0:
            parts.append(f"W_O x {self.w_o_factor:g}")
        depths = "the profile's depths" if self.depths is None else \
            "/".join(map(str, self.depths)) + " layers"
        chosen = self.trained_seeds or self.seeds if trained else self.seeds
        seeds = f"{len(chosen)} seed{'s' if len(chosen) > 1 else ''} per task" + (
            f" ({chosen[0]}-{chosen[-1]})" if chosen[0] != 0 else "")
        return f"{', '.join(parts)}; {depths}; {seeds}"


def _names(dynamics_names) -> tuple[str, ...]:
    return tuple(by_dynamics_name(n).name for n in dynamics_names)


SETS = {
    "unit_tokens": PremiseSet(
        premise="Thm 4.2: tokens of radius 1 in the units of the norm's sphere",
        schemes=_names(FIRST_LAYER_FAST) + _names(FIRST_LAYER_SLOW), depths=None,
        embed_std=1.0 / math.sqrt(2.0)),
    "small_embedding": PremiseSet(
        premise="Thm 4.3(i): the Pre-LN norm's growth dominates its initial radius",
        schemes=("pre",), depths=(24,), embed_factor=1.0 / 20.0),
    "paper_init": PremiseSet(
        premise="Thm 3.6: Post-LN layers of high input similarity",
        schemes=("post", "mixln"), depths=(48,), paper_w_o=True),
    "paper_init_many_seeds": PremiseSet(
        premise="Stage I's recursion: a t_sim that rises, averaged over enough models",
        schemes=("post", "pre"), depths=(48,), seeds=tuple(range(24)), paper_w_o=True),
    "terminal_depth": PremiseSet(
        premise="Thm 4.1, 4.3's terminal rates: stacks that stay near consensus for many layers",
        schemes=_names((TERMINAL_FASTEST,) + TERMINAL_SLOWER), depths=(48,),
        seeds=tuple(range(12, 24)), paper_w_o=True, w_o_factor=2.0),
    "paper_init_4x": PremiseSet(
        premise="Thm 3.6 at 4 x the paper's s (no claim reads it)",
        schemes=("post", "mixln"), depths=(48,), paper_w_o=True, w_o_factor=2.0),
}
"""set name -> its definition (the module docstring says why each)."""


def set_sizes(spec: PremiseSet, profile: str, trained: bool = False):
    """The trained set's sizes at ``profile`` (:func:`~.trained_plan.sizes`) with the set's seeds
    (``trained``: the seeds it trains)."""
    return replace(sizes(profile), seeds=spec.trained_seeds or spec.seeds if trained
                   else spec.seeds)


def set_run_config(spec: PremiseSet, config: dict) -> dict:
    """A premise set's run config from the trained set's ``config`` (:func:`~.trained.
    group_configs`): the embeddings' std of ``spec`` and W_O's init scaled by sqrt(2L)
    (cancelling the model's 1/sqrt(2L) factor) when ``spec.paper_w_o``, times
    ``spec.w_o_factor``; nothing else changed."""
    from resharpen.experiments.training.next_token_config import make_config

    m = config["model"]
    scale = (math.sqrt(2 * m["n_layers"]) if spec.paper_w_o else 1.0) * spec.w_o_factor
    embed = spec.embedding_std(m["init_std"])
    model = {**m, "attn_out_scale": m.get("attn_out_scale", 1.0) * scale,
             "embed_std": embed or 0.0}
    return make_config({**{k: v for k, v in config.items() if k != "name"}, "model": model},
                       name=config["name"])


def set_configs(profile: str, name: str, task: str, scheme: str, depth: int,
                trained: bool = False) -> list[dict]:
    """The run configs of one group of premise set ``name`` (``trained``: of its trained
    seeds)."""
    spec = SETS[name]
    return [set_run_config(spec, c) for c in
            group_configs(set_sizes(spec, profile, trained), task, scheme, depth)]


def measure_group(profile: str, name: str, task: str, scheme: str, depth: int,
                  trained: bool = False) -> list[dict]:
    """The runs of one group of premise set ``name``, measured at initialization: each
    {seed, fit_reached False, fit_step None, steps 0, diverged False, init, trained None};
    ``trained``: trained as the trained set is (:func:`~.trained.train_group_measured`, to the
    fit or the cap) and measured at init and at the end."""
    import torch

    from resharpen.experiments.dynamics.trained import (measure64, measurement_batch,
                                                        train_group_measured)
    from resharpen.experiments.model.transformer import Transformer
    from resharpen.experiments.training.loop import model_config
    from resharpen.experiments.training.next_token_config import build_task

    sz = set_sizes(SETS[name], profile, trained)
    configs = set_configs(profile, name, task, scheme, depth, trained)
    if trained:
        return train_group_measured(sz, task, scheme, depth, configs=configs)
    torch.set_num_threads(1)
    vocab = build_task(configs[0]).size
    batch = measurement_batch(configs[0], sz)
    runs = []
    for config in configs:
        torch.manual_seed(config["train"]["seed"])
        runs.append({"seed": config["train"]["seed"], "fit_reached": False, "fit_step": None,
                     "steps": 0, "diverged": False,
                     "init": measure64(Transformer(model_config(config, vocab, sz.train_len)),
                                       batch),
                     "trained": None})
    return runs


def set_group(profile: str, name: str, task: str, scheme: str, depth: int,
              trained: bool = False) -> tuple[str, str]:
    """(cache key, file name) of one group of premise set ``name``: at init, the trained
    set's group key (:func:`~.trained_plan.group_key`) and the set's initialization, and
    ``<task>_<scheme>_L<depth>_<name>_init.json``; ``trained``, the key of the set's own run
    configs, and ``<task>_<scheme>_L<depth>_<name>_trained.json``."""
    sz = set_sizes(SETS[name], profile, trained)
    if trained:
        return (group_key(sz, set_configs(profile, name, task, scheme, depth, True)) + f"-{name}",
                f"{task}_{scheme}_L{depth}_{name}_trained.json")
    key = group_key(sz, group_configs(sz, task, scheme, depth)) + f"-{name}-{SETS[name].describe()}"
    return key, f"{task}_{scheme}_L{depth}_{name}_init.json"


def premise_set(profile: str, name: str, out: str | Path | None = OUT,
                archive: str | Path | None = ARCHIVED, cached_only: bool = False,
                trained: bool = False, progress: bool = False,
                only: dict | None = None) -> list[dict]:
    """Every run of premise set ``name`` at ``profile``'s sizes, each {task, scheme, depth,
    seed, premise_set, init, ...} as :func:`~.trained.trained_set`'s runs: read from
    ``out/<profile>/<task>_<scheme>_L<depth>_<name>_init.json`` when its key matches (at full
    size, else from the archive's copy), else measured and written there (``out`` None:
    nothing read or written). ``cached_only`` (the figures): read only, nothing created or
    written, and LookupError naming the first group neither holds. ``trained``: the set trained
    as the trained set is, each run measured at init and at its end
    (``..._<name>_trained.json``); ``progress``: a line per group trained or measured; ``only``
    ({"task" | "scheme" | "depth": allowed values}): just those groups."""
    from resharpen.experiments.common.io import atomic_write_json, ensure_writable_dir

    if name not in SETS:
        raise ValueError(f"premise set {name!r} is not one of {', '.join(SETS)}")
    spec, sz = SETS[name], set_sizes(SETS[name], profile, trained)
    folder = None if out is None else (Path(out) / profile if cached_only
                                       else ensure_writable_dir(Path(out) / profile))
    archived = None if folder is None or archive is None or profile != "full" else Path(archive)
    runs = []
    only = only or {}
    for task in TASKS:
        for scheme in spec.schemes:
            for depth in spec.depths or sz.depths:
                if any(value not in only.get(field, (value,)) for field, value in
                       (("task", task), ("scheme", scheme), ("depth", depth))):
                    continue
                key, file = set_group(profile, name, task, scheme, depth, trained)
                path = None if folder is None else folder / file
                kept = None if archived is None else archived / file
                group = cached_group(path, key, kept)
                if group is None and cached_only:
                    raise LookupError(f"no {'trained' if trained else 'measured'} group {task} "
                                      f"{scheme} L={depth} of premise set {name} in {folder} or "
                                      "the archive")
                if group is None:
                    with group_lock(path):
                        group = cached_group(path, key, kept)
                        if group is None:
                            if progress:
                                print(f"{'training' if trained else 'measuring'} premise set "
                                      f"{name}: {task} {scheme} L={depth} ...", flush=True)
                            group = measure_group(profile, name, task, scheme, depth, trained)
                            if path is not None:
                                atomic_write_json(path, {"key": key, "runs": group})
                runs += [{"task": task, "scheme": scheme, "depth": depth, "premise_set": name,
                          **r} for r in group]
    return runs
