"""Batched ensembles equal the same runs done one at a time (and the trainer's runs)."""
from pathlib import Path

import pytest
import torch

from resharpen.experiments.core.model import Transformer
from resharpen.experiments.set_complement import ensemble as E
from resharpen.experiments.set_complement import train as T

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "set_complement"


def tiny(**train):
    sets = ["task.vocab=8", "model.d_model=8", "train.steps=15", "train.warmup=3",
            "train.batch_size=8", "train.eval_every=0"] + [f"train.{k}={v}" for k, v in train.items()]
    return T.load_config(CONFIGS / "base.toml", sets)


def max_diff(a, b):
    return max(float((p - q).detach().abs().max()) for p, q in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("norm", ["none", "post"])
def test_batched_equals_sequential_with_per_model_lr_and_decay(norm):
    config = tiny()
    mc = T.sc_model_config(config)
    mc = type(mc)(**{**mc.to_dict(), "norm": norm})
    seeds, lrs, wds = [0, 5, 9], [1e-2, 3e-3, 2e-2], [0.0, 0.1, 0.01]
    kw = dict(train=config["train"], train_len=2, lr=lrs, weight_decay=wds)
    batched = E.train_ensemble(mc, seeds, path="batched", **kw)
    sequential = E.train_ensemble(mc, seeds, path="sequential", **kw)
    for b, s in zip(batched, sequential):
        assert max_diff(b, s) < 1e-5
    # the models did train, and differently: equality above is not trivial
    assert max_diff(sequential[0], sequential[1]) > 1e-2
    torch.manual_seed(0)
    assert max_diff(sequential[0], Transformer(mc)) > 1e-2


def test_sequential_path_is_the_trainer():
    config = tiny(seed=5, lr=3e-3, weight_decay=0.1)
    model = E.train_ensemble(T.sc_model_config(config), [5], train=config["train"], train_len=2,
                             path="sequential")[0]
    assert max_diff(model, T.train(config, progress=False)["model"]) == 0.0


def test_auto_path_and_errors():
    config = tiny()
    mc = T.sc_model_config(config)
    with pytest.raises(ValueError, match="auto, sequential, batched, compiled"):
        E.train_ensemble(mc, [0], train=config["train"], train_len=2, path="vmap")
    with pytest.raises(ValueError, match="lr has 2 entries for 3 models"):
        E.Ensemble(mc, [0, 1, 2], lr=[1e-2, 1e-3])
    drop = type(mc)(**{**mc.to_dict(), "attn_dropout": 0.2})
    ens = E.Ensemble(drop, [0, 1])
    seqs = torch.stack([torch.randperm(8)[:3] for _ in range(2 * 4)]).view(2, 4, 3)
    total, per = ens.loss(seqs)
    assert per.shape == (2,) and torch.isfinite(total)
    assert E.train_flops(mc, 8, 2) > 0
    assert E.choose_path(8, 16, 64) == "batched"
    assert E.choose_path(64, 16, 64) == "batched" and E.choose_path(128, 16, 64) == "sequential"
    assert E.choose_path(128, 16, 1) == "sequential"
    assert E.choose_path(64, 16, 16, steps=E.COMPILE_MIN_STEPS) == "compiled"
    assert E.choose_path(8, 16, 16, steps=E.COMPILE_MIN_STEPS) == "batched"  # too small a step
    assert E.choose_path(128, 16, 64, steps=E.COMPILE_MIN_STEPS) == "compiled"
    assert E.choose_path(256, 16, 64, steps=E.COMPILE_MIN_STEPS) == "sequential"


def test_chunked_data_stream_is_each_models_own_stream():
    import torch

    from resharpen.experiments.set_complement.ensemble import DATA_CHUNK, data_stream
    from resharpen.experiments.set_complement.train import sample_sequences

    steps = DATA_CHUNK + 7  # crosses a chunk boundary
    stream = list(data_stream([torch.Generator().manual_seed(s) for s in (3, 4)], 16, 9, 5, steps))
    assert len(stream) == steps
    for k, seed in enumerate((3, 4)):
        gen = torch.Generator().manual_seed(seed)
        for step in range(steps):
            assert torch.equal(stream[step][k], sample_sequences(16, 9, 5, gen))


def test_compiled_path_equals_the_eager_batched_path():
    """torch.compile fuses the step; the arithmetic is the same up to float32 rounding."""
    config = tiny()
    mc = type(T.sc_model_config(config))(**{**T.sc_model_config(config).to_dict(), "norm": "attn_out"})
    kw = dict(train=config["train"], train_len=2, lr=[1e-2, 3e-3], weight_decay=[0.0, 0.1])
    eager = E.train_ensemble(mc, [0, 5], path="batched", **kw)
    fused = E.train_ensemble(mc, [0, 5], path="compiled", **kw)
    for a, b in zip(eager, fused):
        assert max_diff(a, b) < 1e-5
    assert max_diff(fused[0], fused[1]) > 1e-2
