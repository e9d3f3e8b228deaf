"""The bad-input suite (issue 16, requirement 7): every bad argument, value, config file or
input folder of every subcommand ends in one line ``error: ...`` naming the problem, exit status
2, and writes nothing.

Each case is a row of :data:`CASES`: the command's arguments, the files to create first (in a
fresh temporary folder that is also the working directory, so the CLI's output root ``out/``
lands there), and a regular expression the one stderr line must match. Every case runs the CLI
in process (``resharpen.cli.main``) and compares a snapshot of the folder (every path, and each
file's bytes, inode and modification time) before and after: nothing created, changed or
removed, not even an empty folder or a rewritten ``sweep.json``.

In a row, ``{BASE}``, ``{RS}`` and ``{GRID}`` stand for the shipped Set Complement base config,
random-search sweep file and language grid; in a file's content ``{BASE}`` too. A file's content
``None`` makes a folder, bytes are written as they are.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from resharpen.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs"
PLACES = {"{BASE}": str(CONFIGS / "set_complement" / "base_sampled.toml"),
          "{RS}": str(CONFIGS / "set_complement" / "random_search.toml"),
          "{GRID}": str(CONFIGS / "languages" / "grid.toml")}
SECONDS = 20  # a case that runs longer has started the work: a failure, not a hang

LONG = "x" * 300  # longer than any file system's 255-byte name limit
BASED = 'base = "{BASE}"\n'
SEARCH = '[search]\n"train.lr" = {loguniform = [1e-3, 1e-2]}\n'
DIR = None  # a file's content None: make a folder

# A Set Complement sweep folder and a task-grid folder, as the drivers write them (enough of
# them for the checks): sweep.json and a table.
SC_SWEEP = {"s/sweep.json": json.dumps({"identity": {"name": "x"}, "runs": 1, "file": "x.toml"}),
            "s/table.jsonl": '{"run": "x-0000"}\n'}
GRID_DIR = {"g/sweep.json": json.dumps({"identity": {"name": "g"}, "runs": 1,
                                        "kind": "task_grid"}),
            "g/table.jsonl": '{"run": "g-0000"}\n'}
# A Set Complement sweep identity the report can read, a table row, and a sweep with one run.
SC_IDENTITY = {"name": "x", "space": {}, "base": {"train": {"steps": 1, "batch_size": 1},
                                                 "task": {"vocab": 8, "train_len": 2}}}
SC_ROW = '{"run": "x-0000", "primary": "raw", "ood_invalid_mass": 0.1, "ood_kl": 0.1, ' \
         '"lg_score": 1}\n'
SC_REPORTABLE = {"s/sweep.json": json.dumps({"identity": SC_IDENTITY}), "s/table.jsonl": SC_ROW,
                 "s/runs/x-0000/config.json": '{"name": "x-0000"}',
                 "s/runs/x-0000/summary.json": '{"primary": "raw"}',
                 "s/runs/x-0000/per_length.json": "[]", "s/runs/x-0000/metrics.jsonl": ""}
# The first run folder of the quick random_search sweep (runs are named <name>-<index:04d>).
RUN0 = "s/runs/random_search-0000"
# A finished run folder that is not a collapse run (a Set Complement run's files).
SC_RUN = {"r/summary.json": '{"seconds": 1.0, "primary": "raw"}',
          "r/metrics.jsonl": '{"step": 0, "loss": 1.0}\n',
          "r/config.json": "{}", "r/per_length.json": "[]"}




class Link(str):
    """A file's content Link("target"): make a symbolic link to target (relative to the link)."""


class Special(str):
    """A file's content FIFO or SOCKET: make a named pipe or a listening Unix socket there."""


FIFO, SOCKET = Special("fifo"), Special("socket")


def safetensors_bytes(config: dict, shapes: dict, nan: str | None = None) -> bytes:
    """A safetensors file written by hand (8-byte header length, JSON header, float32 data):
    ``config`` in its metadata as a run's weights carry it, one tensor per ``shapes`` entry
    filled with 0.5 (``nan``: that tensor's first value NaN)."""
    import math
    import struct

    header = {"__metadata__": {"model_config": json.dumps(config), "weights": "raw"}}
    data = b""
    for name, shape in shapes.items():
        values = [0.5] * math.prod(shape)
        if name == nan:
            values[0] = float("nan")
        chunk = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(chunk)]}
        data += chunk
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


V8 = {"vocab": 8, "d_model": 8}  # the model config of the crafted weights: none placement
SHAPES8 = {"W_E": (8, 8), "blocks.0.attn.W_Q": (1, 8, 8), "blocks.0.attn.W_K": (1, 8, 8),
           "blocks.0.attn.W_V": (1, 8, 8), "blocks.0.attn.W_O": (1, 8, 8), "W_U": (8, 8)}


def weights_run(weights: bytes) -> dict:
    """A finished Set Complement run folder r/ whose raw weights file holds ``weights``."""
    return {**SC_RUN, "r/config.json": '{"task": {"vocab": 8, "train_len": 2}}',
            "r/summary.json": '{"seconds": 1.0, "primary": "raw"}',
            "r/weights_raw.safetensors": weights}


def case(args, pattern, files=None, id=None):
    return pytest.param(args, files or {}, pattern, id=id or " ".join(args)[:70])


LANG_GRID = ('[search]\n"task.name" = { grid = ["dyck2"] }\n"model.norm" = { grid = ["pre"] }\n'
             '"train.seed" = { grid = [0] }\n')  # a one-run language grid file


def cfg(text):  # a config file c.toml
    return {"c.toml": text}


