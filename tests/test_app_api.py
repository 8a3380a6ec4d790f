"""The app's API driven through gradio_client against a server on a free port (tiny corpus and models).

Tests: app.py, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from patent_demo.index.scale import describe_index
from patent_demo.request import DrawingRequest, TextRequest

pytestmark = pytest.mark.slow


@pytest.fixture
def client(server):
    from gradio_client import Client

    return Client(server[0], verbose=False)


def test_api_lists_required_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {
        "/search_drawing",
        "/search_text",
        "/label",
        "/undo",
        "/export_labels",
        "/refine_drawing",
    } <= names


def _search_drawing(client, wb, pid, fig=0, k=4, group=True, loc=""):
    from gradio_client import handle_file

    path = wb.corpus.image_path(wb.corpus[pid].figures[fig])
    return client.predict(
        handle_file(str(path)), "zero-shot", k, group, True, loc, "ann", api_name="/search_drawing"
    )


def test_search_drawing_label_undo_export(client, server):
    _, wb, store = server
    gallery, status, table, list_name, rank, cursor, progress, *_ = _search_drawing(client, wb, "D0006")
    expected = wb.search_drawing(
        DrawingRequest.build(wb, wb.corpus.image_path(wb.corpus["D0006"].figures[0]), "zero-shot", 4)
    )
    assert [row[1] for row in table["data"]] == [h.patent_id for h in expected.hits]
    assert table["data"][0][:4] == [1, "D0006", "front", "07-02"]
    assert len(gallery) == 4 and gallery[0]["caption"].startswith("#1 D0006 · front · 07-02")
    index = describe_index(wb.index("zero-shot"))  # the kind that ran and its measured recall
    assert index.startswith("flat (exact), recall@100 1.00 over ")
    assert (
        status
        == f"4 results with {wb.model('zero-shot', 'drawing').label} · {expected.spread} · index {index}"
    )
    assert wb.model("zero-shot", "drawing").label.startswith(
        "zero-shot (EfficientNet-Lite0 trunk, ImageNet weights, no projection)"
    )
    assert (list_name, rank) == ("hmcl", 1)
    assert progress == "**0 of 4** candidates of this query labelled by ann"

    msg, progress, nxt, cursor, note = client.predict(
        "relevant", "hmcl", 1, "", "same bowl", "ann", api_name="/label"
    )
    assert msg.startswith("✓ relevant · D0006 (hmcl #1)") and nxt == 2
    assert progress == "**1 of 4** candidates of this query labelled by ann"
    client.predict("not", "hmcl", 2, "", "", "ann", api_name="/label")
    rows = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT candidate_id, list_name, rank, label, note, annotator, checkpoint_id, undone FROM labels ORDER BY id"
        )
        .fetchall()
    )
    assert rows[-2:] == [
        ("D0006", "hmcl", 1, "relevant", "same bowl", "ann", "zero-shot", 0),
        (expected.hits[1].patent_id, "hmcl", 2, "not", "", "ann", "zero-shot", 0),
    ]
    msg, progress, list_name, rank, _cursor = client.predict("ann", api_name="/undo")
    assert msg == f"↶ undid not · {expected.hits[1].patent_id} (hmcl #2)"
    assert progress == "**1 of 4** candidates of this query labelled by ann"
    assert (list_name, rank) == ("hmcl", 2)  # the cursor goes back to the undone hit

    files, md = client.predict(api_name="/export_labels")
    by_name = {f.rsplit("/", 1)[-1]: f for f in files}
    assert sorted(by_name) == ["disputed.jsonl", "dssdnet.jsonl", "guidelines.md", "hmcl.jsonl", "qrels.txt"]
    hmcl_rows = [json.loads(line) for line in open(by_name["hmcl.jsonl"], encoding="utf-8")]
    mine = [r for r in hmcl_rows if r["anchor"]["patent_id"] == "D0006"]
    assert [p["patent_id"] for p in mine[0]["positives"]] == ["D0006"] and mine[0]["hard_negatives"] == []


def test_search_text_lists_and_movement(client, server):
    from patent_demo.text.hybrid import default_text_list

    _, wb, _ = server
    bm, ds, status, dense, hybrid, fused, list_name, rank, cursor, progress, *_ = client.predict(
        "lamp with a shade and bulb", "26-05", "dssdnet-untrained", 5, "ann", api_name="/search_text"
    )
    lists = wb.search_text(TextRequest.build("lamp with a shade and bulb", "26-05", k=5)).lists
    bm25, dss = lists["bm25"], lists["dssdnet"]
    assert [r[2] for r in bm["data"]] == bm25.ids
    assert [r[2] for r in ds["data"]] == dss.ids
    for table, name in (
        (dense, "dense"),
        (hybrid, "hybrid"),
        (fused, "fused"),
    ):  # one search fills every list
        assert [r[2] for r in table["data"]] == lists[name].ids
    moves = [r[1] for r in ds["data"]]
    for r, (move, extra) in enumerate(zip(moves, dss.extras, strict=True), 1):
        d = extra["pool_rank"] - r  # DSSDNet re-ranks the hybrid pool: it moves from its pool rank
        assert move == (f"↑ {d}" if d > 0 else f"↓ {-d}" if d < 0 else "=")
    assert (list_name, rank) == (default_text_list(), 1)  # the cursor starts on the default list
    assert "Default list" not in status and "nDCG" not in status  # the figures sit beside the list
    assert "untrained head" in status
    fig, md = client.predict(2, api_name="/explain")
    assert md.startswith(f"### {dss.ids[1]} · ")
    assert f"**t̂** = {dss.extras[1]['t_hat']:.3f}" in md


def test_bm25_list_comes_first(client, server):
    """``/search_bm25``, an API-only endpoint (no click calls it): the BM25 list alone (the re-ranked and
    fused tables emptied), the same list the full search shows."""
    _, wb, _ = server
    bm, ds, fused, status = client.predict(
        "lamp with a shade and bulb", "26-05", "dssdnet-untrained", 5, api_name="/search_bm25"
    )
    expected = wb.search_text(TextRequest.build("lamp with a shade and bulb", "26-05", k=5)).lists["bm25"].ids
    assert [r[2] for r in bm["data"]] == expected
    assert ds["data"] == [] and fused["data"] == []
    assert status.startswith(f"BM25 found {len(expected)}; ") and "re-ranks the hybrid top 100" in status
    *_, status = client.predict("   ", "", "dssdnet-untrained", 5, api_name="/search_bm25")
    assert status.startswith("⚠️ the abstract is empty")


def test_the_search_filters_travel_as_one_json_value(client, server):
    """Every search endpoint takes the filter panel as one last parameter (``patent_demo.filters.Filters``)
    before the optional browser token of the endpoints that read the session (``access.owned``): a JSON
    object whose keys are ``FILTER_KEYS``; a malformed one is a message that says what is wrong."""
    from patent_demo.filters import FILTER_KEYS, SearchFilter

    _, wb, _ = server
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in (
        "/search_drawing",
        "/search_sheet",
        "/search_application",
        "/search_bm25",
        "/search_dense",
        "/search_text",
        "/search_combined",
    ):
        params = [p["parameter_name"] for p in endpoints[name]["parameters"]]
        params = params[:-1] if params[-1] == "owner_token" else params
        assert params[-1] == "filters" and not set(params) & {
            "before",
            "classification",
            "country",
            "date_from",
        }, name
    assert set(FILTER_KEYS) >= {"before", "classification", "own_date", "exclude_own", "per_family"}
    query = "lamp with a shade and bulb"
    wanted = SearchFilter.parse(classification="26-05")
    out = client.predict(
        query, "", "dssdnet-untrained", 5, "ann", {"classification": "26-05"}, api_name="/search_text"
    )
    assert not out[2].startswith("⚠️") and "class 26-05" in out[2], out[2]
    assert out[1]["data"] and all(wanted.admits(wb.corpus[r[2]]) for r in out[0]["data"] + out[1]["data"])
    for bad, message in (
        (["26-05"], "the filters must be a JSON object such as"),
        ("{before", "the filters must be a JSON object such as"),
        ({"cutoff": "2019-01-01"}, "unknown filter 'cutoff'; the filters are before, own_date"),
        ({"exclude_own": "yes"}, "the filter exclude_own must be true or false"),
        ({"country": 7}, "the filter country must be text, not int"),
        ({"before": "yesterday"}, "cut-off date 'yesterday' is not a date"),
    ):
        status = client.predict(query, "", "dssdnet-untrained", 5, "ann", bad, api_name="/search_text")[2]
        assert status.startswith("⚠️ ") and message in status, (bad, status)


@pytest.mark.parametrize(
    ("abstract", "codes", "message"),
    [
        ("   ", "", "the abstract is empty"),
        ("x" * 100_000, "", "has 100,000 characters"),
        ("a lamp", "06-01; nonsense", "unknown classification code 'nonsense'"),
    ],
)
def test_bad_text_input_is_reported(client, abstract, codes, message):
    out = client.predict(abstract, codes, "dssdnet-untrained", 5, "ann", api_name="/search_text")
    assert out[2].startswith("⚠️ ") and message in out[2]


def test_bad_drawing_input_is_reported_and_server_carries_on(client, server, tmp_path):
    from gradio_client import handle_file

    _, wb, _ = server
    bad = tmp_path / "notes.png"
    bad.write_text("this is not an image")
    out = client.predict(
        handle_file(str(bad)), "zero-shot", 4, True, True, "", "ann", api_name="/search_drawing"
    )
    assert out[1].startswith("⚠️ ") and "notes.png" in out[1]
    good = wb.corpus.image_path(wb.corpus["D0000"].figures[0])
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(good.read_bytes()[:200])
    out = client.predict(
        handle_file(str(truncated)), "zero-shot", 4, True, True, "", "ann", api_name="/search_drawing"
    )
    assert out[1].startswith("⚠️ ") and "cut.png" in out[1]
    out = _search_drawing(client, wb, "D0000", loc="99-99-99")
    assert out[1].startswith("⚠️ ")
    out = _search_drawing(client, wb, "D0000")
    assert out[2]["data"][0][1] == "D0000"


def test_label_without_a_query_or_name(client):
    msg, *_ = client.predict("relevant", "hmcl", 1, "", "", "ann", api_name="/label")
    assert msg == "⚠️ a label needs a query and a candidate: run a search first"


def test_search_text_fused_list_and_explanation(client, server):
    """The text tab's fused list (BM25 + DSSDNet scores) and the explanation of a DSSDNet candidate."""
    _, wb, _ = server
    client.predict(
        "lamp with a shade and bulb", "26-05", "dssdnet-untrained", 5, "ann", api_name="/search_text"
    )
    lists = wb.search_text(
        TextRequest.build("lamp with a shade and bulb", "26-05", "dssdnet-untrained", 5)
    ).lists
    fused = client.predict(api_name="/fused_text")
    assert [r[2] for r in fused["data"]] == lists["fused"].ids
    _, md = client.predict(1, api_name="/explain")
    assert "⚠️ The gate is flat" in md or "Gate: " in md
    assert "domain-sensitive head" in md and "flipping it would change the score by" in md


