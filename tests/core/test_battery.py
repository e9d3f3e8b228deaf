"""``resharpen battery`` at its tiny profile on a scheme written in a temporary file (DeepNet's
Post-LN, N(2 x + f(x))): the table names the scheme, the references, n and p per task; a second
invocation resumes without training; a changed plug-in file or a non-scheme is refused with one
line; nothing is written outside the folder named. Two workers: the spawned processes load the
plug-in themselves."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re

import pytest

from resharpen.cli import main

from registry_guard import restored_registries

SCHEME = "deepnet_battery"


def snapshot(root) -> dict:
    """{path: mtime_ns} of every run summary and dynamics group file under the battery."""
    files = list(root.glob("*/runs/*/summary.json")) + list(root.glob("dynamics/*.json"))
    return {str(p): p.stat().st_mtime_ns for p in files}


@pytest.fixture(scope="module")
def battery(tmp_path_factory, deepnet_plugin):
    """(working folder, battery folder, plug-in path, and per run of two: stdout, stderr, the
    run and group files before and after it)."""
    base = tmp_path_factory.mktemp("battery")  # the working folder of both runs
    plugin = deepnet_plugin(base, SCHEME)
    out = base / "battery"
    args = ["battery", "--scheme", f"{plugin}:{SCHEME}", "--out", str(out), "--profile", "tiny",
            "--workers", "2"]
    here = os.getcwd()
    os.chdir(base)  # a default folder (out/ of the working folder) written by mistake shows
    try:
        with restored_registries():
            streams = []
            for _ in range(2):
                stdout, stderr = io.StringIO(), io.StringIO()
                before = snapshot(out) if out.exists() else {}
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    assert main(args) == 0, stderr.getvalue()
                streams.append((stdout.getvalue(), stderr.getvalue(), before, snapshot(out)))
    finally:
        os.chdir(here)
    return base, out, plugin, streams


def test_table_names_scheme_references_n_and_p(battery):
    _, out, _, streams = battery
    table = streams[0][0]
    assert f"# Battery of {SCHEME}" in table and "paired t (scipy.stats.ttest_rel)" in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and " | " in line]
    for task in ("set_complement (fit grid)", "dyck1"):
        for ref in ("pre", "post"):
            row = next(r for r in rows if r.startswith(f"| {task} | {ref} |"))
            cells = [c.strip() for c in row.strip("|").split("|")]
            n, p, verdict = cells[5], cells[6], cells[9]
            assert n.isdigit()
            if verdict.startswith("INCONCLUSIVE"):
                assert p == "–" and re.search(r"\d+ < 5 pairs|standard error", verdict)
            else:
                assert int(n) >= 5 and 0 <= float(p) <= 1
                assert verdict in ("lower", "higher", "no difference shown")
    assert "nan" not in table.lower()
    assert (out / "battery.md").read_text().strip() == table.strip()
    result = json.loads((out / "battery.json").read_text())
    assert result["scheme"] == SCHEME and result["references"] == ["pre", "post"]
    assert {r["task"] for r in result["ood"]} == {"set_complement (fit grid)", "dyck1"}
    assert [r["scheme"] for r in result["dynamics"]["schemes"]] == [SCHEME, "pre", "post"]
    mine = result["dynamics"]["schemes"][0]
    assert mine["runs"] == 2 and mine["first_layer_displacement_init"]["n"] == 2


def test_second_invocation_resumes_without_training(battery):
    _, _, _, streams = battery
    first, second = streams
    assert first[3] and second[2] == second[3] == first[3]  # no run or group rewritten
    assert second[1].count("skipped") == 3
    assert second[0] == first[0]


def test_writes_only_under_the_folder_named(battery):
    base, out, plugin, _ = battery
    assert sorted(p.name for p in base.iterdir()) == ["battery", "my_norms.py"]
    assert sorted(p.name for p in out.iterdir()) == [
        "battery.json", "battery.md", "battery_plan.json", "dynamics", "languages",
        "set_complement"]


def test_a_changed_plugin_file_or_a_task_is_refused(battery, capsys, tmp_path):
    _, out, plugin, _ = battery
    with restored_registries():
        changed = tmp_path / "my_norms.py"
        changed.write_text(open(plugin).read().replace("ALPHA = 2.0", "ALPHA = 3.0"))
        assert main(["battery", "--scheme", f"{changed}:{SCHEME}", "--out", str(out),
                     "--profile", "tiny"]) == 2
        err = capsys.readouterr().err
        assert "holds another battery (its plugin, plugin_sha256 differ" in err
        assert err.count("\n") == 1
        assert main(["battery", "--scheme", "dyck1", "--out", str(tmp_path / "b")]) == 2
        assert "dyck1" in capsys.readouterr().err
        assert not (tmp_path / "b").exists()
