"""`resharpen construct` (build + per-length report) before and after issue 16, side by side.

Before: the model drawn at random in float32 and cast to float64, the Helmert basis filled
column by column, identity matrices materialized, all 16 inputs in one forward pass (logits and
metric temporaries of 16 x (v-1) x v float64), and the theory evaluated length by length with
``np.exp`` (a copy of the old code is below). After: the build writes the weights in place on a
meta-device model, the evaluation runs in chunks of bounded memory, the inputs per length are
bounded by a flop budget (16 up to v ~ 1300), and the theory is one vectorized log-space call;
since issue 24 a permutation-symmetric construction (this one) is evaluated on one permutation.

Each side runs in a fresh process (peak RSS is that process's); prints wall and CPU seconds,
peak memory and the before/after ratios. Usage: python benchmarks/bench_construct.py [--vocab V]
(default 2000, the size of issue 16; about 3 minutes). "after-16" runs the new code on the old
16 inputs per length, separating the implementation's effect from the bounded inputs.

``--floor`` (no before/after runs) prints what any dense float64 evaluation of the tight
construction must spend at ``--vocab``: the forward pass's flops
(:func:`resharpen.experiments.common.limits.forward_flops`) over this machine's float64 matrix
product rate, measured here on n x n products with torch's threads, and the bytes of the
weights (:func:`~resharpen.experiments.common.limits.construct_weights_bytes`) plus one (S x v)
logit array, the least any forward pass holds at once:

    python benchmarks/bench_construct.py --floor --vocab 10000"""
from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time


SIDES = ("before", "after-16", "after")
"""before: the old code; after-16: the new code on the same 16 inputs per length (the
implementation's effect alone); after: the new default (inputs bounded by the flop budget)."""


def old_construct(vocab: int, per_length: int = 16) -> dict:
    import numpy as np
    import torch

    from resharpen.constructions.set_complement import Construction, theory_margins
    from resharpen.experiments.model.transformer import ModelConfig, Transformer
    from resharpen.experiments.tasks.set_complement import sample_inputs
    from resharpen.experiments.set_complement.metrics import complement_metrics

    dtype = torch.float64
    Q = torch.zeros(vocab, vocab - 1, dtype=dtype)
    for k in range(1, vocab):
        Q[:k, k - 1] = 1.0
        Q[k, k - 1] = -float(k)
        Q[:, k - 1] /= math.sqrt(k * (k + 1))
    d, lam, beta = vocab - 1, 2.0 * vocab, 1.0
    model = Transformer(ModelConfig(vocab=vocab, d_model=d, d_head=d, d_value=d, norm="none",
                                    eps=0.0)).to(dtype)
    zero, eye = torch.zeros(d, d, dtype=dtype), torch.eye(d, dtype=dtype)
    attn = model.blocks[0].attn
    with torch.no_grad():
        for param, value in ((model.W_E, Q), (model.W_U, -beta * Q.T), (attn.W_Q, zero[None]),
                             (attn.W_K, zero[None]), (attn.W_V, (lam / beta) * eye[None]),
                             (attn.W_O, eye[None])):
            param.copy_(value)
    built = Construction(model, "tight", vocab, "none", "rms", lam, beta, 1.0)
    tokens = sample_inputs(vocab, vocab - 1, per_length, 0)
    with torch.no_grad():
        metrics = complement_metrics(model(tokens), tokens, vocab)
    rows = []
    for length in range(1, vocab):
        col = {k: val[:, length - 1].numpy() for k, val in metrics.items()}
        nq, q = theory_margins(built, tokens[:, :length])
        total = (length - 1) * np.exp(-nq) + np.exp(-q)
        mass = total / (vocab - length + total)
        errors = [np.abs(col["margin_query"] - q)]
        if length > 1:
            errors += [np.abs(col["margin_nonquery_min"] - nq)]
        rows.append({"length": length, "invalid_mass": float(col["invalid_mass"].mean()),
                     "theory_invalid_mass": float(mass.mean()),
                     "abs_error_margin": float(np.max(np.concatenate(errors)))})
    return {"per_length_inputs": per_length, "lengths": rows}


