"""The Agreement tab through gradio_client (and one Playwright screenshot): the agreement report, the
disagreement queue, adjudication, and the export after it.

Three annotators judge five (query, candidate) units of a text query and a drawing query (tiny corpus):

====  =====================  =========  ========  ========  ========
unit  query                  candidate  alice     bob       carol
====  =====================  =========  ========  ========  ========
u1    text                   D0008      relevant  relevant  relevant
u2    text                   D0009      relevant  not
u3    text                   D0004      not       not (relabelled from relevant)
u4    drawing of D0002       D0002      partly    relevant  relevant
u5    drawing of D0002       D0003      partly
====  =====================  =========  ========  ========  ========

Worked by hand (grades relevant 2, partly 1, not 0):

* alice-bob, 4 shared units: p_o = 2/4, p_e = (2*2 + 1*2 + 1*0) / 16 = 6/16, kappa = (1/2 - 3/8) / (5/8) = 0.2;
  linear: sum w O = (2 + 1) / 4 = 0.75, sum w E = 1.0, kappa = 0.25.
* alice-carol, units u1 u4: p_o = 1/2, p_e = 1/2, kappa = 0 (linear as well: 0.5 / 0.5).
* bob-carol, units u1 u4: both "relevant" both times: kappa undefined (no variation).
* Krippendorff: coincidences o_00 = 2, o_02 = o_20 = 1, o_12 = o_21 = 1, o_22 = 3 + 1 = 4; n = (3, 1, 6), n = 10.
  Nominal: 1 - 9 * 4 / (100 - 46) = 1/3. Ordinal: d_01 = (4 - 2)^2 = 4, d_12 = (7 - 3.5)^2 = 12.25,
  d_02 = (10 - 4.5)^2 = 30.25; observed 2 * 30.25 + 2 * 12.25 = 85, expected 2 * (3*4 + 18*30.25 + 6*12.25)
  = 1260; alpha = 1 - 9 * 85 / 1260 = 0.392857.

Tests: patent_demo/ui/labelling.py, patent_demo/labels/agreement.py
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from patent_demo.labels.store import Label, LabelStore, image_query_id, text_query_id
from patent_demo.wording import counted
from tests.conftest import live_app
from tests.support.tiny import make_workbench

pytestmark = pytest.mark.slow

TEXT = "lamp with a shade and bulb"
Q_TEXT = text_query_id(TEXT)
SCREENSHOT = Path(__file__).resolve().parent.parent / "test-artifacts" / "agreement-1366.png"


@pytest.fixture(scope="module")
def workbench(tmp_path_factory):
    wb, _ = make_workbench(tmp_path_factory.mktemp("agreement"))
    wb.warm_up()
    return wb


@pytest.fixture
def served(workbench, tmp_path):
    """(url, label store, drawing query id, stored drawing file): a fresh store with the units above."""
    store = LabelStore(tmp_path / "labels.sqlite")
    drawing = workbench.corpus.image_path(workbench.corpus["D0002"].figures[0])
    sha, rel = store.save_query_image(drawing.read_bytes(), ".png")
    q_img = image_query_id(sha)

    def text(annotator, cand, label, rank):
        store.add(
            Label(
                annotator,
                Q_TEXT,
                "text",
                cand,
                "bm25",
                rank,
                5.0 - rank,
                label,
                query_text=TEXT,
                query_codes={"locarno": ["26-05"]},
                checkpoint_id="bm25",
            )
        )

    def image(annotator, cand, label, rank, note=""):
        store.add(
            Label(
                annotator,
                q_img,
                "image",
                cand,
                "hmcl",
                rank,
                1.0 - rank / 10,
                label,
                query_image_sha=sha,
                query_image_file=rel,
                query_patent_id="D0002",
                candidate_figure=f"img/{cand}_0.png",
                checkpoint_id="zero-shot",
                note=note,
            )
        )

    for who in ("alice", "bob", "carol"):
        text(who, "D0008", "relevant", 1)
    text("alice", "D0009", "relevant", 2)
    text("bob", "D0009", "not", 2)
    text("alice", "D0004", "not", 3)
    text("bob", "D0004", "relevant", 3)
    text("bob", "D0004", "not", 3)  # bob's relabel: only his latest label counts
    image("alice", "D0002", "partly", 1, note="other seat")
    image("bob", "D0002", "relevant", 1)
    image("carol", "D0002", "relevant", 1)
    image("alice", "D0003", "partly", 2)
    with live_app(workbench, store) as url:
        yield url, store, q_img, rel
    store.close()


@pytest.fixture
def client(served):
    from gradio_client import Client

    return Client(served[0], verbose=False)


def _report(open_: int, adjudicated: int) -> str:
    return (
        "## Annotator agreement\n\n"
        f"3 annotators; 4 of 5 judged items have two or more judgements; {counted(open_, 'open disagreement')}; "
        f"{counted(adjudicated, 'adjudicated item')} (left out of agreement).\n\n"
        "Krippendorff's alpha: nominal 0.333, ordinal 0.393.\n\n"
        "| annotator A | annotator B | shared items | agreement | kappa | linear kappa | note |\n"
        "|---|---|---:|---:|---:|---:|---|\n"
        "| alice | bob | 4 | 0.500 | 0.200 | 0.250 |  |\n"
        "| alice | carol | 2 | 0.500 | 0.000 | 0.000 |  |\n"
        "| bob | carol | 2 | 1.000 | – | – | no variation: every shared item got the label 'relevant' from both |"
    )  # the Markdown component drops the final newline


def _qrels(client) -> dict[tuple[str, str], int]:
    files, _ = client.predict(api_name="/export_labels")
    qrels = next(f for f in files if f.endswith("qrels.txt"))
    return {(q, c): int(g) for q, _, c, g in (line.split() for line in Path(qrels).read_text().splitlines())}


def test_agreement_report_and_queue(client, served):
    _, _, q_img, rel = served
    report, queue = client.predict(api_name="/agreement")
    assert report == _report(open_=2, adjudicated=0)
    assert queue["headers"] == ["query id", "query", "candidate", "title", "alice", "bob", "carol"]
    assert queue["data"] == [
        [q_img, "a drawing of D0002", "D0002", "Table", "partly", "relevant", "relevant"],
        [Q_TEXT, f"“{TEXT}”", "D0009", "Lamp", "relevant", "not", "–"],
    ]


def test_adjudication_leaves_the_queue_and_wins_in_the_export(client, served):
    _, store, q_img, _ = served
    before = _qrels(client)
    assert (Q_TEXT, "D0009") not in before  # a 1-1 tie: undecided, exported nowhere...
    files, md = client.predict(api_name="/export_labels")
    disputed = [
        json.loads(x)
        for x in Path(next(f for f in files if f.endswith("disputed.jsonl"))).read_text().splitlines()
    ]
    assert disputed == [
        {
            "query_id": Q_TEXT,
            "candidate_id": "D0009",
            "modality": "text",
            "votes": {"alice": "relevant", "bob": "not"},
        }
    ]
    assert "1 disputed pairs" in md  # ...but listed as disputed
    assert before[(q_img, "D0002")] == 2  # the majority

    out = client.predict(Q_TEXT, "D0009", "relevant", " the shade matches ", "dana", api_name="/adjudicate")
    status, report, queue, qid, cid, note, pair = out
    n = store.count()
    assert status == (
        f"✓ adjudicated D0009 for {Q_TEXT} as **relevant** · was alice: relevant, bob: not · label #{n}"
    )
    assert report == _report(open_=1, adjudicated=1)
    assert [row[:3] for row in queue["data"]] == [[q_img, "a drawing of D0002", "D0002"]]
    assert (qid, cid, note, pair) == ("", "", "", "Select a row of the queue.")

    row = (
        sqlite3.connect(store.path)
        .execute(
            "SELECT annotator, query_kind, query_text, query_codes, candidate_id, list_name, rank, checkpoint_id, "
            "label, note, adjudicated FROM labels ORDER BY id DESC LIMIT 1"
        )
        .fetchone()
    )
    assert row == (
        "dana",
        "text",
        TEXT,
        '{"locarno": ["26-05"]}',
        "D0009",
        "bm25",
        2,
        "bm25",
        "relevant",
        "the shade matches",
        1,
    )

    after = _qrels(client)
    assert after == {**before, (Q_TEXT, "D0009"): 2}  # adjudicated: decided

    # Adjudicating against the majority also wins; a second adjudication replaces the first.
    client.predict(q_img, "D0002", "not", "", "dana", api_name="/adjudicate")
    status, report, queue, *_ = client.predict(Q_TEXT, "D0009", "partly", "", "erin", api_name="/adjudicate")
    assert status.startswith(
        f"✓ adjudicated D0009 for {Q_TEXT} as **partly** (replaces the earlier adjudication)"
    )
    assert report == _report(open_=0, adjudicated=2)
    assert queue["data"] == []
    assert _qrels(client) == {**before, (Q_TEXT, "D0009"): 1, (q_img, "D0002"): 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((Q_TEXT, "D0009", "relevant", "", "  "), "enter your name first: an adjudication is stored under"),
        (("", "", "relevant", "", "dana"), "select a disagreement in the queue first"),
        (
            (Q_TEXT, "D0001", "relevant", "", "dana"),
            f"nobody labelled candidate 'D0001' for query '{Q_TEXT}'",
        ),
        (("txt-0000000000000000", "D0009", "not", "", "dana"), "nobody labelled candidate 'D0009' for query"),
    ],
)
def test_bad_adjudication_is_reported(client, served, args, message):
    _, store, _, _ = served
    n = store.count()
    status, *rest = client.predict(*args, api_name="/adjudicate")
    assert status.startswith("⚠️ ") and message in status
    assert store.count() == n
    assert len(client.predict(api_name="/agreement")[1]["data"]) == 2


def test_unknown_label_is_refused_with_a_message(client, served):
    """A value outside the radio's choices reaches the handler (patent_demo.ui.access.lenient), which names it."""
    n = served[1].count()
    msg = client.predict(Q_TEXT, "D0009", "maybe", "", "dana", api_name="/adjudicate")[0]
    assert (
        msg == r"⚠️ label 'maybe' is not one of \['not', 'partly', 'relevant'\]"
    )  # brackets escaped for Markdown
    assert served[1].count() == n


