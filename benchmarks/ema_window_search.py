r"""Calibrate the optimizer arms of the EMA-window protocol (issue 22, requirement 4).

The protocol (``resharpen.experiments.set_complement.ema_window``) compares an EMA of long
windows with the raw weights at the stationary floor of sampled-label training, in an AdamW arm
and an SGD arm whose floors match. An arm decides something only if it learned the task (its
median raw ID floor below ``LEARNED_FRACTION`` x the uniform prediction's ID invalid mass),
sits on a stationary floor (median |floor drift| below ``STATIONARY_DRIFT``) and matches the
other arm's floor within ``MATCH_FACTOR``. This script trains candidate arms with the protocol's
own code (``protocol_configs``, ``train_windows``: the model, task, steps, burn-in and seeds of
``--profile``) and prints, per arm, those three quantities and the median ID gain
log(raw / EMA) per window, so the arms can be chosen before the claim is run.

    .venv/bin/python benchmarks/ema_window_search.py --profile full \
        "adamw:lr=3e-3" "sgd:lr=1,momentum=0.98,weight_decay=0"

An arm is ``OPTIMIZER:key=value,...`` (keys of ``[train]``). Arms train on ``--workers``
processes, one torch thread each.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def arm_settings(spec: str) -> tuple[str, ...]:
    """``"sgd:lr=1,momentum=0.98"`` -> ("train.optimizer=sgd", "train.lr=1", ...)."""
    optimizer, _, rest = spec.partition(":")
    return (f"train.optimizer={optimizer}",
            *(f"train.{item.strip()}" for item in rest.split(",") if item.strip()))


def run_arm(spec: str, profile: str) -> list[dict]:
    import torch

    from resharpen.experiments.set_complement.ema_window import (protocol, protocol_configs,
                                                                 train_windows)

    torch.set_num_threads(1)
    return train_windows(protocol_configs(arm_settings(spec), profile),
                         protocol(profile)["burn_in"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arms", nargs="+", metavar="OPTIMIZER:key=value,...")
    parser.add_argument("--profile", choices=("quick", "full"), default="quick")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    import numpy as np

    from resharpen.experiments.training.backends import run_local
    from resharpen.experiments.set_complement.ema_window import (
        LEARNED_FRACTION, STATIONARY_DRIFT, WINDOWS, floor_drift,
        set_complement_uniform_invalid_mass, window_gain)

    for spec in args.arms:
        arm_settings(spec)  # a malformed spec fails here, before any training
    results = dict(run_local(run_arm, [(spec, args.profile) for spec in args.arms],
                             args.workers))
    for index, spec in enumerate(args.arms):
        rows = results[index]
        bar = LEARNED_FRACTION * set_complement_uniform_invalid_mass(rows[0]["vocab"],
                                                                     rows[0]["train_len"])
        floor = float(np.median([r["raw"]["id_invalid_mass"] for r in rows]))
        drift = float(np.median([abs(floor_drift(r["history"], r["burn_in"])) for r in rows]))
        gains = " / ".join(f"{np.median([window_gain(r, w) for r in rows]):+.3f}"
                           for w in WINDOWS)
        print(f"{spec}: n {len(rows)}, raw ID floor (median) {floor:.4f} "
              f"({'learned' if floor < bar else 'not learned'}: bar {bar:.4f}), "
              f"|drift| {drift:.3f} ({'stationary' if drift < STATIONARY_DRIFT else 'moving'}), "
              f"ID gain W = {'/'.join(map(str, WINDOWS))}: {gains}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
