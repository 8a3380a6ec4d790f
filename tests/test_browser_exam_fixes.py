"""The examiner's screens on the real Red Book samples (US design patents of 2021, their TIFF pages), the
corpus built with the project's CLI, served by the real app and driven in Debian's chromium: what the user
sees and what lands in the label store.

* a whole-application search after a single-drawing search starts a labelling session of its own: its
  grid, table and cursor replace the drawing search's, the query's own patent is left out, and a label
  names the application and the hit the user clicked;
* splitting a page of a corpus patent into figures leaves that patent out and the search history says so;
* two design patents whose title and figure descriptions are the same boilerplate (separate applications,
  no related-application data) are two designs: the closest one is shown, and the record lists no family;
* "More like this: its text" on a record searches at once, the Text tab never opened before.

The corpus holds the 20 real patents; for the boilerplate case the XML of USD0917867 ("Shoe", application
29/702,227) is copied with its figure descriptions replaced by those of USD0917866 ("Shoe", application
29/736,329), so the two differ only in their drawings and bibliographic data, as USD0929297 and USD0929296
do. Screenshots go to ``test-artifacts/fixes-*.png``.

Tests: patent_demo/ui/handlers.py, patent_demo/ui/examiner.py, patent_demo/examiner.py, patent_demo/families.py
"""

from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from patent_demo.cli.main import main as cli
from patent_demo.labels.store import LabelStore
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import live_app, require_shared
from tests.support.browser import ARTIFACTS, untick_own_date, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PAGE_A = "USD0913174-20210316"  # the single-drawing query: one of its pages
APP_B = "USD0907292-20210105"  # the application: six of its eight pages
TWIN, OTHER_TWIN = "USD0917866", "USD0917867"  # the boilerplate twins ("Shoe")


def _boilerplate_twin(src, dest) -> None:
    """``dest``: the Red Book folders of ``src``, USD0917867's XML with USD0917866's figure descriptions."""
    shutil.copytree(src, dest)  # a temporary copy (about 3 MB): the build reads its source folders
    twin = next(src.glob(f"{TWIN}-*"))
    other = next(src.glob(f"{OTHER_TWIN}-*"))
    section = re.compile(r"<description-of-drawings>.*?</description-of-drawings>", re.S)
    words = section.search(next(twin.glob("*.XML")).read_text(encoding="utf-8")).group(0)
    xml = next((dest / other.name).glob("*.XML"))
    xml.write_text(section.sub(lambda _: words, xml.read_text(encoding="utf-8")), encoding="utf-8")


@pytest.fixture(scope="module")
def red(tmp_path_factory):
    """(url, workbench, store, source folder) of the app on the Red Book corpus built with ``patent-demo``."""
    real = require_shared("impact_design_patent_samples") / "patents"
    tmp = tmp_path_factory.mktemp("fixes-red")
    src = tmp / "patents"
    _boilerplate_twin(real, src)
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


def _settled(page, n: int = 10) -> None:
    """Wait until the gallery has no update in flight and its ``n`` drawings are decoded."""
    page.wait_for_function(
        "n => { const g = document.querySelector('#d-gallery'), t = g.querySelector('[data-testid=status-tracker]');"
        " const imgs = [...g.querySelectorAll('.thumbnail-item img')];"
        " return (!t || t.classList.contains('hide')) && imgs.length === n"
        " && imgs.every(i => i.complete && i.naturalWidth > 0); }",
        arg=n,
        timeout=60_000,
    )


