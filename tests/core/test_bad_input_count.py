"""docs/usage.md states how many bad-input cases tests/core/test_bad_inputs.py holds: the number
is the one pytest collects."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_state_the_collected_count():
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "core" / "test_bad_inputs.py")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    collected = int(re.search(r"(\d+) tests? collected", done.stdout).group(1))
    stated = re.search(r"<!-- bad-input count -->(\d+)<!-- end -->",
                       (ROOT / "docs" / "usage.md").read_text())
    assert stated, "docs/usage.md lost its marked bad-input count"
    assert int(stated.group(1)) == collected
