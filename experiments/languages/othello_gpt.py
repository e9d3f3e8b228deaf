r"""OthelloGPT at the size of Li et al. (arXiv 2210.13382): a prepared training script for a GPU.

    python -m resharpen.experiments.languages.othello_gpt                      # 8 x 512, GPU if any
    python -m resharpen.experiments.languages.othello_gpt --device cuda --amp --data-workers 4
    python -m resharpen.experiments.languages.othello_gpt --resume --out out/runs/othello_gpt-...
    python -m resharpen.experiments.languages.othello_gpt --board 6 --layers 4 --d-model 128 \
        --steps 2000 --batch-size 64 --lr 2e-3 --until 0.05                  # 6 x 6 on a CPU

Model. The package's decoder (:class:`resharpen.experiments.model.transformer.Transformer`) at Li et
al.'s shape by default: 8 layers, d_model 512, 8 heads, GELU MLPs of width 4 d_model, LayerNorm
in the Pre-LN (GPT-2) placement (``--norm``: any placement of the scheme table), learned
absolute positions over the 59 input moves (``--positional``: learned | rope | none).

Data. Synthetic games as Li et al.'s synthetic data set: every move uniform among the legal
moves (:meth:`resharpen.experiments.tasks.othello.Othello.sample_with_moves`, which also
returns the legal-move bitboard after every prefix). Step s trains on ``--batch-size`` fresh
games drawn with the generator ``default_rng([seed, s])``, so a step's batch does not depend on
the number of data workers, nor on whether the run was resumed. At the defaults (80,000 steps
of 256 games) a run sees 20.5 M games, the size of Li et al.'s synthetic set.

Target (``--target``). ``soft`` (default): at input position i (the game's first i + 1 moves)
the uniform distribution p*_i on the legal moves of the side to move (implicit passes
applied), built on the device from the bitboards; the loss is the cross-entropy H(p*_i, p_i)
(:mod:`resharpen.experiments.training.targets`). ``sampled``: the game's own next move, as Li et
al. train. Positions after the end of a game (the next token is PAD) have no target.

Optimization: the training core (:mod:`resharpen.experiments.training.loop`): AdamW with decay on
matrices only, linear warm-up then cosine decay to ``--min-lr-ratio`` x lr, gradient clipping,
the training loop :func:`~resharpen.experiments.training.loop.fit_members` (progress bar via tqdm
on a terminal, a line per record step otherwise), raw and EMA weights on one trajectory.

Evaluation (every ``--eval-every`` steps, raw and EMA weights, float32 forward): the ID
illegal-move mass, the mean over the prefix lengths 1..``--train-len`` of the mean over
``--eval-games`` fixed games (seed ``--eval-seed``) of p(V minus S), S the legal-next set
(:func:`resharpen.experiments.tasks.metrics.target_set_metrics`). ``--until m``: stop at the
first evaluation whose raw mass is <= m.

Output (``--out``, default ``out/runs/othello_gpt-<board>x<board>-<layers>x<d_model>-s<seed>``):
``checkpoint.pt`` every ``--checkpoint-every`` steps (model, EMA, optimizer, schedule, history;
``--resume`` continues from it, the same batches and weights as an uninterrupted run;
``--stop-after`` ends a job early on purpose), and at the end the
core's run folder (:func:`~resharpen.experiments.training.loop.save_run`): config.json,
metrics.jsonl, weights_raw / weights_ema .safetensors, summary.json.
"""
from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import numpy as np
import torch

from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.experiments.training.schema import NORM_PLACEMENTS
from resharpen.experiments.training.targets import Batch
from resharpen.experiments.training.loop import fit_members, save_run, training_state, weight_sets
from resharpen.experiments.tasks.othello import PAD, Othello

CHECKPOINT = "checkpoint.pt"
WEIGHTS = ("raw", "ema")


# ---------------------------------------------------------------------------- data
def soft_targets(moves: torch.Tensor, squares: torch.Tensor, ignore_pad: bool = True
                 ) -> torch.Tensor:
    """p* at every position from legal-move bitboards: ``moves`` int64 (..., S) (the uint64
    bitboards' bits), ``squares`` int64 (V - 1,) the bit of each square token -> float32
    (..., S, V), uniform on {token t >= 1 : bit squares[t - 1] of moves is set}, or on {PAD}
    where moves == 0 (the game is over); that row is all zeros (no target) when
    ``ignore_pad``. (x >> b) & 1 reads bit b of an int64 for every b in 0..63, the sign bit
    included."""
    bits = (moves.unsqueeze(-1) >> squares) & 1
    over = (moves == 0).unsqueeze(-1)
    legal = torch.cat([over, bits.bool()], dim=-1)
    if ignore_pad:
        legal = legal & ~over
    legal = legal.to(torch.float32)
    return legal / legal.sum(-1, keepdim=True).clamp_min(1.0)


