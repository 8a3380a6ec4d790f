"""Retrieval metrics shared by training, benchmarks and the app.

Text retrieval (DSSDNet evaluation): Recall@k, MAP@k, PRES@k and nDCG@k over ranked id lists
against TREC qrels, plus ``map_retrieved@k``, the average that the DSSDNet author's public code
reports (precision summed over the retrieved relevant documents, divided by how many were retrieved).

* A document is relevant when its qrels label is >= 1; nDCG uses the label itself as the gain
  (graded), labels <= 0 count as gain 0. This is what trec_eval does at its default relevance level.
* Ties: a run given as {docid: score} is ranked as trec_eval ranks it, by score descending and then
  by docid descending (string order). A ranked list (``Results`` or a sequence of ids) is used in
  the order given; ``lexical.BM25Index`` breaks ties by ascending corpus position.
* Averages run over the queries of the qrels that have at least one relevant document (every
  metric here divides by that number). Such a query absent from the run scores 0 on every metric;
  run queries absent from the qrels are ignored.

Drawing retrieval (HMCL evaluation, see ``drawing_metrics``): mAP over all relevant gallery items
and nDCG@k at patent, subclass and main-class level, plus a graded "hierarchical" nDCG, computed
on a whole query x gallery score matrix at once.

Run ``python -m patent_demo.metrics RUN QRELS --k 100 200 400`` to score a TREC run file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from patent_demo.results import Results

DEFAULT_KS = (100, 200, 400)
TEXT_METRICS = ("recall", "map", "map_retrieved", "pres", "ndcg")
LEVELS = ("patent", "subclass", "main")


class RunFormatError(ValueError):
    """A malformed TREC run file; the message names ``file:line``."""


# ============================================================================================
# Text retrieval: one query
# ============================================================================================
def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Order docids as trec_eval does: score descending, ties by docid descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def _relevant(qrel: Mapping[str, int]) -> set[str]:
    return {d for d, r in qrel.items() if r >= 1}


def recall_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    """|relevant in top k| / |relevant|; 0 when the query has no relevant document."""
    rel = _relevant(qrel)
    if not rel:
        return 0.0
    return sum(1 for d in ranked[:k] if d in rel) / len(rel)


def average_precision_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    """trec_eval ``map_cut_k``: sum over relevant ranks r <= k of P@r, divided by |relevant| (all of them)."""
    rel = _relevant(qrel)
    if not rel:
        return 0.0
    hits, total = 0, 0.0
    for r, d in enumerate(ranked[:k], 1):
        if d in rel:
            hits += 1
            total += hits / r
    return total / len(rel)


def average_precision_retrieved_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    """The DSSDNet evaluation script's "MAP": sum of P@r over relevant ranks r <= k divided by the
    number of relevant documents *retrieved* in the top k (0 when none is). Not trec_eval MAP."""
    rel = _relevant(qrel)
    hits, total = 0, 0.0
    for r, d in enumerate(ranked[:k], 1):
        if d in rel:
            hits += 1
            total += hits / r
    return total / hits if hits else 0.0


def pres_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    """Patent Retrieval Evaluation Score (Magdy & Jones 2010) with N_max = k.

    PRES = 1 - (sum_i r_i - n(n+1)/2) / (n * N_max), where r_i are the ranks of the n relevant
    documents; the n - n_R relevant documents not in the top N_max are placed right after it, at
    ranks N_max + n_R + 1, ..., N_max + n. PRES is 1 for a perfect ranking, 0 when nothing relevant
    is found, and equals recall for a perfect ranking when n > N_max.
    """
    rel = _relevant(qrel)
    n = len(rel)
    if n == 0:
        return 0.0
    ranks = [r for r, d in enumerate(ranked[:k], 1) if d in rel]
    found = len(ranks)
    missing = n - found
    # sum over j = 1..missing of (k + found + j)
    rank_sum = sum(ranks) + missing * (k + found) + missing * (missing + 1) / 2
    return 1.0 - (rank_sum - n * (n + 1) / 2) / (n * k)


def ndcg_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    """nDCG@k (Jarvelin & Kekalainen 2002, trec_eval ``ndcg_cut``): DCG = sum_{r<=k} g_r / log2(r + 1),
    gain g = qrels label (<= 0 counts 0), normalised by the DCG of the ideal ordering of the qrels."""
    gains = sorted((r for r in qrel.values() if r > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    if ideal == 0:
        return 0.0
    dcg = sum(max(qrel.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / ideal


_TEXT_FUNCTIONS = {
    "recall": recall_at_k,
    "map": average_precision_at_k,
    "map_retrieved": average_precision_retrieved_at_k,
    "pres": pres_at_k,
    "ndcg": ndcg_at_k,
}


# ============================================================================================
# Text retrieval: a run
# ============================================================================================
RunLike = Mapping[str, Results | Sequence[str] | Mapping[str, float]]


def _as_ranking(qid: str, entry: Results | Sequence[str] | Mapping[str, float]) -> list[str]:
    if isinstance(entry, Results):
        ranked = list(entry.ids)
    elif isinstance(entry, Mapping):
        ranked = rank_by_score(entry)
    elif isinstance(entry, str):
        raise TypeError(f"query {qid!r}: expected a ranked list of ids, got a string")
    else:
        ranked = [str(d) for d in entry]
    if len(set(ranked)) != len(ranked):
        raise ValueError(f"query {qid!r}: a docid appears twice in the ranking")
    return ranked


def per_query_metrics(
    run: RunLike, qrels: Mapping[str, Mapping[str, int]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, dict[str, float]]:
    """{qid: {"recall@100": ..., ...}} for every qrels query with at least one relevant document.

    ``run`` maps a qid to a ``Results``, a ranked id list, or a {docid: score} dict (ranked by
    ``rank_by_score``). A query missing from the run gets an empty ranking (all metrics 0).
    """
    ks = _check_ks(ks)
    out: dict[str, dict[str, float]] = {}
    for qid in sorted(qrels):
        qrel = qrels[qid]
        if not _relevant(qrel):
            continue
        ranked = _as_ranking(qid, run[qid]) if qid in run else []
        out[qid] = {f"{name}@{k}": fn(ranked, qrel, k) for k in ks for name, fn in _TEXT_FUNCTIONS.items()}
    return out


def evaluate_run(
    run: RunLike, qrels: Mapping[str, Mapping[str, int]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float]:
    """Mean metrics over the qrels queries with a relevant document (see the module docstring).

    Keys: ``recall@k``, ``map@k``, ``map_retrieved@k``, ``pres@k``, ``ndcg@k`` for each k, plus
    ``num_queries`` (queries averaged) and ``num_queries_without_run`` (of those, absent from the run).
    """
    ks = _check_ks(ks)
    per_query = per_query_metrics(run, qrels, ks)
    keys = [f"{name}@{k}" for k in ks for name in TEXT_METRICS]
    n = len(per_query)
    out: dict[str, float] = {
        key: (math.fsum(m[key] for m in per_query.values()) / n if n else 0.0) for key in keys
    }
    out["num_queries"] = n
    out["num_queries_without_run"] = sum(1 for q in per_query if q not in run)
    return out


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(int(k) for k in ks)
    if not ks or any(k < 1 for k in ks):
        raise ValueError(f"cut-offs must be positive integers, got {ks}")
    return ks


def read_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a TREC run file (``qid Q0 docid rank score tag``) into {qid: {docid: score}}.

    The rank column is checked to be an integer but otherwise ignored (trec_eval re-ranks by score).
    Raises ``RunFormatError`` naming ``file:line`` for a wrong field count, a non-numeric rank or
    score, or a docid listed twice for one query.
    """
    run: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            where = f"{path}:{lineno}"
            if len(parts) != 6:
                raise RunFormatError(
                    f"{where}: a run line has 6 fields (qid Q0 docid rank score tag), got {len(parts)}"
                )
            qid, _, docid, rank, score, _ = parts
            try:
                int(rank)
            except ValueError:
                raise RunFormatError(f"{where}: rank {rank!r} is not an integer") from None
            try:
                value = float(score)
            except ValueError:
                raise RunFormatError(f"{where}: score {score!r} is not a number") from None
            if not math.isfinite(value):
                raise RunFormatError(f"{where}: score {score!r} is not finite")
            docs = run.setdefault(qid, {})
            if docid in docs:
                raise RunFormatError(f"{where}: docid {docid!r} appears twice for query {qid!r}")
            docs[docid] = value
    return run


