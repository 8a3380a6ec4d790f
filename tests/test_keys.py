"""The server side of the page's key queue (``LabelHandlers.key``): an entry names the hit it labels by id
(``sessions.hit_ref``), so its label lands on that hit or is refused with a message (a hit of an earlier
search, one the list on screen does not hold, an entry that is no entry); moves and undo go through it
too, and every answer returns the entry's request key. A label of a sheet search stores the query figure,
and the HMCL export carries it. The browser side is ``tests/test_browser_keys.py``.

Tests: patent_demo/ui/keys.py, patent_demo/ui/labelling.py, patent_demo/labels/sessions.py, patent_demo/labels/exports.py
"""

from __future__ import annotations

import json

import pytest

from patent_demo.labels.sessions import STALE_HIT, hit_ref, label_from_session, rank_of_hit
from patent_demo.labels.store import LabelError, LabelStore
from patent_demo.ui.handlers import Handlers
from patent_demo.ui.keys import GRADE_BUTTONS, MOVE_BUTTONS, UNDO_BUTTON, queue_js
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.serve import SHORTCUTS
from tests.support.tiny import make_workbench


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    wb, _ = make_workbench(tmp)
    wb.index("zero-shot")  # built now: the handlers refuse a model whose index is still being built
    return wb, LabelStore(tmp / "labels.sqlite")


def _search(wb, store, pid: str, previous=None) -> dict:
    """The session of a drawing search with the first figure of ``pid``."""
    h = Handlers(wb, store)
    out = h.search_drawing(
        str(wb.corpus.image_path(wb.corpus[pid].figures[0])),
        "zero-shot",
        5,
        True,
        True,
        "",
        "ann",
        {},
        previous,
    )
    assert "hmcl" in out[3]["lists"], out[1]
    return out[3]


def _entry(action: str, hit=None, key: str = "k1", **more) -> str:
    return json.dumps({"key": key, "action": action, "hit": hit, **more})


def test_an_entry_labels_the_hit_it_names_and_returns_its_key(bench):
    wb, store = bench
    lh = LabelHandlers(wb, store)
    session = _search(wb, store, "D0002")
    hit = hit_ref(session, "hmcl", 3)
    status, _, list_name, rank, cursor, ack = lh.key(
        _entry("partly", hit, "key-a", auto=True), "ann-a", session
    )
    assert (list_name, rank, ack) == ("hmcl", 4, "key-a"), status
    (lab,) = [x for x in store.labels() if x.annotator == "ann-a"]
    assert (lab.candidate_id, lab.rank, lab.label, lab.idempotency_key) == (hit["id"], 3, "partly", "key-a")
    assert cursor.startswith("**hmcl #4**")
    again = lh.key(_entry("partly", hit, "key-a", auto=False), "ann-a", session)  # sent twice: stored once
    assert "already stored" in again[0] and again[3] == 3 and again[5] == "key-a"
    assert len([x for x in store.labels() if x.annotator == "ann-a"]) == 1


def test_an_entry_of_an_earlier_search_or_of_no_hit_on_screen_is_refused(bench):
    wb, store = bench
    lh = LabelHandlers(wb, store)
    first = _search(wb, store, "D0002")
    hit = hit_ref(first, "hmcl", 2)
    second = _search(wb, store, "D0002", first)  # the same query searched again: another search
    assert second["search"] != first["search"] and second["query_id"] == first["query_id"]
    status, *_, ack = lh.key(_entry("relevant", hit, "key-b"), "ann-b", second)
    assert STALE_HIT in status and ack == "key-b"
    missing = {**hit_ref(second, "hmcl", 1), "id": "D9999"}
    status, *_, ack = lh.key(_entry("relevant", missing, "key-c"), "ann-b", second)
    assert "'D9999' is not a hit of the 'hmcl' list on screen" in status and ack == "key-c"
    assert not [x for x in store.labels() if x.annotator == "ann-b"]
    for bad, says in (("not json", "one JSON object"), (_entry("delete"), "names a label")):
        status, *_, ack = lh.key(bad, "ann-b", second)
        assert says in status and ack == ""
    with pytest.raises(LabelError, match="run a search first"):
        rank_of_hit({"lists": {}}, hit)
    with pytest.raises(LabelError, match="earlier search"):  # the rank given does not matter
        label_from_session(second, "hmcl", 2, "relevant", "ann-b", hit=hit)


def test_goto_and_undo_entries_move_the_cursor_in_order(bench):
    wb, store = bench
    lh = LabelHandlers(wb, store)
    session = _search(wb, store, "D0003")
    out = lh.key(_entry("goto", hit_ref(session, "hmcl", 5), "key-d"), "ann-c", session)
    assert out[2:4] == ("hmcl", 5) and out[5] == "key-d"
    lh.key(_entry("relevant", hit_ref(session, "hmcl", 2), "key-e", auto=True), "ann-c", session)
    status, _, list_name, rank, _, ack = lh.key(_entry("undo", key="key-f"), "ann-c", session)
    assert status.startswith("↶ undid relevant") and (list_name, rank, ack) == ("hmcl", 2, "key-f")
    assert not [x for x in store.labels() if x.annotator == "ann-c"]


def test_sheet_labels_keep_their_query_figure_through_the_export(bench, tmp_path):
    from patent_demo.ui.examiner import ExaminerHandlers

    wb, store = bench
    ex = ExaminerHandlers(wb, store)
    sheet = str(wb.corpus.image_path(wb.corpus["D0004"].figures[0]))
    out = ex.search_sheet(sheet, None, "zero-shot", 4, "ann-d", {}, None)
    session = out[4]
    row = session["lists"]["hmcl"][0]
    name, box = row["extras"]["query_figure"], row["extras"]["query_box"]
    lab = store.add(label_from_session(session, "hmcl", 1, "relevant", "ann-d"))
    assert lab.query_figure == {"name": name, "box": box} and len(box) == 4
    assert store.labels(query_id=lab.query_id)[-1].query_figure == lab.query_figure  # read back
    files = store.export_all(tmp_path)
    rows = [json.loads(x) for x in files["hmcl.jsonl"][0].read_text().splitlines()]
    (mine,) = [r for r in rows if r["query_id"] == lab.query_id]
    assert mine["positives"][0]["query_figure"] == {"name": name, "box": box}
    plain = _search(wb, store, "D0001")  # a drawing searched whole: no query figure
    assert store.add(label_from_session(plain, "hmcl", 1, "not", "ann-d")).query_figure == {}


def test_every_shortcut_is_in_the_queue_script_and_other_keys_are_plain_clicks():
    """Each key of ``SHORTCUTS`` reaches the script; the label panel's buttons are queued entries, any other
    button (a key added for another part of the page) a plain click in its turn."""
    script = queue_js(SHORTCUTS)
    config = json.loads(script[script.index("const CFG = ") + 12 : script.index(";\nconst Q")])
    assert config["shortcuts"] == SHORTCUTS
    panel = {*GRADE_BUTTONS, *MOVE_BUTTONS, UNDO_BUTTON}
    assert set(SHORTCUTS.values()) >= panel
    assert "action: 'click', id: id" in script
