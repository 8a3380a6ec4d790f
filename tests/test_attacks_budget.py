"""The attack campaign's findings on budgets, served files, bare calls and store failures, each against a live
app through ``gradio_client`` (or raw HTTP where a client cannot send the request) with its expected answer:
a ⚠️ message naming the cap, a 403, a clear start-up error. The table is in ``docs/security.md``; the costs
are measured by ``bench/bench_request_budget.py``.

Tests: patent_demo/limits.py, patent_demo/search/sheet.py, patent_demo/drawing/application.py,
patent_demo/query.py, patent_demo/labels/store.py, patent_demo/ui/serve.py, patent_demo/ui/blocks.py,
patent_demo/ui/inputs.py, patent_demo/ui/handlers.py
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from patent_demo.labels.store import LabelStore
from patent_demo.limits import MAX_APPLICATION_VIEWS, MAX_SHEET_FIGURES
from tests.conftest import free_port, live_app
from tests.support.live import drawn_png, filter_panel, label_request, text_request, upload
from tests.support.tiny import make_workbench

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _png(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _boxes_sheet(n: int = 14) -> bytes:
    """A 2000 x 2000 sheet with n x n small boxes, each one a figure to ``split_sheet`` (about 9 kB)."""
    im = Image.new("L", (2000, 2000), 255)
    d = ImageDraw.Draw(im)
    for r in range(n):
        for c in range(n):
            x, y = 20 + c * 142, 20 + r * 142
            d.rectangle((x, y, x + 84 + (r * n + c) % 3, y + 84), outline=0, width=4)
    return _png(im)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """(url, workbench, store, folder of uploads): the app on a free port, launched as ``app.py`` launches it
    (``launch_kwargs`` with the store, so its files are blocked too)."""
    tmp = tmp_path_factory.mktemp("attacks")
    wb, _ = make_workbench(tmp)
    wb.warm_up()
    store = LabelStore(tmp / "data" / "labels.sqlite")
    files = tmp / "uploads"
    files.mkdir()
    (files / "sheet-196.png").write_bytes(_boxes_sheet())
    (files / "good.png").write_bytes(wb.corpus.image_path(wb.corpus["D0002"].figures[0]).read_bytes())
    (files / "gray-5000.png").write_bytes(drawn_png((5000, 5000)))  # 25 MB decoded: two are over 40 MB
    with live_app(wb, store, store=store) as url:
        yield url, wb, store, files
    store.close()


@pytest.fixture
def client(live):
    from gradio_client import Client

    return Client(live[0], verbose=False)


def _raw_call(url: str, api: str, given: list) -> tuple[str, object]:
    """One call of ``api`` over HTTP, its first parameters ``given`` as sent (no client-side upload), the
    others their defaults: (event, its data)."""
    import httpx
    from gradio_client import Client

    params = Client(url, verbose=False).view_api(print_info=False, return_format="dict")["named_endpoints"][
        f"/{api}"
    ]["parameters"]
    data = [p.get("parameter_default") for p in params]
    data[: len(given)] = given
    r = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data}, timeout=60)
    stream = httpx.get(f"{url}gradio_api/call/{api}/{r.json()['event_id']}", timeout=120).text
    event, _, rest = stream.partition("event: ")[2].partition("\ndata: ")
    return event.strip(), json.loads(rest.splitlines()[0])


# -- 1. budgets ----------------------------------------------------------------------------------------------
def test_a_sheet_of_196_boxes_searches_the_largest_few_and_says_so(live, client):
    out = client.predict(
        upload(live, "sheet-196.png"), "zero-shot", 5, "ann", *filter_panel(), api_name="/search_sheet"
    )
    status = out[1]
    assert status.startswith(
        f"⚠️ 196 boxes found on the sheet: searched the {MAX_SHEET_FIGURES} largest of 196"
    )
    assert f"figure {MAX_SHEET_FIGURES} of {MAX_SHEET_FIGURES}" in status and "of 196" in status
    assert len(out[0]) == 5  # the hits of the searched figures, merged


def test_an_application_of_too_many_views_is_refused_before_any_is_read(live, client):
    views = [upload(live, "good.png")] * (MAX_APPLICATION_VIEWS + 1)
    status = client.predict(
        views, "zero-shot", 5, True, "ann", *filter_panel(), api_name="/search_application"
    )[1]
    assert status == (
        f"⚠️ an application query takes at most {MAX_APPLICATION_VIEWS} views; "
        f"{MAX_APPLICATION_VIEWS + 1} were sent: choose the views to search (nothing was searched)"
    )
    status = client.predict(
        [upload(live, "gray-5000.png")] * 2,
        "zero-shot",
        5,
        True,
        "ann",
        *filter_panel(),
        api_name="/search_application",
    )[1]
    assert status.startswith("⚠️ the 2 views decode to 50 MB together, over the budget of 40 MB"), status
    status = client.predict(
        [upload(live, "good.png")] * MAX_APPLICATION_VIEWS,
        "zero-shot",
        5,
        True,
        "ann",
        *filter_panel(),
        api_name="/search_application",
    )[1]
    assert status.startswith(f"5 patents for an application of {MAX_APPLICATION_VIEWS} views"), status


def test_an_evaluation_is_computed_once_per_model_and_corpus(live, client, monkeypatch):
    import patent_demo.analysis as analysis

    calls = []
    real = analysis.evaluate
    monkeypatch.setattr(analysis, "evaluate", lambda *a, **k: calls.append(a[1:]) or real(*a, **k))
    first = client.predict("zero-shot", "all", api_name="/evaluate")
    again = client.predict("zero-shot", "all", api_name="/evaluate")
    assert calls == [("zero-shot",)]  # the second answer came from memory
    assert first == again and "once per model and corpus" in first[0] and "patent_map" in first[0]


def test_a_long_abstract_is_costed_by_its_tokens_not_its_characters(live, client):
    cjk = "椅子座面靠背扶手" * 2_500  # 20,000 characters, 20,000 tokens
    msg = client.predict(*text_request(cjk)[1], api_name="/search_text")[2]
    assert msg.startswith(
        "⚠️ the abstract has 20,000 tokens (words, punctuation marks, CJK characters); paste at most"
    )
    english = "lamp shade bulb holder " * 700  # 16,100 characters, 2,800 tokens: within the cap
    assert client.predict(*text_request(english)[1], api_name="/search_text")[2].startswith("BM25 found")


# -- 2. served files -----------------------------------------------------------------------------------------
def test_the_index_cache_is_not_served_but_the_corpus_drawings_are(live):
    import httpx

    url, wb, store, _ = live
    cache = wb.config.cache_dir.resolve()
    secret = [p for p in cache.rglob("*") if p.is_file() and p.parts[len(cache.parts)] != "thumbs"]
    assert any(p.suffix == ".npy" and "dense" in p.parts for p in secret)  # the text embeddings
    secret += [Path(wb.corpus.root).resolve() / "manifest.jsonl", store.path.resolve()]
    for p in secret:
        assert httpx.get(f"{url}gradio_api/file={p}").status_code == 403, p
    figure = wb.corpus["D0002"].figures[0]
    for shown in (wb.corpus.image_path(figure), Path(wb.display_path(figure))):
        r = httpx.get(f"{url}gradio_api/file={shown.resolve()}")
        assert r.status_code == 200 and r.content == shown.read_bytes()


# -- 3. bare calls: no event data, a forged file path -------------------------------------------------------
SELECTS = [
    "/select_hit",
    "/select_hit_row",
    "/select_bm25",
    "/select_dense",
    "/select_hybrid",
    "/select_dssdnet",
    "/select_text_fused",
    "/select_combined_hmcl",
    "/select_combined_text",
    "/select_combined_rrf",
]
OPENERS = ["/open_bm25_hit", "/open_dense_hit", "/open_hybrid_hit", "/open_dssdnet_hit", "/open_fused_hit"]


@pytest.mark.parametrize(
    "api", [*SELECTS, *OPENERS, "/open_drawing_hit", "/open_drawing_row", "/select_disagreement"]
)
def test_a_select_endpoint_called_without_a_selection_says_so(live, client, api):
    client.predict(*text_request()[1], api_name="/search_text")  # a session with lists: still no selection
    args = (None, True) if api.startswith("/open_drawing") else ()
    out = client.predict(*args, api_name=api)
    at = 2 if api.startswith("/select") else 0  # the cursor line, the queue's pair line, or the record
    assert out[at].startswith("⚠️ select "), out
    assert "this call carried no selection" in out[at]
    report, _ = client.predict(api_name="/agreement")  # the server carries on
    assert report.startswith("## Annotator agreement")


@pytest.mark.parametrize("api", ["search_drawing", "search_application", "search_sheet"])
def test_a_forged_file_path_gets_a_message(live, api):
    url = live[0]
    forged = {"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}, "orig_name": "passwd"}
    data = {
        "search_drawing": [forged, "zero-shot", 4, True, True, "", "ann"],
        "search_application": [[forged], "zero-shot", 4, True],
        "search_sheet": [forged, "zero-shot", 4, "ann"],
    }[api]
    event, payload = _raw_call(url, api, data)
    assert event == "error" and payload["error"].startswith("⚠️ a file of this request was not uploaded"), (
        payload
    )
    assert "root:" not in json.dumps(payload)


# -- 4. store failures and text a label could not hold --------------------------------------------------------
@contextmanager
def _read_only(store: LabelStore):
    """The store's database made read-only under the running server: immutable files as root (``chattr
    +i``; the mapped -shm stays), else a read-only SQLite connection in place of the store's."""
    files = [str(store.path), f"{store.path}-wal"]
    if os.geteuid() == 0 and subprocess.run(["chattr", "+i", *files], capture_output=True).returncode == 0:
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *files], check=True)
        return
    writable = store._conn
    store._conn = sqlite3.connect(
        f"file:{store.path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
    )
    store._conn.row_factory = sqlite3.Row
    try:
        yield
    finally:
        store._conn.close()
        store._conn = writable


