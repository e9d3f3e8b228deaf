"""`resharpen report --html`: one self-contained page, checked as text and in a real headless
Chromium (Debian's ``chromium``, driven by playwright-python against the system browser).

The ledger is a real `resharpen verify --json` ledger of three quick claims, with one record
copied as a synthetic FAIL so that the status filter has two statuses to tell apart; the figures
are one drawn by `resharpen figs` and one committed copy from docs/figures.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from resharpen import html_report

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ("sc.readout.attn_out_minimum", "sc.metrics.closed_forms", "dyn.gamma_dot0.postln")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def resharpen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "resharpen"), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """out/report.html written by the command from a small real ledger and two figures."""
    import resharpen as rs
    from resharpen.experiments import ledger

    root = tmp_path_factory.mktemp("report")
    records = [rs.run_claim(i) for i in CLAIMS]
    assert all(r.status == "PASS" for r in records)
    records.append(dataclasses.replace(records[0], id="sc.synthetic.fail", status="FAIL",
                                       detail="a synthetic FAIL record for the filter test"))
    (root / "ledger.json").write_text(ledger.to_json(records, "quick"))
    drawn = resharpen("figs", "--only", "*sc_attn_out*", "--out", "figs", cwd=root)
    assert drawn.returncode == 0, drawn.stderr
    shutil.copy(ROOT / "docs" / "figures" / "fig_dyn_gamma.png", root / "figs")
    done = resharpen("report", "--html", "out/report.html", "--ledger", "ledger.json",
                     "--figs", "figs", cwd=root)
    assert done.returncode == 0, done.stderr
    return root / "out" / "report.html"


def test_the_page_holds_the_ledger_figures_and_environment(report):
    page = report.read_text()
    for claim_id in CLAIMS:
        assert f'id="claim-{claim_id}"' in page
    assert re.search(r"experiments/set_complement/claims\.py:\d+ sc\.readout\.attn_out_minimum",
                     page), "the code location of a claim (verify --where)"
    assert page.count("data:image/png;base64,") == 2
    assert 'href="#claim-sc.readout.attn_out_minimum"' in page  # the figure names its claim
    assert 'href="#fig-sc_attn_out_over_sv"' in page            # and the claim its figure
    for key in ("profile", "torch", "numpy", "python", "report written"):
        assert f"<dt>{key}</dt>" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "nothing from the network"
    assert "<link" not in page and "@import" not in page


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    done = resharpen("report", "--html", "r.html", "--ledger", "missing.json", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().startswith("error: no ledger")
    assert not (tmp_path / "r.html").exists()
    (tmp_path / "ledger.json").write_text('{"claims": 3}')
    done = resharpen("report", "--html", "r.html", "--ledger", "ledger.json", cwd=tmp_path)
    assert done.returncode == 2 and "is not a ledger" in done.stderr
    done = resharpen("report", cwd=tmp_path)
    assert done.returncode == 2 and "sweep folder" in done.stderr


def test_figure_scripts_and_their_claims():
    sources = {"fig_sc_attn_out_sv": 'save(fig, outdir, "sc_attn_out_over_sv")',
               "fig_train_grids": 'GRIDS = (("placements_grid", "fig_train_grid"),)',
               "fig_train_long_runs": 'prefix=f"fig_train_{name}"',
               "fig_langtrain_curves": 'prefix = "fig_langtrain_"'}
    assert html_report.figure_module_of("sc_attn_out_over_sv", sources) == "fig_sc_attn_out_sv"
    assert html_report.figure_module_of("fig_train_grid_placements", sources) == "fig_train_grids"
    assert (html_report.figure_module_of("fig_train_long_runs_v32_averaging", sources)
            == "fig_train_long_runs")
    assert html_report.figure_module_of("fig_langtrain_dyck1", sources) == "fig_langtrain_curves"
    assert html_report.figure_module_of("unrelated", sources) is None
    ids = ["train.ema.ood_kl.long", "train.bema.ood_kl.long_v32", "train.ema.ood_kl.fixed",
           "dyn.gamma_dot0.preln"]
    assert html_report.claims_named("Claims: train.{ema,bema}.ood_kl.long*, dyn.gamma_dot0.*.",
                                    ids) == ("train.ema.ood_kl.long", "train.bema.ood_kl.long_v32",
                                             "dyn.gamma_dot0.preln")


def chromium() -> str | None:
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None)


def test_the_page_in_headless_chromium(report, tmp_path):
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (the dev extras have it)")
    problems, requests = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")

            widths = page.evaluate("Array.from(document.images, i => i.complete ? i.naturalWidth : 0)")
            assert len(widths) == 2 and all(w > 0 for w in widths), widths

            def visible() -> int:
                return page.locator("#ledger tbody tr:visible").count()

            total = visible()
            assert total == len(CLAIMS) + 1
            page.select_option("#status", "FAIL")
            assert visible() == 1 and page.inner_text("#count") == f"1 of {total} claims shown"
            page.select_option("#status", "PASS")
            assert visible() == total - 1
            page.select_option("#status", "")
            page.select_option("#paper", "2510.22026")
            assert visible() == 1
            page.select_option("#paper", "")
            page.fill("#text", "closed_forms")
            assert visible() == 1
            page.fill("#text", "")
            assert visible() == total

            page.click('a[href="#claim-sc.readout.attn_out_minimum"]')  # a figure's claim link
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    assert problems == [], problems
    offsite = [u for u in requests if not u.startswith(("file:", "data:"))]
    assert offsite == [], offsite
