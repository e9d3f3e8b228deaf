"""The engine's speed, as ratios measured side by side in one process.

    python benchmarks/bench_engine.py [--repeats 5] [--steps 20] [--threads 1] [--k 8]

1. One model: the package's training step (``TrainingState.train_step``: the training
   target's cross-entropy, backward, clipping, ``torch.optim.AdamW``, the schedule) against a
   plain PyTorch loop of the same ``Transformer`` (``F.cross_entropy``, backward,
   ``clip_grad_norm_``, ``torch.optim.AdamW``), for the one-layer Set Complement model, the 2 x 64
   Dyck-2 model and the 4 x 64 Othello model; and, apart, what keeping EMA and BEMA weights
   adds to a step.
2. K members as one ensemble (the engine: the module stacked and vmapped, per-member AdamW)
   against the same members one at a time, per member, with each member's data drawn in the
   step: K = ``--k`` members of the 2 x 64 language model (MLP, 4 heads, batch 32, length 40) on
   Dyck-2 with the task's own sampler, K = 64 one-layer Set Complement models at batch 8 and
   K = 10 collapse stacks (24 x 32, Post-Norm, SwiGLU) at batch 8 (overhead-bound cases); and
   the share of the ensemble's step spent sampling.
3. The engine's AdamW (:func:`resharpen.experiments.training.engine.adamw_update`, per-member rates)
   against ``torch.optim.AdamW`` (one rate) on the same stacked tensors.
4. Why stacking does not pay for the 2 x 64 language model on this CPU: the step's largest
   non-matmul and small-matmul operations (the attention scores' batched product, the MLP's
   GELU), forward and backward, for K members stacked under ``vmap`` against the same
   operation on one member K times, with each operation's working set beside the L2 cache: a
   stacked operation is no faster per member, and a memory-bound one (GELU) is slower, its
   working set grown K-fold (2026-12-02, K = 8, L2 1 MiB, ``--repeats 3 --steps 10``: 1.02 /
   1.04 / 1.08 and 1.09 / 1.29 / 1.34 at load 0.6-0.9; 0.84 / 0.90 / 1.27 and 1.24 / 1.99 / 2.63
   beside another process at load 2).

Each measurement is repeated ``--repeats`` times, the arms interleaved within a repeat (so a
change of the machine's load hits both), and the ratios are printed as min / median / max over
the repeats, with the machine's load average before and after.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resharpen.experiments.training.engine import Members, MemberAdamW  # noqa: E402
from resharpen.experiments.model.transformer import ModelConfig, Transformer  # noqa: E402
from resharpen.experiments.training.targets import Batch  # noqa: E402
from resharpen.experiments.training.loop import members_state  # noqa: E402
from resharpen.experiments.tasks.registry import get_task  # noqa: E402
from resharpen.experiments.set_complement.train import SetComplementStreams  # noqa: E402

TRAIN = {"steps": 10**6, "lr": 3e-3, "min_lr_ratio": 0.1, "warmup": 10, "schedule": "cosine",
         "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.98, "grad_clip": 1.0,
         "ema_decay": 0.999, "bema_update_freq": 1, "bema_ema_power": 0.5,
         "bema_bias_power": 0.2, "bema_lag": 10.0, "bema_update_after": 0,
         "bema_multiplier": 1.0}
SHAPES = {  # name: model config, batch, sequence length
    "set complement 1 x 64": (ModelConfig(vocab=64, d_model=64, norm="post"), 32, 16),
    "dyck-2 2 x 64": (ModelConfig(vocab=6, d_model=64, n_layers=2, n_heads=4, norm="pre",
                                  mlp="gelu", max_len=41), 32, 40),
    "othello 4 x 64": (ModelConfig(vocab=61, d_model=64, n_layers=4, n_heads=4, norm="pre",
                                   mlp="gelu", max_len=60), 32, 30),
    "collapse stack 24 x 32": (ModelConfig(vocab=64, d_model=32, n_layers=24, n_heads=2,
                                           norm="post", mlp="swiglu", d_mlp=96, max_len=32,
                                           init_std=96 ** -0.5), 8, 32),
}


def train_flops(cfg: ModelConfig, batch: int, seq: int) -> float:
    """Matmul FLOPs of one training step of one model (forward x 3 for forward + backward)."""
    d, h, dk, dv, v = cfg.d_model, cfg.n_heads, cfg.head_width, cfg.value_width, cfg.vocab
    per_layer = 2 * seq * d * h * (2 * dk + dv) + 2 * seq * seq * h * (dk + dv) \
        + 2 * seq * h * dv * d
    if cfg.mlp:
        per_layer += 2 * seq * d * cfg.mlp_width * (3 if cfg.mlp == "swiglu" else 2)
    return 3.0 * (cfg.n_layers * per_layer + 2 * seq * d * v) * batch


def matmul_peak_gflops(n: int = 1024, repeats: int = 20) -> float:
    """Best of ``repeats`` n x n x n fp32 matmuls: the attainable peak with this thread count."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(timed(lambda i: torch.mm(a, b), 1) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def spread(values: list[float]) -> str:
    return (f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}")


