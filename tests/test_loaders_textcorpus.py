import json
from collections import Counter

import pytest

from patent_demo.data.corpus import Corpus, CorpusError
from patent_demo.data.loaders import LoadReport
from patent_demo.data.loaders.textcorpus import (
    LabelledPair,
    load_labelled_pairs,
    load_text_corpus,
    qrels_from_pairs,
    read_pairs,
)
from tests.conftest import require_shared


def test_qrels_from_pairs():
    pairs = [("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q3", "q3")]
    assert qrels_from_pairs(pairs) == {"q1": {"d1": 1, "d2": 1}, "q2": {"d1": 1}}


def test_jsonl_corpus_aliases_codes_and_qrels_file(tmp_path):
    rows = [
        {"id": "A", "title": "Pump", "abstract": "A pump.", "ipc": ["F04B43/00"], "cpc": "F04B 43/02"},
        {"doc_id": "B", "title": "Filter", "text": "A filter.", "all_ipc": ["B01D/", "??"], "cites": ["A"]},
        {"title": "no id"},
        {"id": "A", "title": "again"},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "qrels.txt").write_text("B 0 A 1\n")
    report = LoadReport()
    corpus = load_text_corpus(path, qrels=tmp_path / "qrels.txt", report=report)
    assert [p.id for p in corpus] == ["A", "B"]
    a, b = corpus["A"], corpus["B"]
    assert (a.kind, a.title, a.text, a.codes) == (
        "utility",
        "Pump",
        "A pump.",
        {"ipc": ["F04B 43/00"], "cpc": ["F04B 43/02"]},
    )
    assert (b.text, b.codes, b.citations) == ("A filter.", {"ipc": ["B01D"]}, ["A"])
    assert corpus.qrels == {"B": {"A": 1}}
    assert report.skipped == Counter({"no id": 1, "duplicate": 1})
    assert report.coarsened_codes == Counter({"ipc:B01D/": 1})
    assert report.dropped_codes == Counter({"ipc:??": 1})
    corpus.validate()


def test_qrels_with_unknown_id_is_an_error(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "A"}) + "\n")
    with pytest.raises(CorpusError) as err:
        load_text_corpus(path, qrels={"A": {"Z": 1}})
    assert str(err.value) == "qrels for query 'A' name 1 id(s) not in docs.jsonl, e.g. 'Z'"


def test_patsnap_corpus_counts_and_citation_qrels(tmp_path):
    data = require_shared("cs3245_patsnap_corpus_qrels")
    cites = read_pairs(data / "in_corpus_citation_pairs.tsv", columns=("citing_doc", "cited_doc"))
    family = read_pairs(data / "in_corpus_family_pairs.tsv")
    qrels = qrels_from_pairs(cites)
    report = LoadReport()
    corpus = load_text_corpus(data / "patsnap_docs.jsonl", qrels=qrels, report=report)
    # SOURCE.md: 2,244 patents (US 2,051, EP 97, WO 95, GB 1); 2,230 with IPC; 338 citation pairs from
    # 236 citing documents; 82 family pairs
    assert len(corpus) == 2244 and report.n_skipped == 0
    assert Counter(p.id[:2] for p in corpus) == Counter({"US": 2051, "EP": 97, "WO": 95, "GB": 1})
    assert sum(1 for p in corpus if p.codes.get("ipc")) == 2230
    assert len(cites) == 338 and len(set(cites)) == 338
    assert len(qrels) == 236 and sum(len(d) for d in qrels.values()) == 338
    assert len(family) == 82 and all(a in corpus and b in corpus for a, b in family)
    first = corpus["EP0049154B2"]
    assert (first.title, first.codes, first.date) == (
        "In place gas cleaning of diffusion elements",
        {"ipc": ["B08B 5/00", "C02F 3/20"]},
        "1995-02-15",
    )
    assert (first.filing_date, first.country, first.kind_code) == ("1981-09-29", "EP", "B2")
    assert Counter(p.country for p in corpus) == Counter({"US": 2051, "EP": 97, "WO": 95, "GB": 1})
    assert sum(p.filing_date < p.date for p in corpus if p.filing_date and p.date) > 2000
    corpus.validate()
    corpus.save(tmp_path)
    back = Corpus.load(tmp_path)
    assert back.qrels == qrels and len(back) == 2244


