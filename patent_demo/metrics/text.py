"""Text retrieval metrics (DSSDNet evaluation): Recall@k, MAP@k, PRES@k and nDCG@k over ranked id lists
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
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

from patent_demo.results import Results

DEFAULT_KS = (100, 200, 400)
TEXT_METRICS = ("recall", "map", "map_retrieved", "pres", "ndcg")


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
