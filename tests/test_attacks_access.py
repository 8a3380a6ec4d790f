"""The access-control campaign on loopback, one test per case: a server with logins (alice, bob, the admin
``admin`` and a shared secret), and an open server for the upload cases. Each test says what the server
answers now; ``docs/security.md`` ("Logins, sessions, names, temp files") has the table of before and now.

Both servers keep Gradio's temporary folder in this module's own temporary folder (``GRADIO_TEMP_DIR``),
so the sweeps here touch nobody else's files.

Tests: patent_demo/ui/access.py, patent_demo/ui/guard.py, patent_demo/ui/blocks.py, patent_demo/ui/serve.py
"""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest

from patent_demo.labels.store import LabelStore
from tests.conftest import free_port, live_app
from tests.support.live import ABSTRACT, label_request, shared_hash_predict, text_request
from tests.support.tiny import make_workbench

pytestmark = pytest.mark.slow

USERS = "alice:apw,bob:bpw,admin:xpw,*:team-secret"
LINK_NAME = '=hyperlink("https://evil.example/x","open")'  # as stored: login names are casefolded
LINK_NOTE = "see https://evil.example/a, www.evil.example and x@evil.example"


@pytest.fixture(scope="module")
def temp_dir(tmp_path_factory):
    """Gradio's temporary folder for this module's servers."""
    folder = tmp_path_factory.mktemp("gradio-temp")
    before = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("GRADIO_TEMP_DIR", None)
    else:
        os.environ["GRADIO_TEMP_DIR"] = before


@pytest.fixture(scope="module")
def workbench(tmp_path_factory):
    wb, _ = make_workbench(tmp_path_factory.mktemp("attacks"))
    wb.warm_up()
    return wb


@pytest.fixture(scope="module")
def guarded(temp_dir, workbench, tmp_path_factory):
    """(url, store, identity) of the app behind logins: alice, bob, admin (the admin) and a shared secret."""
    import app
    from patent_demo.ui.access import Identity

    store = LabelStore(tmp_path_factory.mktemp("attacks-labels") / "labels.sqlite")
    identity = Identity.from_flags(USERS, "admin")
    demo = app.build_demo(workbench, store, identity=identity)
    port = free_port()
    demo.queue().launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **app.launch_kwargs(workbench, identity),
    )
    yield f"http://127.0.0.1:{port}/", store, identity
    demo.close()
    store.close()


@pytest.fixture
def logins(guarded):
    """The login attempts are forgotten before and after each test (the limits are per process)."""
    guarded[2].limits.forget()
    yield guarded
    guarded[2].limits.forget()


@pytest.fixture(scope="module")
def open_server(temp_dir, workbench, tmp_path_factory):
    """(url, sweeper) of the app without logins; its sweeper keeps the temporary folder within 4 MB."""
    from patent_demo.ui.guard import TempSweeper

    store = LabelStore(tmp_path_factory.mktemp("attacks-open") / "labels.sqlite")
    sweeper = TempSweeper(max_bytes=4 * 2**20, min_age_s=0, every_s=0)
    with live_app(workbench, store, sweeper=sweeper) as url:
        yield url, sweeper
    store.close()


def _client(url, name, password, **kw):
    from gradio_client import Client

    return Client(url, auth=(name, password), verbose=False, **kw)


def _login(url, name, password) -> httpx.Response:
    return httpx.post(url + "login", data={"username": name, "password": password}, timeout=30)


def _cookies(url, name, password) -> httpx.Cookies:
    answer = _login(url, name, password)
    assert answer.status_code == 200, answer.text
    return answer.cookies


