"""Per-patent results from figure scores: a patent scores its best figure (``aggregate_by_patent``), and
the exact re-scoring of candidate rows from the stored embeddings (``rows_dot``) that ``DenseIndex``
uses for its approximate kinds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from patent_demo.results import Results


def rows_dot(embeddings: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``embeddings[rows] @ q`` in float32, the exact re-scoring of a few hundred candidates. ``einsum``
    (numpy's own loop, one thread) rather than BLAS: right after a FAISS search its OpenMP threads still
    spin on the cores, and a threaded BLAS product then waits for a scheduler time slice (8 ms on 2
    cores, measured) where the product itself takes a fraction of a millisecond."""
    return np.einsum(
        "ij,j->i", np.asarray(embeddings[rows], dtype=np.float32), np.asarray(q, dtype=np.float32)
    )


def aggregate_by_patent(
    figure_ids: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    patent_ids: Sequence[str],
    k: int | None = None,
) -> Results:
    """Patent ranking from figure hits: a patent scores the max over its hit figures.

    ``score(p) = max_{f in hits, patent(f) = p} s(q, f)``. Returns ``Results`` of patent ids (best
    first, at most ``k``) whose extras hold ``figure_id`` (the patent's best figure) and
    ``figure_hits`` (how many of its figures were among the hits). Equal scores keep the order in
    which the patents first appear among the hits.
    """
    if not len(figure_ids) == len(scores) == len(patent_ids):
        raise ValueError(
            f"figure_ids, scores and patent_ids differ in length: "
            f"{len(figure_ids)}, {len(scores)}, {len(patent_ids)}"
        )
    best: dict[str, tuple[float, str]] = {}
    hits: dict[str, int] = {}
    for fid, score, pid in zip(figure_ids, scores, patent_ids, strict=True):
        s = float(score)
        hits[pid] = hits.get(pid, 0) + 1
        if pid not in best or s > best[pid][0]:
            best[pid] = (s, fid)
    order = list(best)
    ranked = Results.from_unsorted(
        order,
        [best[pid][0] for pid in order],
        [{"figure_id": best[pid][1], "figure_hits": hits[pid]} for pid in order],
    )
    return ranked if k is None else ranked.top(k)
