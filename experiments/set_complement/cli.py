"""Subcommands ``train``, ``sweep``, ``report`` and ``compare`` of the ``resharpen`` command
line.

Parsing imports nothing heavy: the handlers import torch, numpy and matplotlib."""
from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Callable

from resharpen.experiments.common.cli_args import (add_backend_options, PATH, UsageError, bad_input,
                                                  count, positive_int, seed_int)
from resharpen.experiments.common import limits
from resharpen.experiments.common.limits import add_max_memory
from resharpen.experiments.common.profiles import PROFILES
from resharpen.experiments.set_complement.sweep import MAX_SWEEP_RUNS
from resharpen.experiments.training.config import SWEEP_FIELDS
from resharpen.experiments.training.plugins import add_plugin_option, load_plugins

MAX_ENSEMBLE = SWEEP_FIELDS["ensemble"].hi


def add_train(sub) -> None:
    p = sub.add_parser("train", help="train one model on the Set Complement Task from a TOML config")
    p.add_argument("config", type=PATH,
                   help="TOML file, or the name of a packaged config, e.g. "
                                  "set_complement/base (`resharpen configs` lists them; works "
                                  "from any folder; a file that exists wins)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set model.norm=post (repeatable)")
    p.add_argument("--profile", choices=PROFILES, default="full",
                   help="apply the config's [profile.<name>] tables: full (the real sizes, the "
                        "default) or quick (minutes on 2 cores)")
    p.add_argument("--out", default=None, type=PATH,
                   help="run folder (default out/runs/<name>)")
    add_max_memory(p)
    add_plugin_option(p)
    p.set_defaults(handler=run_train)


HEADLINE = ("id_invalid_mass", "ood_invalid_mass", "id_kl", "ood_kl", "ood_tv")
"""The numbers ``train`` prints for each weight set: all finite, or no success is reported."""


def run_train(args) -> int:
    from resharpen.experiments.common.cli_args import require_finite
    from resharpen.experiments.training.config import run_folder
    from resharpen.experiments.training.runs import check_run_folder
    from resharpen.experiments.set_complement.config import load_config

    with bad_input():  # the config file, the overrides and the run folder, before torch
        load_plugins(args.plugin)
        config = load_config(args.config, args.overrides, profile=args.profile)
        limits.require(limits.set_complement_training_bytes(config),
                       f"train (vocab {config['task']['vocab']}, d_model "
                       f"{config['model']['d_model']}, batch {config['train']['batch_size']})",
                       args.max_memory)
        folder = Path(args.out) if args.out else run_folder(config["name"])
        # creates nothing: save_run makes the folder
        check_run_folder(folder, "--out" if args.out else "run folder", config)
    from resharpen.experiments.training.loop import WEIGHTS, save_run
    from resharpen.experiments.set_complement.train import train

    result = train(config)
    s = result["summary"]
    for kind in WEIGHTS:  # a diverged run is not a result: nothing saved, one line
        require_finite({f"the {kind} weights' {key}": s["by_weights"][kind][key]
                        for key in HEADLINE},
                       f"train {config['name']!r} diverged (final loss {s['final_loss']:.4g}); "
                       "lower train.lr or model.init_std")
    save_run(result, folder, profile=args.profile)  # the folder is made here; a full disk leaves none
    v, length = config["task"]["vocab"], config["task"]["train_len"]
    print(f"v={v} L_train={length} norm={config['model']['norm']} "
          f"({s['seconds']:.1f} s); ID = lengths 1..{length}, OOD = {length + 1}..{v - 1}")
    print(f"{'weights':8} {'ID inv':>8} {'OOD inv':>8} {'ID KL':>8} {'OOD KL':>8} {'OOD TV':>8} "
          f"{'LG score':>8} {'margin a':>8}")
    undefined = False
    for kind in WEIGHTS:
        b = s["by_weights"][kind]
        mark = " *" if kind == s["primary"] else ""
        a = b["margin_exponent"]
        undefined |= a != a
        print(f"{kind:8} {b['id_invalid_mass']:8.4f} {b['ood_invalid_mass']:8.4f} "
              f"{b['id_kl']:8.4f} {b['ood_kl']:8.4f} {b['ood_tv']:8.4f} {b['lg_score']:8d} "
              + (f"{a:8.3f}" if a == a else f"{'-':>8}") + mark)
    chance_id = sum(range(1, length + 1)) / (length * v)
    chance_ood = sum(range(length + 1, v)) / ((v - 1 - length) * v) if v - 1 > length else None
    print(f"inv = mean invalid mass (chance, the uniform prediction's s/v: ID {chance_id:.4f}"
          + (f", OOD {chance_ood:.4f}" if chance_ood is not None else "") + "); KL(p*||p) and "
          "TV against the exact target p*, 0 = exact")
    print(f"LG score = the largest s with mean invalid mass <= {config['eval']['threshold']:g} at "
          f"every length 1..s (0: not even s = 1; at most {v - 1})")
    theory = s["margin_exponent_attn_out_theory"]
    print("margin a: margin ~ s^-a fitted on the lengths with a positive margin; theory a = 1 "
          "(no norm)" + (f", {theory:.3f} (attn_out formula, same lengths)" if theory == theory
                         else "")
          + ("; - = undefined: fewer than 3 lengths with a positive margin" if undefined else ""))
    print(f"* = primary weights; saved to {folder}")
    return 0


