"""The verdict pages and the generated parts of the README and docs/ledger.md are what the
records give: a stale page or block fails here (regenerate with ``python -m resharpen.verdicts --write`` and
``python -m resharpen.front_page --write``)."""
from __future__ import annotations

import re

import pytest

from resharpen import front_page, verdicts
from resharpen.experiments.ledger.declarations import all_declarations


def test_the_committed_pages_are_current():
    for name, text in verdicts.pages().items():
        path = verdicts.PAGES / name
        assert path.is_file() and path.read_text() == text, (
            f"docs/verdicts/{name} is stale: run `python -m resharpen.verdicts --write`")


def test_the_readme_the_ledger_page_and_the_run_times_page_are_current():
    for page in front_page.PAGES:
        text = page.read_text()
        assert front_page.render(text, page) == text, (
            f"{page.name} is stale: run `python -m resharpen.front_page --write`")
    assert front_page.RUN_TIMES_PAGE.read_text() == front_page.run_times_page()


def test_the_non_pass_table_is_the_records():
    """Planted records: a claim that does not PASS in either record gets a row with both
    statuses, each non-PASS record's measured and expected values and an INCONCLUSIVE record's
    reason (cut at a word), pipes escaped; a claim that PASSes in both has none."""
    declared = {k: v for k, v in all_declarations().items() if k.startswith("collapse.")}
    a, b, c = sorted(declared)[:3]
    quick = {a: {"status": "INCONCLUSIVE", "measured": "n = 3", "expected": "x | y",
                 "detail": "paired t, n=3 | inconclusive: 3 < 5 seeds; " + "word " * 100},
             b: {"status": "PASS", "measured": "1", "expected": "1"},
             c: {"status": "PASS", "measured": "1", "expected": "1"}}
    full = {b: {"status": "FAIL", "measured": "0.2", "expected": "< 0.1", "detail": "d"}}
    text = verdicts.non_pass_section(declared, quick, full)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [a, b]
    assert f"Of the {len(declared)} claims, 2 do not PASS in the records: 1 in the quick " \
           "record" in text and "and 1 in the full-size record" in text
    first = rows[0].split(" | ")
    assert first[1:3] == ["INCONCLUSIVE", "not run" + (
        f" (declared {declared[a]['full']})" if declared[a].get("full") else "")]
    assert first[3].startswith("**quick**: measured n = 3; expected x \\| y; undecided because: "
                               "3 < 5 seeds; word")
    assert first[3].endswith("word [...] |") and len(first[3]) < verdicts.NON_PASS_CHARS + 120
    assert rows[1].endswith("| PASS | FAIL | **full size**: measured 0.2; expected < 0.1 |")
    assert f"(verdicts/2608.09417.md#{b.replace('.', '')})" in rows[1]


def test_the_findings_table_lists_what_does_not_plainly_pass():
    """Planted full records: a FAIL, an INCONCLUSIVE (with its reason), an erratum's PASS (named
    by whose statement it shows false), a missing record and a supporting check's FAIL each get
    a row; a plain PASS gets none; a page whose claims all PASS says so instead of a table."""
    declared = {
        "x.fail": {"source": "arXiv 2510.22026 Thm 1", "statement": "s"},
        "x.undecided": {"source": "arXiv 2510.22026 Thm 2", "statement": "s"},
        "x.erratum": {"source": "arXiv 2510.22026 Thm 3", "statement": "s", "erratum": True,
                      "erratum_of": "summary"},
        "x.missing": {"source": "arXiv 2510.22026 Thm 4", "statement": "s"},
        "x.pass": {"source": "arXiv 2510.22026 Thm 5", "statement": "s"},
        "x.support": {"source": "known sequence: Catalan numbers", "statement": "s"},
        "x.transfer": {"source": "arXiv 2510.22026, trained", "statement": "s", "transfer": True}}
    full = {"x.fail": {"status": "FAIL", "measured": "0.2 | 0.3", "expected": "< 0.1"},
            "x.undecided": {"status": "INCONCLUSIVE", "measured": "n = 3", "expected": "> 0",
                            "detail": "t | inconclusive: 3 < 5 seeds"},
            "x.erratum": {"status": "PASS", "measured": "0", "expected": "0"},
            "x.pass": {"status": "PASS", "measured": "1", "expected": "1"},
            "x.support": {"status": "FAIL", "measured": "1", "expected": "2"},
            "x.transfer": {"status": "FAIL", "measured": "1", "expected": "2"}}
    rows = [line for line in verdicts.findings(list(declared), declared, full)
            if line.startswith("| [`")]
    assert [row.split("`")[1] for row in rows] == ["x.fail", "x.undecided", "x.erratum",
                                                   "x.missing", "x.support", "x.transfer"]
    assert rows[0].endswith("| FAIL | 0.2 \\| 0.3 | < 0.1 |  |")
    assert rows[1].endswith("| INCONCLUSIVE | n = 3 | > 0 | 3 < 5 seeds |")
    assert "| PASS: an erratum of a secondary summary of the paper, reproduced | 0 | 0 |" \
        in rows[2]
    assert "| not run |" in rows[3]
    assert "| FAIL (a supporting check) |" in rows[4]
    assert "| FAIL (in the package's transformers) |" in rows[5]
    plain = {"x.pass": declared["x.pass"]}
    text = "\n".join(verdicts.findings(["x.pass"], plain, full))
    assert "Every claim of this page PASSes at full size, and none is an erratum." in text
    assert "| claim |" not in text


