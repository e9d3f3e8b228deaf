"""Training demonstration of Post-Norm collapse at CPU size (arXiv 2608.09417, Sec. 4, Figs 3-6).

A deep decoder (:class:`resharpen.experiments.model.transformer.Transformer`, RMSNorm, SwiGLU with
d_ff = 3 d, learned positions, weights N(0, 1/(3 d)) as in the paper, the model's usual extra
1/sqrt(2 L) on the output projections W_O and W_out) is trained by the training core
(:mod:`resharpen.experiments.training.loop`) with AdamW (0.9, 0.95), weight decay 0.1, gradient
clipping 1.0 and a constant learning rate without warm-up on the Zipf-Markov stream of
:mod:`resharpen.experiments.collapse.data`. Every step logs

    loss, L_freq(batch) (entropy of the batch's label frequencies), t_sim of the final hidden
    state and of every block's output, ||dL/dX_l|| on the residual stream entering every block,
    the parameter-gradient norm of every block and, for Post-Norm, Theorem 3.6's contraction
    factor c_k of every sublayer (:func:`contraction_factors`),

and a run stops at the first step whose loss is not finite.

The paper's picture: at high learning rates Post-Norm collapses (t_sim -> 1, loss pinned to
L_freq, early-layer gradients falling by orders of magnitude), at low rates it trains; Pre-Norm
is the control.

Config (:data:`SCHEMA`)::

    [task]   vocab, train_len (tokens per training sequence), zipf (the stream's exponent)
    [model]  the core's [model] table: norm post | pre; d_mlp and init_std default to the
             paper's 3 d_model and 1/sqrt(3 d_model)
    [train]  the core's schedule and optimizer keys (constant rate, no warm-up by default);
             threads 0 leaves torch's setting

The sweep file ``experiments/configs/collapse/train.toml`` adds ``norms`` and ``lrs`` (one run
per pair) and the ``[profile.quick]`` sizes. :func:`sweep` runs it; results go to
``out/collapse_train/<run>/`` (config.json, metrics.jsonl, summary.json, written atomically;
finished runs are skipped).
"""
from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.collapse.data import (ZipfMarkovStreams, markov_entropy_rate,
                                                 stationary, zipf_markov_matrix)
from resharpen.experiments.collapse.detect import detect_collapse
from resharpen.experiments.training.config import (CONFIG_DIR, Field, Schema, deep_merge,
                                               output_folder, parse_sets, pick_fields, resolve)
from resharpen.experiments.training.archive import ARCHIVE_ROOT
from resharpen.experiments.training.loop import fit_members, members_state, save_run, seeded_model
from resharpen.experiments.training.schema import MODEL_FIELDS, TRAIN_FIELDS, check_model_shape

NORMS = ("post", "pre")
SWEEP_FILE = CONFIG_DIR / "collapse" / "train.toml"
SWEPT = (("model", "norm"), ("train", "lr"), ("train", "seed"))
OUT = output_folder("collapse_train")
ARCHIVED = ARCHIVE_ROOT / "collapse_train"
"""The archived full-size runs (``results/full/collapse_train/<run>/``, compressed,
:func:`resharpen.experiments.training.archive.pack_runs`): read in place, never written, for a
run ``out/`` has not finished."""
ENSEMBLE = 16  # most runs of one norm trained as one batched ensemble
DEMO_RATES = {"post@hi": ("post", 3e-2), "post@lo": ("post", 3e-3), "pre@hi": ("pre", 3e-2)}
"""The arms of the collapse demonstration (claim ``collapse.training_collapse``): Post-Norm at
a rate where it collapses, and its two controls, Post-Norm at a tenth of it and Pre-Norm at it."""
DEMO_SEEDS = range(5)  # 5 pairs: the fewest stats.paired decides on


def _rules(config: dict) -> None:
    """Post-Norm or Pre-Norm only; the heads split d_model."""
    if config["model"]["norm"] not in NORMS:
        raise ValueError(f"model.norm = {config['model']['norm']!r} is not allowed in the "
                         f"collapse demonstration; allowed: {', '.join(NORMS)}")
    check_model_shape(config)


