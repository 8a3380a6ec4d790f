"""The search report of a labelled query: decided labels, categories, notes, matched figure or
passage; CSV with formula cells neutralised; printable HTML with every value escaped; the command."""

from __future__ import annotations

import csv
import io

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.labels.search_report import build_report, main, queries, to_csv, to_html
from patent_demo.labels.store import Label, LabelStore, text_query_id
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.highlight import snippet_text

QUERY = "a pump with a check valve and a seal"


def corpus(tmp_path) -> Corpus:
    rows = [
        Patent(
            "US1",
            kind="utility",
            title="Check valve pump",
            text="A pump whose check valve opens.",
            date="2001-02-03",
            codes={"ipc": ["F04B 53/10"]},
        ),
        Patent(
            "US2",
            kind="utility",
            title="Seal",
            text="A lip seal for a rotating shaft.",
            date="2002-02-03",
            codes={"ipc": ["F16J 15/32"]},
        ),
        Patent("US3", kind="utility", title="<b>Filter</b>", text="Membrane filter.", date="2003-02-03"),
        Patent("US4", kind="utility", title="Bearing", text="A ball bearing.", date="2004-02-03"),
    ]
    c = Corpus(tmp_path / "corpus", rows, name="tiny")
    c.save()
    return c


def label(ann, cand, lab, rank, category="", note="", kind="text", figure=""):
    return Label(
        ann,
        text_query_id(QUERY),
        kind,
        cand,
        "bm25",
        rank,
        1.0 / rank,
        lab,
        query_text=QUERY,
        category=category,
        note=note,
        candidate_figure=figure,
    )


@pytest.fixture
def store(tmp_path):
    s = LabelStore(tmp_path / "labels.sqlite")
    s.add(label("ann", "US2", "partly", 2, "Y", "seal only"))
    s.add(label("ann", "US1", "relevant", 1, "X", '=HYPERLINK("http://x")'))
    s.add(label("bob", "US1", "relevant", 1, "", "<script>alert(1)</script>"))
    s.add(label("ann", "US3", "relevant", 3, "A"))
    s.add(label("bob", "US3", "not", 3))  # tied: disputed
    s.add(label("ann", "US4", "not", 4))
    yield s
    s.close()


def test_rows_order_categories_notes_and_passages(store, tmp_path):
    c = corpus(tmp_path)
    bm25 = BM25Index.build(c.patents)
    passage = lambda q, d: snippet_text(bm25, c[d].text, q)  # noqa: E731
    rep = build_report(store, text_query_id(QUERY), c, passage)
    assert [(r.category, r.document, r.decision) for r in rep.rows] == [
        ("X", "US1", "relevant"),
        ("Y", "US2", "partly"),
        ("A", "US3", "disputed"),
    ]
    us1 = rep.rows[0]
    assert us1.annotators == "ann: relevant; bob: relevant"
    assert us1.notes == 'ann: =HYPERLINK("http://x"); bob: <script>alert(1)</script>'
    assert us1.matched == "A [pump] whose [check] [valve] opens."
    assert us1.published == "2001-02-03" and us1.codes == "F04B 53/10"
    assert [r.document for r in build_report(store, text_query_id(QUERY), c, include_not=True).rows][
        -1
    ] == "US4"

    rows = list(csv.reader(io.StringIO(to_csv(rep))))
    assert rows[0][:3] == ["category", "document", "title"]
    assert rows[1][1] == "US1" and rows[1][-1].startswith("ann: =HYPERLINK")
    page = to_html(rep)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;Filter&lt;/b&gt;" in page and "@media print" in page
    rep.rows[0].notes = "=cmd|' /C calc'!A0"
    assert list(csv.reader(io.StringIO(to_csv(rep))))[1][-1] == "'=cmd|' /C calc'!A0"


def test_unknown_query_and_listing(store):
    with pytest.raises(ValueError, match="no labels for query 'txt-nope'"):
        build_report(store, "txt-nope")
    assert queries(store) == [(text_query_id(QUERY), "text", QUERY, 6)]


def test_command_writes_both_files(store, tmp_path, capsys):
    c = corpus(tmp_path)
    out = tmp_path / "out"
    assert (
        main(
            [
                "--labels",
                str(store.path),
                "--query",
                text_query_id(QUERY),
                "--corpus",
                str(c.root),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    stem = f"search_report_{text_query_id(QUERY)}"
    assert (out / f"{stem}.csv").read_text().count("\n") == 4  # header + 3 rows
    assert "Search report" in (out / f"{stem}.html").read_text()
    assert "3 documents" in capsys.readouterr().out
    assert main(["--labels", str(tmp_path / "none.sqlite")]) == 2