def _size(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- 1. a session is read through its browser's token or its login, never its hash alone ---------------------
def test_another_login_with_alices_session_hash_reads_nothing(logins):
    """Bob's client sends Alice's session hash to /explain and /next_hit: refused (403) before the session
    is read; Alice reads her own explanation."""
    url, _, _ = logins
    alice = _client(url, "alice", "apw")
    alice.predict(*text_request()[1], api_name="/search_text")
    own = alice.predict(1, api_name="/explain")[1]
    assert ABSTRACT in own
    bob = _client(url, "bob", "bpw")
    bob.session_hash = alice.session_hash
    for args, api in (((1,), "/explain"), (("dssdnet", 1, False, ""), "/next_hit")):
        with pytest.raises(Exception, match="403"):  # noqa: B017 - refused at the queue
            bob.predict(*args, api_name=api)
    answer = httpx.post(
        url + "gradio_api/queue/join",
        cookies=_cookies(url, "bob", "bpw"),
        timeout=30,
        json={"data": [1, None], "fn_index": 0, "session_hash": alice.session_hash},
    )
    assert answer.status_code == 403 and answer.json()["detail"] == "⚠️ this session belongs to another login"


@pytest.mark.browser
def test_a_browser_session_is_read_with_its_token_only(browser, logins):
    """Alice's page holds her token; a client of her own login that sends the page's session hash without
    the token gets the ⚠️ refusal from /explain and /next_hit, not her query or hits."""
    url, _, _ = logins
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    hashes: set[str] = set()
    page.on(
        "request",
        lambda r: (
            hashes.add(json.loads(r.post_data or "{}").get("session_hash", ""))
            if "queue/join" in r.url and r.post_data
            else None
        ),
    )
    assert page.request.post(url + "login", form={"username": "alice", "password": "apw"}).ok
    page.goto(url)
    page.get_by_role("tab", name="Text search").click()
    page.locator("#t-text textarea").fill(ABSTRACT)
    page.locator("#t-search").click()
    page.locator("#t-status").get_by_text("re-ranked").wait_for(timeout=60_000)
    (session_hash,) = hashes - {""}
    page.goto("about:blank")  # the page's event stream closes; its session stays on the server
    other = _client(url, "alice", "apw")
    other.session_hash = session_hash
    _, md = shared_hash_predict(other, 1, api_name="/explain")
    assert md == "⚠️ this browser session is not yours: its searches and hits are for that browser only"
    _, md = shared_hash_predict(other, "dssdnet", 2, False, "", api_name="/next_hit")
    assert md.startswith("⚠️ this browser session is not yours") and ABSTRACT not in md
    context.close()


def test_every_event_that_reads_the_session_checks_its_owner(workbench, tmp_path):
    """The page refuses to build an event that reads the session without the owner check; every one
    takes the browser's token."""
    from patent_demo.ui.blocks import build_demo

    demo = build_demo(workbench, LabelStore(tmp_path / "labels.sqlite"))
    session = next(b for b in demo.blocks.values() if type(b).__name__ == "State" and b.delete_callback)
    reading = [fn for fn in demo.fns.values() if session in fn.inputs]
    assert len(reading) > 30
    assert all(any(type(b).__name__ == "BrowserState" for b in fn.inputs) for fn in reading)


# -- 2. cancel needs the login that owns the session ------------------------------------------------------------
def test_cancel_needs_the_login_that_owns_the_session(logins):
    url, _, _ = logins
    alice = _client(url, "alice", "apw")
    alice.predict(*text_request()[1], api_name="/search_text")  # alice's session hash is in use
    body = {"session_hash": alice.session_hash, "fn_index": 0, "event_id": "0" * 32}
    answer = httpx.post(url + "gradio_api/cancel", json=body, timeout=30)
    assert answer.status_code == 401 and answer.json()["detail"] == "⚠️ log in first"
    answer = httpx.post(url + "gradio_api/cancel", json=body, cookies=_cookies(url, "bob", "bpw"), timeout=30)
    assert answer.status_code == 403 and answer.json()["detail"] == "⚠️ this session belongs to another login"
    answer = httpx.post(
        url + "gradio_api/cancel", json=body, cookies=_cookies(url, "alice", "apw"), timeout=30
    )
    assert answer.status_code == 200


def test_a_job_is_cancelled_and_read_by_its_own_session_and_login_only(logins):
    """Bob, given the event id of Alice's job (it travels in URLs and logs), cancels it with his own session
    hash or with hers: refused (Gradio's route would remove any event id from the queue); he cannot read
    its result stream either. Alice's own cancel is answered."""
    url, _, _ = logins
    alice, bob = _cookies(url, "alice", "apw"), _cookies(url, "bob", "bpw")
    client = _client(url, "alice", "apw")
    fn_index = client._infer_fn_index("/evaluate", None)
    joined = httpx.post(
        url + "gradio_api/queue/join",
        cookies=alice,
        timeout=30,
        json={"data": ["zero-shot", "all", ""], "fn_index": fn_index, "session_hash": client.session_hash},
    )
    called = httpx.post(
        url + "gradio_api/call/evaluate", cookies=alice, json={"data": ["zero-shot", "all", ""]}
    )
    for event_id, own_hash in (
        (joined.json()["event_id"], client.session_hash),
        (called.json()["event_id"], ""),
    ):
        own_hash = own_hash or event_id  # a job called without a session hash has its event id as one
        for session_hash in ("b" * 11, own_hash):
            body = {"session_hash": session_hash, "fn_index": fn_index, "event_id": event_id}
            answer = httpx.post(url + "gradio_api/cancel", json=body, cookies=bob, timeout=30)
            assert answer.status_code == 403 and answer.json()["detail"] in (
                "⚠️ this job belongs to another session: not cancelled",
                "⚠️ this session belongs to another login",
            ), answer.text
    stream = f"{url}gradio_api/call/evaluate/{called.json()['event_id']}"
    answer = httpx.get(stream, cookies=bob, timeout=30)
    assert answer.status_code == 403 and answer.json()["detail"] == "⚠️ this job belongs to another login"
    assert "event: complete" in httpx.get(stream, cookies=alice, timeout=120).text
    body = {"session_hash": client.session_hash, "fn_index": fn_index, "event_id": joined.json()["event_id"]}
    assert httpx.post(url + "gradio_api/cancel", json=body, cookies=alice, timeout=30).status_code == 200


# -- 3. password attempts are limited, with back-off -----------------------------------------------------------
def test_wrong_passwords_lock_the_name_then_the_address(logins):
    url, _, identity = logins
    assert [_login(url, "bob", f"guess-{i}").status_code for i in range(5)] == [400] * 5
    locked = _login(url, "bob", "bpw")  # the right password, while bob waits: refused unchecked
    assert locked.status_code == 429 and locked.json()["detail"].startswith(
        "⚠️ too many failed logins; try again in"
    )
    assert _login(url, "BOB", "bpw").status_code == 429  # the same name, normalised
    assert _login(url, "alice", "apw").status_code == 200  # another name from this address still may
    identity.limits.forget()
    per_address = identity.limits.per_address
    assert {_login(url, f"user{i}", "nope").status_code for i in range(per_address)} == {400}
    assert _login(url, "alice", "apw").status_code == 429  # this address waits now, whatever the name


# -- 4. look-alike names, and names and notes as plain text ----------------------------------------------------
@pytest.mark.parametrize(
    "name", ["ADMIN", "аdmin", "admin\u200b", "ａｄｍｉｎ", "Alice", "аlice", "adm1n", "a.lice"]
)
def test_a_look_alike_name_never_logs_in_with_the_shared_secret(logins, name):
    url, _, _ = logins
    assert _login(url, name, "team-secret").status_code == 400


def test_a_users_own_spellings_are_one_login_and_names_are_normalised(logins):
    from patent_demo.labels.fields import LabelError
    from patent_demo.ui.access import login_name

    url, store, identity = logins
    assert _login(url, "dave", "team-secret").status_code == 200  # a name of nobody configured
    assert login_name("ａｄｍｉｎ\u200b") == "admin" and login_name("  Ｃarol ") == "carol"
    with pytest.raises(LabelError, match="mixes scripts"):
        login_name("аdmin")
    assert identity.confusable("adm1n") == "admin" and identity.confusable("dave") == ""
    for spelling, password in (("ADMIN", "xpw"), ("ａｌｉｃｅ", "apw")):
        cl = _client(url, spelling, password)
        cl.predict(*text_request("lamp shade bulb holder glass")[1], api_name="/search_text")
        assert cl.predict(*label_request(rank=3, note=spelling)[1], api_name="/label")[0].startswith("✓")
    assert [x.annotator for x in store.labels() if x.rank == 3 and x.note in ("ADMIN", "ａｌｉｃｅ")] == [
        "admin",
        "alice",
    ]


@pytest.mark.browser
def test_names_and_notes_render_as_plain_text_in_the_agreement_views(browser, logins):
    url, store, _ = logins
    query = "a desk lamp with a hinged arm"
    for who, password, grade, note in (
        ("alice", "apw", "relevant", LINK_NOTE),
        (LINK_NAME, "team-secret", "not", ""),
    ):
        cl = _client(url, who, password)
        cl.predict(*text_request(query)[1], api_name="/search_text")
        assert cl.predict(*label_request(label=grade, note=note)[1], api_name="/label")[0].startswith("✓")
    assert LINK_NAME in {x.annotator for x in store.labels()}
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    assert page.request.post(url + "login", form={"username": "admin", "password": "xpw"}).ok
    page.goto(url)
    page.get_by_role("tab", name="Agreement").click()
    page.locator("#g-report").get_by_text("annotator A", exact=True).wait_for(timeout=30_000)
    page.locator("#g-queue [data-testid=cell-0-1]").get_by_text(query[:20]).click()
    page.locator("#g-pair").get_by_text("Candidate").wait_for(timeout=20_000)
    for view in ("#g-report", "#g-queue", "#g-pair"):
        assert page.locator(f"{view} a").count() == 0, view
    assert LINK_NAME in page.locator("#g-report").inner_text()
    assert LINK_NAME in page.locator("#g-queue").inner_text()
    pair = page.locator("#g-pair").inner_text()
    assert LINK_NAME in pair and LINK_NOTE in pair
    context.close()


# -- 5. the login page, and downloads bound to their login ------------------------------------------------------
def test_the_login_page_carries_no_api_description(logins):
    url, _, _ = logins
    page = httpx.get(url, timeout=30).text
    assert "window.gradio_api_info = {};" in page
    assert not any(
        word in page for word in ("search_drawing", "/explain", "dssdnet-untrained", "owner_token")
    )
    assert httpx.get(url + "gradio_api/info", timeout=30).status_code == 401
    own = httpx.get(url, cookies=_cookies(url, "alice", "apw"), timeout=30).text
    assert "search_drawing" in own  # behind the login the page has it


def test_exports_and_reports_download_for_their_login_only(logins):
    url, store, _ = logins
    admin = _client(url, "admin", "xpw", download_files=False)
    files, md = admin.predict(api_name="/export_labels")
    assert "qrels" in md and files
    bob, admin_cookies = _cookies(url, "bob", "bpw"), _cookies(url, "admin", "xpw")
    for f in files:
        answer = httpx.get(url.rstrip("/") + f["url"].split(url.rstrip("/"), 1)[-1], cookies=bob, timeout=30)
        assert (
            answer.status_code == 403
            and answer.json()["detail"] == "⚠️ this download belongs to another login"
        )
        assert httpx.get(f["url"], cookies=admin_cookies, timeout=30).status_code == 200
    alice = _client(url, "alice", "apw", download_files=False)
    alice.predict(*text_request("a reading lamp")[1], api_name="/search_text")
    alice.predict(*label_request(note="for the report")[1], api_name="/label")
    qid = store.labels()[-1].query_id
    files, _, _ = alice.predict(qid, {}, True, api_name="/search_report")
    assert httpx.get(files[0]["url"], cookies=bob, timeout=30).status_code == 403
    assert httpx.get(files[0]["url"], cookies=_cookies(url, "alice", "apw"), timeout=30).status_code == 200


# -- 6. temp files: age and size limits; uploads on an open server ------------------------------------------------
def test_the_sweeper_keeps_the_temp_folder_within_age_and_size(tmp_path):
    from patent_demo.ui.guard import TempSweeper

    now = time.time()
    ages = {"old": 200, "a": 50, "b": 40, "c": 30, "d": 20, "young": 1}
    for name, age in ages.items():
        p = tmp_path / name / f"{name}.bin"
        p.parent.mkdir()
        p.write_bytes(b"x" * 1000)
        os.utime(p, (now - age, now - age))
    held = {str(tmp_path / "b" / "b.bin")}  # a file Gradio keeps for the page (an example drawing)
    removed, left = TempSweeper(tmp_path, max_age_s=100, max_bytes=3000, min_age_s=10).sweep(held)
    assert (removed, left) == (3, 3000)  # old by age, then a and c for size; b is held, young too new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "d", "young"]  # empty folders go too


def test_an_open_server_limits_upload_size_and_rate_and_sweeps_its_temp_folder(open_server, temp_dir):
    url, sweeper = open_server
    upload = url + "gradio_api/upload"
    big = httpx.post(upload, files={"files": ("big.png", os.urandom(11 * 2**20))}, timeout=60)
    assert big.status_code == 413  # 10 MB on an open server
    answers = [
        httpx.post(upload, files={"files": (f"u{i}.png", os.urandom(2**20))}, timeout=60) for i in range(30)
    ]
    codes = [a.status_code for a in answers]
    # 20 MB per 10 s from one address, the refused 11 MB included: 8 of 1 MB, then 429 (more when the
    # uploads take longer than the window)
    assert set(codes) == {200, 429} and codes[0] == 200 and codes.count(429) >= 5
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json()["detail"].startswith("⚠️ too many uploads from this address")
    deadline = time.monotonic() + 60  # the sweeps run in the background: wait until the last has run
    while _size(sweeper.folder) > sweeper.max_bytes + 2**20 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sweeper.folder == temp_dir
    assert (
        _size(temp_dir) <= sweeper.max_bytes + 2**20
    )  # at most the limit and the upload after the last sweep
