"""The reliability suite, fast part: bad input through gradio_client against a live app (each case must
come back as a clear ⚠️ message, store nothing, leak no server path, and leave the server answering),
then the undo, idempotency and identity cases. The load part (16 concurrent annotators, kill -9 during
labelling) is ``bench/bench_labels_load.py``.

The label database lives in a temporary folder outside the working directory, as ``/data`` does on a
Space, so the export case also shows that exports are served from wherever the database is.

Tests: app.py, patent_demo/ui/access.py, patent_demo/limits.py
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from patent_demo.labels.store import LabelStore
from tests.conftest import free_port, live_app
from tests.support.live import (
    ABSTRACT,
    adjudicate_request,
    combined_request,
    drawing_request,
    drawn_png,
    filter_panel,
    filtered_request,
    label_request,
    measured,
    sheet_request,
    text_request,
    upload,
)
from tests.support.tiny import make_workbench

pytestmark = pytest.mark.slow


def _png(size, fill=0, mode="L") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, fill).save(buf, format="PNG")
    return buf.getvalue()


def _png_header(w: int, h: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """(url, workbench, store, folder of bad files): the app on a free port, its database outside the cwd."""
    tmp = tmp_path_factory.mktemp("reliability")
    assert not str(tmp.resolve()).startswith(os.getcwd())
    wb, _ = make_workbench(tmp)
    wb.warm_up()
    store = LabelStore(tmp / "data" / "labels.sqlite")
    files = tmp / "uploads"
    files.mkdir()
    good = wb.corpus.image_path(wb.corpus["D0002"].figures[0]).read_bytes()
    for name, data in {
        "empty.png": b"",
        "notes.png": b"this is not an image",
        "drawing.xml": b"<?xml version='1.0'?><drawing/>",
        "cut.png": good[: len(good) // 2],
        "strip-wide.png": _png((30_000, 1)),
        "strip-tall.png": _png((1, 100_000)),
        "header-8000.png": _png_header(8000, 8000),
        "header-100000.png": _png_header(100_000, 100_000),
        "noise.jpg": os.urandom(4096),
        "paper.pdf": b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF",
        "remote.svg": b"<svg xmlns='http://www.w3.org/2000/svg'><image href='http://example.com/x.png'/></svg>",
        "broken.jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + os.urandom(300),
        "good.png": good,
        "rgba-7000.png": _png((7000, 7000), (255, 255, 255, 255), "RGBA"),  # 208 kB, 196 MB decoded
        "rgb-4000.png": _png((4000, 4000), (255, 255, 255), "RGB"),  # 48 MB decoded
        "palette-6000.png": _png((6000, 6000), 0, "P"),
        "gray-6000.png": drawn_png((6000, 6000)),  # 36 MB decoded: within the byte budget, searched
    }.items():
        (files / name).write_bytes(data)
    with live_app(wb, store) as url:
        yield url, wb, store, files
    store.close()


@pytest.fixture
def client(live):
    from gradio_client import Client

    return Client(live[0], verbose=False)


SEARCHES = ("/search_drawing", "/search_sheet", "/search_text", "/search_bm25", "/search_combined")
FILTER_CASES = [
    ("class-200kB", {"classification": "A," * 100_000}, "the classification filter has 200,000 characters"),
    ("class-06-01-x33000", {"classification": "06-01 " * 33_000}, "the classification filter has 198,000"),
    ("class-21-prefixes", {"classification": ",".join(["06-01"] * 21)}, "has 21 items; at most 20"),
    ("class-bad-chars", {"classification": "06-01; <b>"}, "holds characters codes never have"),
    ("kind-200kB", {"kind": "S," * 100_000}, "the kind-code filter has 200,000 characters"),
    ("kind-30-items", {"kind": ",".join(["S"] * 30)}, "the kind-code filter has 30 items"),
    ("office-300", {"country": "US," * 100}, "the office filter has 100 items"),
    ("office-bad", {"country": "USA"}, "not a two-letter office code"),
    ("before-10kB", {"before": "2019" * 2_500}, "the cut-off date has 10,000 characters"),
    ("before-junk", {"before": "yesterday"}, "is not a date"),
    ("from-after-to", {"date_from": "2020-01-01", "date_to": "2019-01-01"}, "the date range is empty"),
    ("date-feb-30", {"date_to": "2021-02-30"}, "is not a calendar date"),
]
SIXTY_CODES = ";".join(f"A47C {i}/02" for i in range(1, 61))
RANKS = {"x": "got 'x'", "nan": "got 'nan'", "-0": "got '-0'", "1" * 30: "got 30 characters"}
LONG = "A47C" + " " * 50_000 + "-"
# (case id, setup search: None / "text" / "drawing", request builder, what the message must say)
CASES = [
    (
        "drawing-none",
        None,
        lambda lv: ("/search_drawing", (None, "zero-shot", 4, True, True, "", "ann"), 1),
        "upload a drawing",
    ),
    ("drawing-empty", None, lambda lv: drawing_request(lv, "empty.png"), "empty"),
    ("drawing-text", None, lambda lv: drawing_request(lv, "notes.png"), "notes.png: not a readable image"),
    ("drawing-xml", None, lambda lv: drawing_request(lv, "drawing.xml"), "drawing.xml: not a readable image"),
    ("drawing-truncated", None, lambda lv: drawing_request(lv, "cut.png"), "cut.png"),
    (
        "drawing-strip-wide",
        None,
        lambda lv: drawing_request(lv, "strip-wide.png"),
        "canvas after cropping margins",
    ),
    (
        "drawing-strip-tall",
        None,
        lambda lv: drawing_request(lv, "strip-tall.png"),
        "canvas after cropping margins",
    ),
    ("drawing-header-8000", None, lambda lv: drawing_request(lv, "header-8000.png"), "exceeds the budget"),
    ("drawing-header-huge", None, lambda lv: drawing_request(lv, "header-100000.png"), "decompression bomb"),
    ("drawing-noise", None, lambda lv: drawing_request(lv, "noise.jpg"), "noise.jpg: not a readable image"),
    (
        "drawing-pdf",
        None,
        lambda lv: drawing_request(lv, "paper.pdf"),
        "paper.pdf: a PDF file; this app reads",
    ),
    ("drawing-svg", None, lambda lv: drawing_request(lv, "remote.svg"), "remote.svg: not a readable image"),
    ("drawing-broken-jpeg", None, lambda lv: drawing_request(lv, "broken.jpg"), "broken.jpg"),
    ("drawing-k0", None, lambda lv: drawing_request(lv, k=0), "top-k must be a whole number from 1 to 50"),
    ("drawing-k51", None, lambda lv: drawing_request(lv, k=51), "top-k must be a whole number from 1 to 50"),
    ("drawing-k-negative", None, lambda lv: drawing_request(lv, k=-3), "top-k must be a whole number"),
    ("drawing-k-fraction", None, lambda lv: drawing_request(lv, k=2.5), "top-k must be a whole number"),
    ("drawing-k-text", None, lambda lv: drawing_request(lv, k="ten"), "top-k must be a whole number"),
    ("drawing-k-none", None, lambda lv: drawing_request(lv, k=None), "top-k must be a whole number"),
    ("drawing-locarno-junk", None, lambda lv: drawing_request(lv, loc="99-99-99"), "not a Locarno code"),
    ("drawing-locarno-no-subclass", None, lambda lv: drawing_request(lv, loc="06-98"), "has no subclass 98"),
    ("drawing-locarno-10kB", None, lambda lv: drawing_request(lv, loc="0" * 10_000), "a code at most 100"),
    ("drawing-locarno-spaces", None, lambda lv: drawing_request(lv, loc=LONG), "a code at most 100"),
    ("text-empty", None, lambda lv: text_request(""), "the abstract is empty"),
    ("text-whitespace", None, lambda lv: text_request("  \n\t  "), "the abstract is empty"),
    ("text-100k", None, lambda lv: text_request("x" * 100_000), "has 100,000 characters"),
    ("text-no-shared-word", None, lambda lv: text_request("!!! ???"), "no corpus text shares a word"),
    (
        "codes-nonsense",
        None,
        lambda lv: text_request(codes="nonsense"),
        "unknown classification code 'nonsense'",
    ),
    (
        "codes-no-subclass",
        None,
        lambda lv: text_request(codes="06-98"),
        "unknown classification code '06-98'",
    ),
    (
        "codes-200kB-spaces",
        None,
        lambda lv: text_request(codes=" " * 200_000),
        "the codes field has 200,000 characters",
    ),
    ("codes-long-spaced", None, lambda lv: text_request(codes=LONG), "the codes field has 50,005 characters"),
    (
        "codes-over-code-cap",
        None,
        lambda lv: text_request(codes="A47C" + " " * 1900 + "-"),
        "unknown classification code",
    ),
    ("codes-html", None, lambda lv: text_request(codes="<img src=x onerror=alert(1)>"), "&lt;img src=x"),
    ("text-k0", None, lambda lv: text_request(k=0), "top-k must be a whole number"),
    ("text-k1000", None, lambda lv: text_request(k=1000), "top-k must be a whole number"),
    ("text-k-text", None, lambda lv: text_request(k="many"), "top-k must be a whole number"),
    (
        "combined-no-file",
        None,
        lambda lv: ("/search_combined", (None, ABSTRACT, "", "zero-shot", "dssdnet-untrained", 4, "ann"), 3),
        "upload a drawing as well",
    ),
    ("combined-empty-abstract", None, lambda lv: combined_request(lv, abstract=""), "the abstract is empty"),
    (
        "combined-bad-file",
        None,
        lambda lv: combined_request(lv, "notes.png"),
        "notes.png: not a readable image",
    ),
    (
        "combined-bad-codes",
        None,
        lambda lv: combined_request(lv, codes="06-98"),
        "unknown classification code",
    ),
    ("combined-k0", None, lambda lv: combined_request(lv, k=0), "top-k must be a whole number"),
    ("label-no-search", None, lambda lv: label_request(), "run a search first"),
    (
        "label-rank-none",
        "text",
        lambda lv: label_request(rank=None),
        "rank must be a whole number from 1, got None",
    ),
    ("label-rank-zero", "text", lambda lv: label_request(rank=0), "rank must be a whole number from 1, got "),
    ("label-rank-negative", "text", lambda lv: label_request(rank=-1), "rank must be a whole number from 1"),
    (
        "label-rank-fraction",
        "text",
        lambda lv: label_request(rank=1.5),
        "rank must be a whole number from 1, got '1.5'",
    ),
    (
        "label-rank-text",
        "text",
        lambda lv: label_request(rank="abc"),
        "rank must be a whole number from 1, got 'abc'",
    ),
    (
        "label-rank-beyond",
        "text",
        lambda lv: label_request(rank=9999),
        "rank 9999 is outside the dssdnet list",
    ),
    (
        "label-list-absent",
        "text",
        lambda lv: label_request(list_name="hmcl"),
        "the current query has no 'hmcl' list",
    ),
    (
        "label-list-absent-drawing",
        "drawing",
        lambda lv: label_request(list_name="fused"),
        "has no 'fused' list",
    ),
    ("label-name-empty", "text", lambda lv: label_request(annotator=""), "annotator is empty"),
    ("label-name-blank", "text", lambda lv: label_request(annotator="   "), "annotator is empty"),
    ("label-name-nul", "text", lambda lv: label_request(annotator="ann\x00"), "control character U+0000"),
    (
        "label-name-newline",
        "text",
        lambda lv: label_request(annotator="ann\nbob"),
        "control character U+000A",
    ),
    (
        "label-name-bidi",
        "text",
        lambda lv: label_request(annotator="ann\u202egpj"),
        "control character U+202E",
    ),
    ("label-name-101", "text", lambda lv: label_request(annotator="a" * 101), "101 characters; at most 100"),
    (
        "label-name-10kB",
        "text",
        lambda lv: label_request(annotator="a" * 10_000),
        "10,000 characters; at most 100",
    ),
    (
        "label-note-1MB",
        "text",
        lambda lv: label_request(note="n" * 1_000_000),
        "note has 1,000,000 characters",
    ),
    (
        "label-note-nul",
        "text",
        lambda lv: label_request(note="a\x00b"),
        "note holds the control character U+0000",
    ),
    (
        "label-x-not-relevant",
        "text",
        lambda lv: label_request(label="not", category="X"),
        "category X marks a relevant",
    ),
    ("label-key-300", "text", lambda lv: label_request(key="k" * 300), "idempotency key has 300 characters"),
    ("label-key-nul", "text", lambda lv: label_request(key="k\x00"), "control character U+0000"),
    ("adjudicate-no-name", None, lambda lv: adjudicate_request(annotator=""), "enter your name first"),
    (
        "adjudicate-no-pair",
        None,
        lambda lv: adjudicate_request("", ""),
        "select a disagreement in the queue first",
    ),
    ("adjudicate-unknown", None, lambda lv: adjudicate_request(), "nobody labelled candidate 'D0001'"),
    (
        "adjudicate-name-10kB",
        None,
        lambda lv: adjudicate_request(annotator="a" * 10_000),
        "10,000 characters",
    ),
    (
        "adjudicate-query-nul",
        None,
        lambda lv: adjudicate_request(query_id="txt-\x00"),
        "control character U+0000",
    ),
    (
        "adjudicate-name-html",
        None,
        lambda lv: adjudicate_request(annotator="<b>lead</b>\n"),
        "control character U+000A",
    ),
]
# the filter panel on every search endpoint: length and item count checked before any parsing
CASES += [
    (f"{api[1:]}-{cid}", None, lambda lv, api=api, f=f: filtered_request(api, lv, **f), frag)
    for api in SEARCHES
    for cid, f, frag in FILTER_CASES
]
# memory: the byte budget counts bytes per pixel (a 208 kB RGBA PNG decodes to 196 MB)
CASES += [
    (f"{api[1:]}-{name[:-4]}", None, lambda lv, api=api, name=name: filtered_request(api, lv, name), frag)
    for api in ("/search_drawing", "/search_sheet", "/search_combined")
    for name, frag in (
        ("rgba-7000.png", "a 7000x7000 RGBA image decodes to 196 MB, over the budget of 40 MB"),
        ("rgb-4000.png", "a 4000x4000 RGB image decodes to 48 MB"),
        ("palette-6000.png", "a 6000x6000 P image decodes to 144 MB"),
    )
] + [
    (
        f"{api[1:]}-gray-6000-searched",
        None,
        lambda lv, api=api: filtered_request(api, lv, "gray-6000.png"),
        None,
    )
    for api in ("/search_drawing", "/search_sheet", "/search_combined")
]
CASES += [
    (
        "sheet-none",
        None,
        lambda lv: ("/search_sheet", (None, "zero-shot", 4, "ann", *filter_panel()), 1),
        "upload a drawing sheet",
    ),
    ("sheet-text-file", None, lambda lv: sheet_request(lv, "notes.png"), "notes.png: not a readable image"),
    ("sheet-bomb", None, lambda lv: sheet_request(lv, "header-100000.png"), "decompression bomb"),
    ("sheet-k0", None, lambda lv: sheet_request(lv, k=0), "top-k must be a whole number from 1 to 50"),
    (
        "sheet-k-abc",
        None,
        lambda lv: sheet_request(lv, k="abc"),
        "top-k must be a whole number from 1 to 50, got 'abc'",
    ),
    ("sheet-k-1000", None, lambda lv: sheet_request(lv, k=1000), "top-k must be a whole number from 1 to 50"),
    ("sheet-model-empty", None, lambda lv: sheet_request(lv, model=""), "choose a drawing model"),
    ("sheet-model-10kB", None, lambda lv: sheet_request(lv, model="m" * 10_000), "choose a drawing model"),
    (
        "text-60-codes",
        None,
        lambda lv: text_request(codes=SIXTY_CODES),
        "holds more than 50 codes; give at most 50",
    ),
    (
        "bm25-60-codes",
        None,
        lambda lv: ("/search_bm25", (ABSTRACT, SIXTY_CODES, "dssdnet-untrained", 5, *filter_panel()), 3),
        "holds more than 50 codes",
    ),
    (
        "combined-60-codes",
        None,
        lambda lv: combined_request(lv, codes=SIXTY_CODES),
        "holds more than 50 codes",
    ),
    (
        "bm25-empty",
        None,
        lambda lv: ("/search_bm25", ("", "", "dssdnet-untrained", 5, *filter_panel()), 3),
        "the abstract is empty",
    ),
    (
        "bm25-100k",
        None,
        lambda lv: ("/search_bm25", ("x" * 100_000, "", "dssdnet-untrained", 5, *filter_panel()), 3),
        "has 100,000 characters",
    ),
    (
        "text-model-empty",
        None,
        lambda lv: ("/search_text", (ABSTRACT, "", "", 5, "ann"), 2),
        "choose a text model",
    ),
    (
        "drawing-model-10kB",
        None,
        lambda lv: ("/search_drawing", (upload(lv, "good.png"), "m" * 10_000, 4, True, True, "", "ann"), 1),
        "choose a drawing model",
    ),
    ("document-empty", None, lambda lv: ("/open_document", ("",), 0), "type a patent id"),
    (
        "document-10kB",
        None,
        lambda lv: ("/open_document", ("D" * 10_000,), 0),
        "the patent id has 10,000 characters",
    ),
    ("document-number", None, lambda lv: ("/open_document", (12345,), 0), "no document 12345 in this corpus"),
    (
        "document-unknown",
        None,
        lambda lv: ("/open_document", ("<b>X</b>",), 0),
        "'&lt;b&gt;X&lt;/b&gt;' is not a patent number",
    ),
    (
        "list-absent-choice",
        "text",
        lambda lv: label_request(list_name="nope"),
        "the current query has no 'nope' list",
    ),
    ("label-grade-absent", "text", lambda lv: label_request(label="maybe"), "label 'maybe' is not one of"),
    ("category-absent", "text", lambda lv: label_request(category="Z"), "category"),
    (
        "drawing-model-unknown",
        None,
        lambda lv: ("/search_drawing", (upload(lv, "good.png"), "nope", 4, True, True, "", "ann"), 1),
        "unknown drawing model 'nope'",
    ),
    (
        "text-model-unknown",
        None,
        lambda lv: ("/search_text", (ABSTRACT, "", "nope", 5, "ann"), 2),
        "unknown text model 'nope'",
    ),
    (
        "report-none",
        None,
        lambda lv: ("/search_report", (None, {}, False), 1),
        "label some hits, press Refresh",
    ),
    (
        "report-10kB",
        None,
        lambda lv: ("/search_report", ("q" * 10_000, {}, False), 1),
        "the query id has 10,000",
    ),
    (
        "report-unknown",
        None,
        lambda lv: ("/search_report", ("txt-nobody", {}, False), 1),
        "no labels for query",
    ),
    (
        "report-cutoff-10kB",
        None,
        lambda lv: ("/search_report", ("txt-nobody", {"before": "2" * 10_000}, False), 1),
        "the cut-off date has 10,000 characters",
    ),
    (
        "compare-none",
        None,
        lambda lv: ("/compare", (None, "zero-shot", "zero-shot"), 2),
        "evaluate a model first",
    ),
    (
        "compare-10kB",
        None,
        lambda lv: ("/compare", ("f" * 10_000, "zero-shot", "zero-shot"), 2),
        "the query figure has 10,000 characters",
    ),
    ("evaluate-no-model", None, lambda lv: ("/evaluate", ("",), 0), "choose a drawing model"),
    ("adjudicate-bad-grade", None, lambda lv: adjudicate_request(label="maybe"), "is not one of"),
    (
        "adjudicate-note-1MB",
        None,
        lambda lv: adjudicate_request(note="n" * 1_000_000),
        "note has 1,000,000 characters",
    ),
]
# a bad rank: the same message in a fresh browser session and after a search, on every endpoint that takes one
for setup in (None, "text"):
    for r, frag in RANKS.items():
        tag = f"{'fresh' if setup is None else 'searched'}-{r[:4]}"
        CASES += [
            (f"label-rank-{tag}", setup, lambda lv, r=r: label_request(rank=r), frag),
            (
                f"label-relevant-rank-{tag}",
                setup,
                lambda lv, r=r: ("/label_relevant", ("dssdnet", r, "", "", "ann", True), 0),
                frag,
            ),
            (f"explain-rank-{tag}", setup, lambda lv, r=r: ("/explain", (r,), 1), frag),
            (f"next-rank-{tag}", setup, lambda lv, r=r: ("/next_hit", ("dssdnet", r, False, "ann"), 1), frag),
            (f"prev-rank-{tag}", setup, lambda lv, r=r: ("/prev_hit", ("dssdnet", r, False, "ann"), 1), frag),
        ]
CASES += [
    (
        f"{api[1:]}-no-search",
        None,
        lambda lv, api=api: (api, ("dssdnet", 1, "", "", "ann", True), 0),
        "run a search first",
    )
    for api in ("/label_relevant", "/label_partly", "/label_not")
]
CASES += [  # Refine with my labels: a bare call, a drawing search without a label of this name, a text query
    ("refine-no-search", None, lambda lv: ("/refine_drawing", ("ann",), 1), "run a drawing search"),
    (
        "refine-no-label",
        "drawing",
        lambda lv: ("/refine_drawing", ("no-labels-yet",), 1),
        "needs a label first",
    ),
    (
        "refine-text-query",
        "text",
        lambda lv: ("/refine_drawing", ("ann",), 1),
        "Refine is for drawing searches",
    ),
    ("refine-name-10kB", "drawing", lambda lv: ("/refine_drawing", ("a" * 10_000,), 1), "10,000 characters"),
]


def test_there_are_at_least_150_cases_over_every_endpoint_that_takes_input(live):
    assert len(CASES) >= 150 and len({c[0] for c in CASES}) == len(CASES)
    endpoints = {c[2](live)[0] for c in CASES}
    assert endpoints >= {
        *SEARCHES,
        "/label",
        "/label_relevant",
        "/label_partly",
        "/label_not",
        "/refine_drawing",
        "/explain",
        "/next_hit",
        "/prev_hit",
        "/adjudicate",
        "/open_document",
        "/search_report",
        "/compare",
        "/evaluate",
    }


# -- what one request costs, read from /proc (the server runs in this process) -------------------------------
CPU_BUDGET_S, PEAK_BUDGET_MB = 1.0, 200  # per request, beyond the search itself (issue 18)
COSTS: dict[str, dict] = {}  # case id -> {"cpu_s", "peak_mb", "class"}: the campaign's table


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_message_and_the_server_carries_on(live, client, case):
    """Each hostile input gets its answer class (a ⚠️ message naming the problem, or a normal answer for an
    input within the limits), stores nothing, names no server path, costs at most 1 CPU-second and 200 MB
    of peak memory when refused (an answered one is a search: a wide guard only; over a budget, the call
    is measured twice more and the best of three counts, since the process's CPU time includes other
    threads' work), and leaves the server answering."""
    cid, setup, build, fragment = case
    url, _, store, files = live
    if setup == "text":
        assert client.predict(*text_request()[1], api_name="/search_text")[2].startswith("BM25 found")
    elif setup == "drawing":
        assert client.predict(*drawing_request(live)[1], api_name="/search_drawing")[1].startswith(
            "4 results"
        )
    before = store.count()
    api, args, at = build(live)
    out, cost = measured(lambda: client.predict(*args, api_name=api))
    limit = (3 * CPU_BUDGET_S, 2 * PEAK_BUDGET_MB) if fragment is None else (CPU_BUDGET_S, PEAK_BUDGET_MB)
    for _ in range(2):  # the process's CPU also counts other threads' work on a loaded machine: best of 3
        if cost["cpu_s"] <= limit[0] and cost["peak_mb"] <= limit[1]:
            break
        _, again = measured(lambda: client.predict(*args, api_name=api))
        cost = {k: min(cost[k], again[k]) for k in cost}
    COSTS[cid] = {**cost, "endpoint": api, "class": "⚠️" if fragment else "answered"}
    msg = out[at] if isinstance(out, tuple | list) else out
    if fragment is None:  # within the limits: answered normally
        assert not (isinstance(msg, str) and msg.startswith("⚠️")), msg
    else:
        assert isinstance(msg, str) and msg.startswith("⚠️ "), msg
        assert fragment in msg, msg
        assert str(files.parent) not in msg and "/tmp/" not in msg and "gradio" not in msg.lower()
        assert "object at 0x" not in msg and len(msg) < 700  # no Python object reprs
    if fragment is None:  # an answered search: its cost is the search itself, guarded with a wide margin
        assert cost["cpu_s"] <= 3 * CPU_BUDGET_S and cost["peak_mb"] <= 2 * PEAK_BUDGET_MB, cost
    else:
        assert cost["cpu_s"] <= CPU_BUDGET_S and cost["peak_mb"] <= PEAK_BUDGET_MB, cost
    assert store.count() == before  # nothing stored
    report, _ = client.predict(api_name="/agreement")  # the server still answers
    assert report.startswith("## Annotator agreement")


def test_lone_surrogates_sent_as_raw_json_get_a_message(live):
    import httpx
    from gradio_client import Client

    url = live[0]
    params = Client(url, verbose=False).view_api(print_info=False, return_format="dict")["named_endpoints"][
        "/search_text"
    ]["parameters"]
    values = [p.get("parameter_default") for p in params]
    values[:5] = ["lamp @SURROGATE@ shade", "", "dssdnet-untrained", 5, "ann"]
    body = json.dumps({"data": values}).replace("@SURROGATE@", "\\ud800")
    r = httpx.post(
        f"{url}gradio_api/call/search_text", content=body, headers={"content-type": "application/json"}
    )
    event = r.json()["event_id"]
    stream = httpx.get(f"{url}gradio_api/call/search_text/{event}", timeout=60).text
    assert "event: complete" in stream
    data = json.loads(stream.split("event: complete\ndata: ", 1)[1].splitlines()[0])
    assert data[2] == "⚠️ the abstract holds a character that is not valid Unicode (a lone surrogate)"


def test_the_page_shows_the_store_name_not_its_path(live):
    import httpx

    url, _, store, _ = live
    config = httpx.get(f"{url}config").text
    assert str(store.path.parent) not in config
    assert "labels in the store **labels.sqlite**" in config


# -- undo, idempotency, exports ------------------------------------------------------------------------------
def test_undo_acts_on_the_sessions_own_labels_only(live):
    from gradio_client import Client

    url, _, store, _ = live
    a, b, c = (Client(url, verbose=False) for _ in range(3))
    for cl in (a, b):
        cl.predict(*text_request()[1], api_name="/search_text")
    msg_a = a.predict(*label_request(annotator="same-name")[1], api_name="/label")[0]
    lab_id = int(msg_a.rsplit("#", 1)[1])
    # b uses the same name but never labelled: nothing of a's is undone; c never even searched
    assert b.predict("same-name", api_name="/undo")[0].startswith("nothing to undo")
    assert c.predict("same-name", api_name="/undo")[0].startswith("nothing to undo")
    assert not next(x for x in store.labels(include_undone=True) if x.id == lab_id).undone
    b.predict(*label_request(rank=2, annotator="same-name")[1], api_name="/label")
    assert a.predict("same-name", api_name="/undo")[0].startswith("↶ undid relevant")
    live_ids = {x.id for x in store.labels()}
    assert lab_id not in live_ids and len([x for x in store.labels() if x.annotator == "same-name"]) == 1


def test_a_retried_label_stores_once(live, client):
    url, _, store, _ = live
    client.predict(*text_request()[1], api_name="/search_text")
    before = store.count()
    first = client.predict(*label_request(key="retry-1", annotator="retrier")[1], api_name="/label")[0]
    again = client.predict(*label_request(key="retry-1", annotator="retrier")[1], api_name="/label")[0]
    assert first.startswith("✓ relevant") and "already stored" in again
    assert first.rsplit("#", 1)[1].split()[0] == again.split("label #", 1)[1].split()[0]
    assert store.count() == before + 1
    other = client.predict(
        *label_request(label="not", key="retry-1", annotator="retrier")[1], api_name="/label"
    )[0]
    assert other.startswith("⚠️ idempotency key 'retry-1' already stored label")
    assert store.count() == before + 1


def test_exports_are_served_from_a_database_outside_the_cwd(live, client):
    url, _, store, _ = live
    files, md = client.predict(api_name="/export_labels")
    names = sorted(Path(f).name for f in files)
    assert names == ["disputed.jsonl", "dssdnet.jsonl", "guidelines.md", "hmcl.jsonl", "qrels.txt"]
    assert str(store.path.parent) not in md and "exports/" in md
    on_disk = store.path.parent / "exports"
    assert stat.S_IMODE(on_disk.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in on_disk.iterdir()} == {0o600}
    assert (
        Path(next(f for f in files if f.endswith("qrels.txt"))).read_text()
        == (on_disk / "qrels.txt").read_text()
    )


# -- identity: a login (--annotators) and admins (--admin) -------------------------------------------------
@pytest.fixture(scope="module")
def guarded(live, tmp_path_factory):
    """The same workbench behind a login: alice, bob and lead (admin), plus a shared secret."""
    import app
    from patent_demo.ui.access import Identity

    _, wb, _, _ = live
    store = LabelStore(tmp_path_factory.mktemp("guarded") / "labels.sqlite")
    identity = Identity.from_flags("alice:apw,bob:bpw,lead:lpw,*:team-secret", "lead")
    demo = app.build_demo(wb, store, identity=identity)
    port = free_port()
    demo.queue().launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **app.launch_kwargs(wb, identity),
    )
    yield f"http://127.0.0.1:{port}/", store
    demo.close()
    store.close()


