"""``resharpen verify --list`` and ``--where`` read the claim index (resharpen/claims_index.json)
and import no torch and no sympy (issue 24, requirement 9); their output equals the imported
ledger's; a stale index is not used. The behaviour is tested on an index written here from the
current ledger; one test holds the committed index current."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resharpen import claim_index

PROBE = """
import json, sys, time
start = time.perf_counter()
from pathlib import Path
import resharpen.claim_index as claim_index
claim_index.INDEX = Path(sys.argv[1])
from resharpen.cli import main
status = main(sys.argv[2:])
print(json.dumps({"status": status, "seconds": time.perf_counter() - start,
                  "heavy": sorted(m for m in ("torch", "sympy", "scipy", "matplotlib")
                                  if m in sys.modules)}))
"""


@pytest.fixture(scope="module")
def index_file(tmp_path_factory) -> Path:
    return claim_index.write(tmp_path_factory.mktemp("index") / "claims_index.json")


def _run(args, cwd, index):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", PROBE, str(index), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1]), done.stderr


def test_the_committed_index_is_current():
    assert claim_index.INDEX.is_file(), "run `python -m resharpen.claim_index --write`"
    assert claim_index.INDEX.read_text(encoding="utf-8") == claim_index.render(
        claim_index.build()), ("resharpen/claims_index.json is stale (a claims module changed); "
                               "regenerate it with `.venv/bin/python -m resharpen.claim_index "
                               "--write`")


def test_verify_list_and_where_import_no_torch_and_print_what_the_ledger_prints(
        tmp_path, monkeypatch, index_file):
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger import where

    listed, out, err = _run(["verify", "--list"], tmp_path, index_file)
    assert listed["status"] == 0, err
    assert listed["heavy"] == [], f"verify --list imported {listed['heavy']}"
    claims = all_claims()
    assert out.splitlines() == [f"{c.id:48s} {c.kind:10s} {c.expected_from:10s} {c.source}"
                                for c in claims]
    print(f"verify --list: {listed['seconds']:.2f} s in process")
    assert listed["seconds"] < 3.0  # about 0.1 s unloaded; the bound leaves room for a busy CI

    located, out, err = _run(["verify", "--where", "sc.*"], tmp_path, index_file)
    assert located["status"] == 0 and located["heavy"] == [], (err, located)
    expected = []
    monkeypatch.chdir(tmp_path)  # paths are shown as the subprocess shows them
    for c in claims:
        if c.id.startswith("sc."):
            expected += [c.id] + [f"  {place}" for place in where(c)]
            expected += [f"  expected value from the {c.expected_from}: {c.origin}"]
            expected += [f"  derived by: {', '.join(c.derived_by)}"] if c.derived_by else []
    assert out.splitlines() == expected


def test_every_claim_is_placed_by_the_index_as_by_the_ledger(monkeypatch, index_file):
    """From the repository root (paths shown relative to it) and from elsewhere."""
    from resharpen.claims import all_claims
    from resharpen.experiments.ledger import where

    index = claim_index.load(index_file)
    assert index is not None
    for folder in (Path(__file__).resolve().parents[2], Path("/")):
        monkeypatch.chdir(folder)
        for c in all_claims():
            assert index.where(c.id) == where(c), c.id


def test_a_stale_or_missing_index_is_not_used(tmp_path, index_file):
    data = json.loads(index_file.read_text(encoding="utf-8"))
    stale = dict(data, files={k: "0" * 64 for k in data["files"]})
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    assert claim_index.load(tmp_path / "stale.json") is None
    assert claim_index.load(tmp_path / "missing.json") is None
    (tmp_path / "bad.json").write_text("{")
    assert claim_index.load(tmp_path / "bad.json") is None
    assert claim_index.load(index_file) is not None
    result, out, err = _run(["verify", "--list", "--only", "sc.theorem.*"], tmp_path,
                            tmp_path / "stale.json")  # falls back to the imported ledger
    assert result["status"] == 0 and "torch" in result["heavy"]
    assert out.splitlines()[0].startswith("sc.theorem.")


def test_an_unknown_pattern_is_refused_as_before(tmp_path, index_file):
    result, out, err = _run(["verify", "--list", "--only", "nosuch.*"], tmp_path, index_file)
    assert result["status"] == 2 and "matches no claim" in err and result["heavy"] == []
