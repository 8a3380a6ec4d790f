"""The examiner's searches and handlers on the tiny corpus: own-date cut-off, filters inside the
search, the query crop, the sheet handler, the no-good-match note, the document and report handlers."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from patent_demo import examiner
from patent_demo.filters import Filters, SearchFilter
from patent_demo.labels.store import LabelStore
from patent_demo.request import DrawingRequest, TextRequest
from tests.support.tiny import make_workbench


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ex")
    wb, _ = make_workbench(tmp)
    for i, p in enumerate(wb.corpus.patents):  # D0000 published 2010-01-01, D0001 2011-01-01, ...
        p.date = f"{2010 + i}-01-01"
        p.filing_date = f"{2009 + i}-06-01"
    return wb, LabelStore(tmp / "labels.sqlite")


def _search(wb, image, k=10, **filters):
    """``(DrawingSearch, its notes)`` of one drawing request with the zero-shot model and ``Filters(**filters)``."""
    res = wb.search_drawing(DrawingRequest.build(wb, image, "zero-shot", k, filters=Filters(**filters)))
    return res, res.notes


def test_own_date_cutoff_and_filter_inside_the_search(bench):
    wb, _ = bench
    fig = wb.corpus.image_path(wb.corpus["D0006"].figures[0])
    res, notes = _search(wb, fig, 10, own_date=True)
    assert "cut-off 2015-06-01: the filing date of the query patent D0006" in notes
    assert {h.patent_id for h in res.hits} == {
        f"D000{i}" for i in range(6)
    }  # all six earlier ones, k not cut
    res, notes = _search(wb, fig, 3, search=SearchFilter.parse(classification="07"))
    assert len(res.hits) == 3 and all(h.locarno.startswith("07") for h in res.hits)
    assert res.hits[0].patent_id == "D0006"
    with pytest.raises(ValueError, match="no patent with drawings passes the filter"):
        _search(wb, fig, search=SearchFilter.parse(before="2000-01-01"))


def test_a_cut_off_admits_earlier_applications_and_marks_them_e(bench):
    """Cut-off 2013-09-01: D0000-D0003 were published before it; D0004 (filed 2013-06-01, published
    2014-01-01) is an earlier application, admitted and marked E in the drawing and the text lists."""
    from patent_demo.text.search import candidate_text

    wb, _ = bench
    fig = wb.corpus.image_path(wb.corpus["D0006"].figures[0])
    res, notes = _search(wb, fig, 10, search=SearchFilter.parse(before="2013-09-01"))
    assert {h.patent_id for h in res.hits} == {f"D000{i}" for i in range(5)}
    assert "1 hit is an earlier application (E): filed before 2013-09-01, published on or after it" in notes
    assert {h.patent_id: h.extras.get("prior_art", "") for h in res.hits}["D0004"] == "E"
    assert [h.patent_id for h in res.hits if h.extras.get("prior_art")] == ["D0004"]
    f = Filters(SearchFilter.parse(before="2013-09-01"))
    lists, _ = wb.search_text(TextRequest.build(candidate_text(wb.corpus["D0004"]), k=5, filters=f))
    for res in lists.values():
        marks = {
            d: (e or {}).get("prior_art", "")
            for d, e in zip(res.ids, res.extras or [{}] * len(res), strict=True)
        }
        assert set(marks) == {f"D000{i}" for i in range(5)} and marks["D0004"] == "E"
        assert not any(m for d, m in marks.items() if d != "D0004")


def test_an_own_search_marks_what_was_published_between_its_priority_and_filing_dates_p(bench):
    """D0006 filed 2015-06-01 claiming a priority of 2013-03-01: its own search keeps everything published
    before its filing date (D0000-D0005); D0004 and D0005 (published 2014-01-01, 2015-01-01) fall between
    the two dates and are marked P in the drawing and the text lists, and the status line counts them."""
    from patent_demo.text.search import candidate_text

    wb, _ = bench
    query = wb.corpus["D0006"]
    query.priority_date = "2013-03-01"
    try:
        fig = wb.corpus.image_path(query.figures[0])
        res, notes = _search(wb, fig, 10, own_date=True)
        assert {h.patent_id for h in res.hits} == {f"D000{i}" for i in range(6)}
        marks = {h.patent_id: h.extras.get("prior_art", "") for h in res.hits}
        assert {d for d, m in marks.items() if m} == {"D0004", "D0005"} and marks["D0004"] == "P"
        assert ("2 hits are intermediate documents (P): published from the priority date 2013-03-01") in notes
        text = candidate_text(query)
        lists, notes = wb.search_text(TextRequest.build(text, k=10, filters=Filters(own_date=True)))
        for res in lists.values():
            got = {
                d: (e or {}).get("prior_art", "")
                for d, e in zip(res.ids, res.extras or [{}] * len(res), strict=True)
            }
            assert {d for d, m in got.items() if m} <= {"D0004", "D0005"}
            assert all(m == "P" for m in got.values() if m)
        assert any("intermediate documents (P)" in n or "intermediate document (P)" in n for n in notes)
    finally:
        query.priority_date = ""


def test_text_own_date_drops_the_query_patent(bench):
    from patent_demo.text.search import candidate_text

    wb, _ = bench
    text = candidate_text(wb.corpus["D0008"])
    lists, notes = wb.search_text(TextRequest.build(text, k=5, filters=Filters(own_date=True)))
    bm25, dss = lists["bm25"], lists["dssdnet"]
    assert "cut-off 2017-06-01: the filing date of the query patent D0008" in notes
    assert "D0008" not in bm25.ids and all(
        wb.corpus[d].date < "2017-06-01" for d in bm25.ids + dss.ids + lists["fused"].ids
    )


def test_a_pasted_abstract_of_a_corpus_patent_is_its_own_search(bench):
    """An abstract pasted from a corpus patent (its abstract alone, in other spacing and case) is that
    patent's own search: with "exclude the query's own patent" it is left out of every list, and the notes
    say so; without the exclusion it is found first."""
    wb, _ = bench
    p = wb.corpus["D0002"]
    pasted = "  " + p.text.capitalize().replace(" ", "\n ") + ". "
    lists, notes = wb.search_text(TextRequest.build(pasted, k=5, filters=Filters(exclude_own=True)))
    assert all("D0002" not in res.ids for res in lists.values())
    assert any(n.startswith("the query's own patent D0002 is left out") for n in notes)
    kept, _ = wb.search_text(TextRequest.build(pasted, k=5, filters=Filters(exclude_own=False)))
    assert kept["bm25"].ids[0] == "D0002"


def _unknown_drawing(wb):
    """A drawing of no corpus patent (new bytes): its class is unknown."""
    path = wb.config.cache_dir / "unknown.png"
    Image.open(wb.corpus.image_path(wb.corpus["D0002"].figures[0])).convert("L").rotate(90, expand=True).save(
        path
    )
    return path


def test_handlers_crop_sheet_document_report(bench):
    from patent_demo.ui.examiner import ExaminerHandlers
    from patent_demo.ui.handlers import Handlers
    from patent_demo.ui.inputs import cropped_query

    wb, store = bench
    h = Handlers(wb, store)
    ex = ExaminerHandlers(wb, store)
    path = str(wb.corpus.image_path(wb.corpus["D0002"].figures[0]))
    full = h.search_drawing(path, "zero-shot", 4, True, True, "", "ann")
    assert full[1].startswith("4 results with") and full[3]["lists"]["hmcl"][0]["id"] == "D0002"
    # a crop (the left half) is searched instead of the file, and the stored query image is the crop
    im = Image.open(path).convert("L")
    crop = im.crop((0, 0, im.width // 2, im.height))
    out = h.search_drawing(path, "zero-shot", 4, True, True, "", "ann", None, None, crop)
    session = out[3]
    import hashlib

    cropped_bytes, was_cropped = cropped_query(path, crop)
    assert was_cropped and Image.open(io.BytesIO(cropped_bytes)).size == crop.size
    assert "4 results with" in out[1] and session["query_id"] != full[3]["query_id"]
    assert session["image_sha"] == hashlib.sha256(cropped_bytes).hexdigest()  # the crop is the query
    assert session["patent_id"] == "D0002"  # a crop of D0002's figure keeps its patent and so its class
    assert (
        "query class unknown" not in out[1]
        and "query class unknown"
        in h.search_drawing(str(_unknown_drawing(wb)), "zero-shot", 4, True, True, "", "ann")[1]
    )
    # a filter typed with a bad date is a ⚠️ message, not a stack trace
    bad = h.search_drawing(path, "zero-shot", 4, True, True, "", "ann", {"before": "2021-02-30"})
    assert bad[1].startswith("⚠️ cut-off date '2021-02-30' is not a calendar date")
    # a sheet of two corpus drawings
    a = wb.corpus.open_image(wb.corpus["D0000"].figures[1], crop=False, square=False)
    b = wb.corpus.open_image(wb.corpus["D0006"].figures[1], crop=False, square=False)
    sheet = Image.new("L", (a.width + b.width + 120, max(a.height, b.height) + 80), 255)
    sheet.paste(a, (40, 40))
    sheet.paste(b, (a.width + 80, 40))
    sheet_path = wb.config.cache_dir / "sheet.png"
    sheet.save(sheet_path)
    gallery, status, table, overlay, session, *_ = ex.search_sheet(str(sheet_path), None, "zero-shot", 4)
    assert (
        status.startswith("2 figure(s) on the sheet") and overlay["value"].size[0] > 0 and overlay["visible"]
    )
    assert any("matched by figure 2 of 2" in row["view"] for row in session["lists"]["hmcl"])
    assert any("matched by figure 2 of 2" in caption for _, caption in gallery)
    page, figs, pid = ex.document("D0006")
    assert pid == "D0006" and len(figs) == 3 and "<h3>D0006" in page
    assert ex.document("NOPE")[0].startswith("⚠️ ")
    # label a hit, then the report of that query
    from patent_demo.labels.sessions import label_from_session

    store.add(label_from_session(full[3], "hmcl", 1, "relevant", "ann", "", "same <b>bowl</b>"))
    files, md, frame = ex.report(full[3]["query_id"], {}, False)
    assert md.startswith("1 document in the report") and files[0].endswith(".csv")
    assert "same &amp;lt;b&amp;gt;bowl" in frame  # escaped in the page, and again for srcdoc
    with open(files[0], encoding="utf-8") as fh:
        assert [row.split(",")[2] for row in fh.read().splitlines()[1:]] == ["D0002"]  # after the categories


def test_no_good_match_note_for_an_unrelated_drawing(bench):
    from PIL import ImageDraw

    wb, _ = bench
    im = Image.new("L", (64, 64), 255)
    ImageDraw.Draw(im).text((4, 20), "zz 123", fill=0)  # text, unlike every corpus drawing
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    th = examiner.no_match_threshold(wb, "drawing", "zero-shot")
    res, notes = _search(wb, buf.getvalue(), 3)
    weak = th.is_weak(res.hits[0].score)
    assert any(n.startswith("⚠️ no good match") for n in notes) == weak
    own = wb.corpus.image_path(wb.corpus["D0004"].figures[0])
    res, notes = _search(wb, own, 3)
    assert not any(n.startswith("⚠️") for n in notes)  # its own drawing: a perfect match


def test_combined_search_takes_the_filters(bench):
    from patent_demo.text.hybrid import default_text_list
    from patent_demo.text.search import candidate_text
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    h = Handlers(wb, store)
    path = str(wb.corpus.image_path(wb.corpus["D0006"].figures[0]))
    text = candidate_text(wb.corpus["D0006"])
    out = h.search_combined(path, text, "", "zero-shot", "dssdnet-untrained", 5, "ann", {"own_date": True})
    status, session = out[3], out[4]
    assert "cut-off 2015-06-01: the filing date of the query patent D0006" in status
    assert session["text_list"] == default_text_list()  # the Combined tab fuses HMCL with the default list
    for name in ("hmcl", default_text_list(), "rrf"):
        rows = session["lists"][name]
        assert rows and all(wb.corpus[row["id"]].date < "2015-06-01" for row in rows)
    assert len(session["lists"]["hmcl"]) == 5  # five of the six earlier patents, filled inside the search


def test_selecting_a_hit_opens_record_and_side_by_side(bench):
    import gradio as gr

    from patent_demo.ui.examiner import ExaminerHandlers
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    h, ex = Handlers(wb, store), ExaminerHandlers(wb, store)
    path = str(wb.corpus.image_path(wb.corpus["D0002"].figures[0]))
    session = h.search_drawing(path, "zero-shot", 4, True, True, "", "ann")[3]
    page, figs, pid, q, hit, caption = ex.open_drawing_hit(
        session, path, None, True, gr.SelectData(None, {"index": 1, "value": None})
    )
    assert pid == session["lists"]["hmcl"][1]["id"] and f"<h3>{pid}" in page and len(figs) == 3
    assert q.size == hit.size == (448, 448) and "as the encoder sees them" in caption
    from patent_demo.text.search import candidate_text

    tsession = h.search_text(candidate_text(wb.corpus["D0008"]), "", "dssdnet-untrained", 3, "ann")[6]
    page, figs, pid, qh, ch = ex.opener("bm25")(
        tsession, gr.SelectData(None, {"index": [0, 0], "value": None})
    )
    assert pid == tsession["lists"]["bm25"][0]["id"] and "<mark>" in qh and "<mark>" in ch


def test_every_drawing_search_leaves_out_its_own_patent_and_records_it(bench):
    """One drawing, a sheet and a whole application leave out the query's own patent (and family) alike and
    say so in the search history; the application is a labelling session of its own, so a label of its
    hit #3 names the application and that hit, never the drawing searched before."""
    from patent_demo.labels.sessions import label_from_session
    from patent_demo.ui.examiner import ExaminerHandlers
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    wb.index("zero-shot")  # built now: the handlers refuse a model whose index is still being built
    h, ex = Handlers(wb, store), ExaminerHandlers(wb, store)
    excl = {"exclude_own": True}
    first = h.search_drawing(
        str(wb.corpus.image_path(wb.corpus["D0002"].figures[0])), "zero-shot", 4, True, True, "", "ann", excl
    )
    views = [str(wb.corpus.image_path(f)) for f in wb.corpus["D0006"].figures]
    gallery, status, table, session, list_name, rank, cursor, _ = h.search_application(
        views, "zero-shot", 4, True, "ann", excl, first[3]
    )
    assert "hmcl" in session["lists"], status
    ids = [row["id"] for row in session["lists"]["hmcl"]]
    assert len(ids) == 4 and "D0006" not in ids
    assert "the query's own patent D0006 is left out" in status
    assert [caption.split()[1] for _, caption in gallery] == ids == [row[1] for row in table.data.values]
    assert (list_name, rank) == ("hmcl", 1) and cursor.startswith(f"**hmcl #1** · `{ids[0]}`")
    assert session["kind"] == "application" and session["query_id"].startswith("app-")
    assert session["owner"] == first[3]["owner"] and session["patent_id"] == "D0006"
    assert [e["kind"] for e in session["history"]] == ["drawing", "application"]
    assert "the query's own patent D0006 is left out" in session["history"][-1]["notes"]
    # the history's filters state the exclusion (not "no filter")
    assert session["history"][-1]["filters"].startswith("the query's own patent D0006 is left out")
    assert session["history"][0]["filters"].startswith("the query's own patent D0002 is left out")
    again = h.search_application(views[::-1], "zero-shot", 4, True, "ann", excl, session)[3]
    assert again["query_id"] == session["query_id"]  # the same views in another order: the same query
    stored = store.add(label_from_session(again, "hmcl", 3, "relevant", "ann"))
    assert (stored.query_id, stored.query_kind, stored.modality) == (
        session["query_id"],
        "application",
        "patent",
    )
    assert (stored.candidate_id, stored.rank, stored.query_patent_id) == (ids[2], 3, "D0006")
    assert (store.path.parent / stored.query_image_file).is_file()  # the views, kept as one sheet
    # a sheet that is a corpus drawing: its patent left out, and the history says so
    sheet = str(wb.corpus.image_path(wb.corpus["D0006"].figures[0]))
    gallery, status, table, overlay, session, *_ = ex.search_sheet(
        sheet, None, "zero-shot", 4, "ann", excl, again
    )
    assert "the query's own patent D0006 is left out" in status and session["patent_id"] == "D0006"
    assert "D0006" not in [row["id"] for row in session["lists"]["hmcl"]]
    assert "the query's own patent D0006 is left out" in session["history"][-1]["notes"]
    assert session["history"][-1]["filters"].startswith("the query's own patent D0006 is left out")
    # without the exclusion the application finds its own patent first
    plain = h.search_application(views, "zero-shot", 4, True, "ann", {}, None)[3]
    assert plain["lists"]["hmcl"][0]["id"] == "D0006" and plain["history"][-1]["filters"] == "no filter"
    failed = h.search_application([], "zero-shot", 4, True, "ann", excl, session)
    assert failed[1].startswith("⚠️ upload the views") and failed[3]["lists"] == {}
    assert len(failed[3]["history"]) == len(session["history"])


