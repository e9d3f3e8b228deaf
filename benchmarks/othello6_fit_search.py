r"""The CPU fit search of 6 x 6 Othello (issue 21, requirement 5): train the task ``othello6``
with the package's language trainer (:func:`resharpen.experiments.training.next_token.train`: soft
legal-move targets, the stopping rule on the in-distribution illegal-move mass, raw / EMA / BEMA
weights) at a few settings, one run at a time on one torch thread, and print one row per
setting: whether and when the run reached the fit, the ID illegal-move mass of its raw and EMA
weights at the end, and its wall and CPU time.

Each ``--setting`` is a comma-separated list of SECTION.KEY=VALUE overrides on top of the
study's config (``experiments/configs/languages/othello6.toml``, full profile, pre placement,
seed 0), e.g. ``model.n_layers=4,model.d_model=128,train.lr=1e-3``. The ID illegal-move mass
is the trainer's (exact, float64, over the prefix lengths 1..train_len of the fixed evaluation
games; positions after a game's end have no target), printed at every record step.
``--budget S`` ends a setting at its first record step after S wall seconds (the machine is
shared: the CPU seconds are printed beside the wall seconds), reporting the curve so far.

    .venv/bin/python benchmarks/othello6_fit_search.py \
        --setting model.n_layers=4,model.d_model=128,train.steps=3000 --budget 200 \
        --jsonl runs.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STUDY = Path(__file__).resolve().parents[1] / "experiments/configs/languages/othello6.toml"


def study_base() -> dict:
    """The study's run config (full profile) of the pre placement, seed 0, without its name."""
    from resharpen.experiments.languages.grid import load_grid

    config = next(c for c in load_grid(STUDY, "full")["configs"]
                  if c["model"]["norm"] == "pre" and c["train"]["seed"] == 0)
    return {k: v for k, v in config.items() if k != "name"}


def parse_setting(text: str) -> dict:
    from resharpen.experiments.training.config import deep_merge, parse_sets

    return deep_merge({}, parse_sets([item for item in text.split(",") if item]))


class OutOfTime(Exception):
    """The setting's wall-clock budget is spent."""


def run(setting: str, progress: bool, budget: float = 0.0) -> dict:
    import torch

    from resharpen.experiments.training.config import deep_merge
    from resharpen.experiments.training.next_token_config import make_config
    from resharpen.experiments.training.next_token import train

    torch.set_num_threads(1)
    config = make_config(deep_merge(study_base(), parse_setting(setting)))
    wall, cpu = time.perf_counter(), time.process_time()
    rows = []

    def log(row: dict) -> None:  # every record step: the curve so far, and the budget
        rows.append({"step": row["step"], "fit": row["fit_id_invalid_mass"],
                     "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
        print(f"  step {row['step']}: ID illegal mass {row['fit_id_invalid_mass']:.4f} "
              f"({rows[-1]['wall_s']:.0f} s wall, {rows[-1]['cpu_s']:.0f} s CPU)", flush=True)
        if budget and rows[-1]["wall_s"] > budget and row["fit_id_invalid_mass"] > \
                config["fit"]["until_id_invalid_mass"]:
            raise OutOfTime

    try:
        result = train(config, progress=progress, log=log)
    except OutOfTime:
        best = min(rows, key=lambda r: r["fit"])
        return {"setting": setting, "config": {s: config[s] for s in ("task", "model", "train",
                                                                       "fit")},
                "stopped": "budget", "id_mass_raw": rows[-1]["fit"], "id_mass_ema": None,
                "ood_mass_raw": None, "fit_reached": False, "fit_step": None,
                "steps_trained": rows[-1]["step"], "best": best,
                "curve": [(r["step"], round(r["fit"], 4)) for r in rows],
                "wall_s": rows[-1]["wall_s"], "cpu_s": rows[-1]["cpu_s"]}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = result["summary"]
    raw, ema = summary["by_weights"]["raw"], summary["by_weights"]["ema"]
    fit = {k: v for k, v in summary.items() if k.startswith("fit_") or k == "steps_trained"}
    history = result["history"]
    curve = [(row["step"], round(row["fit_id_invalid_mass"], 4)) for row in history
             if "fit_id_invalid_mass" in row]
    return {"setting": setting, "stopped": "fit" if summary.get("fit_reached") else "cap",
            "config": {s: config[s] for s in ("task", "model", "train", "fit")},
            "id_mass_raw": raw["id_invalid_mass"], "id_mass_ema": ema["id_invalid_mass"],
            "ood_mass_raw": raw["ood_invalid_mass"],
            **fit, "curve": curve, "wall_s": wall, "cpu_s": cpu}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", required=True,
                        help="comma-separated SECTION.KEY=VALUE overrides (repeatable)")
    parser.add_argument("--jsonl", default=None, help="append one JSON row per run here")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="wall seconds per setting: end it at the first record step past "
                             "this (0: none)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    for setting in args.setting:
        row = run(setting, progress=not args.no_progress, budget=args.budget)
        ema = "-" if row["id_mass_ema"] is None else f"{row['id_mass_ema']:.4f}"
        ood = "-" if row["ood_mass_raw"] is None else f"{row['ood_mass_raw']:.4f}"
        print(f"{setting}: stopped by {row['stopped']}; fit reached {row['fit_reached']} at step "
              f"{row['fit_step']} (trained {row['steps_trained']}); ID illegal mass raw "
              f"{row['id_mass_raw']:.4f} ema {ema}; OOD raw {ood}; {row['wall_s']:.0f} s wall, "
              f"{row['cpu_s']:.0f} s CPU", flush=True)
        if args.jsonl:
            with open(args.jsonl, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