def test_errata_are_counted_by_whose_statement_they_show_false():
    """Only an erratum whose full record PASSes (its counterexample reproduced) counts; the
    counts follow the declared order of origins, and a page with none gets ""."""
    declared = {"a": {"erratum": True, "erratum_of": "summary"},
                "b": {"erratum": True, "erratum_of": "paper"},
                "c": {"erratum": True, "erratum_of": "paper"},
                "d": {"erratum": True, "erratum_of": "paper"},
                "e": {"erratum": True, "erratum_of": "prior work"},
                "f": {}}
    full = {"a": {"status": "PASS"}, "b": {"status": "PASS"}, "c": {"status": "PASS"},
            "d": {"status": "FAIL"}, "f": {"status": "PASS"}}
    assert verdicts.errata_counts(list(declared), declared, full) == (
        "2 of the paper as its sources give it, 1 of a secondary summary of the paper")
    assert verdicts.errata_counts(["f"], declared, full) == ""


def test_every_declared_claim_is_on_exactly_one_page():
    declared = all_declarations()
    pages = verdicts.pages()
    for claim_id in declared:
        hits = [name for name, text in pages.items() if f"### `{claim_id}`\n" in text]
        assert len(hits) == 1, (claim_id, hits)


def test_a_page_shows_the_records_it_is_given():
    """Planted records: the verdicts, numbers and counts on the page are theirs."""
    declared = {k: v for k, v in all_declarations().items() if k.startswith("collapse.")}
    some = sorted(declared)[:2]
    quick = {some[0]: {"id": some[0], "status": "FAIL", "measured": "0.123", "expected": "< 0.1",
                       "detail": "paired t, n = 8, p = 0.004"},
             some[1]: {"id": some[1], "status": "PASS", "measured": "1", "expected": "1",
                       "detail": ""}}
    page = verdicts.pages(declared, quick, {})["2608.09417.md"]
    assert "Quick: 1 PASS, 1 FAIL. Full size: not run." in page
    assert "quick **FAIL**" in page and "paired t, n = 8, p = 0.004" in page
    assert "- **Measured (quick)**: 0.123; expected: < 0.1" in page
    table = page.split("## At a glance")[1].split("## The statements")[0]
    rows = [line for line in table.splitlines() if line.startswith("| [`")]
    assert [row.split("`")[1] for row in rows] == list(declared)  # every one, in page order
    row = next(r for r in rows if f"[`{some[0]}`]" in r)
    assert row.endswith("| FAIL | not run (declared " + declared[some[0]]["full"] + ") |") \
        if declared[some[0]].get("full") else row.endswith("| FAIL | not run |")
    assert f"(#{some[0].replace('.', '')})" in row and f"### `{some[0]}`" in page


def test_a_claim_of_no_paper_is_refused():
    with pytest.raises(ValueError, match="belongs to no paper"):
        verdicts.paper_of("nothing.here")


def _ledger(path, profile, commit, claims):
    import json

    path.write_text(json.dumps({
        "profile": profile, "provenance": {"commit": commit, "profile": profile,
                                           "created": "2026-12-06T10:00:00+00:00"},
        "claims": [{"id": i, "status": s, "measured": "1", "expected": "1", "seconds": 3.0}
                   for i, s in claims]}))
    return path


