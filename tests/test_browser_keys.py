"""Keys as fast as an examiner types, and panels that belong to the search on screen, on the 20 real Red Book
patents (their TIFF pages) built with the project's CLI, served by the real app and driven in Debian's
chromium at 1366 × 900:

* ten label keys (``1`` / ``2`` / ``3``, auto-advance on) pressed 100 ms apart after a drawing search, then
  ten 20 ms apart after another: every label in the database is the key's grade on the hit shown at that
  rank (ten labels, ten distinct hits), none dropped, none doubled;
* a new search clears the record, side-by-side and explanation panels of the hit opened before it;
* a label of a sheet search stores the figure of the sheet that was the query (its name and box), and the
  export carries it: the box cut from the kept query drawing is that figure;
* side by side of a whole-application hit shows the application's views, not the last single drawing.

Screenshots go to ``test-artifacts/keys-*.png``.

Tests: patent_demo/ui/keys.py, patent_demo/ui/panel.py, patent_demo/ui/events.py, patent_demo/labels/sessions.py
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import time

import numpy as np
import pytest
from PIL import Image

from patent_demo.cli.main import main as cli
from patent_demo.labels.store import LabelStore
from patent_demo.ui.tabs_search import TEXT_IDS
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import live_app, require_shared
from tests.support.browser import ARTIFACTS, untick_own_date, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PAGE_A = "USD0913174-20210316"  # a single-drawing query
PAGE_B = "USD0919445-20210518"  # another
APP_B = "USD0907292-20210105"  # the application: six of its pages
GRADES = {"1": "relevant", "2": "partly", "3": "not"}
KEYS = "1231231231"


@pytest.fixture(scope="module")
def red(tmp_path_factory):
    """(url, workbench, store, source folder) of the app on the Red Book corpus built with ``patent-demo``."""
    src = require_shared("impact_design_patent_samples") / "patents"
    tmp = tmp_path_factory.mktemp("keys-red")
    out = tmp / "corpus"
    assert cli(["corpus", "build", "--source", "redbook", "--out", str(out), str(src), "--quiet"]) == 0
    wb = Workbench(WorkbenchConfig(cache_dir=tmp / "cache", corpus=out, checkpoint_dirs=()), progress=False)
    wb.warm_up()
    store = LabelStore(tmp / "labels.sqlite")
    with live_app(wb, store) as url:
        yield url, wb, store, src
    store.close()


def _page(browser, url, name):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill(name)
    untick_own_date(
        page
    )  # one week of Red Book grants: a cut-off at a query's filing date leaves fewer than ten
    return page


def _quiet(page) -> None:
    """Wait until no component shows an update in flight."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=status-tracker]')]"
        ".every(t => t.classList.contains('hide') || !t.innerText.includes('processing'))",
        timeout=60_000,
    )


def _settled(page, n: int = 10) -> None:
    """The gallery's ``n`` drawings decoded, nothing in flight."""
    page.wait_for_function(
        "n => { const imgs = [...document.querySelectorAll('#d-gallery .thumbnail-item img')];"
        " return imgs.length === n && imgs.every(i => i.complete && i.naturalWidth > 0); }",
        arg=n,
        timeout=60_000,
    )
    _quiet(page)


def _upload(page, path) -> None:
    """``path`` in the query box (the drawing there before cleared first), its preview shown."""
    clear = page.locator("#d-file button[aria-label='Clear']")
    if clear.count():
        clear.click()
        page.wait_for_function("() => !document.querySelector('#d-query img')", timeout=20_000)
    page.locator("#d-file input[type=file]").set_input_files(str(path))
    page.locator("#d-query img").wait_for(timeout=20_000)


def _drawing_search(page, path) -> None:
    _upload(page, path)
    page.locator("#d-search").click()
    wait_text(page, "#d-status", "results with", 120_000)
    _settled(page)


