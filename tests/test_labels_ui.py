"""Label what you see, in Debian's chromium: one cursor followed by the gallery preview, the table's
highlighted row and the label panel; grade badges; auto-advance as a visible toggle; "show unlabelled
only"; the category resetting after each label; stale results cleared when a search fails.

Tests: patent_demo/ui/labelling.py
"""

from __future__ import annotations

import sqlite3

import pytest

from patent_demo.request import DrawingRequest
from tests.support.browser import untick_exclusions, wait_text
from tests.support.live import shared_hash_predict

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CURSOR_BG = "rgb(255, 233, 168)"  # patent_demo.ui.labelling.CURSOR_STYLE


def _highlighted(page, table: str) -> list[str]:
    """The cell texts of the table rows drawn with the cursor background."""
    return page.evaluate(
        """([sel, bg]) => [...document.querySelectorAll(sel + ' .virtual-row')]
            .filter(tr => [...tr.querySelectorAll('.body-cell')].some(td => getComputedStyle(td).backgroundColor === bg))
            .map(tr => tr.innerText.replace(/\\s+/g, ' ').trim())""",
        [table, CURSOR_BG],
    )


def _wait_highlight(page, table: str, prefix: str) -> None:
    """Wait until the one highlighted row of ``table`` starts with ``prefix``."""
    page.wait_for_function(
        """([sel, bg, prefix]) => {
            const hot = [...document.querySelectorAll(sel + ' .virtual-row')]
              .filter(tr => [...tr.querySelectorAll('.body-cell')].some(td => getComputedStyle(td).backgroundColor === bg))
              .map(tr => tr.innerText.replace(/\\s+/g, ' ').trim());
            return hot.length === 1 && hot[0].startsWith(prefix);
        }""",
        arg=[table, CURSOR_BG, prefix],
        timeout=10_000,
    )


def _search(page, wb, pid="D0002"):
    query = wb.corpus.image_path(wb.corpus[pid].figures[0])
    page.locator("#d-file input[type=file]").set_input_files(str(query))
    page.wait_for_timeout(500)
    page.locator("#d-search").click()
    page.locator("#d-gallery img").nth(9).wait_for(timeout=20_000)
    wait_text(page, "#l-cursor", "hmcl #1", 10_000)


def test_one_cursor_badges_auto_advance_and_filter(browser, server):
    url, wb, store = server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("ui-examiner")
    untick_exclusions(page)
    _search(page, wb)
    expected = wb.search_drawing(
        DrawingRequest.build(wb, wb.corpus.image_path(wb.corpus["D0002"].figures[0]), "zero-shot", 10)
    )
    ids = [h.patent_id for h in expected.hits]
    _wait_highlight(page, "#d-table", f"1 {ids[0]} ")

    page.locator("#d-status").click()  # focus outside any text field
    page.keyboard.press("1")  # auto-advance is on: label #1, the cursor moves to #2
    wait_text(page, "#l-status", f"✓ relevant · {ids[0]} (hmcl #1)", 10_000)
    wait_text(page, "#l-cursor", f"hmcl #2 · {ids[1]}", 10_000)
    page.wait_for_function(
        "id => document.querySelector('#d-gallery').innerText.includes('#2 ' + id)",
        arg=ids[1],
        timeout=10_000,
    )
    _wait_highlight(page, "#d-table", f"2 {ids[1]} ")
    assert f"#1 {ids[0]} · front · 06-03 · 1.000 · ✓ relevant (2)" in page.locator("#d-gallery").inner_text()
    assert "✓ relevant (2)" in page.locator("#d-table").inner_text()

    page.locator("#l-auto input").uncheck()  # auto-advance off: the cursor stays on the labelled hit
    page.locator("#d-status").click()
    page.keyboard.press("3")
    wait_text(page, "#l-status", f"✓ not · {ids[1]} (hmcl #2)", 10_000)
    wait_text(page, "#l-cursor", "✗ not relevant (0)", 10_000)
    assert "hmcl #2" in page.locator("#l-cursor").inner_text()
    page.keyboard.press("j")  # j moves on; the gallery preview follows the cursor
    wait_text(page, "#l-cursor", f"hmcl #3 · {ids[2]}", 10_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#d-table .virtual-row')].length > 0",
        timeout=5_000,
    )
    _wait_highlight(page, "#d-table", f"3 {ids[2]} ")

    page.locator("#l-unlabelled input").check()  # only unlabelled hits are shown
    page.wait_for_function(
        "id => !document.querySelector('#d-table').innerText.includes(id)", arg=ids[0], timeout=10_000
    )
    table = page.locator("#d-table").inner_text()
    assert ids[1] not in table and ids[2] in table
    page.keyboard.press("k")  # previous skips the labelled hits: stays on #3
    page.wait_for_timeout(800)
    assert "hmcl #3" in page.locator("#l-cursor").inner_text()
    page.screenshot(path="test-artifacts/labels-cursor-1366.png", full_page=True)

    rows = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT candidate_id, rank, label, annotator, modality FROM labels WHERE annotator = 'ui-examiner' ORDER BY id"
        )
        .fetchall()
    )
    assert rows == [
        (ids[0], 1, "relevant", "ui-examiner", "drawing"),
        (ids[1], 2, "not", "ui-examiner", "drawing"),
    ]

    # a failed search clears the results: nothing stale is left to label
    bad = store.path.parent / "not-a-drawing.png"
    bad.write_text("<xml/>")
    page.locator("#d-file button[aria-label='Clear']").click()
    page.locator("#d-file input[type=file]").set_input_files(str(bad))
    page.wait_for_timeout(500)
    page.locator("#d-search").click()
    page.locator("#d-status").get_by_text("⚠️ not-a-drawing.png: not a readable image").wait_for(
        timeout=10_000
    )
    assert str(store.path.parent) not in page.locator("#d-status").inner_text()
    page.wait_for_function("() => document.querySelectorAll('#d-gallery img').length === 0", timeout=10_000)
    page.locator("#d-status").click()
    page.keyboard.press("1")
    wait_text(page, "#l-status", "run a search first", 10_000)
    page.close()


