"""Every text result list, made one way for the app, the API, ``patent-demo search/evaluate text`` and
the training scripts:

* ``bm25``: BM25 top k (``patent_demo.text.bm25``);
* ``dense``: the bi-encoder's top k by cosine (``patent_demo.text.dense``);
* ``hybrid``: BM25 and dense fused (``patent_demo.text.hybrid``, settings chosen on validation);
* ``dssdnet``: the hybrid top ``k_rerank`` re-scored by a DSSDNet cross-encoder, the rest below (each
  candidate's own re-ranker score in ``Results.rerank_scores``);
* ``fused``: the hybrid and DSSDNet scores of that head fused with the checkpoint's tuned weight
  (``patent_demo.text.fusion.score_fusion``).

Every query's ``exclude`` ids (the query patent itself) are left out, and ``allowed`` (qid -> ids; the
app's filters and prior-art cut-offs) restricts each first stage before its top k is taken.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.index.dense import DenseIndex
from patent_demo.results import Results
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.hybrid import HybridSettings, hybrid_run
from patent_demo.text.search import TextQuery, TextReranker, first_stage, rerank_first

LISTS = ("bm25", "dense", "hybrid", "dssdnet", "fused")
TITLES = {
    "bm25": "BM25",
    "dense": "Dense (MiniLM bi-encoder)",
    "hybrid": "Hybrid: BM25 + dense (the re-ranked pool)",
    "dssdnet": "DSSDNet re-ranking of the hybrid pool",
    "fused": "Fused: hybrid + DSSDNet scores",
}
FIRST_STAGES = ("bm25", "dense", "hybrid")


@dataclass
class FirstStage:
    """What the first stages need: the BM25 index, and (for dense and hybrid) the dense index with the
    encoder that made it (``TextEncoder``: ``encode(texts) -> [N, D]``) and the hybrid settings; ``backend``
    (``patent_demo.backends``, e.g. a Qdrant collection of the dense index) answers the dense list instead
    of the FAISS index when the runs are given the filters as values (``where``)."""

    bm25: BM25Index
    dense: DenseIndex | None = None
    encoder: object | None = None
    hybrid: HybridSettings = HybridSettings()
    backend: object | None = None


def first_stage_runs(
    stage: FirstStage,
    queries: Sequence[TextQuery],
    k: int,
    names: Collection[str] = FIRST_STAGES,
    allowed: Mapping[str, Collection[str]] | None = None,
    query_vectors=None,
    where=None,
    term_weights=None,
) -> dict[str, dict[str, Results]]:
    """``{name: {qid: Results}}`` for the first stages in ``names`` (top ``k`` each; the hybrid fuses
    both stages' top ``max(k, hybrid.depth)``). ``query_vectors`` ``[Q, D]`` skip encoding the queries
    (relevance feedback passes the refined ones, ``patent_demo.text.feedback``); ``term_weights`` (qid ->
    ``{term: weight}``) search those queries' BM25 with an expanded query (``patent_demo.text.expansion``).
    ``where`` (qid -> ``patent_demo.backends.Where``, the filters ``allowed`` was made from) sends the dense
    search to ``stage.backend`` with the filters inside it (each query's ``exclude`` ids left out too)."""
    from patent_demo.text.dense import dense_search

    unknown = set(names) - set(FIRST_STAGES)
    if unknown:
        raise ValueError(f"unknown first stage(s) {sorted(unknown)}; choose from {FIRST_STAGES}")
    depth = max(k, stage.hybrid.depth) if "hybrid" in names else k
    out: dict[str, dict[str, Results]] = {}
    if {"bm25", "hybrid"} & set(names):
        bm = first_stage(
            stage.bm25, queries, k=min(depth, len(stage.bm25)), allowed=allowed, term_weights=term_weights
        )
        if "bm25" in names:
            out["bm25"] = {q: r.top(k) for q, r in bm.items()}
    if {"dense", "hybrid"} & set(names):
        if stage.dense is None or (stage.encoder is None and query_vectors is None):
            raise ValueError("the dense and hybrid lists need a dense index and its encoder")
        vecs = query_vectors if query_vectors is not None else stage.encoder.encode([q.text for q in queries])
        if stage.backend is not None and where is not None:
            from dataclasses import replace

            from patent_demo.backends import Where

            def one(q, v):
                w = where.get(q.qid) or Where()
                w = replace(w, own=(*w.own, *sorted(q.exclude))) if q.exclude else w
                return stage.backend.search(v, min(depth, stage.dense.count), w, per_patent=False)

            dn = {q.qid: one(q, v) for q, v in zip(queries, vecs, strict=True)}
        else:
            dn = dense_search(
                stage.dense,
                vecs,
                [q.qid for q in queries],
                min(depth, stage.dense.count),
                exclude={q.qid: q.exclude for q in queries},
                allowed=allowed,
            )
        if "dense" in names:
            out["dense"] = {q: r.top(k) for q, r in dn.items()}
        if "hybrid" in names:
            out["hybrid"] = hybrid_run(bm, dn, stage.hybrid, k)
    return out


def text_runs(
    stage: FirstStage,
    queries: Sequence[TextQuery],
    library: Corpus | Mapping[str, Patent],
    k: int,
    names: Collection[str] = LISTS,
    reranker: TextReranker | None = None,
    k_rerank: int = 100,
    fusion_weight: float | None = None,
    pool: str = "hybrid",
    allowed: Mapping[str, Collection[str]] | None = None,
    batch_size: int = 64,
    keep_extras: bool = False,
    query_vectors=None,
    where=None,
    term_weights=None,
) -> dict[str, dict[str, Results]]:
    """``{name: run}`` for each list of ``names`` (see the module docstring). ``dssdnet`` and ``fused``
    re-rank the ``pool`` list's top ``k_rerank`` with ``reranker``; ``fused`` needs ``fusion_weight``
    (the pool's share, tuned on validation; ``patent_demo.text.fusion.checkpoint_fusion_weight``); ``where``,
    ``query_vectors`` and ``term_weights`` as in :func:`first_stage_runs`."""
    from patent_demo.text.fusion import fuse_run

    names = list(names)
    unknown = set(names) - set(LISTS)
    if unknown:
        raise ValueError(f"unknown text list(s) {sorted(unknown)}; choose from {LISTS}")
    rerank = [n for n in names if n in ("dssdnet", "fused")]
    if rerank and reranker is None:
        raise ValueError(f"the {' and '.join(rerank)} list needs a re-ranker (a DSSDNet checkpoint)")
    if "fused" in names and fusion_weight is None:
        raise ValueError(
            "the fused list needs a fusion weight tuned on validation; this checkpoint records none"
        )
    needed = {n for n in names if n in FIRST_STAGES} | ({pool} if rerank else set())
    depth = max(k, k_rerank) if rerank else k
    first = first_stage_runs(
        stage,
        queries,
        depth,
        needed,
        allowed=allowed,
        query_vectors=query_vectors,
        where=where,
        term_weights=term_weights,
    )
    out = {n: {q: r.top(k) for q, r in first[n].items()} for n in names if n in FIRST_STAGES}
    if rerank:
        head = rerank_first(
            first[pool],
            _Scored(reranker),
            queries,
            library,
            k_rerank,
            batch_size,
            keep_extras=True,
            rank_key="pool_rank",
        )
        reranked = {}
        for q, res in head.items():
            n_head = min(k_rerank, len(first[pool][q]))
            extras = [dict(e) for e in res.extras[:n_head]]
            scores = [e.pop(_Scored.KEY) for e in extras]
            if not keep_extras:
                extras = [{kk: e.get(kk) for kk in ("bm25_rank", "dense_rank", "pool_rank")} for e in extras]
            reranked[q] = Results.from_unsorted(res.ids[:n_head], scores, extras)
        if "dssdnet" in names:
            keep = ("bm25_rank", "dense_rank", "pool_rank")
            out["dssdnet"] = {
                q: Results(
                    res.ids,
                    res.scores,
                    [
                        {kk: v for kk, v in e.items() if kk != _Scored.KEY and (keep_extras or kk in keep)}
                        for e in res.extras
                    ],
                    [e.get(_Scored.KEY, s) for e, s in zip(res.extras, res.scores.tolist(), strict=True)],
                ).top(k)
                for q, res in head.items()
            }  # the re-ranker's own scores: ``rerank_scores``
        if "fused" in names:
            out["fused"] = {
                q: r.top(k)
                for q, r in fuse_run(first[pool], reranked, fusion_weight, rank_key="pool_rank").items()
            }
    return out


class _Scored:
    """A re-ranker whose extras also keep each candidate's own score (``merge_head`` shifts the head's)."""

    KEY = "_rerank_score"

    def __init__(self, reranker: TextReranker) -> None:
        self.reranker = reranker

    def rank(self, query_text, candidates, query_codes=None, batch_size: int = 32) -> Results:
        res = self.reranker.rank(query_text, candidates, query_codes=query_codes, batch_size=batch_size)
        extras = res.extras or [{}] * len(res)
        return Results(
            res.ids,
            res.scores,
            [{**(e or {}), self.KEY: float(v)} for e, v in zip(extras, res.scores, strict=True)],
        )
