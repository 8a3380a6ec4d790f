"""The second attack campaign's findings, each against a live app with its expected answer: a search syntax
costed by what its parser builds, decoders under a budget (formats sniffed from the bytes, a JPEG's scans
counted), only the corpus's drawings served from the data folder it was built from, and a label database
that vanishes, is replaced or becomes read-only under the server. The table is in ``docs/security.md``;
the costs are measured by ``bench/bench_request_budget.py``.

Tests: patent_demo/text/syntax.py, patent_demo/imageio.py, patent_demo/labels/watch.py, patent_demo/ui/guard.py
"""

from __future__ import annotations

import io
import os
import shutil
import stat
from pathlib import Path

import httpx
import pytest
from PIL import Image

from patent_demo.labels.store import LabelStore, StoreUnwritable
from patent_demo.limits import MAX_JPEG_SCANS
from tests.conftest import live_app
from tests.support.hostile import many_scans_jpeg, page, qoi
from tests.support.live import filter_panel, label_request, measured, text_request, upload
from tests.support.tiny import make_workbench

pytestmark = pytest.mark.slow

CPU_S, PEAK_MB = 1.0, 200.0  # the budget of one request (patent_demo/limits.py)
NOT_CORPUS = {  # files of the data folder a corpus was built from that are no corpus drawing
    "img/table.tsv": b"id\tclass\nD0001\t06-01\n",
    "img/grant.xml": b"<us-patent-grant/>",
    "img/SOURCE.md": b"# source\n",
    "img/front-page.png": page(64),
    "sub/other.png": page(64),
    "LICENSE": b"public domain\n",
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """(url, workbench, label store, folder of uploads): the app on the tiny workbench, whose corpus folder also holds
    files that are no corpus drawing, with its own label store."""
    tmp = tmp_path_factory.mktemp("attacks-files")
    wb, _ = make_workbench(tmp)
    wb.warm_up()
    root = Path(wb.corpus.root)
    for rel, data in NOT_CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    files = tmp / "uploads"
    files.mkdir()
    tiff = io.BytesIO()
    Image.new("L", (600, 600), 255).save(tiff, format="TIFF", compression="jpeg")
    hostile = {
        "qoi-3600.png": qoi(3600),  # named as a PNG: the bytes decide
        "scans-3000.jpg": many_scans_jpeg(6000, 3000),
        f"scans-{MAX_JPEG_SCANS}.jpg": many_scans_jpeg(6000, MAX_JPEG_SCANS),
        "jpeg-in.tif": tiff.getvalue(),
        "progressive-2000.jpg": page(2000, "JPEG", progressive=True),
        "png-named.jpg": wb.corpus.image_path(wb.corpus["D0002"].figures[0]).read_bytes(),
    }
    for name, data in hostile.items():
        (files / name).write_bytes(data)
    store = LabelStore(tmp / "labels" / "labels.sqlite")
    from patent_demo.ui.guard import Budget

    uploads = Budget(
        10_000, 2**40, 10.0
    )  # the hostile files add up to more than an open server's 20 MB in 10 s
    with live_app(wb, store, store=store, uploads=uploads) as url:
        yield url, wb, store, files
    store.close()


@pytest.fixture
def client(live):
    from gradio_client import Client

    return Client(live[0], verbose=False)


# -- 1. the search syntax, costed by what it builds ------------------------------------------------------------
BOMBS = {
    "748-phrases": ("OR".join(f'"zq{i}x"' for i in range(748)) + 'OR"chair"', "the query has 749 terms"),
    "600-truncations": ("OR".join(f'"abc{i}*"' for i in range(600)), "the query has 600 terms"),
}


@pytest.mark.parametrize("api", ["/search_text", "/search_bm25"])
@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_syntax_bomb_is_refused_at_once_naming_the_cap(live, client, api, bomb):
    query, start = BOMBS[bomb]
    args = text_request(query)[1] if api == "/search_text" else (query, "", "dssdnet-untrained", 5)
    out, cost = measured(lambda: client.predict(*args, api_name=api))
    status = out[-1] if api == "/search_bm25" else out[2]
    assert status.startswith(f"⚠️ {start}"), status
    assert "the search syntax takes at most 40" in status
    assert cost["cpu_s"] <= CPU_S, cost


# -- 2. decoders under a budget, on every upload path -------------------------------------------------------------
HOSTILE = {
    "qoi-3600.png": "a QOI file; this app reads drawings as PNG, JPEG, TIFF, GIF or BMP only",
    "scans-3000.jpg": f"a JPEG of more than {MAX_JPEG_SCANS} scans",
    f"scans-{MAX_JPEG_SCANS}.jpg": f"a 6000x6000 JPEG of {MAX_JPEG_SCANS} progressive scans costs as much to decode as",
    "jpeg-in.tif": "a TIFF compressed as 'jpeg'",
}


def _search(live, client, api: str, name: str) -> str:
    """The status line of one search of the upload ``name`` on ``api``."""
    if api == "/search_drawing":
        return client.predict(upload(live, name), "zero-shot", 4, True, True, "", "ann", api_name=api)[1]
    if api == "/search_sheet":
        return client.predict(upload(live, name), "zero-shot", 4, "ann", *filter_panel(), api_name=api)[1]
    views = [upload(live, name), upload(live, "png-named.jpg")]
    return client.predict(views, "zero-shot", 4, True, "ann", *filter_panel(), api_name=api)[1]


def _handled(live, api: str, name: str) -> str:
    """The status line of the app's own handler for ``api`` on the upload ``name``, called in this process
    (what the server spends on the request, without the upload's transport and the client's own work)."""
    import warnings

    from patent_demo.ui.examiner import ExaminerHandlers
    from patent_demo.ui.handlers import Handlers

    _, wb, store, files = live
    h = Handlers(wb, store)
    path = str(files / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the handlers' toasts outside a page
        if api == "/search_drawing":
            return h.search_drawing(path, "zero-shot", 4, True, True, "", "ann")[1]
        if api == "/search_sheet":
            return ExaminerHandlers(wb, store, ready=h._ready).search_sheet(path, None, "zero-shot", 4)[1]
        return h.search_application([path, str(files / "png-named.jpg")], "zero-shot", 4, True)[1]


@pytest.mark.parametrize("api", ["/search_drawing", "/search_sheet", "/search_application"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_drawing_is_refused_before_decoding_on_every_upload_path(live, client, api, name):
    out = _search(live, client, api, name)
    assert out.startswith("⚠️ ") and HOSTILE[name] in out, out
    out, cost = measured(lambda: _handled(live, api, name))
    assert out.startswith("⚠️ ") and HOSTILE[name] in out, out
    assert cost["cpu_s"] <= CPU_S and cost["peak_mb"] <= PEAK_MB, cost


@pytest.mark.parametrize("api", ["/search_drawing", "/search_sheet", "/search_application"])
def test_an_ordinary_progressive_jpeg_and_a_png_named_jpg_are_searched(live, client, api):
    for name in ("progressive-2000.jpg", "png-named.jpg"):
        assert not _search(live, client, api, name).startswith("⚠️"), name


# -- 3. only the corpus's drawings are served ---------------------------------------------------------------------
def _spellings(root: Path, rel: str, drawing: Path) -> list[str]:
    """Ways to name ``root / rel`` in ``/gradio_api/file=``: absolute, %2F-encoded, a ../ walk from a corpus
    drawing's folder (also as %2E%2E), dot segments, a trailing dot."""
    target = str(root / rel)
    walk = str(drawing.parent) + "/../" * len(drawing.parent.relative_to(root).parts) + rel
    return [
        target,
        target.replace("/", "%2F"),
        walk,
        walk.replace("..", "%2E%2E"),
        str(root) + "/./" + rel.replace("/", "/./"),
        target + ".",
    ]


def test_files_beside_the_corpus_drawings_are_not_served_however_named(live):
    url, wb, _, _ = live
    root = Path(wb.corpus.root).resolve()
    drawing = wb.corpus.image_path(wb.corpus["D0002"].figures[0]).resolve()
    for rel in NOT_CORPUS:
        for spelling in _spellings(root, rel, drawing):
            answer = httpx.get(f"{url}gradio_api/file={spelling}", timeout=30)
            assert answer.status_code in (403, 404), (spelling, answer.status_code)
    for shown in (drawing, Path(wb.display_path(wb.corpus["D0002"].figures[0])).resolve()):
        answer = httpx.get(f"{url}gradio_api/file={shown}", timeout=30)
        assert answer.status_code == 200 and answer.content == shown.read_bytes()
    walk = _spellings(root, str(drawing.relative_to(root)), drawing)[2]  # a walk to a drawing is the drawing
    assert httpx.get(f"{url}gradio_api/file={walk}", timeout=30).status_code == 200


# -- 4. the label store watched -------------------------------------------------------------------------------------
def _label(store: LabelStore, n: int):
    from patent_demo.labels.label import Label

    return store.add(
        Label(
            annotator="ann",
            query_id=f"txt-{n:016x}",
            query_kind="text",
            candidate_id="D0001",
            list_name="bm25",
            rank=1,
            score=1.0,
            label="relevant",
        )
    )


def _count(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0]


@pytest.mark.parametrize("change", ["deleted", "replaced", "read-only"])
def test_a_store_whose_file_changes_refuses_the_next_label_and_loses_none(tmp_path, change, caplog):
    db = tmp_path / "labels.sqlite"
    store = LabelStore(db)
    for n in range(3):
        _label(store, n)
    if change == "deleted":
        db.unlink()
    elif change == "replaced":
        other = tmp_path / "other.sqlite"
        LabelStore(other).close()
        os.replace(other, db)
    else:
        db.chmod(stat.S_IRUSR)
    with caplog.at_level("ERROR", logger="patent_demo.labels"), pytest.raises(StoreUnwritable) as err:
        _label(store, 9)
    why = {
        "deleted": "the label database was deleted or moved while the server ran",
        "replaced": "the label database was replaced by another file while the server ran",
        "read-only": "the label database is read-only",
    }[change]
    assert str(err.value).startswith(f"not stored: {why} (labels.sqlite); nothing was saved"), err.value
    assert why in caplog.text  # the server's log says it
    if change == "read-only":
        assert _count(db) == 3
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)
        _label(store, 10)  # writable again: stored
        assert _count(db) == 4
    else:  # every acknowledged label is in the copy made from the open database
        (kept,) = tmp_path.glob("labels.sqlite.recovered-*")
        assert f"kept in {kept.name}" in str(err.value) and _count(kept) == 3
    store.close()


def test_a_label_on_a_deleted_store_is_refused_through_the_app(tmp_path):
    wb, _ = make_workbench(tmp_path)
    store = LabelStore(tmp_path / "labels" / "labels.sqlite")
    from gradio_client import Client

    with live_app(wb, store, store=store) as url:
        client = Client(url, verbose=False)
        client.predict(*text_request()[1], api_name="/search_text")
        assert client.predict(*label_request()[1], api_name="/label")[0].startswith("✓")
        store.path.unlink()
        msg = client.predict(*label_request(rank=2)[1], api_name="/label")[0]
    assert msg.startswith("⚠️ not stored: the label database was deleted or moved while the server ran"), msg
    (kept,) = store.path.parent.glob("labels.sqlite.recovered-*")
    assert _count(kept) == 1
    store.close()
    shutil.rmtree(store.path.parent)
