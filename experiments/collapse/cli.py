"""`resharpen collapse ...`: the Post-Norm collapse experiments from the command line.

    resharpen collapse stack   per-layer t_sim of a random-weight stack against the recursion
    resharpen collapse train   the learning-rate sweep (Post-Norm and Pre-Norm) with detection
    resharpen collapse detect  the collapse step of a finished run folder

Parsing imports nothing heavy: the handlers import torch and numpy.
"""
from __future__ import annotations


from resharpen.experiments.common import limits
from resharpen.experiments.common.cli_args import (PATH, bad_input, count, finite_float, one_of,
                                                  require_finite, seed_int)
from resharpen.experiments.common.limits import add_max_memory
from resharpen.experiments.common.profiles import PROFILES

STACK_NORMS = ("post", "pre")  # stack.PLACEMENTS (that module imports torch; a test holds them equal)
STACK_MLPS = ("none", "swiglu")  # stack.MLPS, with "none" for None
MAX_TOKENS = 10**5  # collapse stack --n (also bounded by --max-memory)
MAX_WIDTH = 10**5  # collapse stack --d (also bounded by --max-memory)
MAX_DEPTH = 10**4  # collapse stack --depth: the paper's stacks have at most a few hundred layers
MAX_SAMPLES = 10**3  # collapse stack --samples: independent draws, each a whole stack
MAX_PATIENCE = 10**6  # collapse detect --patience, in logged steps


def add_collapse(sub) -> None:
    p = sub.add_parser("collapse", help="Post-Norm collapse (arXiv 2608.09417): stacks, training")
    inner = p.add_subparsers(dest="collapse_command", required=True, parser_class=type(p))

    s = inner.add_parser("stack", help="random-weight stack: t_sim per layer vs the recursion")
    s.add_argument("--norm", default="post", choices=STACK_NORMS,
                   type=one_of(STACK_NORMS, "norm {!r} is not one of {}"),
                   help="Post-Norm or Pre-Norm (default post)")
    s.add_argument("--mlp", default="none", choices=STACK_MLPS,
                   type=one_of(STACK_MLPS, "mlp {!r} is not one of {}"),
                   help="the FFN after attention (default none)")
    s.add_argument("--multiplier", type=finite_float, default=1.0, help="k > 0: the init variance times k (default 1)")
    s.add_argument("--n", type=count(MAX_TOKENS), default=256,
                   help=f"sequence length n >= 2 (default 256, at most {MAX_TOKENS:,})")
    s.add_argument("--d", type=count(MAX_WIDTH), default=256,
                   help=f"width d (default 256, at most {MAX_WIDTH:,})")
    s.add_argument("--depth", type=count(MAX_DEPTH), default=48,
                   help=f"number of layers (default 48, at most {MAX_DEPTH:,})")
    s.add_argument("--samples", type=count(MAX_SAMPLES), default=4,
                   help=f"independent draws of the stack averaged (default 4, at most "
                        f"{MAX_SAMPLES:,})")
    s.add_argument("--t0", type=finite_float, default=0.09, help="the input's t_sim, in [1/n, 1) (default 0.09)")
    s.add_argument("--seed", type=seed_int, default=0, help="seed of the draws (default 0)")
    s.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the per-layer table ('-' = stdout)")
    add_max_memory(s)
    s.set_defaults(handler=run_stack)

    t = inner.add_parser("train", help="learning-rate sweep with collapse detection")
    t.add_argument("--profile", choices=PROFILES, default="quick",
                   help="the sweep's size: quick (the default, 4 runs, minutes on 2 cores) or "
                        "full (10 runs of 48 layers)")
    t.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.KEY=VALUE",
                   help="change every run's config, e.g. --set train.steps=50 (repeatable; not "
                        "the swept model.norm, train.lr and train.seed)")
    t.add_argument("--out", default=None, type=PATH,
                   help="results folder (default out/collapse_train)")
    t.add_argument("--seed", type=seed_int, default=0, help="seed of every run (default 0)")
    t.set_defaults(handler=run_train)

    d = inner.add_parser("detect", help="report the collapse step of a finished run folder")
    d.add_argument("run", type=PATH, help="folder with metrics.jsonl and summary.json")
    d.add_argument("--t-threshold", type=finite_float, default=0.95,
                   help="t_sim above which the tokens count as collapsed (default 0.95)")
    d.add_argument("--loss-margin", type=finite_float, default=0.05,
                   help="how close to L_freq the loss must be, in nats (default 0.05)")
    d.add_argument("--patience", type=count(MAX_PATIENCE), default=10,
                   help=f"logged steps the collapse must last (default 10, at most "
                        f"{MAX_PATIENCE:,})")
    d.set_defaults(handler=run_detect)


