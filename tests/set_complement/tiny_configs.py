"""Tiny Set Complement training configs for fast tests (v = 8, 12 steps), shared by test files."""
from pathlib import Path

from resharpen.experiments.set_complement.train import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "set_complement"


def tiny(name: str, **sets) -> dict:
    """base.toml shrunk to v = 8, d = 8, 12 steps, with ``sets`` as --set overrides."""
    base = ["task.vocab=8", "model.d_model=8", "train.steps=12", "train.warmup=3",
            "train.batch_size=8", "train.eval_every=6", "eval.per_length=8",
            "train.bema_update_after=2"]
    config = load_config(CONFIGS / "base_sampled.toml", base + [f"{k}={v}" for k, v in sets.items()])
    config["name"] = name
    return config
