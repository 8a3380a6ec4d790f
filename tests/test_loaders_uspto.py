import csv
import json
from collections import Counter

import pytest

from patent_demo.data.corpus import Corpus
from patent_demo.data.loaders import LoadReport
from patent_demo.data.loaders.uspto import (
    figure_descriptions,
    iter_grant_documents,
    load_grant_xml,
    load_redbook,
    normalize_patent_id,
    parse_grant,
    view_label,
)
from tests.conftest import require_shared


# -- identifiers and view labels ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "number, country, expected",
    [
        ("D0907292", "US", "USD0907292"),
        ("D428532", "US", "USD0428532"),
        ("06836899", "US", "US06836899"),
        ("4621424", "US", "US04621424"),
        ("RE41234", "US", "USRE041234"),
        ("PP21234", "US", "USPP021234"),
        ("2003/0123456", "US", "US20030123456"),
        ("USD0796233", "US", "USD0796233"),
        ("0 123 456", "EP", "EP0123456"),
        ("WO 99/12345", "WO", "WO9912345"),
    ],
)
def test_normalize_patent_id(number, country, expected):
    assert normalize_patent_id(number, country) == expected


@pytest.mark.parametrize(
    "text, view",
    [
        ("FIG. 1 is a front perspective view of a shaving blade cartridge;", "front perspective"),
        ("FIG. 2 is a top plan view thereof;", "top"),
        ("FIG. 3 is a top view perspective view thereof;", "top perspective"),
        ("FIG. 3 is a bottom thereof;", "bottom"),
        (
            "FIG. 2 is a front elevational view of the bottle of FIG. 1, wherein the rear elevational view is a mirror image",
            "front",
        ),
        ("FIG. 2 is a second image thereof;", ""),
        ("FIG. 4 is a left side elevational view thereof;", "left"),
        ("FIG. 5 is a back view thereof;", "rear"),
        ("FIG. 6 is a rear elevation view thereof;", "rear"),
        ("FIG. 7 is an elevation view thereof;", "front"),
        ("FIG. 8 is a cross-sectional view taken along line 8-8 of FIG. 2;", "section"),
        ("FIG. 9 is an exploded, front elevation view thereof;", "exploded front"),
        ("FIG. 10 is a side view thereof;", "side"),
        ("FIG. 2 is perspective view thereof.", "perspective"),
        ("FIG. 11 is a front, top and right side perspective view;", "front right top perspective"),
        ("The broken lines form no part of the claimed design.", ""),
    ],
)
def test_view_label(text, view):
    assert view_label(text) == view


def test_figure_descriptions_split_figures_from_notes():
    figs, notes = figure_descriptions(
        [
            "FIG. 1 is a perspective view;",
            "FIG. 2A is a bottom view;",
            "FIGS. 3-5 show details.",
            "Broken lines.",
        ]
    )
    assert [(f["label"], f["number"], f["view"]) for f in figs] == [
        ("FIG. 1", "1", "perspective"),
        ("FIG. 2A", "2A", "bottom"),
    ]
    assert notes == ["FIGS. 3-5 show details.", "Broken lines."]