def _tiles(page) -> list[str]:
    """The patent of each tile of the grid, in rank order (``#rank id · ...`` captions)."""
    return [c.split()[1] for c in page.locator("#d-gallery .caption-label").all_inner_texts()]


def _rows(store, annotator: str, *cols: str) -> list[tuple]:
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(
            f"SELECT {', '.join(cols)} FROM labels WHERE undone = 0 AND annotator = ? ORDER BY id",
            (annotator,),
        ).fetchall()
    finally:
        conn.close()


def _drained(page, within_ms: int = 180_000) -> None:
    """Wait until the page's key queue has sent every key and has every answer back."""
    page.wait_for_function("() => !window.patentKeys || window.patentKeys.pending() === 0", timeout=within_ms)


def _type(page, keys: str, gap_ms: int) -> None:
    page.locator("#d-status").click()  # keys act outside text fields
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(gap_ms)


def _wait_labels(store, annotator: str, query_id: str, n: int, within: float = 180) -> list[tuple]:
    """The annotator's labels of ``query_id`` once ``n`` are stored (or ``within`` seconds passed)."""
    end = time.monotonic() + within
    while True:
        rows = [
            r
            for r in _rows(store, annotator, "query_id", "rank", "candidate_id", "label")
            if r[0] == query_id
        ]
        if len(rows) >= n or time.monotonic() > end:
            return [r[1:] for r in rows]
        time.sleep(0.5)


def _last_query(store, annotator: str) -> str:
    rows = _rows(store, annotator, "query_id")
    return rows[-1][0] if rows else ""


@pytest.mark.parametrize("gap_ms", [100, 20])
def test_fast_keys_land_on_the_hits_meant(browser, red, gap_ms):
    """Ten label keys with auto-advance on, ``gap_ms`` apart, right after a drawing search: ten labels, each
    the pressed key's grade on the hit shown at that rank, ten distinct hits; the queue empties."""
    url, wb, store, src = red
    who = f"keys-{gap_ms}"
    page = _page(browser, url, who)
    query = PAGE_A if gap_ms == 100 else PAGE_B
    _drawing_search(page, src / query / f"{query}-D00002.TIF")
    tiles = _tiles(page)
    assert len(tiles) == 10 and len(set(tiles)) == 10, tiles
    assert page.locator("#l-auto input").is_checked()
    _type(page, KEYS, gap_ms)
    _drained(page)
    rows = _wait_labels(store, who, _last_query(store, who), 10, within=30)
    expected = [(r, tiles[r - 1], GRADES[k]) for r, k in enumerate(KEYS, 1)]
    assert rows == expected
    assert len({c for _, c, _ in rows}) == 10
    wait_text(page, "#l-status", "(hmcl #10)")
    wait_text(page, "#l-cursor", "✓ relevant")  # the badge of the last label
    _quiet(page)
    page.locator("#label-panel").first.screenshot(path=str(ARTIFACTS / f"keys-panel-{gap_ms}ms.png"))
    page.screenshot(path=str(ARTIFACTS / f"keys-page-{gap_ms}ms.png"), full_page=True)
    assert page.locator("#l-queue").inner_text().strip() == ""
    assert "hmcl #10" in page.locator("#l-cursor").inner_text()
    page.close()


