"""Fusing ranked lists: reciprocal rank fusion of a drawing list and a text list (the Combined tab)."""

from __future__ import annotations

from collections.abc import Mapping

from patent_demo.results import Results

RRF_K = 60


def reciprocal_rank_fusion(lists: Mapping[str, Results], k: int = RRF_K, top: int | None = None) -> Results:
    """Reciprocal rank fusion (Cormack et al. 2009): ``score(d) = sum_l 1 / (k + rank_l(d))``, ranks from 1.

    Each extra holds ``ranks`` {list name: rank in that list}. Ties keep first-seen order over the
    lists in the order given.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, res in lists.items():
        for r, doc in enumerate(res.ids, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + r)
            ranks.setdefault(doc, {})[name] = r
    ids = list(scores)
    fused = Results.from_unsorted(ids, [scores[d] for d in ids], [{"ranks": ranks[d]} for d in ids])
    return fused if top is None else fused.top(top)
