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
    """At 1400 px: the first paper's summary above the fold, before the ledger; the filters hide
    ledger rows, summary statements and figures, and live in the URL (a reload keeps them). At
    390 px (a phone): no horizontal overflow, the first summary above the fold. Screenshots of
    both are written beside the test's files."""
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (the dev extras have it)")
    problems, requests = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")

            widths = page.evaluate("Array.from(document.images, i => i.complete ? i.naturalWidth : 0)")
            assert len(widths) == 2 and all(w > 0 for w in widths), widths
            first = page.locator("section.paper").first
            assert first.get_attribute("id") == "paper-2510.08341"  # the papers in PAPERS order
            assert first.locator("h2").is_visible()
            assert first.locator("h2").bounding_box()["y"] < 900, "the first summary is above the fold"
            assert first.locator("li[data-claim]").first.bounding_box()["y"] < 900
            assert (page.locator("#ledger").bounding_box()["y"]
                    > page.locator("section.paper").last.bounding_box()["y"])
            assert first.locator("figure#fig-sc_attn_out_over_sv").count() == 1
            assert "<sub>" in page.inner_html("section.paper") or "\u221a" in page.inner_text("body")
            assert page.evaluate("document.documentElement.scrollWidth") <= 1400
            wide_height = page.evaluate("document.documentElement.scrollHeight")
            assert 900 < wide_height < 8000, wide_height

            def visible(selector: str = "#ledger tbody tr") -> int:
                return page.locator(f"{selector}:visible").count()

            total = visible()
            assert total == len(CLAIMS) + 1 and visible("li[data-claim]") == total
            assert visible("figure") == 2
            page.select_option("#status", "FAIL")
            assert visible() == 1 and visible("li[data-claim]") == 1 and visible("figure") == 0
            assert page.inner_text("#count") == f"1 of {total} claims, 0 of 2 figures shown"
            assert "status=FAIL" in page.url
            page.select_option("#status", "PASS")
            assert visible() == total - 1 and visible("figure") == 2
            page.select_option("#status", "")
            page.select_option("#paper", "2510.22026")
            assert visible() == 1 and visible("figure") == 1
            assert page.locator("#fig-fig_dyn_gamma").is_visible()
            assert not page.locator('[id="paper-2510.08341"]').is_visible()
            assert "paper=2510.22026" in page.url and "status=" not in page.url
            page.reload()
            page.wait_for_load_state("load")
            assert page.input_value("#paper") == "2510.22026" and visible() == 1  # kept in the URL
            page.select_option("#paper", "")
            assert "?" not in page.url
            page.fill("#text", "closed_forms")
            assert visible() == 1 and "q=closed_forms" in page.url
            page.fill("#text", "")
            assert visible() == total

            page.locator("#ledger tbody tr").first.locator("summary").click()  # the folded detail
            assert page.locator("#ledger tbody tr").first.locator("pre").first.is_visible()
            page.click('a[href="#claim-sc.readout.attn_out_minimum"]')  # a figure's claim link
            wide = tmp_path / "report-1400.png"
            page.screenshot(path=str(wide), full_page=True)

            phone = browser.new_page(viewport={"width": 390, "height": 844})
            phone.on("pageerror", lambda e: problems.append(str(e)))
            phone.goto(report.as_uri())
            phone.wait_for_load_state("load")
            assert phone.evaluate("document.documentElement.scrollWidth") <= 390, "no sideways scroll"
            heading = phone.locator("section.paper h2").first
            assert heading.is_visible() and heading.bounding_box()["y"] < 844
            phone_height = phone.evaluate("document.documentElement.scrollHeight")
            assert wide_height < phone_height < 20000, phone_height
            narrow = tmp_path / "report-390.png"
            phone.screenshot(path=str(narrow), full_page=True)
        finally:
            browser.close()
    assert wide.stat().st_size > 10_000 and narrow.stat().st_size > 10_000
    assert problems == [], problems
    offsite = [u for u in requests if not u.startswith(("file:", "data:"))]
    assert offsite == [], offsite


