"""Plug-ins: a scheme and a task defined in a file outside the package (or an installed entry
point) load with ``--plugin FILE.py:NAME``, are refused with one line when they cannot, and
train through ``train`` and ``langs train`` with no other file edited; a plug-in scheme's block
equals a plain-torch transcription of its equations.

Every test restores the registries it extends (the ``registries`` fixture of tests/conftest.py),
so the other tests see the package's own schemes and tasks only.
"""
from __future__ import annotations

import math
import textwrap

import pytest
import torch

from resharpen.cli import main
from resharpen.experiments.model import schemes, transformer
from resharpen.experiments.tasks import registry
from resharpen.experiments.training import plugins

NO_ONES = textwrap.dedent('''
    """A regular language of my own: strings over {0, 1} with no two 1s in a row, then $."""
    import numpy as np

    from resharpen.experiments.tasks.base import Task
    from resharpen.experiments.tasks.registry import register


    class NoTwoOnes(Task):
        def __init__(self):
            self.name, self.vocab, self.eos = "{name}", ("0", "1", "$"), 2

        def start(self, count, capacity):
            return np.zeros((count, 2), dtype=np.int64)  # [last token was 1, nonempty]

        def legal(self, states):
            mask = np.ones((len(states), 3), dtype=bool)
            mask[:, 1] = states[:, 0] == 0
            mask[:, 2] = states[:, 1] == 1
            return mask

        def advance(self, states, tokens):
            return np.stack([(tokens == 1).astype(np.int64), np.ones_like(tokens)], axis=1)

        def is_member(self, string):
            text = "".join(self.vocab[t] for t in string)
            return bool(text) and "11" not in text and "$" not in text


    register("{name}", NoTwoOnes, "regular")
''')


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return str(path)


# ----------------------------------------------------------------------------- loading
def test_a_file_plugin_registers_its_scheme_once(tmp_path, registries, deepnet_plugin):
    path = deepnet_plugin(tmp_path, "deepnet_a")
    assert plugins.load_plugin(f"{path}:deepnet_a") == "deepnet_a"
    assert plugins.load_plugin(f"{path}:deepnet_a") == "deepnet_a"  # imported once, no clash
    assert "deepnet_a" in schemes.names(builtin=False)
    assert plugins.loaded() == (f"{tmp_path.resolve() / 'my_norms.py'}:deepnet_a",)