def test_keys_pressed_before_a_new_search_do_not_land_on_its_hits(browser, red):
    """Keys pressed just before a new search, still waiting in the queue while it runs, were meant for the
    hits on screen then: none lands on the new search's hits (each went to the first search's hit or was
    refused), and a key after it labels the new search's first hit."""
    url, wb, store, src = red
    who = "keys-new-search"
    page = _page(browser, url, who)
    _drawing_search(page, src / PAGE_A / f"{PAGE_A}-D00003.TIF")
    first = _tiles(page)
    _upload(page, src / PAGE_B / f"{PAGE_B}-D00003.TIF")
    _type(page, "111", 20)  # meant for the first search's hits, then the new search at once
    page.locator("#d-search").click()
    page.wait_for_function(
        "t => { const c = document.querySelector('#d-gallery .caption-label'); return c && !c.innerText.includes(t); }",
        arg=first[0],
        timeout=120_000,
    )
    _settled(page)
    _drained(page)
    early = _rows(store, who, "query_id", "candidate_id", "rank")
    assert len(early) <= 3 and all(c == first[r - 1] for _, c, r in early), (early, first, _tiles(page))
    second = _tiles(page)
    _type(page, "2", 0)
    wait_text(page, "#l-status", f"✓ partly · {second[0]} (hmcl #1)", 60_000)
    _drained(page)
    rows = _rows(store, who, "query_id", "candidate_id", "rank", "label")
    new_query = rows[-1][0]
    assert rows[-1][1:] == (second[0], 1, "partly")
    assert [r for r in rows if r[0] == new_query] == [rows[-1]]  # the early keys: none on the new hits
    page.close()


def _image(page, selector: str) -> np.ndarray:
    """The pixels (grayscale) of the image a component shows, fetched as the browser fetched it."""
    src = page.locator(f"{selector} img").first.get_attribute("src")
    body = page.request.get(src).body()
    return np.asarray(Image.open(io.BytesIO(body)).convert("L"), dtype=np.float32)


def test_a_new_search_clears_the_panels_of_the_hit_opened_before(browser, red):
    """A text search, a hit clicked: its record, the text comparison and its explanation are shown. A drawing
    search after it, a tile clicked: its record and drawing pair. Then another drawing search: the record,
    side-by-side and explanation panels no longer show either hit."""
    url, wb, store, src = red
    page = _page(browser, url, "panels")
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill("a bottle for dispensing liquid soap with a pump")
    page.locator("#t-search").click()
    wait_text(page, "#t-status", "re-ranked the hybrid top", 240_000)
    _quiet(page)
    cursor = page.locator("#l-cursor")
    cursor.get_by_text(" #1 · ").wait_for(timeout=30_000)
    # the list the cursor starts on, the one shown
    shown = re.search(r"\b(bm25|dense|hybrid|dssdnet|fused) #1 · ", cursor.inner_text()).group(1)
    table = page.locator(f"#{TEXT_IDS[shown]}")
    hit = list(dict.fromkeys(re.findall(r"\bUSD\d{7}\b", table.inner_text())))[1]
    table.get_by_text(hit, exact=True).last.click()
    cursor.get_by_text(f"{shown} #2 · {hit}").wait_for(timeout=30_000)
    _quiet(page)
    page.get_by_role("tab", name="Document").click()
    wait_text(page, "#doc-html h3", hit)
    page.get_by_role("tab", name="Side by side").click()
    assert hit in page.locator("#sbs-tc").inner_text()
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-why").get_by_text("Why the cursor hit").click()
    page.locator("#t-explain").get_by_text(hit).first.wait_for(timeout=30_000)
    page.get_by_role("tab", name="Drawing search").click()
    _drawing_search(page, src / PAGE_A / f"{PAGE_A}-D00002.TIF")
    tiles = _tiles(page)
    page.locator("#d-gallery .thumbnail-item").nth(2).click()
    wait_text(page, "#l-cursor", f"hmcl #3 · {tiles[2]}")
    page.get_by_role("tab", name="Side by side").click()
    page.locator("#sbs-md").get_by_text(tiles[2]).wait_for(timeout=30_000)
    assert page.locator("#sbs-tq").inner_text().strip() == ""  # the drawing search cleared the text pair
    assert page.locator("#sbs-query img").count() == 1
    page.get_by_role("tab", name="Drawing search").click()
    _drawing_search(page, src / PAGE_B / f"{PAGE_B}-D00002.TIF")
    page.get_by_role("tab", name="Document").click()
    wait_text(page, "#doc-html", "Select a hit in a result list")
    assert tiles[2] not in page.locator("#doc-html").inner_text()
    assert page.locator("#doc-id textarea, #doc-id input").first.input_value() == ""
    page.get_by_role("tab", name="Side by side").click()
    wait_text(page, "#sbs-md", "Select a drawing hit")
    assert page.locator("#sbs-query img, #sbs-hit img").count() == 0
    page.get_by_role("tab", name="Text search").click()
    assert hit not in page.locator("#t-explain").inner_text()
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "keys-panels-cleared.png"), full_page=True)
    page.close()