def test_login_decides_the_annotator_and_admins_adjudicate_and_export(guarded):
    from gradio_client import Client

    url, store = guarded
    with pytest.raises(Exception):  # noqa: B017 - no login, no app
        Client(url, verbose=False)
    with pytest.raises(Exception):  # noqa: B017 - a wrong password
        Client(url, auth=("alice", "wrong"), verbose=False)
    alice = Client(url, auth=("alice", "apw"), verbose=False)
    bob = Client(url, auth=("bob", "bpw"), verbose=False)
    guest = Client(url, auth=("carol", "team-secret"), verbose=False)  # the shared secret, any name
    lead = Client(url, auth=("lead", "lpw"), verbose=False)
    for cl in (alice, bob, guest):
        cl.predict(*text_request()[1], api_name="/search_text")
    # the request says "mallory": the label goes under the login
    assert alice.predict(*label_request(annotator="mallory")[1], api_name="/label")[0].startswith(
        "✓ relevant"
    )
    assert bob.predict(*label_request(label="not", annotator="alice")[1], api_name="/label")[0].startswith(
        "✓ not"
    )
    assert guest.predict(*label_request(rank=2, annotator="")[1], api_name="/label")[0].startswith(
        "✓ relevant"
    )
    assert [(x.annotator, x.rank, x.label) for x in store.labels()] == [
        ("alice", 1, "relevant"),
        ("bob", 1, "not"),
        ("carol", 2, "relevant"),
    ]
    ((pair, votes),) = store.disagreements()
    assert votes == {"alice": "relevant", "bob": "not"}
    # a party cannot settle the pair, nor can a non-admin, whatever name the request gives
    msg = alice.predict(pair[0], pair[1], "relevant", "", "lead", api_name="/adjudicate")[0]
    assert msg == "⚠️ alice may not adjudicate; ask one of: lead"
    assert bob.predict(api_name="/export_labels")[1] == "⚠️ bob may not export the labels; ask one of: lead"
    msg = lead.predict(pair[0], pair[1], "relevant", "same lamp", "bob", api_name="/adjudicate")[0]
    assert msg.startswith(f"✓ adjudicated {pair[1]}") and store.labels()[-1].annotator == "lead"
    files, md = lead.predict(api_name="/export_labels")
    assert "0 disputed pairs" in md and len(files) == 5  # with the labelling guidelines


