"""The verdict pages and the README's generated parts are what the records give: a stale page
or block fails here (regenerate with ``python -m resharpen.verdicts --write`` and
``python -m resharpen.front_page --write``)."""
from __future__ import annotations

import pytest

from resharpen import front_page, verdicts
from resharpen.experiments.ledger.declarations import all_declarations


def test_the_committed_pages_are_current():
    for name, text in verdicts.pages().items():
        path = verdicts.PAGES / name
        assert path.is_file() and path.read_text() == text, (
            f"docs/verdicts/{name} is stale: run `python -m resharpen.verdicts --write`")


def test_the_readme_and_the_run_times_page_are_current():
    text = front_page.README.read_text()
    assert front_page.render(text) == text, "run `python -m resharpen.front_page --write`"
    assert front_page.RUN_TIMES_PAGE.read_text() == front_page.run_times_page()


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


def test_a_claim_of_no_paper_is_refused():
    with pytest.raises(ValueError, match="belongs to no paper"):
        verdicts.paper_of("nothing.here")