def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="run or resume a random-search sweep")
    p.add_argument("config", type=PATH,
                   help="sweep TOML, or the name of a packaged sweep, e.g. "
                                  "set_complement/random_search (`resharpen configs` lists them; "
                                  "a file that exists wins)")
    p.add_argument("--runs", type=positive_int, default=None,
                   help=f"number of runs (default: the file's; at most {MAX_SWEEP_RUNS:,})")
    add_backend_options(p)
    p.add_argument("--profile", choices=PROFILES, default="full",
                   help="apply the sweep file's [profile.<name>] tables: full (the real sizes, "
                        "the default) or quick (minutes on 2 cores)")
    p.add_argument("--out", default=None, type=PATH,
                   help="sweep folder (default out/sweeps/<name>)")
    p.add_argument("--ensemble", type=count(MAX_ENSEMBLE), default=None,
                   help="train up to this many runs that differ only in seed, lr, weight decay, "
                        "EMA, init scale, attention-output scale or dropout rates as one "
                        "batched ensemble (default: the file's "
                        f"sweep.ensemble, 1 = every run alone; at most {MAX_ENSEMBLE})")
    add_max_memory(p)
    add_plugin_option(p)
    p.set_defaults(handler=run_sweep_cli)


def run_sweep_cli(args) -> int:
    from resharpen.experiments.training.backends import check_backend
    from resharpen.experiments.training.config import sweep_folder
    from resharpen.experiments.common.io import check_writable_target

    with bad_input():  # the backend, the sweep file, --runs and --out, before any write
        load_plugins(args.plugin)
        check_backend(args.backend, args.address)
        from resharpen.experiments.training.sweep import read_table
        from resharpen.experiments.set_complement.sweep import plan, run_sweep

        planned = plan(args.config, args.runs, args.profile)
        parallel = min(args.workers, len(planned["configs"])) * (
            args.ensemble or planned["settings"]["ensemble"] or 1)
        limits.require(parallel * max(map(limits.set_complement_training_bytes,
                                          planned["configs"])),
                       f"sweep ({len(planned['configs'])} runs, {parallel} trained at a time)",
                       args.max_memory)
        from resharpen.experiments.common.folder_kinds import check_kind

        check_kind(args.out or sweep_folder(planned["name"]), "sweep",
                   "--out" if args.out else "sweep folder")
        check_writable_target(args.out or sweep_folder(planned["name"]),
                              "--out" if args.out else "sweep folder")
    root = run_sweep(args.config, out=args.out, runs=args.runs, workers=args.workers,
                     backend=args.backend, address=args.address, profile=args.profile,
                     ensemble=args.ensemble)
    rows = read_table(root)
    print(f"{len(rows)} finished runs in {root}; table: {root / 'table.csv'}; "
          f"next: resharpen report {root}", file=sys.stderr)
    for warning in _warnings(root):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def add_report(sub, figures: Callable[[Path], list[Path]] | None = None) -> None:
    """``resharpen report``; ``figures(folder)`` draws a sweep's figures into ``folder/figs``
    and returns the files written. The front (:mod:`resharpen.cli`) passes it: the figures
    belong to paper_figs, which the experiments do not import."""
    p = sub.add_parser("report", help="tables and figures of a finished sweep")
    p.add_argument("sweep", nargs="?", type=PATH,
                   help="sweep folder, e.g. out/sweeps/random_search")
    p.add_argument("--no-figs", action="store_true", help="tables only")
    p.add_argument("--fit-json", metavar="PATH", type=PATH,
                   help="also write every run's per-length fit report (margins, s m_s, fitted "
                        "closed form, effective K, attention uniformity, invalid mass; "
                        "experiments/set_complement/fit_report.py) as JSON ('-' = stdout)")
    p.set_defaults(handler=partial(run_report, figures=figures))