@pytest.mark.parametrize("spec, message", [
    ("{dir}/absent.py:x", "does not exist"),
    ("{dir}/my_norms.py:other", "registers no scheme or task named 'other' (it registers "
                                "scheme 'deepnet_b'"),
    ("{dir}/my_norms.py", "is not FILE.py:NAME"),
    ("{dir}/broken.py:x", "failed to import: ZeroDivisionError"),
    ("{dir}/notes.txt:x", "is not a Python file"),
    ("no_such_entry_point", "neither FILE.py:NAME nor an installed entry point"),
])
def test_a_bad_plugin_is_one_line_exit_2(tmp_path, registries, deepnet_plugin, capsys, spec,
                                      message):
    deepnet_plugin(tmp_path, "deepnet_b")
    write(tmp_path, "broken", "1 / 0\n")
    (tmp_path / "notes.txt").write_text("x")
    spec = spec.replace("{dir}", str(tmp_path))
    with pytest.raises(ValueError, match="plug-in|entry point"):
        plugins.load_plugin(spec)
    status = main(["langs", "train", "dyck1", "--plugin", spec, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


def test_an_entry_point_scheme_is_registered_by_name(tmp_path, registries, monkeypatch):
    """An installed package's entry point in the group resharpen.schemes that names a Scheme
    object: ``--plugin NAME`` imports it and registers it."""
    site = tmp_path / "site"
    (site / "sandwich_norms-0.1.dist-info").mkdir(parents=True)
    (site / "sandwich_norms-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sandwich-norms\nVersion: 0.1\n")
    (site / "sandwich_norms-0.1.dist-info" / "entry_points.txt").write_text(
        "[resharpen.schemes]\nsandwich_ep = sandwich_norms:SANDWICH\n")
    (site / "sandwich_norms.py").write_text(textwrap.dedent('''
        from resharpen.experiments.model.schemes import Layer, Scheme
        RULE = Layer(lambda x, f, p: x + p.n_out(f(p.n_in(x))), input_norm=True,
                     output_norm="branch")
        SANDWICH = Scheme("sandwich_ep", lambda l, L: RULE, final_norm=True, label="Sandwich-LN",
                          color="#123456", marker="o")
    '''))
    monkeypatch.syspath_prepend(str(site))
    assert plugins.load_plugin("sandwich_ep") == "sandwich_ep"
    assert schemes.get("sandwich_ep").label == "Sandwich-LN"
    assert plugins.loaded()[-1] == "sandwich_ep"


# ----------------------------------------------------------------------------- the equations
def rms(x: torch.Tensor, gain: torch.Tensor, eps: float) -> torch.Tensor:
    return gain * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def test_plugin_block_equals_its_equations(tmp_path, registries, deepnet_plugin):
    """A 1-layer, 2-head, attention-only DeepNet model: logits = N(2 x + f(x)) W_U with
    x = W_E[t], f = sum_h softmax_causal(x W_Q^h (x W_K^h)^T / sqrt(e)) x W_V^h W_O^h and N
    the block's RMSNorm with its gain; no final norm. Written from the weights alone."""
    path = deepnet_plugin(tmp_path, "deepnet_eq")
    plugins.load_plugin(f"{path}:deepnet_eq")
    torch.manual_seed(0)
    cfg = transformer.ModelConfig(vocab=7, d_model=8, n_layers=1, n_heads=2, norm="deepnet_eq",
                                    init_std=0.5)  # f(x) as large as x: alpha matters
    model = transformer.Transformer(cfg).to(torch.float64)
    with torch.no_grad():
        model.blocks[0].attn_norm_out.gain.uniform_(0.5, 1.5)  # a gain that is not 1
    sd = model.state_dict()
    tokens = torch.tensor([[0, 3, 6, 2, 2, 5], [1, 1, 4, 0, 6, 3]])
    x = sd["W_E"][tokens]
    n = tokens.shape[1]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    f = torch.zeros_like(x)
    for h in range(cfg.n_heads):
        q, k = x @ sd["blocks.0.attn.W_Q"][h], x @ sd["blocks.0.attn.W_K"][h]
        scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(future, -math.inf)
        f = f + torch.softmax(scores, -1) @ x @ sd["blocks.0.attn.W_V"][h] @ sd["blocks.0.attn.W_O"][h]
    expected = rms(2.0 * x + f, sd["blocks.0.attn_norm_out.gain"], cfg.eps) @ sd["W_U"]
    with torch.no_grad():
        got = model(tokens)
    assert torch.allclose(got, expected, rtol=0, atol=1e-12), float((got - expected).abs().max())
    # the transcription can fail: alpha = 1 (plain Post-LN) is another function
    post = rms(x + f, sd["blocks.0.attn_norm_out.gain"], cfg.eps) @ sd["W_U"]
    assert float((got - post).abs().max()) > 1e-2


# ----------------------------------------------------------------------------- no other file
def test_a_scheme_and_a_task_train_from_one_file_each(tmp_path, registries, deepnet_plugin, capsys):
    """The change cost: a scheme in one file of one's own, a task in another; ``train`` (Set
    Complement) and ``langs train`` run them for a few steps, nothing in the package edited."""
    scheme = deepnet_plugin(tmp_path, "deepnet_c")
    task = write(tmp_path, "my_task", NO_ONES.replace("{name}", "no_two_ones"))
    assert main(["train", "set_complement/base", "--profile", "quick", "--plugin",
                 f"{scheme}:deepnet_c", "--set", "model.norm=deepnet_c",
                 "--set", "train.steps=4", "--set", "fit.until_id_invalid_mass=0",
                 "--out", str(tmp_path / "sc")]) == 0
    assert main(["langs", "train", "no_two_ones", "--plugin", f"{task}:no_two_ones",
                 "--plugin", f"{scheme}:deepnet_c", "--set", "model.norm=deepnet_c",
                 "--set", "train.steps=4", "--set", "task.train_len=8",
                 "--set", "task.eval_len=12", "--set", "eval.count=8",
                 "--out", str(tmp_path / "lang")]) == 0
    out = capsys.readouterr().out
    assert "norm=deepnet_c" in out and "no_two_ones norm=deepnet_c" in out
    for run in ("sc", "lang"):
        assert (tmp_path / run / "summary.json").exists()
    assert registry.get_task("no_two_ones").is_member([0, 1, 0])
    assert not registry.get_task("no_two_ones").is_member([1, 1])


def test_sweep_and_langs_run_take_plugins(tmp_path, registries, deepnet_plugin, capsys):
    """``sweep`` and ``langs run`` with ``--plugin``: a sweep file and a grid file of one's own
    that grid over the plug-in scheme (and task) train every run."""
    from resharpen.experiments.training.config import CONFIG_DIR

    scheme = deepnet_plugin(tmp_path, "deepnet_d")
    task = write(tmp_path, "my_task", NO_ONES.replace("{name}", "no_ones_d"))
    (tmp_path / "sweep.toml").write_text(textwrap.dedent(f'''
        name = "plugin_sweep"
        base = "{CONFIG_DIR / 'set_complement' / 'base.toml'}"
        [train]
        steps = 4
        [fit]
        until_id_invalid_mass = 0.0
        [search]
        "model.norm" = {{ grid = ["deepnet_d", "post"] }}
    '''))
    (tmp_path / "grid.toml").write_text(textwrap.dedent('''
        name = "plugin_grid"
        [search]
        "task.name" = { grid = ["no_ones_d"] }
        "model.norm" = { grid = ["deepnet_d"] }
        "train.seed" = { grid = [0, 1] }
        [task]
        train_len = 6
        eval_len = 8
        [model]
        d_model = 8
        n_heads = 1
        [train]
        steps = 4
        [eval]
        count = 4
    '''))
    assert main(["sweep", str(tmp_path / "sweep.toml"), "--profile", "quick", "--workers", "1",
                 "--plugin", f"{scheme}:deepnet_d", "--out", str(tmp_path / "s")]) == 0
    assert main(["langs", "run", "--grid", str(tmp_path / "grid.toml"), "--workers", "1",
                 "--plugin", f"{task}:no_ones_d", "--plugin", f"{scheme}:deepnet_d",
                 "--no-report", "--out", str(tmp_path / "g")]) == 0
    assert len(list((tmp_path / "s" / "runs").glob("*/summary.json"))) == 2
    assert sorted(p.name for p in (tmp_path / "g" / "runs").iterdir()) == [
        "no_ones_d-deepnet_d-s0", "no_ones_d-deepnet_d-s1"]
    capsys.readouterr()


def test_a_registered_scheme_and_task_are_named_everywhere(tmp_path, registries, capsys):
    """The change cost, measured: a scheme and a task registered by one module of one's own (two
    ``register`` calls, no package file edited) are accepted by the config, trained by the model,
    coloured by the figures, named by the battery's grids and by the families they declare."""
    import torch

    from resharpen.experiments.battery import run as battery
    from resharpen.experiments.languages.grid import load_grid
    from resharpen.experiments.model.transformer import Transformer
    from resharpen.experiments.set_complement import compare
    from resharpen.experiments.set_complement.config import load_config
    from resharpen.experiments.set_complement.sweep import plan
    from resharpen.paper_figs import style

    path = write(tmp_path, "my_module", NO_ONES.replace("{name}", "no_ones_e") + textwrap.dedent('''
        from resharpen.experiments.model.schemes import PERI, Scheme
        from resharpen.experiments.model.schemes import register as register_scheme

        register_scheme(Scheme("peri_e", lambda l, L: PERI, final_norm=True, label="my Peri-LN",
                               color="#123456", marker="d", lemma_readout=True))
    '''))
    assert plugins.load_plugin(f"{path}:peri_e") == "peri_e"
    # the config accepts it
    config = load_config("set_complement/base", ["model.norm=peri_e"], profile="quick")
    assert config["model"]["norm"] == "peri_e"
    # the model trains it: one optimizer step moves its parameters
    model = Transformer(transformer.ModelConfig(vocab=8, d_model=8, n_layers=1, n_heads=1,
                                                norm="peri_e"))
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randint(0, 8, (2, 5))).logsumexp(-1).mean().backward()
    optimizer.step()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    # the figures colour it, its families include it
    assert style.placement_color("peri_e") == "#123456"
    assert "peri_e" in compare.placements() and "peri_e" in schemes.names(builtin=False)
    # the battery's two grids and the language grid name it and the task
    size = battery.check_profile("quick")
    sweep_configs = plan(battery.set_complement_table("peri_e", size), None, size.profile)["configs"]
    assert "peri_e" in {c["model"]["norm"] for c in sweep_configs}
    table = battery.language_table("peri_e", size)
    table["search"]["task.name"] = {"grid": ["no_ones_e"]}
    grid = load_grid(table, size.profile)["configs"]
    assert {(c["task"]["name"], c["model"]["norm"]) for c in grid} >= {("no_ones_e", "peri_e")}
