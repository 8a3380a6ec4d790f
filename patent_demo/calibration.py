"""A "no good match" signal: is the best hit better than what the corpus returns for unrelated queries?

Calibration builds a *null* distribution of top-1 scores from the corpus itself. Each sampled
corpus item is searched with every document of its own class removed (its Locarno main class, else
the main class of its first USPC code, else its IPC/CPC subclass; with no code, only its own
patent and the patents it cites or that cite it). Nothing relevant to it is left, so its top-1
score is a score that an unrelated query reaches. The threshold is the ``quantile`` (default 0.95)
of these scores: a search whose best hit does not exceed it looks like a search with nothing
relevant in the corpus, and the status says so.

Drawing scores are the index's cosines, exact over the stored embeddings. Text scores are BM25
scores divided by the query's ceiling (``text_ceiling``: the sum over its tokens of the best score
each gives any document, a token the corpus lacks counting as the best any token gives), which
puts queries of any length on one scale [0, 1].
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.hierarchy import patent_hierarchy


def class_key(patent: Patent) -> str:
    """The class whose documents count as related to ``patent`` (see the module docstring)."""
    try:
        main = patent_hierarchy(patent.codes)[1]  # Locarno, else USPC, scheme-qualified
    except ValueError:
        main = ""
    if main:
        return main
    for scheme in ("ipc", "cpc"):
        if patent.codes.get(scheme):
            return f"{scheme}:" + patent.codes[scheme][0][:4]
    return ""


def related_ids(patent: Patent, corpus: Corpus, by_class: dict[str, set[str]]) -> set[str]:
    """Documents removed when ``patent`` serves as a null query: its class, itself, its citations
    and the documents citing it."""
    out = {patent.id, *patent.citations}
    key = class_key(patent)
    if key:
        out |= by_class.get(key, set())
    out |= {p.id for p in corpus if patent.id in p.citations}
    return out


@dataclass
class NoMatchThreshold:
    """The threshold, and how it was made: ``null`` summarises the null top-1 scores."""

    task: str  # "drawing" or "text"
    threshold: float
    quantile: float
    samples: int
    null: dict  # {"mean", "std", "min", "max"}

    def is_weak(self, best_score: float) -> bool:
        return best_score <= self.threshold

    def message(self, best_score: float) -> str:
        """The status line when the best hit is weak, else ``""``."""
        if not self.is_weak(best_score):
            return ""
        return (
            f"no good match: the best hit scores {best_score:.3f}, not above {self.threshold:.3f}, what "
            f"{self.quantile:.0%} of {self.samples} corpus searches with nothing related in the corpus "
            f"stay below; treat these hits as unrelated"
        )

    def save(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> NoMatchThreshold:
        return cls(**json.loads(Path(path).read_text()))


def _summary(x: np.ndarray) -> dict:
    return {"mean": float(x.mean()), "std": float(x.std()), "min": float(x.min()), "max": float(x.max())}


def _sample(n_total: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_total, size=min(n, n_total), replace=False))


def _by_class(corpus: Corpus) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in corpus:
        out.setdefault(class_key(p), set()).add(p.id)
    out.pop("", None)
    return out


def null_drawing_scores(index, corpus: Corpus, rows: Sequence[int]) -> np.ndarray:
    """Top-1 cosine of each figure row ``rows`` of ``index`` over the figures of unrelated patents
    (``-inf`` when nothing is left)."""
    by_class = _by_class(corpus)
    pids = np.asarray(index.patent_ids)
    emb = index.embeddings
    out = np.full(len(rows), -np.inf, dtype=np.float64)
    for j, r in enumerate(rows):
        banned = related_ids(corpus[pids[r]], corpus, by_class)
        keep = ~np.isin(pids, list(banned))
        if keep.any():
            out[j] = float((emb[keep] @ emb[r]).max())
    return out


def calibrate_drawing(
    index, corpus: Corpus, samples: int = 300, quantile: float = 0.95, seed: int = 0
) -> NoMatchThreshold:
    """The drawing threshold from ``samples`` random figures of ``index`` (a ``DenseIndex``)."""
    rows = _sample(index.count, samples, seed)
    scores = null_drawing_scores(index, corpus, rows)
    scores = scores[np.isfinite(scores)]
    if scores.size == 0:
        raise ValueError("calibration needs patents of at least two classes")
    return NoMatchThreshold(
        "drawing", float(np.quantile(scores, quantile)), quantile, int(scores.size), _summary(scores)
    )


def text_ceiling(bm25, query: str) -> float:
    """An upper bound of the query's BM25 score: the sum over its tokens (with repetition) of the
    largest score the token gives any document; a token the corpus lacks counts as the largest any
    token gives (a query of words the corpus never uses scores low against it). 0 for a query
    without tokens."""
    tokens = bm25.tokenize([query])[0]
    if not tokens:
        return 0.0
    ids = bm25.retriever.get_tokens_ids(tokens)
    if not hasattr(bm25, "_token_max"):
        s = bm25.retriever.scores
        data, ptr = np.asarray(s["data"]), np.asarray(s["indptr"])
        tmax = np.zeros(len(ptr) - 1, dtype=np.float64)
        nonempty = ptr[1:] > ptr[:-1]
        tmax[nonempty] = np.maximum.reduceat(data, ptr[:-1][nonempty])
        bm25._token_max = tmax
    tmax = bm25._token_max
    return float(tmax[ids].sum() + (len(tokens) - len(ids)) * tmax.max())


def normalized_text_score(bm25, query: str, score: float) -> float:
    """A BM25 score divided by the query's ceiling (0 when the query has no indexed token)."""
    ceiling = text_ceiling(bm25, query)
    return float(score) / ceiling if ceiling > 0 else 0.0


def null_text_scores(bm25, corpus: Corpus, patents: Sequence[Patent], text=None) -> np.ndarray:
    """Normalised top-1 BM25 score of each patent's text over the unrelated documents."""
    from patent_demo.text.search import candidate_text

    text = text or candidate_text
    by_class = _by_class(corpus)
    every = {p.id for p in corpus}
    out = np.full(len(patents), -np.inf, dtype=np.float64)
    for j, p in enumerate(patents):
        q = text(p)
        res = bm25.search(q, k=1, allowed=every - related_ids(p, corpus, by_class))
        out[j] = normalized_text_score(bm25, q, float(res.scores[0])) if len(res) else 0.0
    return out


def calibrate_text(
    bm25, corpus: Corpus, samples: int = 300, quantile: float = 0.95, seed: int = 0
) -> NoMatchThreshold:
    """The text threshold (normalised BM25) from ``samples`` random corpus patents with text."""
    with_text = [p for p in corpus if (p.title or p.text).strip()]
    if not with_text:
        raise ValueError("calibration needs patents with text")
    picked = [with_text[i] for i in _sample(len(with_text), samples, seed)]
    scores = null_text_scores(bm25, corpus, picked)
    return NoMatchThreshold(
        "text", float(np.quantile(scores, quantile)), quantile, len(picked), _summary(scores)
    )
