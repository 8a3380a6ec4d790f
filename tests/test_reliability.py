"""The reliability suite, fast part: bad input through gradio_client against a live app (each case must
come back as a clear ⚠️ message, store nothing, leak no server path, and leave the server answering),
then the undo, idempotency and identity cases. The load part (16 concurrent annotators, kill -9 during
labelling) is ``bench/bench_labels_load.py``.

The label database lives in a temporary folder outside the working directory, as ``/data`` does on a
Space, so the export case also shows that exports are served from wherever the database is.
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
from tests.test_app_api import free_port
from tests.test_pipeline import make_workbench

pytestmark = pytest.mark.slow

ABSTRACT = "lamp with a shade and bulb"


def _png(size, fill=0) -> bytes:
    buf = io.BytesIO()
    Image.new("L", size, fill).save(buf, format="PNG")
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
    import app

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
    }.items():
        (files / name).write_bytes(data)
    demo = app.build_demo(wb, store)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_kwargs(wb))  # fmt: skip
    yield f"http://127.0.0.1:{port}/", wb, store, files
    demo.close()
    store.close()


@pytest.fixture
def client(live):
    from gradio_client import Client

    return Client(live[0], verbose=False)


def _file(live, name):
    from gradio_client import handle_file

    return handle_file(str(live[3] / name))


def _drawing(live, name="good.png", k=4, loc=""):
    return ("/search_drawing", (_file(live, name), "zero-shot", k, True, True, loc, "ann"), 1)


def _text(abstract=ABSTRACT, codes="", k=5):
    return ("/search_text", (abstract, codes, "dssdnet-untrained", k, "ann"), 2)


def _combined(live, name="good.png", abstract=ABSTRACT, codes="", k=4):
    return (
        "/search_combined",
        (_file(live, name), abstract, codes, "zero-shot", "dssdnet-untrained", k, "ann"),
        3,
    )


def _label(label="relevant", list_name="dssdnet", rank=1, category="", note="", annotator="ann", key=""):
    return ("/label", (label, list_name, rank, category, note, annotator, key, True), 0)


def _adjudicate(query_id="txt-0000000000000000", cand="D0001", label="not", note="", annotator="lead"):
    return ("/adjudicate", (query_id, cand, label, note, annotator), 0)


LONG = "A47C" + " " * 50_000 + "-"
# (case id, setup search: None / "text" / "drawing", request builder, what the message must say)
CASES = [
    ("drawing-none", None, lambda lv: ("/search_drawing", (None, "zero-shot", 4, True, True, "", "ann"), 1),
     "upload a drawing"),
    ("drawing-empty", None, lambda lv: _drawing(lv, "empty.png"), "empty"),
    ("drawing-text", None, lambda lv: _drawing(lv, "notes.png"), "notes.png: not a readable image"),
    ("drawing-xml", None, lambda lv: _drawing(lv, "drawing.xml"), "drawing.xml: not a readable image"),
    ("drawing-truncated", None, lambda lv: _drawing(lv, "cut.png"), "cut.png"),
    ("drawing-strip-wide", None, lambda lv: _drawing(lv, "strip-wide.png"), "canvas after cropping margins"),
    ("drawing-strip-tall", None, lambda lv: _drawing(lv, "strip-tall.png"), "canvas after cropping margins"),
    ("drawing-header-8000", None, lambda lv: _drawing(lv, "header-8000.png"), "exceeds the budget"),
    ("drawing-header-huge", None, lambda lv: _drawing(lv, "header-100000.png"), "decompression bomb"),
    ("drawing-noise", None, lambda lv: _drawing(lv, "noise.jpg"), "noise.jpg: not a readable image"),
    ("drawing-pdf", None, lambda lv: _drawing(lv, "paper.pdf"), "paper.pdf: not a readable image"),
    ("drawing-svg", None, lambda lv: _drawing(lv, "remote.svg"), "remote.svg: not a readable image"),
    ("drawing-broken-jpeg", None, lambda lv: _drawing(lv, "broken.jpg"), "broken.jpg"),
    ("drawing-k0", None, lambda lv: _drawing(lv, k=0), "top-k must be a whole number from 1 to 50"),
    ("drawing-k51", None, lambda lv: _drawing(lv, k=51), "top-k must be a whole number from 1 to 50"),
    ("drawing-k-negative", None, lambda lv: _drawing(lv, k=-3), "top-k must be a whole number"),
    ("drawing-k-fraction", None, lambda lv: _drawing(lv, k=2.5), "top-k must be a whole number"),
    ("drawing-k-text", None, lambda lv: _drawing(lv, k="ten"), "top-k must be a whole number"),
    ("drawing-k-none", None, lambda lv: _drawing(lv, k=None), "top-k must be a whole number"),
    ("drawing-locarno-junk", None, lambda lv: _drawing(lv, loc="99-99-99"), "not a Locarno code"),
    ("drawing-locarno-no-subclass", None, lambda lv: _drawing(lv, loc="06-98"), "has no subclass 98"),
    ("drawing-locarno-10kB", None, lambda lv: _drawing(lv, loc="0" * 10_000), "a code at most 100"),
    ("drawing-locarno-spaces", None, lambda lv: _drawing(lv, loc=LONG), "a code at most 100"),
    ("text-empty", None, lambda lv: _text(""), "the abstract is empty"),
    ("text-whitespace", None, lambda lv: _text("  \n\t  "), "the abstract is empty"),
    ("text-100k", None, lambda lv: _text("x" * 100_000), "has 100,000 characters"),
    ("text-no-shared-word", None, lambda lv: _text("!!! ???"), "no corpus text shares a word"),
    ("codes-nonsense", None, lambda lv: _text(codes="nonsense"), "unknown classification code 'nonsense'"),
    ("codes-no-subclass", None, lambda lv: _text(codes="06-98"), "unknown classification code '06-98'"),
    ("codes-200kB-spaces", None, lambda lv: _text(codes=" " * 200_000), "the codes field has 200,000 characters"),
    ("codes-long-spaced", None, lambda lv: _text(codes=LONG), "the codes field has 50,005 characters"),
    ("codes-over-code-cap", None, lambda lv: _text(codes="A47C" + " " * 1900 + "-"), "unknown classification code"),
    ("codes-html", None, lambda lv: _text(codes="<img src=x onerror=alert(1)>"), "&lt;img src=x"),
    ("text-k0", None, lambda lv: _text(k=0), "top-k must be a whole number"),
    ("text-k1000", None, lambda lv: _text(k=1000), "top-k must be a whole number"),
    ("text-k-text", None, lambda lv: _text(k="many"), "top-k must be a whole number"),
    ("combined-no-file", None, lambda lv: ("/search_combined", (None, ABSTRACT, "", "zero-shot", "dssdnet-untrained",
                                                                4, "ann"), 3), "upload a drawing as well"),
    ("combined-empty-abstract", None, lambda lv: _combined(lv, abstract=""), "the abstract is empty"),
    ("combined-bad-file", None, lambda lv: _combined(lv, "notes.png"), "notes.png: not a readable image"),
    ("combined-bad-codes", None, lambda lv: _combined(lv, codes="06-98"), "unknown classification code"),
    ("combined-k0", None, lambda lv: _combined(lv, k=0), "top-k must be a whole number"),
    ("label-no-search", None, lambda lv: _label(), "run a search first"),
    ("label-rank-none", "text", lambda lv: _label(rank=None), "rank must be a whole number from 1, got None"),
    ("label-rank-zero", "text", lambda lv: _label(rank=0), "rank must be a whole number from 1, got "),
    ("label-rank-negative", "text", lambda lv: _label(rank=-1), "rank must be a whole number from 1"),
    ("label-rank-fraction", "text", lambda lv: _label(rank=1.5), "rank must be a whole number from 1, got '1.5'"),
    ("label-rank-text", "text", lambda lv: _label(rank="abc"), "rank must be a whole number from 1, got 'abc'"),
    ("label-rank-beyond", "text", lambda lv: _label(rank=9999), "rank 9999 is outside the dssdnet list"),
    ("label-list-absent", "text", lambda lv: _label(list_name="hmcl"), "the current query has no 'hmcl' list"),
    ("label-list-absent-drawing", "drawing", lambda lv: _label(list_name="fused"), "has no 'fused' list"),
    ("label-name-empty", "text", lambda lv: _label(annotator=""), "annotator is empty"),
    ("label-name-blank", "text", lambda lv: _label(annotator="   "), "annotator is empty"),
    ("label-name-nul", "text", lambda lv: _label(annotator="ann\x00"), "control character U+0000"),
    ("label-name-newline", "text", lambda lv: _label(annotator="ann\nbob"), "control character U+000A"),
    ("label-name-bidi", "text", lambda lv: _label(annotator="ann\u202egpj"), "control character U+202E"),
    ("label-name-101", "text", lambda lv: _label(annotator="a" * 101), "101 characters; at most 100"),
    ("label-name-10kB", "text", lambda lv: _label(annotator="a" * 10_000), "10,000 characters; at most 100"),
    ("label-note-1MB", "text", lambda lv: _label(note="n" * 1_000_000), "note has 1,000,000 characters"),
    ("label-note-nul", "text", lambda lv: _label(note="a\x00b"), "note holds the control character U+0000"),
    ("label-x-not-relevant", "text", lambda lv: _label(label="not", category="X"), "category X marks a relevant"),
    ("label-key-300", "text", lambda lv: _label(key="k" * 300), "idempotency key has 300 characters"),
    ("label-key-nul", "text", lambda lv: _label(key="k\x00"), "control character U+0000"),
    ("adjudicate-no-name", None, lambda lv: _adjudicate(annotator=""), "enter your name first"),
    ("adjudicate-no-pair", None, lambda lv: _adjudicate("", ""), "select a disagreement in the queue first"),
    ("adjudicate-unknown", None, lambda lv: _adjudicate(), "nobody labelled candidate 'D0001'"),
    ("adjudicate-name-10kB", None, lambda lv: _adjudicate(annotator="a" * 10_000), "10,000 characters"),
    ("adjudicate-query-nul", None, lambda lv: _adjudicate(query_id="txt-\x00"), "control character U+0000"),
    ("adjudicate-name-html", None, lambda lv: _adjudicate(annotator="<b>lead</b>\n"), "control character U+000A"),
]  # fmt: skip


def test_there_are_at_least_sixty_cases():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_message_and_the_server_carries_on(live, client, case):
    _, setup, build, fragment = case
    url, _, store, files = live
    if setup == "text":
        assert client.predict(*_text()[1], api_name="/search_text")[2].startswith("BM25 found")
    elif setup == "drawing":
        assert client.predict(*_drawing(live)[1], api_name="/search_drawing")[1].startswith("4 results")
    before = store.count()
    api, args, at = build(live)
    out = client.predict(*args, api_name=api)
    msg = out[at] if isinstance(out, tuple | list) else out
    assert isinstance(msg, str) and msg.startswith("⚠️ "), msg
    assert fragment in msg, msg
    assert str(files.parent) not in msg and "/tmp/" not in msg and "gradio" not in msg.lower()
    assert len(msg) < 700
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
        cl.predict(*_text()[1], api_name="/search_text")
    msg_a = a.predict(*_label(annotator="same-name")[1], api_name="/label")[0]
    lab_id = int(msg_a.rsplit("#", 1)[1])
    # b uses the same name but never labelled: nothing of a's is undone; c never even searched
    assert b.predict("same-name", api_name="/undo")[0].startswith("nothing to undo")
    assert c.predict("same-name", api_name="/undo")[0].startswith("nothing to undo")
    assert not next(x for x in store.labels(include_undone=True) if x.id == lab_id).undone
    b.predict(*_label(rank=2, annotator="same-name")[1], api_name="/label")
    assert a.predict("same-name", api_name="/undo")[0].startswith("↶ undid relevant")
    live_ids = {x.id for x in store.labels()}
    assert lab_id not in live_ids and len([x for x in store.labels() if x.annotator == "same-name"]) == 1


def test_a_retried_label_stores_once(live, client):
    url, _, store, _ = live
    client.predict(*_text()[1], api_name="/search_text")
    before = store.count()
    first = client.predict(*_label(key="retry-1", annotator="retrier")[1], api_name="/label")[0]
    again = client.predict(*_label(key="retry-1", annotator="retrier")[1], api_name="/label")[0]
    assert first.startswith("✓ relevant") and "already stored" in again
    assert first.rsplit("#", 1)[1].split()[0] == again.split("label #", 1)[1].split()[0]
    assert store.count() == before + 1
    other = client.predict(*_label(label="not", key="retry-1", annotator="retrier")[1], api_name="/label")[0]
    assert other.startswith("⚠️ idempotency key 'retry-1' already stored label")
    assert store.count() == before + 1


def test_exports_are_served_from_a_database_outside_the_cwd(live, client):
    url, _, store, _ = live
    files, md = client.predict(api_name="/export_labels")
    names = sorted(Path(f).name for f in files)
    assert names == ["disputed.jsonl", "dssdnet.jsonl", "hmcl.jsonl", "qrels.txt"]
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
    from app_labelling import Identity

    _, wb, _, _ = live
    store = LabelStore(tmp_path_factory.mktemp("guarded") / "labels.sqlite")
    identity = Identity.from_flags("alice:apw,bob:bpw,lead:lpw,*:team-secret", "lead")
    demo = app.build_demo(wb, store, identity=identity)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_kwargs(wb, identity))  # fmt: skip
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
        cl.predict(*_text()[1], api_name="/search_text")
    # the request says "mallory": the label goes under the login
    assert alice.predict(*_label(annotator="mallory")[1], api_name="/label")[0].startswith("✓ relevant")
    assert bob.predict(*_label(label="not", annotator="alice")[1], api_name="/label")[0].startswith("✓ not")
    assert guest.predict(*_label(rank=2, annotator="")[1], api_name="/label")[0].startswith("✓ relevant")
    assert [(x.annotator, x.rank, x.label) for x in store.labels()] == [
        ("alice", 1, "relevant"), ("bob", 1, "not"), ("carol", 2, "relevant"),
    ]  # fmt: skip
    ((pair, votes),) = store.disagreements()
    assert votes == {"alice": "relevant", "bob": "not"}
    # a party cannot settle the pair, nor can a non-admin, whatever name the request gives
    msg = alice.predict(pair[0], pair[1], "relevant", "", "lead", api_name="/adjudicate")[0]
    assert msg == "⚠️ alice may not adjudicate; ask one of: lead"
    assert bob.predict(api_name="/export_labels")[1] == "⚠️ bob may not export the labels; ask one of: lead"
    msg = lead.predict(pair[0], pair[1], "relevant", "same lamp", "bob", api_name="/adjudicate")[0]
    assert msg.startswith(f"✓ adjudicated {pair[1]}") and store.labels()[-1].annotator == "lead"
    files, md = lead.predict(api_name="/export_labels")
    assert "0 disputed pairs" in md and len(files) == 4


def test_a_party_never_adjudicates_and_identity_flags_are_checked(live):
    from app_labelling import Identity

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

    from app_labelling import Identity
    from patent_demo.labels.store import LabelError

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
    assert len(cl.predict(*_drawing(live, "own.png")[1], api_name="/search_drawing")[0]) == 4  # 4 hits shown
    staged = sorted(p.name for p in pending.iterdir() if p.name not in others)
    assert len(staged) == 1 and not (kept / staged[0]).exists()  # held, not kept
    cl.predict(*_text()[1], api_name="/search_text")  # the drawing search is over, nothing was labelled
    assert not (pending / staged[0]).exists() and not (kept / staged[0]).exists()
    cl.predict(*_drawing(live, "own.png")[1], api_name="/search_drawing")
    assert cl.predict(*_label(list_name="hmcl", annotator="keeper")[1], api_name="/label")[0].startswith("✓")
    assert (kept / staged[0]).is_file() and stat.S_IMODE((kept / staged[0]).stat().st_mode) == 0o600
    cl.predict(*_text()[1], api_name="/search_text")
    assert (kept / staged[0]).is_file()  # labelled: it stays
