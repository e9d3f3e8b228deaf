"""A bad config or argument is refused before torch is imported (issue 16, requirement 7: "the
parser and config checks run before any heavy import").

Each case runs the CLI in a fresh interpreter (torch is not imported by anything else there),
in an empty temporary folder, and asserts: exit status 2, one line ``error: ...`` matching the
pattern, and ``torch`` absent from ``sys.modules`` afterwards. The config readers themselves are
kept torch-free by the import-linter contract ``config-no-torch`` (pyproject.toml).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs"
BASE = CONFIGS / "set_complement" / "base_sampled.toml"
GRID = CONFIGS / "languages" / "grid.toml"

PROBE = """
import json, sys
from resharpen.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code
print(json.dumps({"status": status, "torch": "torch" in sys.modules}))
"""

CASES = [
    (["train", "c.toml"], {"c.toml": "[task]\nvocab = 2\n"}, r"task\.vocab = 2 is out of range"),
    (["train", "missing.toml"], {}, r"missing\.toml' does not exist"),
    (["train", str(BASE), "--set", "model.norm=sideways"], {}, r"model\.norm = 'sideways'"),
    (["train", str(BASE), "--set", "train.target=soft", "--set", "train.labels_per_position=4"],
     {}, r"labels_per_position = 4 applies to train\.target = 'sampled' only"),
    (["sweep", "c.toml"], {"c.toml": f'base = "{BASE}"\nname = "../x"\n'}, r"name"),
    (["sweep", "c.toml"], {"c.toml": "[task]\nvocab = 2\n"}, r"task\.vocab = 2 is out of range"),
    (["langs", "train", "dyck2", "--set", "model.norm=sideways"], {}, r"model\.norm = 'sideways'"),
    (["langs", "run", "--grid", "g.toml"], {"g.toml": "task = 5\n"}, r"task in .*g\.toml.* must be a table"),
    (["langs", "run", "--grid", str(GRID), "--only", "nosuch"], {}, r"--only 'nosuch'"),
    (["report", "nowhere"], {}, r"'nowhere/table\.jsonl' does not exist"),
    (["langs", "report", "nowhere"], {}, r"holds no finished runs"),
    (["dynamics", "trained", "--premise-set", "nosuch"], {}, r"unknown premise set 'nosuch'"),
    (["dynamics", "trained", "--scheme", "sideways"], {}, r"scheme 'sideways' is not in"),
    (["dynamics", "trained", "--premise-set", "paper_init", "--depth", "7"], {},
     r"--depth 7 is not a depth of premise set paper_init"),
]


@pytest.mark.parametrize("args,files,pattern", CASES, ids=[" ".join(c[0])[-60:] for c in CASES])
def test_refused_before_torch(tmp_path, args, files, pattern):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, text=True,
                          capture_output=True, timeout=120)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    lines = done.stderr.strip().splitlines()
    assert result["status"] == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert not result["torch"], f"torch was imported before refusing: {lines[0]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)  # nothing written