def test_the_combined_search_leaves_the_drawings_own_patent_out_of_every_list(bench):
    """A corpus drawing with another text: its patent is left out of the HMCL list, the text list and their
    fusion alike, as the status says (the text alone does not name the patent)."""
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    wb.index("zero-shot")
    h = Handlers(wb, store)
    own = wb.corpus["D0002"]
    text = f"{own.text} seen from the side"  # no corpus patent's text: only the drawing names the patent
    out = h.search_combined(
        str(wb.corpus.image_path(own.figures[0])),
        text,
        "",
        "zero-shot",
        "dssdnet-untrained",
        6,
        "ann",
        {"exclude_own": True},
    )
    session, status = out[4], out[3]
    assert set(session["lists"]) >= {"hmcl", "rrf"} and len(session["lists"]) == 3, status
    for name, rows in session["lists"].items():
        assert rows and own.id not in [r["id"] for r in rows], name
    assert "the query's own patent D0002 is left out" in status
    plain = h.search_combined(
        str(wb.corpus.image_path(own.figures[0])), text, "", "zero-shot", "dssdnet-untrained", 6, "ann", {}
    )[4]
    assert own.id in [r["id"] for r in plain["lists"]["rrf"]]  # without the exclusion it is there


def test_an_abstract_no_text_shares_a_word_with_says_what_the_other_lists_rank_by(bench):
    """BM25 finds nothing, the dense and hybrid lists still show hits: the status says both, not that nothing
    shares a word and no more (the hybrid table under it is full)."""
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    out = Handlers(wb, store).search_text("zzqxv qqvvk wwprt", "", "dssdnet-untrained", 5, "ann")
    status, session = out[2], out[6]  # the status, then the dense, hybrid and fused tables, then the session
    assert len(session["lists"]["bm25"]) == 0 and len(session["lists"]["hybrid"]) > 0
    assert "no corpus text shares a word with this abstract (BM25 found none)" in status
    assert "the dense and hybrid lists rank by meaning alone" in status


