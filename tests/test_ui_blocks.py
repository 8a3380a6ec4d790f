"""The page config gradio deep-copies for every page load holds no reference to the workbench (a bound
method there copied the whole corpus: a 1M-figure corpus never answered its first page).

Tests: patent_demo/ui/blocks.py
"""

from __future__ import annotations

import copy

from gradio.utils import safe_deepcopy

from patent_demo.labels.store import LabelStore
from patent_demo.ui.blocks import build_demo
from patent_demo.workbench import Workbench
from tests.support.tiny import make_workbench


def test_the_page_config_copies_without_the_workbench(tmp_path, monkeypatch):
    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    copied: list[str] = []

    def refuse(self, memo):
        copied.append(type(self).__name__)
        return self

    monkeypatch.setattr(Workbench, "__deepcopy__", refuse, raising=False)
    monkeypatch.setattr(LabelStore, "__deepcopy__", refuse, raising=False)
    safe_deepcopy(demo.config)  # what gradio's "/" route does with it
    copy.deepcopy(demo.config)
    assert copied == []


def test_enter_in_the_number_box_opens_the_record(tmp_path):
    """The Document tab's number box: Enter (its submit) runs the Open button's handler on the box, with the
    same outputs, and is not a second API endpoint."""
    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    ids = {getattr(b, "elem_id", None): b._id for b in demo.blocks.values()}
    by_target = {(t[0], t[1]): fn for fn in demo.fns.values() for t in fn.targets}
    submit, click = by_target[(ids["doc-id"], "submit")], by_target[(ids["doc-open"], "click")]
    assert submit.fn == click.fn and submit.fn.__name__ == "document"
    assert [b._id for b in submit.inputs] == [b._id for b in click.inputs] == [ids["doc-id"]]
    assert [b._id for b in submit.outputs] == [b._id for b in click.outputs]
    assert click.api_name == "open_document" and submit.api_visibility == "private"
    pid = wb.corpus.patents[0].id
    page, _, opened = submit.fn(pid)
    assert opened == pid and f"<h3>{pid} · " in page


def test_every_hit_table_shows_the_publication_date(tmp_path):
    """The drawing, application, text and combined tables each have a "published" column with the hit's
    publication date (``Patent.date``) beside its title, badged "· E" for an earlier application."""
    from patent_demo.ui.views import table_value

    wb, _ = make_workbench(tmp_path)
    p = wb.corpus.patents[0]
    p.date = "2021-08-31"
    row = {"id": p.id, "score": 0.5, "extras": {}, "view": "front"}
    for kind, title_at in (("image", 5), ("application", 5), ("text", 4), ("combined", 3)):
        frame = table_value(wb, {"kind": kind, "lists": {"hmcl": [row]}}, "hmcl", {}, None)
        assert list(frame.columns)[title_at : title_at + 2] == ["title", "published"], kind
        assert frame["published"][0] == "2021-08-31", kind
        badged = {**row, "extras": {"prior_art": "E"}}  # an earlier application under the search's cut-off
        frame = table_value(wb, {"kind": kind, "lists": {"hmcl": [badged]}}, "hmcl", {}, None)
        assert frame["published"][0] == "2021-08-31\u00a0·\u00a0E", kind  # kept on one line


def test_a_text_click_runs_one_search(tmp_path):
    """The Text tab's button starts one text search (BM25, dense and hybrid once, one re-ranking) that fills
    every list; nothing chained after it searches again. ``/search_bm25`` and ``/search_dense`` stay as
    API-only endpoints that no click calls."""
    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    from patent_demo.ui.tabs_search import TEXT_IDS

    ids = {getattr(b, "elem_id", None): b._id for b in demo.blocks.values()}
    fns = list(demo.fns.values())
    chain = [fn for fn in fns if (ids["t-search"], "click") in [(t[0], t[1]) for t in fn.targets]]
    while after := [fn for fn in fns if fn.trigger_after in {c._id for c in chain} and fn not in chain]:
        chain += after

    def name(fn) -> str:
        f = fn.fn
        while hasattr(f, "__wrapped__"):
            f = f.__wrapped__
        return getattr(f, "__name__", "")

    searches = [name(fn) for fn in chain if name(fn).startswith("search")]
    assert searches == ["search_text"]
    text_tables = {ids[TEXT_IDS[n]] for n in ("bm25", "dense", "hybrid", "dssdnet", "fused")}
    assert text_tables <= {b._id for b in chain[0].outputs}
    api_only = {fn.api_name: fn for fn in fns if fn.api_name in ("search_bm25", "search_dense", "fused_text")}
    assert sorted(api_only) == ["fused_text", "search_bm25", "search_dense"]
    assert all(fn not in chain for fn in api_only.values())


