"""Relevance feedback measured on the residual collection (``patent-demo evaluate drawings --feedback-depth``,
``python -m train.feedback.drawings``).

An examiner is simulated from the corpus's classification: of a query's top ``depth`` hits, one is
relevant when it shares the query's subclass (or is of the query's own patent), else not relevant. The query
is refined with those labels (``patent_demo.search.feedback.refine``, the hits' own vectors) and ranked again; a
second round judges the next ``depth`` unjudged hits of the refined list and refines the original query
with every label so far. Each round is scored on the *residual collection*: every hit judged so far is
removed from both the list before feedback and the refined list (``drawing_metrics(exclude=...)``), so the
gain is on what the examiner has not seen yet, at patent, subclass and main-class level, with a paired
bootstrap over query patents (``patent_demo.metrics.paired_bootstrap``). The gain is "met" only when the
whole interval lies above 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from patent_demo.data.corpus import Figure, Patent
from patent_demo.hierarchy import patent_hierarchy
from patent_demo.metrics import drawing_metrics, paired_bootstrap
from patent_demo.search.feedback import Feedback, refine

KEYS = ("patent_map", "subclass_map", "main_map")


def examiner_labels(queries: Sequence[tuple[Patent, Figure]], gallery: Sequence[tuple[Patent, Figure]]):
    """``[Q, G]`` bool: what the simulated examiner calls relevant (the same subclass, scheme-qualified:
    Locarno, else USPC; or the same patent). An item without a subclass is never relevant."""
    qp = np.array([p.id for p, _ in queries])
    gp = np.array([p.id for p, _ in gallery])
    qs = np.array([patent_hierarchy(p.codes)[0] or "" for p, _ in queries])
    gs = np.array([patent_hierarchy(p.codes)[0] or "" for p, _ in gallery])
    same_sub = (qs[:, None] == gs[None, :]) & (qs[:, None] != "")
    return same_sub | (qp[:, None] == gp[None, :])


def _labels(items):
    from patent_demo.drawing.protocol import _labels as labels

    return labels(items)


def _next_judged(scores: np.ndarray, judged: np.ndarray, self_index: np.ndarray, depth: int) -> np.ndarray:
    """``judged`` with each query's next ``depth`` best-scoring unjudged items (never the query itself)."""
    s = np.array(scores, dtype=np.float64, copy=True)
    s[judged] = -np.inf
    has = self_index >= 0
    s[np.flatnonzero(has), self_index[has]] = -np.inf
    order = np.argsort(-s, axis=1, kind="stable")[:, :depth]
    out = judged.copy()
    rows = np.arange(len(s))[:, None]
    take = np.isfinite(s[rows, order])  # fewer than depth items left: judge what there is
    out[np.broadcast_to(rows, order.shape)[take], order[take]] = True
    return out


def refined_queries(
    q_emb: np.ndarray, g_emb: np.ndarray, judged: np.ndarray, relevant: np.ndarray, weights: Feedback
) -> np.ndarray:
    """``[Q, D]``: each query refined (:func:`patent_demo.search.feedback.refine`) with its judged gallery items,
    relevant or not, as its labels."""
    out = np.empty_like(q_emb, dtype=np.float32)
    for i in range(len(q_emb)):
        pos = g_emb[judged[i] & relevant[i]]
        neg = g_emb[judged[i] & ~relevant[i]]
        out[i] = refine(q_emb[i], pos, neg, weights).vector
    return out