def test_full_records_merge_part_by_part(tmp_path):
    """Two partial full-size ledgers merge into one record; a claim run again keeps only its
    latest record, a run no claim refers to is dropped, and each claim names its run."""
    target = tmp_path / "full.json"
    first = _ledger(tmp_path / "a.json", "full", "aaaaaaa1", [("x.one", "PASS"), ("x.two", "FAIL")])
    second = _ledger(tmp_path / "b.json", "full", "bbbbbbb2", [("x.two", "PASS")])
    keep = {"x.one", "x.two"}
    verdicts.merge([first], target, keep)
    verdicts.merge([second], target, keep)
    records = verdicts.read_records(target)
    assert {k: r["status"] for k, r in records.items()} == {"x.one": "PASS", "x.two": "PASS"}
    assert records["x.one"]["decided_by"]["commit"] == "aaaaaaa1"
    assert records["x.two"]["decided_by"]["commit"] == "bbbbbbb2"
    assert "seconds" not in records["x.one"]
    third = _ledger(tmp_path / "c.json", "full", "ccccccc3", [("x.one", "FAIL")])
    verdicts.merge([third], target, keep)
    import json
    data = json.loads(target.read_text())
    assert [r["commit"] for r in data["runs"]] == ["bbbbbbb2", "ccccccc3"]
    assert data["summary"] == {"PASS": 1, "FAIL": 1, "INCONCLUSIVE": 0, "ERROR": 0}
    said = []
    verdicts.merge([], target, {"x.one"}, report=said.append)  # x.two removed: its record goes
    assert said == ["dropped the records of 1 claims no longer declared: x.two"]
    data = json.loads(target.read_text())
    assert [c["id"] for c in data["claims"]] == ["x.one"]
    assert [r["commit"] for r in data["runs"]] == ["ccccccc3"]


def test_a_quick_ledger_is_not_merged_into_the_full_record(tmp_path):
    quick = _ledger(tmp_path / "q.json", "quick", "aaaaaaa1", [("x.one", "PASS")])
    with pytest.raises(ValueError, match="not 'full'"):
        verdicts.merge([quick], tmp_path / "full.json")
    assert not (tmp_path / "full.json").exists()


def test_the_full_record_equals_the_declared_full_statuses():
    """Every claim recorded at full size (results/full/ledger.json) has the status its
    declaration expects at full size, and every declared full status has its record."""
    declared = all_declarations()
    records = verdicts.read_records(verdicts.FULL_LEDGER)
    assert set(records) <= set(declared), sorted(set(records) - set(declared))
    wrong = {i: (r["status"], declared[i].get("full")) for i, r in records.items()
             if declared[i].get("full") != r["status"]}
    assert not wrong, f"record vs declared full status: {wrong}; if a finding changed on " \
                      "purpose, run `python -m resharpen.verdicts --write --declare-full`"
    unrecorded = [i for i, d in declared.items() if "full" in d and i not in records]
    assert not unrecorded, f"declared full statuses without a full record: {unrecorded}"


def test_every_claim_has_a_full_size_record():
    """Every declared claim has a record in the archived full-size ledger. A claim whose
    full-size data is still being trained (the language grid, the Othello study) is recorded
    INCONCLUSIVE with the count of finished runs as its measured value, so its verdict page says
    how far the runs have come, not "not run"."""
    records = verdicts.read_records(verdicts.FULL_LEDGER)
    missing = sorted(set(all_declarations()) - set(records))
    assert not missing, f"{len(missing)} claims have no full-size record: {missing}"
    partial = {i: r["measured"] for i, r in records.items() if "runs finished" in r["measured"]}
    for claim_id, measured in partial.items():
        finished, planned = (int(x) for x in re.fullmatch(r"(\d+) of (\d+) runs finished",
                                                          measured).groups())
        assert finished < planned and records[claim_id]["status"] == "INCONCLUSIVE", claim_id