CASES = [
    # ------------------------------------------------------------------ the command line itself
    case([], r"the following arguments are required: command", id="no command"),
    case(["frobnicate"], r"invalid choice: 'frobnicate'"),
    case(["--bogus", "derive"], r"unrecognized arguments: --bogus"),
    case(["derive", "--bogus"], r"unrecognized arguments: --bogus"),
    # ------------------------------------------------------------------ verify
    case(["verify", "--profile", "huge"], r"argument --profile: invalid choice: 'huge'"),
    case(["verify", "--only", "no.such.claim*"], r"no\.such\.claim\*.*matches no claim"),
    case(["verify", "--where", "no.such.claim"], r"matches no claim"),
    case(["verify", "--workers", "0"], r"argument --workers: expected a positive integer, got 0"),
    case(["verify", "--workers", "two"], r"argument --workers: expected an integer, got 'two'"),
    case(["verify", "--step", "nan"], r"argument --step: expected a finite number"),
    case(["verify", "--step", "-1", "--only", "sc.lemma.*"], r"--step must be > 0, got -1"),
    case(["verify", "--json", "d", "--only", "sc.lemma.*"], r"--json 'd' is a folder",
         {"d": DIR}),
    case(["verify", "--markdown", "d", "--only", "sc.lemma.*"], r"--markdown 'd' is a folder",
         {"d": DIR}),
    case(["verify", "--write-baseline", "d", "--only", "sc.lemma.*"],
         r"--write-baseline 'd' is a folder", {"d": DIR}),
    case(["verify", "--json", "blocker/l.json", "--only", "sc.lemma.*"],
         r"--json 'blocker/l.json'.* is blocked: 'blocker' is not a folder",
         {"blocker": "a file"}),
    case(["verify", "--json", LONG, "--only", "sc.lemma.*"],
         r"--json 'x+'\.\.\.: the name 'x+'\.\.\. has 300 bytes; the file system allows"),
    case(["verify", "--mutate", "--markdown", "m.md", "--only", "sc.lemma.*"],
         r"--mutate writes only --json"),
    case(["verify", "--costs", "all", "--only", "sc.lemma.*"],
         r"--costs is an option of --mutate"),
    case(["verify", "--mutate", "--operators", "flip", "--only", "sc.lemma.*"],
         r"--operators: unknown \['flip'\]"),
    case(["verify", "--baseline", "missing.json", "--only", "sc.lemma.*"], r"missing\.json"),
    # ------------------------------------------------------------------ construct
    case(["construct"], r"the following arguments are required: --vocab"),
    case(["construct", "--vocab", "1"], r"vocabulary size must be >= 2"),
    case(["construct", "--vocab", "0"], r"argument --vocab: expected a positive integer, got 0"),
    case(["construct", "--vocab", "abc"], r"argument --vocab: expected an integer, got 'abc'"),
    case(["construct", "--vocab", "2.5"], r"argument --vocab: expected an integer, got '2\.5'"),
    case(["construct", "--vocab", "8", "--norm", "sideways"], r"norm 'sideways' is not one of"),
    case(["construct", "--vocab", "8", "--norm-kind", "weird"], r"weird"),
    case(["construct", "--vocab", "8", "--variant", "magic"], r"variant 'magic' is not one of"),
    case(["construct", "--vocab", "8", "--lam", "-2"], r"must be a finite number > 0"),
    case(["construct", "--vocab", "8", "--lam", "nan"], r"argument --lam: expected a finite number"),
    case(["construct", "--vocab", "8", "--gain", "0"], r"gain must be a finite number > 0"),
    case(["construct", "--vocab", "8", "--gain", "inf"], r"argument --gain: expected a finite"),
    case(["construct", "--vocab", "8", "--beta", "0"], r"beta"),
    # a negative number is a value, not an option: the error is the gain's, not --beta's
    case(["construct", "--vocab", "8", "--beta", "-1e3", "--gain", "0"],
         r"gain must be a finite number > 0", id="construct --beta -1e3 parses"),
    case(["construct", "--vocab", "8", "--beta=-1e3", "--gain", "-1"],
         r"gain must be a finite number > 0", id="construct --beta=-1e3 parses"),
    case(["construct", "--vocab", "8", "--seed", "-1", "--out", "o"],
         r"argument --seed: a seed must be an integer in \[0, 2\*\*63 - 1\], got -1"),
    case(["construct", "--vocab", "8", "--seed", "1.5"], r"argument --seed: expected an integer"),
    case(["construct", "--vocab", "8", "--seed", str(2**64)], r"argument --seed: a seed must be"),
    case(["construct", "--vocab", "8", "--out", "blocker/c"],
         r"--out 'blocker/c' is blocked: 'blocker' is not a folder", {"blocker": "a file"}),
    case(["construct", "--vocab", "8", "--out", LONG], r"--out .*has 300 bytes"),
    case(["construct", "--vocab", "8", "--out", f"o/{LONG}/c"], r"--out .*has 300 bytes"),
    case(["construct", "--vocab", "8", "--json", "d"], r"--json 'd' is a folder", {"d": DIR}),
    case(["construct", "--vocab", "8", "--json", LONG], r"--json .*has 300 bytes"),
    case(["construct", "--vocab", "8", "--json", "blocker/r.json"], r"is blocked",
         {"blocker": "a file"}),
    # ------------------------------------------------------------------ derive
    case(["derive", "--only", "no.such.derivation*"], r"no\.such\.derivation"),
    case(["derive", "--latex", "d"], r"--latex 'd' is a folder", {"d": DIR}),
    case(["derive", "--latex", "blocker/d.tex"], r"is blocked", {"blocker": "a file"}),
    # ------------------------------------------------------------------ figs
    case(["figs", "--profile", "huge"], r"argument --profile: invalid choice: 'huge'"),
    case(["figs", "--only", "no_such_figure*"], r"no_such_figure"),
    case(["figs", "--out", "blocker/f"], r"is blocked: 'blocker' is not a folder",
         {"blocker": "a file"}),
    case(["figs", "--out", LONG], r"has 300 bytes"),
    # ------------------------------------------------------------------ train: the config file
    case(["train", "missing.toml"], r"config file '.*missing\.toml' does not exist"),
    case(["train", "cdir"], r"config file '.*cdir' is a folder", {"cdir": DIR}),
    case(["train", "c.toml"], r"config file '.*c\.toml' is not UTF-8 text",
         cfg(b"\x00\x01\xff\xfe\x80 binary"), id="train binary config"),
    case(["train", "c.toml"], r"config file '.*c\.toml' is not UTF-8 text",
         cfg("name = 'caf\xe9'\n".encode("latin-1")), id="train latin-1 config"),
    case(["train", "c.toml"], r"config file '.*c\.toml' is not valid TOML", cfg("x = [\n"),
         id="train invalid TOML"),
    case(["train", "c.toml"], r"profile in .*c\.toml.* must be a table", cfg("profile = 5\n"),
         id="train profile = 5"),
    case(["train", "c.toml"], r"search in .*c\.toml.* must be a table", cfg("search = 5\n"),
         id="train search = 5"),
    case(["train", "c.toml"], r"sweep in .*c\.toml.* must be a table", cfg("sweep = 5\n"),
         id="train sweep = 5"),
    case(["train", "c.toml"], r"base in .*c\.toml.* must be a string .*got int 123",
         cfg("base = 123\n"), id="train base = 123"),
    case(["train", "c.toml"], r"name in .*c\.toml.* must be a string, got int 5",
         cfg(BASED + "name = 5\n"), id="train name = 5"),
    case(["train", "c.toml"], r"task in .*c\.toml.* must be a table", cfg(BASED + "task = 5\n"),
         id="train task = 5"),
    case(["train", "c.toml"], r"name in .*must have 1 to 120 characters, got 300",
         cfg(BASED + f'name = "{LONG}"\n'), id="train name too long"),
    case(["train", "c.toml"], r"name in .*c\.toml.* '\.\./\.\./x' may hold only",
         cfg(BASED + 'name = "../../x"\n'), id="train name escapes"),
    case(["train", "c.toml"], r"name in .*c\.toml.* '/tmp/x' may hold only", cfg(BASED + 'name = "/tmp/x"\n'),
         id="train absolute name"),
    case(["train", "c.toml"], r"must have 1 to 120 characters, got 0",
         cfg(BASED + 'name = ""\n'), id="train empty name"),
    case(["train", "c.toml"], r"unknown top-level keys \['foo'\]", cfg(BASED + "foo = 1\n"),
         id="train unknown top-level key"),
    case(["train", "c.toml"], r"unknown key task\.bogus", cfg(BASED + "[task]\nbogus = 1\n"),
         id="train unknown key"),
    case(["train", "c.toml"], r"model\.norm = 'sideways' is not allowed",
         cfg(BASED + '[model]\nnorm = "sideways"\n'), id="train bad choice"),
    case(["train", "c.toml"], r"train\.lr = -1\.0 is out of range",
         cfg(BASED + "[train]\nlr = -1\n"), id="train out of range"),
    case(["train", "c.toml"], r"train\.steps = 'many' has the wrong type",
         cfg(BASED + '[train]\nsteps = "many"\n'), id="train wrong type"),
    case(["train", "c.toml"], r"eval\.threshold = nan is not finite",
         cfg(BASED + "[eval]\nthreshold = nan\n"), id="train nan value"),
    case(["train", "c.toml"], r"unknown profile 'huge'",
         cfg(BASED + "[profile.huge]\ntask.vocab = 8\n"), id="train unknown profile"),
    case(["train", "c.toml"], r"profile\.quick in .* must be a table",
         cfg(BASED + "[profile]\nquick = 5\n"), id="train profile.quick = 5"),
    case(["train", "c.toml"], r"base\.toml' does not exist", cfg('base = "base.toml"\n'),
         id="train missing base"),
    case(["train", "a.toml"], r"config base chain loops",
         {"a.toml": 'base = "b.toml"\n', "b.toml": 'base = "a.toml"\n'}, id="train base loop"),
    case(["train", "{BASE}", "--set", "model.norm=sideways"], r"model\.norm = 'sideways'"),
    case(["train", "{BASE}", "--set", "nonsense"], r"--set 'nonsense' is not of the form"),
    case(["train", "{BASE}", "--set", "a.b.c=1"], r"--set key 'a\.b\.c' must be section\.key"),
    case(["train", "{BASE}", "--set", "bogus.key=1"], r"unknown section 'bogus'"),
    case(["train", "{BASE}", "--set", "task.vocab=1"], r"task\.vocab = 1"),
    case(["train", "{BASE}", "--profile", "huge"], r"argument --profile: invalid choice"),
    case(["train", "{BASE}", "--out", "blocker/r"], r"'blocker/r'.*(not a folder|Not a directory)",
         {"blocker": "a file"}),
    case(["train", "{BASE}", "--out", "f"], r"'f' exists and is not a folder", {"f": "a file"}),
    case(["train", "{BASE}", "--out", LONG], r"has 300 bytes"),
    case(["train"], r"the following arguments are required: config"),
    # ------------------------------------------------------------------ sweep
    case(["sweep", "{RS}", "--runs", "0"], r"argument --runs: expected a positive integer"),
    case(["sweep", "{RS}", "--workers", "0"], r"argument --workers: expected a positive integer"),
    case(["sweep", "{RS}", "--ensemble", "0"], r"argument --ensemble: expected a positive"),
    case(["sweep", "{RS}", "--backend", "slurm"], r"argument --backend: invalid choice"),
    case(["sweep", "{RS}", "--profile", "quick", "--address", "auto"],
         r"--address 'auto' is only for the ray backend", id="sweep --address auto, local"),
    case(["sweep", "{RS}", "--profile", "quick", "--address", "auto", "--out", "s"],
         r"--address 'auto' is only for the ray backend", id="sweep --address auto --out"),
    case(["sweep", "{RS}", "--profile", "quick", "--backend", "ray", "--address", "127.0.0.2:1"],
         r"cannot reach Ray at --address '127\.0\.0\.2:1'", id="sweep unreachable ray"),
    case(["sweep", "{RS}", "--profile", "quick", "--backend", "ray", "--address", "nonsense"],
         r"--address 'nonsense' is not host:port"),
    case(["sweep", "{RS}", "--profile", "huge"], r"argument --profile: invalid choice"),
    case(["sweep", "cdir"], r"config file '.*cdir' is a folder", {"cdir": DIR}),
    case(["sweep", "missing.toml"], r"'.*missing\.toml' does not exist"),
    case(["sweep", "{BASE}", "--profile", "quick"], r"has no \[search\] table"),
    case(["sweep", "c.toml"], r"search in .* must be a table", cfg(BASED + "search = 5\n"),
         id="sweep search = 5"),
    case(["sweep", "c.toml"], r"sweep in .* must be a table", cfg(BASED + "sweep = 5\n" + SEARCH),
         id="sweep sweep = 5"),
    case(["sweep", "c.toml"], r"profile in .* must be a table",
         cfg(BASED + "profile = 5\n" + SEARCH), id="sweep profile = 5"),
    case(["sweep", "c.toml"], r"unknown key sweep\.bogus",
         cfg(BASED + "[sweep]\nbogus = 1\n" + SEARCH), id="sweep unknown sweep key"),
    case(["sweep", "c.toml"], r"sweep\.runs = 0 is out of range",
         cfg(BASED + "[sweep]\nruns = 0\n" + SEARCH), id="sweep runs = 0"),
    case(["sweep", "c.toml"], r"search key 'train\.bogus' is not a config key",
         cfg(BASED + '[search]\n"train.bogus" = {choice = [1]}\n'), id="sweep bad search key"),
    case(["sweep", "c.toml"], r"search\.train\.lr must be one of",
         cfg(BASED + '[search]\n"train.lr" = {normal = [0, 1]}\n'), id="sweep bad distribution"),
    case(["sweep", "c.toml"], r"search\.train\.lr must be one of",
         cfg(BASED + '[search]\n"train.lr" = 5\n'), id="sweep search entry = 5"),
    case(["sweep", "c.toml"], r"loguniform needs lo > 0",
         cfg(BASED + '[search]\n"train.lr" = {loguniform = [0, 1]}\n'), id="sweep loguniform 0"),
    case(["sweep", "c.toml"], r"uniform needs \[lo, hi\] with lo <= hi",
         cfg(BASED + '[search]\n"train.lr" = {uniform = [1, 0]}\n'), id="sweep uniform hi < lo"),
    case(["sweep", "c.toml"], r"grid needs a non-empty list",
         cfg(BASED + '[search]\n"train.lr" = {grid = []}\n'), id="sweep empty grid"),
    case(["sweep", "c.toml"], r"grid values repeat",
         cfg(BASED + '[search]\n"train.lr" = {grid = [0.1, 0.1]}\n'), id="sweep grid repeats"),
    case(["sweep", "c.toml"], r"model\.norm = 'sideways' is not allowed",
         cfg(BASED + '[search]\n"model.norm" = {choice = ["sideways"]}\n'),
         id="sweep bad choice value"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "blocker/s"], r"is blocked",
         {"blocker": "a file"}),
    case(["sweep", "{RS}", "--profile", "quick", "--out", LONG], r"has 300 bytes"),
    # resuming a sweep folder whose files are corrupt or another sweep's: nothing rewritten
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"sweep file 's/sweep\.json' is corrupt: line 2", {"s/sweep.json": '{\n  "identity": '},
         id="sweep corrupt sweep.json"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"], r"'s' holds a different sweep",
         {"s/sweep.json": json.dumps({"identity": {"name": "other"}, "runs": 3})},
         id="sweep another sweep's folder"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"], r"'s' holds a different sweep",
         {"s/sweep.json": "[1, 2]"}, id="sweep sweep.json a list"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"run file '.*random_search-0000/config\.json' is corrupt: line 1",
         {f"{RUN0}/summary.json": "{}", f"{RUN0}/config.json": "{oops"},
         id="sweep corrupt config.json"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"run file '.*random_search-0000/summary\.json' is corrupt: line 3",
         {f"{RUN0}/summary.json": '{\n "a": 1,\n oops', f"{RUN0}/config.json": "{}"},
         id="sweep corrupt summary.json"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"run folder '.*random_search-0000' holds another config",
         {f"{RUN0}/summary.json": "{}", f"{RUN0}/config.json": "{}"},
         id="sweep run folder of another config"),
    # ------------------------------------------------------------------ report
    case(["report"], r"name a sweep folder"),
    case(["report", "nowhere"], r"'nowhere/table\.jsonl' does not exist"),
    case(["report", "s"], r"sweep table 's/table\.jsonl' is corrupt: line 2",
         {"s/table.jsonl": '{"run": "a"}\n{"run": \n'}, id="report corrupt table.jsonl"),
    case(["report", "s"], r"sweep 's' has no finished runs yet", {"s/table.jsonl": ""},
         id="report empty table"),
    case(["report", "g"], r"'g' is a task grid folder: report it with `resharpen langs report`",
         GRID_DIR, id="report on a task grid"),
    case(["report", "s"], r"sweep file 's/sweep\.json' is corrupt",
         {"s/sweep.json": "{", "s/table.jsonl": ""}, id="report corrupt sweep.json"),
    case(["report", "s", "--fit-json", "d"], r"--fit-json 'd' is a folder",
         {**SC_SWEEP, "d": DIR}),
    # ------------------------------------------------------------------ compare
    case(["compare", "nowhere"], r"nowhere"),
    case(["compare", "r"], r"summary\.json.*(not valid JSON|corrupt)",
         {**SC_RUN, "r/summary.json": "{oops"}, id="compare corrupt summary.json"),
    case(["compare", "r", "--weights", "bogus"], r"argument --weights: invalid choice"),
    case(["compare", "r", "--count", "0"], r"argument --count: expected a positive integer"),
    case(["compare", "r", "--seed", "-5"], r"argument --seed: a seed must be"),
    case(["compare", "r", "--json", "d"], r"--json 'd' is a folder", {"d": DIR}),
    # ------------------------------------------------------------------ langs
    case(["langs"], r"the following arguments are required: action"),
    case(["langs", "train", "nosuchtask"], r"task\.name = 'nosuchtask' is not allowed"),
    case(["langs", "train", "dyck2", "--set", "model.norm=sideways"], r"model\.norm = 'sideways'"),
    case(["langs", "train", "dyck2", "--set", "nonsense"], r"--set 'nonsense' is not of the form"),
    case(["langs", "train", "dyck2", "--out", "blocker/x"], r"'blocker/x'",
         {"blocker": "a file"}),
    case(["langs", "run", "--grid", "missing.toml"], r"grid file 'missing\.toml' does not exist"),
    case(["langs", "run", "--grid", "cdir"], r"file '.*cdir' is a folder", {"cdir": DIR}),
    case(["langs", "run", "--grid", "c.toml"], r"file '.*c\.toml' is not UTF-8",
         cfg(b"\xff\xfe"), id="langs run binary grid"),
    case(["langs", "run", "--grid", "c.toml"], r"profile in .*c\.toml.* must be a table",
         cfg("profile = 5\n"), id="langs run profile = 5"),
    case(["langs", "run", "--grid", "c.toml"], r"base in .*c\.toml.* must be a string",
         cfg('base = 5\n' + LANG_GRID), id="langs run base = 5"),
    case(["langs", "run", "--grid", "c.toml"], r"search\.task\.name: grid needs a non-empty list",
         cfg(LANG_GRID.replace('["dyck2"]', '[]')), id="langs run empty tasks"),
    case(["langs", "run", "--grid", "c.toml"], r"name in .*c\.toml.* '\.\./x' may hold only",
         cfg('name = "../x"\n' + LANG_GRID), id="langs run name escapes"),
    case(["langs", "run", "--grid", "c.toml"], r"unknown top-level keys \['bogus'\]",
         cfg('bogus = 1\n' + LANG_GRID), id="langs run unknown key"),
    case(["langs", "run", "--grid", "c.toml"], r"unknown top-level keys .*'tasks'.* \[search\] grids",
         cfg('tasks = ["dyck2"]\nnorms = ["pre"]\nseeds = [0]\n'), id="langs run old format"),
    case(["langs", "run", "--grid", "c.toml"], r"search\.train\.seed: grid values repeat",
         cfg(LANG_GRID.replace("[0]", "[0, 0]")), id="langs run seeds repeat"),
    case(["langs", "run", "--only", "nosuchtask"], r"--only 'nosuchtask' is not a task of grid"),
    case(["langs", "run", "--address", "auto"], r"--address 'auto' is only for the ray backend"),
    case(["langs", "run", "--backend", "ray", "--address", "127.0.0.2:1"],
         r"cannot reach Ray at --address '127\.0\.0\.2:1'"),
    case(["langs", "run", "--workers", "0"], r"argument --workers: expected a positive integer"),
    case(["langs", "run", "--profile", "huge"], r"argument --profile: invalid choice"),
    case(["langs", "run", "--out", "blocker/g"], r"is blocked", {"blocker": "a file"}),
    case(["langs", "report", "s"], r"'s' is not a task grid folder", SC_SWEEP,
         id="langs report on a Set Complement sweep"),
    case(["langs", "report", "empty"], r"'empty' holds no finished runs", {"empty": DIR}),
    case(["langs", "report", "g"], r"run file '.*summary\.json' is corrupt: line 1",
         {**GRID_DIR, "g/runs/g-0000/summary.json": "{oops", "g/runs/g-0000/config.json": "{}"},
         id="langs report corrupt summary.json"),
    case(["langs", "report", "g"], r"grid file 'g/sweep\.json' is corrupt",
         {"g/sweep.json": "{"}, id="langs report corrupt sweep.json"),
    # ------------------------------------------------------------------ tasks
    case(["tasks"], r"the following arguments are required: action"),
    case(["tasks", "sample", "nosuchtask"], r"unknown task 'nosuchtask'"),
    case(["tasks", "sample", "dyck2", "--count", "0"], r"count"),
    case(["tasks", "sample", "dyck2", "--length", "-1"], r"length"),
    case(["tasks", "sample", "dyck2", "--seed", "-1"], r"argument --seed: a seed must be"),
    case(["tasks", "sample", "dyck2", "--param", "vocab"], r"--param expects KEY=INT"),
    case(["tasks", "sample", "set_complement", "--param", "vocab=x"],
         r"--param vocab expects an integer, got 'x'"),
    case(["tasks", "sample", "dyck2", "--param", "bogus=3"], r"has no parameter 'bogus'"),
    case(["tasks", "perft", "--depth", "-1"], r"depth"),
    case(["tasks", "games"], r"the following arguments are required: --out"),
    case(["tasks", "games", "--out", "d"], r"--out 'd' is a folder", {"d": DIR}),
    case(["tasks", "games", "--out", "blocker/g.npy"], r"is blocked", {"blocker": "a file"}),
    case(["tasks", "games", "--out", "g.npy", "--count", "0"], r"count"),
    case(["tasks", "games", "--out", "g.npy", "--seed", "-1"], r"argument --seed: a seed must"),
    # ------------------------------------------------------------------ dynamics
    case(["dynamics"], r"the following arguments are required: dynamics_command"),
    case(["dynamics", "ode", "--beta", "1e3"], r"--beta 1000 is too large for the symmetric ODE"),
    case(["dynamics", "ode", "--beta", "0"], r"beta must be a finite number > 0, got 0"),
    case(["dynamics", "ode", "--beta", "-1"], r"beta must be a finite number > 0, got -1"),
    case(["dynamics", "ode", "--beta", "inf"], r"argument --beta: expected a finite number"),
    case(["dynamics", "ode", "--n", "1"], r"\bn\b.*got 1|got 1"),
    case(["dynamics", "ode", "--t-end", "0"], r"horizon t_end must be a finite number > 0"),
    case(["dynamics", "ode", "--r0", "0"], r"r0"),
    case(["dynamics", "ode", "--json", "d"], r"--json 'd' is a folder", {"d": DIR}),
    case(["dynamics", "simulate"], r"the following arguments are required: --scheme"),
    case(["dynamics", "simulate", "--scheme", "bogus"], r"bogus"),
    case(["dynamics", "simulate", "--scheme", "preln", "--t-end", "1e300"],
         r"--t-end 1e\+300 is too long"),
    case(["dynamics", "simulate", "--scheme", "preln", "--start", "bogus"],
         r"unknown start 'bogus'"),
    case(["dynamics", "simulate", "--scheme", "preln", "--qkv", "bogus"],
         r"argument --qkv: invalid choice"),
    case(["dynamics", "simulate", "--scheme", "preln", "--seed", "-1"], r"argument --seed"),
    case(["dynamics", "simulate", "--scheme", "preln", "--d", "0"], r"argument --d: expected a"),
    case(["dynamics", "simulate", "--scheme", "preln", "--json", "d"], r"--json 'd' is a folder",
         {"d": DIR}),
    case(["dynamics", "stacks", "--n", "1"], r"got 1"),
    case(["dynamics", "stacks", "--seed", "-1"], r"argument --seed: a seed must be"),
    case(["dynamics", "stacks", "--json", "d"], r"--json 'd' is a folder", {"d": DIR}),
    # ------------------------------------------------------------------ collapse
    case(["collapse"], r"the following arguments are required: collapse_command"),
    case(["collapse", "stack", "--norm", "bogus"], r"bogus"),
    case(["collapse", "stack", "--mlp", "bogus"], r"bogus"),
    case(["collapse", "stack", "--multiplier", "0"], r"multiplier"),
    case(["collapse", "stack", "--t0", "2"], r"t0"),
    case(["collapse", "stack", "--n", "1"], r"\bn\b"),
    case(["collapse", "stack", "--seed", "-1"], r"argument --seed: a seed must be"),
    case(["collapse", "stack", "--json", "d"], r"--json 'd' is a folder", {"d": DIR}),
    case(["collapse", "train", "--profile", "huge"], r"argument --profile: invalid choice"),
    case(["collapse", "train", "--set", "bogus"], r"--set 'bogus' is not of the form"),
    case(["collapse", "train", "--set", "model.bogus=1"], r"model\.bogus"),
    case(["collapse", "train", "--seed", "-1"], r"argument --seed: a seed must be"),
    case(["collapse", "train", "--out", "blocker/c"], r"is blocked", {"blocker": "a file"}),
    case(["collapse", "train", "--out", "c"],
         r"run file 'c/post_L24_d32_lr0\.003_s0/metrics\.jsonl' is corrupt: line 2",
         {"c/post_L24_d32_lr0.003_s0/config.json": "{}",
          "c/post_L24_d32_lr0.003_s0/summary.json": "{}",
          "c/post_L24_d32_lr0.003_s0/metrics.jsonl": "{}\n{oops\n"},
         id="collapse train resume, corrupt metrics.jsonl"),
    case(["collapse", "detect", "nowhere"], r"'nowhere' has no metrics\.jsonl and summary\.json"),
    case(["collapse", "detect", "r"], r"'r' is not a collapse run", SC_RUN,
         id="collapse detect on a Set Complement run"),
    case(["collapse", "detect", "r"], r"run file 'r/metrics\.jsonl' is corrupt: line 2",
         {"r/summary.json": '{"l_freq_stream": 1.0}',
          "r/metrics.jsonl": '{"step": 0, "t_sim": 0.1, "loss": 1.0}\n{oops\n'},
         id="collapse detect corrupt metrics.jsonl"),
    case(["collapse", "detect", "r"], r"run file 'r/summary\.json' is corrupt: line 1",
         {"r/summary.json": "{oops", "r/metrics.jsonl": ""}, id="collapse detect corrupt summary"),
    case(["collapse", "detect", "r", "--patience", "0"], r"argument --patience"),
    case(["collapse", "detect", "r", "--t-threshold", "2"], r"t_threshold|t-threshold", SC_RUN),
    # ------------------------------------------------------------------ issue 24, requirement 8
    # sizes bounded before anything is allocated
    case(["sweep", "{RS}", "--runs", "10000000"], r"--runs 10000000 is more than a sweep plans: "
         r"at most 100000"),
    case(["compare", "r", "--count", "1000000000000"],
         r"compare \(v = 8, --count 1000000000000 inputs per length\) needs about .* of memory",
         weights_run(safetensors_bytes(V8, SHAPES8)), id="compare --count 10^12"),
    case(["compare", "r"], r"does not hold the model its metadata describes \(vocab 8, d_model "
         r"100000, 1 layer\(s\)\): tensor 'W_E' is \(8, 8\) in the file, \(8, 100000\)",
         weights_run(safetensors_bytes({"vocab": 8, "d_model": 100000}, SHAPES8)),
         id="compare weights metadata claims d = 10^5"),
    # a crafted or corrupt weights file
    case(["compare", "r"], r"tensor 'W_E' is \(8, 4\) in the file, \(8, 8\) in that model",
         weights_run(safetensors_bytes(V8, {**SHAPES8, "W_E": (8, 4)})),
         id="compare weights of the wrong shape"),
    case(["compare", "r"], r"tensor 'W_U' holds non-finite values \(NaN or inf\)",
         weights_run(safetensors_bytes(V8, SHAPES8, nan="W_U")), id="compare NaN weights"),
    case(["compare", "r"], r"is not a weights file of a run",
         weights_run(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      "),
         id="compare corrupt weights header"),
    # no write through a symbolic link that leaves the named folder
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"sweep folder 's/runs' leads outside 's' \(to '.*elsewhere', through a symbolic link\)",
         {"elsewhere": DIR, "s/runs": Link("../elsewhere")}, id="sweep runs/ links outside"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"run folder 's/runs/random_search-0000' leads outside 's'",
         {"elsewhere": DIR, "s/runs/random_search-0000": Link("../../elsewhere")},
         id="sweep run folder links outside"),
    case(["report", "s"], r"figures folder 's/figs' leads outside 's'",
         {**SC_SWEEP, "elsewhere": DIR, "s/figs": Link("../elsewhere")},
         id="report figs/ links outside"),
    case(["langs", "report", "g"], r"figures folder 'g/figs' leads outside 'g'",
         {**GRID_DIR, "elsewhere": DIR, "g/figs": Link("../elsewhere")},
         id="langs report figs/ links outside"),
    # overflowing parameters: refused at a stated limit
    case(["dynamics", "simulate", "--scheme", "ngpt", "--alpha0", "1e300"],
         r"--alpha0 1e\+300 with --t-end 20 is too long a run for ngpt: alpha0 x t_end must be "
         r"at most 1e\+06"),
    case(["dynamics", "simulate", "--scheme", "ngpt", "--alpha0", "0"], r"alpha0 must be a finite "
         r"number > 0"),
    case(["collapse", "stack", "--multiplier", "1e300"], r"variance multiplier 1e\+300 is too "
         r"large: at most 1e\+06"),
    case(["construct", "--vocab", "8", "--lam", "1e300"], r"--lam 1e\+300 is out of range: \|lam\| "
         r"must lie in \[1e-50, 1e\+50\]"),
    case(["construct", "--vocab", "8", "--beta", "-1e300"], r"--beta -1e\+300 is out of range"),
    case(["construct", "--vocab", "8", "--gain", "1e300"], r"--gain 1e\+300 is out of range"),
    case(["construct", "--vocab", "8", "--beta", "1e-300"], r"--beta 1e-300 is out of range"),
    case(["dynamics", "ode", "--t-end", "1e300"], r"--t-end 1e\+300 is too long: at most 1e\+100"),
    # a folder or an unreadable file as --baseline or --ledger
    case(["verify", "--baseline", "d", "--only", "sc.lemma.*"], r"--baseline 'd' is a folder",
         {"d": DIR}),
    case(["verify", "--baseline", "b.json", "--only", "sc.lemma.*"],
         r"--baseline 'b\.json' is not UTF-8", {"b.json": b"\xff\xfe\x00"},
         id="verify --baseline binary file"),
    case(["report", "--html", "r.html", "--ledger", "d"], r"--ledger 'd' is a folder", {"d": DIR}),
    case(["report", "--html", "r.html", "--ledger", "l.json"], r"--ledger 'l\.json' is not UTF-8",
         {"l.json": b"\xff\xfe\x00"}, id="report --ledger binary file"),
    # a partial baseline needs --force
    case(["verify", "--write-baseline", "b.json", "--only", "sc.lemma.*"],
         r"--write-baseline with --only would replace the baseline .* add --force"),
    # an output path that is not a regular file: refused before any work, never replaced or
    # followed (a FIFO, a socket, a symbolic link, a link that loops)
    case(["verify", "--json", "f", "--only", "sc.lemma.*"],
         r"--json 'f' is a FIFO \(named pipe\), not a regular file; the package replaces only",
         {"f": FIFO}, id="verify --json FIFO"),
    case(["verify", "--json", "s", "--only", "sc.lemma.*"], r"--json 's' is a socket",
         {"s": SOCKET}, id="verify --json socket"),
    case(["verify", "--markdown", "loop", "--only", "sc.lemma.*"],
         r"--markdown 'loop' is a symbolic link that loops", {"loop": Link("loop")},
         id="verify --markdown symlink to itself"),
    case(["verify", "--json", "l.json", "--only", "sc.lemma.*"],
         r"--json 'l\.json' is a symbolic link, not a regular file",
         {"t.json": "theirs", "l.json": Link("t.json")}, id="verify --json symlink to a file"),
    case(["verify", "--write-baseline", "f", "--only", "sc.lemma.*", "--force"],
         r"--write-baseline 'f' is a FIFO", {"f": FIFO}, id="verify --write-baseline FIFO"),
    case(["construct", "--vocab", "8", "--json", "f"], r"--json 'f' is a FIFO", {"f": FIFO},
         id="construct --json FIFO"),
    case(["construct", "--vocab", "8", "--json", "loop"], r"--json 'loop' is a symbolic link "
         "that loops", {"loop": Link("loop")}, id="construct --json symlink loop"),
    case(["derive", "--latex", "f"], r"--latex 'f' is a FIFO", {"f": FIFO},
         id="derive --latex FIFO"),
    case(["report", "s", "--fit-json", "f"], r"--fit-json 'f' is a FIFO", {**SC_SWEEP, "f": FIFO},
         id="report --fit-json FIFO"),
    case(["report", "--html", "f"], r"--html 'f' is a FIFO", {"f": FIFO, "out/ledger.json":
         '{"claims": []}'}, id="report --html FIFO"),
    case(["report", "--html", "loop"], r"--html 'loop' is a symbolic link that loops",
         {"loop": Link("loop"), "out/ledger.json": '{"claims": []}'},
         id="report --html symlink loop"),
    case(["compare", "r", "--json", "f"], r"--json 'f' is a FIFO", {**SC_RUN, "f": FIFO},
         id="compare --json FIFO"),
    case(["tasks", "games", "--out", "f"], r"--out 'f' is a FIFO", {"f": FIFO},
         id="tasks games --out FIFO"),
    case(["dynamics", "ode", "--json", "f"], r"--json 'f' is a FIFO", {"f": FIFO},
         id="dynamics ode --json FIFO"),
    case(["dynamics", "simulate", "--scheme", "preln", "--json", "s"], r"--json 's' is a socket",
         {"s": SOCKET}, id="dynamics simulate --json socket"),
    case(["dynamics", "stacks", "--json", "f"], r"--json 'f' is a FIFO", {"f": FIFO},
         id="dynamics stacks --json FIFO"),
    case(["collapse", "stack", "--json", "f"], r"--json 'f' is a FIFO", {"f": FIFO},
         id="collapse stack --json FIFO"),
    case(["figs", "--out", "o", "--only", "sc_margins"],
         r"figures folder: the file 'o/sc_margins\.png' is a FIFO", {"o/sc_margins.png": FIFO},
         id="figs output file is a FIFO"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"lock file 's/\.lock' cannot be used: a symbolic link",
         {"s/.lock": Link("victim"), "s/victim": "keep me"}, id="sweep lock file is a link"),
    # a file a command writes inside the folder it is given: checked before the work (the rows
    # of BEFORE_THE_WORK below also prove that the work never started)
    case(["construct", "--vocab", "8", "--out", "c"],
         r"--out: the file 'c/report\.json' is a socket", {"c/report.json": SOCKET},
         id="construct --out report.json a socket"),
    case(["construct", "--vocab", "8", "--out", "c"],
         r"--out: the file 'c/weights\.safetensors' is a folder", {"c/weights.safetensors": DIR},
         id="construct --out weights file a folder"),
    case(["construct", "--vocab", "8", "--out", "c"], r"--out 'c' exists and is not a folder",
         {"c": FIFO}, id="construct --out folder a FIFO"),
    case(["train", "{BASE}", "--out", "r"],
         r"--out: the file 'r/config\.json' is a symbolic link that loops",
         {"r/config.json": Link("config.json")}, id="train --out config.json a link loop"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"],
         r"sweep folder: the file 's/table\.csv' is a FIFO", {"s/table.csv": FIFO},
         id="sweep table.csv a FIFO"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "s"], r"runs folder 's/runs' exists "
         r"and is not a folder", {"s/runs": FIFO}, id="sweep runs folder a FIFO"),
    case(["langs", "run", "--grid", "g.toml", "--out", "g"],
         r"--out: the file 'g/report\.md' is a FIFO", {"g.toml": LANG_GRID, "g/report.md": FIFO},
         id="langs run report.md a FIFO"),
    case(["langs", "report", "g"], r"grid folder: the file 'g/report\.json' is a FIFO",
         {**GRID_DIR, "g/report.json": FIFO}, id="langs report report.json a FIFO"),
    case(["report", "s"], r"sweep folder: the file 's/report\.md' is a FIFO",
         {**SC_REPORTABLE, "s/report.md": FIFO}, id="report report.md a FIFO"),
    case(["archive", "restore", "langs-noise", "--out", "o"],
         r"sweep folder: the file 'o/sweep\.json' is a FIFO", {"o/sweep.json": FIFO},
         id="archive restore sweep.json a FIFO"),
    case(["battery", "--scheme", "pre", "--out", "b"],
         r"--out: the file 'b/battery\.md' is a FIFO", {"b/battery.md": FIFO},
         id="battery battery.md a FIFO"),
    case(["battery", "--scheme", "pre", "--out", "b"], r"--out 'b/dynamics' exists and is not "
         r"a folder", {"b/dynamics": "a file"}, id="battery dynamics folder a file"),
    # files read with a size cap, never a device or FIFO to the end; a config nested too deep
    case(["verify", "--baseline", "/dev/zero", "--only", "sc.lemma.*"],
         r"--baseline '/dev/zero' is a character device, not a JSON file: the package reads only "
         r"regular files", id="verify --baseline /dev/zero"),
    case(["verify", "--baseline", "f", "--only", "sc.lemma.*"], r"--baseline 'f' is a FIFO",
         {"f": FIFO}, id="verify --baseline FIFO"),
    case(["report", "--html", "r.html", "--ledger", "/dev/zero"],
         r"--ledger '/dev/zero' is a character device", id="report --ledger /dev/zero"),
    case(["train", "c.toml"], r"config file '.*c\.toml' nests its arrays or tables too deep",
         cfg("x = " + "[" * 100_000 + "1" + "]" * 100_000 + "\n"),
         id="train config array nested 100000 deep"),
    # result files of the wrong shape: one line naming the file and the field
    case(["report", "s"], r"sweep file 's/sweep\.json': identity is 'x', not an object",
         {**SC_SWEEP, "s/sweep.json": '{"identity": "x"}'}, id="report sweep.json identity a string"),
    case(["report", "s"], r"sweep file 's/sweep\.json': identity\.base\.task\.vocab is missing",
         {**SC_SWEEP, "s/sweep.json": json.dumps({"identity": {**SC_IDENTITY, "base": {
             "train": {"steps": 1, "batch_size": 1}, "task": {"train_len": 2}}}})},
         id="report sweep.json without the vocabulary"),
    case(["report", "s"], r"sweep table 's/table\.jsonl', row 1: primary is missing",
         {**SC_SWEEP, "s/sweep.json": json.dumps({"identity": SC_IDENTITY})},
         id="report table row without primary"),
    case(["report", "s"], r"sweep table 's/table\.jsonl', row 2: ood_kl is 'high', not a number "
         r"or null", {**SC_SWEEP, "s/sweep.json": json.dumps({"identity": SC_IDENTITY}),
                      "s/table.jsonl": SC_ROW + SC_ROW.replace('"ood_kl": 0.1', '"ood_kl": "high"')},
         id="report table metric a string"),
    case(["report", "s"], r"sweep table 's/table\.jsonl' is corrupt: line 1|line 1: run is 5",
         {**SC_SWEEP, "s/table.jsonl": '{"run": 5}\n'}, id="report table run a number"),
    case(["report", "s"], r"run file 's/runs/x-0000/per_length\.json': the document is 'oops', "
         r"not an object or an array", {**SC_REPORTABLE, "s/runs/x-0000/per_length.json": '"oops"'},
         id="report per_length.json a string"),
    case(["report", "s"], r"run history 's/runs/x-0000/metrics\.jsonl', line 2: step is 'x', not "
         r"a number", {**SC_REPORTABLE, "s/runs/x-0000/metrics.jsonl": '{"step": 0}\n{"step": "x"}\n'},
         id="report metrics.jsonl step a string"),
    case(["compare", "r"], r"run file 'r/config\.json': task is 'x', not an object",
         weights_run(safetensors_bytes(V8, SHAPES8)) | {"r/config.json": '{"task": "x"}'},
         id="compare config task a string"),
    case(["compare", "r"], r"run file 'r/config\.json': task is null, not an object",
         weights_run(safetensors_bytes(V8, SHAPES8)) | {"r/config.json": '{"task": null}'},
         id="compare config task null"),
    case(["compare", "r"], r"task\.vocab is -1, but the run's raw weights are of vocabulary 8",
         weights_run(safetensors_bytes(V8, SHAPES8)) | {
             "r/config.json": '{"task": {"vocab": -1, "train_len": 2}}'}, id="compare config vocab -1"),
    case(["compare", "r"], r"task\.vocab is 100000000\.0, not an integer",
         weights_run(safetensors_bytes(V8, SHAPES8)) | {
             "r/config.json": '{"task": {"vocab": 1e8, "train_len": 2}}'}, id="compare config vocab 1e8"),
    case(["compare", "r"], r"run file 'r/config\.json': the document is an array, not an object",
         weights_run(safetensors_bytes(V8, SHAPES8)) | {"r/config.json": "[]"},
         id="compare config.json []"),
    case(["collapse", "detect", "r"], r"metrics\.jsonl', row 2: t_sim is nan, not a finite number",
         {"r/summary.json": '{"l_freq_stream": 1.0}', "r/metrics.jsonl":
          '{"step": 0, "t_sim": 0.1, "loss": 1.0}\n{"step": 1, "t_sim": NaN, "loss": 1.0}\n'},
         id="collapse detect NaN row"),
    case(["collapse", "detect", "r"], r"metrics\.jsonl', row 1: step is 'x', not a finite number",
         {"r/summary.json": '{"l_freq_stream": 1.0}',
          "r/metrics.jsonl": '{"step": "x", "t_sim": 0.1, "loss": 1.0}\n'},
         id="collapse detect non-numeric step"),
    # an empty config
    case(["train", "c.toml"], r"config file '.*c\.toml' is empty: name a base config",
         cfg(""), id="train empty config"),
    case(["train", "c.toml"], r"config file '.*c\.toml' is empty", cfg("# nothing here\n\n"),
         id="train config of comments only"),
    case(["sweep", "c.toml"], r"config file '.*c\.toml' is empty", cfg(""),
         id="sweep empty config"),
    # a folder that holds another command's results is not written into
    case(["train", "{BASE}", "--profile", "quick", "--out", "s"],
         r"--out 's' holds a sweep or grid \(sweep\.json\), not a training run", SC_SWEEP,
         id="train into a sweep folder"),
    case(["train", "{BASE}", "--profile", "quick", "--out", "r"],
         r"--out 'r' holds a finished run of another config \(its .* differs?\)", SC_RUN,
         id="train over a finished run of another config"),
    case(["construct", "--vocab", "8", "--out", "r"],
         r"--out 'r' holds a training run \(summary\.json\), not a construction", SC_RUN,
         id="construct into a run folder"),
    case(["sweep", "{RS}", "--profile", "quick", "--out", "r"],
         r"--out 'r' holds a training run \(summary\.json\), not a sweep or grid", SC_RUN,
         id="sweep into a run folder"),
    case(["langs", "run", "--profile", "quick", "--only", "dyck1", "--out", "r"],
         r"--out 'r' holds a training run \(summary\.json\), not a sweep or grid", SC_RUN,
         id="grid into a run folder"),
    case(["archive", "restore", "fit_dropout_v32", "--out", "r"],
         r"sweep folder 'r' holds a training run \(summary\.json\)", SC_RUN,
         id="restore into a run folder"),
    case(["archive", "restore", "fit_dropout_v32", "--out", "s"],
         r"sweep folder 's' holds another sweep than 'fit_dropout_v32'", SC_SWEEP,
         id="restore into another sweep"),
    case(["archive", "restore", "fit_dropout_v32", "--out", "f/x"], r"'f/x'|f/x",
         {"f": "a file"}, id="restore below a file"),
    case(["battery", "--scheme", "post", "--out", "r", "--profile", "tiny"],
         r"--out 'r' holds a training run \(summary\.json\), not a battery", SC_RUN,
         id="battery into a run folder"),
    case(["battery", "--scheme", "post", "--out", "b", "--workers", "100000"],
         r"argument --workers", id="battery too many workers"),
    case(["archive", "pack-collapse", "e"], r"holds none of the .* full-size runs", {"e": DIR},
         id="pack-collapse of a folder without runs"),
    # an option that does nothing where it is given
    case(["dynamics", "simulate", "--scheme", "postln", "--tau", "3"],
         r"--tau has no effect on --scheme postln", id="simulate --tau off mixln"),
    case(["dynamics", "simulate", "--scheme", "mixln", "--alpha0", "2"],
         r"--alpha0 has no effect on --scheme mixln", id="simulate --alpha0 off ngpt"),
    case(["construct", "--vocab", "8", "--gain", "5"], r"--gain has no effect with --norm none",
         id="construct --gain without a norm"),
    case(["construct", "--vocab", "8", "--norm-kind", "layer"],
         r"--norm-kind has no effect with --norm none", id="construct --norm-kind without a norm"),
    case(["figs", "--list", "--out", "o"], r"--out has no effect with --list",
         id="figs --list --out"),
    case(["dynamics", "simulate", "--scheme", "postln", "--beta", "1e308", "--qkv", "random"],
         r"--beta 1e\+308 is too large: at most 1e\+06", id="simulate --beta huge"),
    case(["dynamics", "simulate", "--scheme", "postln", "--beta", "0"],
         r"beta must be a finite number > 0", id="simulate --beta 0"),
    case(["dynamics", "ode", "--r0", "1e-10"], r"--r0 1e-10 is too small: at least 1e-06",
         id="ode --r0 too small"),
]


