"""The app with ``--backend qdrant`` and a server that does not answer: a ⚠️ message, FAISS's answer when
``--backend-fallback faiss`` is configured, and no label lost (on the tiny corpus and models of
``tests/support/tiny.py``).

Tests: patent_demo/ui/handlers.py, patent_demo/ui/args.py, patent_demo/backends.py, patent_demo/examiner.py
"""

from __future__ import annotations

import pytest

from patent_demo.labels.store import LabelStore
from tests.support.live import UNREACHABLE
from tests.support.tiny import make_workbench

pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.slow
DOWN = {"backend": "qdrant", "backend_url": UNREACHABLE, "backend_timeout": 2}


def test_the_engine_down_is_a_warning_faiss_answers_and_no_label_is_lost(tmp_path):
    from patent_demo.ui.handlers import Handlers
    from patent_demo.ui.labelling import LabelHandlers

    store = LabelStore(tmp_path / "labels.sqlite")
    plain, _ = make_workbench(tmp_path / "faiss")
    wb, _ = make_workbench(tmp_path / "fallback", backend_fallback="faiss", **DOWN)
    plain.warm_up(), wb.warm_up()  # FAISS indexes built (the handlers refuse an index still building)
    path = str(wb.corpus.image_path(wb.corpus["D0002"].figures[0]))
    filters = {"exclude_own": True, "classification": "07"}
    h = Handlers(wb, store)
    gallery, status, table, session, *_ = h.search_drawing(
        path, "zero-shot", 4, True, True, "", "ann", filters
    )
    assert "⚠️ the search engine (http://127.0.0.1:9) did not answer" in status
    assert "FAISS answered instead (--backend-fallback)" in status
    expected = Handlers(plain, store).search_drawing(path, "zero-shot", 4, True, True, "", "ann", filters)[3]
    assert [x["id"] for x in session["lists"]["hmcl"]] == [x["id"] for x in expected["lists"]["hmcl"]]
    assert "D0002" not in [x["id"] for x in session["lists"]["hmcl"]]  # the filters held in the fallback
    msg, *_ = LabelHandlers(wb, store).do_label("relevant", "hmcl", 1, "", "", "ann", session)
    assert msg.startswith("✓ relevant")
    # the text lists: the dense list from FAISS, with the same warning
    query = ("lamp with a shade and bulb", "", "dssdnet-untrained", 5, "ann")
    bm25, dss, text_status, _dense, _hybrid, _fused, text_session, *_ = h.search_text(*query)
    assert "⚠️ the search engine (http://127.0.0.1:9) did not answer" in text_status
    plain_session = Handlers(plain, store).search_text(*query)[6]
    assert [x["id"] for x in text_session["lists"]["hybrid"]] == [
        x["id"] for x in plain_session["lists"]["hybrid"]
    ]
    assert len(text_session["lists"]["hybrid"]) == 5  # the dense list filled the hybrid past BM25's 2 hits

    # no fallback: the search is a ⚠️ message; the label stored before is still there
    down, _ = make_workbench(tmp_path / "down", **DOWN)
    down.warm_up()
    out = Handlers(down, store).search_drawing(path, "zero-shot", 4, True, True, "", "ann", filters, session)
    assert out[1].startswith("⚠️ the search engine (http://127.0.0.1:9) did not answer: ")
    assert out[1].endswith("or start the app with --backend-fallback faiss")
    labels = [lab for lab in store.labels() if lab.annotator == "ann"]
    assert [(lab.candidate_id, lab.label) for lab in labels] == [
        (session["lists"]["hmcl"][0]["id"], "relevant")
    ]


def test_the_app_flags_reach_the_workbench_config():
    from patent_demo.ui.args import parse_args

    args = parse_args(
        [
            "--backend",
            "qdrant",
            "--url",
            "http://qdrant-1:6333",
            "--backend-fallback",
            "faiss",
            "--backend-timeout",
            "3",
        ]
    )
    assert (args.backend, args.backend_url, args.backend_fallback, args.backend_timeout) == (
        "qdrant",
        "http://qdrant-1:6333",
        "faiss",
        3.0,
    )