def run_report(args, figures: Callable[[Path], list[Path]] | None = None) -> int:
    from resharpen.experiments.training.sweep import read_table
    from resharpen.experiments.set_complement.sweep_report import (check_sweep_folder, report,
                                                                   runs_with_data)

    from resharpen.experiments.common.io import check_folder_files, check_output_file
    from resharpen.experiments.common.stored import read_json
    from resharpen.experiments.training.sweep import REPORT_FILES

    with bad_input():
        if args.sweep is None:
            raise UsageError("name a sweep folder, e.g. out/sweeps/random_search")
        check_folder_files(args.sweep, REPORT_FILES, "sweep folder")
        if args.fit_json and args.fit_json != "-":
            check_output_file(args.fit_json, "--fit-json")
        marker = Path(args.sweep) / "sweep.json"
        if marker.is_file():
            kind = read_json(marker, "sweep file")
            if isinstance(kind, dict) and kind.get("kind") == "task_grid":
                raise UsageError(f"{args.sweep!r} is a task grid folder: report it with "
                                 "`resharpen langs report`")
        if not read_table(args.sweep):
            raise UsageError(f"sweep {args.sweep!r} has no finished runs yet")
        from resharpen.experiments.common.io import check_within

        if figures is not None and not args.no_figs:  # no figure through a link out of it
            check_within(args.sweep, Path(args.sweep) / "figs", "figures folder")
        check_sweep_folder(args.sweep)  # sweep.json, the table and the runs' files, checked
        runs_with_data(args.sweep)
    if args.fit_json:
        write_fit_json(args.sweep, args.fit_json)
    text, paths = report(args.sweep)
    if any(row.get("fit_reached") is not None for row in read_table(args.sweep)):
        from resharpen.experiments.set_complement.fit_report import fit_table, sweep_reports

        text += ("\n\n## Trained to the fit: per placement (raw weights; "
                 "experiments/set_complement/fit_report.py)\n\n"
                 + fit_table(sweep_reports(args.sweep, "raw")))
        from resharpen.experiments.training.sweep import load_runs

        if any(run["summary"].get("ladder") for run in load_runs(args.sweep)):
            from resharpen.experiments.set_complement.fit_report import ladder_table

            text += ("\n\n## OOD invalid mass against the fit (raw weights, mean (sd) over "
                     "seeds at each rung; fit_report.ladder_table)\n\n"
                     + ladder_table(args.sweep))
    if figures is not None and not args.no_figs:
        paths += figures(Path(args.sweep))
    print(text)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    for warning in _warnings(args.sweep):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _warnings(root) -> list[str]:
    """The unbalanced-arm warnings of a sweep folder (``sweep_report.arm_warnings``)."""
    from resharpen.experiments.common.stored import read_json
    from resharpen.experiments.training.sweep import read_table
    from resharpen.experiments.set_complement.sweep_report import arm_warnings

    marker = read_json(Path(root) / "sweep.json", "sweep file")
    identity = marker.get("identity", {}) if isinstance(marker, dict) else {}
    return arm_warnings(read_table(root), identity if isinstance(identity, dict) else {})