# ============================================================================================
# Drawing retrieval (HMCL evaluation)
# ============================================================================================
@dataclass
class ItemLabels:
    """Per-item labels ``[N]``: patent id, Locarno subclass ("06-01"), main class ("06").

    ``mains`` defaults to the first two characters of each subclass. An empty label never matches.
    """

    patents: Sequence[str]
    subclasses: Sequence[str]
    mains: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.patents = [str(p) for p in self.patents]
        self.subclasses = [str(s) for s in self.subclasses]
        self.mains = [s[:2] for s in self.subclasses] if self.mains is None else [str(m) for m in self.mains]
        if not (len(self.patents) == len(self.subclasses) == len(self.mains)):
            raise ValueError(
                f"ItemLabels: {len(self.patents)} patents, {len(self.subclasses)} subclasses, "
                f"{len(self.mains)} main classes; they must have one entry per item"
            )

    def __len__(self) -> int:
        return len(self.patents)


@dataclass
class DrawingEval:
    """Per-query drawing metrics: ``per_query[name]`` is a float array ``[Q]``, NaN where the metric is
    undefined (no relevant gallery item at that level). ``summary()`` averages the defined values."""

    per_query: dict[str, np.ndarray] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, values in self.per_query.items():
            defined = values[~np.isnan(values)]
            out[name] = float(defined.mean()) if defined.size else float("nan")
        out["num_queries"] = int(next(iter(self.per_query.values())).shape[0]) if self.per_query else 0
        return out

    def by_class(self, classes: Sequence[str]) -> dict[str, dict[str, float]]:
        """Per-class means, ``classes[Q]`` giving each query's class (e.g. its Locarno subclass)."""
        return breakdown_by_class(self.per_query, classes)