def test_a_party_never_adjudicates_and_identity_flags_are_checked(live):
    from patent_demo.ui.access import Identity

    store = live[2]
    ident_many, ident_one = (
        Identity.from_flags("a:1,lead:2,chief:3", "lead,chief"),
        Identity.from_flags("lead:2", "lead"),
    )
    assert ident_many.admins == {"lead", "chief"} and ident_one.admins == {"lead"}
    with pytest.raises(ValueError, match="--admin needs --annotators"):
        Identity.from_flags("", "lead")
    with pytest.raises(ValueError, match="needs the form name:password"):
        Identity.from_flags("alice", "")
    with pytest.raises(ValueError, match="--admin alice: an admin needs a password of their own"):
        Identity.from_flags("*:SECRET", "alice")  # the campaign's case: anyone with the secret was alice
    # the store's rule under both configurations (units labelled by lead themselves)
    from patent_demo.labels.store import Label, LabelError

    for who, label in (("lead", "relevant"), ("a", "not")):
        store.add(Label(who, "txt-party", "text", "D0001", "bm25", 1, 1.0, label, query_text="q"))
    with pytest.raises(
        LabelError, match="lead labelled this pair and cannot settle it; ask another adjudicator: chief"
    ):
        store.adjudicate("txt-party", "D0001", "not", "lead", adjudicators=ident_many.admins)
    with pytest.raises(LabelError, match="ask another adjudicator: none: every adjudicator labelled it"):
        store.adjudicate("txt-party", "D0001", "not", "lead", adjudicators=ident_one.admins)
    assert store.adjudicate("txt-party", "D0001", "not", "chief", adjudicators=ident_many.admins).adjudicated