def snapshot(root: Path) -> dict:
    """Every path under ``root``: a folder, a symbolic link's target, or a file's bytes, inode and
    modification time (a rewrite, even with the same bytes, changes the inode: files are
    replaced atomically); a FIFO or socket by its kind and inode (never opened)."""
    import stat as st

    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if st.S_ISLNK(info.st_mode):
            entry = ("link", os.readlink(path), info.st_ino)
        elif path.is_dir():
            entry = "dir"
        elif st.S_ISREG(info.st_mode):
            entry = (path.read_bytes(), info.st_ino, info.st_mtime_ns)
        else:
            entry = (st.S_IFMT(info.st_mode), info.st_ino, info.st_mtime_ns)
        out[str(path.relative_to(root))] = entry
    return out


def _fill(text: str) -> str:
    for key, value in PLACES.items():
        text = text.replace(key, value)
    return text


def _timeout(signum, frame):
    raise TimeoutError(f"the case ran over {SECONDS} s: it started the work")


@pytest.mark.parametrize("args, files, pattern", CASES)
def test_bad_input(args, files, pattern, tmp_path, monkeypatch, capsys, request):
    refused(args, files, pattern, tmp_path, monkeypatch, capsys, request)


def refused(args, files, pattern, tmp_path, monkeypatch, capsys, request) -> None:
    """Make ``files`` in ``tmp_path``, run the command there; assert exit 2, one line matching
    ``pattern``, and nothing created, changed or removed."""
    monkeypatch.chdir(tmp_path)  # the output root out/ is relative: it lands here
    servers = []
    request.addfinalizer(lambda: [server.close() for server in servers])
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        elif isinstance(content, Link):
            path.symlink_to(content)
        elif content == FIFO:
            os.mkfifo(path)
        elif content == SOCKET:
            server = socket.socket(socket.AF_UNIX)
            server.bind(name)  # relative: a socket's path is limited to about 100 bytes
            servers.append(server)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(_fill(content))
    before = snapshot(tmp_path)
    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(SECONDS)
    try:
        code = main([_fill(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, f"exit {code}; stderr:\n{err}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"not one line:\n{err}"
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    assert snapshot(tmp_path) == before, "the command wrote, changed or removed a file"


def before_the_work(work, args, pattern, files, id):
    return pytest.param(work, args, files, pattern, id=id)


COLLAPSE_RUN0 = "c/post_L24_d32_lr0.003_s0"  # the first run of the quick collapse sweep
BEFORE_THE_WORK = [
    before_the_work("resharpen.constructions.set_complement.build",
                    ["construct", "--vocab", "8", "--out", "c"],
                    r"--out: the file 'c/config\.json' is a FIFO", {"c/config.json": FIFO},
                    id="construct --out config.json a FIFO"),
    before_the_work("resharpen.constructions.set_complement.build",
                    ["construct", "--vocab", "8", "--out", "c"],
                    r"--out: the file 'c/report\.json' is a FIFO", {"c/report.json": FIFO},
                    id="construct --out report.json a FIFO"),
    before_the_work("resharpen.experiments.set_complement.train.train",
                    ["train", "{BASE}", "--profile", "quick", "--out", "r"],
                    r"--out: the file 'r/summary\.json' is a FIFO", {"r/summary.json": FIFO},
                    id="train --out summary.json a FIFO"),
    before_the_work("resharpen.experiments.set_complement.train.train",
                    ["train", "{BASE}", "--profile", "quick"],
                    r"run folder: the file 'out/runs/.*/metrics\.jsonl' is a FIFO",
                    {"out/runs/base_sampled/metrics.jsonl": FIFO},
                    id="train default run folder metrics.jsonl a FIFO"),
    before_the_work("resharpen.experiments.training.next_token.train",
                    ["langs", "train", "dyck2", "--out", "r"],
                    r"--out: the file 'r/weights_raw\.safetensors' is a FIFO",
                    {"r/weights_raw.safetensors": FIFO}, id="langs train --out weights a FIFO"),
    before_the_work("resharpen.experiments.collapse.train.sweep",
                    ["collapse", "train", "--out", "c"],
                    r"run folder: the file 'c/post_L24_d32_lr0\.003_s0/config\.json' is a FIFO",
                    {f"{COLLAPSE_RUN0}/config.json": FIFO},
                    id="collapse train run config.json a FIFO"),
    before_the_work("resharpen.experiments.training.sweep._run",
                    ["sweep", "{RS}", "--profile", "quick", "--out", "s"],
                    r"run folder: the file 's/runs/random_search-0000/per_length\.json' is a "
                    r"FIFO", {f"{RUN0}/per_length.json": FIFO},
                    id="sweep run per_length.json a FIFO"),
    before_the_work("resharpen.experiments.training.sweep._run",
                    ["langs", "run", "--grid", "g.toml", "--out", "g"],
                    r"run folder: the file 'g/runs/.*/config\.json' is a FIFO",
                    {"g.toml": LANG_GRID, "g/runs/dyck2-pre-s0/config.json": FIFO},
                    id="langs run run config.json a FIFO"),
]


@pytest.mark.parametrize("work, args, files, pattern", BEFORE_THE_WORK)
def test_refused_before_the_work(work, args, files, pattern, tmp_path, monkeypatch, capsys,
                                 request):
    """A FIFO where a command would write, inside the folder it is given: refused with one line
    and exit 2 before the work, whose function (``work``) is never called, so the refusal
    costs no training or evaluation, however long that would take."""
    started = []

    def the_work(*args, **kwargs):
        started.append(work)
        raise AssertionError(f"{work} was called: the work started before the check")

    monkeypatch.setattr(work, the_work)
    refused(args, files, pattern, tmp_path, monkeypatch, capsys, request)
    assert started == []


def test_the_table_is_broad():
    """Every subcommand is in the table, and it has well over a hundred cases."""
    commands = {c.values[0][0] for c in CASES if c.values[0]}
    assert commands >= {"verify", "construct", "derive", "figs", "train", "sweep", "report",
                        "compare", "langs", "tasks", "dynamics", "collapse"}
    assert len(CASES) >= 100


# ---------------------------------------------------------------------- the checks themselves
def test_writability_is_tried_not_asked(tmp_path, monkeypatch):
    """A folder is writable when a file can be created in it: ``os.access`` is not consulted
    (it is true for root everywhere), and a refused creation is one ValueError naming the path."""
    import os

    from resharpen.experiments.common import io

    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # not asked
    io.check_writable_target(tmp_path / "new" / "folder")
    io.check_output_file(tmp_path / "r.json", "--json")
    assert list(tmp_path.iterdir()) == []  # the probe file is gone

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    real_open = os.open
    unnamed = getattr(os, "O_TMPFILE", 0)

    def refuse_unnamed(path, flags, *args, **kwargs):
        if unnamed and flags & unnamed == unnamed:
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_unnamed)
    monkeypatch.setattr(io.tempfile, "mkstemp", refuse)
    with pytest.raises(ValueError, match=r"--out '.*new' is not writable .*Permission denied"):
        io.check_writable_target(tmp_path / "new", "--out")
    with pytest.raises(ValueError, match=r"output folder '.*o' is not writable"):
        io.ensure_writable_dir(tmp_path / "o")


def test_writability_probe_is_an_unnamed_file(tmp_path, monkeypatch):
    """The probe is an unnamed file (O_TMPFILE) where the file system has them, so a kill
    mid-check leaves no file; where it has none (EOPNOTSUPP), a named temporary file is created
    and removed, and nothing stays either."""
    import errno
    import os

    from resharpen.experiments.common import io

    named = []
    real_mkstemp = io.tempfile.mkstemp

    def counting_mkstemp(*args, **kwargs):
        named.append(kwargs.get("prefix"))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(io.tempfile, "mkstemp", counting_mkstemp)
    io.try_writing(tmp_path, "--out")
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this platform")
    assert named == [] and list(tmp_path.iterdir()) == []

    real_open = os.open

    def unsupported(path, flags, *args, **kwargs):
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", unsupported)
    io.try_writing(tmp_path, "--out")
    assert len(named) == 1 and list(tmp_path.iterdir()) == []


def test_json_readers_name_the_file_and_line(tmp_path):
    from resharpen.experiments.common.stored import read_json, read_jsonl

    (tmp_path / "t.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n')
    with pytest.raises(ValueError, match=r"table '.*t\.jsonl' is corrupt: line 4"):
        read_jsonl(tmp_path / "t.jsonl", "table")
    (tmp_path / "s.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match=r"'.*s\.json' is not UTF-8"):
        read_json(tmp_path / "s.json")
    with pytest.raises(FileNotFoundError, match=r"'.*none\.json' does not exist"):
        read_json(tmp_path / "none.json")
    (tmp_path / "t.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert read_jsonl(tmp_path / "t.jsonl", "table") == [{"a": 1}, {"a": 2}]


def test_backend_checks_come_before_any_folder(tmp_path):
    """A sweep refused for its backend or address leaves no folder and no sweep.json, from
    Python as from the command line; an unreachable Ray address fails at once."""
    import time

    from resharpen.experiments.training.backends import PROBE_SECONDS, check_backend
    from resharpen.experiments.set_complement.sweep import run_sweep

    with pytest.raises(ValueError, match="only for the ray backend"):
        run_sweep(PLACES["{RS}"], out=tmp_path / "s", profile="quick", address="auto")
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"cannot reach Ray at --address '127\.0\.0\.2:1'"):
        run_sweep(PLACES["{RS}"], out=tmp_path / "s", profile="quick", backend="ray",
                  address="127.0.0.2:1")
    assert time.perf_counter() - start < PROBE_SECONDS + 5
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="backend 'slurm' is not one of local, ray"):
        check_backend("slurm")
    check_backend("local")


# ====================================================================== the command line's own
# Empty paths and patterns, options without effect, counts above their caps, config tables that
# would be ignored, and typos answered with the closest name. Kept in one block, after the checks
# above, run by the same test (test_bad_input).
EMPTY = [  # an empty path or pattern is an error, never "absent" or the working folder
    ["verify", "--json", ""], ["verify", "--markdown", ""], ["verify", "--write-baseline", ""],
    ["verify", "--baseline", ""], ["verify", "--where", ""], ["verify", "--only", ""],
    ["verify", "--mutate", "--operators", ""], ["langs", "run", "--backend", "ray", "--address", ""],
    ["construct", "--vocab", "8", "--out", ""], ["construct", "--vocab", "8", "--json", ""],
    ["battery", "--scheme", "post", "--out", ""],
    ["derive", "--latex", ""], ["derive", "--only", ""], ["figs", "--out", ""],
    ["figs", "--only", ""], ["report", "s", "--fit-json", ""], ["report", "--html", ""],
    ["report", "--html", "r.html", "--ledger", ""], ["report", "--html", "r.html", "--figs", ""],
    ["report", ""], ["compare", ""], ["compare", "r", "--json", ""], ["train", ""],
    ["train", "{BASE}", "--out", ""], ["sweep", ""], ["sweep", "{RS}", "--out", ""],
    ["sweep", "{RS}", "--backend", "ray", "--address", ""], ["langs", "train", ""],
    ["langs", "train", "dyck2", "--out", ""], ["langs", "run", "--grid", ""],
    ["langs", "run", "--only", ""], ["langs", "run", "--out", ""], ["langs", "report", ""],
    ["langs", "compare", "", "b"], ["langs", "compare", "a", "b", "--metric", ""],
    ["tasks", "sample", ""], ["tasks", "games", "--out", ""], ["dynamics", "ode", "--json", ""],
    ["dynamics", "simulate", "--scheme", "preln", "--json", ""],
    ["dynamics", "stacks", "--json", ""], ["dynamics", "trained", "--scheme", ""],
    ["dynamics", "trained", "--premise-set", ""],
    ["collapse", "stack", "--json", ""], ["collapse", "train", "--out", ""],
    ["collapse", "detect", ""], ["archive", "pack", ""], ["archive", "restore", "x", "--out", ""],
]
CLI_CASES = [case(args, rf"argument {re.escape(args[-2]) if args[-2].startswith('-') else '.*'}"
                  r": expected a (path|name or glob pattern|Ray address|scheme name|premise set's name), got an "
                  r"empty string", id=" ".join(args) + " ''") for args in EMPTY] + [
    # ------------------------------------------------------------------ options without effect
    case(["verify", "--force"], r"--force has no effect here: it only allows --write-baseline "
         r"with --only"),
    case(["verify", "--force", "--only", "sc.lemma.*"], r"--force has no effect here"),
    case(["verify", "--force", "--write-baseline", "b.json"], r"--force has no effect here"),
    case(["verify", "--step", "0.1", "--only", "sc.lemma.*"], r"--step is an option of --mutate"),
    case(["verify", "--operators", "up", "--only", "sc.lemma.*"],
         r"--operators is an option of --mutate"),
    case(["verify", "--mutate", "--operators", "up,down,up", "--only", "sc.lemma.*"],
         r"--operators names up more than once"),
    case(["verify", "--mutate", "--workers", "2", "--only", "sc.lemma.*"],
         r"--workers has no effect with --mutate"),
    case(["verify", "--list", "--json", "l.json"], r"--json has no effect with --list"),
    case(["verify", "--list", "--workers", "2"], r"--workers has no effect with --list"),
    case(["verify", "--where", "sc.lemma.*", "--mutate"], r"--mutate has no effect with --where"),
    case(["verify", "--where", "sc.lemma.*", "--baseline"],
         r"--baseline has no effect with --where"),
    case(["verify", "--list", "--where", "sc.lemma.*"], r"--list and --where .* give one"),
    case(["report", "s", "--ledger", "l.json"], r"--ledger is an option of --html", SC_SWEEP),
    case(["report", "s", "--figs", "f"], r"--figs is an option of --html", SC_SWEEP),
    case(["report", "--html", "r.html", "--ledger", "l.json", "--figs", "f"],
         r"--figs 'f' is not a folder", {"l.json": "{}", "f": "a file"},
         id="report --figs FILE"),
    case(["langs", "train", "dyck2", "--set", "task.name=bogus_task"],
         r"--set task\.name=bogus_task has no effect: the task is the positional argument"),
    case(["langs", "train", "dyck2", "--set", "task.name=dyck2"],
         r"--set task\.name=dyck2 has no effect"),
    case(["archive", "status", "s"], r"archive status takes no SWEEP: it has no effect there"),
    case(["archive", "repack", "s"], r"archive repack takes no SWEEP: it has no effect there"),
    case(["archive", "pack", "s", "--out", "o"], r"archive pack takes no --out"),
    case(["dynamics", "trained", "--task"], r"argument --task: expected at least one argument"),
    case(["dynamics", "trained", "--depth"], r"argument --depth: expected at least one argument"),
    # ------------------------------------------------------------------ counts above their caps
    case(["verify", "--workers", "99999999999999999999999"],
         r"argument --workers: at most 256, got 99999999999999999999999"),
    case(["verify", "--workers", "9" * 5000], r"argument --workers: expected an integer",
         id="verify --workers of 5000 digits"),
    case(["sweep", "{RS}", "--workers", "257"], r"argument --workers: at most 256, got 257"),
    case(["sweep", "{RS}", "--ensemble", "100000"], r"argument --ensemble: at most 1,024"),
    case(["langs", "run", "--workers", "1000"], r"argument --workers: at most 256"),
    case(["langs", "run", "--ensemble", "100000"], r"argument --ensemble: at most 1,024"),
    case(["dynamics", "stacks", "--layers", "1000000000"],
         r"argument --layers: at most 10,000, got 1000000000"),
    case(["dynamics", "stacks", "--n", "1" + "0" * 30], r"argument --n: at most 1,000,000, got "
         r"an integer of 31 digits"),
    case(["dynamics", "stacks", "--d", "10000000"], r"argument --d: at most 1,000,000"),
    case(["dynamics", "ode", "--n", "1" + "0" * 400], r"argument --n: at most 1,000,000",
         id="dynamics ode --n 10^400"),
    case(["dynamics", "simulate", "--scheme", "preln", "--samples", "1000000000"],
         r"argument --samples: at most 100,000"),
    case(["dynamics", "simulate", "--scheme", "preln", "--n", "1000000000"],
         r"argument --n: at most 1,000,000"),
    case(["dynamics", "trained", "--depth", "1000000000"], r"argument --depth: at most 10,000"),
    case(["dynamics", "trained", "--depth", "7"],
         r"--depth 7 is not a depth of the quick profile's set; allowed: 4"),
    case(["dynamics", "trained", "--profile", "full", "--depth", "4"],
         r"--depth 4 is not a depth of the full profile's set; allowed: 8, 24"),
    case(["dynamics", "trained", "--premise-set", "unit_token"],
         r"unknown premise set 'unit_token'; allowed: unit_tokens, small_embedding"),
    case(["dynamics", "trained", "--premise-set", "paper_init", "--scheme", "pre"],
         r"scheme 'pre' is not in premise set paper_init; allowed: post, mixln"),
    case(["dynamics", "trained", "--premise-set", "paper_init", "--depth", "24"],
         r"--depth 24 is not a depth of premise set paper_init; allowed: 48"),
    case(["collapse", "stack", "--samples", "1000000000"],
         r"argument --samples: at most 1,000, got 1000000000"),
    case(["collapse", "stack", "--depth", "1000000000"], r"argument --depth: at most 10,000"),
    case(["collapse", "stack", "--n", "1000000000"], r"argument --n: at most 100,000"),
    case(["collapse", "detect", "r", "--patience", "1000000000"],
         r"argument --patience: at most 1,000,000"),
    case(["construct", "--vocab", "10000000"], r"argument --vocab: at most 1,000,000"),
    case(["tasks", "perft", "--depth", "10"], r"argument --depth: at most 9, got 10"),
    case(["tasks", "perft", "--depth", "-1"], r"argument --depth: expected an integer >= 0"),
    case(["tasks", "sample", "dyck2", "--count", "1000000000"],
         r"argument --count: at most 1,000,000"),
    case(["tasks", "sample", "dyck2", "--length", "0"],
         r"argument --length: expected a positive integer, got 0"),
    case(["tasks", "games", "--out", "g.npy", "--count", "1000000000"],
         r"argument --count: at most 100,000,000"),
    case(["tasks", "games", "--out", "g.npy", "--length", "61"], r"argument --length: at most 60"),
    # ------------------------------------------------------------------ tables that would be ignored
    case(["train", "c.toml"], r"unknown key profile\.quick\.task\.bogus in .*c\.toml.*; allowed "
         r"in \[task\]", cfg(BASED + "[profile.quick]\ntask.bogus = 1\n"),
         id="train unknown key of an unused profile"),
    case(["train", "c.toml", "--profile", "quick"], r"unknown key profile\.quick\.task\.bogus",
         cfg(BASED + "[profile.quick]\ntask.bogus = 1\n"), id="train unknown key of the profile"),
    case(["train", "c.toml"], r"unknown section profile\.full\.bogus in .*c\.toml",
         cfg(BASED + "[profile.full]\nbogus.x = 1\n"), id="train unknown profile section"),
    case(["train", "c.toml"], r"profile\.quick\.model\.norm = 'sideways' is not allowed",
         cfg(BASED + '[profile.quick]\nmodel.norm = "sideways"\n'),
         id="train bad value in an unused profile"),
    case(["train", "c.toml"], r"holds \[search\], the tables of a sweep file, which a single run "
         r"ignores; run it with `resharpen sweep`", cfg(BASED + SEARCH), id="train with [search]"),
    case(["train", "c.toml"], r"holds \[sweep\], the tables of a sweep file",
         cfg(BASED + "[sweep]\nruns = 2\n"), id="train with [sweep]"),
    case(["train", "c.toml"], r"holds \[\[when\]\], the tables of a sweep file",
         cfg(BASED + '[[when]]\n"model.norm" = "post"\ntrain = { lr = 0.01 }\n'),
         id="train with [[when]]"),
    case(["train", "c.toml"], r"holds \[profile\.quick\.sweep\], the tables of a sweep file",
         cfg(BASED + "[profile.quick.sweep]\nruns = 2\n"), id="train with a profile's [sweep]"),
    case(["train", "c.toml"], r"holds \[search\]",
         {"c.toml": 'base = "s.toml"\n', "s.toml": BASED + SEARCH},
         id="train a config whose base is a sweep file"),
    case(["sweep", "c.toml"], r"unknown key profile\.quick\.sweep\.bogus",
         cfg(BASED + SEARCH + "[profile.quick.sweep]\nbogus = 1\n"),
         id="sweep unknown key of a profile's [sweep]"),
    # ------------------------------------------------------------------ did you mean
    case(["verify", "--only", "sc.theorm*"],
         r"claim pattern 'sc\.theorm\*' matches no claim \(did you mean 'sc\.theorem\*'\?\)"),
    case(["verify", "--where", "sc.theorem.two_ovr_s"],
         r"\(did you mean 'sc\.theorem\.two_over_s'\?\)"),
    case(["train", "set_complement/bse"], r"\(did you mean 'set_complement/base'\?\)"),
    case(["langs", "run", "--grid", "languages/grd"], r"\(did you mean 'languages/grid'\?\)"),
    case(["figs", "--only", "sc_margns"], r"no figure matches 'sc_margns' \(did you mean "
         r"'sc_margins'\?\)"),
    case(["figs", "--only", "sc_margins", "--only", "nosuch_figure"],
         r"no figure matches 'nosuch_figure'", id="figs one of two globs matches nothing"),
]


@pytest.mark.parametrize("args, files, pattern", CLI_CASES)
def test_bad_command_line(args, files, pattern, tmp_path, monkeypatch, capsys, request):
    test_bad_input(args, files, pattern, tmp_path, monkeypatch, capsys, request)


def test_every_empty_option_of_every_command_is_a_row():
    """Every path or pattern option (an option whose type is cli_args.PATH, PATTERN or another
    ``nonempty``) of every subcommand has an empty-string row above, so a new one is not
    forgotten."""
    import argparse

    from resharpen.cli import build_parser

    covered = {(args[0], args[1] if args[0] in ("langs", "tasks", "dynamics", "collapse")
                else None, args[-2] if args[-2].startswith("-") else None) for args in EMPTY}
    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif getattr(action.type, "__name__", "") == "nonempty":
                key = (path[0], path[1] if len(path) > 1 else None,
                       action.option_strings[0] if action.option_strings else None)
                if key not in covered:
                    missing.append(" ".join(path + [action.option_strings[0]
                                                    if action.option_strings else action.dest]))

    walk(build_parser(), [])
    assert not missing, f"no empty-string row for: {missing}"

# ====================================================================== the API's bad inputs
# The Python API validates as the command line does: the same bounds and messages, ValueError
# for a bad value and TypeError for a wrong type (naming the argument), before any work or
# write. Each row: an id, a call taking (resharpen, a built construction), the exception and
# the pattern its message must match; the files to create first, as in CASES. An
# AttributeError, KeyError or RuntimeError from bad input is a bug, so a row names its type.
RUN_OF = {"r/summary.json": "{}", "r/per_length.json": "[]"}  # + r/config.json per row


def api(id, call, error, pattern, files=None):
    return pytest.param(call, error, pattern, files or {}, id=id)


API_CASES = [
    api("build lam 1e300", lambda rs, b: rs.build("tight", vocab=8, lam=1e300), ValueError,
        r"--lam 1e\+300 is out of range: \|lam\| must lie in \[1e-50, 1e\+50\]"),
    api("build beta -1e300", lambda rs, b: rs.build("tight", vocab=8, beta=-1e300), ValueError,
        r"--beta -1e\+300 is out of range"),
    api("build gain 1e300", lambda rs, b: rs.build("tight", 8, norm="attn_out", gain=1e300),
        ValueError, r"--gain 1e\+300 is out of range"),
    api("build beta 1e-300", lambda rs, b: rs.build("one_hot", vocab=8, beta=1e-300),
        ValueError, r"--beta 1e-300 is out of range"),
    api("build balanced lam 1e300", lambda rs, b: rs.build("balanced", vocab=8, lam=1e300),
        ValueError, r"--lam 1e\+300 is out of range"),
    api("build unbalanced self_score 1e300",
        lambda rs, b: rs.build("unbalanced", vocab=8, self_score=1e300), ValueError,
        r"self_score 1e\+300 is out of range: \|self_score\| must be at most 700"),
    api("build lam '2'", lambda rs, b: rs.build("tight", vocab=8, lam="2"), TypeError,
        r"lam must be a number, got str '2'"),
    api("build variant None", lambda rs, b: rs.build(None, vocab=8), TypeError,
        r"variant must be a string"),
    api("build seed -1", lambda rs, b: rs.build("balanced", vocab=8, seed=-1), ValueError,
        r"seed must be an integer in \[0, 2\*\*63 - 1\], got -1"),
    api("evaluate_lengths(None)", lambda rs, b: rs.evaluate_lengths(None, 8), TypeError,
        r"model must be a torch\.nn\.Module .*got NoneType"),
    api("evaluate_lengths lengths=3", lambda rs, b: rs.evaluate_lengths(b.model, 8, lengths=3),
        TypeError, r"lengths must be a sequence of integers, got int 3"),
    api("evaluate_lengths lengths=[]", lambda rs, b: rs.evaluate_lengths(b.model, 8, lengths=[]),
        ValueError, r"lengths is empty"),
    api("evaluate_lengths length 8 of v=8",
        lambda rs, b: rs.evaluate_lengths(b.model, 8, lengths=[8]), ValueError,
        r"input length must be an integer in \[1, 7\]"),
    api("evaluate_lengths dtype 'float64'",
        lambda rs, b: rs.evaluate_lengths(b.model, 8, dtype="float64"), TypeError,
        r"dtype must be a torch\.dtype"),
    api("evaluate_lengths dtype int64",
        lambda rs, b: rs.evaluate_lengths(b.model, 8, dtype=__import__("torch").int64),
        ValueError, r"dtype must be a floating-point dtype"),
    api("evaluate_lengths seed -1", lambda rs, b: rs.evaluate_lengths(b.model, 8, seed=-1),
        ValueError, r"seed must be in \[0, 9223372036854775807\], got -1"),
    api("compare_run seed -1", lambda rs, b: rs.compare_run(b.model, train_len=3, seed=-1),
        ValueError, r"seed must be in \[0, 9223372036854775807\], got -1"),
    api("theory_margins of a string",
        lambda rs, b: rs.theory_margins("x", __import__("torch").zeros((1, 3), dtype=int)),
        TypeError, r"built must be a Construction"),
    api("theory_margins of no input",
        lambda rs, b: rs.theory_margins(b, __import__("torch").zeros((0, 3), dtype=int)),
        ValueError, r"inputs hold no row"),
    api("load_construction of a file", lambda rs, b: rs.load_construction("f"), ValueError,
        r"f is not a folder", {"f": "a file"}),
    api("save_construction into a run folder", lambda rs, b: rs.save_construction(b, "r"),
        ValueError, r"folder 'r' holds a training run \(summary\.json\), not a construction",
        {**RUN_OF, "r/config.json": "{}"}),
    api("train({})", lambda rs, b: rs.train({}), ValueError,
        r"config is empty: name a base config"),
    api("train({'name': 'x'})", lambda rs, b: rs.train({"name": "x"}), ValueError,
        r"config is empty"),
    api("train section 5", lambda rs, b: rs.train({"task": 5}), TypeError,
        r"config\['task'\] must be a mapping of keys to values \(a section\), got int 5"),
    api("train overrides as one string",
        lambda rs, b: rs.train("set_complement/base", "train.steps=5"), TypeError,
        r"overrides must be a sequence of 'section\.key=value' strings"),
    api("train out ''", lambda rs, b: rs.train("set_complement/base", out=""), ValueError,
        r"out must name a file or folder, got ''"),
    api("train config ''", lambda rs, b: rs.train(""), ValueError,
        r"config must name a file or folder, got ''"),
    api("train config 5", lambda rs, b: rs.train(5), TypeError,
        r"config must be a TOML path or a mapping of sections, got int"),
    api("train out blocked", lambda rs, b: rs.train("set_complement/base", out="f/r"),
        ValueError, r"out 'f/r' is blocked: 'f' is not a folder", {"f": "a file"}),
    api("load_run config.json []", lambda rs, b: rs.load_run("r"), ValueError,
        r"run file 'r/config\.json': the document is an array, not an object",
        {**RUN_OF, "r/config.json": "[]"}),
    api("load_run summary.json 5", lambda rs, b: rs.load_run("r"), ValueError,
        r"run file 'r/summary\.json': the document is 5, not an object",
        {**RUN_OF, "r/config.json": "{}", "r/summary.json": "5"}),
    api("load_run metrics row []", lambda rs, b: rs.load_run("r"), ValueError,
        r"run history 'r/metrics\.jsonl', line 2: the document is an array, not an object",
        {**RUN_OF, "r/config.json": "{}", "r/metrics.jsonl": '{"step": 0}\n[]\n'}),
    api("load_run ''", lambda rs, b: rs.load_run(""), ValueError,
        r"run folder must name a file or folder, got ''"),
    api("load_run None", lambda rs, b: rs.load_run(None), TypeError,
        r"run folder must be a path .*got NoneType"),
    api("Run.model dtype 'float8'", lambda rs, b: rs.Run(Path("r"), {}, {}, [], []).model(
        "raw", dtype="float8"), ValueError, r"dtype 'float8' is not one of float16, bfloat16, "
        r"float32, float64"),
    api("Run.model dtype int64", lambda rs, b: rs.Run(Path("r"), {}, {}, [], []).model(
        "raw", dtype=__import__("torch").int64), ValueError, r"torch\.int64 is not a floating"),
    api("Run.model dtype 5", lambda rs, b: rs.Run(Path("r"), {}, {}, [], []).model(
        "raw", dtype=5), TypeError, r"dtype must be a torch dtype or its name"),
    api("Run.model weights 5", lambda rs, b: rs.Run(Path("r"), {}, {}, [], []).model(5),
        TypeError, r"weights must be one of raw, ema, bema, got int 5"),
    api("save_construction(b, '')", lambda rs, b: rs.save_construction(b, ""), ValueError,
        r"folder must name a file or folder, got ''"),
    api("save_construction(None, 'c')", lambda rs, b: rs.save_construction(None, "c"),
        TypeError, r"built must be a Construction"),
    api("load_construction('')", lambda rs, b: rs.load_construction(""), ValueError,
        r"folder must name a file or folder"),
    api("ModelConfig init_std inf",
        lambda rs, b: rs.ModelConfig(vocab=8, d_model=8, init_std=float("inf")), ValueError,
        r"init_std must be finite, got inf"),
    api("ModelConfig eps nan", lambda rs, b: rs.ModelConfig(vocab=8, d_model=8, eps=float("nan")),
        ValueError, r"eps must be finite, got nan"),
    api("ModelConfig vocab '8'", lambda rs, b: rs.ModelConfig(vocab="8", d_model=8), TypeError,
        r"vocab must be a positive integer, got str '8'"),
    api("Transformer vocab = d_model = 10^6",
        lambda rs, b: rs.Transformer(rs.ModelConfig(vocab=10**6, d_model=10**6)), ValueError,
        r"a Transformer of vocab 1000000, d_model 1000000, 1 layer\(s\) .* needs about "
        r".* of memory \(estimate\)"),
    api("Transformer(None)", lambda rs, b: rs.Transformer(None), TypeError,
        r"cfg must be a ModelConfig, got NoneType"),
    api("run_claim(None)", lambda rs, b: rs.run_claim(None), TypeError,
        r"claim_id must be a string"),
]


@pytest.mark.parametrize("call, error, pattern, files", API_CASES)
def test_api_bad_input(call, error, pattern, files, tmp_path, monkeypatch):
    import resharpen as rs

    built = rs.build("tight", vocab=8)
    monkeypatch.chdir(tmp_path)  # the default output root out/ lands here
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    before = snapshot(tmp_path)
    with pytest.raises(error) as caught:
        call(rs, built)
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    assert re.search(pattern, str(caught.value)), f"{caught.value!r} does not match {pattern!r}"
    assert snapshot(tmp_path) == before, "the call wrote, changed or removed a file"


def test_api_and_cli_share_the_construct_bounds():
    """One bound for both: the CLI's --lam/--beta/--gain check and build's are the same
    function over the same limits.CONSTRUCT_SCALES, so the messages are equal."""
    import resharpen as rs
    from resharpen.experiments.common import limits

    with pytest.raises(ValueError) as api_error:
        rs.build("tight", vocab=8, lam=1e300)
    with pytest.raises(ValueError) as cli_error:
        limits.check_construct_scales(lam=1e300)
    assert str(api_error.value) == str(cli_error.value)
    lo, hi = limits.CONSTRUCT_SCALES
    rs.build("tight", vocab=8, lam=hi, beta=lo)  # the bounds themselves are allowed


def test_api_train_refuses_a_diverged_run(tmp_path, monkeypatch):
    """lr 10 with init_std 1e30 diverges: ValueError says so and no run folder is left."""
    import resharpen as rs

    monkeypatch.chdir(tmp_path)
    tiny = ["task.vocab=8", "model.d_model=8", "train.steps=12", "train.warmup=3",
            "train.batch_size=8", "train.eval_every=6", "eval.per_length=8",
            "train.bema_update_after=2"]
    with pytest.raises(ValueError, match=r"the run diverged \(the training loss is nan at step "
                                         r"\d+\) .*no run folder was written"):
        rs.train(PLACES["{BASE}"], tiny + ["train.lr=10", "model.init_std=1e30"], out="d")
    assert list(tmp_path.iterdir()) == []
    run = rs.train(PLACES["{BASE}"], tiny, out="ok")  # the same run at a sane lr is a result
    assert run.model("raw", dtype="float64").W_E.dtype == __import__("torch").float64


def test_api_save_construction_checks_every_file_first(tmp_path):
    """``save_construction`` checks both files it writes before the first: a FIFO at
    config.json is refused (ValueError naming it) with no weights file written beside it."""
    import resharpen as rs

    os.mkfifo(tmp_path / "config.json")
    with pytest.raises(ValueError, match=r"folder: the file '.*config\.json' is a FIFO"):
        rs.save_construction(rs.build("tight", vocab=8), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]
