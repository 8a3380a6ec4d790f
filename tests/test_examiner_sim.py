"""The simulated examiner (``scripts/examiner_sim.py``): which ranks it judges, its oracle, and, against a live
app on a free port, that its labels land in the app's store on exactly the hits the table showed, under its
name, with the oracle's grade."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.labels.store import LabelStore
from patent_demo.request import DrawingRequest
from tests.conftest import REPO_ROOT, free_port
from tests.support.tiny import make_workbench


def load_sim():
    spec = importlib.util.spec_from_file_location("examiner_sim", REPO_ROOT / "scripts" / "examiner_sim.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


sim = load_sim()


def test_topk_judges_the_first_page_and_spread_reaches_past_it():
    assert sim.judged_ranks("topk", 10, 10) == list(range(1, 11))
    assert sim.judged_ranks("topk", 10, 4) == [1, 2, 3, 4]
    assert sim.shown("spread", 10) == 50
    assert sim.judged_ranks("spread", 10, 50) == [1, 2, 3, 4, 6, 9, 14, 21, 32, 50]
    short = sim.judged_ranks("spread", 10, 12)  # fewer hits than asked: still 10 distinct ranks within them
    assert len(short) == 10 and len(set(short)) == 10 and max(short) <= 12 and short == sorted(short)
    with pytest.raises(ValueError):
        sim.shown("random", 10)


def test_drawing_oracle_same_subclass_relevant_same_class_partly():
    q = Patent("US1", codes={"uspc": ["D6/369"]})
    assert sim.drawing_grade(q, Patent("US2", codes={"uspc": ["D6/369"]})) == 2
    assert sim.drawing_grade(q, Patent("US3", codes={"uspc": ["D6/380"]})) == 1
    assert sim.drawing_grade(q, Patent("US4", codes={"uspc": ["D7/500"]})) == 0
    assert sim.drawing_grade(q, Patent("US5")) == 0  # unclassified: never relevant


def test_text_oracle_cited_or_citing_in_either_direction(tmp_path):
    a, b, c, d = (Patent(x, kind="utility", text="t") for x in ("A", "B", "C", "D"))
    a.citations = ["D"]
    corpus = Corpus(tmp_path, [a, b, c, d], qrels={"A": {"B": 1}, "C": {"A": 1}})
    assert sim.text_grade(corpus, a, "B") == 2  # A cites B (qrels)
    assert sim.text_grade(corpus, a, "C") == 2  # C cites A
    assert sim.text_grade(corpus, a, "D") == 2  # A's own citation list
    assert sim.text_grade(corpus, b, "C") == 0


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from patent_demo.ui.blocks import build_demo
    from patent_demo.ui.serve import launch_kwargs

    tmp = tmp_path_factory.mktemp("sim")
    wb, _ = make_workbench(tmp)
    wb.warm_up()
    store = LabelStore(tmp / "labels" / "labels.sqlite")
    demo = build_demo(wb, store)
    port = free_port()
    demo.queue().launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs(wb)
    )
    yield f"http://127.0.0.1:{port}/", wb, store
    demo.close()
    store.close()


@pytest.mark.slow
def test_the_examiner_labels_through_the_app_what_the_table_showed(live):
    url, wb, store = live
    examiner = sim.Examiner(url, "sim-test")
    query = wb.corpus["D0004"]
    hits = wb.search_drawing(
        DrawingRequest.build(wb, wb.corpus.image_path(query.figures[0]), "zero-shot", 5)
    ).hits
    shown_ids = [h.patent_id for h in hits if h.patent_id != query.id][
        :4
    ]  # the app leaves the query's own out
    judged = examiner.drawing_query(wb.corpus, query, "zero-shot", "topk", 4)
    rows = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT annotator, query_patent_id, candidate_id, rank, label, list_name FROM labels WHERE undone = 0 "
            "ORDER BY rank"
        )
        .fetchall()
    )
    assert len(rows) == 4 == len(judged)
    assert [r[2] for r in rows] == shown_ids  # the hits the app showed, in its order; never the query itself
    assert query.id not in shown_ids
    assert {(r[0], r[1], r[5]) for r in rows} == {("sim-test", query.id, "hmcl")}
    expected = [sim.GRADE_NAMES[sim.drawing_grade(query, wb.corpus[c])] for c in shown_ids]
    assert [r[4] for r in rows] == expected == [g for _, g in judged]
    assert [c for c, _ in judged] == shown_ids
