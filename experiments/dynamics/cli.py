"""`resharpen dynamics`: the normalized attention dynamics of arXiv 2510.22026 from the shell.

    resharpen dynamics ode --beta 5 --n 256 --t-end 2000          # the six symmetric ODEs
    resharpen dynamics simulate --scheme preln --n 64 --d 16 --beta 1 --t-end 50 --json out.json
    resharpen dynamics stacks --layers 64 --n 32                   # the random-weight stacks
    resharpen dynamics trained --profile quick                     # real models, init and trained

Parsing imports nothing heavy: the handlers import numpy, scipy and sympy.
"""
from __future__ import annotations

import sys

from resharpen.experiments.common import limits
from resharpen.experiments.common.cli_args import (PATH, bad_input, count, finite_float, nonempty,
                                                  one_of, require_finite, seed_int)
from resharpen.experiments.common.limits import add_max_memory
from resharpen.theory.dynamics.schemes import SCHEMES

STARTS = ("uniform", "orthonormal", "gaussian")
MAX_SIMULATE_T_END = 1e6
"""The longest ``dynamics simulate --t-end``: the particles have clustered long before, and the
constant-speed schemes (postln, ngpt) take solver steps in proportion to t_end (1e4: seconds).
nGPT moves at a speed proportional to its alpha, so for it alpha0 x t_end is bounded by this
(measured at the defaults: alpha0 x t_end = 2e3 in 2 s, 2e5 in 50 s; alpha0 = 1e300 never ends)."""
MAX_ODE_T_END = 1e100
"""The longest ``dynamics ode --t-end``. The ODE is solved in log space and takes about the same
time at any horizon, but the terminal exponent of the exponential schemes (postln, ngpt) is the
least-squares slope of log gamma' against t, and the fit squares t: far beyond 1e150 it
overflows (at t_end = 1e300 it reported 0 instead of -2). Measured: up to 1e100 every scheme's
exponent is its law's (-2, -3, -4 to four digits)."""
MAX_SIMULATE_BETA = 1e6
"""The largest ``dynamics simulate --beta``. The vector field stiffens with beta and the solver's
time grows in proportion: measured with random Q, K, V at the other defaults, 2.3 s at 1e2,
8.7 s at 1e4, 21 s at 1e5; at 1e308 the logits overflow."""
MIN_ODE_R0 = 1e-6
"""The smallest ``dynamics ode --r0``. Measured at the defaults: 1e-6 solves every scheme, 1e-8
fails for mixln (the adaptive step falls below the spacing of float64 numbers)."""
MAX_TOKENS = 10**6
"""The most tokens n of ``dynamics ode`` (the ODE of n symmetric tokens, one scalar equation at any
n) and of the particle simulations (also bounded by --max-memory)."""
MAX_WIDTH = 10**6
"""The widest token dimension d of the particle simulations and stacks (also --max-memory)."""
MAX_LAYERS = 10**4
"""The deepest ``dynamics stacks`` (the papers' stacks have at most a few hundred layers; each
layer costs n^2 d per scheme)."""
MAX_OUTPUT_TIMES = 10**5
"""The most output times of ``dynamics simulate --samples``."""


