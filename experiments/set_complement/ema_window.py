"""EMA with long windows at the stationary floor of sampled-label training.

The noise hypothesis: at constant learning rate, sampled labels leave the weights fluctuating
around a floor, theta_t = theta* + xi_t; an EMA with window W = 1 / (1 - d) averages xi over
about W steps, so once the run is at that floor its in-distribution invalid mass should be below
the raw weights' (gain log(raw / EMA) > 0), and more so for noisier updates.

Protocol (:func:`train_windows`): the runs of one arm (one config but for ``train.seed``) train
as one ensemble (:mod:`resharpen.experiments.training.engine`) at constant rate for ``train.steps``
steps; the first ``burn_in`` steps bring each run to its floor; an EMA for each window W starts
there (:class:`~resharpen.experiments.training.engine.StackedEMA` with ``start = burn_in + 1``: its
first update copies the weights at the floor, so no pre-floor weights enter the average) and
runs to the end. Every ``train.eval_every`` steps the raw weights' in-distribution invalid mass
is recorded (the stationarity check: :func:`floor_drift`); at the end raw and every EMA are
evaluated exactly (ID and OOD invalid mass). The arm's optimizer is ``train.optimizer`` (AdamW,
or SGD with momentum).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.common.profiles import PROFILES, pick
from resharpen.experiments.training.engine import StackedEMA
from resharpen.experiments.training.targets import label_generator
from resharpen.experiments.training.loop import fit_members, members_state, seeded_model
from resharpen.experiments.set_complement.train import (SetComplementStreams,
                                                        evaluate_weights, fit_measure, summarize,
                                                        target_batches)

WINDOWS = (500, 1000, 2000)
"""The EMA windows W (steps): decays 1 - 1/W = 0.998, 0.999, 0.9995."""


BASE = "fit_placements_v32.toml"
"""The model and task of the protocol: the placements' v = 32 file (quick profile: v = 16,
d = 32; full: v = 32, d = 64; init_std 0.1), with the settings of :data:`COMMON` on top."""
COMMON = ("train.target=sampled", "train.labels_per_position=1", "fit.until_id_invalid_mass=0",
          "train.schedule=constant", "train.warmup=0", "train.eval_every=250", "train.ema=none")
"""Sampled labels k = 1 (the noisiest target), a constant rate, no stopping rule."""
ARMS = {"adamw": ("train.optimizer=adamw", "train.lr=1e-2"),
        "sgd": ("train.optimizer=sgd", "train.lr=0.05", "train.momentum=0.98",
                "train.weight_decay=0", "train.grad_clip=0")}
"""The optimizer arms, the same in both profiles, chosen with ``benchmarks/ema_window_search.py``
(docs/training.md, "Averaging, decided by mechanism") as the one pair tried that learned, sat on
a stationary floor and matched within :data:`MATCH_FACTOR` in both profiles (median raw ID
floor, quick / full: AdamW 0.032 / 0.053, SGD 0.042 / 0.040). AdamW keeps the base file's weight
decay (0.01) and gradient clipping (1.0); SGD has neither: clipped at 1.0 it learned at no lr
tried (0.2-4 with momentum 0.95-0.99; 0.5 with momentum 0.98 plateaus at 0.08-0.11); unclipped
with momentum 0.98 it learns at lr 0.05 and 0.1, not at 0.15-0.2, and diverges at 0.5."""
def protocol(profile: str) -> dict:
    """{steps, burn_in, seeds} of ``profile`` (:func:`~resharpen.experiments.common.profiles.
    pick`): every window fits after the burn-in."""
    return {"steps": pick(profile, quick=2500, full=6000),
            "burn_in": pick(profile, quick=500, full=2000), "seeds": pick(profile, quick=5, full=8)}

MATCH_FACTOR = 1.5
"""The arms are compared at a matched floor: their median raw ID invalid masses within this
factor of each other."""
STATIONARY_DRIFT = math.log(1.25)
"""An arm is at its stationary floor when the median |floor_drift| is below this."""
LEARNED_FRACTION = 0.5
"""An arm has learned the task when its median raw ID floor is below this fraction of the
uniform prediction's ID invalid mass (:func:`set_complement_uniform_invalid_mass`)."""


