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
    assert rows[0][:4] == ["category", "date_category", "document", "title"]
    assert rows[1][2] == "US1" and rows[1][-1].startswith("ann: =HYPERLINK")
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


def test_date_categories_e_and_p_beside_x_y_a(tmp_path):
    """The query patent Q claims priority 2010-01-01 and was filed 2011-01-01: US1 (filed 2009, published
    2012) is an earlier application, E; US2 (filed 2010-02-01, published 2010-06-01: between priority and filing) is an
    intermediate document, P; US3 (published 2005) is neither. The page shows "E,X" as a search report does,
    the CSV a column of its own, the legend says what E and P mean."""
    rows = [
        Patent(
            "Q",
            "utility",
            "Pump",
            QUERY,
            date="2012-05-01",
            filing_date="2011-01-01",
            priority_date="2010-01-01",
        ),
        Patent(
            "US1", "utility", "Check valve", "A check valve.", date="2012-01-01", filing_date="2009-03-01"
        ),
        Patent("US2", "utility", "Seal", "A seal.", date="2010-06-01", filing_date="2010-02-01"),
        Patent("US3", "utility", "Bearing", "A bearing.", date="2005-01-01", filing_date="2004-01-01"),
    ]
    c = Corpus(tmp_path / "corpus", rows, name="dated")
    s = LabelStore(tmp_path / "labels.sqlite")
    qid = text_query_id(QUERY)
    for cand, cat, rank in (("US1", "X", 1), ("US2", "A", 2), ("US3", "Y", 3)):
        s.add(
            Label(
                "ann",
                qid,
                "text",
                cand,
                "bm25",
                rank,
                1.0,
                "relevant",
                query_text=QUERY,
                query_patent_id="Q",
                category=cat,
            )
        )
    rep = build_report(s, qid, c)
    s.close()
    assert [(r.document, r.date_category, r.category) for r in rep.rows] == [
        ("US1", "E", "X"),
        ("US3", "", "Y"),
        ("US2", "P", "A"),
    ]
    table = list(csv.reader(io.StringIO(to_csv(rep))))
    assert table[0][:3] == ["category", "date_category", "document"]
    assert [r[:3] for r in table[1:]] == [["X", "E", "US1"], ["Y", "", "US3"], ["A", "P", "US2"]]
    page = to_html(rep)
    assert '<td class="cat">E,X</td>' in page and '<td class="cat">P,A</td>' in page
    assert '<td class="cat">Y</td>' in page
    assert "<b>E</b> earlier patent document" in page and "<b>P</b> intermediate document" in page
    # without the query patent in the corpus: E from a typed cut-off, no P (no priority and filing dates)
    assert build_report_without_query_patent(tmp_path, c) == [("US1", "E"), ("US3", ""), ("US2", "")]


def build_report_without_query_patent(tmp_path, c: Corpus) -> list[tuple[str, str]]:
    s = LabelStore(tmp_path / "labels2.sqlite")
    qid = text_query_id(QUERY)
    for cand, cat, rank in (("US1", "X", 1), ("US2", "A", 2), ("US3", "Y", 3)):
        s.add(Label("ann", qid, "text", cand, "bm25", rank, 1.0, "relevant", query_text=QUERY, category=cat))
    rep = build_report(s, qid, c, cutoff="2010-01-01")
    s.close()
    return [(r.document, r.date_category) for r in rep.rows]
