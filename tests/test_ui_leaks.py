"""Nothing a visitor sees names a server path, shows a stack trace or gives away a secret
(``patent_demo.ui``).

The app runs on a real corpus (the 20 Red Book design patents, built with ``patent-demo corpus build``)
behind ``--annotators`` with a shared secret and an admin. Chromium reads the text of every tab as it is
first rendered, and the page's ``/config``; gradio_client then calls every API endpoint with bad input
(every parameter empty, then every parameter junk of its kind). No answer may hold the corpus, cache,
label-store, checkpoint or temporary folders, any absolute path under ``/work``, ``/tmp``, ``/root`` or
``/home``, a ``Traceback``, a password or the key that signs the browser sessions' owners. A served
file's URL is fine (it is how the browser fetches the file); its data object is left out of the scan.

Tests: patent_demo/ui/blocks.py, patent_demo/ui/serve.py
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from patent_demo.cli.main import main as cli
from patent_demo.labels.store import LabelStore
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.conftest import REPO_ROOT, free_port, require_shared

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ADMIN, ADMIN_PASSWORD, SHARED_SECRET = "lead", "lead-password-7Qx", "team-secret-9Zk"
SYSTEM_ROOTS = ("/work", "/tmp", "/root", "/home")
SYSTEM_PATH = re.compile(r"(?<![\w.:/])(?:" + "|".join(SYSTEM_ROOTS) + r")/[^\s'\"<>)`]*")
JUNK_TEXT = "<b>junk</b> ../../../etc/passwd \x00 ' \" {"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(url, forbidden strings, tmp folder) of the app on the Red Book corpus, behind a login."""
    import app
    from patent_demo.ui.access import _OWNER_SECRET, Identity

    src = require_shared("impact_design_patent_samples")
    tmp = tmp_path_factory.mktemp("leaks")
    assert (
        cli(["corpus", "build", "--source", "redbook", "--out", str(tmp / "corpus"), str(src), "--quiet"])
        == 0
    )
    config = WorkbenchConfig(
        cache_dir=tmp / "cache", corpus=tmp / "corpus", checkpoint_dirs=(REPO_ROOT / "checkpoints",)
    )
    wb = Workbench(config, progress=False)
    wb.warm_up()
    store = LabelStore(tmp / "labels" / "labels.sqlite")
    identity = Identity.from_flags(f"{ADMIN}:{ADMIN_PASSWORD},*:{SHARED_SECRET}", ADMIN)
    demo = app.build_demo(wb, store, identity=identity)
    port = free_port()
    demo.queue().launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **app.launch_kwargs(wb, identity),
    )
    folders = {
        tmp,
        tmp / "corpus",
        tmp / "cache",
        store.path.parent,
        REPO_ROOT,
        REPO_ROOT / "checkpoints",
        src,
        Path(tempfile.gettempdir()),
        Path(wb.corpus.root),
        Path(wb.corpus.image_root),
    }
    forbidden = {str(p.resolve()) for p in folders} | {str(p) for p in folders}
    forbidden |= {"Traceback", ADMIN_PASSWORD, SHARED_SECRET, _OWNER_SECRET.hex()}
    yield f"http://127.0.0.1:{port}/", forbidden, tmp
    demo.close()
    store.close()


def leaks(text: str, forbidden: set[str]) -> list[str]:
    """What of ``forbidden`` (and any absolute path under the system roots) ``text`` holds."""
    found = sorted(f for f in forbidden if f and f in text)
    found += sorted({m.group(0) for m in SYSTEM_PATH.finditer(text)})
    return found


