"""The whole-record view: codes with titles, dates, family and citations inside the corpus, register
links from real numbers, escaped HTML with BM25-matched words marked."""

from __future__ import annotations

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.document import code_title, document_html, document_view, publication_number, register_links
from patent_demo.text.bm25 import BM25Index
from patent_demo.titles import USPC_NO_TITLE
from tests.conftest import require_shared


def test_numbers_and_links():
    assert publication_number(Patent("USD0871717", kind_code="S1")) == "USD871717S"
    assert publication_number(Patent("US06836899", kind="utility", kind_code="B1")) == "US6836899B1"
    assert publication_number(Patent("EP0049154B2", kind="utility")) == "EP0049154B2"
    assert publication_number(Patent("D0001", country="XX")) == ""
    assert register_links(Patent("D0001", country="XX")) == []
    assert register_links(Patent("USD0871717", kind_code="S1")) == [
        ("Espacenet", "https://worldwide.espacenet.com/patent/search?q=pn%3DUSD871717S"),
        ("Google Patents", "https://patents.google.com/patent/USD871717S/en"),
    ]


def test_view_of_a_tiny_corpus(tmp_path):
    pats = [
        Patent(
            "US1",
            kind="utility",
            title="Pump <x>",
            text="A pump & valve.",
            claims="1. A pump.",
            codes={"ipc": ["F04B 53/10"], "locarno": ["06-01"]},
            date="2005-01-04",
            filing_date="2003-02-01",
            citations=["US2", "US9"],
            figures=[Figure("a.png", view="front", label="FIG. 1")],
            extra={"family": "F1"},
        ),
        Patent("US2", kind="utility", title="Valve", extra={"family": "F1"}),
        Patent("US3", kind="utility", title="Seal", citations=["US1"]),
    ]
    v = document_view(Corpus(tmp_path, pats), "US1")
    assert v.dates == [("filed", "2003-02-01"), ("published", "2005-01-04")]
    assert v.codes[0][:2] == ("ipc", "F04B 53/10") and v.codes[1] == ("locarno", "06-01", "Seats")
    assert (
        v.family == [("US2", "Valve")] and v.cites == [("US2", "Valve")] and v.cited_by == [("US3", "Seal")]
    )
    assert v.figures[0].path == str(tmp_path / "a.png") and v.figures[0].label == "FIG. 1"
    bm25 = BM25Index.build(pats)
    page = document_html(v, "pump", bm25)
    assert "Pump &lt;x&gt;" not in page and "<mark>Pump</mark> &lt;x&gt;" in page
    assert "A <mark>pump</mark> &amp; valve." in page and "<h4>Claims</h4>" in page
    assert "none in this corpus" not in page
    assert "Espacenet" in page


def test_real_grant_record():
    from patent_demo.data.loaders.uspto import load_grant_xml

    corpus = load_grant_xml(require_shared("uspto_grant_xml_samples") / "xml")
    p = next(p for p in corpus if p.kind == "utility" and p.claims)
    v = document_view(corpus, p.id)
    assert v.claims == p.claims and ("published", p.date) in v.dates
    assert v.links[0][1].endswith(publication_number(p)) and publication_number(p).startswith("US")
    assert all(c in corpus for c, _ in v.cites)


def test_red_book_record_shows_what_an_examiner_cites():
    """USD0907292 as the Red Book grant prints it: inventors, applicant, assignee, application number and
    date, publication date, every code with a title (USPC: the design class's), the figure descriptions
    as figures with the view each names (not under "Abstract"), and all 63 cited references."""
    from patent_demo.data.loaders.uspto import load_redbook

    corpus = load_redbook(require_shared("impact_design_patent_samples") / "patents")
    v = document_view(corpus, "USD0907292")
    assert v.inventors[:2] == ["Dimitrios Efthimiadis", "Georgios Georgakis"]
    assert (v.applicants, v.assignees, v.application) == (["BIC-VIOLEX SA"], ["BIC-VIOLEX SA"], "29/680,800")
    assert v.codes == [
        ("locarno", "28-03", "Toilet articles and beauty equipment"),
        ("uspc", "D28/47", "Cosmetic products and toilet articles"),
    ]
    assert v.number == "USD907292S" and "cite as <b>USD907292S</b>" in document_html(v)
    assert v.described[2] == ("FIG. 3", "top perspective", "FIG. 3 is a top view perspective view thereof;")
    assert len(v.references) == 63 and v.references[0] == ("US04621424", "", False, False)
    assert ("USD0633254", "", False, True) in v.references  # cited by the examiner
    page = document_html(v)
    assert "<h4>Abstract</h4>" not in page and "<h4>Figures (description of the drawings)</h4>" in page
    assert "<tr><td>FIG. 3</td><td>top perspective</td>" in page
    for row in (
        "<th>Inventors</th><td>Dimitrios Efthimiadis; Georgios Georgakis",
        "<th>Application number</th><td>29/680,800</td>",
        "<th>Application (filing) date</th><td>2019-02-20</td>",
        "<th>Earliest priority</th><td>2013-09-25</td>",
        "<th>Publication date</th><td>2021-01-05</td>",
        "<b>References cited:</b> 63, 0 in this corpus",
        "<span class='record-ref'>USD0633254*</span>",
    ):
        assert row in page


