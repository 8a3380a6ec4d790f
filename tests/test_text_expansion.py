"""RM3 over BM25 (``patent_demo.text.expansion``) on a hand-made case worked out on paper, and the weighted
BM25 query it searches with (``BM25Index.search_weighted``, ``first_stage``'s ``term_weights``).

Tests: patent_demo/text/expansion.py, patent_demo/text/bm25.py, patent_demo/text/search.py
"""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.text.bm25 import BM25Index
from patent_demo.text.expansion import RM3, expanded_queries, relevance_model, rm3_weights
from patent_demo.text.search import TextQuery, first_stage

DOCS = [
    {"id": "a", "title": "folding chair", "text": "a folding chair with a hinged seat and a backrest"},
    {"id": "b", "title": "hinge", "text": "a hinge with a spring pin for a folding table"},
    {"id": "c", "title": "lamp", "text": "a desk lamp with an adjustable arm"},
    {"id": "d", "title": "seat", "text": "a hinged seat and backrest of a stadium bench"},
]


@pytest.fixture(scope="module")
def index() -> BM25Index:
    return BM25Index.build(DOCS)


def test_relevance_model_and_rm3_weights_by_hand(index):
    # doc a, stopwords out: folding chair folding chair hinged seat backrest (7 tokens)
    assert relevance_model(index, [DOCS[0]]) == pytest.approx(
        {"folding": 2 / 7, "chair": 2 / 7, "hinged": 1 / 7, "seat": 1 / 7, "backrest": 1 / 7}
    )
    # top 4 terms: chair, folding (2/7), then backrest, hinged (1/7; ties alphabetical): mass 6/7
    w = rm3_weights(index, "folding chair", [DOCS[0]], RM3(terms=4, original=0.5))
    assert w == pytest.approx(
        {"folding": 0.5 * 0.5 + 0.5 / 3, "chair": 0.5 * 0.5 + 0.5 / 3, "backrest": 0.5 / 6, "hinged": 0.5 / 6}
    )
    assert sum(w.values()) == pytest.approx(1.0)
    # two relevant documents: the mean of their distributions (doc d: hinged seat backrest seat stadium bench)
    model = relevance_model(index, [DOCS[0], DOCS[3]])
    assert model["seat"] == pytest.approx((1 / 7 + 2 / 6) / 2) and model["stadium"] == pytest.approx(1 / 12)
    # no relevant document: the original query alone
    assert rm3_weights(index, "folding chair chair", []) == pytest.approx({"folding": 1 / 3, "chair": 2 / 3})


def test_the_expanded_query_finds_what_the_plain_query_cannot(index):
    plain = index.search("folding chair", k=10)
    assert "d" not in plain.ids  # d shares no term with the query
    w = rm3_weights(index, "folding chair", [DOCS[0]], RM3(terms=4, original=0.5))
    expanded = index.search_weighted(w, k=10)
    assert expanded.ids[0] == "a" and "d" in expanded.ids and "c" not in expanded.ids


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_integer_weights_score_as_the_repeated_query(method):
    idx = BM25Index.build(DOCS, method=method)
    plain = idx.search("folding chair chair seat", k=10)
    weighted = idx.search_weighted({"folding": 1, "chair": 2, "seat": 1, "unknownterm": 3, "lamp": 0}, k=10)
    assert weighted.ids == plain.ids
    np.testing.assert_allclose(weighted.scores, plain.scores, rtol=1e-5)
    assert idx.search_weighted({"unknownterm": 1.0}).ids == []
    assert idx.search_weighted(dict.fromkeys(["folding"], 1.0), allowed={"b"}).ids == ["b"]


def test_expanded_queries_only_for_queries_with_a_relevant_label(index):
    library = {d["id"]: d for d in DOCS}
    queries = [TextQuery("q1", "folding chair", exclude=frozenset({"a"})), TextQuery("q2", "desk lamp")]
    labels = {"q1": {"a": 1, "c": 0, "zz": 1}, "q2": {"c": "not"}}
    weights = expanded_queries(index, queries, labels, library, RM3(terms=4, original=0.5))
    assert set(weights) == {"q1"}  # q2 has only a not-relevant label; zz is no patent of the library
    assert weights["q1"] == pytest.approx(rm3_weights(index, "folding chair", [DOCS[0]], RM3(4, 0.5)))
    runs = first_stage(index, queries, k=3, term_weights=weights)
    assert "a" not in runs["q1"].ids and "d" in runs["q1"].ids  # the query patent stays out
    assert runs["q2"].ids == first_stage(index, queries, k=3)["q2"].ids  # unlabelled: as before


def test_rm3_settings_are_checked():
    with pytest.raises(ValueError, match="at least one expansion term"):
        RM3(terms=0)
    with pytest.raises(ValueError, match=r"lies in \[0, 1\]"):
        RM3(original=1.5)