def test_search_application_ranks_patents_by_all_views(client, server):
    from gradio_client import handle_file

    _, wb, _ = server
    views = [str(wb.corpus.image_path(f)) for f in wb.corpus["D0006"].figures[:2]]
    gallery, status, table, *_ = client.predict(
        [handle_file(v) for v in views], "zero-shot", 4, True, api_name="/search_application"
    )
    expected = wb.search_application(DrawingRequest.application(wb, views, "zero-shot", 4))
    assert [row[1] for row in table["data"]] == [h.patent_id for h in expected.hits]
    assert table["data"][0][1] == "D0006" and table["data"][0][2].startswith("all views · shown: ")
    assert len(gallery) == 4 and gallery[0]["caption"].startswith("#1 D0006 · all views")
    assert status.startswith("4 patents for an application of 2 views with zero-shot")


def test_refine_drawing_answers_a_bare_call_then_refines_and_later_labels_file_on_the_query(client, server):
    from patent_demo.search.refine import NEEDS_A_LABEL
    from patent_demo.ui.refine import NO_DRAWING_QUERY

    _, wb, store = server
    assert client.predict(api_name="/refine_drawing")[1] == f"⚠️ {NO_DRAWING_QUERY}"  # no session
    _, _, table, *_ = _search_drawing(client, wb, "D0002", k=5)
    shown = [row[1] for row in table["data"]]
    assert client.predict("ann", api_name="/refine_drawing")[1] == f"⚠️ {NEEDS_A_LABEL}"
    client.predict("relevant", "hmcl", 3, "", "", "ann", "", False, api_name="/label")
    client.predict("not", "hmcl", 2, "", "", "ann", "", False, api_name="/label")
    gallery, status, table, list_name, rank, cursor, progress, *_ = client.predict(
        "ann", api_name="/refine_drawing"
    )
    assert status.startswith("↻ Refined with 2 labels of ann on this query (1 relevant, 1 not)"), status
    ids = [row[1] for row in table["data"]]
    assert ids[:2] == shown[1:3] and [row[-1] for row in table["data"][:2]] == [
        "✗ not relevant (0)",
        "✓ relevant (2)",
    ]
    assert len(ids) == 7 and not any(row[-1] for row in table["data"][2:])  # k = 5 unlabelled below them
    assert (list_name, rank) == ("hmcl", 3) and gallery[0]["caption"].endswith("✗ not relevant (0)")
    msg = client.predict("partly", "hmcl", 3, "", "", "ann", "", False, api_name="/label")[0]
    assert msg.startswith(f"✓ partly · {ids[2]} (hmcl #3)")
    rows = (
        sqlite3.connect(store.path)
        .execute("SELECT query_id, candidate_id, rank FROM labels ORDER BY id DESC LIMIT 3")
        .fetchall()
    )
    assert rows[0][1:] == (ids[2], 3) and len({r[0] for r in rows}) == 1  # the original query's id
