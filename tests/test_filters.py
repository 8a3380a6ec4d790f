"""Tests for patent_demo.filters and the filtered searches of DenseIndex and BM25Index: prefix rules
in every scheme, cut-off reasons, exact agreement of filtered retrieval with brute force over the
allowed documents, k hits whenever k are allowed, and evaluation under a cut-off; plus the real
grant XML sample."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.filters import (
    ClassPrefix,
    SearchFilter,
    apply_cutoff,
    cutoff_of_queries,
    parse_date,
    patent_country,
    prefix_matches,
    prior_art_date,
    split_prior_art,
)
from patent_demo.index import faiss_kinds
from patent_demo.index.dense import DenseIndex
from patent_demo.results import Results
from patent_demo.text.bm25 import BM25Index
from tests.conftest import require_shared


@pytest.fixture(autouse=True)
def one_thread():
    before = faiss_kinds.get_num_threads()
    faiss_kinds.set_num_threads(1)
    yield
    faiss_kinds.set_num_threads(before)


def test_parse_date_forms_and_errors():
    assert parse_date("2020-01-07") == "2020-01-07"
    assert parse_date("20200107") == "2020-01-07"
    assert parse_date("2020/1/7") == "2020-01-07"
    assert parse_date("  ") == ""
    with pytest.raises(ValueError, match=r"cut-off date '2021-02-30' is not a calendar date"):
        parse_date("2021-02-30", "cut-off date")
    with pytest.raises(ValueError, match=r"'last year' is not a date; write YYYY-MM-DD"):
        parse_date("last year")


@pytest.mark.parametrize(
    "prefix, code, expected",
    [
        ("06", "06-01", True),
        ("06-01", "06-01", True),
        ("06-0", "06-01", False),
        ("0", "06-01", False),
        ("A47C", "A47C 7/02", True),
        ("A47C 7/", "A47C 7/02", True),
        ("a47c7/", "A47C 7/02", True),
        ("A47C 7", "A47C 7/02", True),
        ("A47C 7", "A47C 70/00", False),
        ("A47C 7/0", "A47C 7/02", True),
        ("A47", "A47C 7/02", True),
        ("D6", "D6/369", True),
        ("D6", "D64/1", False),
        ("B", "A47C 7/02", False),
    ],
)
def test_prefix_rule(prefix, code, expected):
    assert prefix_matches(prefix, code) is expected


def test_class_prefix_schemes_and_locarno_forms():
    codes = {"locarno": ["06-01"], "uspc": ["D6/369"], "ipc": ["A47C 7/02"]}
    assert ClassPrefix.parse("6").matches(codes)
    assert ClassPrefix.parse("6-1").matches(codes)
    assert ClassPrefix.parse("0601").matches(codes)
    assert ClassPrefix.parse("locarno:06").matches(codes)
    assert not ClassPrefix.parse("ipc:D6").matches(codes)
    assert ClassPrefix.parse("uspc:D6").matches(codes)
    with pytest.raises(ValueError, match=r"unknown scheme 'foo'"):
        ClassPrefix.parse("foo:06")
    with pytest.raises(ValueError, match=r"holds characters codes never have"):
        ClassPrefix.parse("<b>06")


def corpus_of(rows: list[dict]) -> Corpus:
    return Corpus(root=".", patents=[Patent(**r) for r in rows], name="t")


ROWS = [
    {"id": "USD0000001", "date": "2010-05-01", "codes": {"locarno": ["06-01"]}, "title": "chair"},
    {"id": "USD0000002", "date": "2015-05-01", "codes": {"locarno": ["06-02"]}, "title": "bed"},
    {"id": "EP0000003", "date": "2018-01-01", "codes": {"ipc": ["A47C 7/02"]}, "title": "seat"},
    {"id": "US0000004", "date": "", "codes": {"ipc": ["A47C 70/00"]}, "title": "stool"},
    {"id": "USD0000005", "date": "2019-06-30", "codes": {"locarno": ["06-01"]}, "title": "chair two"},
]


def test_filter_reasons_and_cutoff_boundary():
    c = corpus_of(ROWS)
    f = SearchFilter.parse(before="2019-06-30")
    assert f.allowed_ids(c) == {"USD0000001", "USD0000002", "EP0000003"}
    assert (
        f.reason(c["USD0000005"]) == "not prior art: published 2019-06-30, on or after the cut-off 2019-06-30"
    )
    assert f.reason(c["US0000004"]) == "no date: neither published nor filed on record"
    assert SearchFilter.parse(before="2019-06-30", keep_undated=True).admits(c["US0000004"])
    g = SearchFilter.parse(classification="A47C 7, 06-02", country="EP, us")
    assert g.allowed_ids(c) == {"USD0000002", "EP0000003"}
    r = SearchFilter.parse(date_from="2011-01-01", date_to="2018-01-01")
    assert r.allowed_ids(c) == {"USD0000002", "EP0000003"}
    assert SearchFilter().allowed_ids(c) is None
    assert SearchFilter.parse(before="2019-06-30", classification="06").describe() == (
        "prior art before 2019-06-30 · class 06"
    )
    with pytest.raises(ValueError, match="the date range is empty: start 2019-01-01 is after end 2018-01-01"):
        SearchFilter.parse(date_from="2019-01-01", date_to="2018-01-01")
    with pytest.raises(ValueError, match="country 'USA' is not a two-letter office code"):
        SearchFilter.parse(country="USA")
    assert patent_country(c["EP0000003"]) == "EP"
    assert split_prior_art([p["id"] for p in ROWS], c, "2016-01-01") == ([0, 1], [2, 3, 4])


def _allowed_reference(x, q, pids, allowed, k):
    """Brute force: best figure score per allowed patent, top k, ties by first row."""
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    s = xn @ qn
    best: dict[str, float] = {}
    for r in np.argsort(-s, kind="stable"):
        if pids[r] in allowed and pids[r] not in best:
            best[pids[r]] = float(s[r])
    return list(best)[:k]


@pytest.mark.parametrize(
    "kind, params",
    [
        ("flat", {}),
        ("hnsw", {"efSearch": 400}),
        ("ivf", {"nlist": 8, "nprobe": 8}),
        ("ivfpq", {"nlist": 4, "nprobe": 4, "m": 8, "nbits": 6, "refine": 50}),
    ],
)
def test_dense_allowed_equals_brute_force_and_fills_k(kind, params):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 16)).astype(np.float32)
    ids = [f"f{i}" for i in range(600)]
    pids = [f"p{i // 3}" for i in range(600)]
    index = DenseIndex.build(x, ids, pids, kind=kind, **params)
    allowed = {f"p{i}" for i in range(0, 200, 9)}  # 23 of 200 patents
    for _ in range(5):
        q = rng.standard_normal(16).astype(np.float32)
        res = index.search_patents(q, k=10, allowed=allowed)
        assert len(res) == 10 and set(res.ids) <= allowed
        assert res.ids == _allowed_reference(x, q, pids, allowed, 10)
        figs = index.search(q, k=12, allowed=allowed)
        assert len(figs) == 12 and {e["patent_id"] for e in figs.extras} <= allowed
    # asking for more than are allowed gives every allowed patent, not an error
    assert len(index.search_patents(q, k=50, allowed=allowed)) == len(allowed)
    assert len(index.search_patents(q, k=5, allowed=set())) == 0


def test_dense_allowed_fills_k_when_the_approximate_search_misses():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((800, 16)).astype(np.float32)
    pids = [f"p{i}" for i in range(800)]
    index = DenseIndex.build(x, [f"f{i}" for i in range(800)], pids, kind="ivf", nlist=16, nprobe=1)
    allowed = {"p3", "p400", "p799", "p12", "p77"}
    q = rng.standard_normal(16).astype(np.float32)
    res = index.search_patents(q, k=5, allowed=allowed)
    assert sorted(res.ids) == sorted(allowed)
    assert res.ids == _allowed_reference(x, q, pids, allowed, 5)


def test_bm25_allowed_equals_filtered_full_ranking():
    docs = [
        {"id": f"d{i}", "text": " ".join(["pump"] * (i % 4 + 1) + ["valve"] * (i % 3) + ["x"] * i)}
        for i in range(40)
    ]
    index = BM25Index.build(docs, fields=("text",))
    allowed = {f"d{i}" for i in range(40) if i % 5 == 0}
    full = index.search("pump valve", k=1000)
    expected = [d for d in full.ids if d in allowed][:3]
    res = index.search("pump valve", k=3, allowed=allowed)
    assert res.ids == expected and len(res) == 3
    np.testing.assert_allclose(res.scores, [full.scores[full.ids.index(d)] for d in expected])
    assert index.search_many(["pump", "valve"], k=100, allowed=allowed)[0].ids == [
        d for d in index.search("pump", k=1000).ids if d in allowed
    ]
    assert len(index.search("pump", k=3, allowed=[])) == 0


def test_apply_cutoff_strikes_later_documents_from_the_run_and_keeps_every_citation():
    """No query and no relevant document leaves the qrels: what the cut-off hides counts as missed."""
    from patent_demo.filters import hidden_relevant

    c = corpus_of(ROWS + [{"id": "Q1", "date": "2016-03-01"}, {"id": "Q2", "date": "2009-01-01"}])
    qrels = {"Q1": {"USD0000001": 1, "EP0000003": 1}, "Q2": {"USD0000002": 1}}
    run = {
        "Q1": Results(["EP0000003", "USD0000002", "USD0000001"], [3.0, 2.0, 1.0]),
        "Q2": Results(["USD0000002"], [1.0]),
    }
    cut = cutoff_of_queries(qrels, c)
    assert cut == {"Q1": "2016-03-01", "Q2": "2009-01-01"}
    out_run, out_qrels = apply_cutoff(run, qrels, c, cut)
    assert out_qrels == qrels  # Q2's only relevant document is later: still scored, as a miss
    assert out_run["Q1"].ids == ["USD0000002", "USD0000001"]
    assert out_run["Q2"].ids == []
    assert hidden_relevant(qrels, c, cut) == {"Q1": ["EP0000003"], "Q2": ["USD0000002"]}
    assert cutoff_of_queries(["Q1", "nope"], c, fixed="2012-01-01") == {
        "Q1": "2012-01-01",
        "nope": "2012-01-01",
    }
    assert prior_art_date(c["Q1"]) == "2016-03-01"


def test_real_grant_xml_filters():
    from patent_demo.data.loaders.uspto import load_grant_xml

    corpus = load_grant_xml(require_shared("uspto_grant_xml_samples") / "xml")
    f = SearchFilter.parse(before="2009-01-01", kind_code="S")
    allowed = f.allowed_ids(corpus)

    def prior(p, cut):  # published before the cut-off, or filed (earliest priority / filing) before it
        filed = min([d for d in (p.priority_date, p.filing_date) if d] or ["9"])
        return bool(p.date) and p.date < cut or filed < cut

    naive = {p.id for p in corpus if prior(p, "2009-01-01") and p.kind_code == "S1"}
    assert allowed == naive
    assert any(corpus[d].date >= "2009-01-01" for d in allowed)  # grants filed earlier: the E documents
    chairs = SearchFilter.parse(classification="A47C").allowed_ids(corpus)
    assert chairs == {p.id for p in corpus if any(c.startswith("A47C") for c in p.codes.get("ipc", []))}
    bm25 = BM25Index.build(corpus)
    util = SearchFilter.parse(before="2008-01-01", kind_code="B1,B2").allowed_ids(corpus)
    res = bm25.search("a method of cooling an electronic device", k=10, allowed=util)
    assert len(res) == 10 and all(prior(corpus[d], "2008-01-01") for d in res.ids)


def test_real_citation_qrels_evaluated_with_own_cutoff():
    """cs3245: citing patents as queries, cut-off = the query's priority / application date. The filtered
    evaluation equals a naive one: the full BM25 ranking with what is not prior art struck out (published
    on or after the cut-off and not filed before it), scored against all the citations, none dropped."""
    from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs
    from patent_demo.filters import evaluate_text_with_cutoff
    from patent_demo.metrics.text import evaluate_run
    from patent_demo.text.search import patent_query

    root = require_shared("cs3245_patsnap_corpus_qrels")
    corpus = load_text_corpus(root / "patsnap_docs.jsonl")
    qrels = qrels_from_pairs(read_pairs(root / "in_corpus_citation_pairs.tsv"))
    qids = sorted(qrels)[:60]
    queries = [patent_query(corpus[q]) for q in qids]
    bm25 = BM25Index.build(corpus)
    got = evaluate_text_with_cutoff(bm25, None, queries, corpus, qrels, cutoff="own", ks=(10, 100))

    naive_run, naive_qrels = {}, {}

    def filed(p):
        return min([d for d in (p.priority_date, p.filing_date) if d] or [""])

    hidden = 0
    for q in queries:
        before = filed(corpus[q.qid]) or corpus[q.qid].date
        ok = lambda d, before=before: (  # noqa: E731
            bool(corpus[d].date)
            and corpus[d].date < before
            or bool(filed(corpus[d]))
            and filed(corpus[d]) < before
        )
        naive_qrels[q.qid] = dict(qrels[q.qid])
        hidden += sum(not ok(d) for d in qrels[q.qid])
        full = bm25.search(q.text, k=len(corpus))
        naive_run[q.qid] = [d for d in full.ids if d != q.qid and ok(d)][:1000]
    want = evaluate_run(naive_run, naive_qrels, (10, 100))
    assert got["num_queries"] == len(queries)  # no query dropped
    assert got["hidden"] == hidden > 0
    for key in ("recall@10", "recall@100", "map@100", "ndcg@100"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key


def test_the_history_line_states_an_applied_exclusion():
    """``filters_line``: the filter's own line, then the exclusion note when the search applied it;
    "no filter" only when there was neither."""
    from patent_demo.filters import exclusion_note, filters_line

    note = exclusion_note(["USD0929297"], ["USD0929298"])
    assert note == "the query's own patent USD0929297 is left out with its family (USD0929298)"
    assert exclusion_note(["A", "B"]) == "the query's own patents A, B are left out"
    assert filters_line("no filter", ["cut-off 2020-01-01: …", note]) == note
    assert filters_line("class 06-01", [note]) == f"class 06-01 · {note}"
    assert filters_line("no filter", ["search syntax: 3 documents match"]) == "no filter"