class GameBatches(torch.utils.data.Dataset):
    """Item s: the batch of step s, (games int64 (B, train_len + 1), legal-move bitboards as
    int64 (B, train_len): the set after each input prefix), drawn with
    ``default_rng([seed, s])``."""

    def __init__(self, board: int, batch_size: int, train_len: int, seed: int):
        self.board, self.batch_size, self.train_len, self.seed = board, batch_size, train_len, seed

    def __len__(self) -> int:
        return 2**62

    def __getitem__(self, step: int):
        task = Othello(self.board)
        games, moves = task.sample_with_moves(self.batch_size, self.train_len + 1,
                                              np.random.default_rng([self.seed, int(step)]))
        return (torch.from_numpy(games),
                torch.from_numpy(moves[:, :self.train_len].view(np.int64).copy()))


def _one_thread(_worker: int) -> None:
    torch.set_num_threads(1)


def batches(args, start: int, device: torch.device):
    """The batches of steps start + 1 .. args.steps, in order (a DataLoader with
    ``args.data_workers`` processes prefetching them)."""
    data = GameBatches(args.board, args.batch_size, args.train_len, args.seed)
    loader = torch.utils.data.DataLoader(
        data, batch_size=None, sampler=range(start + 1, args.steps + 1),
        num_workers=args.data_workers, pin_memory=device.type == "cuda",
        worker_init_fn=_one_thread if args.data_workers else None,
        prefetch_factor=4 if args.data_workers else None)
    return iter(loader)


# ---------------------------------------------------------------------------- evaluation
def eval_games(args) -> tuple[np.ndarray, np.ndarray]:
    """The fixed evaluation games (``--eval-games``, seed ``--eval-seed``), cut at train_len
    moves, and their legal-next sets (positions after a game's end: empty, no target)."""
    from resharpen.experiments.training.next_token import target_sets

    task = Othello(args.board)
    games = task.sample(args.eval_games, args.train_len, args.eval_seed)
    return games, target_sets(task, games, ignore_pad=True)


@torch.no_grad()
def id_illegal_mass(model: torch.nn.Module, games: torch.Tensor, legal: np.ndarray,
                    batch: int = 256) -> float:
    """Mean over the prefix lengths of the mean illegal-move mass over the games with a target
    there (float32 forward on the model's device, the metric,
    :func:`resharpen.experiments.tasks.metrics.target_set_metrics`, in float64 on the CPU)."""
    from resharpen.experiments.tasks.metrics import target_set_metrics

    was_training = model.training
    model.eval()
    parts = []
    with torch.autocast(games.device.type, enabled=False):
        for lo in range(0, len(games), batch):
            logits = model(games[lo:lo + batch]).float().cpu()
            valid = torch.as_tensor(legal[lo:lo + batch])
            parts.append(target_set_metrics(logits, valid)["invalid_mass"])
    model.train(was_training)
    mass = torch.cat(parts)  # (N, L), NaN where a position has no target
    counted = ~mass.isnan()
    per_length = torch.where(counted, mass, 0.0).sum(0) / counted.sum(0).clamp_min(1)
    return float(per_length[counted.any(0)].mean())


