"""BM25 scoring split over cores, with the same scores as one core.

bm25s keeps each term's precomputed BM25 contributions as one column of a CSC matrix: the documents that
hold the term, in ascending order, and ``idf * tf-part`` for each. A query's score of a document is the sum
of its terms' contributions. Here the documents are cut into ``shards`` contiguous ranges and each thread
walks, for every query term, only the part of the column inside its range (found by binary search in the
sorted column): the threads write disjoint parts of one score array, and each document receives its terms
in query order, so every float32 sum is the one bm25s's own scorer computes. The idf stays global because
it is already inside the stored contributions.

Needs numba (``requirements-test.txt``; ``BM25Index.use_numba(shards=...)`` imports this module only then).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, nogil=True, cache=False)
def sharded_scores(data, indptr, indices, num_docs, token_ids, shards):  # pragma: no cover - compiled
    """The BM25 score of every document for ``token_ids`` (repetitions count), ``shards`` ranges in parallel."""
    out = np.zeros(num_docs, dtype=data.dtype)
    for s in prange(shards):
        lo = s * num_docs // shards
        hi = (s + 1) * num_docs // shards
        for i in range(token_ids.size):
            a = indptr[token_ids[i]]
            b = indptr[token_ids[i] + 1]
            column = indices[a:b]
            start = a + np.searchsorted(column, lo)
            end = a + np.searchsorted(column, hi)
            for j in range(start, end):
                out[indices[j]] += data[j]
    return out
