"""`python -m resharpen.experiments.set_complement.full_fit_profile`: it trains what the full
`fit.*` claims read, and refuses bad input before any work."""
import re

import pytest

from resharpen.claims import all_claims
from resharpen.experiments.set_complement import fit_data, fit_sweep_tests
from resharpen.experiments.set_complement.full_fit_profile import SWEEPS, TRAININGS, main

NAMES = {name for name, _ in TRAININGS}


def test_every_training_a_full_fit_claim_asks_for_is_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty out/: every full claim names what it misses
    asked = set()
    for claim in (c for c in all_claims() if c.id.startswith("fit.")):
        outcome = claim.check("full")
        found = re.findall(r"set_complement/(\w[\w.-]*)\.toml|set_complement\.(ema_window)",
                           outcome.inconclusive or "")
        assert found, (claim.id, outcome.inconclusive)
        asked |= {sweep or "fit_noise_window_v32" for sweep, window in found}
    assert asked <= NAMES, asked - NAMES
    assert set(fit_sweep_tests.ladder_sweeps("full")) | set(fit_data.placement_sweeps("full")) \
        | {fit_sweep_tests.K_SWEEP, "fit_noise_soft_v32"} <= NAMES
    for name, arguments in TRAININGS:
        assert arguments is None or (SWEEPS / f"{name}.toml").is_file()


def test_dry_run_prints_each_command_then_the_claims(capsys):
    assert main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(TRAININGS) + 1
    assert all("--workers 1" in line for line in lines[:-1])
    assert "verify --profile full --only fit.*" in lines[-1]


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "x"], ["--bogus"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert "error:" in capsys.readouterr().err.strip().splitlines()[-1]  # argparse's one line


def test_times_file_holds_every_step_and_the_load(tmp_path, monkeypatch):
    """Each step's wall time and exit status, the total, and the load average at the start and
    the end (a time means little without the machine's state beside it)."""
    import json

    from resharpen.experiments.set_complement import full_fit_profile

    monkeypatch.chdir(tmp_path)
    ran = []
    monkeypatch.setattr(full_fit_profile, "run_step",
                        lambda name, argv: ran.append(name) or
                        {"name": name, "status": 0, "wall_s": 0.0, "log": ""})
    assert main(["--workers", "1"]) == 0
    times = json.loads((tmp_path / "out" / "fit_full_times.json").read_text())
    assert [s["name"] for s in times["steps"]] == [*(n for n, _ in TRAININGS), "verify"] == ran
    assert len(times["load_start"]) == len(times["load_end"]) == 3
    assert all(x >= 0 for x in times["load_start"] + times["load_end"])