def test_a_read_only_store_says_not_stored_in_plain_words(live, client):
    store = live[2]
    client.predict(*text_request()[1], api_name="/search_text")
    before = store.count()
    with _read_only(store):
        msg = client.predict(*label_request(annotator="ro")[1], api_name="/label")[0]
    assert msg.startswith(
        "⚠️ not stored: the label database is read-only (labels.sqlite); nothing was saved"
    ), msg
    assert store.count() == before
    assert client.predict(*label_request(annotator="ro")[1], api_name="/label")[0].startswith(
        "✓"
    )  # writable again


def test_starting_on_a_read_only_store_exits_with_one_clear_line(tmp_path):
    db = tmp_path / "ro" / "labels.sqlite"
    LabelStore(db).close()
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", str(db)], check=True)
    else:
        db.chmod(0o444)
        db.parent.chmod(0o555)
    try:
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), GRADIO_ANALYTICS_ENABLED="False")
        run = subprocess.run(
            [
                sys.executable,
                "app.py",
                "--labels",
                str(db),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--no-warmup",
                "--port",
                str(free_port()),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(db)], check=True)
        else:
            db.parent.chmod(0o755)
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-1] == (
        "error: cannot start: the label database is read-only (labels.sqlite); give a writable label database "
        "with --labels (or PATENT_DEMO_LABELS)"
    )
    assert "Traceback" not in run.stderr and str(tmp_path) not in run.stderr