def test_on_a_space_with_sign_in_the_profile_decides(live):
    from types import SimpleNamespace

    from patent_demo.labels.store import LabelError
    from patent_demo.ui.access import Identity

    ident = Identity(oauth=True)
    request = SimpleNamespace(username="mallory")
    assert ident.who("mallory", request, SimpleNamespace(username="hf-user")) == "hf-user"
    with pytest.raises(LabelError, match="sign in with Hugging Face first"):
        ident.who("mallory", request, None)


def test_a_query_drawing_is_kept_only_when_labelled(live):
    from gradio_client import Client

    url, _, store, _ = live
    pending = store.path.parent / "query_images" / ".pending"
    kept = store.path.parent / "query_images"
    cl = Client(url, verbose=False)
    own = Image.new("L", (120, 90), 255)  # a drawing no other session of this module searched with
    own.paste(0, (20, 15, 100, 20))
    own.paste(0, (20, 70, 100, 75))
    own.save(live[3] / "own.png")
    others = {p.name for p in pending.iterdir()} if pending.is_dir() else set()  # held by other sessions
    assert (
        len(cl.predict(*drawing_request(live, "own.png")[1], api_name="/search_drawing")[0]) == 4
    )  # 4 hits shown
    staged = sorted(p.name for p in pending.iterdir() if p.name not in others)
    assert len(staged) == 1 and not (kept / staged[0]).exists()  # held, not kept
    cl.predict(
        *text_request()[1], api_name="/search_text"
    )  # the drawing search is over, nothing was labelled
    assert not (pending / staged[0]).exists() and not (kept / staged[0]).exists()
    cl.predict(*drawing_request(live, "own.png")[1], api_name="/search_drawing")
    assert cl.predict(*label_request(list_name="hmcl", annotator="keeper")[1], api_name="/label")[
        0
    ].startswith("✓")
    assert (kept / staged[0]).is_file() and stat.S_IMODE((kept / staged[0]).stat().st_mode) == 0o600
    cl.predict(*text_request()[1], api_name="/search_text")
    assert (kept / staged[0]).is_file()  # labelled: it stays


