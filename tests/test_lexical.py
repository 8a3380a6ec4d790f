"""Tests: patent_demo/text/bm25.py"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.results import Results
from patent_demo.text.bm25 import PARAMS_FILE, BM25Index

PATSNAP = Path(__file__).resolve().parents[2] / "shared" / "data" / "cs3245_patsnap_corpus_qrels"

TINY = [
    {"id": "d1", "title": "Pump", "text": "valve pump"},
    {"id": "d2", "title": "Valve", "text": "seal"},
    {"id": "d3", "title": "Filter", "text": "membrane water"},
    {"id": "d4", "title": "", "text": "pump"},
]


def test_exact_lucene_scores_on_hand_built_corpus():
    index = BM25Index.build(TINY)
    res = index.search("the pump", k=10)
    # N = 4, df(pump) = 2 -> idf = log(1 + 2.5 / 2.5); lengths 3, 2, 3, 1 -> avgdl 2.25
    idf = math.log(2.0)
    d1 = idf * 2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2.25))
    d4 = idf * 1 / (1 + 1.2 * (0.25 + 0.75 * 1 / 2.25))
    assert res.ids == ["d4", "d1"]
    np.testing.assert_allclose(res.scores, [d4, d1], rtol=1e-6)
    assert (index.k1, index.b, index.method) == (1.2, 0.75, "lucene")


def test_empty_stopword_unknown_queries_and_large_k():
    index = BM25Index.build(TINY)
    for query in ["", "   ", "the of and", "zzzz", "!!"]:
        res = index.search(query, k=5)
        assert isinstance(res, Results) and len(res) == 0
    # k larger than the corpus: every matching document, no error
    assert index.search("pump valve seal", k=1000).ids == ["d2", "d1", "d4"]
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search("pump", k=0)


def test_ties_break_by_corpus_position_even_at_the_cut_off():
    docs = [{"id": i, "text": "alpha beta"} for i in ("z", "m", "a")] + [{"id": "x", "text": "gamma"}]
    index = BM25Index.build(docs, fields=("text",))
    assert index.search("alpha", k=10).ids == ["z", "m", "a"]
    assert index.search("alpha", k=2).ids == ["z", "m"]
    assert index.search("alpha", k=1).ids == ["z"]


def test_search_many_equals_search():
    index = BM25Index.build(TINY)
    queries = ["pump", "", "valve seal", "membrane water filter"]
    for one, batch in zip(
        [index.search(q, k=3) for q in queries], index.search_many(queries, k=3), strict=True
    ):
        assert one.ids == batch.ids and np.array_equal(one.scores, batch.scores)
    assert index.search_many([], k=3) == []
    with pytest.raises(TypeError, match="list of query strings"):
        index.search_many("pump")


def test_stemmer_and_corpus_input(tmp_path):
    corpus = Corpus(
        root=tmp_path,
        patents=[
            Patent(id="P1", title="Cleaning machines", text="Washers with bubbles"),
            Patent(id="P2", title="Water treatment", text="Biological waste"),
        ],
    )
    plain = BM25Index.build(corpus)
    stemmed = BM25Index.build(corpus, stemmer="english")
    assert plain.search("cleaned machine", k=5).ids == []
    assert stemmed.search("cleaned machine", k=5).ids == ["P1"]
    assert stemmed.tokenize(["The washers, cleaning!"]) == [["washer", "clean"]]
    with pytest.raises(ValueError, match="unknown stemmer language 'klingon'"):
        BM25Index.build(corpus, stemmer="klingon")


def test_build_errors():
    with pytest.raises(ValueError, match="unknown BM25 method 'okapi'"):
        BM25Index.build(TINY, method="okapi")
    with pytest.raises(ValueError, match="duplicate document id 'd1'"):
        BM25Index.build(TINY + [{"id": "d1", "text": "x"}])
    with pytest.raises(ValueError, match="document 1 has no 'id' key"):
        BM25Index.build([{"id": "a", "text": "pump"}, {"text": "valve"}])
    with pytest.raises(ValueError, match="no document has an indexable token"):
        BM25Index.build([{"id": "a", "text": "the of"}])
    with pytest.raises(ValueError, match="over no documents"):
        BM25Index.build([])


@pytest.mark.parametrize("method,stemmer", [("lucene", None), ("bm25+", "english"), ("robertson", None)])
def test_save_load_round_trip(tmp_path, method, stemmer):
    index = BM25Index.build(TINY, method=method, stemmer=stemmer, k1=1.5, b=0.6)
    index.save(tmp_path / "idx")
    params = json.loads((tmp_path / "idx" / PARAMS_FILE).read_text())
    assert params["doc_ids"] == ["d1", "d2", "d3", "d4"]
    assert (params["k1"], params["b"], params["method"], params["stemmer"]) == (1.5, 0.6, method, stemmer)
    assert params["fields"] == ["title", "text"] and params["stopwords"] == "en"
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.params() == index.params()
    for query in ["pump", "valves sealing", "membrane water pump", "the"]:
        a, b = index.search(query, k=10), loaded.search(query, k=10)
        assert a.ids == b.ids and np.array_equal(a.scores, b.scores)
    with pytest.raises(FileNotFoundError, match=f"not a BM25 index: {PARAMS_FILE} not found"):
        BM25Index.load(tmp_path)


# ---------------------------------------------------------------------------------------------
# Against rank_bm25 on the real PatSnap corpus (2,244 patents, 30 citing patents as queries)
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def patsnap():
    path = PATSNAP / "patsnap_docs.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = [{"id": r["doc_id"], "title": r["title"], "text": r["abstract"]} for r in rows]
    by_id = {d["id"]: d for d in docs}
    citing = []
    for line in (PATSNAP / "in_corpus_citation_pairs.tsv").read_text().splitlines()[1:]:
        doc = by_id[line.split("\t")[0]]
        if doc["text"] and doc["id"] not in citing:
            citing.append(doc["id"])
    queries = [by_id[i]["title"] + "\n" + by_id[i]["text"] for i in sorted(citing)[:30]]
    assert len(docs) == 2244 and len(queries) == 30
    return docs, queries


def _lucene_okapi():
    from rank_bm25 import BM25Okapi

    class LuceneIdfOkapi(BM25Okapi):
        """rank_bm25's BM25Okapi with only the idf replaced by Lucene's log(1 + (N - n + .5) / (n + .5))."""

        def _calc_idf(self, nd):
            self.idf = {w: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for w, n in nd.items()}

    return LuceneIdfOkapi


def _reference(method, corpus_tokens, k1, b):
    rank_bm25 = pytest.importorskip("rank_bm25")
    if method == "lucene":  # BM25Okapi's tf part carries a constant (k1 + 1) factor
        return _lucene_okapi()(corpus_tokens, k1=k1, b=b), 1 / (k1 + 1)
    if method == "robertson":
        return rank_bm25.BM25Okapi(corpus_tokens, k1=k1, b=b, epsilon=0.0), 1 / (k1 + 1)
    if method == "bm25+":
        return rank_bm25.BM25Plus(corpus_tokens, k1=k1, b=b, delta=0.5), 1.0
    raise AssertionError(method)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+"])
def test_top100_matches_rank_bm25_on_patsnap(patsnap, method):
    docs, queries = patsnap
    index = BM25Index.build(docs, method=method, delta=0.5)
    corpus_tokens = index.tokenize([d["title"] + "\n" + d["text"] for d in docs])
    ref, scale = _reference(method, corpus_tokens, index.k1, index.b)
    position = {d: i for i, d in enumerate(index.doc_ids)}
    k, rtol = 100, 1e-4
    for query, ours in zip(queries, index.search_many(queries, k=k), strict=True):
        want = np.asarray(ref.get_scores(index.tokenize([query])[0])) * scale
        assert len(ours) == k
        got_ref = want[[position[d] for d in ours.ids]]
        # every returned score is the reference score of that document
        np.testing.assert_allclose(ours.scores, got_ref, rtol=rtol)
        # the returned scores are the reference's 100 best, in order
        np.testing.assert_allclose(ours.scores, np.sort(want)[::-1][:k], rtol=rtol)
        # so the lists agree up to permutations among (near-)equal scores; no clearly better document is left out
        threshold = ours.scores[-1] * (1 + rtol)
        assert {index.doc_ids[i] for i in np.flatnonzero(want > threshold)} <= set(ours.ids)