def write_fit_json(sweep: str, target: str) -> None:
    """The per-length fit reports (raw weights) of a sweep's runs, as JSON to ``target``."""
    from resharpen.experiments.common.io import atomic_write_text, check_output_file
    from resharpen.experiments.common.json_text import dumps_json
    from resharpen.experiments.set_complement.fit_report import sweep_reports

    with bad_input():
        if target != "-":
            check_output_file(target, "--fit-json")
        text = dumps_json(sweep_reports(sweep, "raw"), indent=1)
    if target == "-":
        print(text)
    else:
        atomic_write_text(Path(target), text + "\n")
        print(f"wrote {target}", file=sys.stderr)


def add_compare(sub) -> None:
    p = sub.add_parser("compare", help="hold a trained one-layer run (placement none, pre, post, "
                                       "attn_out, peri or pre_nofinal) against the lemma's "
                                       "construction (gain-folded fit of B and D, balance, "
                                       "margins)")
    p.add_argument("run", type=PATH, help="finished run folder, e.g. out/runs/base")
    p.add_argument("--weights", choices=("raw", "ema", "bema"), default=None,
                   help="weight set (default: the run's primary weights)")
    p.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the full comparison as JSON ('-' = stdout)")
    p.add_argument("--count", type=positive_int, default=256,
                   help="inputs per length (default 256; at most what fits in memory, checked "
                        "before the inputs are drawn)")
    p.add_argument("--seed", type=seed_int, default=0,
                   help="seed of the sampled inputs and of the random model whose residual is "
                        "the reference (default 0)")
    add_max_memory(p)
    p.set_defaults(handler=run_compare)


def run_compare(args) -> int:
    from resharpen.experiments.common.io import atomic_write_text, check_output_file
    from resharpen.experiments.set_complement.compare import (check_comparable, compare_model,
                                                              load_trained)

    from resharpen.experiments.common.cli_args import require_finite

    with bad_input():  # the run folder, its weights, its placement, the sizes, the JSON target
        if args.json and args.json != "-":
            check_output_file(args.json, "--json")
        model, config, weights = load_trained(args.run, args.weights)  # checked, then read
        check_comparable(model)
        cfg = model.cfg  # the inputs' size, before they are drawn
        limits.require(limits.compare_bytes(args.count, cfg.vocab, cfg.d_model,
                                            cfg.head_width, cfg.value_width),
                       f"compare (v = {cfg.vocab}, --count {args.count} inputs per length)",
                       args.max_memory)
    record = {"run": str(args.run), "weights": weights,
              **compare_model(model, config["task"]["train_len"], args.count, args.seed,
                              args.max_memory)}
    require_finite({key: record[key] for key in ("relative_residual",
                                                 "random_relative_residual")},
                   f"compare {args.run}")
    if args.json:
        from resharpen.experiments.common.json_text import dumps_json

        text = dumps_json(record)
        print(text) if args.json == "-" else atomic_write_text(args.json, text + "\n")
    print(format_comparison(record), file=sys.stderr if args.json == "-" else sys.stdout)
    return 0


