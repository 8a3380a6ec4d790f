"""An examiner's text search on the real cs3245 corpus (2,244 patents with IPC codes, citations and
families, no drawings), the corpus built with the project's CLI, served by the real app with the shipped
checkpoints and driven in Debian's chromium.

The IPC checkpoint is the default re-ranker, class codes show as IPC, a search with cited prior art in
the corpus gets no "no good match" warning while an off-topic paragraph does, quoting the score the BM25
table shows; the drawing tab says plainly that the corpus has no drawings. Screenshots go to
``test-artifacts/exam-text-*.png``.

Tests: patent_demo/ui/examiner.py, patent_demo/examiner.py
"""

from __future__ import annotations

import json

import pytest

from patent_demo.cli.main import main as cli
from patent_demo.labels.store import LabelStore
from patent_demo.request import TextRequest
from patent_demo.wording import counted
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import REPO_ROOT, live_app, require_shared
from tests.support.browser import ARTIFACTS, wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
OFF_TOPIC = (
    "The committee met on Tuesday to discuss the annual budget, the new library opening hours and the "
    "summer festival for families in the town."
)


@pytest.fixture(scope="module")
def cs(tmp_path_factory):
    """(url, workbench, docs by id) of the app on the cs3245 corpus built with ``patent-demo``."""
    src = require_shared("cs3245_patsnap_corpus_qrels")
    tmp = tmp_path_factory.mktemp("exam-cs")
    assert (
        cli(["corpus", "build", "--source", "text", "--out", str(tmp / "corpus"), str(src), "--quiet"]) == 0
    )
    config = WorkbenchConfig(
        cache_dir=tmp / "cache", corpus=tmp / "corpus", checkpoint_dirs=(REPO_ROOT / "checkpoints",)
    )
    wb = Workbench(config, progress=False)
    wb.warm_up()  # a text corpus: BM25 only, no drawing index and no error
    store = LabelStore(tmp / "labels.sqlite")
    with live_app(wb, store) as url:
        docs = {d["doc_id"]: d for d in map(json.loads, (src / "patsnap_docs.jsonl").open(encoding="utf-8"))}
        yield url, wb, docs
    store.close()


def _text_search(page, text: str):
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill(text)
    page.locator("#t-search").click()
    wait_text(page, "#t-status", "re-ranked the hybrid top", 180_000)


TABLES = {
    "bm25": "#t-bm25",
    "dense": "#t-dense",
    "hybrid": "#t-hybrid",
    "dssdnet": "#t-dss",
    "fused": "#t-fused",
}


def _show(page, name: str):
    """Choose the list the Text tab shows: the cursor moves to its first hit, and its table shows."""
    page.locator("#t-show").get_by_text(name, exact=True).click()
    wait_text(page, "#l-cursor", f"{name} #1", 20_000)
    page.locator(TABLES[name]).wait_for(state="visible", timeout=20_000)


def test_cited_prior_art_no_warning_ipc_model_and_codes(browser, cs):
    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.get_by_role("tab", name="Text search").click()
    model = page.locator("#t-model input").input_value()
    assert "dssdnet-minilm-ipc" in model  # the checkpoint trained for the corpus's scheme
    q = docs["EP0735178A1"]  # cites EP0495168B1, a washing machine of the same subclass
    _text_search(page, f"{q['title']}. {q['abstract']}")
    status = page.locator("#t-status").inner_text()
    assert "no good match" not in status
    assert "the query's own patent EP0735178A1 is left out" in status  # a corpus text: itself left out
    wait_text(page, "#l-cursor", "· IPC ", 20_000)  # not "Locarno –"
    page.locator("#t-why").get_by_text("Why the cursor hit ranks here").click()
    wait_text(page, "#t-explain", "Candidate (IPC ", 20_000)
    widths = []
    for name, table in (("bm25", "#t-bm25"), ("dssdnet", "#t-dss")):
        _show(page, name)
        assert page.locator(table).get_by_text("EP0735178A1", exact=True).count() == 0
        widths += page.eval_on_selector_all(
            f"{table} .table-wrap", "els => els.map(e => [e.scrollWidth, e.clientWidth])"
        )
    assert all(sw <= cw + 2 for sw, cw in widths), widths  # title and snippet without sideways scrolling
    page.screenshot(path=str(ARTIFACTS / "exam-text-1366.png"), full_page=True)
    page.close()


