import json
import os
import subprocess
import sys

import pytest

from resharpen.cli import main


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, fragment", [
    (["construct", "--vocab", "8", "--norm", "sideways"], "norm 'sideways' is not one of"),
    (["construct", "--vocab", "1"], "vocabulary size must be >= 2"),
    (["construct", "--vocab", "abc"], "expected an integer, got 'abc'"),
    (["construct", "--vocab", "8", "--lam", "-2"], "must be a finite number > 0"),
    (["construct", "--vocab", "8", "--gain", "0"], "gain must be a finite number > 0"),
    (["construct", "--vocab", "8", "--variant", "magic"], "variant 'magic' is not one of"),
    (["verify", "--only", "no.such.claim*"], "matches no claim"),
    (["verify", "--profile", "huge"], "invalid choice: 'huge'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment, capsys, tmp_path):
    code, out, err = run(args + (["--out", str(tmp_path / "o")] if args[0] == "construct" else []), capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
    assert not (tmp_path / "o").exists()  # nothing half written, not even an empty folder


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; see the file-as-folder case")
def test_unwritable_out(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _, err = run(["construct", "--vocab", "6", "--out", str(locked / "c")], capsys)
    assert code == 2 and err.startswith("error: ")


def test_out_that_is_a_file_is_refused_before_work(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    code, out, err = run(["construct", "--vocab", "6", "--out", str(blocker / "c")], capsys)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert blocker.read_text() == "keep me"


def test_construct_writes_weights_config_and_report(capsys, tmp_path):
    code, out, err = run(["construct", "--vocab", "12", "--norm", "attn_out", "--gain", "1",
                          "--beta", "1", "--out", str(tmp_path / "c12"), "--json", "-"], capsys)
    assert code == 0
    report = json.loads(out)
    assert {p.name for p in (tmp_path / "c12").iterdir()} == {"weights.pt", "config.json", "report.json"}
    rows = report["lengths"]
    assert [r["length"] for r in rows] == list(range(1, 12))
    assert rows[5]["theory_margin_nonquery"] == pytest.approx(1.9148542155, rel=1e-9)
    assert max(r["abs_error_margin"] for r in rows) < 1e-9


def test_verify_runs_selected_claims_and_writes_reports(capsys, tmp_path):
    code, out, err = run(["verify", "--only", "sc.readout.paper_numbers", "--only", "sc.lemma.*",
                          "--json", str(tmp_path / "l.json"), "--markdown", str(tmp_path / "l.md")], capsys)
    assert code == 0, err
    ledger = json.loads((tmp_path / "l.json").read_text())
    assert ledger["summary"]["PASS"] == len(ledger["claims"]) == 3
    assert "| sc.readout.paper_numbers |" in (tmp_path / "l.md").read_text()


def test_derive_prints_the_key_results(capsys):
    code, out, _ = run(["derive"], capsys)
    assert code == 0 and "2/s" in out and "log(lambda_y/lambda_x)" in out
    assert "2510.22026 Post-LN: speed factor" in out and "2608.09417 f1(t)" in out


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "resharpen", "construct", "--vocab", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().startswith("error:")
