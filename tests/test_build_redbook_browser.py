"""The app on a corpus built from the real Red Book samples, in Debian's chromium: a TIFF page is uploaded
as the query, and every result tile, every example and the query drawing itself render as images.

The screenshot goes to ``test-artifacts/redbook-drawing-search.png``.

Tests: patent_demo/data/build.py, app.py
"""

from __future__ import annotations

import pytest

from patent_demo.data.build import build_corpus
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import live_app, require_shared
from tests.support.browser import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def redbook_app(tmp_path_factory):
    src = require_shared("impact_design_patent_samples") / "patents"
    tmp = tmp_path_factory.mktemp("redbook")
    build_corpus("redbook", src, tmp / "corpus", progress=False)
    config = WorkbenchConfig(cache_dir=tmp / "cache", corpus=tmp / "corpus", checkpoint_dirs=())
    wb = Workbench(config, progress=False)
    wb.warm_up()
    from patent_demo.labels.store import LabelStore

    store = LabelStore(tmp / "labels.sqlite")
    with live_app(wb, store) as url:
        yield url, wb, src
    store.close()


def _all_rendered(page, selector: str) -> list[int]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.complete ? e.naturalWidth : 0)")


def test_tiff_query_and_every_result_render(browser, redbook_app):
    url, wb, src = redbook_app
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    header = page.locator("#header").inner_text()
    assert "USPTO Red Book" in header and "20 patents" in header and "locarno" in header
    query = src / "USD0913174-20210316" / "USD0913174-20210316-D00002.TIF"
    page.locator("#d-file input[type=file]").set_input_files(str(query))
    page.locator("#d-query img").wait_for(timeout=20_000)
    page.locator("#d-search").click()
    page.locator("#d-gallery img").nth(9).wait_for(timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#d-gallery img, #d-query img, #d-examples img')]"
        ".every(i => i.complete)",
        timeout=20_000,
    )
    assert page.locator("#d-gallery .thumbnail-lg").count() == 10  # k = 10 results
    results = _all_rendered(page, "#d-gallery img")  # the tiles and the preview of the current hit
    assert len(results) >= 10 and all(w > 0 for w in results), results
    assert all(w > 0 for w in _all_rendered(page, "#d-query img"))
    examples = _all_rendered(page, "#d-examples img")
    assert examples and all(w > 0 for w in examples), examples
    srcs = page.eval_on_selector_all("#d-gallery img", "els => els.map(e => e.src)")
    assert not any(s.lower().endswith((".tif", ".tiff")) for s in srcs)
    status = page.locator("#d-status").inner_text()
    assert status.startswith("10 results with zero-shot")
    captions = page.locator("#d-gallery .caption-label").all_inner_texts()
    assert len(captions) >= 10 and not any(c.endswith("…") for c in captions)
    clipped = page.eval_on_selector_all(
        "#d-gallery .caption-label", "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).length"
    )
    assert clipped == 0  # every caption shown whole (wrapped, not cut with an ellipsis)
    assert not any("USD0913174" in c for c in captions)  # the page's own patent is left out (the default)
    page.screenshot(path=str(ARTIFACTS / "redbook-drawing-search.png"), full_page=True)
    page.close()
