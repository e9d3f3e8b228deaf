"""All JSON the package writes is strict (issue 16 requirement 6, issue 15 requirement 6).

One writer (experiments/common/json_text.py ``dumps_json``) turns NaN and inf into null with a reason
field; the main commands' outputs are parsed with a parser that refuses NaN, Infinity and
-Infinity tokens; and no module writes JSON around that writer."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from resharpen.cli import main
from resharpen.experiments.common.io import atomic_write_json
from resharpen.experiments.common.json_text import dumps_json, dumps_jsonl, loads_json

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "experiments" / "configs" / "set_complement" / "base_sampled.toml"
TINY = ["task.vocab=8", "model.d_model=8", "train.steps=12", "train.warmup=3",
        "train.batch_size=8", "train.eval_every=6", "eval.per_length=8"]


def _refuse(token: str):
    raise ValueError(f"non-strict JSON token {token}")


def strict_loads(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_refuse)


def strict_parse_file(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                strict_loads(line)
    else:
        strict_loads(text)


def test_writer_turns_non_finite_numbers_into_null_with_a_reason(tmp_path):
    obj = {"a": math.nan, "b": [1.0, math.inf], "c": {"d": -math.inf}, "e": 2.5, "f": None}
    text = dumps_json(obj)
    assert strict_loads(text) == {"a": None, "a_nonfinite": "nan", "b": [1.0, None],
                                  "b_nonfinite": {"1": "inf"}, "c": {"d": None,
                                                                     "d_nonfinite": "-inf"},
                                  "e": 2.5, "f": None}
    back = loads_json(text)  # the package's reader restores the floats
    assert math.isnan(back["a"]) and back["b"] == [1.0, math.inf] and back["c"]["d"] == -math.inf
    assert back["e"] == 2.5 and back["f"] is None and "a_nonfinite" not in back
    nested = {"g": [[math.nan, 1.0], [2.0, -math.inf]], "h": [{"i": math.inf}]}
    again = loads_json(dumps_json(nested))
    assert math.isnan(again["g"][0][0]) and again["g"][1] == [2.0, -math.inf]
    assert again["h"] == [{"i": math.inf}]
    assert [strict_loads(line) for line in dumps_jsonl([{"x": math.nan}, {"x": 1}]).splitlines()] \
        == [{"x": None, "x_nonfinite": "nan"}, {"x": 1}]
    strict_parse_file(atomic_write_json(tmp_path / "x.json", obj))
    with pytest.raises(ValueError, match="NaN"):
        strict_loads('{"a": NaN}')


def _run(argv: list[str]) -> None:
    assert main(argv) == 0, argv


def test_main_commands_write_strict_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    # construct, including the parameters that wrote NaN/inf before (issue 16)
    _run(["construct", "--vocab", "12", "--out", str(out / "c"), "--json", str(out / "c.json")])
    _run(["construct", "--vocab", "40", "--variant", "unbalanced", "--beta=-1e3", "--lam", "1e3",
          "--out", str(out / "u")])
    _run(["construct", "--vocab", "300", "--norm", "post", "--gain", "1e15",
          "--json", str(out / "g.json")])
    # train tiny, sweep tiny (and its report's fit JSON), compare
    sets = [a for s in TINY for a in ("--set", s)]
    _run(["train", str(BASE), *sets, "--profile", "quick", "--out", str(out / "run")])
    sweep = tmp_path / "tiny.toml"
    sweep.write_text(f'name = "tiny"\nbase = "{BASE}"\n[task]\nvocab = 8\n[model]\nd_model = 8\n'
                     '[train]\nsteps = 10\nwarmup = 2\neval_every = 5\nbatch_size = 8\n'
                     '[eval]\nper_length = 8\n[sweep]\nruns = 2\nseed = 7\n'
                     '[search]\n"train.lr" = { loguniform = [1e-3, 3e-2] }\n')
    _run(["sweep", str(sweep), "--workers", "1", "--profile", "quick", "--out", str(out / "sweep")])
    _run(["report", str(out / "sweep"), "--no-figs", "--fit-json", str(out / "fit.json")])
    _run(["compare", str(out / "run"), "--count", "8", "--json", str(out / "compare.json")])
    # a few claims
    main(["verify", "--only", "sc.theorem.*", "--only", "dyn.base.*", "--json",
          str(out / "ledger.json")])
    # dynamics and collapse
    _run(["dynamics", "ode", "--n", "8", "--t-end", "20", "--json", str(out / "ode.json")])
    _run(["dynamics", "simulate", "--scheme", "postln", "--n", "6", "--d", "3", "--t-end", "2",
          "--samples", "3", "--json", str(out / "sim.json")])
    _run(["dynamics", "stacks", "--n", "6", "--d", "8", "--layers", "3",
          "--json", str(out / "stacks.json")])
    _run(["collapse", "stack", "--n", "8", "--d", "8", "--depth", "3", "--samples", "1",
          "--t0", "0.2", "--json", str(out / "collapse.json")])
    written = sorted(p for p in out.rglob("*") if p.suffix in (".json", ".jsonl"))
    names = {p.name for p in written}
    assert {"report.json", "config.json", "metrics.jsonl", "per_length.json", "summary.json",
            "table.jsonl", "ledger.json", "fit.json", "compare.json", "sim.json",
            "collapse.json"} <= names, names
    for path in written:
        strict_parse_file(path)
    spread = strict_loads((out / "g.json").read_text())["lengths"]
    assert all(math.isfinite(r["log_valid_spread"]) for r in spread)


# Writes of JSON text that do not go through dumps_json: round trips used only to compare or
# canonicalize (json.loads(json.dumps(...))), two keys/metadata strings of finite values, and
# the safetensors header (names, dtypes, shapes and offsets: no float).
ALLOWED = (r"json\.loads\(json\.dumps\(", r"return json\.dumps\(shared, sort_keys=True\)",
           r'"model_config": json\.dumps\(saved\.model_config\)',
           r'text = json\.dumps\(header, separators=\(",", ":"\)\)\.encode\(\)')


def test_no_json_writer_bypasses_the_strict_one():
    offenders = []
    for folder in ("resharpen", "experiments", "constructions", "theory", "paper_figs"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "json_text.py" and path.parent.name == "common":
                continue  # the strict writer itself
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"json\.dumps?\(", line) and not any(re.search(a, line)
                                                                  for a in ALLOWED):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_written_files_get_the_usual_mode_not_mkstemps_0600(tmp_path):
    import os
    import stat

    from resharpen.experiments.common.io import atomic_write_text

    mask = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "report.html", "<html></html>")
    finally:
        os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
