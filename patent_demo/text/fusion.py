"""Fusing ranked lists: reciprocal rank fusion of a drawing list and a text list (the Combined tab),
and the score fusion of BM25 and the DSSDNet re-ranker (the text tab's fused list: min-max normalised
scores, BM25's weight tuned on validation queries by :func:`tune_fusion_weight`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

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


# -- score fusion of BM25 and the re-ranker (the text tab's fused list) --------------------------------
FUSION_METRICS = ("recall@10", "map@10", "ndcg@10")
DEFAULT_FUSION_WEIGHT = 0.5  # BM25's share when a checkpoint records no tuned weight


def minmax(values) -> np.ndarray:
    """``(x - min) / (max - min)`` of one query's scores; all equal (or one value) -> zeros."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return x
    span = float(x.max() - x.min())
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def score_fusion(first: Results, reranked: Results, weight: float, rank_key: str = "bm25_rank") -> Results:
    """The fused list of one query: ``first`` is BM25's list (best first, BM25 scores) and ``reranked``
    the re-ranker's scores of its head (any order). Each head candidate scores
    ``weight * minmax(bm25) + (1 - weight) * minmax(reranker)`` (min-max over the head, so the scale of
    either score does not matter); the head is sorted by it and the rest of ``first`` follows in BM25
    order (``patent_demo.text.search.merge_head``). ``weight`` 1 is BM25's order, 0 the re-ranker's.
    Extras keep the re-ranker's and gain ``bm25_score``, ``fused`` and ``bm25_rank``."""
    from patent_demo.text.search import merge_head

    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"fusion weight must lie in [0, 1]; got {weight}")
    bm25 = dict(zip(first.ids, first.scores.tolist(), strict=True))
    head = [i for i, d in enumerate(reranked.ids) if d in bm25]
    ids = [reranked.ids[i] for i in head]
    if not ids:
        return merge_head(first, Results.empty(), rank_key)
    b = minmax([bm25[d] for d in ids])
    r = minmax(reranked.scores[head])
    fused = weight * b + (1.0 - weight) * r
    extras = reranked.extras or [None] * len(reranked)
    head_extras = [
        {**(extras[i] or {}), "bm25_score": bm25[d], "fused": float(f)}
        for i, d, f in zip(head, ids, fused, strict=True)
    ]
    # ties in the fused score keep BM25's order
    bm25_pos = {d: i for i, d in enumerate(first.ids)}
    order = sorted(range(len(ids)), key=lambda j: (-fused[j], bm25_pos[ids[j]]))
    ranked = Results([ids[j] for j in order], fused[order], [head_extras[j] for j in order])
    return merge_head(first, ranked, rank_key)


def fuse_run(
    first_run: Mapping[str, Results],
    reranked_run: Mapping[str, Results],
    weight: float,
    rank_key: str = "bm25_rank",
) -> dict[str, Results]:
    """:func:`score_fusion` for every query of ``reranked_run`` (``rank_key``: see ``merge_head``)."""
    return {q: score_fusion(first_run[q], reranked_run[q], weight, rank_key) for q in reranked_run}


def tune_fusion_weight(
    first_run: Mapping[str, Results],
    reranked_run: Mapping[str, Results],
    qrels: Mapping[str, Mapping[str, int]],
    weights: Sequence[float] | None = None,
    metrics: Sequence[str] = FUSION_METRICS,
) -> tuple[float, list[dict]]:
    """The BM25 weight (of ``weights``, default 0, 0.05, ..., 1) whose fused run has the best mean of
    ``metrics`` on ``qrels`` (validation queries: never the test split). Ties go to the larger BM25
    weight, the list closer to BM25. Returns the weight and a row per weight tried."""
    from patent_demo.metrics import evaluate_run

    weights = [round(w, 4) for w in (np.linspace(0.0, 1.0, 21) if weights is None else weights)]
    ks = sorted({int(m.split("@")[1]) for m in metrics})
    rows = []
    for w in weights:
        m = evaluate_run(fuse_run(first_run, reranked_run, w), qrels, ks)
        rows.append(
            {"weight": w, "objective": float(np.mean([m[k] for k in metrics])), **{k: m[k] for k in metrics}}
        )
    best = max(rows, key=lambda r: (round(r["objective"], 12), r["weight"]))
    return best["weight"], rows


def checkpoint_fusion_weight(directory) -> float:
    """The BM25 weight a re-ranker checkpoint recorded (``metrics.json`` ``fusion.weight``, tuned on its
    validation queries), else :data:`DEFAULT_FUSION_WEIGHT`."""
    import json
    from pathlib import Path

    if directory is None:
        return DEFAULT_FUSION_WEIGHT
    path = Path(directory) / "metrics.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("fusion", {}).get("weight")
    except (OSError, ValueError, AttributeError):
        return DEFAULT_FUSION_WEIGHT
    return float(value) if isinstance(value, (int, float)) and 0.0 <= value <= 1.0 else DEFAULT_FUSION_WEIGHT


def validated_depth(directory) -> int | None:
    """The re-rank depth a checkpoint chose on its validation queries (``metrics.json`` ``rerank_depth``,
    written by ``train/text/rerank_eval.py --write-depth``), or None when it records none."""
    import json
    from pathlib import Path

    if directory is None:
        return None
    try:
        entry = (
            json.loads((Path(directory) / "metrics.json").read_text(encoding="utf-8")).get("rerank_depth")
            or {}
        )
    except (OSError, ValueError, AttributeError):
        return None
    depth = entry.get("depth") if isinstance(entry, dict) else None
    return depth if isinstance(depth, int) and depth > 0 else None


def tuned_fusion_weight(directory, pool: str = "hybrid", k_rerank: int | None = None) -> float | None:
    """The fusion weight a re-ranker checkpoint tuned on its validation queries for first stage ``pool``
    re-ranked to depth ``k_rerank`` (``metrics.json`` ``fusion``: ``weight``, ``pool`` (default
    ``bm25``), ``k_rerank``; or ``fusion_pools["<pool>@<k_rerank>"]``, written by ``train/text/rerank_eval.py``),
    or None when it records none for that pool and depth (the caller says so)."""
    import json
    from pathlib import Path

    if directory is None:
        return None
    try:
        metrics = json.loads((Path(directory) / "metrics.json").read_text(encoding="utf-8"))
        fusion = (metrics.get("fusion_pools") or {}).get(f"{pool}@{k_rerank}", metrics.get("fusion") or {})
    except (OSError, ValueError, AttributeError):
        return None
    value = fusion.get("weight")
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        return None
    if fusion.get("pool", "bm25") != pool or (k_rerank is not None and fusion.get("k_rerank") != k_rerank):
        return None
    return float(value)
