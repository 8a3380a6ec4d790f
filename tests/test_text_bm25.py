"""Query-term pruning, the numba scorer and the sharded scorer of ``BM25Index`` (the BM25-at-a-million bench's options) on a
hand-built corpus whose document frequencies are known.

Tests: patent_demo/text/bm25.py, patent_demo/text/bm25_shards.py
"""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.text.bm25 import BM25Index

DOCS = [  # df: chair 4, seat 3, leg 2, armrest 1, swivel 1
    {"id": "A", "text": "chair seat leg armrest"},
    {"id": "B", "text": "chair seat leg"},
    {"id": "C", "text": "chair seat"},
    {"id": "D", "text": "chair swivel"},
    {"id": "E", "text": "table top"},
]


@pytest.fixture(scope="module")
def index():
    return BM25Index.build(DOCS, fields=("text",))


def test_pruning_keeps_the_rarest_terms(index):
    query = "chair seat chair leg armrest"
    ids = index._token_ids(index.tokenize([query])[0])
    kept = index.prune(ids, 2)
    vocab = {v: k for k, v in index.retriever.vocab_dict.items()}
    assert [vocab[t] for t in kept] == ["leg", "armrest"]  # df 2 and 1; chair (4) and seat (3) go
    assert index.search(query, k=5, max_terms=2).ids == index.search("leg armrest", k=5).ids == ["A", "B"]
    full = index.search(query, k=5)
    same = index.search(query, k=5, max_terms=4)  # as many terms as the query has: nothing pruned
    assert same.ids == full.ids == ["A", "B", "C", "D"] and np.array_equal(same.scores, full.scores)
    with pytest.raises(ValueError, match="max_terms must be >= 1"):
        index.search(query, max_terms=0)


def test_the_numba_scorer_gives_the_same_scores():
    pytest.importorskip("numba")
    plain, fast = BM25Index.build(DOCS, fields=("text",)), BM25Index.build(DOCS, fields=("text",))
    fast.use_numba()
    for query in ("chair seat chair leg armrest", "swivel chair", "table"):
        a, b = plain.search(query, k=5), fast.search(query, k=5)
        assert a.ids == b.ids and np.allclose(a.scores, b.scores, rtol=0, atol=1e-6)


def _random_docs(n: int, seed: int) -> list[dict]:
    """``n`` short documents over 40 words with a Zipf-like law: many equal scores, many ties."""
    rng = np.random.default_rng(seed)
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
    p = 1.0 / np.arange(1, 41)
    p /= p.sum()
    return [
        {"id": f"D{i}", "text": " ".join(rng.choice(words, size=rng.integers(1, 9), p=p))} for i in range(n)
    ]


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_the_sharded_scorer_gives_the_same_lists_and_scores_bit_for_bit(method):
    pytest.importorskip("numba")
    docs = _random_docs(3_000, 0)
    plain = BM25Index.build(docs, fields=("text",), method=method)
    queries = [d["text"] + " " + docs[i + 1]["text"] for i, d in enumerate(docs[:40])] + [
        "waa wab waa",
        "wzz",
    ]
    allowed = frozenset(d["id"] for d in docs[::3])
    expected = {
        (k, a): plain.search_many(queries, k=k, allowed=a) for k in (1, 7, 100, 5000) for a in (None, allowed)
    }
    for shards in (1, 2, 3, 7):
        fast = BM25Index.build(docs, fields=("text",), method=method)
        fast.use_numba(shards=shards)
        for (k, a), want in expected.items():
            for w, got in zip(want, fast.search_many(queries, k=k, allowed=a), strict=True):
                assert got.ids == w.ids, (shards, k)
                assert np.array_equal(got.scores, w.scores), (shards, k)


def test_shards_must_be_positive():
    pytest.importorskip("numba")
    with pytest.raises(ValueError, match="shards must be >= 1"):
        BM25Index.build(DOCS, fields=("text",)).use_numba(shards=0)