def new_construct(vocab: int, all_inputs: bool = False) -> dict:
    """The new code: ``construct``'s report (one permutation: the tight construction is
    permutation-symmetric, issue 24), or with ``all_inputs`` the old 16 random inputs per
    length through the new evaluation."""
    from resharpen.constructions.set_complement import build
    from resharpen.experiments.set_complement.report import (construction_errors,
                                                             construction_report)

    built = build("tight", vocab, lam=2.0 * vocab)
    if all_inputs:
        return {"per_length_inputs": 16, "lengths": construction_errors(built, 16)}
    return construction_report(built)


def child(side: str, vocab: int) -> None:
    import resharpen.experiments.set_complement.report  # noqa: F401  (imports are not timed)

    wall, cpu = time.perf_counter(), time.process_time()
    report = (old_construct(vocab) if side == "before"
              else new_construct(vocab, all_inputs=side == "after-16"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    worst = max(r["abs_error_margin"] for r in report["lengths"])
    print(json.dumps({"wall": wall, "cpu": cpu, "inputs": report["per_length_inputs"],
                      "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "worst": worst}))


def floor(vocab: int, n: int = 2000, repeats: int = 5) -> None:
    """The dense float64 floor of ``construct`` at ``vocab`` (module docstring)."""
    import os

    import torch

    from resharpen.experiments.common.limits import (construct_weights_bytes, construction_widths,
                                                   forward_flops)

    a, b = torch.randn(n, n, dtype=torch.float64), torch.randn(n, n, dtype=torch.float64)
    a @ b
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        rates.append(2 * n ** 3 / (time.perf_counter() - start))
    rates.sort()
    d, dh, dv = construction_widths("tight", vocab)
    flops = forward_flops(vocab, d, dh, dv, vocab - 1)
    weights = construct_weights_bytes("tight", vocab)
    logits = 8 * (vocab - 1) * vocab
    print(f"tight construction, v = {vocab} (d = {d}, d_head = {dh}, d_v = {dv}), float64; "
          f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    print(f"  float64 {n} x {n} products: {rates[0] / 1e9:.1f} / {rates[len(rates) // 2] / 1e9:.1f}"
          f" / {rates[-1] / 1e9:.1f} GFLOP/s (min / median / max of {repeats})")
    print(f"  one forward pass over v - 1 positions: {flops:.3g} flops = at least "
          f"{flops / rates[-1]:.0f} s at the fastest rate ({flops / rates[len(rates) // 2]:.0f} s "
          f"at the median)")
    print(f"  weights {weights / 1e9:.2f} GB + one (S x v) logit array {logits / 1e9:.2f} GB = "
          f"{(weights + logits) / 1e9:.2f} GB held at once, at the least")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--child", choices=SIDES)
    parser.add_argument("--floor", action="store_true",
                        help="print the dense float64 floor at --vocab and exit")
    args = parser.parse_args()
    if args.floor:
        return floor(args.vocab)
    if args.child:
        return child(args.child, args.vocab)
    results = {}
    for side in SIDES:
        out = subprocess.run([sys.executable, __file__, "--child", side, "--vocab",
                              str(args.vocab)], capture_output=True, text=True, check=True)
        results[side] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"construct (tight, norm none), v = {args.vocab}, float64, every length 1..{args.vocab - 1}")
    for side, r in results.items():
        print(f"  {side:8s}: {r['inputs']:2d} inputs/length  wall {r['wall']:7.1f} s  "
              f"cpu {r['cpu']:7.1f} s  peak {r['peak'] / 2 ** 30:6.2f} GiB  "
              f"max |margin - theory| {r['worst']:.2g}")
    b = results["before"]
    for side in SIDES[1:]:
        a = results[side]
        print(f"  ratio before / {side:8s}: wall {b['wall'] / a['wall']:5.2f}x  "
              f"cpu {b['cpu'] / a['cpu']:5.2f}x  peak memory {b['peak'] / a['peak']:5.2f}x")


if __name__ == "__main__":
    main()