def test_math_is_unicode_written_here():
    page = html_report.math_html
    assert page("n <= e^beta, lambda_max/s -> oo") == "n \u2264 e<sup>\u03b2</sup>, \u03bb<sub>max</sub>/s \u2192 \u221e"
    assert page("2^(n-1) C_n, S_{n+1}, sqrt(d v), 2*exp(beta)") == (
        "2<sup>n-1</sup> C<sub>n</sub>, S<sub>n+1</sub>, \u221a(d v), 2\u00b7exp(\u03b2)")
    assert page("||C_n||_F^2 >= 1") == "||C<sub>n</sub>||<sub>F</sub><sup>2</sup> \u2265 1"
    # identifiers stay as they are; the text is escaped
    assert page("attn_out ngpt_inv_alpha long_runs_v32") == "attn_out ngpt_inv_alpha long_runs_v32"
    assert page("a < b & <x_i, x_j>") == "a &lt; b &amp; \u27e8x<sub>i</sub>, x<sub>j</sub>\u27e9"
    assert html_report.plain_repr("['0', '1e-3'] {'kl': True}") == "[0, 1e-3] {kl: True}"


def test_claims_are_placed_in_their_papers_order():
    claims = [{"id": "dyn.b", "source": "arXiv 2510.22026 App. D lem:matrix"},
              {"id": "dyn.a", "source": "arXiv 2510.22026 Thm 4.3(ii) (corrected)"},
              {"id": "dyn.c", "source": "arXiv 2510.22026 Sec. 3 (flow)"},
              {"id": "dyn.d", "source": "arXiv 2510.22026 Cor. of Thm 3.1"},
              {"id": "dyn.base", "source": "arXiv 2312.10794 eq. ybeta"},
              {"id": "sc.x", "source": "arXiv 2510.08341 (reconstructed), readouts"},
              {"id": "sc.y", "source": "arXiv 2510.08341 (reconstructed), Lemma"},
              {"id": "lang.z", "source": "reconstructed (formal-language suite)"},
              {"id": "lang.n", "source": "known sequence: Catalan numbers"}]
    papers = [html_report.claim_paper(c) for c in claims]
    assert papers == ["2510.22026"] * 4 + ["other", "2510.08341", "2510.08341", "2510.08341",
                                           "other"]
    where = {c["id"]: html_report.claim_section(c) for c in claims}
    assert [where[i][2] for i in ("dyn.b", "dyn.a", "dyn.c", "dyn.d")] == [
        "App D", "Thm 4.3", "Sec 3", "Thm 3.1"]
    dyn = sorted(("dyn.a", "dyn.b", "dyn.c", "dyn.d"), key=lambda i: where[i][0])
    assert dyn == ["dyn.c", "dyn.d", "dyn.a", "dyn.b"] and where["dyn.b"][1] == "Appendix D"
    assert where["sc.y"][0] < where["sc.x"][0] < where["lang.z"][0]  # Lemma, readouts, languages


def test_each_statement_shows_its_full_size_verdict_beside_the_quick_one():
    """A quick ledger's page shows each claim's full-size status from the full record, and
    'not run' where it has none; a full ledger's page shows no second status."""
    ledger = {"profile": "quick", "claims": [
        {"id": "dyn.a", "source": "arXiv 2510.22026 Thm 4.3", "status": "PASS",
         "statement": "s", "measured": "1", "expected": "1"},
        {"id": "dyn.b", "source": "arXiv 2510.22026 Thm 4.4", "status": "INCONCLUSIVE",
         "statement": "t", "measured": "1", "expected": "1"}]}
    page = html_report.render(ledger, [], {}, {}, {"dyn.a": {"status": "FAIL"}})
    assert "full size: FAIL" in page and "full size: not run" in page
    assert "full size:" not in html_report.render(ledger, [], {}, {}, None)
