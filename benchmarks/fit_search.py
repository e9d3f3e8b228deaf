r"""Search for optimizer settings that train the one-layer attention-only model to a fit.

Task and model: the Set Complement Task over V = {0..v-1}; the one-layer, one-head,
attention-only transformer (no MLP, no positions; :mod:`resharpen.experiments.model.transformer`) with a
norm placement in none | pre | post | attn_out | peri (RMSNorm), width d_model = mult * v.
Training data: each sequence is a uniformly random ordering of L_train + 1 distinct tokens
(L_train = v/4, as in the package's trainer), batch 64, one torch thread.

Targets (``--target``): at position s (the prefix t_1..t_s) the exact next-token distribution is
p* = uniform on V minus {t_1..t_s}.
    soft      cross-entropy against p*:  -sum_x p*(x) log p(x); the exact expectation of the
              sampled loss, no label noise.
    k<N>      the mean cross-entropy over N labels from p* at each position (the label-noise
              variance is 1/N of the sampled case): the sequence's own next token and N-1
              draws (generator seed + 2_000_003). The loss is the package's own
              (training/targets.py), so these runs train exactly as ``train.target`` /
              ``train.labels_per_position`` do. (The search's records were made with an earlier
              version of this script that drew all N labels fresh: same law, other numbers.)

Optimizer: the package's AdamW (``make_optimizer``: weight decay on matrices only, none on norm
gains) and schedule (``lr_factor``: linear warm-up, then constant or cosine from lr to
min_lr_ratio * lr at the step cap), gradient-norm clipping at ``--grad-clip``.

Fit (the stopping rule): every ``--check-every`` steps the raw weights are evaluated exactly in
float64 (``evaluate_lengths``: 64 inputs per length, evaluation seed 1234); the fit is the mean
over lengths s = 1..L_train of the mean invalid mass sum_{x in t} p(x). A run stops at the
first check with fit <= ``--fit`` (default 1e-3 at v <= 32, 5e-3 at v = 64), or at the cap.

Every combination of the listed values is one setting; each setting is run for every placement
and seed. The output is one row per (setting, placement): seeds that reached the fit / seeds
tried, median steps to fit (over the seeds that reached it; "-" if none), median final fit,
median out-of-distribution invalid mass (lengths > L_train, at the stop), seconds per run (wall
and CPU; the machine may be shared, CPU time is the steadier figure). ``--thresholds`` adds the
steps at which each run's curve first reached looser fit levels (for arms that miss the target).

The defaults are the setting this search chose (search.md): AdamW lr 3e-3 constant, no warm-up,
init_std 0.1, d_model = 2v, weight decay 0.01 on matrices, clipping 1.0, betas (0.9, 0.98).

    python fit_search.py --vocab 16 --seeds 0 1 2 3 4 5 6 7 --check-every 25 --jobs 2
    python fit_search.py --vocab 32 --seeds 0 1 2 3 4 5 6 7 --jobs 2
    python fit_search.py --vocab 64 --seeds 0 1 2 3 4 5 6 7 --jobs 2
    python fit_search.py --vocab 32 --lr 1e-3 3e-3 1e-2 --init-std 0.02 0.1 --width-mult 1 2
    python fit_search.py --vocab 32 --placements none --target k1 k4 k16 soft \
        --schedule constant cosine --seeds 0 1 2 --thresholds 5e-2 3e-2 2e-2 1e-2 1e-3
    python fit_search.py --summarize runs.jsonl       # the table of recorded runs
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.schema import NORM_PLACEMENTS
from resharpen.experiments.training.schema import FIRST_PLACEMENTS
from resharpen.experiments.training.loop import lr_factor, make_optimizer
from resharpen.experiments.training.targets import (TrainingTarget, cross_entropy, label_generator,
                                                make_batch)
from resharpen.experiments.set_complement.evaluate import evaluate_lengths
from resharpen.experiments.set_complement.train import next_token_targets

BATCH = 64
EVAL_PER_LENGTH = 64
EVAL_SEED = 1234
DATA_SEED_OFFSET = 1_000_003  # the package trainer's data generator: seed + 1_000_003


@dataclass(frozen=True)
class Setting:
    """One point of the search grid (everything but placement and seed)."""

    target: str
    lr: float
    schedule: str
    init_std: float
    width_mult: int
    weight_decay: float
    warmup: int
    min_lr_ratio: float
    grad_clip: float
    beta2: float

    def label(self) -> str:
        sched = "const" if self.schedule == "constant" else f"cos{self.min_lr_ratio:g}"
        return (f"{self.target} lr={self.lr:g} {sched} wu={self.warmup} init={self.init_std:g} "
                f"d={self.width_mult}v wd={self.weight_decay:g} clip={self.grad_clip:g} "
                f"b2={self.beta2:g}")


def default_fit(vocab: int) -> float:
    """The fit target of issue 13: 1e-3 at v <= 32, 5e-3 above."""
    return 1e-3 if vocab <= 32 else 5e-3


def training_target(target: str) -> TrainingTarget:
    """``--target`` (soft | k<N>) as the package's training target."""
    return TrainingTarget("soft") if target == "soft" else TrainingTarget("sampled", int(target[1:]))


