r"""CPU seconds of the quick profile of a Set Complement sweep file, ensemble by ensemble (the
budget of the quick ``fit.*`` claims, issue 22 requirement 6; issue 20 requirement 5).

Each ensemble of the file's quick profile (``resharpen.experiments.training.sweep.group_runs``, the
file's ``sweep.ensemble``) is trained in this process with ``train_group`` (nothing is written)
and timed with ``time.process_time``: CPU time of one thread, which the load of a shared machine
moves far less than wall time. ``--set section.key=value`` overrides every run config (e.g. the
evaluation interval ``train.eval_every=25``), ``--groups 0,2`` times only those ensembles.
``window`` in place of a file times the quick EMA-window protocol instead
(``set_complement.ema_window``: one ensemble per optimizer arm, ``--groups`` picks arms by
index). The imports are made before the timing. Run it with ``OMP_NUM_THREADS=1``, as the ledger's workers
and their sweep workers run (``ledger.runner``): with two BLAS threads under load scipy's
``lstsq`` (post's K at every evaluation) costs about 250x more CPU.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quick_sweep_cpu.py fit_placements_v32
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quick_sweep_cpu.py fit_noise_v32 --groups 0
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quick_sweep_cpu.py window --groups 0
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", help="a file name under experiments/configs/set_complement/, "
                                      "or 'window' (the EMA-window protocol)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--groups", default="", help="comma-separated ensemble indices")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    import resharpen.experiments.set_complement.effective_k  # noqa: F401  (imports first)
    import resharpen.experiments.set_complement.fit_report  # noqa: F401
    from resharpen.experiments.training.config import CONFIG_DIR
    from resharpen.experiments.training.sweep import group_runs
    from resharpen.experiments.set_complement.sweep import plan
    from resharpen.experiments.set_complement.train import train_group

    if args.sweep == "window":
        return window(args.groups)
    planned = plan(CONFIG_DIR / "set_complement" / f"{args.sweep}.toml", None, "quick")
    configs = planned["configs"]
    for item in args.set:
        dotted, value = item.split("=", 1)
        section, key = dotted.split(".")
        for config in configs:
            config[section][key] = json.loads(value)
    groups = group_runs(configs, planned["settings"]["ensemble"])
    chosen = {int(g) for g in args.groups.split(",") if g} or set(range(len(groups)))
    total = 0.0
    for index, group in enumerate(groups):
        if index not in chosen:
            continue
        start = time.process_time()
        results = train_group([configs[i] for i in group])
        seconds = time.process_time() - start
        total += seconds
        steps = max(r["summary"].get("steps_trained") or configs[group[0]]["train"]["steps"]
                    for r in results)
        print(f"{args.sweep} ensemble {index}: {len(group)} runs, "
              f"norm {configs[group[0]]['model']['norm']}, {steps} steps, CPU {seconds:.2f} s",
              flush=True)
    print(f"{args.sweep}: {len(chosen)} of {len(groups)} ensembles, CPU {total:.2f} s")
    return 0


def window(groups: str) -> int:
    """CPU seconds of each optimizer arm of the quick EMA-window protocol."""
    from resharpen.experiments.set_complement.ema_window import (ARMS, arm_configs, protocol,
                                                                 train_windows)

    arms = list(ARMS)
    chosen = {int(g) for g in groups.split(",") if g} or set(range(len(arms)))
    total = 0.0
    for index, arm in enumerate(arms):
        if index not in chosen:
            continue
        start = time.process_time()
        train_windows(arm_configs(arm, "quick"), protocol("quick")["burn_in"])
        seconds = time.process_time() - start
        total += seconds
        print(f"window arm {arm}: {protocol('quick')['seeds']} seeds, "
              f"{protocol('quick')['steps']} steps, CPU {seconds:.2f} s", flush=True)
    print(f"window: {len(chosen)} of {len(arms)} arms, CPU {total:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