def simulate_feedback(
    queries: Sequence[tuple[Patent, Figure]],
    gallery: Sequence[tuple[Patent, Figure]],
    q_emb: np.ndarray,
    g_emb: np.ndarray,
    self_index: np.ndarray,
    depth: int = 10,
    weights: Feedback | None = None,
    rounds: int = 2,
    resamples: int = 2000,
    seed: int = 0,
    keys: Sequence[str] = KEYS,
) -> dict:
    """Before / after of ``rounds`` feedback rounds on the residual collection (see the module).

    Returns ``{"depth", "beta", "gamma", "num_queries", "rounds": [{"round", "judged" (per query),
    "relevant_labels" (mean per query), "before": {key: mean}, "after": {key: mean}, "gain": {key:
    paired_bootstrap(after, before) over query patents, "met"}, "per_query": {"before"|"after": {key:
    [Q]}}}]}``; a mean skips the queries without a relevant item left at that level."""
    if depth < 1 or rounds < 1:
        raise ValueError(f"the feedback depth and rounds must be at least 1, got {depth} and {rounds}")
    w = weights or Feedback.load()
    q_emb = np.asarray(q_emb, dtype=np.float32)
    g_emb = np.asarray(g_emb, dtype=np.float32)
    self_index = np.asarray(self_index, dtype=np.int64)
    ql, gl = _labels(queries), _labels(gallery)
    relevant = examiner_labels(queries, gallery)
    groups = [p.id for p, _ in queries]
    before_scores = q_emb.astype(np.float64) @ g_emb.astype(np.float64).T
    judged = np.zeros(before_scores.shape, dtype=bool)
    scores = before_scores
    out = {"depth": depth, "beta": w.beta, "gamma": w.gamma, "num_queries": len(queries), "rounds": []}
    for r in range(1, rounds + 1):
        judged = _next_judged(scores, judged, self_index, depth)
        refined = refined_queries(q_emb, g_emb, judged, relevant, w)
        scores = refined.astype(np.float64) @ g_emb.astype(np.float64).T
        per = {
            name: drawing_metrics(ql, gl, scores=s, self_index=self_index, exclude=judged, ks=(10,)).per_query
            for name, s in (("before", before_scores), ("after", scores))
        }
        row = {
            "round": r,
            "judged": int(judged.sum(axis=1).max(initial=0)),
            "relevant_labels": float((judged & relevant).sum(axis=1).mean()) if len(queries) else 0.0,
            "before": {k: _mean(per["before"][k]) for k in keys},
            "after": {k: _mean(per["after"][k]) for k in keys},
            "gain": {},
            "per_query": {n: {k: [_none(x) for x in per[n][k]] for k in keys} for n in per},
        }
        for k in keys:
            b = paired_bootstrap(per["after"][k], per["before"][k], groups, n_boot=resamples, seed=seed)
            row["gain"][k] = {**b, "met": bool(np.isfinite(b["low"]) and b["low"] > 0)}
        out["rounds"].append(row)
    return out


def feedback_of_run(corpus, split: str, protocol: str, run: dict, depth: int, args) -> dict:
    """:func:`simulate_feedback` on the queries and gallery of an evaluation ``run`` (its embeddings kept),
    with the rounds, resamples and seed of ``patent-demo evaluate drawings`` (``args``)."""
    from patent_demo.drawing.protocol import drawing_protocol

    queries, gallery, self_index = drawing_protocol(corpus, split, protocol)
    q, g = run["query_embeddings"], run["gallery_embeddings"]
    return simulate_feedback(
        queries,
        gallery,
        q,
        g,
        self_index,
        depth,
        rounds=args.feedback_rounds,
        resamples=args.bootstrap,
        seed=args.seed,
    )


def _mean(x: np.ndarray) -> float | None:
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else None


def _none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def feedback_table(result: dict) -> str:
    """The before / after table of :func:`simulate_feedback`, one block per round."""
    lines = [
        f"relevance feedback: examiner simulated from the classification at depth {result['depth']} "
        f"(beta {result['beta']:g}, gamma {result['gamma']:g}), scored on the residual collection "
        f"({result['num_queries']} queries; interval: paired bootstrap over query patents, 95%)"
    ]
    for row in result["rounds"]:
        lines += [
            "",
            f"round {row['round']}: {row['judged']} hits judged per query "
            f"({row['relevant_labels']:.1f} relevant on average), removed from both lists",
            f"{'metric':14s} {'before':>8s} {'after':>8s}  {'gain [95% CI]':>28s}  met",
        ]
        for k, g in row["gain"].items():
            fmt = lambda v: f"{v:.4f}" if v is not None else "n/a"  # noqa: E731
            ci = f"{g['diff']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]" if np.isfinite(g["diff"]) else "n/a"
            lines.append(
                f"{k:14s} {fmt(row['before'][k]):>8s} {fmt(row['after'][k]):>8s}  {ci:>28s}  "
                f"{'yes' if g['met'] else 'no'}"
            )
    return "\n".join(lines)