TSV = (
    "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\tipc_1\tipc_2\tipc_3\tindex\n"
    '1\tEP1\tEP2\tA "quoted" pump\tA valve\t1\t1\t0\t0\n'
    '0\tEP1\tEP3\tA "quoted" pump\tA filter\t0\t0\t0\t1\n'
    "\n"
    "1\tEP4\tEP5\tA fan\tA blade\t1.0\t1.0\t1.0\t2\n"
)


def test_labelled_pairs_tsv(tmp_path):
    path = tmp_path / "train_t.tsv"
    path.write_text(TSV)
    pairs = load_labelled_pairs(path)
    assert pairs == [
        LabelledPair(1, "EP1", "EP2", 'A "quoted" pump', "A valve", 0.0, (1.0, 1.0, 0.0), 0),
        LabelledPair(0, "EP1", "EP3", 'A "quoted" pump', "A filter", 0.0, (0.0, 0.0, 0.0), 1),
        LabelledPair(1, "EP4", "EP5", "A fan", "A blade", 1.0, (1.0, 1.0, 1.0), 2),
    ]


def test_labelled_pairs_title_abstract_variant(tmp_path):
    path = tmp_path / "dev_t.tsv"
    path.write_text(
        "Quality\t#1 ID\t#2 ID\t#1 title\t#1 abstract\t#2 title\t#2 abstract\tipc_3\n"
        "0\tA\tB\tPump\tIt pumps.\tValve\tIt closes.\t1\n"
    )
    assert load_labelled_pairs(path) == [
        LabelledPair(0, "A", "B", "Pump It pumps.", "Valve It closes.", 1.0, (1.0,), 0)
    ]


def test_labelled_pairs_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
    with pytest.raises(CorpusError) as err:
        load_labelled_pairs(path)
    assert str(err.value) == (
        f"{path}:1: missing column(s) ['ipc_3']; the header has ['Quality', '#1 ID', '#2 ID', '#1 String', '#2 String']"
    )
    path.write_text(TSV.replace("1\tEP4", "2\tEP4"))
    with pytest.raises(CorpusError) as err:
        load_labelled_pairs(path)
    assert str(err.value) == f"{path}:5: Quality '2' is not in [0, 1]"
    path.write_text(TSV.replace("A valve\t1\t1\t0", "A valve\t1\tyes\t0"))
    with pytest.raises(CorpusError) as err:
        load_labelled_pairs(path)
    assert str(err.value) == f"{path}:2: ipc_2 'yes' is not a number"
    path.write_text(TSV.replace("\tA valve", ""))
    with pytest.raises(CorpusError) as err:
        load_labelled_pairs(path)
    assert str(err.value) == f"{path}:2: 8 tab-separated fields, the header has 9"


def test_the_patsnap_xml_records_give_the_dates_the_jsonl_lacks(tmp_path):
    """cs3245's JSONL has publication and application dates; its flat XML records add the earliest priority
    (1,594 documents), which a text corpus build fills in (a date the JSONL has is kept)."""
    from patent_demo.data.build import build_corpus
    from patent_demo.data.loaders.textcorpus import fill_dates, read_flat_xml_dates

    root = require_shared("cs3245_patsnap_corpus_qrels")
    dates = read_flat_xml_dates(root / "patsnap-corpus")
    assert len(dates) == 2244 and sum("priority_date" in d for d in dates.values()) == 1594
    assert dates["EP0049154B2"] == {
        "priority_date": "1980-11-04",
        "filing_date": "1981-09-29",
        "date": "1995-02-15",
    }
    # several priorities ("2002-04-26 | 2002-04-26" and the like): the earliest
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.xml").write_text(
        '<doc><str name="Patent Number"> US1 </str><str name="Priority Date">1998-01-24 | 1997-06-27</str>'
        '<str name="Application Date">bad</str></doc>'
    )
    (tmp_path / "x" / "b.xml").write_text('<doc><str name="Title">no number</str></doc>')
    assert read_flat_xml_dates(tmp_path / "x") == {"US1": {"priority_date": "1997-06-27"}}
    corpus = load_text_corpus(root / "patsnap_docs.jsonl")
    assert not any(p.priority_date for p in corpus.patents)
    assert fill_dates(corpus, dates) == 1594
    assert corpus["EP0049154B2"].filing_date == "1981-09-29"
    build_corpus("text", root, tmp_path / "built", progress=False)
    built = Corpus.load(tmp_path / "built", validate=False)
    assert built["EP0049154B2"].priority_date == "1980-11-04"
    assert sum(bool(p.priority_date) for p in built.patents) == 1594