# -- determinism under concurrency, stale lists ---------------------------------------------------------------
def test_eight_concurrent_text_searches_give_identical_lists_and_scores(live):
    """The same /search_text 8 times at once, each its own session, against the one shared re-ranker (in
    eval since it was built, never switched by a request): identical DSSDNet and fused lists, scores included."""
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    url, wb, _, _ = live
    assert not wb.reranker(wb.model("dssdnet-untrained", "text")).training
    clients = [Client(url, verbose=False) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda c: c.predict(*text_request(k=10)[1], api_name="/search_text"), clients))
    tables = [(tuple(map(tuple, o[0]["data"])), tuple(map(tuple, o[1]["data"]))) for o in outs]
    assert all(o[2].startswith("BM25 found") for o in outs)
    assert len(set(tables)) == 1, "concurrent searches disagree"
    assert len(tables[0][1]) >= 2  # a list with scores to compare, not an empty one


@pytest.mark.parametrize(
    "failing",
    [
        lambda lv: sheet_request(lv, "notes.png"),
        lambda lv: drawing_request(lv, "notes.png"),
        lambda lv: text_request(""),
        lambda lv: combined_request(lv, "notes.png"),
        lambda lv: filtered_request("/search_sheet", lv, classification="A," * 1000),
    ],
    ids=["sheet", "drawing", "text", "combined", "sheet-filter"],
)
def test_a_failed_search_clears_the_list_it_replaces(live, client, failing):
    store = live[2]
    assert client.predict(*drawing_request(live)[1], api_name="/search_drawing")[1].startswith("4 results")
    api, args, at = failing(live)
    assert client.predict(*args, api_name=api)[at].startswith("⚠️")
    before = store.count()
    msg = client.predict(*label_request(list_name="hmcl", annotator="stale")[1], api_name="/label")[0]
    assert msg == "⚠️ a label needs a query and a candidate: run a search first"
    assert store.count() == before