def timed(fn, steps: int) -> float:
    start = time.perf_counter()
    for step in range(1, steps + 1):
        fn(step)
    return (time.perf_counter() - start) / steps


def one_model(repeats: int, steps: int) -> None:
    print("1. one model: package step / plain PyTorch loop (min / median / max over repeats)")
    for name, (cfg, batch, length) in SHAPES.items():
        data = torch.randint(0, cfg.vocab, (steps + 1, batch, length + 1))

        def plain_arm():
            torch.manual_seed(0)
            model = Transformer(cfg)
            opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98))

            def step(i):
                x = data[i]
                loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, cfg.vocab),
                                       x[:, 1:].reshape(-1))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                loss.item()
            return step

        def package_arm(weights):
            torch.manual_seed(0)
            state = members_state([Transformer(cfg)], [TRAIN], weights)

            def step(i):
                state.train_step(Batch(data[i]), i, TRAIN["grad_clip"])
                state.update_averagers(i)
            return step

        ratios, averaging = [], []
        for _ in range(repeats):
            arms = {"plain": plain_arm(), "raw": package_arm(("raw",)),
                    "all": package_arm(("raw", "ema", "bema"))}
            for arm in arms.values():
                arm(1)  # warm-up
            t = {key: timed(arm, steps) for key, arm in arms.items()}
            ratios.append(t["raw"] / t["plain"])
            averaging.append(t["all"] / t["raw"])
        print(f"   {name:24s} package/plain {spread(ratios)}   "
              f"(+ EMA and BEMA weights: x {spread(averaging)}; plain step "
              f"{t['plain'] * 1e3:.1f} ms)")


ENSEMBLES = {  # name: shape, K, task (None: Set Complement's own sampler)
    "dyck-2 2 x 64": ("dyck-2 2 x 64", None, "dyck2"),
    "set complement 1 x 64 at batch 8": ("set complement 1 x 64", 64, None),
    "collapse stack 24 x 32 (post) at batch 8": ("collapse stack 24 x 32", 10, "uniform"),
}


def ensembles(repeats: int, steps: int, k: int) -> None:
    print("2. ensembles: per-member step time one at a time / as one ensemble, data sampling "
          "in the step (min / median / max over repeats)")
    for name, (shape, k_shape, task_name) in ENSEMBLES.items():
        cfg, batch, length = SHAPES[shape]
        members = k_shape or k
        if task_name is None:
            batch = 8
        task = get_task(task_name) if task_name not in (None, "uniform") else None

        def models():
            out = []
            for seed in range(members):
                torch.manual_seed(seed)
                out.append(Transformer(cfg))
            return out

        def sampler():
            if task is not None:
                streams = task.streams(range(members), batch, length + 1)
                return lambda: torch.as_tensor(streams.draw())
            if task_name == "uniform":  # i.i.d. tokens: the step's cost, not the task's
                return lambda: torch.randint(0, cfg.vocab, (members, batch, length + 1))
            streams = SetComplementStreams(cfg.vocab, range(members), batch, length + 1)
            return streams.draw

        speedups, sampling = [], []
        for _ in range(repeats):
            alone = [members_state([m], [TRAIN], ("raw",)) for m in models()]
            together = members_state(models(), [TRAIN] * members, ("raw",))
            sample = sampler()

            def one_at_a_time(i):
                seqs = sample()
                for member, state in enumerate(alone):
                    state.train_step(Batch(seqs[member]), i, 1.0)

            def as_ensemble(i):
                together.train_step(Batch(sample()), i, 1.0)

            one_at_a_time(1), as_ensemble(1)
            t_alone = timed(one_at_a_time, steps)
            t_together = timed(as_ensemble, steps)
            t_sample = timed(lambda i: sample(), steps)
            speedups.append(t_alone / t_together)
            sampling.append(t_sample / t_together)
        flops = train_flops(cfg, batch, length) * members
        peak = matmul_peak_gflops()
        print(f"   {name}, K = {members}: per-member speed-up "
              f"{spread(speedups)} (ensemble step {t_together * 1e3:.1f} ms, "
              f"{t_together / members * 1e3:.2f} ms per member); sampling "
              f"{spread([100 * s for s in sampling])} % of the ensemble's step; matmul work "
              f"one at a time {flops / t_alone / 1e9:.1f} GFLOP/s, ensemble "
              f"{flops / t_together / 1e9:.1f} (the step's matmul flops over its whole time, "
              f"non-matmul work included); a lone 1024^3 fp32 product reaches {peak:.1f}")


