"""Refine with my labels in Debian's chromium (1366 x 900) on the Red Book corpus built with the CLI: a
single page searched, three hits labelled by mouse, refined by mouse and by the key ``r``; the labelled hits
stay on top with their badges, the status line counts the labels, and a label made after refining is
stored under the original query with the hit shown at that rank. Then a sheet's figures and a whole
application, each labelled and refined.

The screenshot after refining goes to ``test-artifacts/refine-1366.png``.

Tests: patent_demo/ui/refine.py, patent_demo/ui/tabs_search.py, patent_demo/ui/serve.py
"""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest

from patent_demo.labels.store import LabelStore, image_query_id
from patent_demo.ui.views import BADGES
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import live_app
from tests.support.browser import ARTIFACTS, untick_own_date, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CAPTION = re.compile(r"#(\d+) (\S+) · ")


@pytest.fixture(scope="module")
def redbook_live(redbook_cli, tmp_path_factory):
    corpus, cache, src = redbook_cli
    wb = Workbench(WorkbenchConfig(cache_dir=cache, corpus=corpus, checkpoint_dirs=()), progress=False)
    wb.warm_up(text=False)
    store = LabelStore(tmp_path_factory.mktemp("refine-browser") / "labels.sqlite")
    with live_app(wb, store, store=store) as url:
        yield url, wb, store, src
    store.close()


def _open(browser, url):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("examiner")
    untick_own_date(
        page
    )  # one week of Red Book grants: a cut-off at a query's filing date leaves fewer than ten
    return page


def _settled(page) -> None:
    page.wait_for_function("document.querySelectorAll('.pending').length === 0", timeout=60_000)


def _tiles(page) -> list[tuple[str, str]]:
    """(patent, caption) of every result tile, in rank order."""
    captions = page.locator("#d-gallery .caption-label").all_inner_texts()
    return [(CAPTION.match(c).group(2), c) for c in captions]


def _status(page, text: str) -> str:
    wait_text(page, "#d-status", text, 60_000)
    _settled(page)
    return page.locator("#d-status").inner_text()


def _label_tile(page, rank: int, button: str, grade: str) -> None:
    """Click tile ``rank`` (the cursor moves to it), then the label button; wait for the label's line."""
    page.locator("#d-gallery .thumbnail-item").nth(rank - 1).click()
    wait_text(page, "#l-cursor", f"hmcl #{rank}")
    _settled(page)
    page.locator(button).click()
    page.locator("#l-status").get_by_text(re.compile(rf"✓ {grade} · \S+ \(hmcl #{rank}\)")).wait_for(
        timeout=30_000
    )
    _settled(page)


def _badge(caption: str) -> str:
    return next((g for g, b in BADGES.items() if caption.endswith(b)), "")


