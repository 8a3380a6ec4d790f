"""The examiner's tools in chromium on a real corpus: the 20 Red Book design patents (106 drawing
pages, real dates and Locarno codes) plus the 419 grant XML records (text), searched with the
zero-shot drawing encoder and the default re-ranker. Prior-art cut-off and class filter, the whole
record of a hit, side by side, a drawing sheet split into figures, highlighted text rows, and the
search report. Screenshots go to ``test-artifacts/examiner-*.png``.

Tests: patent_demo/ui/examiner.py, patent_demo/examiner.py
"""

from __future__ import annotations

import time

import pytest

from patent_demo import prior_art
from patent_demo.data.corpus import merge
from patent_demo.filters import prior_art_date
from patent_demo.labels.store import LabelStore
from patent_demo.request import TextRequest
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import REPO_ROOT, live_app, require_shared
from tests.support.browser import ARTIFACTS, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """(url, workbench, store) serving the real corpus."""
    from patent_demo.data.loaders.deeppatent2 import load_deeppatent2_names
    from patent_demo.data.loaders.uspto import load_grant_xml, load_redbook

    shared = require_shared()
    red = load_redbook(shared / "impact_design_patent_samples" / "patents")
    dp2_root = shared / "deeppatent2_techdrawfinder_samples"
    dp2 = load_deeppatent2_names(sorted(p.name for p in (dp2_root / "images").glob("*.png")))
    xml = load_grant_xml(shared / "uspto_grant_xml_samples" / "xml")
    for c, prefix in (
        (red, "impact_design_patent_samples/patents/"),
        (dp2, "deeppatent2_techdrawfinder_samples/images/"),
    ):
        for p in c:
            for f in p.figures:
                f.path = prefix + f.path
    corpus = merge([red, dp2, xml], shared, name="redbook+deeppatent2+grants")
    corpus.validate()
    tmp = tmp_path_factory.mktemp("real")
    config = WorkbenchConfig(cache_dir=tmp / "cache", checkpoint_dirs=(REPO_ROOT / "checkpoints",))
    wb = Workbench(config, corpus=corpus, progress=False)
    wb.warm_up()
    store = LabelStore(tmp / "labels" / "labels.sqlite")
    with live_app(wb, store) as url:
        yield url, wb, store
    store.close()


def _open(browser, url, width=1366):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("examiner")
    return page


def _gallery_ids(page, n: int, timeout: float = 20.0) -> set[str]:
    """The patent ids the result gallery's captions show, once there are ``n`` of them (a selected hit
    adds preview images, so images are not counted)."""
    end = time.time() + timeout
    while True:
        text = page.locator("#d-gallery").inner_text().replace("#", " ")
        ids = {w for w in text.split() if w.startswith("USD") and w[3:].isdigit()}
        if len(ids) == n or time.time() > end:
            return ids
        time.sleep(0.3)


def _fill(page, elem: str, value: str) -> None:
    page.locator(f"{elem} textarea, {elem} input").first.fill(value)


def test_drawing_cutoff_class_document_and_side_by_side(browser, real):
    url, wb, _ = real
    drawn = set(wb.index("zero-shot").patent_ids)
    page = _open(browser, url)
    page.locator("#filters").get_by_text("Search filters").click()
    # 1. the query patent's own date: USD0919623 (a 2021 grant filed 2020-01-03) -> only its prior art: the
    # drawings published before that date, and the Red Book grants filed before it (published 2021: "E")
    query = wb.corpus["USD0919623"]
    cutoff = prior_art_date(query)
    own = page.locator("#f-own input")  # ticked on load, in sight above the filter panel: nothing to do
    page.wait_for_function("e => e.checked", arg=own.element_handle(), timeout=20_000)
    page.locator("#d-file input[type=file]").set_input_files(str(wb.corpus.image_path(query.figures[0])))
    page.wait_for_timeout(800)
    page.locator("#d-search").click()
    status = page.locator("#d-status")
    status.get_by_text("patents with drawings searched").wait_for(timeout=60_000)
    text = status.inner_text()
    assert f"cut-off {cutoff}: the filing date of the query patent USD0919623" in text

    def filed(p):
        return min([d for d in (p.priority_date, p.filing_date) if d] or ["9"])

    allowed = {
        p for p in drawn if wb.corpus[p].date and wb.corpus[p].date < cutoff or filed(wb.corpus[p]) < cutoff
    }
    earlier = {p for p in allowed if not (wb.corpus[p].date and wb.corpus[p].date < cutoff)}
    assert earlier and f"{len(allowed)} of {len(drawn)} patents with drawings searched" in text
    ids = _gallery_ids(page, 10)
    assert len(ids) == min(10, len(allowed)) == 10 and ids <= allowed and "USD0919623" not in ids
    shown_e = (
        ids & earlier
    )  # the earlier applications among the hits: badged E in the table, counted in the status
    assert shown_e, "the top 10 holds no earlier application"
    table = page.locator("#d-table").inner_text().replace("\u00a0", " ")  # E after its date (no break)
    assert table.count(" · E") == len(shown_e) and all(f"{wb.corpus[p].date} · E" in table for p in shown_e)
    assert "earlier application" in status.inner_text()
    page.screenshot(path=str(ARTIFACTS / "examiner-drawing-own-cutoff.png"), full_page=True)

    # 2. a typed cut-off and a Locarno class: the grants of class 14 published before 2021-03-20 (3) and
    # those published after it but filed before it (USD0919622, USD0919623: earlier applications)
    page.locator("#f-own input").uncheck()
    _fill(page, "#f-before", "2021-03-20")
    _fill(page, "#f-class", "14")
    page.locator("#d-search").click()
    page.wait_for_timeout(500)
    want = {
        p
        for p in drawn
        if (wb.corpus[p].date < "2021-03-20" or filed(wb.corpus[p]) < "2021-03-20")
        and wb.corpus[p].locarno.startswith("14")
    }
    status.get_by_text(f"{len(want)} of {len(drawn)} patents with drawings searched").wait_for(timeout=60_000)
    assert len(want) == 5  # searched; the query's own patent USD0919623 is then left out of the hits
    assert _gallery_ids(page, 4) == want - {"USD0919623"}
    page.screenshot(path=str(ARTIFACTS / "examiner-drawing-cutoff-class.png"), full_page=True)
    _fill(page, "#f-before", "")
    _fill(page, "#f-class", "")

    # without the filters: the query patent itself comes first; open its record and the side by side
    page.locator("#d-search").click()
    wait_text(page, "#d-status", "in the query's subclass 14-02", 60_000)
    page.wait_for_timeout(500)
    page.get_by_role("tab", name="Document").click()
    doc = page.locator("#doc-html")
    # a record opens by id (selecting a hit opens it too: tests/test_examiner.py drives that handler)
    _fill(page, "#doc-id", "USD0919623")
    page.locator("#doc-open").click()
    doc.locator("tr", has_text="Application (filing) date").get_by_text("2020-01-03").wait_for(timeout=20_000)
    # the Red Book TIFF pages are shown through PNG copies the browser can decode
    page.wait_for_function(
        "() => [...document.querySelectorAll('#doc-gallery img')].every(i => i.complete && i.naturalWidth > 0)",
        timeout=20_000,
    )
    page.screenshot(path=str(ARTIFACTS / "examiner-document.png"), full_page=True)
    page.close()