SCHEMA = Schema({
    "task": {
        "vocab": Field(int, 64, 2, 4096),
        "train_len": Field(int, 64, 1, 4096),
        "zipf": Field(float, 1.2, 0.0, None),
    },
    "model": pick_fields(
        MODEL_FIELDS, d_model=32, n_layers=24, n_heads=2, d_head=0, norm="post",
        norm_kind="rms", mlp="swiglu", d_mlp=0, positional="learned", attn_dropout=0.0,
        resid_dropout=0.0, init_std=0.02),  # make_config: d_mlp 3 d, init_std 1/sqrt(3 d)
    "train": pick_fields(
        TRAIN_FIELDS, steps=300, batch_size=8, lr=1e-3, min_lr_ratio=0.1, warmup=0,
        schedule="constant", weight_decay=0.1, beta1=0.9, beta2=0.95, grad_clip=1.0, seed=0,
        threads=0),
}, rules=_rules)


def run_name(config: dict) -> str:
    """``<norm>_L<layers>_d<width>_lr<lr>_s<seed>``."""
    m, tr = config["model"], config["train"]
    return f"{m['norm']}_L{m['n_layers']}_d{m['d_model']}_lr{tr['lr']:g}_s{tr['seed']}"


def make_config(overrides: dict | None = None) -> dict:
    """A validated run config: the defaults updated by ``overrides`` ({section: {key: value}}),
    with the paper's d_mlp = 3 d_model and init_std = 1/sqrt(3 d_model) unless given."""
    raw = copy.deepcopy(overrides or {})
    raw.pop("name", None)
    model = raw.setdefault("model", {})
    d = model.get("d_model", SCHEMA.sections["model"]["d_model"].default) \
        if isinstance(model, dict) else None
    if isinstance(d, int) and not isinstance(d, bool) and d >= 1:
        model.setdefault("d_mlp", 3 * d)
        model.setdefault("init_std", 1.0 / math.sqrt(3 * d))
    config = SCHEMA.validate(raw)
    config["name"] = run_name(config)
    return config


def load_sweep(profile: str, path: str | Path = SWEEP_FILE) -> dict:
    """{name, norms, lrs, base}: the sweep file for ``profile`` (``base``: its [task], [model]
    and [train] tables, unvalidated: :func:`make_config` derives the paper's widths). The file
    is in the one sweep format of every slice (:func:`resharpen.experiments.training.config.
    load_sweep`); here its ``[search]`` must grid ``model.norm`` and ``train.lr`` and nothing
    else (every run's seed is the sweep's ``--seed``)."""
    raw = resolve(path, SCHEMA, profile=profile)
    space = raw.get("search", {})
    if set(space) != {"model.norm", "train.lr"} or not all(
            isinstance(spec, dict) and set(spec) == {"grid"} and isinstance(spec["grid"], list)
            and spec["grid"] for spec in space.values()):
        raise ValueError(f"[search] in {str(path)!r} must grid exactly model.norm and train.lr "
                         "(\"model.norm\" = {{ grid = [...] }}), got "
                         f"{sorted(space) or 'nothing'}")
    stray = sorted(set(raw.get("sweep", {})) - {"ensemble"})
    if stray:
        raise ValueError(f"sweep.{stray[0]} in {str(path)!r}: the collapse sweep takes only "
                         "sweep.ensemble")
    base = {section: raw.get(section, {}) for section in SCHEMA.sections}
    return {"name": raw["name"], "norms": space["model.norm"]["grid"],
            "lrs": space["train.lr"]["grid"], "base": base,
            "ensemble": raw.get("sweep", {}).get("ensemble", ENSEMBLE)}


def profile_config(profile: str, *, norm: str, lr: float, seed: int = 0,
                   overrides: list[str] | tuple[str, ...] = (),
                   path: str | Path = SWEEP_FILE) -> dict:
    """The run (``norm``, ``lr``, ``seed``) of the sweep file's ``profile``; ``overrides``
    (``--set section.key=value``) change the file's other values."""
    sets = parse_sets(overrides)
    for section, key in SWEPT:
        if key in sets.get(section, {}):
            raise ValueError(f"--set {section}.{key}: the sweep sets each run's model.norm, "
                             "train.lr and train.seed (the file's norms and lrs, and --seed)")
    raw = deep_merge(copy.deepcopy(load_sweep(profile, path)["base"]), sets)
    deep_merge(raw, {"model": {"norm": norm}, "train": {"lr": float(lr), "seed": seed}})
    return make_config(raw)


