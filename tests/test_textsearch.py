"""Tests: patent_demo/text/search.py"""

import numpy as np
import pytest

from patent_demo.data.corpus import Patent
from patent_demo.results import Results
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.search import (
    TextQuery,
    candidate_text,
    first_stage,
    merge_head,
    patent_query,
    rerank_run,
)

LIBRARY = {
    p.id: p
    for p in [
        Patent(id="D1", title="Folding chair", text="A chair that folds flat.", codes={"ipc": ["A47C 4/04"]}),
        Patent(
            id="D2", title="Chair", text="An office chair with a chair back.", codes={"ipc": ["A47C 7/02"]}
        ),
        Patent(id="D3", title="Lamp", text="A lamp with a chair-shaped base.", codes={"ipc": ["F21V 1/00"]}),
        Patent(id="D4", title="Table", text="A folding table.", codes={}),
    ]
}


class ReverseAlphabet:
    """A stand-in re-ranker: scores candidates by their id, last id first, and records its inputs."""

    def __init__(self):
        self.calls = []

    def rank(self, query_text, candidates, query_codes=None, batch_size=32):
        self.calls.append((query_text, [c[0] for c in candidates], query_codes, batch_size))
        return Results.from_unsorted(
            [c[0] for c in candidates], [int(c[0][1:]) for c in candidates], [{"x": c[0]} for c in candidates]
        )


def bm25():
    return BM25Index.build(LIBRARY.values())


def test_candidate_text_and_patent_query():
    # as the app's Workbench.candidate_text: outer dots and spaces stripped
    assert candidate_text(LIBRARY["D1"]) == "Folding chair. A chair that folds flat"
    assert candidate_text(Patent(id="X", title="Chair", text="")) == "Chair"
    assert candidate_text(Patent(id="X", title="", text="")) == ""
    q = patent_query(LIBRARY["D2"])
    assert (q.qid, q.exclude, q.codes) == ("D2", frozenset({"D2"}), {"ipc": ["A47C 7/02"]})


def test_first_stage_excludes_the_query_patent():
    index = bm25()
    plain = index.search("chair", k=3).ids
    assert plain == ["D2", "D1", "D3"]
    run = first_stage(index, [patent_query(LIBRARY["D2"]), TextQuery("q", "chair")], k=2)
    assert run["D2"].ids[:2] == ["D1", "D3"] and "D2" not in run["D2"].ids
    assert run["q"].ids == ["D2", "D1"]


def test_rerank_run_reranks_the_head_and_keeps_the_tail():
    reranker = ReverseAlphabet()
    q = TextQuery("q", "chair", codes={"ipc": ["A47C 1/00"]})
    run = rerank_run(bm25(), reranker, [q], LIBRARY, k_first=3, k_rerank=2, batch_size=7)
    assert reranker.calls == [("chair", ["D2", "D1"], {"ipc": ["A47C 1/00"]}, 7)]
    assert run["q"].ids == ["D2", "D1", "D3"]
    assert [e["bm25_rank"] for e in run["q"].extras] == [1, 2, 3]
    assert "x" not in run["q"].extras[0]
    kept = rerank_run(bm25(), ReverseAlphabet(), [q], LIBRARY, k_first=3, keep_extras=True)
    assert kept["q"].ids == ["D3", "D2", "D1"] and kept["q"].extras[0] == {"x": "D3", "bm25_rank": 3}
    assert rerank_run(bm25(), None, [q], LIBRARY, k_first=2)["q"].ids == ["D2", "D1"]
    with pytest.raises(ValueError, match=r"k_rerank must lie in \[0, k_first=3\]; got 4"):
        rerank_run(bm25(), reranker, [q], LIBRARY, k_first=3, k_rerank=4)


def test_merge_head():
    first = Results(["d1", "d2", "d3", "d4"], [4.0, 3.0, 2.0, 1.0])
    merged = merge_head(first, Results(["d2", "d1"], [0.9, 0.2]))
    assert merged.ids == ["d2", "d1", "d3", "d4"]
    assert [e["bm25_rank"] for e in merged.extras] == [2, 1, 3, 4]
    np.testing.assert_allclose(merged.scores, [1.7, 1.0, 2 / 3, 1 / 3], rtol=1e-6)