def add_dynamics(sub) -> None:
    p = sub.add_parser("dynamics", help="normalized attention dynamics (arXiv 2510.22026)")
    dsub = p.add_subparsers(dest="dynamics_command", required=True, parser_class=type(p))

    o = dsub.add_parser("ode", help="symmetric-start scalar ODE: gamma'(0), gamma(T), terminal exponent")
    o.add_argument("--beta", type=finite_float, default=5.0,
                   help="inverse temperature beta of the attention (default 5)")
    o.add_argument("--n", type=count(MAX_TOKENS), default=256,
                   help=f"number of tokens n >= 2 (default 256, at most {MAX_TOKENS:,})")
    o.add_argument("--t-end", type=finite_float, default=2000.0,
                   help=f"the horizon T of the solve (default 2000, at most {MAX_ODE_T_END:g})")
    o.add_argument("--r0", type=finite_float, default=1.0,
                   help=f"the tokens' initial radius r(0), at least {MIN_ODE_R0:g} (default 1)")
    o.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the table as JSON ('-' = stdout)")
    o.set_defaults(handler=run_ode)

    s = dsub.add_parser("simulate", help="particle simulation of NA; prints mean cosine and radius")
    s.add_argument("--scheme", required=True, choices=SCHEMES,
                   type=one_of(SCHEMES, "unknown scheme {!r}; allowed: {}"),
                   help="the normalization scheme")
    s.add_argument("--n", type=count(MAX_TOKENS), default=32,
                   help=f"number of tokens n >= 2 (default 32, at most {MAX_TOKENS:,})")
    s.add_argument("--d", type=count(MAX_WIDTH), default=16,
                   help=f"token dimension d (default 16, at most {MAX_WIDTH:,})")
    s.add_argument("--beta", type=finite_float, default=1.0,
                   help=f"inverse temperature beta of the attention, > 0 (default 1, at most "
                        f"{MAX_SIMULATE_BETA:g})")
    s.add_argument("--t-end", type=finite_float, default=20.0,
                   help=f"the simulated time (default 20, at most {MAX_SIMULATE_T_END:g})")
    s.add_argument("--start", default="uniform", choices=STARTS,
                   type=one_of(STARTS, "unknown start {!r}; allowed: {}"),
                   help="the initial tokens (default uniform)")
    s.add_argument("--qkv", choices=("identity", "random"), default="identity",
                   help="Q = K = V = I, or random N(0, 1/d) matrices (seeded; default identity)")
    s.add_argument("--tau", type=finite_float, default=None,
                   help="Mix-LN's switch time from Post-LN to Pre-LN (default 2; mixln only)")
    s.add_argument("--alpha0", type=finite_float, default=None,
                   help="nGPT's constant step size alpha (default 1; ngpt only)")
    s.add_argument("--seed", type=seed_int, default=0,
                   help="seed of the start and the random Q, K, V (default 0)")
    s.add_argument("--samples", type=count(MAX_OUTPUT_TIMES), default=11,
                   help=f"output times (default 11, at most {MAX_OUTPUT_TIMES:,})")
    s.add_argument("--json", metavar="PATH", type=PATH,
                   help="write the trajectory summary as JSON ('-' = stdout)")
    add_max_memory(s)
    s.set_defaults(handler=run_simulate)

    k = dsub.add_parser("stacks", help="random-weight stacks: cosine similarity per layer")
    k.add_argument("--n", type=count(MAX_TOKENS), default=32,
                   help=f"number of tokens n >= 2 (default 32, at most {MAX_TOKENS:,})")
    k.add_argument("--d", type=count(MAX_WIDTH), default=512,
                   help=f"token dimension d (default 512, at most {MAX_WIDTH:,})")
    k.add_argument("--layers", type=count(MAX_LAYERS), default=64,
                   help=f"depth of the stacks (default 64, at most {MAX_LAYERS:,})")
    k.add_argument("--seed", type=seed_int, default=0, help="seed of the weights (default 0)")
    k.add_argument("--tied", action="store_true", help="Q = K = V = I in every layer")
    k.add_argument("--json", metavar="PATH", type=PATH,
                   help="write per-layer curves as JSON ('-' = stdout)")
    add_max_memory(k)
    k.set_defaults(handler=run_stacks_cmd)

    t = dsub.add_parser("trained", help="real models of every scheme at init and trained to a "
                                        "fit: train or load the set, print its tables")
    t.add_argument("--profile", choices=("quick", "full"), default="quick",
                   help="the set's size: quick (the default, depth 4) or full (depths 8 and 24)")
    t.add_argument("--task", nargs="+", choices=("tomita3", "dyck1"), help="only these tasks")
    t.add_argument("--scheme", nargs="+", type=nonempty("a scheme name"),
                   help="only these schemes (model.norm names)")
    t.add_argument("--depth", nargs="+", type=count(MAX_LAYERS),
                   help="only these depths, each one of the profile's (quick: 4; full: 8, 24)")
    t.add_argument("--premise-set", type=nonempty("a premise set's name"),
                   help="train the models of this premise set instead: the same models "
                        "initialized so that one theorem's premise holds (unit_tokens, "
                        "small_embedding, paper_init, paper_init_many_seeds, terminal_depth, "
                        "paper_init_4x; docs/norm_dynamics.md, section 4)")
    t.set_defaults(handler=run_trained)