def test_sheet_search_labels_keep_the_query_figure(browser, red, tmp_path):
    """A page split into figures and searched: a key labels the hit under the cursor with the figure of the
    sheet that matched it (its name and box); the HMCL export carries it, and the box cut from the kept
    query drawing holds that figure's ink."""
    url, wb, store, src = red
    who = "keys-sheet"
    page = _page(browser, url, who)
    _upload(page, src / APP_B / f"{APP_B}-D00001.TIF")
    page.locator("#d-sheet").click()
    wait_text(page, "#d-status", "figure(s) on the sheet", 120_000)
    _settled(page)
    table = page.locator("#d-table").inner_text()
    _type(page, "1", 0)
    wait_text(page, "#l-status", "(hmcl #1)", 60_000)
    ((figure_json, image_file, candidate),) = _rows(
        store, who, "query_figure", "query_image_file", "candidate_id"
    )
    figure = json.loads(figure_json)
    assert figure["name"] and f"matched by {figure['name']}" in table, (figure, table[:500])
    assert candidate == _tiles(page)[0]
    kept = Image.open(store.path.parent / image_file).convert("L")
    left, top, right, bottom = figure["box"]
    assert 0 <= left < right <= kept.width and 0 <= top < bottom <= kept.height
    assert np.asarray(kept.crop(figure["box"])).min() < 128  # the figure's ink
    out = store.export_all(tmp_path / "exports")
    rows = [json.loads(x) for x in out["hmcl.jsonl"][0].read_text().splitlines()]
    (row,) = [r for r in rows if r["anchor"]["image_file"] == image_file]
    assert row["positives"][0]["query_figure"] == figure
    page.close()


def test_side_by_side_of_an_application_hit_shows_its_views(browser, red):
    """A single drawing searched, then six views of another patent as a whole application: side by side of
    an application hit shows the application's views (the sheet the search kept), not the single drawing."""
    from patent_demo.drawing.application import views_sheet
    from patent_demo.imageio import load_drawing

    url, wb, store, src = red
    page = _page(browser, url, "keys-app")
    single = src / PAGE_A / f"{PAGE_A}-D00002.TIF"
    _drawing_search(page, single)
    views = [src / APP_B / f"{APP_B}-D0000{i}.TIF" for i in range(1, 7)]
    page.locator("#d-views input[type=file]").set_input_files([str(v) for v in views])
    wait_text(page, "#d-views", f"{APP_B}-D00006")
    page.locator("#d-application").click()
    wait_text(page, "#d-status", "patents for an application of 6 views", 180_000)
    _settled(page)
    tiles = _tiles(page)
    page.locator("#d-gallery .thumbnail-item").nth(1).click()
    wait_text(page, "#l-cursor", f"hmcl #2 · {tiles[1]}")
    page.get_by_role("tab", name="Side by side").click()
    md = page.locator("#sbs-md")
    md.get_by_text(tiles[1]).wait_for(timeout=30_000)
    assert "application's views" in md.inner_text(), md.inner_text()
    shown = _image(page, "#sbs-query")
    sheet = views_sheet([v.read_bytes() for v in views])
    as_views = np.asarray(load_drawing(sheet, crop=True, square=True, size=shown.shape[0]), dtype=np.float32)
    as_single = np.asarray(
        load_drawing(str(single), crop=True, square=True, size=shown.shape[0]), dtype=np.float32
    )
    assert np.abs(shown - as_views).mean() < 2.0 < np.abs(shown - as_single).mean()
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "keys-application-sbs.png"), full_page=True)
    page.close()