def test_refine_a_page_by_mouse_and_by_key_and_label_after_refining(browser, redbook_live):
    url, wb, store, src = redbook_live
    query = next(src.glob("USD0913174-*/*-D00002.TIF"))
    page = _open(browser, url)
    page.locator("#d-file input[type=file]").set_input_files(str(query))
    page.locator("#d-query img").wait_for(timeout=30_000)
    page.locator("#d-search").click()
    _status(page, "10 results with zero-shot")
    shown = [p for p, _ in _tiles(page)]
    assert len(shown) == 10
    page.locator("#d-refine").click()  # no label yet: a message, and the list stays
    assert "Refine needs a label first" in _status(page, "Refine needs a label first")
    assert [p for p, _ in _tiles(page)] == shown

    _label_tile(page, 2, "#lbl-rel", "relevant")
    _label_tile(page, 3, "#lbl-not", "not")
    _label_tile(page, 5, "#lbl-rel", "relevant")
    page.locator("#d-refine").click()  # by mouse
    status = _status(page, "Refined with 3 labels")
    assert status.startswith("↻ Refined with 3 labels of examiner on this query (2 relevant, 1 not)"), status
    assert "among the unlabelled, ranked among themselves: " in status
    tiles = _tiles(page)
    labelled = [shown[1], shown[2], shown[4]]
    assert [p for p, _ in tiles[:3]] == labelled
    assert [_badge(c) for _, c in tiles] == ["relevant", "not", "relevant"] + [""] * (len(tiles) - 3)
    assert len(tiles) == 13  # the labelled three on top, then k = 10 others ranked again
    page.screenshot(path=str(ARTIFACTS / "refine-1366.png"))

    # the cursor is on the first unlabelled hit: a label there files against the original query
    wait_text(page, "#l-cursor", "hmcl #4")
    page.locator("#lbl-part").click()
    wait_text(page, "#l-status", f"✓ partly · {tiles[3][0]} (hmcl #4)")
    _settled(page)
    rows = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT query_id, candidate_id, list_name, rank, label FROM labels WHERE undone = 0 ORDER BY id"
        )
        .fetchall()
    )
    original = image_query_id(hashlib.sha256(query.read_bytes()).hexdigest())
    assert {r[0] for r in rows} == {original} and len(rows) == 4
    assert rows[-1] == (original, tiles[3][0], "hmcl", 4, "partly")

    page.locator("#d-status").click()  # focus outside any text field, then the key
    page.keyboard.press("r")
    status = _status(page, "Refined with 4 labels")
    assert status.startswith("↻ Refined with 4 labels of examiner on this query (3 relevant, 1 not)"), status
    tiles = _tiles(page)
    assert [p for p, _ in tiles[:4]] == [*labelled, rows[-1][1]]
    assert [_badge(c) for _, c in tiles[:5]] == ["relevant", "not", "relevant", "partly", ""]
    page.get_by_role("tab", name="Text search").click()  # no Refine for text, and the page says why
    assert "not for text: " in page.locator("#t-feedback").inner_text()
    page.get_by_role("tab", name="Training").click()
    wait_text(page, "#tr-summary", "Labels used now", 60_000)
    assert "4 labels by 2 refines in this server run" in page.locator("#tr-summary").inner_text()
    page.close()


def test_refine_a_sheets_figures_and_an_application(browser, redbook_live):
    from patent_demo.drawing.sheets import split_sheet
    from patent_demo.imageio import load_drawing

    url, wb, store, src = redbook_live
    sheet = next(
        f
        for d in sorted(src.iterdir())
        for f in sorted(d.glob("*.TIF"))
        if len(split_sheet(load_drawing(f.read_bytes(), crop=False, square=False))) >= 2
    )
    page = _open(browser, url)
    page.locator("#d-file input[type=file]").set_input_files(str(sheet))
    page.locator("#d-query img").wait_for(timeout=30_000)
    page.locator("#d-sheet").click()
    _status(page, "figure(s) on the sheet")
    shown = [p for p, _ in _tiles(page)]
    _label_tile(page, 2, "#lbl-rel", "relevant")
    page.locator("#d-status").click()
    page.keyboard.press("r")
    status = _status(page, "Refined with 1 label")
    assert status.startswith("↻ Refined with 1 label of examiner on this query (1 relevant)"), status
    tiles = _tiles(page)
    assert tiles[0][0] == shown[1] and _badge(tiles[0][1]) == "relevant" and "matched by" in tiles[1][1]

    views = sorted(sheet.parent.glob("*.TIF"))[:3]
    page.locator("#d-views input[type=file]").set_input_files([str(v) for v in views])
    page.wait_for_timeout(1000)
    page.locator("#d-application").click()
    _status(page, "patents for an application of 3 views")
    shown = [p for p, _ in _tiles(page)]
    _label_tile(page, 1, "#lbl-not", "not")
    page.locator("#d-refine").click()
    status = _status(page, "Refined with 1 label")
    assert status.startswith("↻ Refined with 1 label of examiner on this query (1 not)"), status
    tiles = _tiles(page)
    assert tiles[0][0] == shown[0] and _badge(tiles[0][1]) == "not"
    assert all("all views" in c for _, c in tiles)
    page.close()