# -- reports: the database outside the checkout and the temp dir (as /data), private files ---------------------
def test_the_search_report_is_served_from_a_private_copy_and_written_0600(live, client):
    from patent_demo.ui.access import SERVED

    url, _, store, _ = live
    client.predict(*text_request()[1], api_name="/search_text")
    client.predict(*label_request(annotator="reporter", note="same shade")[1], api_name="/label")
    qid = next(x.query_id for x in store.labels() if x.annotator == "reporter")
    files, md, _ = client.predict(qid, {}, True, api_name="/search_report")
    assert md.startswith("1 document in the report") or "documents in the report" in md, md
    on_disk = store.path.parent / "reports"
    assert stat.S_IMODE(on_disk.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in on_disk.iterdir()} == {0o600}
    newest = max((SERVED.root / "reports").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    served = sorted(newest.iterdir())
    assert [p.name for p in served] == sorted(p.name for p in on_disk.iterdir())
    assert {stat.S_IMODE(p.stat().st_mode) for p in served} == {0o600}
    assert {stat.S_IMODE(p.stat().st_mode) for p in (SERVED.root, newest)} == {0o700}
    assert not str(SERVED.root).startswith(os.getcwd())
    assert "same shade" in Path(next(f for f in files if f.endswith(".csv"))).read_text()
    # later reports replace the served copies instead of piling them up (the newest few stay for
    # concurrent downloads)
    for _ in range(SERVED.KEEP + 3):
        client.predict(qid, {"before": "2030-01-01"}, False, api_name="/search_report")
    assert len(list((SERVED.root / "reports").iterdir())) == SERVED.KEEP


# -- roles and ownership behind a login ---------------------------------------------------------------------------
def test_a_shared_secret_cannot_log_in_as_a_named_user_or_an_admin(guarded):
    from gradio_client import Client

    url, _ = guarded
    for name in ("lead", "alice"):  # lead is the admin, alice has her own password
        with pytest.raises(Exception):  # noqa: B017 - the login is refused
            Client(url, auth=(name, "team-secret"), verbose=False)
    assert Client(url, auth=("dave", "team-secret"), verbose=False)  # any other name may use it


def test_non_admins_read_their_own_labels_only_and_admins_read_all(guarded):
    from gradio_client import Client

    url, store = guarded
    alice = Client(url, auth=("alice", "apw"), verbose=False)
    bob = Client(url, auth=("bob", "bpw"), verbose=False)
    lead = Client(url, auth=("lead", "lpw"), verbose=False)
    for cl, grade, note in ((alice, "partly", "alice-secret-note"), (bob, "relevant", "bob-secret-note")):
        cl.predict(*text_request("lamp shade bulb holder")[1], api_name="/search_text")
        assert cl.predict(*label_request(label=grade, rank=2, note=note)[1], api_name="/label")[0].startswith(
            "✓"
        )
    qid = store.labels()[-1].query_id
    _, md, frame = alice.predict(qid, {}, True, api_name="/search_report")
    assert "alice-secret-note" in frame and "bob-secret-note" not in frame and "bob" not in frame, md
    _, _, frame = lead.predict(qid, {}, True, api_name="/search_report")
    assert "alice-secret-note" in frame and "bob-secret-note" in frame
    report, queue = bob.predict(api_name="/agreement")
    assert "Your own labels only" in report and "alice" not in report and queue["data"] == []
    report, queue = lead.predict(api_name="/agreement")
    assert "alice" in report and any(r[0] == qid for r in queue["data"])


def test_the_sheet_search_takes_the_annotator_from_the_login(guarded, live):
    from gradio_client import Client

    url, _ = guarded
    alice = Client(url, auth=("alice", "apw"), verbose=False)
    out = alice.predict(*sheet_request(live)[1][:3], "mallory", *filter_panel(), api_name="/search_sheet")
    progress = [x for x in out if isinstance(x, str) and "candidates of this query labelled by" in x]
    assert not out[1].startswith("⚠️") and progress and "labelled by alice" in progress[0]
    assert not any("mallory" in str(x) for x in out)


def test_the_guidelines_are_read_by_all_and_saved_by_an_admin_under_the_login(guarded):
    from gradio_client import Client

    from patent_demo.labels.guidelines import DEFAULT_TEXT

    url, store = guarded
    alice = Client(url, auth=("alice", "apw"), verbose=False)
    text, by, edit = alice.predict(api_name="/guidelines")
    assert text == edit and "In force for corpus" in by
    *_, msg = alice.predict("Mine.", "mallory", api_name="/save_guidelines")
    assert msg == "⚠️ alice may not edit the labelling guidelines; ask one of: lead"
    lead = Client(url, auth=("lead", "lpw"), verbose=False)
    text, by, _, msg = lead.predict("Same article, same ornament.", "mallory", api_name="/save_guidelines")
    assert (
        msg.startswith("✓ saved as version ") and " by lead; " in msg and "saved by lead" in by
    )  # the login
    assert alice.predict(api_name="/guidelines")[0] == "Same article, same ornament."
    *_, msg = lead.predict("", "", api_name="/save_guidelines")
    assert msg.startswith("⚠️ the guidelines are empty")
    (corpus,) = store.guideline_corpora()
    assert store.guideline_versions(corpus)[-1].edited_by == "lead"
    assert DEFAULT_TEXT not in {g.text for g in store.guideline_versions(corpus)}


def test_undo_with_another_sessions_hash_acts_as_nobody_else(guarded):
    """Bob's client sends Alice's session hash: behind a login the session belongs to the login that used
    it first (``patent_demo.ui.guard``), so Bob's request is refused (403) and Alice's label stays."""
    from gradio_client import Client

    url, store = guarded
    alice = Client(url, auth=("alice", "apw"), verbose=False)
    alice.predict(*text_request()[1], api_name="/search_text")
    lab_id = int(
        alice.predict(*label_request(rank=1, label="not")[1], api_name="/label")[0].rsplit("#", 1)[1]
    )
    bob = Client(url, auth=("bob", "bpw"), verbose=False)
    bob.session_hash = alice.session_hash
    with pytest.raises(Exception, match="403"):  # noqa: B017 - refused before it reaches the session
        bob.predict("alice", api_name="/undo")
    assert not next(x for x in store.labels(include_undone=True) if x.id == lab_id).undone
    assert alice.predict("", api_name="/undo")[0].startswith("↶ undid not")


def test_a_party_who_undid_the_label_still_cannot_adjudicate_and_all_admin_parties_are_told(guarded):
    from gradio_client import Client

    url, store = guarded
    lead = Client(url, auth=("lead", "lpw"), verbose=False)
    bob = Client(url, auth=("bob", "bpw"), verbose=False)
    for cl, grade in ((lead, "relevant"), (bob, "not")):
        cl.predict(*text_request("bulb holder with a glass shade")[1], api_name="/search_text")
        assert cl.predict(*label_request(label=grade, rank=1)[1], api_name="/label")[0].startswith("✓")
    qid, cand = store.labels()[-1].query_id, store.labels()[-1].candidate_id
    assert lead.predict("", api_name="/undo")[0].startswith("↶ undid relevant")
    msg = lead.predict(qid, cand, "not", "", "", api_name="/adjudicate")[0]
    assert msg.startswith("⚠️ lead labelled this pair and cannot settle it; ask another adjudicator: none")
    assert "start the app with another name in --admin" in msg
    assert not any(x.adjudicated for x in store.labels(query_id=qid) if x.candidate_id == cand)


def test_the_campaign_table_stays_within_the_budgets():
    """Every refused hostile case run in this session was measured within 1 CPU-second and 200 MB; with
    ``RELIABILITY_COSTS=FILE`` the measurements are written there (``bench/bench_hostile_inputs.py
    --campaign`` turns them into ``docs/bench/hostile_campaign.md``)."""
    refused = [c for c in COSTS.values() if c["class"] == "⚠️"]
    if not refused:
        pytest.skip("no hostile case ran in this session (deselected)")
    assert max(c["cpu_s"] for c in refused) <= CPU_BUDGET_S
    assert max(c["peak_mb"] for c in refused) <= PEAK_BUDGET_MB
    if os.environ.get("RELIABILITY_COSTS"):
        Path(os.environ["RELIABILITY_COSTS"]).write_text(
            json.dumps(COSTS, indent=1, ensure_ascii=False) + "\n"
        )


def test_concurrent_annotators_kill_9_and_determinism_against_app_py(tmp_path):
    """The load part in its short form (``bench/bench_labels_load.py`` against ``app.py`` in its own process,
    the real BM25 + DSSDNet MiniLM search): 8 identical text searches at once give one list, 4 concurrent
    annotators lose, duplicate and misattribute nothing, and a kill -9 loses no acknowledged label."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "bench_labels_load", root / "bench" / "bench_labels_load.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "load.json"
    assert (
        bench.main(
            [
                "--annotators",
                "4",
                "--labels",
                "12",
                "--kills",
                "1",
                "--kill-annotators",
                "3",
                "--kill-after",
                "4",
                "--patents",
                "20",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    r = json.loads(out.read_text())
    det, conc, kills = r["determinism"], r["concurrency"], r["kills_total"]
    assert (det["answered"], det["distinct_lists"], det["distinct_top3"]) == (8, 1, 1) and det[
        "list_length"
    ] > 0
    assert conc["client_errors"] == [] and conc["acknowledged"] == conc["sent"] == 48
    assert (conc["lost"], conc["stored_twice"], conc["misattributed"], conc["silent_errors"]) == (0, 0, 0, 0)
    assert kills["acknowledged"] > 0
    assert (
        kills["lost"],
        kills["misattributed"],
        kills["keys_missing_after_retry"],
        kills["keys_stored_twice"],
    ) == (0, 0, 0, 0)


def test_the_crop_box_previews_a_large_upload_shrunk_within_the_budgets(live):
    """The crop box of a 6000 x 6000 page (within the byte budget): its preview is sent to the browser at
    900 px a side, within the per-request budgets; the whole drawing leaves the upload itself as the query
    (so a corpus drawing is still recognised), a box makes the crop the query."""
    import gradio as gr

    from patent_demo.ui.examiner import crop_box
    from patent_demo.ui.inputs import cropped_query

    path = str(live[3] / "gray-6000.png")
    value, cost = measured(lambda: gr.Image(type="pil").postprocess(crop_box(path, 0, 0, 100, 100)[0]))
    assert value is not None and cost["cpu_s"] <= CPU_BUDGET_S and cost["peak_mb"] <= PEAK_BUDGET_MB, cost
    preview, crop, line = crop_box(path, 0, 0, 100, 100)
    assert (max(preview.size), crop, line) == (900, None, "The whole drawing is searched.")
    assert cropped_query(path, crop) == (Path(path).read_bytes(), False)
    preview, crop, _ = crop_box(path, 0, 0, 50, 50)
    assert max(preview.size) == 900 and crop.size == (3000, 3000)
    assert cropped_query(path, crop)[1] is True