def breakdown_by_class(
    per_query: Mapping[str, np.ndarray], classes: Sequence[str]
) -> dict[str, dict[str, float]]:
    """{class: {metric: mean over that class's queries (NaNs skipped), "num_queries": count}}, classes sorted."""
    classes = np.asarray([str(c) for c in classes])
    out: dict[str, dict[str, float]] = {}
    for name, values in per_query.items():
        if len(values) != len(classes):
            raise ValueError(
                f"breakdown_by_class: {name} has {len(values)} values for {len(classes)} classes"
            )
    for cls in sorted(set(classes.tolist())):
        mask = classes == cls
        row: dict[str, float] = {}
        for name, values in per_query.items():
            v = np.asarray(values)[mask]
            v = v[~np.isnan(v)]
            row[name] = float(v.mean()) if v.size else float("nan")
        row["num_queries"] = int(mask.sum())
        out[cls] = row
    return out


def _codes(query: Sequence[str], gallery: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes over a shared vocabulary; the empty label gets -1 (matches nothing)."""
    vocab = {s: i for i, s in enumerate(sorted(set(query) | set(gallery)))}
    enc = lambda xs: np.array([vocab[x] if x else -1 for x in xs], dtype=np.int64)  # noqa: E731
    return enc(query), enc(gallery)


def _same(q: np.ndarray, g: np.ndarray) -> np.ndarray:
    return (q[:, None] == g[None, :]) & (q[:, None] >= 0)


def _discount_cumsum(n: int) -> np.ndarray:
    """D[m] = sum_{r=1}^{m} 1 / log2(r + 1), D[0] = 0; shape [n + 1]."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))])


def drawing_metrics(
    query: ItemLabels,
    gallery: ItemLabels,
    scores: np.ndarray | None = None,
    ranked: np.ndarray | None = None,
    self_index: Sequence[int] | np.ndarray | None = None,
    ks: Sequence[int] = (10, 100),
    weights: tuple[float, float, float] = (1.0, 0.35, 0.2),
) -> DrawingEval:
    """mAP and nDCG@k at patent, subclass and main-class level, and graded hierarchical nDCG@k.

    Give either ``scores`` ``[Q, G]`` (higher is closer; ties broken by ascending gallery index) or
    ``ranked`` ``[Q, L]`` gallery indices best first (L <= G; -1 pads a short row). ``self_index[Q]``
    is the gallery position of the query itself (-1 when absent): it is skipped, taking no rank and
    counting as no relevant item.

    Relevance at level L (binary): patent = same patent id; subclass = same Locarno subclass or same
    patent; main = same main class or subclass-relevant. Per query and level, with n relevant gallery
    items and rel_r = 1 when the item at rank r is relevant:

    * AP = (1/n) sum_r rel_r * P@r over the whole ranking (not truncated; items missing from a
      truncated ``ranked`` count as not retrieved);
    * nDCG@k = sum_{r<=k} rel_r / log2(r + 1)  /  sum_{r<=min(k, n)} 1 / log2(r + 1).

    ``hier_ndcg@k`` uses the HMCL relevance of Eq. 2 as graded gains, ``weights = (s_p, s_s, s_m)``:
    s_p for the same patent, s_s for the same subclass (other patent), s_m for the same main class
    (other subclass), ideal ordering from those counts. Keys of ``per_query``: ``{level}_map``,
    ``{level}_ndcg@{k}``, ``hier_ndcg@{k}``; values NaN where n = 0 at that level.
    """
    ks = _check_ks(ks)
    s_p, s_s, s_m = (float(w) for w in weights)
    if not s_p >= s_s >= s_m >= 0:
        raise ValueError(f"weights must satisfy s_p >= s_s >= s_m >= 0, got {weights}")
    nq, ng = len(query), len(gallery)
    if (scores is None) == (ranked is None):
        raise ValueError("drawing_metrics: give exactly one of scores [Q, G] or ranked [Q, L]")
    if scores is not None:
        scores = np.asarray(scores)
        if scores.shape != (nq, ng):
            raise ValueError(f"drawing_metrics: scores has shape {scores.shape}, expected ({nq}, {ng})")
        order = np.argsort(-scores, axis=1, kind="stable")
    else:
        order = np.asarray(ranked, dtype=np.int64)
        if order.ndim != 2 or order.shape[0] != nq:
            raise ValueError(f"drawing_metrics: ranked has shape {order.shape}, expected ({nq}, L)")
        if order.size and (order.max() >= ng or order.min() < -1):
            raise ValueError(f"drawing_metrics: ranked holds indices outside [-1, {ng})")
    selfs = np.full(nq, -1, dtype=np.int64) if self_index is None else np.asarray(self_index, dtype=np.int64)
    if selfs.shape != (nq,):
        raise ValueError(f"drawing_metrics: self_index has shape {selfs.shape}, expected ({nq},)")

    # full relevance [Q, G] per level, nested: patent ⊆ subclass ⊆ main; the query itself excluded
    rel_full = {}
    for level, attr in zip(LEVELS, ("patents", "subclasses", "mains"), strict=True):
        qc, gc = _codes(getattr(query, attr), getattr(gallery, attr))
        rel_full[level] = _same(qc, gc)
    rel_full["subclass"] |= rel_full["patent"]
    rel_full["main"] |= rel_full["subclass"]
    has_self = selfs >= 0
    for m in rel_full.values():
        m[np.flatnonzero(has_self), selfs[has_self]] = False

    rows = np.arange(nq)[:, None]
    valid = (order >= 0) & (order != selfs[:, None])
    safe = np.where(order >= 0, order, 0)
    ranks = np.cumsum(valid, axis=1)  # rank of each position, self and padding take none
    disc = np.where(valid, 1.0 / np.log2(np.maximum(ranks, 1) + 1.0), 0.0)
    dsum = _discount_cumsum(max(ks + (ng,)))
    out: dict[str, np.ndarray] = {}
    counts = {}
    for level in LEVELS:
        n_rel = rel_full[level].sum(axis=1)
        counts[level] = n_rel
        rel = rel_full[level][rows, safe] & valid
        hits = np.cumsum(rel, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ap = np.where(rel, hits / np.maximum(ranks, 1), 0.0).sum(axis=1) / n_rel
            out[f"{level}_map"] = np.where(n_rel > 0, ap, np.nan)
            for k in ks:
                dcg = np.where(rel & (ranks <= k), disc, 0.0).sum(axis=1)
                ideal = dsum[np.minimum(n_rel, k)]
                out[f"{level}_ndcg@{k}"] = np.where(n_rel > 0, dcg / ideal, np.nan)

    gains_full = (
        s_p * rel_full["patent"]
        + s_s * (rel_full["subclass"] & ~rel_full["patent"])
        + s_m * (rel_full["main"] & ~rel_full["subclass"])
    )
    gains = np.where(valid, gains_full[rows, safe], 0.0)
    n_p, n_ps, n_all = counts["patent"], counts["subclass"], counts["main"]
    for k in ks:
        dcg = np.where(ranks <= k, gains * disc, 0.0).sum(axis=1)
        a, b, c = dsum[np.minimum(n_p, k)], dsum[np.minimum(n_ps, k)], dsum[np.minimum(n_all, k)]
        ideal = s_p * a + s_s * (b - a) + s_m * (c - b)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"hier_ndcg@{k}"] = np.where(ideal > 0, dcg / ideal, np.nan)
    return DrawingEval(per_query=out)


def silhouette_by_subclass(
    embeddings: np.ndarray, labels: Sequence[str], sample_size: int | None = None, seed: int = 0
) -> tuple[float, dict[str, float]]:
    """Cosine silhouette of embeddings ``[N, D]`` grouped by ``labels[N]`` (e.g. Locarno subclass).

    Returns (mean silhouette over all items, {label: mean silhouette of its items}). Needs 2 <= number
    of labels <= N - 1 (scikit-learn's condition). ``sample_size`` draws that many items first
    (seeded) to bound the O(N^2) cost.
    """
    from sklearn.metrics import silhouette_samples

    x = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray([str(s) for s in labels])
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"silhouette_by_subclass: embeddings {x.shape} do not match {y.shape[0]} labels")
    if sample_size is not None and sample_size < x.shape[0]:
        pick = np.sort(np.random.default_rng(seed).choice(x.shape[0], size=sample_size, replace=False))
        x, y = x[pick], y[pick]
    n_labels = len(set(y.tolist()))
    if not 2 <= n_labels <= x.shape[0] - 1:
        raise ValueError(f"silhouette needs 2..{x.shape[0] - 1} distinct labels, got {n_labels}")
    values = silhouette_samples(x, y, metric="cosine")
    per_class = {c: float(values[y == c].mean()) for c in sorted(set(y.tolist()))}
    return float(values.mean()), per_class


# ============================================================================================
# CLI
# ============================================================================================
def main(argv: Sequence[str] | None = None) -> int:
    from patent_demo.corpus import CorpusError, read_qrels

    parser = argparse.ArgumentParser(
        prog="python -m patent_demo.metrics",
        description="Score a TREC run file against TREC qrels; prints Recall, MAP, MAP over retrieved "
        "relevant documents, PRES and nDCG at each cut-off as JSON.",
    )
    parser.add_argument("run", help="TREC run file: qid Q0 docid rank score tag")
    parser.add_argument("qrels", help="TREC qrels file: qid iter docid rel")
    parser.add_argument(
        "--k", type=int, nargs="+", default=list(DEFAULT_KS), help="cut-offs (default 100 200 400)"
    )
    args = parser.parse_args(argv)
    try:
        run = read_run(args.run)
        qrels = read_qrels(args.qrels)
        result = evaluate_run(run, qrels, args.k)
    except (RunFormatError, CorpusError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