# ---------------------------------------------------------------------------- the run
def pick_device(name: str) -> torch.device:
    """``auto``: CUDA if available, else Apple MPS, else the CPU; otherwise the named device
    (ValueError when it is not available)."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: CUDA is not available on this machine")
    return device


def model_config(args) -> ModelConfig:
    task = Othello(args.board)
    return ModelConfig(vocab=task.size, d_model=args.d_model, n_layers=args.layers,
                       n_heads=args.heads, norm=args.norm, norm_kind="layer", mlp="gelu",
                       max_len=args.train_len if args.positional == "learned" else None,
                       rope=args.positional == "rope", init_std=args.init_std)


def train_table(args) -> dict:
    """The core's ``[train]`` keys of this run."""
    return {"steps": args.steps, "lr": args.lr, "min_lr_ratio": args.min_lr_ratio,
            "warmup": args.warmup, "schedule": "cosine", "weight_decay": args.weight_decay,
            "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0, "ema_decay": args.ema_decay}


def default_out(args) -> Path:
    from resharpen.experiments.training.config import run_folder

    return run_folder(f"othello_gpt-{args.board}x{args.board}-{args.layers}x{args.d_model}"
                      f"-s{args.seed}")


def save_checkpoint(folder: Path, state, step: int, history: list, args) -> None:
    from resharpen.experiments.common.io import atomic_write_bytes

    buffer = io.BytesIO()
    torch.save({"step": step, "history": history, "args": vars(args),
                "model": state.model.state_dict(), "optimizer": state.optimizer.state_dict(),
                "schedule": state.schedule.state_dict(),
                "ema": state.averagers["ema"]._averaged.state_dict()}, buffer)  # + n_averaged
    atomic_write_bytes(folder / CHECKPOINT, buffer.getvalue())


def load_checkpoint(folder: Path, state, device: torch.device) -> tuple[int, list]:
    """Restore ``state`` from ``folder/checkpoint.pt``; (step, history). The file is unpickled
    with ``weights_only=True``: tensors, numbers, strings and containers only, so a crafted
    checkpoint whose unpickling would run code (a ``__reduce__`` payload) is refused with a
    ValueError naming the file, and nothing of it runs."""
    import pickle

    path = folder / CHECKPOINT
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"--resume: {str(path)!r} is not a checkpoint of this trainer (only "
                         f"tensors, numbers and containers are read, never code): {reason}"
                         ) from None
    if not isinstance(saved, dict) or not {"model", "optimizer", "schedule", "ema", "step",
                                           "history"} <= set(saved):
        raise ValueError(f"--resume: {str(path)!r} is not a checkpoint of this trainer (it "
                         "lacks model, optimizer, schedule, ema, step or history)")
    state.model.load_state_dict(saved["model"])
    state.optimizer.load_state_dict(saved["optimizer"])
    state.schedule.load_state_dict(saved["schedule"])
    state.averagers["ema"]._averaged.load_state_dict(saved["ema"])
    return saved["step"], saved["history"]


def run(args) -> dict:
    """Train (or resume) one OthelloGPT; return its summary."""
    from resharpen.experiments.common.io import check_folder_files
    from resharpen.experiments.training.runs import check_run_folder

    folder = Path(args.out) if args.out else default_out(args)
    check_folder_files(folder, (CHECKPOINT,), "--out")  # before any work
    check_run_folder(folder, "--out")
    torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    folder.mkdir(parents=True, exist_ok=True)
    task = Othello(args.board)
    torch.manual_seed(args.seed)
    model = Transformer(model_config(args)).to(device)
    train = train_table(args)
    state = training_state(model, train, weights=WEIGHTS)
    start, history = 0, []
    if args.resume:
        if not (folder / CHECKPOINT).is_file():
            raise ValueError(f"--resume: no {CHECKPOINT} in {folder}")
        start, history = load_checkpoint(folder, state, device)
    if start >= args.steps:
        raise ValueError(f"the checkpoint is at step {start}, --steps is {args.steps}: nothing "
                         "to train")
    squares = torch.as_tensor(task.geo.squares, device=device)
    games, legal = eval_games(args)
    games = torch.as_tensor(games, device=device)
    data = batches(args, start, device)
    ignore = None if args.target == "soft" else PAD
    end = min(args.stop_after or args.steps, args.steps)
    if end <= start:
        raise ValueError(f"the checkpoint is at step {start}, --stop-after is {end}: nothing to "
                         "train")
    began = time.perf_counter()

    def next_batch(step: int) -> Batch:
        tokens, moves = next(data)
        tokens = tokens.to(device, non_blocking=True)
        if args.target == "sampled":
            return Batch(tokens)
        return Batch(tokens, soft=soft_targets(moves.to(device, non_blocking=True), squares))

    def record(i: int, step: int, loss: float) -> dict:
        row = {"step": start + step, "loss": loss, "loss_smoothed": state.smoothed_loss,
               "lr": state.lr(), "games_seen": (start + step) * args.batch_size,
               "seconds": time.perf_counter() - began}
        weights = state.weights()
        row["id_invalid_mass"] = id_illegal_mass(weights["raw"], games, legal)
        row["ema_id_invalid_mass"] = id_illegal_mass(weights["ema"], games, legal)
        history.append(row)
        print(f"step {row['step']}: loss {row['loss_smoothed']:.4f}, ID illegal-move mass raw "
              f"{row['id_invalid_mass']:.4f} ema {row['ema_id_invalid_mass']:.4f} "
              f"({row['seconds']:.0f} s)", file=sys.stderr, flush=True)
        if row["step"] % args.checkpoint_every == 0 or row["step"] == end:
            save_checkpoint(folder, state, row["step"], history, args)
        return row

    def stop(i: int, row: dict) -> bool:
        return bool(args.until) and row["id_invalid_mass"] <= args.until

    loop = {**train, "steps": end - start}
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp):
        fit_members(state, loop, next_batch, every=args.eval_every, record=record, stop=stop,
                    ignore=ignore, raise_on_nonfinite=True, names=[folder.name],
                    progress=not args.no_progress)
    save_checkpoint(folder, state, history[-1]["step"], history, args)
    last = history[-1]
    summary = {"board": args.board, "device": str(device), "steps_trained": last["step"],
               "games_seen": last["games_seen"], "final_loss": last["loss_smoothed"],
               "id_invalid_mass": {"raw": last["id_invalid_mass"],
                                   "ema": last["ema_id_invalid_mass"]},
               "until": args.until or None,
               "fit_reached": bool(args.until) and last["id_invalid_mass"] <= args.until,
               "seconds": time.perf_counter() - began}
    config = {"othello_gpt": vars(args), "model": model_config(args).to_dict(), "train": train}
    save_run({"config": config, "history": history, "summary": summary,
              "weights": weight_sets(state.weights())}, folder)
    print(f"saved to {folder}", file=sys.stderr)
    return summary