def set_complement_uniform_invalid_mass(vocab: int, train_len: int) -> float:
    """The ID invalid mass of the uniform prediction on Set Complement, in closed form: mean over
    s = 1..L_train of s / v (the s seen tokens carry s / v of a uniform distribution). The
    task-generic, sampled counterpart is ``next_token_config.uniform_id_invalid_mass``."""
    return sum(s / vocab for s in range(1, train_len + 1)) / train_len


def arm_configs(arm: str, profile: str) -> list[dict]:
    """The run configs of ``arm`` (one per seed) in ``profile``."""
    return protocol_configs(ARMS[arm], profile)


def protocol_configs(settings, profile: str) -> list[dict]:
    """The run configs (one per seed of ``profile``'s :func:`protocol`) of the protocol's model
    and task (:data:`BASE`, :data:`COMMON`) with the optimizer ``settings`` ("section.key=value"
    strings, as :data:`ARMS` holds them) on top."""
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.set_complement.config import load_config

    plan = protocol(profile)
    return [load_config(CONFIG_DIR / "set_complement" / BASE,
                        [*COMMON, *settings, f"train.steps={plan['steps']}",
                         f"train.seed={seed}"], profile=profile, sweep_file=True)
            for seed in range(plan["seeds"])]


def _run_arm(job: tuple[str, str]) -> list[dict]:
    arm, profile = job
    torch.set_num_threads(1)
    rows = train_windows(arm_configs(arm, profile), protocol(profile)["burn_in"])
    return [dict(row, arm=arm) for row in rows]


def results_path(profile: str) -> Path:

    from resharpen.experiments.training.config import result_folder
    return result_folder("sweeps", "fit_noise_window_v32", profile) \
        / "results.json"


def protocol_key(profile: str) -> dict:
    """What the results of ``profile`` depend on (steps, seeds, arms, common settings, base
    file, windows), as plain JSON: the cache key of :func:`run_protocol`."""
    return json.loads(json.dumps({"protocol": protocol(profile), "arms": ARMS, "common": COMMON,
                                  "base": BASE, "windows": WINDOWS}))


def cached_rows(profile: str) -> list[dict] | None:
    """The rows in :func:`results_path` if they were made with today's protocol
    (:func:`protocol_key`), else None: results of other arms or windows are never read."""
    path = results_path(profile)
    if not path.exists():
        return None
    from resharpen.experiments.common.stored import read_json

    cached = read_json(path, "EMA-window results")
    return cached["rows"] if stored_key(cached.get("key")) == protocol_key(profile) else None


def stored_key(key: object) -> object:
    """A stored :func:`protocol_key` in today's spelling: its common settings' renamed keys
    (:data:`~resharpen.experiments.training.config.RENAMED_KEYS`) written the new way, so that
    results made before a rename are still today's protocol."""
    from resharpen.experiments.training.config import RENAMED_KEYS

    if not isinstance(key, dict) or not isinstance(key.get("common"), list):
        return key
    def respelled(setting: object) -> object:
        if not isinstance(setting, str) or "=" not in setting:
            return setting
        name, value = setting.split("=", 1)
        return f"{RENAMED_KEYS.get(name, name)}={value}"
    return {**key, "common": [respelled(s) for s in key["common"]]}


def run_protocol(profile: str, workers: int = 2) -> list[dict]:
    """Every arm's rows (:func:`train_windows`), the arms on ``workers`` processes
    (:func:`resharpen.experiments.training.backends.run_local`); cached in
    :func:`results_path` with the protocol, and read back while the protocol is unchanged."""
    rows = cached_rows(profile)
    if rows is not None:
        return rows
    from resharpen.experiments.training.backends import run_local

    jobs = [((arm, profile),) for arm in ARMS]
    parts = dict(run_local(_run_arm, jobs, workers))
    rows = [row for index in sorted(parts) for row in parts[index]]
    from resharpen.experiments.common.io import atomic_write_json

    path = results_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"key": protocol_key(profile), "rows": rows})
    return rows


def ema_name(window: int) -> str:
    return f"ema{window}"


