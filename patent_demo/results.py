"""The one ranked-result type shared by BM25, the dense index, the re-ranker and the app.

A ``Results`` holds document ids with their scores, best first, plus optional per-item extras
(gate values, figure paths, ...). Ties keep the order they were given in; producers in this package
break ties by ascending corpus position, so a ranking is reproducible.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Results:
    """Ranked ids and scores ``[N]`` (float32, non-increasing) with optional ``extras[N]`` dicts; a
    re-ranked list also holds each candidate's own re-ranker score (``rerank_scores[N]``, what the app shows)."""

    ids: list[str]
    scores: np.ndarray
    extras: list[dict] | None = None
    rerank_scores: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.ids = [str(i) for i in self.ids]
        self.scores = np.asarray(self.scores, dtype=np.float32).reshape(-1)
        if len(self.ids) != len(self.scores):
            raise ValueError(f"Results: {len(self.ids)} ids but {len(self.scores)} scores")
        if self.extras is not None and len(self.extras) != len(self.ids):
            raise ValueError(f"Results: {len(self.ids)} ids but {len(self.extras)} extras")
        if self.rerank_scores is not None:
            self.rerank_scores = np.asarray(self.rerank_scores, dtype=np.float32).reshape(-1)
            if len(self.rerank_scores) != len(self.ids):
                raise ValueError(
                    f"Results: {len(self.ids)} ids but {len(self.rerank_scores)} re-ranker scores"
                )
        if len(self.scores) > 1 and bool(np.any(np.diff(self.scores) > 0)):
            raise ValueError("Results: scores must be sorted in descending order")

    @classmethod
    def empty(cls) -> Results:
        return cls(ids=[], scores=np.zeros(0, dtype=np.float32))

    @classmethod
    def from_unsorted(
        cls, ids: Sequence[str], scores: Sequence[float] | np.ndarray, extras: list[dict] | None = None
    ) -> Results:
        """Sort by score descending; equal scores keep their input order (a stable sort)."""
        scores = np.asarray(scores, dtype=np.float32).reshape(-1)
        order = np.argsort(-scores, kind="stable")
        return cls(
            ids=[ids[i] for i in order],
            scores=scores[order],
            extras=[extras[i] for i in order] if extras is not None else None,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return iter(zip(self.ids, self.scores.tolist(), strict=True))

    def top(self, k: int) -> Results:
        """The first ``k`` items (all of them when ``k`` exceeds the length)."""
        if k < 0:
            raise ValueError(f"top(k): k must be >= 0, got {k}")
        return Results(
            ids=self.ids[:k],
            scores=self.scores[:k],
            extras=self.extras[:k] if self.extras is not None else None,
            rerank_scores=self.rerank_scores[:k] if self.rerank_scores is not None else None,
        )

    def shown_scores(self) -> np.ndarray:
        """The scores the app shows: the re-ranker's own where it ranked the list, else ``scores``."""
        return self.scores if self.rerank_scores is None else self.rerank_scores

    def to_trec(self, qid: str, run_name: str = "patent_demo") -> list[str]:
        """TREC run lines ``qid Q0 docid rank score run_name`` (rank from 1), without newlines.

        Scores are written with 9 significant digits, which round-trips float32 exactly, so a
        reader that re-sorts by score (trec_eval does) sees no ties that were not there.
        """
        for name in (str(qid), run_name, *self.ids):
            if not name or any(c.isspace() for c in name):
                raise ValueError(f"to_trec: {name!r} is empty or contains whitespace")
        return [f"{qid} Q0 {d} {r} {s:.9g} {run_name}" for r, (d, s) in enumerate(self, 1)]