def test_a_drawing_search_reads_and_hashes_the_upload_once(bench, monkeypatch):
    """Handler to index, one request value: the uploaded file is read once and its bytes hashed once."""
    import builtins
    import hashlib
    import shutil

    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    up = wb.config.cache_dir / "upload.png"
    shutil.copy(wb.corpus.image_path(wb.corpus["D0002"].figures[0]), up)
    h = Handlers(wb, store)
    h.search_drawing(
        str(up), "zero-shot", 4, True, True, "", "ann"
    )  # index, figure hashes, calibration ready
    data, reads, hashes = up.read_bytes(), [], []
    real_open, real_sha = io.open, hashlib.sha256

    def counting_open(file, *a, **kw):
        reads.extend([file] if isinstance(file, str | type(up)) and str(file) == str(up) else [])
        return real_open(file, *a, **kw)

    def counting_sha(*a, **kw):
        hashes.extend([1] if a and bytes(a[0]) == data else [])
        return real_sha(*a, **kw)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(hashlib, "sha256", counting_sha)
    out = h.search_drawing(str(up), "zero-shot", 4, True, True, "", "ann", {"exclude_own": True})
    monkeypatch.undo()
    assert out[1].startswith("4 results") and "D0002" not in [r["id"] for r in out[3]["lists"]["hmcl"]]
    assert (len(reads), len(hashes)) == (1, 1)


