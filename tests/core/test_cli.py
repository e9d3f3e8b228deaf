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
    assert {p.name for p in (tmp_path / "c12").iterdir()} == {"weights.safetensors", "config.json", "report.json"}
    rows = report["lengths"]
    assert [r["length"] for r in rows] == list(range(1, 12))
    assert rows[5]["theory_margin_nonquery"] == pytest.approx(1.9148542155, rel=1e-9)
    assert max(r["abs_error_margin"] for r in rows) < 1e-9


def test_verify_runs_selected_claims_and_writes_reports(capsys, tmp_path):
    code, out, err = run(["verify", "--only", "sc.readout.reconstruction_regression", "--only", "sc.lemma.*",
                          "--json", str(tmp_path / "l.json"), "--markdown", str(tmp_path / "l.md")], capsys)
    assert code == 0, err
    ledger = json.loads((tmp_path / "l.json").read_text())
    assert ledger["summary"]["PASS"] == len(ledger["claims"]) == 3
    assert "| sc.readout.reconstruction_regression |" in (tmp_path / "l.md").read_text()


def test_derive_prints_the_key_results(capsys):
    code, out, _ = run(["derive"], capsys)
    assert code == 0 and "2/s" in out and "log(lambda_y/lambda_x)" in out
    assert "Post-LN: speed factor" in out and "collapse.f1: f1(t)" in out


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "resharpen", "construct", "--vocab", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().startswith("error:")


HEAVY = ("torch", "sympy", "scipy", "matplotlib", "numpy")


def test_help_imports_nothing_heavy():
    """`resharpen --help` and every `resharpen <cmd> --help` parse without torch, sympy, scipy,
    matplotlib or numpy: the handlers import them when they run (benchmarks/bench_cli.py times it)."""
    script = (
        "import contextlib, io, sys\n"
        "from resharpen.cli import build_parser, main\n"
        "commands = list(build_parser()._subparsers._group_actions[0].choices)\n"
        "for argv in [['--help']] + [[c, '--help'] for c in commands]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit as exit:\n"
        "            assert exit.code == 0, (argv, exit.code)\n"
        f"print(len(commands), sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    count, heavy = done.stdout.split(" ", 1)
    assert int(count) >= 11 and heavy.strip() == "[]", done.stdout


def test_a_bug_shows_its_traceback_and_exits_1(monkeypatch, capsys):
    import resharpen.cli as cli

    def broken(args):
        return {}["l_freq_stream"]

    monkeypatch.setattr(cli, "run_derive", broken)
    code, out, err = run(["derive"], capsys)
    assert code == 1
    assert "Traceback (most recent call last)" in err and "KeyError: 'l_freq_stream'" in err
    assert "error: " not in err


@pytest.mark.parametrize("where", [0, -1])  # --debug before or after the subcommand
def test_debug_shows_the_traceback_of_a_usage_error(where, capsys, tmp_path):
    args = ["construct", "--vocab", "8", "--gain", "0", "--out", str(tmp_path / "o")]
    args.insert(len(args) if where == -1 else 0, "--debug")
    code, out, err = run(args, capsys)
    assert code == 2 and "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("error: gain must be a finite number > 0")
    assert not (tmp_path / "o").exists()


def test_debug_on_a_parse_error(capsys):
    code, out, err = run(["--debug", "verify", "--profile", "huge"], capsys)
    assert code == 2 and "Traceback" in err and "invalid choice: 'huge'" in err.splitlines()[-1]


def test_collapse_detect_on_another_kind_of_run_is_a_usage_error(capsys, tmp_path):
    """A Set Complement run folder has metrics and a summary, but no t_sim and no stream L_freq."""
    run_folder = tmp_path / "sc-run"
    run_folder.mkdir()
    (run_folder / "metrics.jsonl").write_text('{"step": 0, "loss": 2.0}\n{"step": 10, "loss": 1.5}\n')
    (run_folder / "summary.json").write_text('{"seconds": 1.0, "primary": "raw"}')
    code, out, err = run(["collapse", "detect", str(run_folder)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: ") and "is not a collapse run" in err and "l_freq_stream" in err


def test_collapse_detect_reads_a_collapse_run(capsys, tmp_path):
    import json as _json

    folder = tmp_path / "post"
    folder.mkdir()
    rows = [{"step": i, "t_sim": 0.99, "loss": 4.2} for i in range(12)]
    (folder / "metrics.jsonl").write_text("".join(_json.dumps(r) + "\n" for r in rows))
    (folder / "summary.json").write_text('{"l_freq_stream": 4.1}')
    code, out, err = run(["collapse", "detect", str(folder), "--patience", "5"], capsys)
    assert code == 0 and out.startswith("collapsed at step 0"), err
    code, out, err = run(["collapse", "detect", str(folder), "--t-threshold", "2"], capsys)
    assert code == 2 and "t_threshold must lie in (0, 1]" in err


def test_tasks_command_samples_and_rejects_bad_parameters(capsys):
    code, out, err = run(["tasks", "sample", "dyck1", "--count", "2", "--length", "4"], capsys)
    assert code == 0 and len(out.splitlines()) == 2
    for args, fragment in [(["--param", "vocab"], "--param expects KEY=INT"),
                           (["--length", "0"], "argument --length: expected a positive integer"),
                           (["--param", "vocab=8"], "has no parameter 'vocab'")]:
        code, out, err = run(["tasks", "sample", "dyck1"] + args, capsys)
        assert code == 2 and err.startswith("error: ") and fragment in err, err


def test_verify_where_names_the_file_and_line_of_a_check(capsys):
    code, out, err = run(["verify", "--where", "sc.theorem.two_over_s"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "sc.theorem.two_over_s"
    assert any(".py:" in line for line in lines[1:]), out
    code, out, err = run(["verify", "--where", "no.such.claim"], capsys)
    assert code == 2 and "matches no claim" in err
