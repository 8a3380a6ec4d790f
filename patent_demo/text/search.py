"""Text prior-art search as evaluated and served: BM25 top-K, then the cross-encoder re-ranks the head.

The same two functions serve training (evaluation before/after), the ablation runner, the
benchmarks and the app, so the candidate text and the merge of a re-ranked head with the BM25 tail
cannot drift apart:

* :func:`candidate_text`: what the encoder reads for a patent, ``"<title>. <abstract>"``;
* :func:`rerank_run`: for each query, BM25 top ``k_first`` (the query patent itself left out),
  the first ``k_rerank`` re-scored by the re-ranker and sorted by its score, the rest kept in BM25
  order below them. With ``k_rerank < k_first`` the metrics at a cut-off ``k <= k_rerank`` measure
  the re-ranker alone, while Recall@k_rerank is BM25's by construction.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.results import Results
from patent_demo.text.bm25 import BM25Index


class TextReranker(Protocol):
    """``rank(query, [(id, text, codes)], query_codes, batch_size) -> Results`` (``patent_demo.text.reranker``)."""

    def rank(
        self,
        query_text: str,
        candidates: Sequence[tuple[str, str, Any]],
        query_codes: Any = None,
        batch_size: int = 32,
    ) -> Results: ...


@dataclass(frozen=True)
class TextQuery:
    """One text query: ``codes`` map a scheme to codes like ``Patent.codes``; ``exclude`` ids never
    returned for it (the query patent itself when it is part of the library)."""

    qid: str
    text: str
    codes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    exclude: frozenset[str] = frozenset()


def candidate_text(patent: Patent) -> str:
    """The text a patent is encoded with: ``"<title>. <text>"`` with outer dots and spaces stripped
    (either part may be empty). The app and the training scripts both use it."""
    return f"{patent.title}. {patent.text}".strip(". ")


def patent_query(patent: Patent) -> TextQuery:
    """A patent as a query against a library that holds it: its title and abstract, its codes, itself
    excluded from its results."""
    return TextQuery(
        qid=patent.id, text=candidate_text(patent), codes=dict(patent.codes), exclude=frozenset({patent.id})
    )


def first_stage(
    bm25: BM25Index,
    queries: Sequence[TextQuery],
    k: int = 1000,
    allowed: Mapping[str, Collection[str]] | None = None,
    term_weights: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Results]:
    """BM25 top ``k`` per query (``{qid: Results}``), each query's ``exclude`` ids removed first.
    ``allowed`` maps a qid to the only ids its search may return (a filter or prior-art cut-off,
    applied inside BM25 so k come back whenever k allowed documents match). ``term_weights`` (qid ->
    ``{term: weight}``, an expanded query of ``patent_demo.text.expansion``) replaces those queries' text."""
    extra = max((len(q.exclude) for q in queries), default=0)
    if allowed or term_weights:
        allowed, term_weights = allowed or {}, term_weights or {}
        found = [
            bm25.search_weighted(term_weights[q.qid], k=k + extra, allowed=allowed.get(q.qid))
            if q.qid in term_weights
            else bm25.search(q.text, k=k + extra, allowed=allowed.get(q.qid))
            for q in queries
        ]
    else:
        found = bm25.search_many([q.text for q in queries], k=k + extra)
    out = {}
    for q, res in zip(queries, found, strict=True):
        keep = [i for i, d in enumerate(res.ids) if d not in q.exclude][:k]
        out[q.qid] = Results([res.ids[i] for i in keep], res.scores[keep])
    return out


def merge_head(first: Results, reranked: Results, rank_key: str = "bm25_rank") -> Results:
    """``reranked`` (a re-scored head of ``first``, best first) followed by the rest of ``first`` in
    its first-stage order. Scores: the head keeps its re-ranker scores shifted above the tail; the tail
    gets ``1 - r / (n + 1)`` by first-stage position ``r`` (so the result is a valid descending
    ``Results``). Head extras gain ``rank_key`` (the position in ``first``); tail extras are
    ``{rank_key: r}``; both keep ``first``'s own extras (a hybrid pool's ``bm25_rank``/``dense_rank``)."""
    first_extras = dict(zip(first.ids, first.extras, strict=True)) if first.extras else {}
    bm25_rank = {d: r for r, d in enumerate(first.ids, 1)}
    head = set(reranked.ids)
    tail = [d for d in first.ids if d not in head]
    n = len(tail)
    tail_scores = np.array([1.0 - (i + 1) / (n + 1) for i in range(n)], dtype=np.float64)
    head_scores = reranked.scores.astype(np.float64)
    if len(head_scores):
        head_scores = head_scores - head_scores.min() + 1.0  # lowest head score 1 > every tail score
    extras = [
        {**(first_extras.get(d) or {}), **(e or {}), rank_key: bm25_rank[d]}
        for d, e in zip(reranked.ids, reranked.extras or [None] * len(reranked), strict=True)
    ]
    extras += [{**(first_extras.get(d) or {}), rank_key: bm25_rank[d]} for d in tail]
    return Results(list(reranked.ids) + tail, np.concatenate([head_scores, tail_scores]), extras)


def rerank_run(
    bm25: BM25Index,
    reranker: TextReranker | None,
    queries: Sequence[TextQuery],
    library: Corpus | Mapping[str, Patent],
    k_first: int = 1000,
    k_rerank: int | None = None,
    batch_size: int = 64,
    keep_extras: bool = False,
    allowed: Mapping[str, Collection[str]] | None = None,
) -> dict[str, Results]:
    """A run ``{qid: Results}``: BM25 top ``k_first`` with its first ``k_rerank`` (default: all)
    re-ranked by ``reranker`` (``None``: plain BM25). Candidate texts and codes come from ``library``.
    ``keep_extras`` keeps the re-ranker's per-candidate extras (gate values...); off, only
    ``bm25_rank`` is kept, which saves memory on long runs. ``allowed``: see :func:`first_stage`."""
    if k_first < 1:
        raise ValueError(f"k_first must be >= 1; got {k_first}")
    k_rerank = k_first if k_rerank is None else k_rerank
    if not 0 <= k_rerank <= k_first:
        raise ValueError(f"k_rerank must lie in [0, k_first={k_first}]; got {k_rerank}")
    first = first_stage(bm25, queries, k=k_first, allowed=allowed)
    if reranker is None or k_rerank == 0:
        return first
    return rerank_first(first, reranker, queries, library, k_rerank, batch_size, keep_extras)


def rerank_first(
    first: Mapping[str, Results],
    reranker: TextReranker,
    queries: Sequence[TextQuery],
    library: Corpus | Mapping[str, Patent],
    k_rerank: int,
    batch_size: int = 64,
    keep_extras: bool = False,
    rank_key: str = "bm25_rank",
) -> dict[str, Results]:
    """Each query's first-stage list ``first[qid]`` (BM25, dense or hybrid) with its top ``k_rerank``
    re-scored by ``reranker`` and merged above the rest (:func:`merge_head`, the position in the pool
    kept under ``rank_key``)."""
    run = {}
    for q in queries:
        res = first[q.qid]
        head = res.ids[:k_rerank]
        cands = [(d, candidate_text(library[d]), library[d].codes) for d in head]
        ranked = reranker.rank(q.text, cands, query_codes=q.codes, batch_size=batch_size)
        if not keep_extras:
            ranked = Results(ranked.ids, ranked.scores)
        run[q.qid] = merge_head(res, ranked, rank_key)
    return run
