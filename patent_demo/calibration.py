"""A "no good match" signal, calibrated on judged searches: is the best hit lower than searches with
related documents in the corpus ever get?

Two kinds of search are run over the corpus itself:

* **related** searches: a corpus item whose related documents are known and present — for drawings a
  figure of a patent with another patent of its Locarno subclass (else USPC main class) in the index,
  for texts a patent with a citation to or from another corpus patent — searched with its own patent
  and family left out (as the app searches a corpus query);
* **unrelated** (null) searches: the same kind of item with everything related removed (its class, its
  citations in both directions, itself).

The threshold is the ``quantile`` (default 3 %) of the related searches' top-1 scores in one half of
them; the **false-alarm rate** is measured on the other half (the share of related searches at or
below the threshold, which the warning would tell to discard real prior art) and the **hit rate** on
the unrelated ones (the share the warning catches). The warning is shown only where the held-out
false-alarm rate is at most ``MAX_FALSE_ALARM`` (5 %) on at least ``MIN_RELATED`` held-out searches,
and it catches more unrelated searches than it raises on related ones; otherwise ``shown`` is false
and the app says nothing.

Drawing scores are the index's cosines (the score the hit table shows). Text decisions use BM25
scores divided by the query's ceiling (``text_ceiling``: the sum over its tokens of the best score
each gives any document, a token the corpus lacks counting as the best any token gives), which puts
queries of any length on one scale; the message quotes the BM25 table's score and the threshold in
the same units for that query (the normalised threshold times the query's ceiling).
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


MAX_FALSE_ALARM = 0.05
MIN_RELATED = 20


@dataclass
class NoMatchThreshold:
    """The threshold, and how it was measured: ``false_alarm`` on ``related_heldout`` held-out related
    searches, ``hit_rate`` on ``unrelated`` searches with nothing related; ``shown`` says whether the
    app shows the warning at all; ``null`` summarises the unrelated top-1 scores."""

    task: str  # "drawing" or "text"
    threshold: float
    quantile: float
    related_heldout: int
    false_alarm: float
    unrelated: int
    hit_rate: float
    shown: bool
    null: dict  # {"mean", "std", "min", "max"}
    basis: str = ""  # what counted as related

    def is_weak(self, best_score: float) -> bool:
        return self.shown and best_score <= self.threshold

    def message(
        self, best_score: float, shown_score: float | None = None, shown_threshold: float | None = None
    ) -> str:
        """The status line when the best hit is weak, else ``""``. ``shown_score`` / ``shown_threshold``:
        the best score and the threshold in the units of the table (default: ``best_score`` and
        ``threshold``), rounded to 4 places as the result tables show them."""
        if not self.is_weak(best_score):
            return ""
        s = best_score if shown_score is None else shown_score
        t = self.threshold if shown_threshold is None else shown_threshold
        return (
            f"no good match: the best hit scores {round(s, 4)}, not above {round(t, 4)}; of judged searches on this corpus, "
            f"{self.false_alarm:.0%} of {self.related_heldout} with {self.basis} in it scored this low, and "
            f"{self.hit_rate:.0%} of {self.unrelated} with nothing related — these hits are likely unrelated"
        )

    def describe(self) -> str:
        """One line on the measured rates (for the README and the CLI)."""
        state = (
            "shown"
            if self.shown
            else f"not shown (false alarms above {MAX_FALSE_ALARM:.0%} or too few judged searches)"
        )
        return (
            f"{self.task}: threshold {self.threshold:.3f} ({self.quantile:.0%} of related searches), false alarms "
            f"{self.false_alarm:.1%} of {self.related_heldout} held-out related searches ({self.basis}), hit rate "
            f"{self.hit_rate:.1%} of {self.unrelated} unrelated searches: {state}"
        )

    def save(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> NoMatchThreshold:
        return cls(**json.loads(Path(path).read_text()))


def judged_threshold(
    task: str,
    related: np.ndarray,
    unrelated: np.ndarray,
    quantile: float = 0.03,
    seed: int = 0,
    basis: str = "",
) -> NoMatchThreshold:
    """The threshold from the related top-1 scores (one half of them, shuffled with ``seed``), its
    false-alarm rate on the other half and its hit rate on the ``unrelated`` top-1 scores."""
    related = np.asarray(related, dtype=np.float64)
    related = related[np.isfinite(related)]
    unrelated = np.asarray(unrelated, dtype=np.float64)
    unrelated = unrelated[np.isfinite(unrelated)]
    if related.size < 2 or unrelated.size == 0:
        raise ValueError("calibration needs related searches (two or more) and unrelated ones")
    order = np.random.default_rng(seed).permutation(related.size)
    half = related.size // 2
    fit, held = related[order[:half]], related[order[half:]]
    threshold = float(np.quantile(fit, quantile))
    fa = float((held <= threshold).mean())
    hit = float((unrelated <= threshold).mean())
    shown = held.size >= MIN_RELATED and fa <= MAX_FALSE_ALARM and hit > fa
    return NoMatchThreshold(
        task,
        threshold,
        quantile,
        int(held.size),
        fa,
        int(unrelated.size),
        hit,
        shown,
        _summary(unrelated),
        basis,
    )


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
    out = np.full(len(rows), -np.inf, dtype=np.float64)
    for j, r in enumerate(rows):
        out[j] = _best_other(index, r, related_ids(corpus[index.patent_ids[r]], corpus, by_class))
    return out


def _best_other(index, row: int, banned: set[str]) -> float:
    """The best cosine of figure ``row`` over the figures of every patent but ``banned`` (``-inf`` when
    none is left): the index searched with those patents left out inside FAISS, every list probed."""
    scores, found = index.search_raw_excluding(
        np.asarray(index.embeddings[row], dtype=np.float32), 1, banned, exhaustive=True
    )
    return float(scores[0, 0]) if found[0, 0] >= 0 else -np.inf


def related_drawing_scores(index, corpus: Corpus, rows: Sequence[int]) -> np.ndarray:
    """Top-1 cosine of each figure row over the figures of other patents (its own patent and family
    left out); ``nan`` for a row whose patent has no other patent of its subclass in the index."""
    from patent_demo.document import family_members
    from patent_demo.hierarchy import patent_classes

    pids = np.asarray(index.patent_ids)
    sub = {pid: patent_classes(corpus[pid].codes)[0] for pid in set(pids.tolist())}
    members: dict[str, set[str]] = {}
    for pid, c in sub.items():
        if c:
            members.setdefault(c, set()).add(pid)
    out = np.full(len(rows), np.nan, dtype=np.float64)
    for j, r in enumerate(rows):
        p = corpus[pids[r]]
        banned = {p.id, *family_members(p, corpus)}
        if not (members.get(sub[p.id], set()) - banned):
            continue
        out[j] = _best_other(index, r, banned)
    return out


def calibrate_drawing(
    index, corpus: Corpus, samples: int = 300, quantile: float = 0.03, seed: int = 0
) -> NoMatchThreshold:
    """The drawing threshold from up to ``samples`` related and ``samples`` unrelated searches with
    figures of ``index`` (a ``DenseIndex``)."""
    pids = index.patent_ids
    from patent_demo.hierarchy import patent_classes

    sub = {pid: patent_classes(corpus[pid].codes)[0] for pid in set(pids)}
    count: dict[str, int] = {}
    for c in sub.values():
        count[c] = count.get(c, 0) + 1
    candidates = [r for r in range(index.count) if sub[pids[r]] and count[sub[pids[r]]] > 1]
    rng = np.random.default_rng(seed)
    rel_rows = (
        sorted(rng.choice(candidates, size=min(samples, len(candidates)), replace=False).tolist())
        if candidates
        else []
    )
    related = related_drawing_scores(index, corpus, rel_rows)
    unrelated = null_drawing_scores(index, corpus, _sample(index.count, samples, seed))
    return judged_threshold(
        "drawing", related, unrelated, quantile, seed, "another patent of the same subclass"
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


def related_text_scores(bm25, corpus: Corpus, patents: Sequence[Patent], text=None) -> np.ndarray:
    """Normalised top-1 BM25 score of each patent's text over the corpus without it and its family."""
    from patent_demo.document import family_members
    from patent_demo.text.search import candidate_text

    text = text or candidate_text
    every = {p.id for p in corpus}
    out = np.zeros(len(patents), dtype=np.float64)
    for j, p in enumerate(patents):
        q = text(p)
        res = bm25.search(q, k=1, allowed=every - {p.id, *family_members(p, corpus)})
        out[j] = normalized_text_score(bm25, q, float(res.scores[0])) if len(res) else 0.0
    return out


def calibrate_text(
    bm25, corpus: Corpus, samples: int = 300, quantile: float = 0.03, seed: int = 0
) -> NoMatchThreshold:
    """The text threshold (normalised BM25) from up to ``samples`` patents with an in-corpus citation
    (related searches) and ``samples`` random patents with text (unrelated, their related removed)."""
    from patent_demo.text.search import candidate_text

    with_text = [p for p in corpus if candidate_text(p).strip()]
    if not with_text:
        raise ValueError("calibration needs patents with text")
    every = {p.id for p in corpus}
    cited = {c for p in corpus for c in p.citations if c in every}
    judged = [p for p in with_text if p.id in cited or set(p.citations) & every]
    rel = [judged[i] for i in _sample(len(judged), samples, seed)] if judged else []
    picked = [with_text[i] for i in _sample(len(with_text), samples, seed)]
    return judged_threshold(
        "text",
        related_text_scores(bm25, corpus, rel),
        null_text_scores(bm25, corpus, picked),
        quantile,
        seed,
        "a cited or citing document",
    )
