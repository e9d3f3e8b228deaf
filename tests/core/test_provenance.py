"""Every result file carries its provenance, written into the file (issue 23, requirement 4): the
record itself, the ledger JSON (top level, never inside a claim's record), a sweep's table, a
run folder, a figure's PNG and PDF; the HTML report shows the ledger's provenance apart from the
renderer's; ``verify --baseline`` refuses ledgers of another profile."""
from __future__ import annotations

import dataclasses
import datetime
import json

import pytest

from resharpen.experiments.common.provenance import PROVENANCE_FILE, provenance
from resharpen.experiments.ledger import Record, baseline, to_json

RECORD = Record("sc.toy", "src", "a statement", "numeric", "exact", False, "1", "1", "PASS", "",
                0.1)


def test_the_record_names_commit_versions_machine_profile_and_time():
    record = provenance("quick")
    assert set(record) >= {"commit", "dirty", "versions", "machine", "threads", "profile",
                           "created"}
    assert record["profile"] == "quick"
    assert set(record["versions"]) >= {"python", "resharpen", "torch", "numpy", "scipy", "sympy"}
    assert record["machine"]["cpu"] and record["machine"]["cpus"] >= 1
    import torch  # loaded: the record names the instruction set its kernels use
    assert provenance()["threads"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    cpu_id = record["machine"]["cpu_id"]
    assert cpu_id is None or cpu_id.startswith("family ")
    assert record["commit"] is None or len(record["commit"]) == 40
    created = datetime.datetime.fromisoformat(record["created"])
    assert created.tzinfo is not None
    assert abs((datetime.datetime.now(datetime.timezone.utc) - created).total_seconds()) < 600
    json.dumps(record)  # plain JSON


def test_the_ledger_json_has_it_at_the_top_level_only():
    data = json.loads(to_json([RECORD], "quick"))
    assert data["provenance"]["profile"] == "quick"
    assert set(data["claims"][0]) == {f.name for f in dataclasses.fields(Record)}
    given = {"commit": "x", "profile": "quick"}
    assert json.loads(to_json([RECORD], "quick", provenance=given))["provenance"] == given


def test_the_baseline_refuses_a_ledger_of_another_profile(tmp_path):
    full = tmp_path / "full.json"
    full.write_text(to_json([RECORD], "full"))
    with pytest.raises(ValueError, match="refusing to compare ledgers of different profiles"):
        baseline.read(full, "quick")
    quick = tmp_path / "quick.json"
    quick.write_text(to_json([RECORD], "quick"))
    assert baseline.read(quick, "quick") == {"sc.toy": {"status": "PASS", "reason": ""}}
    data = json.loads(quick.read_text())
    data["provenance"]["profile"] = "full"  # a ledger relabelled by hand
    quick.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="'full', this run is 'quick'"):
        baseline.read(quick, "quick")


def test_a_sweep_table_and_a_run_folder_carry_it(tmp_path):
    from resharpen.experiments.training.sweep import write_rows
    from resharpen.experiments.training.loop import save_run

    (tmp_path / "sweep.json").write_text(json.dumps({"identity": {"profile": "quick"}}))
    write_rows(tmp_path, [{"run": "a", "x": 1.0}])
    assert json.loads((tmp_path / PROVENANCE_FILE).read_text())["profile"] == "quick"
    summary = {"loss": 1.0, "id_invalid_mass": 0.25}
    folder = save_run({"config": {"name": "r"}, "history": [], "summary": summary},
                      tmp_path / "run", profile="full")
    assert json.loads((folder / PROVENANCE_FILE).read_text())["profile"] == "full"
    assert json.loads((folder / "summary.json").read_text()) == summary  # numbers unchanged


def test_a_figure_carries_it_in_its_png_and_pdf(tmp_path):
    from PIL import Image

    from resharpen.paper_figs import PROVENANCE_KEY, save  # the Agg backend, before pyplot
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    png, pdf = save(fig, tmp_path, "toy", "quick")
    record = json.loads(Image.open(png).text[PROVENANCE_KEY["png"]])
    assert record["profile"] == "quick" and "versions" in record
    assert b"Subject" in pdf.read_bytes()


def test_the_report_shows_the_ledgers_provenance_apart_from_the_renderers(tmp_path):
    from resharpen.html_report import environment

    ledger = json.loads(to_json([RECORD], "quick",
                                provenance={**provenance("quick"), "commit": "c0ffee",
                                            "dirty": True, "created": "2026-01-02T03:04:05+00:00"}))
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(ledger))
    run, rendered = environment(ledger, path).values()
    assert run["commit"] == "c0ffee (dirty working tree)"
    assert run["created"] == "2026-01-02T03:04:05+00:00"  # from the file's content, not its time
    assert "report written" in rendered and "report written" not in run
    del ledger["provenance"]
    run, _ = environment(ledger, path).values()
    assert run["provenance"].startswith("not recorded")


def test_verify_baseline_refuses_another_profile_in_one_line(tmp_path, capsys):
    from resharpen.cli import main

    path = tmp_path / "full.json"
    path.write_text(to_json([dataclasses.replace(RECORD, id="sc.metrics.closed_forms")], "full"))
    assert main(["verify", "--only", "sc.metrics.closed_forms", "--baseline", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refusing to compare ledgers" in err