def test_sheet_split_and_search(browser, real):
    url, wb, _ = real
    sheet = require_shared("deeppatent2_segmentor_samples") / "images" / "USD0871728-20200107-D00001.png"
    page = _open(browser, url)
    page.locator("#d-file input[type=file]").set_input_files(str(sheet))
    page.wait_for_timeout(800)
    page.locator("#d-sheet").click()
    wait_text(page, "#d-status", "figure(s) on the sheet", 60_000)
    assert page.locator("#d-status").inner_text().startswith("3 figure(s) on the sheet")
    page.locator("#d-sheet-img img").wait_for(timeout=10_000)
    assert page.get_by_text("matched by figure").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "examiner-sheet.png"), full_page=True)
    page.close()


def test_text_filter_snippets_compare_and_report(browser, real):
    url, wb, store = real
    query = "a heat exchanger cooling a processor of an information handling system"
    page = _open(browser, url)
    page.locator("#filters").get_by_text("Search filters").click()
    _fill(page, "#f-before", "2010-01-01")
    page.get_by_role("tab", name="Text search").click()
    _fill(page, "#t-text", query)
    page.locator("#t-search").click()
    wait_text(page, "#t-status", "re-ranked", 120_000)  # every list is in
    page.locator("#t-show").get_by_text("bm25", exact=True).click()  # one list shown at a time
    page.locator("#t-bm25 mark").first.wait_for(state="attached", timeout=20_000)  # highlighted snippets
    bm25 = wb.search_text(
        TextRequest.build(query, k=10, filters={"before": "2010-01-01"}, lists=["bm25"], rerank=False)
    ).lists["bm25"]
    for pid in bm25.ids:  # prior art by the rule: published before, or filed before (an E document)
        p = wb.corpus[pid]
        assert p.date < "2010-01-01" or prior_art.effective_filing_date(p) < "2010-01-01"
    page.locator("#t-bm25").get_by_text(bm25.ids[0], exact=True).last.wait_for(timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "examiner-text.png"), full_page=True)

    page.locator("#t-bm25").get_by_text(bm25.ids[0], exact=True).last.click()
    page.locator("#t-status").click()
    page.keyboard.press("1")  # label it relevant
    wait_text(page, "#l-status", "✓ relevant", 10_000)
    page.get_by_role("tab", name="Side by side").click()
    page.locator("#sbs-tc mark").first.wait_for(timeout=20_000)
    page.screenshot(path=str(ARTIFACTS / "examiner-text-compare.png"), full_page=True)

    page.get_by_role("tab", name="Search report").click()
    page.locator("#r-refresh").click()
    page.wait_for_function(  # the refreshed list of labelled queries has reached the dropdown
        "() => (document.querySelector('#r-query input') || {}).value", timeout=30_000
    )
    page.locator("#r-make").click()
    wait_text(page, "#r-md", "in the report of")
    frame = page.frame_locator("#r-frame")
    # the preview renders the report (slow under load)
    frame.get_by_text(bm25.ids[0]).first.wait_for(timeout=30_000)
    assert page.locator("#r-files").get_by_text(".csv").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "examiner-report.png"), full_page=True)
    page.close()
