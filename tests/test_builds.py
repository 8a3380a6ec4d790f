"""What is being built, with the time left: the page's status line and the console, and a drawing search that
waits for the index it needs instead of being refused.

Tests: patent_demo/builds.py, patent_demo/workbench.py, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from patent_demo.builds import Build, Builds
from patent_demo.drawing.embed import embed_figures
from patent_demo.registry import ZERO_SHOT
from tests.support.tiny import PixelEncoder, make_workbench


def test_the_time_left_is_the_rest_at_the_rate_so_far():
    b = Build("embedding 100 drawings with x", 100, "drawings", started=0.0)
    b.ended = 20.0  # 20 s for what is done
    b.update(10)
    assert b.left() is None  # one update: the first batch pays for warming up
    assert "estimating the time left" in b.line()
    b.update(30)
    assert b.left() == pytest.approx(30.0)  # 60 more at 40 per 20 s
    assert b.line() == "embedding 100 drawings with x: 40 of 100 drawings · 40 % · about 30 s left"
    b.update(10)
    b.started = -280.0  # 300 s for 50: 300 s more
    assert b.line().endswith("about 5 min 00 s left")


def test_status_lists_running_builds_with_a_bar_and_escapes_names():
    builds = Builds(console=False)
    a = builds.bar(10, "embedding <10> drawings", "drawings")
    a.update(4)
    with builds.step("the BM25 index of 3 patents") as one:
        html = builds.status_html()
        assert one in builds.running()
    assert html.count("<progress") == 2 and 'value="4" max="10"' in html and "&lt;10&gt;" in html
    assert "the BM25 index of 3 patents: 0 s so far" in html
    a.close()
    assert builds.running() == [] and builds.status_html() == ""
    assert [b.name for b in builds.finished()] == ["embedding <10> drawings", "the BM25 index of 3 patents"]


def test_a_build_is_found_by_what_it_builds_not_by_its_wording():
    builds = Builds(console=False)
    dense = builds.of("the dense text index").bar(10, "embedding 10 patent texts", "texts")
    with builds.of("the drawing index of zero-shot").step("whatever the words"):
        assert [b.name for b in builds.running("the drawing index of zero-shot")] == ["whatever the words"]
        assert builds.running("the dense text index") == [dense] and len(builds.running()) == 2
    dense.close()
    assert builds.running() == [] and len(builds.finished()) == 2  # one list, shared by every view


def test_an_embedding_loop_reports_to_its_build_and_the_console_says_how_long(capsys):
    builds = Builds(console=True)
    out = embed_figures(
        lambda batch: np.ones((len(batch), 3)), range(7), batch_size=3, progress=builds, desc="x"
    )
    assert out.shape == (7, 3)
    (b,) = builds.finished()
    assert (b.done, b.total, b.updates) == (7, 7, 3)
    assert f"built x in {b.seconds:.1f} s" in capsys.readouterr().err


def test_a_drawing_search_waits_for_the_index_being_built_and_the_page_shows_it(tmp_path):
    from patent_demo.labels.store import LabelStore
    from patent_demo.ui.handlers import Handlers

    wb, fast = make_workbench(tmp_path)
    gate = threading.Event()

    class Slow(PixelEncoder):
        def encode(self, images):
            gate.wait(30)
            return super().encode(images)

    wb._drawing_factory = lambda spec: Slow()
    warm = threading.Thread(target=wb.index, args=(ZERO_SHOT,), daemon=True)
    warm.start()
    for _ in range(200):  # the build registers before its first batch
        if wb.builds.running():
            break
        threading.Event().wait(0.02)
    status = wb.index_status()
    assert "<progress" in status and "drawings with" in status and "estimating the time left" in status
    h = Handlers(wb, LabelStore(tmp_path / "l.sqlite"))
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (h._ready(ZERO_SHOT), done.set()), daemon=True)
    waiter.start()
    assert not done.wait(0.5)  # waiting for the build, not refused
    gate.set()
    assert done.wait(30) and wb.index_ready(ZERO_SHOT)
    warm.join(30)
    assert wb.index_status() == ""


def test_a_text_search_during_the_warm_up_answers_with_bm25_and_says_what_follows(tmp_path):
    """A cold start: while the warm-up has not built the dense index, the Text button answers at once with
    BM25's list (the cursor on it) and a line on the dense index's build; once built, every list."""
    from patent_demo.labels.store import LabelStore
    from patent_demo.request import TextRequest
    from patent_demo.search.text import BM25_ONLY
    from patent_demo.ui.handlers import Handlers

    wb, _ = make_workbench(tmp_path)
    hold = threading.Event()
    wb._warm_thread = threading.Thread(
        target=hold.wait, args=(30,), daemon=True
    )  # the warm-up, not yet at dense
    wb._warm_thread.start()
    lists, notes = wb.search_text(TextRequest.build("lamp with a shade and bulb", "", k=5))
    assert len(lists["bm25"]) and all(not len(lists[n]) for n in ("dense", "hybrid", "dssdnet", "fused"))
    (note,) = [n for n in notes if n.startswith(BM25_ONLY)]
    assert "the dense text index is being built: it starts when the drawing index is built;" in note
    h = Handlers(wb, LabelStore(tmp_path / "l.sqlite"))
    out = h.search_text("lamp with a shade and bulb", "", "dssdnet-untrained", 5, "ann")
    status, cursor = out[2], out[-1]
    assert status.startswith(f"BM25 found {len(lists['bm25'])} · {BM25_ONLY}"), status
    assert "re-ranked" not in status and "bm25 #1" in str(out), cursor
    path = str(wb.corpus.image_path(wb.corpus["D0006"].figures[0]))  # a drawing and an abstract: BM25's list
    out = h.search_combined(
        path, "lamp with a shade and bulb", "", "zero-shot", "dssdnet-untrained", 5, "ann"
    )
    status, session = out[3], out[4]
    assert session["text_list"] == "bm25" and session["lists"]["bm25"], status
    assert "HMCL and the bm25 text list (BM25's alone for now) fused" in status and BM25_ONLY in status
    hold.set()
    wb._warm_thread.join(30)
    lists, notes = wb.search_text(TextRequest.build("lamp with a shade and bulb", "", k=5))
    assert len(lists["hybrid"]) and len(lists["dssdnet"]) and not any(n.startswith(BM25_ONLY) for n in notes)