# ---------------------------------------------------------------------------- command line
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto", help="auto (CUDA, MPS, else CPU) | cpu | cuda | "
                   "cuda:N | mps")
    p.add_argument("--board", type=int, choices=(6, 8), default=8)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--norm", choices=NORM_PLACEMENTS, default="pre")
    p.add_argument("--positional", choices=("learned", "rope", "none"), default="learned")
    p.add_argument("--init-std", type=float, default=0.02)
    p.add_argument("--target", choices=("soft", "sampled"), default="soft")
    p.add_argument("--train-len", type=int, default=None,
                   help="input moves per game (default: the longest game minus one, 59 on 8 x 8)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=80_000)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--ema-decay", type=float, default=0.999)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--until", type=float, default=0.0,
                   help="stop at the first evaluation with raw ID illegal-move mass <= this "
                        "(0: train all steps)")
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-games", type=int, default=512)
    p.add_argument("--eval-seed", type=int, default=1234)
    p.add_argument("--checkpoint-every", type=int, default=5000,
                   help="a multiple of --eval-every")
    p.add_argument("--out", default=None, help="run folder")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--stop-after", type=int, default=0,
                   help="end this job after that step of the --steps schedule (checkpoint and "
                        "weights saved; --resume goes on): a run split over time-limited jobs")
    p.add_argument("--data-workers", type=int, default=0,
                   help="processes generating games ahead of the trainer")
    p.add_argument("--threads", type=int, default=1, help="torch threads of this process")
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast (CUDA)")
    p.add_argument("--no-progress", action="store_true")
    return p


def check_args(p: argparse.ArgumentParser, args) -> None:
    longest = Othello(args.board).max_length
    if args.train_len is None:
        args.train_len = longest - 1
    for name in ("layers", "d_model", "heads", "batch_size", "steps", "eval_every",
                 "eval_games", "checkpoint_every", "threads", "train_len"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.train_len > longest - 1:
        p.error(f"--train-len must be <= {longest - 1} on the {args.board} x {args.board} board")
    if args.checkpoint_every % args.eval_every:
        p.error("--checkpoint-every must be a multiple of --eval-every")
    if args.data_workers < 0 or args.seed < 0 or args.warmup < 0 or args.stop_after < 0:
        p.error("--data-workers, --seed, --warmup and --stop-after must be >= 0")
    if not 0.0 <= args.until < 1.0:
        p.error(f"--until must be in [0, 1), got {args.until}")


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_args(p, args)
    try:
        summary = run(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{summary['steps_trained']} steps, {summary['games_seen']} games on "
          f"{summary['device']} in {summary['seconds']:.0f} s: ID illegal-move mass raw "
          f"{summary['id_invalid_mass']['raw']:.4f}, ema {summary['id_invalid_mass']['ema']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