def _emit(obj, target) -> None:
    from resharpen.experiments.common.io import atomic_write_json

    if target == "-":
        from resharpen.experiments.common.json_text import dumps_json

        print(dumps_json(obj))
    elif target:
        atomic_write_json(target, obj)


def _check_target(target) -> None:
    from resharpen.experiments.common.io import check_output_file

    if target and target != "-":
        check_output_file(target, "--json")


def run_ode(args) -> int:
    import numpy as np

    from resharpen.theory.dynamics import ode
    from resharpen.theory.dynamics import speed as nd

    with bad_input():
        nd.check_beta(args.beta), nd.check_n(args.n), nd.check_horizon(args.t_end)
        if args.t_end > MAX_ODE_T_END:
            raise ValueError(f"--t-end {args.t_end:g} is too long: at most {MAX_ODE_T_END:g} "
                             "(the terminal exponent is a least-squares fit over [T/2, T] that "
                             "squares t: far beyond this it overflows float64)")
        nd.check_positive("r0", args.r0)
        if args.r0 < MIN_ODE_R0:
            raise ValueError(f"--r0 {args.r0:g} is too small: at least {MIN_ODE_R0:g} (below it "
                             "the solver's step for the Pre-LN-like schemes falls under float64's "
                             "spacing)")
        _check_target(args.json)
        g0 = float(nd.G_num(0.0, args.beta, args.n))  # s gamma'(0) ~ -exp(-beta): representable?
        if not abs(g0) >= sys.float_info.min:
            raise ValueError(f"--beta {args.beta:g} is too large for the symmetric ODE in float64: "
                             f"gamma'(0) ~ exp(-beta) underflows ({g0:.3g}), so gamma never "
                             "moves; use a smaller --beta (at most about 700)")
    rows = []
    for scheme in nd.SCHEMES:
        horizon = args.t_end
        sol = ode.solve_symmetric(scheme, args.beta, args.n, horizon, r0_=args.r0,
                                 t_eval=np.linspace(horizon / 2, horizon, 200))
        kind = nd.rate_kind(scheme)
        rows.append({"scheme": scheme, "gamma_dot0": nd.gamma_dot0_num(scheme, args.beta, args.n, args.r0),
                     "log10_one_minus_gamma_T": float(sol.u[-1] / np.log(10.0)), "r_T": float(sol.r[-1]),
                     "rate_kind": kind,
                     "terminal_exponent": ode.fit_terminal_exponent(sol.t, sol.log_gamma_dot, kind,
                                                                   (horizon / 2, horizon))})
    for r in rows:  # a non-finite number is not a result
        require_finite({f"{r['scheme']} {key}": r[key] for key in
                        ("gamma_dot0", "log10_one_minus_gamma_T", "r_T", "terminal_exponent")},
                       f"dynamics ode --beta {args.beta:g} --n {args.n} --t-end {args.t_end:g}")
    if args.json != "-":
        print(f"{'scheme':8s} {'gamma_dot(0)':>13s} {'log10(1-g(T))':>14s} {'r(T)':>9s}  terminal exponent")
        for r in rows:
            print(f"{r['scheme']:8s} {r['gamma_dot0']:13.6g} {r['log10_one_minus_gamma_T']:14.5g} {r['r_T']:9.4g}"
                  f"  {r['terminal_exponent']:.4f} ({r['rate_kind']}, t in [T/2, T])")
        print("terminal exponent c, fitted over t in [T/2, T]: exponential, gamma' ~ e^(c t); "
              "power, gamma' ~ t^c; sqrt, gamma' ~ e^(c sqrt(t+1)) / sqrt(t+1). "
              "Mix-LN switches at tau = 2 and nGPT moves at a constant alpha = 1.")
    _emit({"beta": args.beta, "n": args.n, "t_end": args.t_end, "rows": rows}, args.json)
    return 0