def sweep_configs(profile: str, seed: int = 0, overrides: list[str] | tuple[str, ...] = (),
                  path: str | Path = SWEEP_FILE) -> list[dict]:
    """Every run of the sweep file's ``profile``: norm by norm, each at every rate of ``lrs``."""
    sweep = load_sweep(profile, path)
    return [profile_config(profile, norm=norm, lr=lr, seed=seed, overrides=overrides, path=path)
            for norm in sweep["norms"] for lr in sweep["lrs"]]


def demo_configs(profile: str) -> dict[tuple[str, int], dict]:
    """(arm, seed) -> config of every run of the collapse demonstration at ``profile``
    (:data:`DEMO_RATES` x :data:`DEMO_SEEDS`)."""
    return {(arm, seed): profile_config(profile, norm=norm, lr=lr, seed=seed)
            for arm, (norm, lr) in DEMO_RATES.items() for seed in DEMO_SEEDS}


ARCHIVED_DIGITS = 4
"""Significant digits the archive keeps of a run's per-layer series (:func:`archived_history`)."""
UNREAD_SERIES = ("layer_t_sim", "block_grad")
"""Per-layer series a run logs that no claim, figure or summary reads: left out of the archive."""


def archived_history(text: str) -> str:
    """The archive's form of a run's metrics.jsonl: every row with its scalars as logged (step,
    loss, L_freq, t_sim: what the collapse detector reads), its per-layer series (residual
    gradients, Theorem 3.6's factors) to :data:`ARCHIVED_DIGITS` significant digits, and
    without :data:`UNREAD_SERIES`; about a sixth of the size compressed (48 layers, 400 steps:
    about 850 KB a run in full)."""
    from resharpen.experiments.common.json_text import dumps_jsonl

    def short(value):
        return float(f"{value:.{ARCHIVED_DIGITS}g}") if isinstance(value, float) else value

    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return dumps_jsonl([{k: [short(x) for x in v] if isinstance(v, list) else v
                         for k, v in row.items() if k not in UNREAD_SERIES} for row in rows])


def full_runs() -> dict[str, dict]:
    """The runs the archive keeps, name -> config: the full-size sweep's and the
    demonstration's."""
    return {c["name"]: c for c in [*sweep_configs("full"), *demo_configs("full").values()]}


def batch_frequency_loss(labels: torch.Tensor, vocab: int) -> float:
    """L_freq of a batch: entropy (nats) of the label frequencies over all its positions."""
    p = torch.bincount(labels.reshape(-1), minlength=vocab).double() / labels.numel()
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def _t_sim(x: torch.Tensor) -> torch.Tensor:
    """t_sim of token states (K, B, S, d) per member (K,): n |mean_i x_i|^2 / sum_i |x_i|^2,
    averaged over the batch."""
    return (x.shape[-2] * x.mean(-2).pow(2).sum(-1) / x.pow(2).sum((-2, -1))).mean(-1)


def _norms(x: torch.Tensor) -> torch.Tensor:
    """The Frobenius norm of each member's slice of x (K, ...): (K,)."""
    return x.flatten(1).norm(dim=1)


