"""The two dynamics papers inside trained transformers: per-layer geometry of real
models of every scheme, at initialization and trained to a fit on a formal language.

Measurements (:func:`measure`), read from the model's named capture points in ONE forward and
one backward pass (``Transformer.capture(..., retain_grad=True)``), on a batch of B task
sequences of n tokens. With x_j the residual stream entering block j (``hook_resid_pre``;
x_L = the last block's ``hook_resid_post``), per token i and layer j:

    cos_j      mean over sequences and pairs i != i' of <x_ji, x_ji'> / (|x_ji| |x_ji'|)
               (arXiv 2510.22026's similarity of tokens on the sphere)
    t_sim_j    n |mean_i x_ji|^2 / sum_i |x_ji|^2, averaged over sequences (arXiv 2608.09417)
    disp_j     mean_i arccos cos(x_ji, x_(j+1)i): the angle block j moves a token (j = 0 is the
               first layer of Thm 4.2)
    r_j        mean_i |x_ji|: the residual norms (r2_j: mean_i |x_ji|^2)
    attn_j     mean_i |f_i| for the attention output f = hook_attn_out
    attn_rel_j mean_i |f_i| / (sum_h |W_V^h W_O^h|_op * mean_i |h_i|), h = hook_attn_in: the
               paper's |A_j| (a convex combination of values V theta_k, |V|_op <= 1, unit
               tokens, so <= 1) in the units of the model's own value map and token size;
               value_frob2_j = |sum_h W_V^h W_O^h|_F^2 (arXiv 2608.09417's s = that / d)
    gain       the backward gain |J_N^T g|_F / |g|_F of every norm N of the block, g the loss
               gradient at N's output: an output norm (post, mixln's Post-LN layers, peri's
               N_out) from the gradients at its input and output capture points (the input
               point feeds only N); an input norm (pre, peri's N_in, mixln's Pre-LN layers,
               ln_scaling with its 1/sqrt(l + 1)) by the vjp of that norm alone at the captured
               x; nGPT's u(y), y = x + alpha (u(f) - x), by J_u^T g = (g - u<u, g>)/|y|, y
               rebuilt from the captured x, f and alpha.

The loss of the backward pass is the training loss of the task, H(p*, p) against the exact
next-token law p* (soft targets), averaged over the positions that have one.

Models: attention only (no MLP: the setting of both papers' theory), RMSNorm (the theory's
projection to the sphere of radius sqrt(d)), d_model 64 (quick 32), 4 heads, learned
positions, weights N(0, 1/(3 d)) (arXiv 2608.09417's init; W_O also 1/sqrt(2L) as the package's
model does), every scheme of :data:`SCHEMES`, trained by the language trainer
(:func:`resharpen.experiments.training.next_token.train_group`, the seeds of one group batched
where ``stacking_pays``) with soft targets until the raw weights' ID invalid mass is below
:data:`~.trained_plan.FIT_FRACTION` x the uniform prediction's (the trainer's stopping rule; runs that do not
get there within ``steps`` are kept, marked ``fit_reached`` False, and left out of every
trained comparison). A group whose loss turns non-finite is recorded as diverged.

The set is cached per (task, scheme, depth) in ``out/dyn_trained/<profile>/`` (strict JSON,
written atomically, keyed by the configs and :data:`~.trained_plan.VERSION`), so the claims share one
trained set and a rerun trains nothing. The full-size set is also kept in the repository's
archive (``results/full/dyn_trained/<group>.json.gz``, :data:`ARCHIVED`, packed by
``resharpen archive pack-dyn``): at full size a group missing from ``out/`` is read from there
(read only), so the claims decide and the figures draw in a fresh checkout without training.

Layering: this module trains through the languages slice; the exception is declared in
pyproject.toml's ``layers`` contract (``ignore_imports``), for this module only.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.common.profiles import PROFILES
from resharpen.experiments.dynamics.trained_plan import (ARCHIVED, OUT, SCHEMES, TASKS, Sizes,
                                                         cached_group, group_configs, group_key,
                                                         group_lock, sizes)
from resharpen.experiments.model.transformer import Transformer, layer_of, unit


# ------------------------------------------------------------------------- geometry
def mean_pairwise_cosine(x: torch.Tensor) -> torch.Tensor:
    """Mean over pairs i != i' of cos(x_i, x_i') for token states x (..., n, d): (...)."""
    u = unit(x)
    n = x.shape[-2]
    gram = u @ u.transpose(-1, -2)
    return (gram.sum((-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / (n * (n - 1))


def t_sim(x: torch.Tensor) -> torch.Tensor:
    """n |mean_i x_i|^2 / sum_i |x_i|^2 of token states (..., n, d): (...)."""
    return x.shape[-2] * x.mean(-2).pow(2).sum(-1) / x.pow(2).sum((-1, -2))


def angular_displacement(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """arccos cos(before_i, after_i) per token (..., n): the angle a layer moves each token."""
    c = (unit(before) * unit(after)).sum(-1)
    return torch.arccos(c.clamp(-1.0, 1.0))


def value_gain(block) -> float:
    """sum over heads of |W_V^h W_O^h|_op: the largest factor the value map can stretch a token
    by (the paper's |V|_op, summed over the heads whose outputs add)."""
    w = torch.einsum("hde,hef->hdf", block.attn.W_V, block.attn.W_O)
    return float(torch.linalg.matrix_norm(w, ord=2).sum())


def _ratio(num: torch.Tensor, den: torch.Tensor) -> float:
    d = float(den.norm())
    return float(num.norm()) / d if d > 0 else float("nan")


def norm_gains(model: Transformer, cache: dict, layer: int) -> list[dict]:
    """The backward gains of the norms of block ``layer`` (see the module docstring): a list of
    {kind: "in" | "out" | "sphere", post: the layer is Post-LN (N(x + f)), gain}."""
    block = model.blocks[layer]
    rule = layer_of(model.cfg.norm, layer, model.cfg.n_layers)
    p = f"blocks.{layer}."
    out = []
    if rule.input_norm:
        x, g = cache[p + "hook_resid_pre"], cache[p + "hook_attn_in"].grad
        factor = 1.0 / math.sqrt(layer + 1) if model.cfg.norm == "ln_scaling" else 1.0
        with torch.enable_grad():
            xd = x.detach().requires_grad_(True)
            (gx,) = torch.autograd.grad(block.attn_norm_in(xd) * factor, xd, g)
        out.append({"kind": "in", "post": False, "gain": _ratio(gx, g)})
    if rule.output_norm is not None:
        g_in = cache[p + "hook_attn_norm_out_input"].grad
        g_out = cache[p + "hook_attn_norm_out_output"].grad
        out.append({"kind": "out", "post": rule.output_norm == "residual",
                    "gain": _ratio(g_in, g_out)})
    if rule.eigen_rate:
        x, f = cache[p + "hook_resid_pre"].detach(), cache[p + "hook_attn_out"].detach()
        alpha = block._eigen_rate(block.attn_alpha).detach()
        y = x + alpha * (unit(f) - x)
        u, g = unit(y), cache[p + "hook_resid_post"].grad
        gx = (g - u * (u * g).sum(-1, keepdim=True)) / y.norm(dim=-1, keepdim=True)
        out.append({"kind": "sphere", "post": False, "gain": _ratio(gx, g)})
    return out


def soft_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """H(p*, p) averaged over the positions with a target (a row of p* summing to > 0)."""
    logp = torch.log_softmax(logits, dim=-1)
    per = -(targets * logp).sum(-1)
    keep = targets.sum(-1) > 0
    return per[keep].mean()


def measure(model: Transformer, tokens: torch.Tensor, targets: torch.Tensor | None) -> dict:
    """Every per-layer quantity of the module docstring, from one forward and one backward pass
    of ``model`` (attention only) on ``tokens`` (B, n), with the loss :func:`soft_loss` against
    ``targets`` (B, n, V); ``targets`` None: no backward pass, no gains. Lists: cos, t_sim,
    r (L + 1 values: x_0 .. x_L), disp, attn, attn_rel, gains (L values, one per block)."""
    if model.cfg.mlp:
        raise ValueError("measure: attention-only models (the papers' setting) only")
    L = model.cfg.n_layers
    names = [n for n in model.hook_points() if n.split(".", 2)[-1] in (
        "hook_resid_pre", "hook_resid_post", "hook_attn_in", "hook_attn_out",
        "hook_attn_norm_out_input", "hook_attn_norm_out_output")]
    with model.capture(*names, retain_grad=targets is not None) as cache:
        logits = model(tokens)
    if targets is not None:
        soft_loss(logits, targets).backward()
    with torch.no_grad():
        xs = [cache[f"blocks.{j}.hook_resid_pre"] for j in range(L)]
        xs.append(cache[f"blocks.{L - 1}.hook_resid_post"])
        result = {
            "n_tokens": int(tokens.shape[1]), "d_model": model.cfg.d_model,
            "cos": [float(mean_pairwise_cosine(x).mean()) for x in xs],
            "t_sim": [float(t_sim(x).mean()) for x in xs],
            "r": [float(x.norm(dim=-1).mean()) for x in xs],
            "r2": [float(x.pow(2).sum(-1).mean()) for x in xs],
            "disp": [float(angular_displacement(a, b).mean()) for a, b in zip(xs, xs[1:])],
            "attn": [], "attn_rel": [], "value_gain": [], "value_frob2": [],
        }
        for j, block in enumerate(model.blocks):
            f = cache[f"blocks.{j}.hook_attn_out"].norm(dim=-1).mean()
            h = cache[f"blocks.{j}.hook_attn_in"].norm(dim=-1).mean()
            v = value_gain(block)
            result["attn"].append(float(f))
            result["value_gain"].append(v)
            w = torch.einsum("hde,hef->df", block.attn.W_V, block.attn.W_O)
            result["value_frob2"].append(float(w.pow(2).sum()))
            result["attn_rel"].append(float(f / (v * h)))
    result["gains"] = [norm_gains(model, cache, j) for j in range(L)] if targets is not None \
        else None
    model.zero_grad(set_to_none=True)
    return result


# ------------------------------------------------------------------------- the trained set
def measurement_batch(config: dict, sz: Sizes) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, n), p* (B, n, V)): the fixed sequences every model of a task is measured on
    (seed ``sz.measure_seed``, the same at init and trained)."""
    from resharpen.experiments.training.next_token_config import build_task
    from resharpen.experiments.training.next_token import next_token_targets

    task = build_task(config)
    seqs = torch.as_tensor(task.sample(sz.measure_count, sz.train_len + 1,
                                       sz.measure_seed), dtype=torch.int64)
    targets = next_token_targets(task, seqs, config["task"]["ignore_pad"])
    return seqs[:, :-1], targets


def measure64(model: Transformer, batch) -> dict:
    """:func:`measure` of ``model`` in float64 on ``batch`` = (tokens, p*) (:func:`measurement_batch`)."""
    model = model.to(torch.float64)
    return measure(model, batch[0], batch[1].to(torch.float64))


def train_group_measured(sz: Sizes, task: str, scheme: str, depth: int,
                         train: bool = True, configs: list[dict] | None = None) -> list[dict]:
    """Train one group and measure each run at init and at its end: a list of
    {seed, fit_reached, fit_step, steps, diverged, init, trained (None if diverged)};
    ``train`` False: the init measurements only (trained None, fit_reached False).
    ``configs``: the group's run configs (default :func:`group_configs`; a premise set's
    differ in the initialization only)."""
    from resharpen.experiments.model.transformer import ModelConfig
    from resharpen.experiments.training.loop import seeded_model
    from resharpen.experiments.training.next_token_config import build_task
    from resharpen.experiments.training.next_token import train_group

    torch.set_num_threads(1)
    configs = configs or group_configs(sz, task, scheme, depth)
    vocab = build_task(configs[0]).size
    batch = measurement_batch(configs[0], sz)
    inits = [measure64(seeded_model(c, vocab, sz.train_len), batch) for c in configs]
    if not train:
        return [{"seed": c["train"]["seed"], "fit_reached": False, "fit_step": None,
                 "steps": 0, "diverged": False, "init": m, "trained": None}
                for c, m in zip(configs, inits)]
    start = time.perf_counter()
    try:
        results = train_group(configs)
    except ValueError as error:  # a non-finite loss (the trainer's raise_on_nonfinite)
        if "loss is" not in str(error):
            raise
        return [{"seed": c["train"]["seed"], "fit_reached": False, "fit_step": None,
                 "steps": None, "diverged": True, "error": str(error), "init": m,
                 "trained": None} for c, m in zip(configs, inits)]
    seconds = time.perf_counter() - start
    runs = []
    for config, result, init in zip(configs, results, inits):
        weights = result["weights"]
        model = Transformer(ModelConfig.from_dict(weights.model_config))
        model.load_state_dict(weights.tensors["raw"])
        s = result["summary"]
        runs.append({"seed": config["train"]["seed"], "fit_reached": bool(s["fit_reached"]),
                     "fit_step": s["fit_step"], "steps": s["steps_trained"], "diverged": False,
                     "fit_target": s["fit_target"],
                     "final_fit_measure": result["history"][-1]["fit_id_invalid_mass"],
                     "seconds": seconds / len(configs), "init": init,
                     "trained": measure64(model, batch)})
    return runs


def trained_set(profile: str = "quick", out: str | Path | None = OUT,
                progress: bool = False, train: bool = True,
                cached_only: bool = False, only: dict | None = None,
                archive: str | Path | None = ARCHIVED) -> list[dict]:
    """Every run of the profile's set (tasks x schemes x depths x seeds), each
    {task, scheme, depth, seed, fit_reached, diverged, init, trained, ...}: loaded from
    ``out/<profile>/<task>_<scheme>_L<depth>.json`` when its key matches, else trained and
    written there (``out`` None: nothing is read or written). At full size, a group whose file
    ``out`` lacks (or holds with another key) is read from ``archive/<same name>`` (the
    archived set, :data:`ARCHIVED`; None: not read) when its key matches there; nothing is
    ever written into ``archive``. The schemes outside the
    profile's ``trained_schemes``, and every scheme when ``train`` is False, are measured at
    init only (``..._init.json``): the init claims train nothing. ``cached_only``: LookupError
    naming the first group not on disk, instead of training it (the figures). ``only``
    ({"task" | "scheme" | "depth": allowed values}): just those groups (one group at a time from
    the command line)."""
    from resharpen.experiments.common.io import atomic_write_json, ensure_writable_dir

    p = sizes(profile)
    folder = None if out is None else ensure_writable_dir(Path(out) / profile)
    archived = None if folder is None or archive is None or profile != "full" else Path(archive)
    runs = []
    only = only or {}
    for task in TASKS:
        for scheme in SCHEMES:
            for depth in p.depths:
                if any(value not in only.get(name, (value,)) for name, value in
                       (("task", task), ("scheme", scheme), ("depth", depth))):
                    continue
                trains = train and scheme in p.trained_schemes
                key = group_key(p, group_configs(p, task, scheme, depth)) + ("" if trains else "i")
                name = f"{task}_{scheme}_L{depth}{'' if trains else '_init'}.json"
                path = None if folder is None else folder / name
                kept = None if archived is None else archived / name
                group = cached_group(path, key, kept)
                if group is None:
                    if cached_only:
                        raise LookupError(f"no finished group {task} {scheme} L={depth} in "
                                          f"{folder}")
                    with group_lock(path):  # ledger workers share the set: one trains it
                        group = cached_group(path, key, kept)
                        if group is None:
                            if progress:
                                print(f"training {task} {scheme} L={depth} ...", flush=True)
                            group = train_group_measured(p, task, scheme, depth, trains)
                            if path is not None:
                                atomic_write_json(path, {"key": key, "runs": group})
                runs += [{"task": task, "scheme": scheme, "depth": depth, **r} for r in group]
    return runs


# ------------------------------------------------------------------------- selections
def select(runs: list[dict], when: str, schemes=SCHEMES, fitted_only: bool = True) -> list[dict]:
    """The runs measured ``when`` ("init": every run; "trained": the runs that reached the fit,
    or with ``fitted_only`` False every run trained to its end; diverged ones never), each
    {task, scheme, depth, seed, m: the measurement} (and the premise set of a premise set's run:
    :mod:`.premise_sets`)."""
    if when not in ("init", "trained"):
        raise ValueError(f"when must be 'init' or 'trained', got {when!r}")
    return [{**{k: r[k] for k in ("task", "scheme", "depth", "seed", "premise_set") if k in r},
             "m": r[when]}
            for r in runs if r["scheme"] in schemes
            and (when == "init" or (not r["diverged"] and r["trained"] is not None
                                    and (r["fit_reached"] or not fitted_only)))]


def by_unit(runs: list[dict], scheme: str, value) -> dict:
    """{(task, depth, seed): value(measurement)} of one scheme: the pairing key of the
    comparisons across schemes (same task, depth and seed)."""
    return {(r["task"], r["depth"], r["seed"]): value(r["m"]) for r in runs
            if r["scheme"] == scheme}


def first_layer_displacement(m: dict) -> float:
    return m["disp"][0]


def similarity_rise(m: dict) -> float:
    """(cos_L - cos_1)/(L - 1): the similarity's growth per layer after the first block (the
    first layer's move is Thm 4.2's, compared separately)."""
    cos = m["cos"]
    return (cos[-1] - cos[1]) / max(len(cos) - 2, 1)


def thm42_bound(n: int, d: int) -> float:
    """sqrt(log n / n) + log n / d: Thm 4.2's order of |A_j(0)| (constant C = 1)."""
    return math.sqrt(math.log(n) / n) + math.log(n) / d


