r"""The fit search of the language grids (issue 21, requirement 1): for each task, train three
seeds of one scheme with the soft target until the raw weights' in-distribution invalid mass
reaches the fit (the language trainer's stopping rule, checked every ``train.log_every`` = 25
steps; ``--steps`` is the cap), and print per task whether and when each seed reached it, its
final raw ID invalid mass, the fit and a uniform prediction's ID invalid mass, and the wall time.

The setting is the quick grid's (``experiments/configs/languages/grid.toml``, profile quick):
2 layers x 32, 2 heads, GELU MLP, LayerNorm, no positions, L_train = 20, batch 32, lr 3e-3,
20 warm-up steps; Set Complement at v = 16 (L_train 4) and the multiset complement at v = 16
(L_train 8). ``--fit F`` (default: 5 % of the uniform prediction's ID invalid mass, per task).
``--set SECTION.KEY=VALUE`` (repeatable) overrides the setting, e.g. ``model.positional=rope``
or ``model.d_model=64``. One torch thread.

    .venv/bin/python benchmarks/language_fit_search.py --tasks dyck1,anbn --norm post --fit 0.015
    .venv/bin/python benchmarks/language_fit_search.py --tasks tomita3 --set model.positional=rope
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="dyck1,dyck2,dyck3,shuffle_dyck2,anbn,anbncn,tomita3,"
                                           "tomita5,tomita7,set_complement,multiset_complement")
    parser.add_argument("--norm", default="pre")
    parser.add_argument("--steps", type=int, default=1500, help="the cap")
    parser.add_argument("--fit", type=float, default=None)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=VALUE", help="override the setting")
    args = parser.parse_args(argv)

    import torch

    from resharpen.experiments.training.config import deep_merge, parse_sets
    from resharpen.experiments.training.next_token_config import (build_task, make_config,
                                                        uniform_id_invalid_mass)
    from resharpen.experiments.training.next_token import train_group

    torch.set_num_threads(1)
    for task in args.tasks.split(","):
        base = {"task": {"name": task, "train_len": 20, "eval_len": 60},
                "model": {"d_model": 32, "n_heads": 2, "n_layers": 2, "norm": args.norm},
                "train": {"steps": args.steps, "batch_size": 32, "lr": 3e-3, "warmup": 20,
                          "ema_decay": 0.99, "target": "soft", "log_every": 25},
                "eval": {"count": 64}}
        if task == "set_complement":
            base["task"].update(vocab=16, train_len=4, eval_len=15)
        if task == "multiset_complement":
            base["task"].update(vocab=16, train_len=8, eval_len=31)
        deep_merge(base, parse_sets(args.overrides))
        first = make_config(base)
        uniform = uniform_id_invalid_mass(build_task(first), first["task"]["train_len"])
        fit = args.fit if args.fit is not None else round(0.05 * uniform, 4)
        base["fit"] = {"until_id_invalid_mass": fit}
        configs = [make_config({**base, "train": {**base["train"], "seed": s}})
                   for s in range(args.seeds)]
        start = time.perf_counter()
        results = train_group(configs)
        runs = ", ".join(
            f"{'step ' + str(r['summary']['fit_step']) if r['summary']['fit_reached'] else 'not reached'}"
            f" (ID {r['summary']['by_weights']['raw']['id_invalid_mass']:.4f})" for r in results)
        setting = " ".join(args.overrides)
        print(f"{task:20s} {args.norm:10s} {setting} uniform {uniform:.3f} fit {fit:g}: {runs}; "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
