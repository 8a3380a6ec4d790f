"""The workbench in Debian's chromium through Playwright: drawing search, text search, keyboard labels.

Screenshots go to ``test-artifacts/`` (1366x768 and 400 px phone width). Without /usr/bin/chromium the
tests skip with a message, except under ``CI=true`` where they fail.

Tests: app.py, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import sqlite3
import time

import pytest

from patent_demo.request import DrawingRequest, TextRequest
from tests.support.browser import ARTIFACTS, untick_exclusions

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _wait_rows(conn: sqlite3.Connection, n: int, timeout: float = 10.0) -> list:
    end = time.time() + timeout
    while True:
        rows = conn.execute(
            "SELECT candidate_id, list_name, rank, label, annotator FROM labels WHERE undone = 0 ORDER BY id"
        ).fetchall()
        if len(rows) >= n or time.time() > end:
            return rows
        time.sleep(0.2)


def test_drawing_search_and_keyboard_labels(browser, server):
    url, wb, store = server
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("browser")
    untick_exclusions(page)
    query = wb.corpus.image_path(wb.corpus["D0002"].figures[0])
    page.locator("#d-file input[type=file]").set_input_files(str(query))
    page.wait_for_timeout(500)
    page.locator("#d-search").click()
    page.locator("#d-gallery img").nth(9).wait_for(timeout=20_000)
    # k = 10 (the default), one per patent, as a grid
    assert page.locator("#d-gallery .thumbnail-lg").count() == 10
    assert "in the query's subclass 06-03" in page.locator("#d-status").inner_text()
    # the events chained after the search (the cursor, the label panel) finish: no output is left pending (faded)
    page.wait_for_function("document.querySelectorAll('.pending').length === 0", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "drawing-1366.png"), full_page=True)

    before = store.count()
    page.locator("#d-status").click()  # focus outside any text field
    page.keyboard.press("1")
    page.locator("#l-status").get_by_text("✓ relevant").wait_for(timeout=10_000)
    page.keyboard.press("3")
    page.locator("#l-status").get_by_text("✓ not").wait_for(timeout=10_000)
    conn = sqlite3.connect(store.path)
    rows = _wait_rows(conn, before + 2)
    expected = wb.search_drawing(DrawingRequest.build(wb, query, "zero-shot", 10))
    assert rows[-2:] == [
        ("D0002", "hmcl", 1, "relevant", "browser"),
        (expected.hits[1].patent_id, "hmcl", 2, "not", "browser"),
    ]
    page.keyboard.press("u")
    page.locator("#l-status").get_by_text("↶ undid not").wait_for(timeout=10_000)
    assert store.count() == before + 1
    page.screenshot(path=str(ARTIFACTS / "labels-1366.png"), full_page=True)
    page.close()


def test_text_search_shows_two_lists(browser, server):
    url, wb, _ = server
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(url)
    untick_exclusions(page)
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill("lamp with a shade and bulb")
    page.locator("#t-search").click()
    page.locator("#t-status").get_by_text("re-ranked").wait_for(timeout=20_000)
    lists = wb.search_text(TextRequest.build("lamp with a shade and bulb", k=10)).lists
    bm25, dss = lists["bm25"], lists["dssdnet"]
    for name, elem, res in (
        ("bm25", "#t-bm25", bm25),
        ("dssdnet", "#t-dss", dss),
    ):  # one list shown at a time
        page.locator("#t-show").get_by_text(name, exact=True).click()
        page.locator(elem).get_by_text(res.ids[-1], exact=True).last.wait_for(timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "text-1366.png"), full_page=True)
    page.set_viewport_size({"width": 400, "height": 800})
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / "text-400.png"), full_page=True)
    page.close()