# -- a hand-written grant document ------------------------------------------------------------------------
UTILITY = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE us-patent-grant SYSTEM "us-patent-grant-v44-2013-05-16.dtd" [
<!ENTITY lsquo "&#x2018;">
]>
<us-patent-grant lang="EN" country="US">
<us-bibliographic-data-grant>
<publication-reference><document-id><country>US</country><doc-number>08000001</doc-number>
<kind>B2</kind><date>20130416</date></document-id></publication-reference>
<application-reference appl-type="utility"><document-id><country>US</country><doc-number>1</doc-number>
</document-id></application-reference>
<classifications-ipcr><classification-ipcr><section>A</section><class>47</class><subclass>C</subclass>
<main-group>7</main-group><subgroup>02</subgroup></classification-ipcr></classifications-ipcr>
<classifications-cpc><main-cpc><classification-cpc><section>B</section><class>26</class><subclass>B</subclass>
<main-group>21</main-group><subgroup>4012</subgroup></classification-cpc></main-cpc></classifications-cpc>
<invention-title>Chair &amp; stool with &lsquo;rocker&rsquo;</invention-title>
<us-references-cited>
<us-citation><patcit num="1"><document-id><country>US</country><doc-number>D428532</doc-number><kind>S</kind>
</document-id></patcit><category>cited by examiner</category></us-citation>
<us-citation><patcit num="2"><document-id><country>EP</country><doc-number>0 123 456</doc-number></document-id>
</patcit><category>cited by applicant</category></us-citation>
<us-citation><nplcit num="3"><othercit>A journal article</othercit></nplcit></us-citation>
</us-references-cited>
</us-bibliographic-data-grant>
<abstract><p>A chair that <b>rocks</b>.</p></abstract>
</us-patent-grant>
"""


def test_parse_grant_utility_with_entities_cpc_and_citations():
    p = parse_grant(UTILITY)
    assert p.id == "US08000001"
    assert p.kind == "utility"
    assert p.title == "Chair & stool with \u2018rocker\u2019"
    assert p.text == "A chair that rocks."
    assert p.codes == {"ipc": ["A47C 7/02"], "cpc": ["B26B 21/4012"]}
    assert p.date == "2013-04-16"
    assert p.citations == ["USD0428532", "EP0123456"]
    assert p.extra == {
        "cited_by_examiner": ["USD0428532"],
        "npl_citations": [{"text": "A journal article", "examiner": False}],
        "application_number": "1",
    }
    assert (p.country, p.kind_code) == ("US", "B2")


def test_parse_grant_skips_other_kinds_and_reports_them():
    report = LoadReport()
    plant = UTILITY.replace('appl-type="utility"', 'appl-type="plant"')
    assert parse_grant(plant, report=report) is None
    seq = '<?xml version="1.0"?><!DOCTYPE sequence-cwu SYSTEM "x.dtd" []><sequence-cwu/>'
    assert parse_grant(seq, report=report) is None
    assert report.skipped == Counter({"appl-type plant": 1, "<sequence-cwu> document": 1})


def test_parse_grant_malformed_xml_names_the_place():
    with pytest.raises(ValueError, match=r"^week\.xml:7: malformed XML"):
        parse_grant("<us-patent-grant><oops></us-patent-grant>", where="week.xml:7")


def test_weekly_file_is_split_into_documents(tmp_path):
    week = tmp_path / "ipg130416.xml"
    week.write_text(UTILITY + UTILITY.replace("08000001", "08000002") + UTILITY)
    assert [lineno for lineno, _ in iter_grant_documents(week)] == [1, 26, 51]
    report = LoadReport()
    corpus = load_grant_xml(week, report=report)
    assert [p.id for p in corpus] == ["US08000001", "US08000002"]
    assert report.loaded == 2 and report.skipped == Counter({"duplicate": 1})
    assert corpus.root == tmp_path and corpus["US08000002"].extra["source"] == "ipg130416.xml"


# -- real data ----------------------------------------------------------------------------------------------
def test_redbook_sample_counts_and_pages():
    data = require_shared("impact_design_patent_samples")
    report = LoadReport()
    corpus = load_redbook(data / "patents", report=report)
    # SOURCE.md: 20 patents in this folder, 12+ Locarno subclasses; 126 TIFs = 20 gazette figures + 106 pages
    assert len(corpus) == 20 and report.loaded == 20 and report.n_skipped == 0
    assert sum(len(p.figures) for p in corpus) == 106
    assert len(list((data / "patents").glob("*/*.TIF"))) == 126
    corpus.validate()
    with open(data / "design_patents_locarno_figures.tsv", encoding="utf-8") as fh:
        rows = {r["doc_number"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert len(rows) == 20
    for p in corpus:
        row = rows[p.id[2:]]
        assert len(p.figures) == int(row["n_drawing_pages"])
        assert [f.path.split("/")[-1] for f in p.figures] == row["page_files"].split(";")
        assert p.locarno == row["locarno_subclass"]
        assert p.title == row["title"]
        assert p.extra["og_figure"] == f"{row['patent_dir']}/{row['og_figure_file']}"


def test_redbook_spot_check_usd0907292():
    data = require_shared("impact_design_patent_samples")
    p = load_redbook(data / "patents")["USD0907292"]
    assert p.kind == "design"
    assert p.title == "Shaving blade cartridge"
    assert p.codes == {"locarno": ["28-03"], "uspc": ["D28/47"]}
    assert p.extra["locarno_edition"] == 13
    assert p.date == "2021-01-05"
    assert len(p.citations) == 63
    assert p.citations[:3] == ["US04621424", "US05063667", "US05761814"]
    assert "USD0428532" in p.citations
    # 8 figures on 8 sheets: each page takes its figure's label and view
    assert [(f.label, f.view) for f in p.figures] == [
        ("FIG. 1", "front perspective"),
        ("FIG. 2", "bottom"),
        ("FIG. 3", "top perspective"),  # "a top view perspective view thereof"
        ("FIG. 4", "left"),
        ("FIG. 5", "right"),
        ("FIG. 6", "rear"),
        ("FIG. 7", "front"),
        ("FIG. 8", "rear perspective"),
    ]
    assert p.figures[1].path == "USD0907292-20210105/USD0907292-20210105-D00002.TIF"
    assert p.figures[1].description == "FIG. 2 is a bottom view thereof;"
    assert p.extra["drawing_notes"][0].startswith("The broken line disclosure of the razor handle")
    # dates, office, kind and claim as printed in the grant XML
    assert (p.filing_date, p.priority_date) == ("2019-02-20", "2013-09-25")
    assert (p.country, p.kind_code) == ("US", "S1")
    assert p.claims == "The ornamental design for a shaving blade cartridge, as shown and described."
    # continuation of application 29/606,243 (granted as D845,543) and of 15/275,884 (US 9,925,677)
    assert p.extra["application_number"] == "29680800"
    # who: the inventors, the applicant and the assignee as the grant names them
    assert p.inventors[:2] == ["Dimitrios Efthimiadis", "Georgios Georgakis"]
    assert (p.applicants, p.assignees) == (["BIC-VIOLEX SA"], ["BIC-VIOLEX SA"])
    assert p.extra["related"][:4] == [
        "application:29606243",
        "grant:USD0845543",
        "application:15275884",
        "grant:US09925677",
    ]


def test_redbook_dates_are_ordered_and_every_design_has_its_claim():
    data = require_shared("impact_design_patent_samples")
    corpus = load_redbook(data / "patents")
    for p in corpus:
        assert p.filing_date and p.filing_date < p.date, p.id
        assert not p.priority_date or p.priority_date <= p.filing_date, p.id
        assert p.kind_code == "S1" and p.country == "US"
        assert "ornamental design for" in p.claims, p.id
    assert sum(bool(p.priority_date) for p in corpus) >= 1


def test_redbook_pages_without_one_figure_each_are_sheets():
    data = require_shared("impact_design_patent_samples")
    p = load_redbook(data / "patents")["USD0907293"]  # 8 figures on 6 sheets
    assert len(p.extra["figure_descriptions"]) == 8
    assert [(f.view, f.label) for f in p.figures] == [("page", f"sheet {n}") for n in range(1, 7)]


def test_redbook_hague_reproductions_and_a_single_figure_take_their_views():
    """A Hague design lists reproductions ("1.1 : Perspective"), one per page; a single-figure design says
    "The FIGURE is a front view …": each page takes its view, none is left a bare "page"."""
    data = require_shared("impact_design_patent_samples")
    corpus = load_redbook(data / "patents")
    hague = corpus["USD0913174"]  # 8 reproductions on 8 pages; 1.7 and 1.8 are "Reference view"s
    assert [(f.label, f.view) for f in hague.figures][:3] == [
        ("1.1", "perspective"),
        ("1.2", "front"),
        ("1.3", "rear"),
    ]
    assert hague.extra["application_number"] == "35508164" and hague.inventors[:2] == [
        "Hansoo Kim",
        "Sangmin Park",
    ]
    single = corpus["USD0910059"]
    assert [(f.label, f.view) for f in single.figures] == [("FIG. 1", "front")]
    assert single.assignees == ["VMWARE, INC."] and single.applicants == ["VMware, Inc."]


def test_older_grants_name_their_inventors_as_applicant_inventors():
    """Before 2013 a grant lists its inventors under ``parties/applicants`` (type applicant-inventor): they
    are the inventors, not applicants."""
    data = require_shared("uspto_grant_xml_samples")
    p = load_grant_xml(data / "xml")["US06837063"]
    assert p.inventors == ["Charles D. Hood, III", "Curtis L. Progl"]
    assert (p.applicants, p.assignees) == ([], ["Dell Products L.P."])


def test_redbook_round_trips_through_corpus_save(tmp_path):
    data = require_shared("impact_design_patent_samples")
    corpus = load_redbook(data / "patents")
    corpus.save(tmp_path)
    back = Corpus.load(tmp_path, validate=False)
    assert [p.to_dict() for p in back] == [p.to_dict() for p in corpus]


def test_grant_xml_sample_counts():
    data = require_shared("uspto_grant_xml_samples")
    report = LoadReport()
    corpus = load_grant_xml(data / "xml", report=report)
    # SOURCE.md: 421 unique documents = 220 design + 199 utility + 1 plant + 1 SIR
    assert Counter(p.kind for p in corpus) == Counter({"design": 220, "utility": 199})
    assert report.skipped == Counter(
        {"duplicate": 18, "<sequence-cwu> document": 5, "appl-type plant": 1, "appl-type sir": 1}
    )
    designs = [p for p in corpus if p.kind == "design"]
    utilities = [p for p in corpus if p.kind == "utility"]
    # Locarno: 25 main classes, 64 subclasses; edition 9: 208, edition 8: 12
    assert len({p.locarno_main for p in designs}) == 25
    assert len({p.locarno for p in designs}) == 64
    assert Counter(p.extra["locarno_edition"] for p in designs) == Counter({9: 208, 8: 12})
    assert Counter(p.locarno_main for p in designs).most_common(2) == [("06", 29), ("14", 26)]
    # utility: all with an abstract; 174 with IPCR, 25 with only the legacy IPC-7 string
    assert all(p.text for p in utilities)
    assert all(p.codes.get("ipc") for p in utilities)
    assert sum(p.date.startswith("2005") for p in utilities) == 25
    assert {p.codes["ipc"][0] for p in utilities if p.id == "US06836899"} == {"A45F 5/04"}


def test_grant_xml_agrees_with_derived_records():
    data = require_shared("uspto_grant_xml_samples")
    corpus = load_grant_xml(data / "xml")
    records = [json.loads(line) for line in open(data / "grant_records.jsonl", encoding="utf-8")]
    by_id = {normalize_patent_id(r["doc_number"]): r for r in records}
    assert len(by_id) == 421
    for p in corpus:
        r = by_id[p.id]
        assert p.title == r["title"]
        assert p.date.replace("-", "") == r["date"]
        if p.kind == "design":
            assert p.locarno.replace("-", "") == r["locarno"]
            n = len(p.extra.get("figure_descriptions", [])) + len(p.extra.get("drawing_notes", []))
            assert n == len(r["figure_descriptions"])
        else:
            assert p.text == r["abstract"]