def test_a_red_book_record_lists_its_non_patent_literature_too():
    """USD0917866 cites 56 references as printed: 44 patent documents and 12 non-patent ones (catalogues);
    the record lists all 56, the non-patent ones as printed."""
    from patent_demo.data.loaders.uspto import load_redbook

    corpus = load_redbook(require_shared("impact_design_patent_samples") / "patents")
    v = document_view(corpus, "USD0917866")
    assert (len(v.references), len(v.npl)) == (44, 12)
    assert v.npl[0] == (
        "Nike Footwear Catalog, 1985 Footwear, p. 5, published Nov. 1983, Nike, Inc., USA.",
        False,
    )
    page = document_html(v)
    assert "<b>Non-patent literature cited:</b> 12" in page and "<li>Nike Footwear Catalog, 1987 Fall" in page


def test_a_uspc_2007_drawing_record_is_citable(tmp_path):
    """A drawing of the USPC 2007 table (id, class, title; no kind code, no date): its number as registers
    write it (kind S), its register links and its design class's title."""
    corpus = Corpus(
        tmp_path, [Patent("USD0534331", kind="design", title="Pet chew", codes={"uspc": ["D1/121"]})]
    )
    v = document_view(corpus, "USD0534331")
    assert v.number == "USD534331S"
    assert v.links[1] == ("Google Patents", "https://patents.google.com/patent/USD534331S/en")
    assert v.codes == [("uspc", "D1/121", "Edible products")]
    assert code_title("uspc", "D99/1") == "Miscellaneous" and code_title("uspc", "297/217.1") == USPC_NO_TITLE


def test_references_in_the_corpus_open_their_record_and_ipc_titles_come_from_the_corpus_table(tmp_path):
    """A cited reference in the corpus is a button naming the record it opens, the others plain numbers; an
    IPC subclass the built-in table lacks takes its title from the corpus's titles.tsv."""
    (tmp_path / "titles.tsv").write_text(
        "code\ttitle\nB43K\tIMPLEMENTS FOR WRITING OR DRAWING\n", encoding="utf-8"
    )
    corpus = Corpus(
        tmp_path,
        [
            Patent(
                "US1",
                kind="utility",
                title="Pen",
                text="A pen.",
                codes={"ipc": ["B43K 5/00", "A47C 7/02"]},
                citations=["US2", "EP9"],
            ),
            Patent("US2", kind="utility", title="Nib <b>"),
        ],
    )
    v = document_view(corpus, "US1")
    assert v.codes == [
        ("ipc", "B43K 5/00", "IMPLEMENTS FOR WRITING OR DRAWING"),
        ("ipc", "A47C 7/02", "Chairs, sofas, beds"),
    ]  # the built-in title wins
    page = document_html(v)
    assert (
        '<button type="button" class="record-link" data-open-record="US2" title="open US2">US2</button> '
        "Nib &lt;b&gt;"
    ) in page
    assert "<span class='record-ref'>EP9</span>" in page and "<h4>Abstract</h4><p>A pen.</p>" in page


def test_a_uspc_2007_record_is_citable_with_its_year_and_class_title(tmp_path, capsys):
    """The USPC 2007 drawings carry no date per record; the collection was granted in January 2007 (its
    SOURCE.md), which ``data.real.PARTS`` keeps and a build of that folder gives every record
    (``issued_month``): the record says the month and that the day is not in the data, the citation carries
    the year; the date filters still treat it as undated. The app's real corpus marks them the same way."""
    from patent_demo.cli.main import main as cli
    from patent_demo.data.real import PARTS, _merge

    data = require_shared().resolve()  # as ensure_real_corpus reads it (the data folder may be a link)
    part = next(p for p in PARTS if p.name == "uspc")
    out = tmp_path / "uspc"
    assert (
        cli(["corpus", "build", "--source", "images", str(data / part.folder), "--out", str(out), "--quiet"])
        == 0
    )
    assert "issued    2007-01 on 1,000 undated records" in capsys.readouterr().out
    corpus = Corpus.load(out)
    p = corpus["USD0534332"]
    assert (p.date, p.extra["issued_month"]) == ("", "2007-01")
    v = document_view(corpus, p.id)
    page = document_html(v)
    assert "cite as <b>USD534332S</b> (2007)" in page
    assert (
        "<th>Publication date</th><td>2007-01 (the month of grant; the day is not in the data)</td>" in page
    )
    assert v.codes[0][:2] == ("uspc", "D2/95") and v.codes[0][2] not in ("", USPC_NO_TITLE)  # the class title
    unmarked = Corpus.load(out)
    for q in unmarked.patents:
        q.extra.pop("issued_month")
    merged = _merge([(part, unmarked)], data, tmp_path / "real", copy_images=False)
    assert merged["USD0534332"].extra["issued_month"] == "2007-01"