def loss_fn(model: Transformer, seqs: torch.Tensor, vocab: int, target: str,
            generator: torch.Generator) -> torch.Tensor:
    """The package's training loss (training/targets.py: :func:`make_batch`, :func:`cross_entropy`)
    of ``model`` on sequences (B, L+1) under ``target`` (module docstring)."""
    batch = make_batch(seqs, training_target(target),
                       lambda tokens: next_token_targets(tokens, vocab), generator)
    return cross_entropy(model(batch.inputs), batch)


def in_distribution_fit(model: Transformer, vocab: int, train_len: int) -> tuple[float, float]:
    """(mean invalid mass over lengths 1..L_train, mean over L_train+1..v-1), exact, float64."""
    rows = evaluate_lengths(model, vocab, None, EVAL_PER_LENGTH, EVAL_SEED, torch.float64)
    ind = [r["invalid_mass"] for r in rows if r["length"] <= train_len]
    ood = [r["invalid_mass"] for r in rows if r["length"] > train_len]
    return sum(ind) / len(ind), sum(ood) / len(ood)


def run(setting: Setting, placement: str, seed: int, vocab: int, fit: float, cap: int,
        check_every: int) -> dict:
    """Train one model until the fit or the cap; return its record."""
    torch.set_num_threads(1)
    train_len = vocab // 4
    train = {"lr": setting.lr, "weight_decay": setting.weight_decay, "beta1": 0.9,
             "beta2": setting.beta2, "warmup": setting.warmup, "steps": cap,
             "schedule": setting.schedule, "min_lr_ratio": setting.min_lr_ratio}
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(vocab=vocab, d_model=setting.width_mult * vocab,
                                    norm=placement, init_std=setting.init_std))
    optimizer = make_optimizer(model, train)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: lr_factor(k, train))
    data = torch.Generator().manual_seed(seed + DATA_SEED_OFFSET)
    labels = label_generator(seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    reached, current, ood, curve = None, float("nan"), float("nan"), []
    for step in range(1, cap + 1):
        seqs = torch.rand(BATCH, vocab, generator=data).argsort(1)[:, :train_len + 1]
        loss = loss_fn(model, seqs, vocab, setting.target, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if setting.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), setting.grad_clip)
        optimizer.step()
        model.after_optimizer_step()  # nGPT: weights back on the sphere; others: nothing
        schedule.step()
        if step % check_every == 0 or step == cap:
            current, ood = in_distribution_fit(model, vocab, train_len)
            curve.append((step, current))
            if current <= fit:
                reached = step
                break
            if current != current:  # NaN: diverged
                break
    return {"setting": asdict(setting), "label": setting.label(), "placement": placement,
            "seed": seed, "vocab": vocab, "fit_target": fit, "cap": cap, "steps_to_fit": reached,
            "steps_run": step, "final_fit": current, "ood_invalid_mass": ood,
            "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu_start, "curve": curve}


def summarize(records: list[dict]) -> list[dict]:
    """One row per (v, fit target, setting, placement), in first-seen order."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["vocab"], r["fit_target"], r["label"], r["placement"]), []).append(r)
    rows = []
    for (vocab, target, label, placement), rs in groups.items():
        hits = [r["steps_to_fit"] for r in rs if r["steps_to_fit"] is not None]
        rows.append({"v": vocab, "fit": target, "placement": placement, "setting": label,
                     "reached": f"{len(hits)}/{len(rs)}",
                     "median_steps": statistics.median(hits) if hits else None,
                     "max_steps": max(hits) if hits else None,
                     "median_fit": statistics.median(r["final_fit"] for r in rs),
                     "median_ood": statistics.median(r["ood_invalid_mass"] for r in rs),
                     "seconds": statistics.median(r["seconds"] for r in rs),
                     "cpu_seconds": statistics.median(r.get("cpu_seconds", float("nan"))
                                                      for r in rs)})
    return rows


def markdown(rows: list[dict]) -> str:
    head = ("| v | fit <= | placement | setting | reached | median steps | max steps | "
            "median fit | "
            "median OOD inv. mass | s/run (wall) | s/run (CPU) |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")

    def steps(x):
        return "-" if x is None else f"{x:g}"
    return head + "".join(
        f"| {r['v']} | {r['fit']:g} | {r['placement']} | {r['setting']} | {r['reached']} | "
        f"{steps(r['median_steps'])} | {steps(r['max_steps'])} | {r['median_fit']:.2e} | "
        f"{r['median_ood']:.3f} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} |\n" for r in rows)


def threshold_table(records: list[dict], thresholds: list[float]) -> str:
    """Markdown: per (setting, placement), for each fit level, the seeds whose curve reached it
    and the median first check step at which they did (the matched-fit levels of a grid whose
    arms do not all reach the stopping target), and the median fit at the end."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["vocab"], r["label"], r["placement"]), []).append(r)
    out = ("| v | placement | setting | " + " | ".join(f"fit <= {t:g}" for t in thresholds)
           + " | median fit at stop |\n|---|---|---|" + "---|" * (len(thresholds) + 1) + "\n")
    for (v, label, placement), rs in groups.items():
        cells = []
        for t in thresholds:
            first = [next((s for s, x in r["curve"] if x <= t), None) for r in rs]
            hit = [s for s in first if s is not None]
            cells.append(f"{len(hit)}/{len(rs)}" + (f" @{statistics.median(hit):g}" if hit else ""))
        final = statistics.median(r["final_fit"] for r in rs)
        out += f"| {v} | {placement} | {label} | " + " | ".join(cells) + f" | {final:.2e} |\n"
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vocab", type=int, default=32)
    p.add_argument("--placements", nargs="+", default=list(FIRST_PLACEMENTS),
                   choices=NORM_PLACEMENTS)
    p.add_argument("--target", nargs="+", default=["soft"],
                   help="soft or k<N> (N sampled labels per position), e.g. soft k1 k4 k16")
    p.add_argument("--lr", nargs="+", type=float, default=[3e-3])
    p.add_argument("--schedule", nargs="+", default=["constant"], choices=("constant", "cosine"))
    p.add_argument("--min-lr-ratio", nargs="+", type=float, default=[0.1])
    p.add_argument("--warmup", nargs="+", type=int, default=[0])
    p.add_argument("--init-std", nargs="+", type=float, default=[0.1])
    p.add_argument("--width-mult", nargs="+", type=int, default=[2], help="d_model = mult * v")
    p.add_argument("--weight-decay", nargs="+", type=float, default=[0.01])
    p.add_argument("--grad-clip", nargs="+", type=float, default=[1.0])
    p.add_argument("--beta2", nargs="+", type=float, default=[0.98])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--fit", type=float, default=None, help="default 1e-3 (v <= 32), 5e-3 above")
    p.add_argument("--cap", type=int, default=None, help="step cap; default 125 v")
    p.add_argument("--check-every", type=int, default=50, help="steps between fit checks")
    p.add_argument("--jobs", type=int, default=1, help="worker processes, one thread each")
    p.add_argument("--jsonl", default=None, help="append every run's record to this file")
    p.add_argument("--summarize", nargs="+", default=None, metavar="JSONL",
                   help="print the table of the records in these files and train nothing")
    p.add_argument("--thresholds", nargs="+", type=float, default=None,
                   help="also print, per setting, the first check at which each of these fit "
                        "levels was reached (read off the recorded curves)")
    args = p.parse_args(argv)
    for t in args.target:
        if t != "soft" and not (t.startswith("k") and t[1:].isdigit() and int(t[1:]) >= 1):
            p.error(f"target {t!r} is not 'soft' or k<N> with N >= 1")
    if args.vocab < 8 or args.vocab % 4:
        p.error(f"vocab must be a multiple of 4 and >= 8, got {args.vocab}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.summarize:
        records = [json.loads(line) for path in args.summarize for line in open(path)]
        print(markdown(summarize(records)))
        if args.thresholds:
            print(threshold_table(records, args.thresholds))
        return
    fit = args.fit if args.fit is not None else default_fit(args.vocab)
    cap = args.cap if args.cap is not None else 125 * args.vocab
    settings = [Setting(*values) for values in itertools.product(
        args.target, args.lr, args.schedule, args.init_std, args.width_mult, args.weight_decay,
        args.warmup, args.min_lr_ratio, args.grad_clip, args.beta2)]
    jobs = [(s, pl, seed, args.vocab, fit, cap, args.check_every)
            for s in settings for pl in args.placements for seed in args.seeds]
    print(f"v={args.vocab} fit<={fit:g} cap={cap} runs={len(jobs)}", file=sys.stderr, flush=True)
    records = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for r in pool.map(run, *zip(*jobs)):
            records.append(r)
            print(f"  {r['placement']:8s} seed {r['seed']} {r['label']}: "
                  f"steps {r['steps_to_fit']} fit {r['final_fit']:.2e} "
                  f"ood {r['ood_invalid_mass']:.3f} {r['seconds']:.1f}s "
                  f"(cpu {r['cpu_seconds']:.1f}s)",
                  file=sys.stderr, flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
    print(markdown(summarize(records)))
    if args.thresholds:
        print(threshold_table(records, args.thresholds))


if __name__ == "__main__":
    main()