def test_off_topic_text_warns_with_the_tables_score(browser, cs):
    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    _text_search(page, OFF_TOPIC)
    status = page.locator("#t-status").inner_text()
    assert status.startswith("⚠️ no good match: the best BM25 hit scores ")
    quoted = status.split("scores ", 1)[1].split(",", 1)[0]
    first = wb.search_text(TextRequest.build(OFF_TOPIC, "", k=1, rerank=False)).lists["bm25"]
    assert quoted == str(round(float(first.scores[0]), 4))
    _show(page, "bm25")
    page.locator("#t-bm25").get_by_text(quoted, exact=True).last.wait_for(
        timeout=10_000
    )  # as the table shows it
    assert "false alarms" not in status and "with a cited or citing document in it scored this low" in status
    page.close()


def test_text_corpus_drawing_tab_says_no_drawings(browser, cs):
    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    wait_text(page, "#d-none", "this corpus has no drawings", 20_000)
    assert "0 drawings" in page.locator("#header").inner_text()
    page.get_by_role("tab", name="Error analysis").click()
    page.locator("#e-btn").click()
    wait_text(page, "#e-summary", "⚠️ this corpus has no drawings", 20_000)
    assert wb.index_status() == ""
    page.close()


def test_phrase_truncation_and_fields(browser, cs):
    from patent_demo.text import syntax

    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    query = 'ti:"washing machine" AND bubbl* NOT ipc:A47L'
    _text_search(page, query)
    help_line = page.locator("#t-syntax")  # the Text tab is open now
    assert "truncat*" in help_line.inner_text() and "bubbl* NOT" in help_line.inner_text()  # * is not italics
    assert help_line.locator("em").count() == 0
    admitted = syntax.parse(query).matches(wb.corpus)
    status = page.locator("#t-status").inner_text()
    assert f"search syntax: {counted(len(admitted), 'document matches', 'documents match')}" in status
    _show(page, "bm25")
    bm25 = page.locator("#t-bm25")
    shown = {
        w for w in bm25.inner_text().split() if w in wb.corpus and bm25.get_by_text(w, exact=True).count()
    }
    assert len(shown) == 10 and shown <= admitted
    assert all("washing machine" in wb.corpus[i].title.lower() for i in shown)
    page.locator("#t-text textarea").fill('"bubble generator')
    page.locator("#t-search").click()
    page.locator("#t-status").get_by_text(
        '⚠️ a quote is not closed: put the phrase between two " marks'
    ).wait_for(timeout=60_000)
    page.close()


def test_one_hit_per_family(browser, cs):
    from patent_demo.families import family_sets

    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    _text_search(
        page, "washing with bubbles. Relevant documents will describe washing technology using bubbles."
    )
    families = family_sets(wb.corpus)
    for name, table in (("bm25", "#t-bm25"), ("dssdnet", "#t-dss"), ("fused", "#t-fused")):
        _show(page, name)
        ids = [w for w in page.locator(table).inner_text().split() if w in wb.corpus and not w.endswith(",")]
        rows = list(dict.fromkeys(i for i in ids if page.locator(table).get_by_text(i, exact=True).count()))
        assert len(rows) == 10 and len({families[i] for i in rows}) == 10, (table, rows)
    _show(page, "bm25")
    bm25 = page.locator("#t-bm25")
    bm25.get_by_text("same family: US20080016626A1").last.wait_for(timeout=20_000)  # under EP1870505A2
    assert (
        bm25.get_by_text("EP1870505A2", exact=True).count()
        and not bm25.get_by_text("US20080016626A1", exact=True).count()
    )
    page.close()


def test_more_like_this_from_a_text_hit(browser, cs):
    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    _text_search(
        page, "washing with bubbles. Relevant documents will describe washing technology using bubbles."
    )
    _show(page, "bm25")
    page.locator("#t-bm25").get_by_text("EP1870505A2", exact=True).last.click()
    page.get_by_role("tab", name="Document").click()
    wait_text(page, "#doc-html h3", "EP1870505A2")
    page.locator("#more-text").click()  # its title and abstract become the query, searched at once
    status = page.locator("#t-status")
    status.get_by_text("EP1870505A2").wait_for(timeout=180_000)  # left out: its own search (with its family)
    assert "left out" in status.inner_text() and "EP1870505A2" in status.inner_text()
    status.get_by_text("re-ranked the hybrid top").wait_for(timeout=180_000)
    assert page.locator("#t-text textarea").input_value().startswith(wb.corpus["EP1870505A2"].title)
    _show(page, "bm25")
    bm25 = page.locator("#t-bm25")
    assert not bm25.get_by_text("EP1870505A2", exact=True).count()
    assert not bm25.get_by_text("US20080016626A1", exact=True).count()  # its family member is left out too
    page.close()