def without_files(value):
    """``value`` (a JSON answer) with every served file's data object left out: its ``path`` is Gradio's
    copy and its ``url`` the address the browser fetches it from."""
    if isinstance(value, dict):
        if "url" in value and ("path" in value or value.get("meta", {}).get("_type") == "gradio.FileData"):
            return "(a served file)"
        return {k: without_files(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_files(v) for v in value]
    return value


def test_the_leak_check_sees_paths_tracebacks_and_secrets():
    forbidden = {"/srv/x/labels.sqlite", SHARED_SECRET}
    assert leaks("labels in /srv/x/labels.sqlite", forbidden) == ["/srv/x/labels.sqlite"]
    assert leaks("⚠️ cannot read /tmp/gradio/abc/q.png", forbidden) == ["/tmp/gradio/abc/q.png"]
    assert leaks(f"password {SHARED_SECRET}", forbidden) == [SHARED_SECRET]
    assert leaks("Traceback (most recent call last)", {"Traceback"}) == ["Traceback"]
    assert leaks("q.png: not a readable image · https://x.org/work/a", forbidden) == []
    served = {"path": "/tmp/gradio/1/a.png", "url": "http://h/gradio_api/file=/tmp/gradio/1/a.png"}
    assert without_files({"value": [served], "label": "Results"}) == {
        "value": ["(a served file)"],
        "label": "Results",
    }


def _logged_in_page(browser, url):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    answer = page.request.post(url + "login", form={"username": ADMIN, "password": ADMIN_PASSWORD})
    assert answer.ok, answer.status
    page.goto(url)
    return context, page


def test_no_tab_and_no_config_names_a_server_path_or_a_secret(browser, site):
    url, forbidden, _ = site
    context, page = _logged_in_page(browser, url)
    try:
        page.locator("#header").wait_for(timeout=60_000)
        # the header can paint before the tab bar: wait for the bar's buttons, not only the page
        page.get_by_role("tab", name="Drawing search", exact=True).wait_for(timeout=60_000)
        tabs = page.get_by_role("tab")
        names = [tabs.nth(i).inner_text().strip() for i in range(tabs.count())]
        assert {"Drawing search", "Text search", "Document", "Search report", "Agreement", "Export"} <= set(
            names
        )
        seen = {}
        for name in names:
            page.get_by_role("tab", name=name, exact=True).click()
            page.wait_for_timeout(800)  # the tab's first render (and any load event it starts)
            text = page.locator("body").inner_text()
            seen[name] = leaks(text, forbidden)
        assert seen == {name: [] for name in names}
        assert "labels.sqlite" in page.locator("#header").inner_text()  # the store's name, not its path
        config = page.request.get(url + "config").json()
        assert leaks(json.dumps(without_files(config), ensure_ascii=False), forbidden) == []
    finally:
        context.close()


def _bad_values(parameter: dict, round_: str, bad_file: str):
    """One bad value for an API parameter: nothing in the first round, junk of its kind in the second."""
    from gradio_client import handle_file

    component = parameter.get("component", "")
    if round_ == "none":
        return None
    if component in ("File", "Image", "Gallery"):
        file = handle_file(bad_file)
        return [file] if parameter.get("python_type", {}).get("type", "").startswith("List") else file
    if component in ("Number", "Slider"):
        return -1e9
    if component == "Checkbox":
        return True
    if component == "Json":
        return ["not", "an", "object"]
    if component == "Dataframe":
        return {"headers": ["x"], "data": [[JUNK_TEXT]]}
    return JUNK_TEXT


def test_no_api_answer_to_bad_input_names_a_server_path_or_a_secret(site):
    from gradio_client import Client

    url, forbidden, tmp = site
    bad_file = tmp / "notes.png"  # text named as a drawing: every drawing endpoint refuses it
    bad_file.write_text("not a drawing at all\n", encoding="utf-8")
    client = Client(url, auth=(ADMIN, ADMIN_PASSWORD), verbose=False, download_files=False)
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {
        "/search_drawing",
        "/search_text",
        "/search_sheet",
        "/search_report",
        "/label",
        "/export_labels",
    } <= set(endpoints)
    answers = {}
    for name, info in sorted(endpoints.items()):
        for round_ in ("none", "junk"):
            args = [_bad_values(p, round_, str(bad_file)) for p in info["parameters"]]
            try:
                out = client.predict(*args, api_name=name)
            except Exception as err:  # noqa: BLE001 - a refused request: its message is what the visitor reads
                out = f"{type(err).__name__}: {err}"
            text = json.dumps(without_files(out), ensure_ascii=False, default=str)
            text = text.replace(str(bad_file), "")  # the client's own upload path (its side of the request)
            answers[f"{name} ({round_})"] = leaks(text, forbidden)
    assert {k: v for k, v in answers.items() if v} == {}
    assert len(answers) >= 2 * 30