@pytest.mark.parametrize("char", ["\x00", "\u202e", "\u2028"], ids=["nul", "bidi-override", "line-separator"])
def test_what_can_be_searched_can_be_labelled(live, client, char):
    store = live[2]
    out = client.predict(*text_request(f"lamp{char} shade{char}and bulb")[1], api_name="/search_text")
    assert out[2].startswith("BM25 found"), out[2]
    msg = client.predict(*label_request(annotator=f"ctl-{ord(char):x}")[1], api_name="/label")[0]
    assert msg.startswith("✓ relevant"), msg
    stored = store.labels()[-1]
    assert stored.annotator == f"ctl-{ord(char):x}" and char not in stored.query_text
    assert stored.query_text.replace("\n", " ").split() == "lamp shade and bulb".split()


@pytest.mark.parametrize(
    "query",
    [
        ("lamp shade, bulb holder; " * 300) + "椅子座面" * 300,
        "椅子座面靠背扶手" * 500,
        "a lamp",
        "x" * 5000 + " shade",
    ],
    ids=["english-then-cjk", "cjk", "short", "one-long-word"],
)
def test_the_re_ranker_cuts_a_long_query_first_into_the_same_pieces(query):
    """A long abstract is cut to the re-ranker's ``max_length`` tokens before its tokenizer splits it once per
    candidate: the encodings are those of the whole text truncated by the tokenizer."""
    import torch

    from tests.support.tiny import tiny_reranker

    rr = tiny_reranker()
    docs = ["a lamp with a shade", "chair seat " * 100, ""]
    whole = rr.tokenizer(
        [query] * 3,
        docs,
        truncation="longest_first",
        max_length=rr.config.max_length,
        padding=True,
        return_tensors="pt",
    )
    cut = rr.tokenize([query] * 3, docs)
    assert set(cut) <= set(whole) and all(torch.equal(whole[k], v) for k, v in cut.items())