def test_default_list_first_cursor_on_it_and_labels_follow_the_shown_list(browser, cs):
    """The default text list (``default_text_list()``) is the one shown first and the cursor starts on it;
    the label panel is within a screen and a half at 1366 x 900; after switching lists a label goes to the
    shown list's hit; the DSSDNet list says it is below the default list on validation. Screenshots:
    ``test-artifacts/exam-text-default-1366.png`` and ``-390.png``."""
    from patent_demo.text.hybrid import default_text_list
    from patent_demo.text.lists import LISTS

    url, wb, docs = cs
    default = default_text_list()
    ids = TABLES
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    page.locator("#annotator input, #annotator textarea").first.fill("examiner")
    q = docs["EP0735178A1"]
    _text_search(page, f"{q['title']}. {q['abstract']}")
    shown = [n for n in LISTS if page.locator(ids[n]).is_visible()]
    assert shown == [default], shown
    assert page.locator("#t-show input:checked").get_attribute("value") == default
    wait_text(page, "#l-cursor", f"{default} #1", 20_000)
    assert "default list" in page.locator("#t-figures").inner_text()
    status = page.locator("#t-status").inner_text()
    assert "nDCG" not in status and "Default list" not in status and "\n" not in status.strip()
    top = page.eval_on_selector("#label-panel", "e => e.getBoundingClientRect().top + window.scrollY")
    assert top < 1.5 * 900, top
    page.screenshot(path=str(ARTIFACTS / "exam-text-default-1366.png"))
    other = next(n for n in ("dssdnet", "bm25") if n != default)
    _show(page, other)
    assert [n for n in LISTS if page.locator(ids[n]).is_visible()] == [other]
    if other == "dssdnet":
        assert f"below the default list ({default}) on validation" in page.locator("#t-figures").inner_text()
    page.locator("#lbl-next").click()
    wait_text(page, "#l-cursor", f"{other} #2", 20_000)
    second = page.locator("#l-cursor").inner_text().split("·")[1].strip()  # the cursor hit's patent
    assert (
        page.locator(ids[other]).get_by_text(second, exact=True).last.is_visible()
    )  # a hit of the shown list
    page.locator("#lbl-rel").click()
    # the answer is written from the stored label: its candidate, list and rank
    wait_text(page, "#l-status", f"✓ relevant · {second} ({other} #2)", 20_000)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "exam-text-default-390.png"), full_page=True)
    page.close()


def test_cited_reference_in_the_corpus_opens_its_record(browser, cs):
    """EP0735178A1 cites five documents, EP0495168B1 the one in the corpus: the record typed in the number
    box (Enter) lists all five, that one as a button that opens its record, the others as numbers; the
    text tables show each hit's publication date."""
    url, wb, docs = cs
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(url)
    q = docs["EP0735178A1"]
    _text_search(page, f"{q['title']}. {q['abstract']}")
    wait_text(page, "#l-cursor", " #1 · ")  # the cursor's refresh follows the lists
    table = page.locator("#t-hybrid").inner_text()
    first = page.locator("#l-cursor").inner_text().split("·")[1].strip(" `")
    assert "published" in table and wb.corpus[first].date in table, (first, table[:300])
    page.get_by_role("tab", name="Document").click()
    box = page.locator("#doc-id textarea, #doc-id input").first
    box.fill("EP 0735178 A1")
    box.press("Enter")
    doc = page.locator("#doc-html")
    wait_text(doc, "h3", "EP0735178A1")
    text = doc.inner_text()
    assert "References cited: 5, 1 in this corpus" in text and "Abstract" in text
    for number in ("EP0495168A1", "DE813550C", "FR1273382A", "CH257386A"):
        assert doc.locator(".record-ref").get_by_text(number, exact=True).count() == 1
    assert "Publication date\t1996-10-02" in text and "Application (filing) date\t1996-02-06" in text
    doc.locator("button[data-open-record='EP0495168B1']").click()
    wait_text(doc, "h3", "EP0495168B1")
    assert box.input_value() == "EP0495168B1"
    assert "Cited by (in the corpus): EP0735178A1" in doc.inner_text()
    page.screenshot(path=str(ARTIFACTS / "exam-text-record.png"), full_page=True)
    page.close()