def test_each_text_table_names_the_list_its_moves_are_counted_from(tmp_path):
    """A move is never read as one against the list on screen: the re-ranked lists' column says the hybrid
    pool, dense and hybrid say BM25, BM25 (compared with nothing) keeps a plain "move"."""
    from patent_demo.ui.views import table_value

    wb, _ = make_workbench(tmp_path)
    p = wb.corpus.patents[0]
    row = {"id": p.id, "score": 0.5, "extras": {"pool_rank": 7, "bm25_rank": 2}}
    moves = {}
    for name in ("bm25", "dense", "hybrid", "dssdnet", "fused"):
        frame = table_value(wb, {"kind": "text", "lists": {name: [row]}}, name, {}, None)
        header = next(c for c in frame.columns if c.startswith("move"))
        moves[name] = (header, frame[header][0])
    assert moves == {
        "bm25": ("move", ""),
        "dense": ("move vs BM25", "↑ 1"),
        "hybrid": ("move vs BM25", "↑ 1"),
        "dssdnet": ("move vs hybrid pool", "↑ 6"),
        "fused": ("move vs hybrid pool", "↑ 6"),
    }


def test_the_buttons_that_read_the_session_open_once_the_page_holds_its_token(tmp_path):
    """A search clicked as the page opens would carry no token while the load binds the session to a new
    one, and be refused as another browser's: every button whose event reads the session starts off, and
    the load that binds the session turns each on with the token."""
    import gradio as gr

    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    session = next(b for b in demo.blocks.values() if type(b).__name__ == "State" and b.delete_callback)
    token = next(b for b in demo.blocks.values() if isinstance(b, gr.BrowserState))
    reading = {i for fn in demo.fns.values() if session in fn.inputs for i, _ in fn.targets}
    buttons = [b for i, b in demo.blocks.items() if i in reading and isinstance(b, gr.Button)]
    assert {"d-search", "t-search", "c-search", "d-sheet", "d-application"} <= {b.elem_id for b in buttons}
    shown = {c["id"]: c["props"].get("interactive") for c in demo.config["components"]}
    assert all(shown[b._id] is False for b in buttons)
    (load,) = [fn for fn in demo.fns.values() if token in fn.outputs and fn.targets[0][1] == "load"]
    assert set(load.outputs) >= set(buttons)
    out = load.fn("", None)
    assert len(out[0]) == 48 and out[1]["owner"] and all(u == gr.update(interactive=True) for u in out[2:])


def test_every_refresh_of_the_cursor_chained_after_an_event_runs_again_rather_than_being_dropped(tmp_path):
    """A chained event (``.then``) defaults to Gradio's "once": triggered while its last run is pending, the
    page skips it. Every chained event that writes the cursor line, and every link before one, is
    "always_last" (run again once the pending one ends), so fast keys never leave a stale cursor."""
    import gradio as gr

    wb, _ = make_workbench(tmp_path)
    demo = build_demo(wb, LabelStore(tmp_path / "labels.sqlite"))
    cursor = next(b for b in demo.blocks.values() if isinstance(b, gr.Markdown) and b.elem_id == "l-cursor")
    chained = [fn for fn in demo.fns.values() if fn.targets and fn.targets[0][1] == "then"]
    refreshes = [fn for fn in chained if cursor in fn.outputs]
    assert len(refreshes) > 10
    assert {fn.trigger_mode for fn in refreshes} == {"always_last"}
    before = {fn._id: fn for fn in chained}
    links = [before[fn.trigger_after] for fn in refreshes if fn.trigger_after in before]
    assert links and {fn.trigger_mode for fn in links if fn.fn is not None} == {"always_last"}