def test_category_applies_to_text_hits_and_resets(browser, server):
    url, wb, store = server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("ui-category")
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill("lamp with a shade and bulb")
    page.locator("#t-search").click()
    wait_text(page, "#t-status", "re-ranked", 20_000)
    page.locator("#t-show").get_by_text("dssdnet", exact=True).click()  # the cursor follows the list shown
    wait_text(page, "#l-cursor", "dssdnet #1", 20_000)
    page.locator("#t-why").get_by_text("Why the cursor hit ranks here").click()  # the explanation is folded
    wait_text(page, "#t-explain", "DSSDNet rank 1", 10_000)
    page.get_by_label("X", exact=True).check()
    page.locator("#t-status").click()
    page.keyboard.press("1")
    wait_text(page, "#l-status", "✓ relevant", 10_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('input[type=radio]')].some(r => r.checked && r.value === '' )",
        timeout=10_000,
    )
    page.locator("#t-explain").get_by_text("DSSDNet rank 2").wait_for(
        timeout=10_000
    )  # the explanation follows
    page.keyboard.press("3")
    wait_text(page, "#l-status", "✓ not", 10_000)
    rows = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT rank, label, category, modality FROM labels WHERE annotator = 'ui-category' ORDER BY id"
        )
        .fetchall()
    )
    assert rows == [(1, "relevant", "X", "text"), (2, "not", "", "text")]  # X did not stick to the negative
    page.close()


def test_another_client_with_this_browsers_session_hash_cannot_undo_or_label(browser, server):
    """Without a login the page holds a token (``gr.BrowserState``) and its session is owned by the token's
    HMAC: a raw client that sends this page's session hash reaches its state but not its token, so its
    /undo is refused and the label stays, and its /label stores nothing; the page's own Undo still works."""
    import json

    from gradio_client import Client

    url, wb, store = server
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    hashes: set[str] = set()

    def sniff(req):
        if "queue/join" in req.url and req.post_data:
            hashes.add(json.loads(req.post_data).get("session_hash", ""))

    page.on("request", sniff)
    page.goto(url)
    page.locator("#annotator textarea, #annotator input").first.fill("owner-examiner")
    untick_exclusions(page)
    _search(page, wb)
    page.locator("#d-status").click()
    page.keyboard.press("1")
    wait_text(page, "#l-status", "✓ relevant", 10_000)
    (mine,) = [x for x in store.labels() if x.annotator == "owner-examiner"]
    assert mine.session_id.startswith("b:")  # owned by the token's HMAC, not by the session hash
    (session_hash,) = hashes - {""}
    page.goto("about:blank")  # the page's event stream closes (its session state stays on the server)
    thief = Client(url, verbose=False)
    thief.session_hash = session_hash
    msg = shared_hash_predict(thief, "owner-examiner", api_name="/undo")[0]
    assert msg == "⚠️ this browser session is not yours: undo acts on your own labels only"
    assert not next(x for x in store.labels(include_undone=True) if x.id == mine.id).undone
    before = len(store.labels(include_undone=True))
    msg = shared_hash_predict(thief, "not", "hmcl", 2, "", "", "thief", api_name="/label")[0]
    assert msg == "⚠️ this browser session is not yours: label on your own result lists only"
    assert len(store.labels(include_undone=True)) == before  # nothing stored on this browser's list
    page.goto(url)  # the same browser again: its stored token owns the label
    # the token reaches the page's state in its load event: an Undo sent before that acts without it (the
    # status then says there is nothing of this session to undo), so the click is repeated until it lands
    status = page.locator("#l-status")
    for _ in range(6):
        page.locator("#lbl-undo").click()
        try:
            status.get_by_text("↶ undid relevant").wait_for(timeout=5_000)
            break
        except Exception:  # noqa: BLE001 - the load event had not run yet: press again
            page.wait_for_timeout(1_000)
    status.get_by_text("↶ undid relevant").wait_for(timeout=10_000)
    assert next(x for x in store.labels(include_undone=True) if x.id == mine.id).undone
    page.close()