def optimizers(repeats: int, steps: int, k: int) -> None:
    cfg = SHAPES["dyck-2 2 x 64"][0]
    models = [Transformer(cfg) for _ in range(k)]
    ratios = []
    for _ in range(repeats):
        members = Members(models)
        for p in members.stack:
            p.grad = torch.randn_like(p)
        mine = MemberAdamW(members, [3e-3] * k, [0.01] * k, (0.9, 0.98))
        stacked = [p.detach().clone().requires_grad_(True) for p in members.stack]
        for p, q in zip(stacked, members.stack):
            p.grad = q.grad.clone()
        theirs = torch.optim.AdamW(stacked, lr=3e-3, betas=(0.9, 0.98), weight_decay=0.01,
                                   foreach=True)
        grads = [p.grad for p in members.stack]

        def engine_step(i):
            for p, g in zip(members.stack, grads):
                p.grad = g
            mine.step()

        t_engine = timed(engine_step, steps)
        t_torch = timed(lambda i: theirs.step(), steps)
        ratios.append(t_engine / t_torch)
    print(f"3. engine AdamW (per-member lr, decay, clipping off) / torch.optim.AdamW(foreach) on "
          f"the K = {k} stack: {spread(ratios)}")


def l2_bytes() -> int | None:
    """The L2 cache of CPU 0 (Linux sysfs), or None."""
    for index in range(8):
        base = Path(f"/sys/devices/system/cpu/cpu0/cache/index{index}")
        try:
            if (base / "level").read_text().strip() == "2":
                size = (base / "size").read_text().strip()
                return int(size[:-1]) * 1024 if size.endswith("K") else int(size)
        except (OSError, ValueError):
            return None
    return None


def stacked_ops(repeats: int, steps: int, k: int) -> None:
    from torch.func import vmap

    cfg, batch, length = SHAPES["dyck-2 2 x 64"]
    heads, width = cfg.n_heads, cfg.d_model // cfg.n_heads
    ops = {  # name: (function of one member, its inputs' shapes)
        "attention scores (einsum bhqe,bhke->bhqk)":
            (lambda q, kk: torch.einsum("bhqe,bhke->bhqk", q, kk),
             [(batch, heads, length, width)] * 2),
        "MLP GELU": (lambda h: F.gelu(h), [(batch, length, cfg.mlp_width)]),
    }
    l2 = l2_bytes()
    print(f"4. one operation, forward + backward, K = {k} stacked (vmap) / K times one member "
          f"(min / median / max over repeats; > 1: stacking is slower); L2 cache "
          f"{l2 / 2**20:.2f} MiB" if l2 else "(L2 size unknown)")
    for name, (fn, shapes) in ops.items():
        stacked = [torch.randn(k, *shape, requires_grad=True) for shape in shapes]
        single = [torch.randn(*shape, requires_grad=True) for shape in shapes]

        def run_stacked(i):
            vmap(fn)(*stacked).sum().backward()

        def run_single(i):
            for _ in range(k):
                fn(*single).sum().backward()

        ratios = []
        for _ in range(repeats):
            run_stacked(0), run_single(0)
            ratios.append(timed(run_stacked, steps) / timed(run_single, steps))
        member = 4 * sum(math.prod(shape) for shape in shapes) * 3  # inputs, output, grads
        print(f"   {name}: {spread(ratios)}; working set about {member / 2**20:.2f} MiB one "
              f"member, {k * member / 2**20:.2f} MiB stacked")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--k", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {os.cpu_count()} CPUs, "
          f"load average before {os.getloadavg()[0]:.2f}")
    one_model(args.repeats, args.steps)
    ensembles(args.repeats, args.steps, args.k)
    optimizers(args.repeats, args.steps, args.k)
    stacked_ops(args.repeats, args.steps, args.k)
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