@pytest.mark.browser
def test_agreement_tab_screenshot(served):
    from tests.support.browser import ARGS, CHROMIUM

    if not CHROMIUM.exists():
        pytest.skip("browser tests need Debian's chromium at /usr/bin/chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    url, store, q_img, _ = served
    SCREENSHOT.parent.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url)
        page.locator("#annotator textarea, #annotator input").first.fill("dana")
        page.get_by_role("tab", name="Agreement").click()
        page.locator("#g-report").get_by_text("nominal 0.333, ordinal 0.393").wait_for(timeout=20_000)
        page.locator("#g-queue").get_by_text("Lamp", exact=True).click()
        page.locator("#g-pair").get_by_text("Candidate").wait_for(timeout=10_000)
        assert page.locator("#g-qid textarea, #g-qid input").first.input_value() == Q_TEXT
        assert page.locator("#g-cid textarea, #g-cid input").first.input_value() == "D0009"
        page.locator("#g-label").get_by_label("not relevant").check()
        page.locator("#g-note textarea, #g-note input").first.fill("shade differs")
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        page.locator("#g-adjudicate").click()
        page.locator("#g-status").get_by_text("✓ adjudicated D0009").wait_for(timeout=10_000)
        page.locator("#g-report").get_by_text("1 open disagreement;").wait_for(timeout=10_000)
        browser.close()
    last = store.labels()[-1]
    assert (last.annotator, last.candidate_id, last.label, last.note, last.adjudicated) == (
        "dana",
        "D0009",
        "not",
        "shade differs",
        True,
    )