def test_a_text_search_checks_its_abstract_once(bench, monkeypatch):
    from patent_demo import request
    from patent_demo.ui.handlers import Handlers

    wb, store = bench
    calls = []
    real = request.check_abstract
    monkeypatch.setattr(request, "check_abstract", lambda text: calls.append(text) or real(text))
    out = Handlers(wb, store).search_text(
        "a lamp with a shade and bulb", "26-05", "dssdnet-untrained", 3, "ann"
    )
    assert out[2].startswith("BM25 found") and len(calls) == 1


def test_an_application_keeps_its_views_as_searched_and_draws_its_sheet_from_them(bench):
    """The views are decoded once: the search returns them as it encoded them, and the sheet of views a label
    keeps, drawn from them (no second decode or crop), matches the one drawn from the uploads' bytes."""
    import numpy as np

    from patent_demo.drawing.application import views_sheet

    wb, _ = bench
    views = [wb.corpus.image_path(wb.corpus[p].figures[0]).read_bytes() for p in ("D0001", "D0004", "D0007")]
    res = wb.search_application(DrawingRequest.application(wb, views, "zero-shot", 5))
    assert len(res.views) == 3 and all(v.mode == "L" for v in res.views)
    again = wb.encoder(wb.model("zero-shot", "drawing")).encode(res.views)
    assert np.allclose(np.asarray(again), res.query_embedding, atol=1e-5)  # what was searched
    a = np.asarray(Image.open(io.BytesIO(views_sheet(views))), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(views_sheet(res.views, cropped=True))), dtype=float)
    assert a.shape == b.shape and np.abs(a - b).mean() < 2.0