def test_declaring_full_statuses_edits_only_the_full_line(tmp_path, monkeypatch):
    """declare_full writes `full = ...` into the claim's own table, after its quick line, and
    replaces an existing one; other tables are untouched."""
    import json

    from resharpen.experiments.ledger import declarations

    decl_file = tmp_path / "claims.toml"
    decl_file.write_text('["a.one"]\nquick = "PASS"\norigin = "x"\n\n'
                         '["a.two"]\nquick = "FAIL"\nfull = "FAIL"\norigin = "y"\n')
    fake = {"a.one": {"quick": "PASS", "module": "m"},
            "a.two": {"quick": "FAIL", "full": "FAIL", "module": "m"}}
    monkeypatch.setattr(verdicts, "all_declarations", lambda: fake)
    monkeypatch.setattr(declarations, "declaration_file", lambda module: decl_file)
    record = tmp_path / "full.json"
    record.write_text(json.dumps({"profile": "full", "claims": [
        {"id": "a.one", "status": "INCONCLUSIVE"}, {"id": "a.two", "status": "PASS"}]}))
    assert verdicts.declare_full(record) == ["a.one", "a.two"]
    assert decl_file.read_text() == ('["a.one"]\nquick = "PASS"\nfull = "INCONCLUSIVE"\n'
                                     'origin = "x"\n\n'
                                     '["a.two"]\nquick = "FAIL"\nfull = "PASS"\norigin = "y"\n')


def test_a_claim_is_filed_under_the_paper_its_source_names():
    """A dyn.trained claim that tests arXiv 2608.09417's theorem goes on that paper's page; a
    claim whose source names none of the three papers goes by its id prefix."""
    assert verdicts.paper_of("dyn.trained.x", "arXiv 2608.09417 (re-derived); Thm 3.6") \
        == "2608.09417"
    assert verdicts.paper_of("dyn.x", "known sequence") == "2510.22026"
    assert verdicts.paper_of("collapse.x", "arXiv 1234.56789 (prior work)") == "2608.09417"


def test_a_committed_figure_copy_is_labelled_with_the_data_it_was_drawn_from(tmp_path):
    """The label of a figure copy comes from the provenance in its PNG: full size, quick, no
    profile, or none recorded (an older copy)."""
    import json

    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    from resharpen.paper_figs import PROVENANCE_KEY

    def png(name, record):
        info = PngInfo()
        if record is not None:
            info.add_text(PROVENANCE_KEY["png"], json.dumps(record))
        path = tmp_path / f"{name}.png"
        Image.new("RGB", (2, 2)).save(path, pnginfo=info)
        return path

    stamp = {"commit": "0123456789abcdef", "dirty": False, "created": "2026-01-02T03:04:05"}
    assert verdicts.copy_label(png("f", {**stamp, "profile": "full"})) \
        == "full size, commit 0123456, 2026-01-02"
    assert verdicts.copy_label(png("q", {**stamp, "profile": "quick", "dirty": True})) \
        == "quick profile, commit 0123456 (with uncommitted changes), 2026-01-02"
    assert verdicts.copy_label(png("n", {**stamp, "profile": None})).startswith("no profile")
    assert verdicts.copy_label(png("o", None)) == "provenance not recorded"


def test_a_supporting_check_is_marked_on_its_page_and_not_counted_as_a_statement():
    """A claim whose source is a published count is marked a supporting check, and the index
    counts the paper's own statements apart from it."""
    declared = {
        "lang.x.counts": {"statement": "s", "source": "published counts (OEIS)", "quick": "PASS",
                          "tolerance": "exact", "expected_from": "paper", "origin": "o"},
        "sc.y": {"statement": "s", "source": "arXiv 2510.08341, Lemma", "quick": "PASS",
                 "tolerance": "exact", "expected_from": "paper", "origin": "o"},
    }
    records = {i: {"id": i, "status": "PASS", "measured": 1, "expected": 1} for i in declared}
    out = verdicts.pages(declared, records, records)
    page = out["2510.08341.md"]
    assert "(a supporting check, not a statement of the paper)" in page.split("### `sc.y`")[0]
    assert "(a supporting check" not in page.split("### `sc.y`")[1]
    assert "| 2 | 2 PASS | 2 PASS | 1: 1 PASS | none |" in out["README.md"]