def scheme_table(runs: list[dict], task: str, depth: int,
                 fitted_only: bool = True) -> list[dict]:
    """One row per scheme of (task, depth): runs that reached the fit, and seed means at init and
    trained (fitted runs only; ``fitted_only`` False: every run trained to its end) of the
    first-layer displacement, the first and last similarity, the last/first residual norm, the
    mean attn_rel and the median backward gain."""
    rows = []
    for scheme in SCHEMES:
        group = [r for r in runs if (r["scheme"], r["task"], r["depth"]) == (scheme, task, depth)]
        if not group:
            continue
        untrained = all(r["trained"] is None and not r["diverged"] for r in group)
        fitted = sum(r["fit_reached"] for r in group)
        row = {"scheme": scheme, "fit": "not trained" if untrained else f"{fitted}/{len(group)}",
               "diverged": sum(r["diverged"] for r in group)}
        for when in ("init", "trained"):
            ms = [s["m"] for s in select(group, when, (scheme,), fitted_only)]
            if not ms:
                continue
            gains = [g["gain"] for m in ms for layer in (m["gains"] or []) for g in layer]
            row[when] = {
                "disp0": float(np.mean([m["disp"][0] for m in ms])),
                "disp_rest": float(np.mean([np.mean(m["disp"][1:]) for m in ms])),
                "cos0": float(np.mean([m["cos"][0] for m in ms])),
                "cos1": float(np.mean([m["cos"][1] for m in ms])),
                "cosL": float(np.mean([m["cos"][-1] for m in ms])),
                "r_ratio": float(np.mean([m["r"][-1] / m["r"][0] for m in ms])),
                "attn_rel": float(np.mean([np.mean(m["attn_rel"]) for m in ms])),
                "gain": float(np.median(gains)) if gains else float("nan")}
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    """A markdown table of :func:`scheme_table`'s rows."""
    head = ("| scheme | fit | disp_0 init / trained | mean disp_j>0 | cos_0 | cos_1 | cos_L | "
            "r_L/r_0 | mean attn_rel | median norm gain |")
    lines = [head, "|" + "---|" * 10]

    def pair(row, key, fmt="{:.3g}"):
        return " / ".join(fmt.format(row[w][key]) if w in row else "-"
                          for w in ("init", "trained"))
    for row in rows:
        lines.append(f"| {row['scheme']} | {row['fit']}"
                     + (f" ({row['diverged']} diverged)" if row["diverged"] else "") + " | "
                     + " | ".join(pair(row, k) for k in ("disp0", "disp_rest", "cos0", "cos1",
                                                          "cosL", "r_ratio", "attn_rel", "gain"))
                     + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m resharpen.experiments.dynamics.trained --profile quick|full``: train (or
    load) the set and print the per-scheme tables (init / trained)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=tuple(PROFILES), default="quick")
    parser.add_argument("--task", nargs="*", choices=TASKS, help="only these tasks")
    parser.add_argument("--scheme", nargs="*", choices=SCHEMES, help="only these schemes")
    parser.add_argument("--depth", nargs="*", type=int, help="only these depths")
    parser.add_argument("--no-table", action="store_true", help="train, print nothing")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    only = {k: tuple(v) for k, v in (("task", args.task), ("scheme", args.scheme),
                                     ("depth", args.depth)) if v}
    runs = trained_set(args.profile, progress=True, only=only)
    if not args.no_table:
        print_tables(runs, args.profile, only, sizes(args.profile).depths)


def print_tables(runs: list[dict], profile: str, only: dict, depths, heading: str = "",
                 fitted_only: bool = True) -> None:
    """:func:`format_table` of ``runs`` per task and depth (``only``: just those), headed by
    ``heading``; the trained columns over fitted runs only, or every run trained to its end."""
    p = sizes(profile)
    for task in only.get("task", TASKS):
        for depth in only.get("depth", depths):
            print(f"\n{task}, L = {depth}, d = {p.d_model}, n = {p.train_len} tokens "
                  f"({profile} profile{heading})\n")
            print(format_table(scheme_table(runs, task, depth, fitted_only)))


__all__ = ["scheme_table", "format_table", "print_tables", "main", "mean_pairwise_cosine",
           "t_sim", "angular_displacement", "value_gain", "norm_gains", "soft_loss", "measure",
           "measurement_batch", "train_group_measured", "trained_set",
           "select", "by_unit", "first_layer_displacement", "similarity_rise", "thm42_bound"]


if __name__ == "__main__":
    main()
