r"""Othello decided on the CPU: a learning-budget search on 6 x 6 Othello with soft targets.

One candidate setting per call: the language trainer
(:func:`resharpen.experiments.training.next_token.train`; soft targets = the exact legal-move
distribution, the stopping rule ``fit.until_id_invalid_mass``, raw / EMA / BEMA weights) on the
6 x 6 study's config (``experiments/configs/languages/othello6.toml``, full profile, pre
placement, seed 0) with ``--setting`` overrides, one torch thread. At every record step
(``train.log_every``) it appends one row of the learning curve to ``--csv``:

    step, games (= step x train.batch_size, the sequences seen), id_mass_raw (the trainer's
    exact float64 ID illegal-move mass, moves 1..train_len, 128 fixed evaluation games),
    id_mass_ema / id_mass_bema (with ``fit.averages=own_fit``, until that average reaches the
    fit), loss_smoothed, lr, cpu_s, wall_s (of this process since training started)

A run ends at the fit, at ``train.steps`` (the schedule's end) or at the first record step past
``--cpu-budget`` CPU seconds, whichever comes first (a budget stop keeps the curve so far; the
last row's ``stopped`` says which). ``--json`` appends a one-line summary (setting, endpoints,
first step at the fit, CPU and wall time).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/othello_search.py --name w128 \
        --setting model.n_layers=6,model.d_model=128,train.lr=3e-3,train.steps=16000 \
        --cpu-budget 600 --csv results/othello_search/w128.csv \
        --json results/othello_search/candidates.jsonl
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIELDS = ("step", "games", "id_mass_raw", "id_mass_ema", "id_mass_bema", "loss_smoothed", "lr",
          "cpu_s", "wall_s")


class OutOfBudget(Exception):
    """The candidate's CPU budget is spent."""


def run(name: str, setting: str, cpu_budget: float, csv_path: Path | None,
        progress: bool = False) -> dict:
    import torch

    from othello6_fit_search import parse_setting, study_base
    from resharpen.experiments.training.config import deep_merge
    from resharpen.experiments.training.next_token_config import make_config
    from resharpen.experiments.training.next_token import train

    torch.set_num_threads(1)
    config = make_config(deep_merge(study_base(), parse_setting(setting)))
    batch, until = config["train"]["batch_size"], config["fit"]["until_id_invalid_mass"]
    rows: list[dict] = []
    if csv_path is not None:
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(FIELDS)
    wall, cpu = time.perf_counter(), time.process_time()

    def log(row: dict) -> None:
        out = {"step": row["step"], "games": row["step"] * batch,
               "id_mass_raw": round(row["fit_id_invalid_mass"], 5),
               "id_mass_ema": round(row["fit_id_invalid_mass_ema"], 5)
               if "fit_id_invalid_mass_ema" in row else "",
               "id_mass_bema": round(row["fit_id_invalid_mass_bema"], 5)
               if "fit_id_invalid_mass_bema" in row else "",
               "loss_smoothed": round(row["loss_smoothed"], 5), "lr": f"{row['lr']:.3g}",
               "cpu_s": round(time.process_time() - cpu, 1),
               "wall_s": round(time.perf_counter() - wall, 1)}
        rows.append(out)
        if csv_path is not None:
            with open(csv_path, "a", newline="", encoding="utf-8") as f:
                csv.writer(f).writerow([out[k] for k in FIELDS])
        print(f"[{name}] step {out['step']} games {out['games']}: ID illegal mass "
              f"{out['id_mass_raw']:.4f} (ema {out['id_mass_ema']}) "
              f"{out['cpu_s']:.0f} s CPU, {out['wall_s']:.0f} s wall", flush=True)
        if cpu_budget and out["cpu_s"] > cpu_budget and row["fit_id_invalid_mass"] > until:
            raise OutOfBudget

    summary: dict = {"name": name, "setting": setting,
                     "config": {s: config[s] for s in ("model", "train", "fit")}}
    try:
        result = train(config, progress=progress, log=log)
        s = result["summary"]
        summary.update(stopped="fit" if s.get("fit_reached") else "cap",
                       fit_step=s.get("fit_step"), fit_steps=s.get("fit_steps"),
                       final={kind: {k: s["by_weights"][kind][k] for k in
                                     ("id_invalid_mass", "ood_invalid_mass", "id_kl",
                                      "id_top1_invalid")} for kind in s["by_weights"]})
    except OutOfBudget:
        summary.update(stopped="cpu_budget", fit_step=None)
    last, best = rows[-1], min(rows, key=lambda r: r["id_mass_raw"])
    summary.update(steps=last["step"], games=last["games"], first=rows[0], last=last,
                   best={"step": best["step"], "id_mass_raw": best["id_mass_raw"]},
                   cpu_s=round(time.process_time() - cpu, 1),
                   wall_s=round(time.perf_counter() - wall, 1))
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the candidate's name")
    parser.add_argument("--setting", default="", help="comma-separated SECTION.KEY=VALUE "
                        "overrides of the othello6 study's config")
    parser.add_argument("--cpu-budget", type=float, default=3600.0,
                        help="CPU seconds: end at the first record step past this (0: none)")
    parser.add_argument("--csv", default=None, help="write the learning curve here")
    parser.add_argument("--json", default=None, help="append the one-line summary here")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    summary = run(args.name, args.setting, args.cpu_budget,
                  Path(args.csv) if args.csv else None, progress=args.progress)
    print(json.dumps(summary), flush=True)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