def test_a_transfer_claim_is_marked_and_counted_apart_from_the_papers_statements():
    """A claim declared ``transfer = true`` (a paper's statement held against models outside
    the setting it is proved in) is marked on its page and counted in its own column, not
    among the paper's own statements; its source alone does not make it one."""
    base = {"statement": "s", "quick": "PASS", "tolerance": "t", "expected_from": "statement",
            "origin": "o"}
    declared = {"dyn.a": {**base, "source": "arXiv 2510.22026 Thm 4.1"},
                "dyn.b": {**base, "source": "arXiv 2510.22026 held against trained transformers",
                          "transfer": True},
                "dyn.c": {**base, "source": "arXiv 2510.22026 held against trained transformers"}}
    records = {i: {"id": i, "status": s, "measured": 1, "expected": 1}
               for i, s in (("dyn.a", "PASS"), ("dyn.b", "FAIL"), ("dyn.c", "PASS"))}
    out = verdicts.pages(declared, records, records)
    page = out["2510.22026.md"]
    marker = "(the paper's statement held against the package's transformers"
    assert marker in page.split("### `dyn.b`")[1].split("### `dyn.c`")[0]
    assert marker not in page.split("### `dyn.b`")[0] + page.split("### `dyn.c`")[1]
    assert "| 3 | 2 PASS, 1 FAIL | 2 PASS, 1 FAIL | 2: 2 PASS | 1: 1 FAIL |" in out["README.md"]


def test_only_an_experiment_claims_full_size_command_starts_with_the_archive():
    decl = {"statement": "s", "source": "arXiv 2510.08341", "quick": "PASS", "tolerance": "t",
            "expected_from": "paper", "origin": "o"}
    experiment = verdicts.entry("fit.x", {**decl, "kind": "experiment"}, None, None)
    analytic = verdicts.entry("sc.x", {**decl, "kind": "symbolic"}, None, None)
    assert "`resharpen archive restore`" in experiment
    assert "archive restore" not in analytic and "--profile full` (full size)" in analytic


def test_a_transfer_claim_says_so_in_its_source_and_its_declaration_alike():
    """'held against' in a source and ``transfer = true`` go together: either one alone is an
    error when the declaration is read, so no claim is counted apart by accident or left
    among a paper's own statements while its source says otherwise."""
    from resharpen.experiments.ledger.declarations import all_declarations, check_entry

    entry = {"source": "arXiv 2510.22026 held against trained transformers", "statement": "s",
             "kind": "experiment", "tolerance": "t", "cost": "fast", "quick": "PASS",
             "expected_from": "statement", "origin": "o"}
    with pytest.raises(ValueError, match="says so twice"):
        check_entry("dyn.x", entry, "claims.toml")
    with pytest.raises(ValueError, match="says so twice"):
        check_entry("dyn.x", {**entry, "source": "arXiv 2510.22026", "transfer": True},
                    "claims.toml")
    check_entry("dyn.x", {**entry, "transfer": True}, "claims.toml")
    held = sorted(i for i, d in all_declarations().items() if d.get("transfer"))
    assert held and all(i.startswith("dyn.trained.") for i in held)


def test_a_long_detail_is_cut_at_a_word_and_kept_whole_in_a_folded_block():
    """The page shows a long detail's start, cut at a space, and the whole of it, escaped, in a
    <details> block: the part that decides a claim is never lost past the cut."""
    decl = {"statement": "s", "source": "arXiv 2510.08341", "quick": "FAIL", "tolerance": "t",
            "expected_from": "paper", "origin": "o", "kind": "experiment"}
    words = " ".join(f"word{i}" for i in range(200))  # about 1,300 characters
    detail = f"{words} | deciding test: 2 < 5 pairs, p=0.001"
    text = verdicts.entry("fit.x", decl, {"status": "FAIL", "measured": "m", "expected": "e",
                                          "detail": detail}, None)
    line = next(x for x in text.splitlines() if x.startswith("- **How it was decided (quick)**"))
    shown, folded = line.split(" <details>")
    assert shown.endswith(" [...]") and shown[:-len(" [...]")].split()[-1].startswith("word")
    assert len(shown) < verdicts.DETAIL_CHARS + 60
    assert folded.endswith("deciding test: 2 &lt; 5 pairs, p=0.001</details>")
    assert f"({len(detail)} characters)" in folded
    short = verdicts.entry("fit.x", decl, {"status": "PASS", "measured": "m", "expected": "e",
                                           "detail": "all fine"}, None)
    assert "- **How it was decided (quick)**: all fine" in short and "<details>" not in short


def test_a_figure_without_a_committed_copy_says_so_and_names_its_command():
    text = verdicts.figure_text("fig_not_drawn_anywhere")
    assert text == ("`fig_not_drawn_anywhere` (no copy in docs/figures: the command draws it); "
                    "`resharpen figs --only fig_not_drawn_anywhere`")