def run_stack(args) -> int:
    from resharpen.experiments.collapse.stack import StackConfig, simulate
    from resharpen.experiments.common.io import atomic_write_text, check_output_file
    from resharpen.theory.collapse.recursion import recursion

    with bad_input():  # the output folder and the stack's settings, before any sampling
        if args.json and args.json != "-":
            check_output_file(args.json, "--json")
        mlp = None if args.mlp == "none" else args.mlp
        cfg = StackConfig(n=args.n, d=args.d, depth=args.depth, norm=args.norm, mlp=mlp,
                          multiplier=args.multiplier, t0=args.t0, samples=args.samples,
                          seed=args.seed)
        limits.require(limits.collapse_stack_bytes(cfg.n, cfg.d, cfg.depth,
                                                   cfg.ffn_width if mlp else 0),
                       f"collapse stack --n {cfg.n} --d {cfg.d} --depth {cfg.depth}",
                       args.max_memory)
    r = simulate(cfg, progress=True)
    pred = recursion(cfg.n, cfg.depth, r["t0"], cfg.s, cfg.norm, xi=cfg.xi if mlp else None,
                     v0=cfg.v0)
    rows = [{"layer": i + 1, "t_sim": float(r["t_block"][i]), "recursion": float(pred["t"][i + 1]),
             "delta_attn": float(r["delta_attn"][i]), "theory_attn": float(r["theory_attn"][i])}
            for i in range(cfg.depth)]
    for row in rows:  # a non-finite number is not a result
        require_finite({f"{key} at layer {row['layer']}": row[key] for key in
                        ("t_sim", "recursion", "delta_attn", "theory_attn")},
                       f"collapse stack --multiplier {cfg.multiplier:g}")
    print(f"{'layer':>5} {'t_sim':>8} {'recursion':>9} {'d_attn':>8} {'theory':>8}")
    for row in rows:
        print(f"{row['layer']:5d} {row['t_sim']:8.4f} {row['recursion']:9.4f} "
              f"{row['delta_attn']:8.4f} {row['theory_attn']:8.4f}")
    if args.json:
        from resharpen.experiments.common.json_text import dumps_json

        text = dumps_json({"config": r["config"], "t0": r["t0"], "layers": rows})
        print(text) if args.json == "-" else atomic_write_text(args.json, text + "\n")
    return 0


def run_train(args) -> int:
    from resharpen.experiments.collapse.train import (ARCHIVED, OUT, check_finished, sweep,
                                                      sweep_configs)
    from resharpen.experiments.common.io import check_writable_target

    out = args.out or OUT
    with bad_input():  # the sweep's configs (file, profile, --set) and the folder, before training
        sweep_configs(args.profile, args.seed, args.overrides)
        check_writable_target(out, "--out" if args.out else "output folder")
        check_finished(args.profile, out, args.seed, args.overrides)  # corrupt finished runs
    # a folder the user names gets every run it lacks trained into it, none read from the
    # archive (which the default folder falls back on)
    summaries = sweep(args.profile, out=out, seed=args.seed, overrides=args.overrides,
                      archive=None if args.out else ARCHIVED)
    print(f"{'run':40s} {'collapse step':>13} {'loss':>7} {'L_freq':>7} {'t_sim':>6} {'g1/gL':>8}")
    for s in summaries:
        step = "-" if s["collapse_step"] is None else str(s["collapse_step"])
        if s.get("transient_collapse") is not None:
            step = f"{s['transient_collapse']}->{s['recovered_step']} (rec.)"
        print(f"{s['name']:40s} {step:>13} {s['final_loss']:7.3f} {s['l_freq_stream']:7.3f} "
              f"{s['final_t_sim']:6.3f} {s['first_over_last_resid_grad']:8.2g}")
    return 0


def run_detect(args) -> int:
    from resharpen.experiments.collapse.detect import check_settings, detect_collapse, load_log

    with bad_input():  # valid thresholds and a collapse run folder
        check_settings(args.t_threshold, args.loss_margin, args.patience)
        log = load_log(args.run)
    det = detect_collapse(*log, t_threshold=args.t_threshold, loss_margin=args.loss_margin,
                          patience=args.patience)
    if det.collapsed:
        print(f"collapsed at step {det.step} (t_sim {det.t_sim:.4f}, loss - L_freq {det.gap:+.4f})")
    elif det.step is not None:
        print(f"transient collapse at step {det.step}, recovered from step {det.recovered}")
    else:
        print("no collapse detected")
    return 0
