"""``train/text/rerank_eval.py``: a shallower re-ranking is the deeper one's pointwise scores cut to the
shallower pool, merged ahead of the rest of the first stage."""

import pytest

from patent_demo.results import Results
from patent_demo.text.search import merge_head
from train.text.rerank_eval import _head_at


def test_head_at_keeps_the_scores_of_the_shallower_pool_only():
    first = Results.from_unsorted(["a", "b", "c", "d", "e"], [0.9, 0.8, 0.7, 0.6, 0.5])
    deep = Results.from_unsorted(["a", "b", "c", "d"], [0.1, 0.4, 0.9, 0.3])  # the top 4 re-scored
    head = _head_at(deep, first, 2)
    assert head.ids == ["b", "a"] and head.scores.tolist() == pytest.approx([0.4, 0.1])
    merged = merge_head(first, head, "pool_rank")
    # c scored highest at depth 4, but at depth 2 it is not re-ranked: it keeps its first-stage place
    assert merged.ids == ["b", "a", "c", "d", "e"]
    assert [e["pool_rank"] for e in merged.extras] == [2, 1, 3, 4, 5]
    assert _head_at(deep, first, 4).ids == ["c", "b", "d", "a"]