def contraction_factors(block_inputs: list, norm_io: list) -> torch.Tensor:
    """Theorem 3.6's c_k = a_k max_i |g|_max sqrt(d)/|y_i| per Post-Norm sublayer k and member:
    (sublayers, K), with the sublayer gain a_k = ||dL/dX_k|| / ||dL/dY_k|| (X_k its residual
    input, Y_k = X_k + f_k(X_k), g the learned RMSNorm gain, which the paper's theory sets to 1),
    so that ||dL/dX_k|| <= c_k ||dL/dX_{k+1}||. ``block_inputs``: (value, gradient) of every
    block's input; ``norm_io``: ((Y, dL/dY), (X' = RMS(Y), dL/dX'), gain) of every sublayer,
    whose inputs alternate block input, attention-norm output; every tensor with the member
    axis first. NaN where a gradient is missing or dL/dY is zero."""
    factors = []
    for k, ((y, y_grad), out, gain) in enumerate(norm_io):
        x_grad = block_inputs[k // 2][1] if k % 2 == 0 else norm_io[k - 1][1][1]
        if x_grad is None or y_grad is None:
            factors.append(torch.full((y.shape[0],), float("nan")))
            continue
        y_norm = _norms(y_grad)
        a = _norms(x_grad) / y_norm
        smallest = y.norm(dim=-1).flatten(1).min(dim=1).values
        jac = gain.abs().flatten(1).max(dim=1).values * math.sqrt(y.shape[-1]) / smallest
        factors.append(torch.where(y_norm == 0, float("nan"), a * jac))
    return torch.stack(factors)


def probe_points(n_layers: int, post: bool) -> tuple[str, ...]:
    """The capture points a step probes (:mod:`resharpen.experiments.model.probes`): the residual
    stream entering every block (hook_resid_pre), every block's output (hook_resid_post) and, for
    Post-Norm, every output norm's input Y and output X' = RMS(Y)."""
    points = [f"blocks.{i}.hook_resid_{where}" for where in ("pre", "post")
              for i in range(n_layers)]
    if post:
        points += [f"blocks.{i}.hook_{s}_norm_out_{io}" for i in range(n_layers)
                   for s in ("attn", "mlp") for io in ("input", "output")]
    return tuple(points)


@torch.no_grad()
def measure(values: dict, grads: dict, params: dict, n_layers: int, post: bool) -> list[dict]:
    """One step of K runs trained together, from their probes (``values`` and ``grads`` at
    :func:`probe_points`) and their parameters {name: (value, gradient)}, every tensor with the
    member axis first; for each member: t_sim of the last block's output and of every block's,
    the residual-stream and block-parameter gradient norms and (Post-Norm) the contraction
    factors. Computed for all members at once."""
    k = next(iter(values.values())).shape[0]
    residuals = [(values[f"blocks.{i}.hook_resid_pre"], grads[f"blocks.{i}.hook_resid_pre"])
                 for i in range(n_layers)]
    one = torch.ones(k, 1)

    def io(i: int, s: str, which: str) -> tuple:
        name = f"blocks.{i}.hook_{s}_norm_out_{which}"
        return values[name], grads[name]

    norm_io = [(io(i, s, "input"), io(i, s, "output"),
                params.get(f"blocks.{i}.{s}_norm_out.gain", (one,))[0])
               for i in range(n_layers) for s in ("attn", "mlp")] if post else []
    resid_grad = torch.stack([_norms(g) for _, g in residuals]).T.tolist()
    block_grad = []
    for i in range(n_layers):
        squares = [g.pow(2).flatten(1).sum(1) for name, (_, g) in params.items()
                   if name.startswith(f"blocks.{i}.") and g is not None]
        block_grad.append(torch.sqrt(sum(squares)))
    block_grad = torch.stack(block_grad).T.tolist()
    layer_t = torch.stack([_t_sim(values[f"blocks.{i}.hook_resid_post"])
                           for i in range(n_layers)]).T.tolist()
    factors = contraction_factors(residuals, norm_io).T.tolist() if post else [None] * k
    return [{"t_sim": layer_t[m][-1], "layer_t_sim": layer_t[m], "resid_grad": resid_grad[m],
             "block_grad": block_grad[m], "contraction": factors[m]} for m in range(k)]


def train(config: dict, progress: bool = True) -> dict:
    """Train one run; return {"config", "history": one row per step, "summary"}."""
    return train_group([config], progress=progress)[0]


def train_group(configs: list[dict], progress: bool = False) -> list[dict]:
    """Train runs of one shape and norm (they may differ in seed and learning rate) as one
    batched ensemble (:mod:`resharpen.experiments.training.engine`; a run alone as one model);
    return each run's {"config", "history", "summary"}: what it gives trained alone, up to
    float32 rounding. Each run draws its own stream (its seed's Zipf-Markov matrix and
    generator) and ends at its first non-finite loss."""
    from resharpen.experiments.training.sweep import check_shared
    from resharpen.experiments.training.loop import model_config, stacking_pays

    check_shared(configs)
    first = configs[0]
    if len(configs) > 1 and not stacking_pays(
            model_config(first, first["task"]["vocab"], first["task"]["train_len"]),
            first["train"]["batch_size"], first["task"]["train_len"]):
        return [result for config in configs for result in train_group([config], progress)]
    start = time.perf_counter()
    k, first = len(configs), configs[0]
    t, tr, m = first["task"], first["train"], first["model"]
    models = [seeded_model(c, vocab=t["vocab"], max_len=t["train_len"]) for c in configs]
    streams = ZipfMarkovStreams(t["vocab"], t["zipf"], [c["train"]["seed"] for c in configs],
                                tr["batch_size"], t["train_len"])
    state = members_state(models, [c["train"] for c in configs], weights=("raw",))
    post = m["norm"] == "post"
    state.probe_points = probe_points(m["n_layers"], post)
    step_data: dict = {}

    def next_batch(step: int) -> torch.Tensor:
        tokens = streams.draw()
        step_data["labels"] = [x[:, 1:] for x in tokens]
        return tokens[0] if k == 1 else tokens

    def after_backward() -> None:
        step_data["measured"] = measure(*state.probed.stacked(), state.stacked_parameters(),
                                        m["n_layers"], post)

    def record(i: int, step: int, loss: float) -> dict:
        return {"step": step - 1, "loss": loss,  # 0-based: the step's weights before it
                "l_freq": batch_frequency_loss(step_data["labels"][i], t["vocab"]),
                **step_data["measured"][i]}

    fitted = fit_members(state, tr, next_batch, every=1, record=record,
                         stop=lambda i, row: not math.isfinite(row["loss"]),
                         after_backward=after_backward, names=[c["name"] for c in configs],
                         progress=progress)
    seconds = (time.perf_counter() - start) / k
    return [{"config": config, "history": history,
             "summary": summarize(config, history, matrix, seconds)}
            for config, history, matrix in zip(configs, fitted.histories, streams.matrices)]


def stream_frequency_loss(matrix: np.ndarray) -> float:
    """L_freq of the whole stream: the entropy of its stationary unigram law (the loss of the
    best position-independent predictor in expectation; a batch's own L_freq is lower by the
    finite-sample bias of the plug-in entropy)."""
    pi = stationary(matrix)
    return float(-np.sum(pi * np.log(pi)))


def summarize(config: dict, history: list[dict], matrix: np.ndarray, seconds: float) -> dict:
    """Detection (against the stream's L_freq) plus end-of-run averages (last 10% of steps)."""
    steps = [m["step"] for m in history]
    l_stream = stream_frequency_loss(matrix)
    det = detect_collapse(steps, [m["t_sim"] for m in history], [m["loss"] for m in history],
                          [l_stream] * len(history))
    tail = history[-max(1, len(history) // 10):]
    grad_ratio = np.mean([m["resid_grad"][0] / max(m["resid_grad"][-1], 1e-300) for m in tail])
    factors = [m.get("contraction") for m in tail if m.get("contraction")]
    median_c = float(np.nanmedian(np.asarray(factors, dtype=float))) if factors else None
    return {"name": config["name"], "norm": config["model"]["norm"], "lr": config["train"]["lr"],
            "collapsed": det.collapsed, "collapse_step": det.step if det.collapsed else None,
            "transient_collapse": None if det.collapsed else det.step,
            "recovered_step": det.recovered,
            "final_loss": float(np.mean([m["loss"] for m in tail])),
            "final_l_freq": float(np.mean([m["l_freq"] for m in tail])),
            "final_t_sim": float(np.mean([m["t_sim"] for m in tail])),
            "first_over_last_resid_grad": float(grad_ratio),
            "median_contraction": median_c,
            "l_freq_stream": l_stream, "entropy_rate": markov_entropy_rate(matrix),
            "seconds": round(seconds, 2)}


def read_finished(folder: Path) -> tuple[dict, dict, list] | None:
    """(config, summary, history) of a finished run folder (its files plain, or compressed as
    the archive keeps them), None when it is not finished; ValueError naming the file and line
    of a corrupt one."""
    from resharpen.experiments.common.stored import read_json, read_jsonl, stored_exists

    if not (stored_exists(folder / "summary.json") and stored_exists(folder / "config.json")):
        return None
    config, summary = (read_json(folder / name, "run file")
                       for name in ("config.json", "summary.json"))
    if not isinstance(summary, dict):
        raise ValueError(f"run file {str(folder / 'summary.json')!r} is not a JSON object")
    return config, summary, read_jsonl(folder / "metrics.jsonl", "run file")


def check_finished(profile: str, out: str | Path, seed: int = 0,
                   overrides: list[str] | tuple[str, ...] = ()) -> None:
    """Read every finished run folder of the sweep under ``out`` (before any work): ValueError
    naming a corrupt file and its line, a run folder a symbolic link leads outside ``out``, or
    a run file that is not a regular file (a FIFO, a device: the run would be refused only when
    saved, after its training)."""
    from resharpen.experiments.common.io import check_folder_files, check_within
    from resharpen.experiments.training.runs import RUN_FILES

    for config in sweep_configs(profile, seed, overrides):
        check_within(out, Path(out) / config["name"], "run folder")
        check_folder_files(Path(out) / config["name"], RUN_FILES, "run folder")
        read_finished(Path(out) / config["name"])


def _load_finished(config: dict, folder: Path, archived: Path | None = None) -> dict | None:
    """A finished run of ``config`` in ``folder``, else in its archived copy ``archived`` (read
    only), with its summary recomputed from the history, so detection follows the code (written
    back to ``folder``'s summary.json, never to the archive); None when neither holds it."""
    from resharpen.experiments.common.io import atomic_write_json

    wanted = json.loads(json.dumps(config))
    for source in (folder, archived):
        finished = None if source is None else read_finished(source)
        if finished is not None and finished[0] == wanted:
            break
    else:
        return None
    history = finished[2]
    t = config["task"]
    summary = summarize(config, history, zipf_markov_matrix(
        t["vocab"], t["zipf"], seed=config["train"]["seed"]), finished[1].get("seconds", 0.0))
    if source == folder:
        atomic_write_json(folder / "summary.json", summary)
    return {"config": config, "history": history, "summary": summary}


def run_all(configs: list[dict], out: str | Path | None = None, progress: bool = True,
            ensemble: int = ENSEMBLE, archive: str | Path | None = ARCHIVED) -> list[dict]:
    """Every run of ``configs``: loaded from ``out/<name>/`` when finished there, else from the
    archive's copy ``archive/<name>/`` (the full-size runs, read in place; None: not read),
    else trained, the unfinished runs of one norm in batched ensembles of up to ``ensemble``
    (:func:`train_group`), and written atomically
    (:func:`resharpen.experiments.training.loop.save_run`) when ``out`` is given."""
    from resharpen.experiments.common.io import check_within, ensure_writable_dir
    from resharpen.experiments.training.sweep import group_runs

    folders = [Path(out) / c["name"] if out is not None else None for c in configs]
    results: dict[int, dict] = {}
    for i, (config, folder) in enumerate(zip(configs, folders)):
        if folder is not None:
            check_within(out, folder, "run folder")  # never through a link out of ``out``
            loaded = _load_finished(config, folder,
                                    None if archive is None else Path(archive) / config["name"])
            if loaded is not None:
                results[i] = loaded
    pending = [i for i in range(len(configs)) if i not in results]
    for i in pending:  # a folder that cannot take the run is refused before any training
        if folders[i] is not None:
            ensure_writable_dir(folders[i])
    for group in group_runs([configs[i] for i in pending], ensemble):
        indices = [pending[j] for j in group]
        for i, result in zip(indices, train_group([configs[i] for i in indices],
                                                  progress=progress)):
            if folders[i] is not None:
                save_run(result, folders[i])
            results[i] = result
    return [results[i] for i in range(len(configs))]


def run(config: dict, out: str | Path | None = None, progress: bool = True) -> dict:
    """Train, or load a finished run from ``out/<name>/summary.json`` (:func:`run_all`)."""
    return run_all([config], out, progress)[0]


def sweep(profile: str = "quick", out: str | Path | None = OUT, seed: int = 0,
          progress: bool = True, overrides: list[str] | tuple[str, ...] = (),
          ensemble: int | None = None, archive: str | Path | None = ARCHIVED) -> list[dict]:
    """The learning-rate sweep of a profile (:func:`sweep_configs`), Post-Norm and Pre-Norm,
    each norm's rates as one batched ensemble of at most ``ensemble`` (default: the file's
    ``sweep.ensemble``, else :data:`ENSEMBLE`), a finished run out/ lacks read from ``archive``
    (:func:`run_all`); returns the summaries."""
    size = load_sweep(profile)["ensemble"] if ensemble is None else ensemble
    return [r["summary"] for r in run_all(sweep_configs(profile, seed, overrides), out,
                                          progress, size, archive)]