def _quiet(page) -> None:
    """Wait until no component shows an update in flight (before a screenshot)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=status-tracker]')]"
        ".every(t => t.classList.contains('hide') || !t.innerText.includes('processing'))",
        timeout=60_000,
    )


def _tiles(page) -> list[str]:
    return [c.split()[1] for c in page.locator("#d-gallery .caption-label").all_inner_texts()]


def _table_ids(page) -> list[str]:
    """The patent ids of the drawing table, in row order (each row names its patent once)."""
    return list(dict.fromkeys(re.findall(r"\bUSD\d{7}\b", page.locator("#d-table").inner_text())))


def _labels(store, annotator: str) -> list[tuple]:
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(
            "SELECT query_id, query_kind, modality, query_patent_id, candidate_id, list_name, rank, label "
            "FROM labels WHERE undone = 0 AND annotator = ? ORDER BY id",
            (annotator,),
        ).fetchall()
    finally:
        conn.close()


def _drawing_search(page, path) -> None:
    page.locator("#d-file input[type=file]").set_input_files(str(path))
    page.locator("#d-query img").wait_for(timeout=20_000)
    page.locator("#d-search").click()
    wait_text(page, "#d-status", "results with", 60_000)
    _settled(page)


def _press_and_wait(page, key: str, rank: int) -> None:
    page.locator("#d-status").click()  # keys act outside text fields
    page.keyboard.press(key)
    wait_text(page, "#l-status", f"(hmcl #{rank})")


def test_application_search_labels_its_own_query(browser, red):
    """Search page A, then the six views of patent B as a whole application: B is left out (the filter
    panel's exclusion is ticked), grid, table and cursor show the application's hits, a click on row 3
    opens that hit and key 1 stores it against the application, not against page A."""
    url, wb, store, src = red
    page = _page(browser, url, "app-examiner")
    _drawing_search(page, src / PAGE_A / f"{PAGE_A}-D00002.TIF")
    first_tiles = _tiles(page)
    own = APP_B.split("-")[0]
    views = [src / APP_B / f"{APP_B}-D0000{i}.TIF" for i in range(1, 7)]
    page.locator("#d-views input[type=file]").set_input_files([str(v) for v in views])
    wait_text(page, "#d-views", f"{APP_B}-D00006")  # uploaded
    page.locator("#d-application").click()
    status = page.locator("#d-status")
    status.get_by_text("patents for an application of 6 views").wait_for(timeout=120_000)
    _settled(page)
    assert f"the query's own patent {own} is left out" in status.inner_text()
    tiles, rows = _tiles(page), _table_ids(page)
    assert len(tiles) == 10 and tiles == rows and own not in tiles and tiles != first_tiles
    assert "all views" in page.locator("#d-table").inner_text()
    cursor = page.locator("#l-cursor")
    cursor.get_by_text(f"hmcl #1 · {tiles[0]}").wait_for(
        timeout=30_000
    )  # (a pending refresh shows its timer)
    page.locator("#d-table").get_by_text(tiles[2], exact=True).last.click()  # the row of hit #3
    cursor.get_by_text(f"hmcl #3 · {tiles[2]}").wait_for(timeout=30_000)
    page.get_by_role("tab", name="Document").click()
    page.locator("#doc-html h3").get_by_text(tiles[2]).wait_for(timeout=30_000)
    page.get_by_role("tab", name="Drawing search").click()
    _press_and_wait(page, "1", 3)
    cursor.get_by_text("hmcl #4").wait_for(timeout=30_000)  # auto-advance
    _settled(page)
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-application.png"), full_page=True)
    rows = _labels(store, "app-examiner")
    assert len(rows) == 1
    query_id, kind, modality, query_patent, candidate, list_name, rank, label = rows[0]
    assert query_id.startswith("app-") and (kind, modality, query_patent) == ("application", "patent", own)
    assert (candidate, list_name, rank, label) == (tiles[2], "hmcl", 3, "relevant")
    kept = store.labels(query_id=query_id)[0].query_image_file  # the six views, kept as one sheet
    assert (store.path.parent / kept).is_file()
    page.close()


def test_sheet_split_leaves_out_its_own_patent_and_says_so(browser, red):
    """A page of a corpus patent split into figures: the patent is left out as for a single drawing, the
    status line and the search history say so, and a label names that patent as the query's."""
    url, wb, store, src = red
    own = PAGE_A.split("-")[0]
    page = _page(browser, url, "sheet-examiner")
    page.locator("#d-file input[type=file]").set_input_files(str(src / PAGE_A / f"{PAGE_A}-D00002.TIF"))
    page.locator("#d-query img").wait_for(timeout=20_000)
    page.locator("#d-sheet").click()
    status = page.locator("#d-status")
    status.get_by_text("figure(s) on the sheet").wait_for(timeout=120_000)
    _settled(page)
    assert f"the query's own patent {own} is left out" in status.inner_text()
    tiles = _tiles(page)
    assert len(tiles) == 10 and own not in tiles and own not in _table_ids(page)
    _press_and_wait(page, "1", 1)
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-sheet.png"), full_page=True)
    assert [r[1:] for r in _labels(store, "sheet-examiner")] == [
        ("image", "drawing", own, tiles[0], "hmcl", 1, "relevant")
    ]
    page.get_by_role("tab", name="Search report").click()
    page.locator("#r-refresh").click()
    page.wait_for_function("() => document.querySelector('#r-query input').value !== ''", timeout=30_000)
    page.locator("#r-make").click()
    wait_text(page, "#r-md", "in the report of")
    history = page.frame_locator("#r-frame").locator("#history tbody tr")
    history.first.wait_for(timeout=20_000)
    rows = history.all_inner_texts()
    assert len(rows) == 1 and "drawing sheet" in rows[0], rows
    assert f"the query's own patent {own} is left out" in rows[0]
    page.close()


def test_boilerplate_twins_are_two_designs(browser, red):
    """Same title and figure descriptions, separate applications, no related-application data: a page of
    one finds the other (not hidden as its family), the record of each lists no family, and a label of
    the twin lands on it."""
    url, wb, store, src = red
    assert wb.corpus[TWIN].text == wb.corpus[OTHER_TWIN].text and wb.corpus[TWIN].title == "Shoe"
    page = _page(browser, url, "twin-examiner")
    folder = next(src.glob(f"{TWIN}-*"))
    _drawing_search(page, folder / f"{folder.name}-D00001.TIF")
    status = page.locator("#d-status").inner_text()
    assert f"the query's own patent {TWIN} is left out" in status and "with its family" not in status
    tiles = _tiles(page)
    assert TWIN not in tiles and OTHER_TWIN in tiles, tiles
    rank = tiles.index(OTHER_TWIN) + 1
    page.locator("#d-gallery .thumbnail-item").nth(rank - 1).click()
    wait_text(page, "#l-cursor", f"hmcl #{rank} · {OTHER_TWIN}")
    page.get_by_role("tab", name="Document").click()
    doc = page.locator("#doc-html")
    wait_text(doc, "h3", OTHER_TWIN)
    assert "Family in the corpus: none in this corpus" in doc.inner_text()
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-twins-record.png"), full_page=True)
    page.get_by_role("tab", name="Drawing search").click()
    _press_and_wait(page, "1", rank)
    _settled(page)
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-twins.png"), full_page=True)
    assert [r[1:] for r in _labels(store, "twin-examiner")] == [
        ("image", "drawing", TWIN, OTHER_TWIN, "hmcl", rank, "relevant")
    ]
    page.get_by_role("tab", name="Document").click()
    box = page.locator("#doc-id textarea, #doc-id input").first
    box.fill(TWIN)
    page.locator("#doc-open").click()
    wait_text(doc, "h3", TWIN)
    assert "Family in the corpus: none in this corpus" in doc.inner_text()
    page.close()


def test_more_like_this_text_before_the_text_tab_was_opened(browser, red):
    """A record opened by its number, the Text tab never visited: "More like this: its text" makes its
    title and figure descriptions the query and searches at once; a label lands on the text hit."""
    url, wb, store, src = red
    pid = "USD0919445"  # Dispenser bottle
    page = _page(browser, url, "more-examiner")
    page.get_by_role("tab", name="Document").click()
    page.locator("#doc-id textarea, #doc-id input").first.fill(pid)
    page.locator("#doc-open").click()
    wait_text(page, "#doc-html h3", pid)
    page.locator("#more-text").click()
    status = page.locator("#t-status")
    status.get_by_text("re-ranked the hybrid top").wait_for(timeout=180_000)
    assert f"the query's own patent {pid} is left out" in status.inner_text()
    assert page.locator("#t-text textarea").input_value() == wb.candidate_text(wb.corpus[pid])
    cursor = page.locator("#l-cursor")
    first = re.search(r"#1 · (\S+)", cursor.inner_text())
    assert first and first.group(1).strip("`") != pid, cursor.inner_text()
    hit = first.group(1).strip("`")
    page.locator("#t-status").click()
    page.keyboard.press("1")
    wait_text(page, "#l-status", "✓ relevant")
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-more-text.png"), full_page=True)
    rows = _labels(store, "more-examiner")
    assert [r[1:] for r in rows] == [("text", "text", "", hit, rows[0][5], 1, "relevant")]
    assert rows[0][5] in ("bm25", "dense", "hybrid", "dssdnet", "fused")
    page.close()


def test_record_opened_by_its_number_shows_what_an_examiner_cites(browser, red):
    """The drawing table has the publication-date column; in the Document tab a Red Book file stem typed in
    the number box and Enter opens the record (no click): inventors, applicant, application number and
    date, publication date, code titles, the figure descriptions as figures with their views, the 63 cited
    references; an application number and bare digits open their patents too."""
    url, wb, store, src = red
    page = _page(browser, url, "record-examiner")
    _drawing_search(page, src / PAGE_A / f"{PAGE_A}-D00002.TIF")
    table = page.locator("#d-table").inner_text()
    first = _table_ids(page)[0]
    assert "published" in table and wb.corpus[first].date in table, table[:400]
    page.get_by_role("tab", name="Document").click()
    box = page.locator("#doc-id textarea, #doc-id input").first
    doc = page.locator("#doc-html")
    box.fill("USD0907292-20210105")
    box.press("Enter")
    wait_text(doc, "h3", "USD0907292 · Shaving blade cartridge")
    text = doc.inner_text()
    for shown in (
        "Inventors\tDimitrios Efthimiadis; Georgios Georgakis",
        "Applicant\tBIC-VIOLEX SA",
        "Application number\t29/680,800",
        "Application (filing) date\t2019-02-20",
        "Publication date\t2021-01-05",
        "Toilet articles and beauty equipment",
        "D28/47\tCosmetic products and toilet articles",
        "Figures (description of the drawings)",
        "FIG. 3\ttop perspective\tFIG. 3 is a top view perspective view thereof;",
        "References cited: 63, 0 in this corpus",
        "USD0633254*",
        "WOD071924001",
    ):
        assert shown in text, (shown, text[:1500])
    assert "Abstract" not in text
    gallery = page.locator("#doc-gallery").inner_text()
    assert "FIG. 3 · top perspective" in gallery, gallery
    _quiet(page)
    page.screenshot(path=str(ARTIFACTS / "fixes-record.png"), full_page=True)
    for typed, pid in (("29/736,329", "USD0917866"), ("919445", "USD0919445")):
        box.fill(typed)
        box.press("Enter")
        wait_text(doc, "h3", pid)
    page.close()