def _start(kind, n, d, seed):
    import numpy as np

    from resharpen.experiments.dynamics import particles as P
    if kind not in STARTS:
        raise ValueError(f"unknown start {kind!r}; allowed: {', '.join(STARTS)}")
    if kind == "orthonormal":
        return P.orthonormal_start(n, d, seed), 1.0
    if kind == "uniform":
        return P.uniform_sphere(n, d, seed), 1.0
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x, np.linalg.norm(x, axis=1)


def run_simulate(args) -> int:
    import numpy as np

    from resharpen.experiments.dynamics import particles as P
    from resharpen.theory.dynamics.speed import check_beta as nd_check_beta
    from resharpen.theory.dynamics.speed import check_d, check_horizon, check_n, check_positive

    with bad_input():  # the set-up checks every argument; none of it simulates
        check_n(args.n), check_d(args.d), check_horizon(args.t_end)
        nd_check_beta(args.beta)
        if args.beta > MAX_SIMULATE_BETA:
            raise ValueError(f"--beta {args.beta:g} is too large: at most {MAX_SIMULATE_BETA:g} "
                             "(the attention is a hard maximum long before, and the solver's "
                             "time grows with beta)")
        if args.t_end > MAX_SIMULATE_T_END:
            raise ValueError(f"--t-end {args.t_end:g} is too long: at most "
                             f"{MAX_SIMULATE_T_END:g} (the particles cluster long before; the "
                             "postln and ngpt schemes take time in proportion to t_end)")
        for flag, owner in (("tau", "mixln"), ("alpha0", "ngpt")):
            if getattr(args, flag) is not None and args.scheme != owner:
                raise ValueError(f"--{flag} has no effect on --scheme {args.scheme}: it sets a "
                                 f"parameter of {owner} only")
        args.tau = 2.0 if args.tau is None else args.tau
        args.alpha0 = 1.0 if args.alpha0 is None else args.alpha0
        check_positive("alpha0", args.alpha0)
        if args.scheme == "ngpt" and args.alpha0 * args.t_end > MAX_SIMULATE_T_END:
            raise ValueError(f"--alpha0 {args.alpha0:g} with --t-end {args.t_end:g} is too long "
                             f"a run for ngpt: alpha0 x t_end must be at most "
                             f"{MAX_SIMULATE_T_END:g} (nGPT moves at a speed proportional to "
                             "alpha, and the solver's steps grow with alpha0 x t_end)")
        _check_target(args.json)
        limits.require(limits.simulate_bytes(args.n, args.d, args.samples, args.qkv == "random"),
                       f"dynamics simulate --n {args.n} --d {args.d} --samples {args.samples}",
                       args.max_memory)
        theta0, r0 = _start(args.start, args.n, args.d, args.seed)
        Q = K = V = None
        if args.qkv == "random":
            rng = np.random.default_rng([args.seed, 7])
            Q, K, V = (rng.standard_normal((args.d, args.d)) / np.sqrt(args.d) for _ in range(3))
        dyn = P.Dynamics(args.scheme, args.beta, Q, K, V, tau=args.tau, alpha0=args.alpha0)
    t_eval = np.linspace(0.0, args.t_end, args.samples)
    tr = P.simulate(dyn, theta0, args.t_end, r0=r0, t_eval=t_eval, progress=True)
    G = tr.gram()
    rows = [{"t": float(t), "mean_cos": float(c), "min_cos": float(m), "mean_r": float(r)}
            for t, c, m, r in zip(tr.t, P.off_diagonal_mean(G), G.min(axis=(1, 2)), tr.r.mean(axis=1))]
    for r in rows:  # a non-finite number is not a result
        require_finite({f"{key} at t = {r['t']:g}": r[key] for key in ("mean_cos", "min_cos",
                                                                        "mean_r")},
                       f"dynamics simulate --scheme {args.scheme}")
    if args.json != "-":
        print(f"{'t':>9s} {'mean cos':>10s} {'min cos':>10s} {'mean r':>10s}")
        for r in rows:
            print(f"{r['t']:9.4g} {r['mean_cos']:10.6f} {r['min_cos']:10.6f} {r['mean_r']:10.5g}")
    _emit({"config": {k: v for k, v in vars(args).items() if k != "handler"}, "trajectory": rows},
          args.json)
    return 0