def format_comparison(record: dict) -> str:
    """A short table: the fit with its reference (a random model's residual), the balance and,
    at a dozen lengths, trained next to fitted and constructed, with the chance invalid mass;
    every column and symbol explained below it."""
    def num(value, width: int = 10) -> str:
        return f"{value:{width}.4g}" if value is not None else f"{'-':>{width}}"

    v, L = record["vocab"], record["train_len"]
    lam, beta, att = record["lambda"], record["beta"], record["attention"]
    placement = record.get("placement", "none")
    lines = [
        f"{record['run']} ({record['weights']} weights): placement {placement}"
        + (f" ({record.get('norm_kind')} norm)" if placement != "none" else "")
        + f", v={v}, L_train={L}, {record['inputs_per_length']} inputs per length",
        f"logit form: {record.get('form', FORMS_NONE)}",
        f"lemma fit of the {'gain-folded ' if placement != 'none' else ''}maps: D[x] = u - "
        f"lambda_x e_x, B[x] = -u - beta_x e_x (mod 1): relative residual "
        f"{record['relative_residual']:.3g} (D {num(record['relative_residual_D'], 0).strip()}, "
        f"B {num(record['relative_residual_B'], 0).strip()}); reference: 0 on the lemma's "
        f"family, {record['random_relative_residual']:.3g} for a random model of this config "
        f"(its initialization, seed {record['seed']})",
        f"lambda mean {lam['mean']:.4g} std {lam['std']:.3g} [{lam['min']:.4g}, {lam['max']:.4g}];"
        f" beta mean {beta['mean']:.4g} std {beta['std']:.3g} [{beta['min']:.4g}, "
        f"{beta['max']:.4g}]",
        f"attention at lengths 2..{L} (0 = perfect): uniformity max_i |s w_i - 1| "
        f"{num(att['uniformity_max'], 0).strip()}, displacement imbalance "
        f"{num(att['imbalance_max'], 0).strip()}",
    ]
    if not record["lambdas_positive"]:
        lines.append("some fitted lambda <= 0: no construction has these lambdas (its columns: -)")
    header = ("s", "inv trained", "inv constr", "inv chance", "m_nq trained", "m_nq fit",
              "m_nq constr", "m_q trained", "m_q constr", "uniformity")
    lines.append(f"{header[0]:>4} " + " ".join(f"{h:>12}" for h in header[1:]))
    rows = {r["length"]: r for r in record["per_length"]}
    shown = sorted({1, 2, L, min(L + 1, v - 1), v - 1}
                   | {max(1, round((v - 1) ** (k / 8))) for k in range(9)})
    for s in shown:
        r = rows[s]
        cells = (r["trained_invalid_mass"], r["construction_invalid_mass"],
                 r.get("chance_invalid_mass", s / v),
                 r["trained_margin_nonquery_min"], r["fit_margin_nonquery_min"],
                 r["construction_margin_nonquery_min"], r["trained_margin_query"],
                 r["construction_margin_query"], r["attention_uniformity"])
        mark = "*" if s <= L else " "
        lines.append(f"{s:>3}{mark} " + " ".join(num(c, 12) for c in cells))
    lines += [
        "inv = mean invalid mass sum_{x in t} p(x) (chance = s/v, the uniform prediction's); "
        "m_nq = smallest non-query margin, m_q = the query's margin (mean valid logit - f_x, "
        "means over the inputs; > 0 = the seen token is below every unseen one on average)",
        "trained = the model; fit = the fitted B, D with the model's own attention"
        + (" and norm scales" if placement != "none" else "") + " (isolates the fit); constr = "
        "the fitted construction (fitted lambda, beta, balanced attention w_i ~ 1/lambda_t_i"
        + (", read out through the model's norms" if placement != "none" else "") + ")",
        "- = not defined: m_nq and uniformity need s >= 2 (no other seen token at s = 1); constr "
        "needs every fitted lambda > 0",
        "* = in distribution (s <= L_train); every length is in the JSON (--json)",
    ]
    return "\n".join(lines)


FORMS_NONE = "f = B[t_s] + sum_i w_i D[t_i]"
