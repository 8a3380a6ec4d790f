"""Refine with my labels: a drawing search (one page, a sheet's figures, a whole application) ranked again
with the annotator's labels of the query, on the real Red Book corpus built with the CLI, through the app's
handlers; the refined rankings checked against a plain numpy computation of the same cosine ranking.

Tests: patent_demo/search/refine.py, patent_demo/ui/refine.py, patent_demo/search/, patent_demo/search/sheet.py
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pytest

from patent_demo.hits import Hit
from patent_demo.labels.store import LabelStore, image_query_id
from patent_demo.search.feedback import Feedback, refine
from patent_demo.search.refine import NEEDS_A_LABEL, arrange, moved, text_feedback_note
from patent_demo.ui.examiner import ExaminerHandlers
from patent_demo.ui.handlers import Handlers
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.refine import NO_DRAWING_QUERY
from patent_demo.ui.views import BADGES
from patent_demo.workbench import Workbench, WorkbenchConfig

pytestmark = pytest.mark.slow
EXCLUDE_OWN = {"exclude_own": True}


@pytest.fixture(scope="module")
def app(redbook_cli, tmp_path_factory):
    """(workbench, store, handlers, label handlers, examiner handlers, the Red Book source folder)."""
    corpus, cache, src = redbook_cli
    wb = Workbench(WorkbenchConfig(cache_dir=cache, corpus=corpus, checkpoint_dirs=()), progress=False)
    wb.warm_up(text=False)
    store = LabelStore(tmp_path_factory.mktemp("refine") / "labels.sqlite")
    yield wb, store, Handlers(wb, store), LabelHandlers(wb, store), ExaminerHandlers(wb, store), src
    store.close()


def _page(src, patent: str, page: int = 2):
    return next(src.glob(f"{patent}-*/*-D{page:05d}.TIF"))


def _ids(session) -> list[str]:
    return [row["id"] for row in session["lists"]["hmcl"]]


def _naive_patents(wb, q: np.ndarray, allowed: set[str], agg=np.max) -> list[str]:
    """Patents ranked by cosine with ``q`` ([D], or [V, D] aggregated by ``agg`` over the views of each
    view's best figure), with a plain loop over the index's stored embeddings."""
    index = wb.index("zero-shot")
    q = np.atleast_2d(q)
    best: dict[str, np.ndarray] = {}
    for e, pid in zip(index.embeddings, index.patent_ids, strict=True):
        if pid in allowed:
            s = q @ (e / np.linalg.norm(e))
            best[pid] = np.maximum(best[pid], s) if pid in best else s
    return sorted(best, key=lambda p: -float(agg(best[p])))


def _patent_vector(wb, q: np.ndarray, pid: str) -> np.ndarray:
    """A labelled patent's vector by the configured rule (``Feedback.hits``), with a plain loop: the mean
    of its unit figure vectors, or its figure closest to ``q`` (mean cosine over the rows of ``q``)."""
    index = wb.index("zero-shot")
    figs = [
        e / np.linalg.norm(e) for e, p in zip(index.embeddings, index.patent_ids, strict=True) if p == pid
    ]
    if Feedback.load().hits == "mean":
        return np.mean(figs, axis=0)
    raw = [e for e, p in zip(index.embeddings, index.patent_ids, strict=True) if p == pid]
    return raw[int(np.argmax([float(np.mean(np.atleast_2d(q) @ e)) for e in raw]))]


def _label(lh, session, rank, grade, who="ann"):
    msg = lh.do_label(grade, "hmcl", rank, "", "", who, session, "", False)[0]
    assert msg.startswith(f"✓ {grade}"), msg
    return session["lists"]["hmcl"][rank - 1]["id"]


def test_a_refine_without_a_drawing_query_a_name_or_a_label_says_what_it_needs(app):
    wb, store, h, lh, ex, src = app
    out = h.refine_drawing(None, "ann")
    assert out[1] == f"⚠️ {NO_DRAWING_QUERY}" and len(out) == 8  # every other output left as it is
    assert all(isinstance(x, dict) and x.get("__type__") == "update" for i, x in enumerate(out) if i != 1)
    session = h.search_drawing(
        str(_page(src, "USD0913174")), "zero-shot", 10, True, True, "", "ann", EXCLUDE_OWN
    )[3]
    assert h.refine_drawing(session, "ann")[1] == f"⚠️ {NEEDS_A_LABEL}"
    assert h.refine_drawing(session, "")[1].startswith("⚠️ enter your name (or sign in) first")
    text = {"kind": "text", "query_id": "txt-0", "lists": {"bm25": []}}
    assert "not offered for text" in h.refine_drawing(text, "ann")[1]


def test_a_single_page_refines_with_this_annotators_labels_and_files_later_labels_on_the_query(
    app, monkeypatch
):
    wb, store, h, lh, ex, src = app
    page = _page(src, "USD0913174")
    out = h.search_drawing(str(page), "zero-shot", 10, True, True, "", "ann", EXCLUDE_OWN)
    session, shown = out[3], _ids(out[3])
    rel = [_label(lh, session, 2, "relevant"), _label(lh, session, 5, "relevant")]
    nots = [_label(lh, session, 3, "not")]
    _label(lh, session, 7, "relevant", who="bob")  # another annotator's label of the same query: not used
    spec = wb.model("zero-shot", "drawing")
    monkeypatch.setattr(  # a refine encodes nothing: the query's and the hits' vectors are kept
        wb.encoder(spec), "encode", lambda *a, **k: pytest.fail("a refine re-encoded a drawing")
    )
    gallery, status, table, refined, list_name, rank, cursor, progress = h.refine_drawing(session, "ann")
    assert status.startswith("↻ Refined with 3 labels of ann on this query (2 relevant, 1 not)"), status
    assert (
        "among the unlabelled, ranked among themselves: " in status
        and "the query's own patent USD0913174 is left out" in status
    )
    ids = _ids(refined)
    labelled = [p for p in shown if p in rel + nots]
    assert ids[:3] == labelled  # the labelled on top, in the order they were shown, each with its badge
    badges = [[b for g, b in BADGES.items() if b in caption] for _, caption in gallery]
    assert badges == [[BADGES["not" if p in nots else "relevant"]] for p in labelled] + [[]] * (len(ids) - 3)
    assert table.data["label"].tolist()[:3] == [BADGES["not" if p in nots else "relevant"] for p in labelled]
    assert set(table.data["label"].tolist()[3:]) == {""}
    # the others: the plain cosine ranking of the refined query, own patent left out, k = 10 of them
    q = np.asarray(session["basis"].vector)
    moved_q = refine(
        q,
        [_patent_vector(wb, q, r["id"]) for r in session["lists"]["hmcl"] if r["id"] in rel],
        [_patent_vector(wb, q, r["id"]) for r in session["lists"]["hmcl"] if r["id"] in nots],
        Feedback.load(),
    ).vector
    allowed = {p.id for p in wb.corpus} - {"USD0913174"}
    expected = [p for p in _naive_patents(wb, moved_q, allowed) if p not in labelled][:10]
    assert ids[3:] == expected
    assert (list_name, rank) == ("hmcl", 4) and "hmcl #4" in cursor  # the cursor on the first unlabelled hit
    assert (
        refined["query_id"]
        == session["query_id"]
        == image_query_id(hashlib.sha256(page.read_bytes()).hexdigest())
    )
    assert refined["history"][-1]["kind"] == "drawing refined" and len(refined["history"]) == 2
    # a label on the refined list files against the original query, with the hit and rank shown
    msg = lh.do_label("partly", "hmcl", 4, "", "", "ann", refined, "", False)[0]
    assert msg.startswith(f"✓ partly · {ids[3]} (hmcl #4)")
    row = (
        sqlite3.connect(store.path)
        .execute("SELECT query_id, candidate_id, list_name, rank FROM labels ORDER BY id DESC LIMIT 1")
        .fetchone()
    )
    assert row == (session["query_id"], ids[3], "hmcl", 4)
    # undo takes the label out of the next refine; the refined list is the basis of nothing (no drift)
    assert lh.undo("ann", refined)[0].startswith("↶ undid partly")
    again = h.refine_drawing(refined, "ann")
    assert again[1].startswith("↻ Refined with 3 labels of ann on this query (2 relevant, 1 not)")
    assert _ids(again[3]) == ids
    summary = h.training()[0]
    assert summary.startswith("**Labels used now** (Refine with my labels): 3 labels by 2 refines in this")


def test_a_sheets_figures_and_an_application_refine(app):
    from patent_demo.drawing.sheets import split_sheet
    from patent_demo.imageio import load_drawing

    wb, store, h, lh, ex, src = app
    sheet = next(
        f
        for d in sorted(src.iterdir())
        for f in sorted(d.glob("*.TIF"))
        if len(split_sheet(load_drawing(f.read_bytes(), crop=False, square=False))) >= 2
    )
    own = sheet.parent.name.split("-")[0]
    out = ex.search_sheet(str(sheet), None, "zero-shot", 8, "ann", EXCLUDE_OWN)
    session = out[4]
    basis = session["basis"]
    assert basis.kind == "sheet" and basis.vector.shape[0] == len(basis.names) >= 2
    rel = _label(lh, session, 3, "relevant")
    refined = h.refine_drawing(session, "ann")
    assert refined[1].startswith("↻ Refined with 1 label of ann on this query (1 relevant)"), refined[1]
    rows = refined[3]["lists"]["hmcl"]
    assert rows[0]["id"] == rel and all("matched by " in r["view"] for r in rows)
    moved_q = refine(basis.vector, [_patent_vector(wb, basis.vector, rel)], [], Feedback.load()).vector
    allowed = {p.id for p in wb.corpus} - {own}
    assert [r["id"] for r in rows[1:]] == [p for p in _naive_patents(wb, moved_q, allowed) if p != rel][:8]

    views = sorted((src / sheet.parent.name).glob("*.TIF"))[:3]
    out = h.search_application([str(v) for v in views], "zero-shot", 6, True, "ann", EXCLUDE_OWN)
    session = out[3]
    assert session["kind"] == "application" and session["basis"].vector.shape[0] == len(views)
    nots = _label(lh, session, 1, "not")
    rel = _label(lh, session, 2, "relevant")
    refined = h.refine_drawing(session, "ann")
    assert refined[1].startswith("↻ Refined with 2 labels of ann on this query (1 relevant, 1 not)")
    ids = _ids(refined[3])
    assert ids[:2] == [nots, rel] and refined[3]["query_id"] == session["query_id"]
    assert all(r["view"].startswith("all views") for r in refined[3]["lists"]["hmcl"])
    hmcl = session["lists"]["hmcl"]
    moved_q = refine(
        session["basis"].vector,
        [_patent_vector(wb, session["basis"].vector, hmcl[1]["id"])],
        [_patent_vector(wb, session["basis"].vector, hmcl[0]["id"])],
        Feedback.load(),
    ).vector
    expected = [p for p in _naive_patents(wb, moved_q, allowed, agg=np.mean) if p not in (nots, rel)]
    assert ids[2:] == expected[:6]


def test_the_labelled_stay_on_top_and_the_line_says_what_moved(tmp_path):
    class Lab:
        def __init__(self, score, figure=""):
            self.score, self.candidate_figure = score, figure

    hits = [Hit(r, p, 1 - r / 10) for r, p in enumerate(["A", "B", "C", "D", "E"], 1)]
    out = arrange(None, hits, {"C": Lab(0.5), "A": Lab(0.9)}, ["B", "C", "A"], 2, "drawing")
    assert [(h.rank, h.patent_id) for h in out] == [(1, "C"), (2, "A"), (3, "B"), (4, "D")]
    assert moved(["B", "D", "X"], ["D", "B", "E"], top=3) == (
        "1 new in the top 3 (E); biggest moves: B 1→2, D 2→1"
    )
    assert moved(["B"], ["B"]) == "0 new in the top 10; no other rank changed"
    config = tmp_path / "feedback.json"
    config.write_text(json.dumps({"text": {"offered": False, "reason": "it lost 0.006 on validation"}}))
    assert text_feedback_note(config).endswith(
        "not for text: it lost 0.006 on validation (docs/feedback_text.md)."
    )
    config.write_text(json.dumps({"text": {"offered": True}}))
    assert text_feedback_note(config) == ""
