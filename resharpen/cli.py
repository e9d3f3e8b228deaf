"""The `resharpen` command line.

Every subcommand is a small function ``add_<name>(subparsers)`` that declares its arguments and
sets ``handler``; the handler imports the heavy modules (torch, sympy, scipy, matplotlib) when it
runs, so parsing and ``--help`` import none of them. Bad input (an argument, a config value, an
input or output path) is rejected where it is parsed or validated, before any work: one line
``error: ...`` on stderr, exit status 2 (see :mod:`resharpen.experiments.common.cli_args`).
Anything else is a bug: its traceback, exit status 1. ``--debug`` shows the traceback of a usage
error too. ``verify`` exits 1 when a claim does not pass.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from resharpen.experiments.common.cli_args import (EXIT_USAGE, MAX_WORKERS, PATH, PATTERN,
                                                  UsageError, _Parser, bad_input, count,
                                                  finite_float, one_of, seed_int)

EXIT_BUG = 1
MAX_CONSTRUCT_VOCAB = 10**6
"""The largest ``construct --vocab``: the memory check refuses far smaller ones on most machines
(v = 10^4 needs a few GB); the cap answers an absurd size at once."""
DEBUG_FLAG = "--debug"


# ----------------------------------------------------------------------------- verify
def add_verify(sub) -> None:
    p = sub.add_parser("verify", help="run the claim ledger and print the table")
    p.add_argument("--profile", choices=("quick", "full"), default="quick",
                   help="the size of the checks: quick (minutes on 2 cores, the default) or full "
                        "(the real sizes)")
    p.add_argument("--only", action="append", metavar="GLOB", type=PATTERN,
                   help="only claims whose id matches this glob (repeatable)")
    p.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the ledger as JSON ('-' for stdout)")
    p.add_argument("--markdown", metavar="PATH", type=PATH, help="write the ledger as Markdown")
    p.add_argument("--list", action="store_true",
                   help="list the claims without running them: id, kind, where the expected "
                        "value comes from (paper | derivation | statement | regression), source")
    p.add_argument("--where", metavar="ID", type=PATTERN,
                   help="print the file:line of the check of each claim matching this id or glob "
                        "and of the theory and construction functions it uses; run nothing")
    p.add_argument("--workers", type=count(MAX_WORKERS), default=None,
                   help=f"run checks in this many processes (default 1, at most {MAX_WORKERS}; "
                        "results do not depend on it)")
    p.add_argument("--baseline", nargs="?", const="default", metavar="PATH", type=PATH,
                   help="compare the statuses with a committed baseline (default "
                        "experiments/configs/ledger/<profile>.json): exit 0 when every status "
                        "matches it (known FAILs included), 1 and the differences when one changed")
    p.add_argument("--write-baseline", metavar="PATH", type=PATH,
                   help="write the statuses of this run as the baseline (reasons kept from the "
                        "old baseline where it had one); with --only it would hold only the "
                        "chosen claims, so it is refused unless --force")
    p.add_argument("--force", action="store_true",
                   help="with --write-baseline and --only: write the partial baseline anyway "
                        "(refused anywhere else, where it would change nothing)")
    p.add_argument("--mutate", action="store_true",
                   help="the mutation test: run each check with each derivation it uses "
                        "mutated by each operator (x -> x(1+-EPS)+-EPS, two arguments swapped, "
                        "a term dropped, a constant returned), print which claims and (claim, "
                        "function) pairs a mutation kills (a status change) and which survive; "
                        "--json writes its results; one check at a time, each in a forked "
                        "process (--workers does not apply)")
    p.add_argument("--step", type=finite_float, default=None, metavar="EPS",
                   help="with --mutate: the perturbation x -> x(1+-EPS)+-EPS of up and down "
                        "(default 1e-3; the ladder's step is fixed at 0.1)")
    p.add_argument("--costs", choices=("fast", "all"), default=None,
                   help="with --mutate: the declared cost classes to run (default fast: the "
                        "claims declared cost=\"slow\" are skipped; all: every claim)")
    p.add_argument("--operators", default=None, metavar="OPS", type=PATTERN,
                   help="with --mutate: comma-separated operators, each at most once (default "
                        "every one: "
                        "up,down,swap,drop,const and the ladder up_large,down_large,first,last, "
                        "which runs on a function only while it is not killed)")
    p.set_defaults(handler=run_verify)


def run_verify(args) -> int:
    import os

    from resharpen.experiments.common.io import atomic_write_text, check_output_file
    from resharpen.experiments.common.stored import read_text_file
    from resharpen.claims import all_claims, claims_for
    from resharpen.experiments import ledger
    from resharpen.experiments.ledger import baseline as baselines
    from resharpen import claim_index

    index = claim_index.load()  # the claim index: no slice imported (resharpen/claim_index.py)
    with bad_input():
        check_verify_options(args)
        # the patterns are checked against the index first: a typo is answered in a moment,
        # without importing every claims module
        chosen = ledger.select(index.claims() if index else all_claims(), args.only)
        if args.where:
            chosen = ledger.select(chosen, [args.where])
        for flag, target in (("--json", args.json), ("--markdown", args.markdown),
                             ("--write-baseline", args.write_baseline)):  # before the work
            if target and target != "-":
                check_output_file(target, flag)
        if args.write_baseline and args.only and not args.force:
            raise ValueError("--write-baseline with --only would replace the baseline with the "
                             "statuses of the chosen claims alone; run without --only, or add "
                             "--force to write the partial baseline")
        baseline_path = (baselines.default_path(args.profile) if args.baseline == "default"
                         else args.baseline)
        if args.baseline and os.path.lexists(baseline_path):  # a folder, an unreadable file
            read_text_file(baseline_path, "--baseline", "JSON file")
        expected = baselines.read(baseline_path, args.profile) if args.baseline else None
    if index and not (args.list or args.where):  # the chosen claims with their checks, to run
        checks = {c.id: c for c in claims_for([c.id for c in chosen])}  # only their modules
        chosen = [checks[c.id] for c in chosen]
    if args.mutate:
        return run_mutation_test(args, chosen)
    if args.where:
        places = {c.id: index.where(c.id) for c in chosen} if index else {}
        if not places or None in places.values():  # a name the index cannot place: import
            claims = {c.id: c for c in all_claims()}
            places = {c.id: ledger.where(claims[c.id]) for c in chosen}
        for c in chosen:
            print(c.id)
            for place in places[c.id]:
                print(f"  {place}")
            print(f"  expected value from the {c.expected_from}: {c.origin}")
            if c.derived_by:
                print(f"  derived by: {', '.join(c.derived_by)}")
        return 0
    if args.list:
        for c in chosen:
            print(f"{c.id:48s} {c.kind:10s} {c.expected_from:10s} {c.source}")
        return 0
    from resharpen.experiments.common.progress import per_item

    with per_item("verify", len(chosen), "claim",
                  lambda r: {r.id: f"{r.status} ({r.seconds:.1f} s)"}) as done:
        records = ledger.run_claims(chosen, args.profile, args.workers or 1, on_done=done)
    print(format_ledger(records))
    if args.json:
        text = ledger.to_json(records, args.profile)
        print(text) if args.json == "-" else atomic_write_text(args.json, text)
    if args.markdown:
        atomic_write_text(args.markdown, ledger.to_markdown(records, args.profile))
    bad = [r for r in records if r.status != "PASS"]
    for r in bad:
        print(f"{r.status} {r.id}: {r.detail}", file=sys.stderr)
    if args.write_baseline:
        print(f"baseline written: {baselines.write(args.write_baseline, records, args.profile)}",
              file=sys.stderr)
    if expected is not None:
        changed = baselines.differences(records, expected, complete=not args.only)
        if changed:
            print(f"{len(changed)} status(es) differ from the baseline {baseline_path}:",
                  file=sys.stderr)
            for line in changed:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"every status matches the baseline {baseline_path} "
              f"({len(bad)} known non-PASS)", file=sys.stderr)
        return 0
    return 1 if bad else 0


def check_verify_options(args) -> None:
    """ValueError for an option of ``verify`` that would have no effect where it is given: an
    option of the run (``--json``, ``--workers``, ...) with ``--list`` or ``--where``, which run
    nothing; an option of ``--mutate`` without it; ``--force`` anywhere but with
    ``--write-baseline`` and ``--only``. None is ignored silently."""
    shown = "--where" if args.where else "--list" if args.list else None
    if args.list and args.where:
        raise ValueError("--list and --where are two ways of showing claims; give one")
    if shown:
        for flag, value in (("--json", args.json), ("--markdown", args.markdown),
                            ("--baseline", args.baseline),
                            ("--write-baseline", args.write_baseline), ("--mutate", args.mutate),
                            ("--workers", args.workers), ("--force", args.force)):
            if value:
                raise ValueError(f"{flag} has no effect with {shown}, which runs no claim")
    if args.mutate:
        if args.baseline or args.write_baseline or args.markdown:
            raise ValueError("--mutate writes only --json, not --baseline, --write-baseline or "
                             "--markdown")
        if args.workers is not None:
            raise ValueError("--workers has no effect with --mutate: the mutation test runs one "
                             "check at a time, each in a forked process")
    if args.step is not None and not args.step > 0:
        raise ValueError(f"--step must be > 0, got {args.step:g}")
    for flag, value in (("--costs", args.costs), ("--operators", args.operators),
                        ("--step", args.step)):
        if value is not None and not args.mutate:
            raise ValueError(f"{flag} is an option of --mutate")
    if args.force and not (args.write_baseline and args.only):
        raise ValueError("--force has no effect here: it only allows --write-baseline with "
                         "--only (a partial baseline)")


def run_mutation_test(args, chosen) -> int:
    """``verify --mutate``: the table of the mutation test and its summary line; exit 0."""
    from resharpen.experiments.ledger import mutants, mutation
    from resharpen.experiments.common.io import atomic_write_text

    operators = tuple(mutants.OPERATORS)
    with bad_input():
        if args.operators is not None:
            operators = tuple(o.strip() for o in args.operators.split(",") if o.strip())
            unknown = [o for o in operators if o not in mutants.OPERATORS]
            if unknown or not operators:
                raise ValueError(f"--operators: unknown {unknown or args.operators!r}; one or "
                                 f"more of {','.join(mutants.OPERATORS)}")
            repeated = sorted({o for o in operators if operators.count(o) > 1})
            if repeated:
                raise ValueError(f"--operators names {', '.join(repeated)} more than once; "
                                 "name each operator once")
    costs = ("fast", "slow") if args.costs == "all" else ("fast",)
    step = 1e-3 if args.step is None else args.step
    from resharpen.experiments.common.progress import per_item

    with per_item("mutate", len(chosen), "claim", lambda r: {r.id: r.verdict}) as done:
        results = mutation.run_mutations(chosen, args.profile, step=step, costs=costs,
                                         operators=operators, on_done=done)
    print(mutation.format_table(results))
    if args.json:
        text = mutation.to_json(results, args.profile, step)
        print(text) if args.json == "-" else atomic_write_text(args.json, text)
    return 0


def format_ledger(records) -> str:
    """A fixed-width table: id, source, measured, expected, status."""
    rows = [("id", "source", "measured", "expected", "status", "s")]
    for r in records:
        status = r.status + ("*" if r.erratum else "")
        rows.append((r.id, r.source, r.measured, r.expected, status, f"{r.seconds:.1f}"))
    widths = [min(max(len(str(row[i])) for row in rows), cap)
              for i, cap in enumerate((46, 30, 24, 24, 12, 6))]
    out = []
    for row in rows:
        out.append("  ".join(str(x)[:w].ljust(w) for x, w in zip(row, widths)))
    passed = sum(r.status == "PASS" for r in records)
    others = ", ".join(f"{n} {status}" for status in ("FAIL", "INCONCLUSIVE", "ERROR")
                       if (n := sum(r.status == status for r in records)))
    out.append(f"{passed}/{len(records)} claims PASS" + (f" ({others})" if others else "")
               + ("  (* = erratum: PASS means the counterexample is reproduced)"
                  if any(r.erratum for r in records) else ""))
    return "\n".join(out)


# ----------------------------------------------------------------------------- configs
def add_configs(sub) -> None:
    p = sub.add_parser("configs", help="list the packaged configs: name, the command that reads "
                                       "it, what it is")
    p.description = ("The configs that ship inside the package (experiments/configs). A command "
                     "that takes a config file (train, sweep, langs run --grid) also takes its "
                     "name, from any folder: `resharpen train set_complement/base`. A path to a "
                     "file that exists wins over a packaged config of the same name.")
    p.set_defaults(handler=run_configs)


def run_configs(args) -> int:
    from resharpen.experiments.training.config import list_configs

    rows = list_configs()
    width = max(len(r["name"]) for r in rows)
    command = max(len(r["command"]) for r in rows)
    for r in rows:
        print(f"{r['name']:{width}s}  {r['command']:{command}s}  {r['description']}")
    return 0


# ----------------------------------------------------------------------------- figs
def add_figs(sub) -> None:
    p = sub.add_parser("figs", help="regenerate every figure into out/figs (PNG and PDF)")
    p.add_argument("--profile", choices=("quick", "full"), default="quick",
                   help="draw from the quick (default) or the full profile's results")
    p.add_argument("--out", default=None, type=PATH,
                   help="output folder (default out/figs)")
    p.add_argument("--only", action="append", metavar="GLOB", type=PATTERN,
                   help="only figures whose output file stem (e.g. sc_margins, "
                        "fig_langtrain_dyck2) or module name (fig_sc_margins) matches "
                        "(repeatable); figures never train: one whose results are missing is "
                        "skipped with the command that makes them, and the exit status is 1")
    p.add_argument("--list", action="store_true",
                   help="list every figure: its output files, what it draws, the claims it "
                        "shows and the commands that make its data; draw nothing")
    p.set_defaults(handler=run_figs)


def _data_text(entry: str) -> str:
    """A figure's ``DATA`` entry as `figs --list` prints it: the command, PROFILE for the
    profile, and its note in parentheses."""
    command, _, note = entry.partition(" # ")
    return command.strip().replace("{profile}", "PROFILE") + (f" ({note.strip()})" if note else "")


def run_figs(args) -> int:
    from resharpen.experiments.common.io import check_writable_target
    from resharpen.paper_figs import figure_catalogue, run_figures, select_figures

    with bad_input():
        chosen = select_figures(args.only)
        if args.list and args.out is not None:
            raise UsageError("--out has no effect with --list, which draws nothing")
        args.out = "out/figs" if args.out is None else args.out
        if not args.list:
            check_writable_target(args.out)
    if args.list:
        for entry in figure_catalogue(chosen):
            print(f"{entry['name']} ({entry['slice']}): {entry['about']}")
            print(f"  files: {', '.join(entry['stems'])}")
            print(f"  claims: {', '.join(entry['claims']) or 'none'}")
            print("  data: " + ("; ".join(_data_text(c) for c in entry["data"])
                                if entry["data"] else "computed when drawn (no trained results)"))
        print("PROFILE is quick or full (--profile). At the full size a figure whose results "
              "out/ lacks reads the archive's copy (results/full) when it holds one: "
              "resharpen archive status lists what it holds.")
        return 0
    written, skipped = run_figures(args.profile, Path(args.out), args.only,
                                   report=lambda line: None)
    for path in written:
        print(path)
    pairs = len(written) // 2
    print(f"{pairs} figure{'' if pairs == 1 else 's'} written to {args.out} (PNG and PDF each)")
    for name, command in skipped.items():
        print(f"error: figure {name} cannot be drawn from the {args.profile} profile's results "
              f"on disk; make them with: {command}", file=sys.stderr)
    return 1 if skipped else 0


# ----------------------------------------------------------------------------- construct
def add_construct(sub) -> None:
    from resharpen.constructions.set_complement_names import (NORM_KINDS, READOUT_NORMS,
                                                              VARIANTS)
    from resharpen.experiments.common.limits import add_max_memory

    p = sub.add_parser("construct", help="build a Set Complement construction, save it, report")
    p.add_argument("--vocab", type=count(MAX_CONSTRUCT_VOCAB), required=True,
                   help=f"vocabulary size v >= 2 (at most {MAX_CONSTRUCT_VOCAB:,}, and what "
                        "fits in memory)")
    p.add_argument("--norm", default="none", choices=READOUT_NORMS,
                   type=one_of(READOUT_NORMS, "norm {!r} is not one of {}"),
                   help="the readout's normalization (default none)")
    p.add_argument("--norm-kind", default=None, choices=NORM_KINDS,
                   type=one_of(NORM_KINDS, "norm kind {!r} is not one of {}"),
                   help="RMSNorm or LayerNorm (default rms; with a --norm other than none)")
    p.add_argument("--variant", default="tight", choices=VARIANTS,
                   type=one_of(VARIANTS, "variant {!r} is not one of {}"),
                   help="the construction (default tight)")
    p.add_argument("--lam", type=finite_float, default=None,
                   help="displacement scale lambda > 0 (default 2 v, as resharpen.build)")
    p.add_argument("--beta", type=finite_float, default=1.0, help="direct-path scale beta != 0")
    p.add_argument("--gain", type=finite_float, default=None,
                   help="norm gain g > 0 (default 1; with a --norm other than none)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed for the non-uniform lambdas")
    p.add_argument("--out", default=None, type=PATH,
                   help="folder for weights, config and report")
    p.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the per-length report ('-' = stdout)")
    p.add_argument("--lengths", choices=("log", "all"), default="log",
                   help="the lengths evaluated: log (default; every length up to 64, then about "
                        "64 log-spaced up to v - 1, each by the last position of its prefix "
                        "alone) or all (every length 1..v-1, one full forward pass)")
    add_max_memory(p)
    p.set_defaults(handler=run_construct)


REPORT_FILE = "report.json"
"""The per-length report ``construct --out`` writes beside the saved construction."""


def run_construct(args) -> int:
    from resharpen.constructions.set_complement import SAVED_FILES, build, save
    from resharpen.constructions.set_complement import check_readout
    from resharpen.experiments.common.cli_args import require_finite
    from resharpen.experiments.common.folder_kinds import check_kind
    from resharpen.experiments.common.io import (atomic_write_text, check_folder_files,
                                                 check_output_file, check_writable_target,
                                                 undo_on_failure)
    from resharpen.experiments.common.json_text import dumps_json
    from resharpen.experiments.common.limits import check_construct_scales, forward_flops
    from resharpen.experiments.set_complement.report import construction_report

    with bad_input():
        if args.out:  # before any work, creating nothing
            check_folder_files(args.out, (*SAVED_FILES, REPORT_FILE), "--out")
            check_kind(args.out, "construction", "--out")
            check_writable_target(args.out, "--out")
        if args.json and args.json != "-":
            check_output_file(args.json, "--json")
        given = {"--norm-kind": args.norm_kind, "--gain": args.gain}
        args.norm_kind = "rms" if args.norm_kind is None else args.norm_kind
        args.gain = 1.0 if args.gain is None else args.gain
        check_construct_scales(lam=args.lam, beta=args.beta, gain=args.gain)
        check_readout(args.lam if args.lam is not None else 2.0 * args.vocab, args.beta,
                      args.gain, args.norm, args.norm_kind)  # a bad value is named first
        for flag, value in given.items():
            if value is not None and args.norm == "none":
                raise UsageError(f"{flag} has no effect with --norm none (no normalization): "
                                 "name a --norm, or leave it out")
        built = build(args.variant, vocab=args.vocab, norm=args.norm, norm_kind=args.norm_kind,
                      lam=args.lam, beta=args.beta, gain=args.gain, seed=args.seed,
                      max_memory=args.max_memory)  # refuses a size that does not fit, first
    cfg = built.model.cfg
    flops = forward_flops(args.vocab, cfg.d_model, cfg.head_width, cfg.value_width,
                          args.vocab - 1)
    if flops > 1e11 and args.lengths == "all":  # a user waits: say for what (minutes at 10^4)
        print(f"evaluating every length 1..{args.vocab - 1}: a float64 forward pass of "
              f"{flops:.2g} flops per input ...", file=sys.stderr, flush=True)
    report = construction_report(built, lengths=args.lengths)
    worst = max(row["rel_error_margin"] for row in report["lengths"])
    require_finite({"max |margin - theory| / max(1, |theory|)": worst},
                   f"construct --vocab {args.vocab} --norm {args.norm}")  # before any write
    text = dumps_json(report)
    if args.out:
        with undo_on_failure(args.out):  # a full disk: no half-saved construction, no folder
            save(built, args.out)
            atomic_write_text(Path(args.out) / REPORT_FILE, text + "\n")
    if args.json == "-":
        print(text)
    elif args.json:
        atomic_write_text(args.json, text + "\n")
    print(f"built {args.variant} v={args.vocab} norm={args.norm}: max |margin - theory| / "
          f"max(1, |theory|) = {worst:.3g} over {report['covered']['text']} "
          f"({report['per_length_inputs']} input(s) per length"
          + ("; permutation-symmetric: the prefixes of one permutation cover every length)"
             if "symmetric" in report else ")")
          + (f"; saved to {args.out}" if args.out else ""), file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- derive
def add_derive(sub) -> None:
    p = sub.add_parser("derive", help="print the symbolic derivations, with a legend of their "
                                      "symbols (each printed as soon as it is derived)")
    p.add_argument("--only", action="append", metavar="GLOB", type=PATTERN,
                   help="only derivations whose name matches (e.g. 'sc.margin.*'; repeatable)")
    p.add_argument("--latex", metavar="FILE", type=PATH,
                   help="also write a standalone LaTeX document (article, amsmath) to FILE")
    p.set_defaults(handler=run_derive)


def run_derive(args) -> int:
    from resharpen.experiments.common.io import atomic_write_text, check_output_file
    from resharpen.theory import derivations as D

    with bad_input():
        chosen = D.select(args.only)
        if args.latex:
            check_output_file(args.latex, "--latex")
    results: list = []
    for piece in D.text_output(chosen, results):
        print(piece, flush=True)
    if args.latex:
        atomic_write_text(args.latex, D.latex_document(results))
        print(f"wrote {args.latex}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- report
def add_report(sub) -> None:
    """``resharpen report``: a sweep's tables and figures (the Set Complement slice's command,
    ``experiments/set_complement/cli.py``) and, with ``--html PATH``, the self-contained HTML
    report of a ledger JSON and the figures (:mod:`resharpen.html_report`)."""
    from functools import partial

    from resharpen.experiments.set_complement import cli as sc_cli

    sc_cli.add_report(sub, figures=sweep_figures)
    p = sub.choices["report"]
    p.description = ("A finished sweep's tables and figures (SWEEP), or with --html the "
                     "self-contained HTML report of the claim ledger and the figures, or both.")
    p.add_argument("--html", metavar="PATH", type=PATH,
                   help="write the HTML report (ledger filterable by paper, status and text; "
                        "figures embedded; environment): one file, no network")
    p.add_argument("--ledger", default=None, metavar="JSON", type=PATH,
                   help="with --html: the ledger (`resharpen verify --json JSON`; default "
                        "out/ledger.json)")
    p.add_argument("--figs", default=None, metavar="DIR", type=PATH,
                   help="with --html: the figures folder (`resharpen figs`; default out/figs)")
    p.set_defaults(handler=partial(run_report, sweep=p.get_default("handler")))


def run_report(args, sweep) -> int:
    """The HTML report when ``--html`` is given, the sweep report when a sweep is named."""
    import os

    from resharpen.experiments.common.io import check_output_file

    if args.html is None:
        for flag, value in (("--ledger", args.ledger), ("--figs", args.figs)):
            if value is not None:
                raise UsageError(f"{flag} is an option of --html (the HTML report)")
        return sweep(args)
    from resharpen.experiments.common.stored import read_text_file
    from resharpen.html_report import read_ledger, write_report

    args.ledger = args.ledger or "out/ledger.json"
    args.figs = args.figs or "out/figs"
    with bad_input():
        if os.path.exists(args.figs) and not os.path.isdir(args.figs):
            raise ValueError(f"--figs {args.figs!r} is not a folder; name the folder of "
                             "`resharpen figs --out`")
        if Path(args.ledger).exists():  # a folder, an unreadable file: one line
            read_text_file(args.ledger, "--ledger", "ledger JSON file")
        read_ledger(args.ledger)
        check_output_file(args.html, "--html")
    status = sweep(args) if args.sweep is not None else 0
    print(f"wrote {write_report(args.html, args.ledger, args.figs)}", file=sys.stderr)
    return status


# ----------------------------------------------------------------------------- report figures
def sweep_figures(root: Path) -> list[Path]:
    """The figures of ``resharpen report``: paper_figs draws them from the sweep folder (the
    experiments compute, paper_figs draws; the layers point one way)."""
    from resharpen.paper_figs.set_complement.sweep_figures import report_figures

    return report_figures(root)


def grid_figures(root: Path) -> list[Path]:
    """The per-task figures of ``resharpen langs report``, drawn by paper_figs into root/figs."""
    from resharpen.paper_figs.languages.fig_langtrain_curves import figures_of

    return figures_of(root, root / "figs")


def add_archive(sub) -> None:
    """``resharpen archive``: keep a full-size sweep's small results in the repository
    (``results/full``), and resume a sweep from them in a fresh checkout
    (:mod:`resharpen.experiments.training.archive`)."""
    p = sub.add_parser("archive", help="pack a full-size sweep's finished runs into results/full, "
                                       "or restore them into out/ so the sweep resumes",
                       description="The archive keeps, for each finished run of a full-size "
                                   "sweep, its config, history, summary, provenance and "
                                   "measured tables (no weights), gzip-compressed; the sweep "
                                   "tables stay text; of a language grid, the per-length "
                                   "curves its figures draw (not the per-length records). "
                                   "'pack SWEEP_FOLDER' adds a sweep's finished runs to it; 'restore NAME' copies the archived runs "
                                   "of sweep NAME that out/sweeps/NAME lacks back into it as "
                                   "plain files, so the same sweep command trains only the rest "
                                   "and the full-size claims read them without training; "
                                   "'restore' without a name restores every archived sweep; "
                                   "'pack-dyn [FOLDER]' adds the full-size trained-dynamics "
                                   "set (default out/dyn_trained/full, its group files only) as "
                                   "results/full/dyn_trained, which its claims and figures read "
                                   "when out/ lacks a group; 'pack-collapse [FOLDER]' adds "
                                   "the full-size runs of the collapse demonstration and its "
                                   "learning-rate sweep (default out/collapse_train) as "
                                   "results/full/collapse_train, which the collapse claim and "
                                   "figures read when out/ lacks a run; "
                                   "'status' lists the archive; 'repack' compresses the files an "
                                   "older archive kept as text (the same content).")
    p.add_argument("action", choices=("pack", "restore", "pack-dyn", "pack-collapse", "status",
                                      "repack"),
                   help="what to do: pack a sweep folder, restore a sweep by name, pack the "
                        "full-size trained-dynamics set or collapse runs, list, or compress what "
                        "an older archive kept as text")
    p.add_argument("target", nargs="?", metavar="SWEEP", type=PATH,
                   help="pack: the sweep folder (e.g. out/sweeps/langs); restore: the sweep's "
                        "name (e.g. langs; none: every archived sweep); pack-dyn: the trained-dynamics cache folder "
                        "(default out/dyn_trained/full); pack-collapse: the collapse runs' "
                        "folder (default out/collapse_train)")
    p.add_argument("--out", metavar="DIR", type=PATH,
                   help="restore: the sweep folder to restore into "
                                                 "(default out/sweeps/NAME)")
    p.set_defaults(handler=run_archive)


def archive_tables() -> dict:
    """The sweep tables ``archive pack`` makes from the records the archive does not keep
    (``tables`` of :func:`resharpen.experiments.training.archive.pack`): the language grids'
    per-length curves, which their figures draw."""
    from resharpen.experiments.languages.curves import TABLE_FILE, pack_table

    return {TABLE_FILE: pack_table}


def run_archive(args) -> int:
    from resharpen.experiments.training import archive
    from resharpen.experiments.training.config import sweep_folder

    with bad_input():
        unused = [what for what, value, used in (("SWEEP", args.target,
                                                  args.action in ("pack", "restore",
                                                                  "pack-dyn", "pack-collapse")),
                                                 ("--out", args.out, args.action == "restore"))
                  if value is not None and not used]
        if unused:
            raise ValueError(f"archive {args.action} takes no {unused[0]}: it has no effect there")
        if args.action == "restore" and not args.target:
            if args.out is not None:
                raise ValueError("archive restore --out needs a SWEEP name: every archived sweep "
                                 "goes to its own folder out/sweeps/NAME")
            names = list(archive.archived_sweeps())
            if not names:
                raise ValueError(f"the archive ({archive.ARCHIVE_ROOT}) holds no sweep")
            for name in names:  # every check before the first copy
                archive.check_restore(name, sweep_folder(name))
            for name in names:
                done = archive.restore(name, sweep_folder(name))
                print(f"{name}: {done['restored']} of {done['archived']} archived runs restored")
            print("runs out/sweeps already held are kept as they were (a sweep's table there is "
                  "not replaced); resharpen verify --profile full reads out/sweeps, and a sweep's "
                  "own command trains only the runs neither holds")
            return 0
        if args.action == "status":
            def size(folder) -> str:
                return f"{archive.stored_size(folder)[1] / 1e6:.2f} MB"
            root = archive.ARCHIVE_ROOT
            for name, count in archive.archived_sweeps().items():
                planned = archive.planned_runs(name)
                runs = "run" if count == 1 else "runs"
                print(f"{name}: {count} finished {runs} archived"
                      + (f" of the {planned} it plans" if planned is not None else "")
                      + f" ({size(root / 'sweeps' / name)})")
            for name, count in archive.archived_caches().items():
                entries = "entry" if count == 1 else "entries"
                print(f"{name}: {count} cached {entries} (a group of runs or one run) archived "
                      f"({size(root / name)})")
            files, stored = archive.stored_size(root)
            print(f"the archive ({root}): {files} files, {stored / 1e6:.2f} MB as stored "
                  "(the ledger, run records and tables; no weights)")
            return 0
        if args.action == "pack-dyn":
            from resharpen.experiments.dynamics.trained_plan import CACHE, OUT

            source = args.target or OUT / "full"
            done = archive.pack_cache(source, CACHE)
            print(f"{done['cache']}: {done['added']} group files added to the archive, "
                  f"{done['replaced']} replaced ({done['files']} in {source})")
            return 0
        if args.action == "pack-collapse":
            from resharpen.experiments.collapse.train import OUT, archived_history, full_runs

            source, runs = args.target or OUT, full_runs()
            done = archive.pack_runs(source, "collapse_train", runs, history=archived_history)
            print(f"collapse_train: {done['added']} runs added to the archive "
                  f"({done['finished']} of the {len(runs)} full-size runs finished in {source})")
            return 0
        if args.action == "repack":
            done = archive.repack()
            print(f"{done['rewritten']} files of {done['sweeps']} archived sweeps rewritten "
                  "in the archive's form (the same content)")
            return 0
        if not args.target:
            raise ValueError(f"archive {args.action} needs a SWEEP argument")
        if args.action == "pack":
            done = archive.pack(args.target, tables=archive_tables())
            print(f"{done['sweep']}: {done['added']} run{'' if done['added'] == 1 else 's'} "
                  "added to the archive "
                  f"({done['finished']} finished in {args.target})"
                  + "".join(f"; {table} written" for table in done["tables"]))
        else:
            done = archive.restore(args.target, args.out or sweep_folder(args.target))
            print(f"{done['sweep']}: {done['restored']} of {done['archived']} archived runs "
                  "restored; rerun the sweep's command to train the rest")
    return 0


def commands() -> list:
    """Every subcommand's ``add_<name>(subparsers)``: the ones above and those declared beside
    the code they drive, one CLI module per slice. These modules import nothing heavy."""
    from functools import partial

    from resharpen.experiments.battery import cli as battery_cli
    from resharpen.experiments.collapse import cli as collapse_cli
    from resharpen.experiments.dynamics import cli as dynamics_cli
    from resharpen.experiments.languages import cli as languages_cli
    from resharpen.experiments.set_complement import cli as sc_cli

    return [add_verify, add_construct, add_derive, add_figs, add_configs, add_archive,
            sc_cli.add_train, sc_cli.add_sweep, add_report,
            sc_cli.add_compare,
            partial(languages_cli.add_langs, figures=grid_figures),
            languages_cli.add_tasks, dynamics_cli.add_dynamics, collapse_cli.add_collapse,
            battery_cli.add_battery]


class _Version(argparse.Action):
    """``--version``: print ``resharpen <version>`` (the installed distribution's, from
    importlib.metadata) and exit 0; looked up only when asked."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"resharpen {package_version()}")
        parser.exit()