def train_windows(configs: list[dict], burn_in: int, windows=WINDOWS) -> list[dict]:
    """Train the runs ``configs`` (equal but for ``train.seed``) as one ensemble with an EMA of
    each window starting after ``burn_in`` steps (module docstring); per run {seed, optimizer,
    history: [(step, raw ID invalid mass)], and per weight set (raw, ema<W>) its ID and OOD
    invalid mass at the end}."""
    first = configs[0]
    task, tr = first["task"], first["train"]
    if tr["schedule"] != "constant" or first["fit"]["until_id_invalid_mass"]:
        raise ValueError("the EMA-window protocol needs a constant rate and no stopping rule")
    if not 0 < burn_in < tr["steps"]:
        raise ValueError(f"burn_in = {burn_in} must be inside the run's {tr['steps']} steps")
    v, length = task["vocab"], task["train_len"]
    k = len(configs)
    if k == 1:
        raise ValueError("train_windows trains an ensemble: give at least two seeds")
    seeds = [c["train"]["seed"] for c in configs]
    models = [seeded_model(c, vocab=v, max_len=v) for c in configs]
    state = members_state(models, [c["train"] for c in configs], weights=("raw",))
    for window in windows:
        state.averagers[ema_name(window)] = StackedEMA(state.members, [1 - 1 / window] * k,
                                                       start=burn_in + 1)
    streams = SetComplementStreams(v, seeds, tr["batch_size"], length + 1, tr["steps"])
    batch = target_batches(v, tr, [label_generator(s) for s in seeds])
    threshold = first["eval"]["threshold"]

    def record(i: int, step: int, loss: float) -> dict:
        return {"step": step, "loss": loss,
                "id_invalid_mass": fit_measure(state.members.member(i), configs[i])}

    fitted = fit_members(state, tr, lambda step: batch(streams.draw()), every=tr["eval_every"],
                         record=record, progress=False)
    results = []
    for config, history, weights in zip(configs, fitted.histories, fitted.weights):
        row = {"seed": config["train"]["seed"], "optimizer": config["train"].get(
                   "optimizer", "adamw"), "lr": config["train"]["lr"], "burn_in": burn_in,
               "steps": tr["steps"], "vocab": v, "train_len": length,
               "history": [(h["step"], h["id_invalid_mass"]) for h in history]}
        for kind, module in weights.items():
            summary = summarize(evaluate_weights(module, config), v, length, threshold)
            row[kind] = {m: summary[m] for m in ("id_invalid_mass", "ood_invalid_mass")}
        results.append(row)
    return results


def floor_drift(history: list[tuple[int, float]], burn_in: int) -> float:
    """log(mean raw ID invalid mass over the second half of the evaluations after ``burn_in`` /
    that over the first half): 0 on a stationary floor, < 0 while the run still improves."""
    after = [m for step, m in history if step > burn_in]
    half = len(after) // 2
    if half < 1:
        return math.nan
    return float(math.log(np.mean(after[half:]) / np.mean(after[:half])))


def window_gain(row: dict, window: int, metric: str = "id_invalid_mass") -> float:
    """log(raw / EMA_W) of ``metric`` at the end (> 0: the EMA is better)."""
    raw, ema = row["raw"][metric], row[ema_name(window)][metric]
    return math.log(raw / ema) if raw > 0 and ema > 0 else math.nan


def main(argv=None) -> None:
    """``python -m resharpen.experiments.set_complement.ema_window [--profile full]``: run (or
    read) the protocol and print each arm's gains."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    rows = run_protocol(args.profile, args.workers)
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        print(arm, "raw ID", [f"{r['raw']['id_invalid_mass']:.3g}" for r in mine], "drift",
              [f"{floor_drift(r['history'], r['burn_in']):.2f}" for r in mine])
        for window in WINDOWS:
            print(f"  window {window}: gain", [f"{window_gain(r, window):+.3f}" for r in mine])
    print(results_path(args.profile))


__all__ = ["WINDOWS", "ARMS", "protocol", "LEARNED_FRACTION",
           "set_complement_uniform_invalid_mass",
           "arm_configs", "protocol_configs", "protocol_key", "cached_rows", "run_protocol",
           "results_path",
           "main", "ema_name", "train_windows", "floor_drift", "window_gain"]


if __name__ == "__main__":
    main()