def run_stacks_cmd(args) -> int:
    from resharpen.experiments.dynamics.random_stacks import norm_growth_exponent, run_stacks
    from resharpen.theory.dynamics.speed import check_d, check_n

    with bad_input():
        check_n(args.n), check_d(args.d)
        _check_target(args.json)
        limits.require(limits.stacks_bytes(args.n, args.d),
                       f"dynamics stacks --n {args.n} --d {args.d}", args.max_memory)
    runs = run_stacks(n=args.n, d=args.d, layers=args.layers, seed=args.seed, tied=args.tied,
                      progress=True)
    marks = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, args.layers} & set(range(args.layers + 1)))
    for s, r in runs.items():  # a non-finite number is not a result
        require_finite({f"{s} cosine at layer {m}": r.cosine[m] for m in marks},
                       f"dynamics stacks --n {args.n} --d {args.d}")
    if args.json != "-":
        print("mean pairwise cosine by layer: " + " ".join(f"{m:>6d}" for m in marks))
        for s, r in runs.items():
            print(f"{s:30s} " + " ".join(f"{r.cosine[m]:6.3f}" for m in marks))
        if args.layers >= 8:
            print(f"Pre-LN norm growth exponent (layers >= L/4): "
                  f"{norm_growth_exponent(runs['preln'].norm, max(1, args.layers // 4)):.3f}",
                  file=sys.stderr)
    _emit({s: {"cosine": r.cosine.tolist(), "norm": r.norm.tolist()} for s, r in runs.items()},
          args.json)
    return 0


def run_trained(args) -> int:
    from resharpen.experiments.dynamics.premise_sets import SETS
    from resharpen.experiments.dynamics.trained_plan import SCHEMES as MODEL_SCHEMES
    from resharpen.experiments.dynamics.trained_plan import sizes

    with bad_input():
        schemes, depths = MODEL_SCHEMES, sizes(args.profile).depths
        what = f"the {args.profile} profile's set"
        if args.premise_set:
            if args.premise_set not in SETS:
                raise ValueError(f"unknown premise set {args.premise_set!r}; allowed: "
                                 f"{', '.join(SETS)}")
            spec = SETS[args.premise_set]
            schemes, depths = spec.schemes, spec.depths or depths
            what = f"premise set {args.premise_set}"
        for scheme in args.scheme or ():
            if scheme not in schemes:
                raise ValueError(f"scheme {scheme!r} is not in {what}; allowed: "
                                 f"{', '.join(schemes)}")
        for depth in args.depth or ():
            if depth not in depths:  # a depth the set does not train: empty tables otherwise
                raise ValueError(f"--depth {depth} is not a depth of {what}; allowed: "
                                 f"{', '.join(map(str, depths))}")
    if args.premise_set:
        import torch

        from resharpen.experiments.dynamics.premise_sets import premise_set
        from resharpen.experiments.dynamics.trained import print_tables

        torch.set_num_threads(1)
        only = {k: tuple(v) for k, v in (("task", args.task), ("scheme", args.scheme),
                                         ("depth", args.depth)) if v}
        runs = premise_set(args.profile, args.premise_set, trained=True, progress=True,
                           only=only)
        print_tables(runs, args.profile, only, depths, fitted_only=False,
                     heading=f"; premise set {args.premise_set}, trained columns: every run "
                             "trained to its end, at the fit or not")
        return 0
    argv = ["--profile", args.profile]
    for flag, values in (("--task", args.task), ("--scheme", args.scheme),
                         ("--depth", args.depth)):
        if values:
            argv += [flag, *map(str, values)]
    from resharpen.experiments.dynamics.trained import main

    main(argv)
    return 0