def package_version() -> str:
    """The installed version of the ``resharpen`` distribution ("unknown" when it is not
    installed, e.g. run from a bare checkout)."""
    from importlib import metadata

    try:
        return metadata.version("resharpen")
    except metadata.PackageNotFoundError:
        return "unknown"


def matplotlib_cache() -> Path | None:
    """Point matplotlib's configuration and cache folder (``MPLCONFIGDIR``) at a folder of this
    user in the temporary folder, ``<tmp>/resharpen-matplotlib-<uid>``, when the variable is
    unset, so that no command writes into the home folder (matplotlib's default,
    ``~/.config/matplotlib`` and ``~/.cache/matplotlib``). Only the variable is set here;
    matplotlib makes the folder when a command first imports it, after the arguments are
    checked. A path that exists and is not a folder of this user (a file, a link, another
    user's folder) is not used: a fresh name is taken instead. Returns the folder, or None when
    the user set the variable."""
    import secrets
    import stat
    import tempfile

    if os.environ.get("MPLCONFIGDIR"):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"resharpen-matplotlib-{uid}"
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        info = None
    if info is not None and not (stat.S_ISDIR(info.st_mode) and info.st_uid == uid):
        folder = folder.with_name(f"{folder.name}-{secrets.token_hex(8)}")
    os.environ["MPLCONFIGDIR"] = str(folder)
    return folder


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="resharpen", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version,
                        help="print the installed version of resharpen and exit")
    parser.add_argument(DEBUG_FLAG, action="store_true",
                        help="show the traceback of any error, usage errors included "
                             "(accepted anywhere on the line)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in commands():
        add(sub)
    return parser


def split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--debug`` and whether it was there. It may stand anywhere before a
    ``--`` separator (no option takes a value that starts with ``--``)."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != DEBUG_FLAG] + argv[end:]
    return kept, len(kept) < len(argv)


def main(argv: list[str] | None = None) -> int:
    argv, debug = split_debug(list(sys.argv[1:] if argv is None else argv))
    matplotlib_cache()
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args) or 0)
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        from resharpen.experiments.common.io import DISK_FULL

        if exc.errno not in DISK_FULL:  # a bug, not a full disk: keep its traceback
            traceback.print_exc()
            return EXIT_BUG
        if debug:
            traceback.print_exc()
        where = f" writing {exc.filename!r}" if exc.filename else ""
        print(f"error: {exc.strerror}{where}: the disk (or quota) is full; what was being "
              "written was removed, nothing half-written is kept; free some space and rerun",
              file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a bug, not bad input: keep its traceback
        traceback.print_exc()
        return EXIT_BUG


if __name__ == "__main__":
    raise SystemExit(main())
