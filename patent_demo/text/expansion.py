"""Lexical relevance feedback: RM3 over BM25 with the documents an examiner marked relevant.

RM3 (Abdul-Jaleel et al. 2004, as Anserini runs it) with true relevance feedback instead of pseudo
relevance: the relevance model is the mean term distribution of the judged-relevant documents (each
weighted alike: the examiner's label, not a retrieval score, says they are relevant),

    P(t | R) = 1/|R| * sum_{d in R} tf(t, d) / |d|,

cut to its ``terms`` most probable terms and renormalised; the expanded query interpolates it with the
original query's own term distribution,

    w(t) = λ * c(t, q) / |q| + (1 - λ) * P(t | R)            (λ = ``original``),

and BM25 scores it as a query holding each term ``w(t)`` times (``BM25Index.search_weighted``). Terms are
the BM25 index's own tokens (its stopwords and stemmer) of the same fields it indexed. Documents marked
not relevant play no part (RM3 has no negative side). A query with no relevant label keeps its plain BM25
list (``patent_demo.text.search.first_stage`` searches it as before).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from patent_demo.data.corpus import Patent
from patent_demo.text.bm25 import BM25Index


@dataclass(frozen=True)
class RM3:
    """``terms``: expansion terms kept from the relevance model; ``original``: λ, the original query's share."""

    terms: int = 20
    original: float = 0.5

    def __post_init__(self) -> None:
        if self.terms < 1:
            raise ValueError(f"RM3 needs at least one expansion term, got {self.terms}")
        if not 0.0 <= self.original <= 1.0:
            raise ValueError(f"RM3's original-query weight lies in [0, 1], got {self.original}")

    def to_dict(self) -> dict:
        return asdict(self)


def _distribution(tokens: Sequence[str]) -> dict[str, float]:
    counts = Counter(tokens)
    total = sum(counts.values())
    return {t: c / total for t, c in counts.items()} if total else {}


def relevance_model(index: BM25Index, documents: Sequence[Patent]) -> dict[str, float]:
    """``P(t | R)`` over ``documents`` (the judged-relevant ones): the mean of each document's term
    distribution, its text the index's fields tokenised as the index tokenised it."""
    texts = [index.text_of(d) for d in documents]
    dists = [_distribution(t) for t in index.tokenize(texts)] if texts else []
    dists = [d for d in dists if d]
    out: dict[str, float] = {}
    for d in dists:
        for t, p in d.items():
            out[t] = out.get(t, 0.0) + p / len(dists)
    return out


def rm3_weights(
    index: BM25Index, query_text: str, relevant: Sequence[Patent], settings: RM3 = RM3()
) -> dict[str, float]:
    """The expanded query ``{term: weight}`` (weights sum to 1; see the module docstring). With no
    relevant document (or none with a token) it is the original query's term distribution alone."""
    query = _distribution(index.tokenize([query_text])[0])
    model = relevance_model(index, relevant)
    if not model:
        return query
    top = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.terms]  # ties: alphabetical
    mass = sum(p for _, p in top)
    lam = settings.original if query else 0.0
    out = {t: lam * p for t, p in query.items()}
    for t, p in top:
        out[t] = out.get(t, 0.0) + (1.0 - lam) * p / mass
    return out


def expanded_queries(
    index: BM25Index,
    queries: Sequence,
    labels: Mapping[str, Mapping[str, int | str]],
    library: Mapping[str, Patent],
    settings: RM3 = RM3(),
) -> dict[str, dict[str, float]]:
    """``{qid: {term: weight}}`` for each query (``TextQuery``) with at least one relevant label in
    ``labels`` (qid -> {doc id: label}, ``patent_demo.search.feedback.split_labels``) among ``library``'s
    patents; the others are left out (they search as before)."""
    from patent_demo.search.feedback import split_labels

    out = {}
    for q in queries:
        rel, _ = split_labels(labels.get(q.qid, {}))
        docs = [library[d] for d in rel if d in library]
        if docs:
            out[q.qid] = rm3_weights(index, q.text, docs, settings)
    return out
