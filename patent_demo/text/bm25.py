"""BM25 first stage over bm25s: build, search, save and load.

Scoring: bm25s's ``"lucene"`` method by default (the BM25 of Lucene/Anserini, Kamphuis et al. 2020)::

    score(q, d) = sum_{t in q} idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))          (never negative)

summed over the query tokens with repetition, k1 = 1.2 and b = 0.75 as in the DSSDNet first stage.
How the bm25s methods relate to rank_bm25 (checked in ``tests/test_lexical.py``):

* ``"robertson"`` is rank_bm25's ``BM25Okapi(epsilon=0)`` divided by (k1 + 1): both use
  idf = log((N - df + 0.5) / (df + 0.5)) and set negative values to 0. (BM25Okapi's default
  epsilon = 0.25 instead floors them at 0.25 x the mean idf, which bm25s does not offer.)
* ``"bm25+"`` equals rank_bm25's ``BM25Plus`` exactly (same ``delta``).
* ``"lucene"`` has no rank_bm25 class; it is BM25Okapi's term-frequency part with the Lucene idf above.
* rank_bm25's ``BM25L`` multiplies by the raw term frequency once more, so it matches no bm25s method.

Tokenisation is bm25s's (lower case, ``\\b\\w\\w+\\b``, optional stopword list and PyStemmer stemmer),
the same for documents and queries. A search returns only documents that share a term with the
query (score above the score of an empty document); ties are broken by ascending corpus position.

On disk an index is a directory: the bm25s files (``*.index.npy``, ``vocab.index.json``,
``params.index.json``) plus ``lexical.json`` holding fields, k1, b, method, delta, stopwords,
stemmer and the document ids in index order.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from patent_demo.atomic import atomic_json
from patent_demo.results import Results

# bm25s sets its own logger to DEBUG; once any handler exists its progress notes would reach the console.
logging.getLogger("bm25s").setLevel(logging.WARNING)

PARAMS_FILE = "lexical.json"
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
FORMAT_VERSION = 1


def _make_stemmer(name: str | None):
    if name is None:
        return None
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is in requirements.txt
        raise ImportError(f"stemmer={name!r} needs PyStemmer: pip install PyStemmer") from None
    try:
        return Stemmer.Stemmer(name)
    except KeyError:
        raise ValueError(f"unknown stemmer language {name!r}; see Stemmer.algorithms()") from None


def _doc_id_and_text(doc: Any, fields: Sequence[str], position: int) -> tuple[str, str]:
    """(id, text) of a dict ({"id": ..., field: ...}) or an object with ``.id`` and field attributes."""
    if isinstance(doc, dict):
        if not doc.get("id"):
            raise ValueError(f"document {position} has no 'id' key (keys: {sorted(doc)})")
        doc_id, get = doc["id"], doc.get
    else:
        doc_id = getattr(doc, "id", None)
        if not doc_id:
            raise ValueError(f"document {position} ({type(doc).__name__}) has no id")

        def get(name, default=None):
            return getattr(doc, name, default)

    parts = []
    for name in fields:
        value = get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"document {doc_id!r}: field {name!r} is {type(value).__name__}, expected str")
        parts.append(value)
    return str(doc_id), "\n".join(parts)


class BM25Index:
    """A BM25 index over documents' text fields, searched with raw query text.

    Build with ``BM25Index.build(docs)``; ``search`` returns a ``Results`` of document ids.
    """

    def __init__(
        self,
        retriever: bm25s.BM25,
        doc_ids: list[str],
        fields: Sequence[str],
        stopwords: str | list[str] | None,
        stemmer: str | None,
    ) -> None:
        self.retriever = retriever
        self.doc_ids = list(doc_ids)
        self.fields = tuple(fields)
        self.stopwords = stopwords
        self.stemmer = stemmer
        self._stemmer = _make_stemmer(stemmer)
        self._shards: int | None = None  # use_numba(shards=...)
        self._sorted_vocab: list[str] | None = None

    # -- parameters -------------------------------------------------------------------------
    @property
    def k1(self) -> float:
        return float(self.retriever.k1)

    @property
    def b(self) -> float:
        return float(self.retriever.b)

    @property
    def method(self) -> str:
        return str(self.retriever.method)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def sorted_vocab(self) -> list[str]:
        """The vocabulary's terms in sorted order (a truncation ``word*`` expands over a range of it), made
        once per index."""
        if self._sorted_vocab is None:
            self._sorted_vocab = sorted(w for w in self.retriever.vocab_dict if isinstance(w, str))
        return self._sorted_vocab

    def params(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "fields": list(self.fields),
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "delta": float(self.retriever.delta),
            "stopwords": self.stopwords,
            "stemmer": self.stemmer,
            "doc_ids": self.doc_ids,
        }

    # -- building ---------------------------------------------------------------------------
    def text_of(self, doc: Any) -> str:
        """The text this index reads of ``doc`` (a dict or a ``Patent``): its ``fields`` joined by newlines."""
        return _doc_id_and_text(doc, self.fields, 0)[1]

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The token lists this index uses for ``texts`` (documents and queries alike)."""
        return _tokenize(list(texts), self.stopwords, self._stemmer)

    @classmethod
    def build(
        cls,
        docs: Iterable[Any],
        fields: Sequence[str] = ("title", "text"),
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        delta: float = 0.5,
        stopwords: str | list[str] | None = "en",
        stemmer: str | None = None,
    ) -> BM25Index:
        """Index ``docs``: dicts with an ``"id"`` key, ``Patent`` objects, or a ``Corpus``.

        The text of a document is its ``fields`` joined by newlines (missing fields are skipped).
        ``stemmer`` is ``None`` or a PyStemmer language such as ``"english"``; ``delta`` only
        matters for ``"bm25l"`` and ``"bm25+"``.
        """
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; choose one of {METHODS}")
        if not fields:
            raise ValueError("fields must name at least one text field")
        pairs = [_doc_id_and_text(d, fields, i) for i, d in enumerate(docs)]
        if not pairs:
            raise ValueError("cannot build a BM25 index over no documents")
        doc_ids = [p[0] for p in pairs]
        dups = [d for d, n in Counter(doc_ids).items() if n > 1]
        if dups:
            raise ValueError(f"duplicate document id {dups[0]!r}")
        retriever = bm25s.BM25(k1=k1, b=b, delta=delta, method=method)
        index = cls(retriever, doc_ids, fields, stopwords, stemmer)
        tokens = index.tokenize([p[1] for p in pairs])
        if not any(tokens):
            raise ValueError("no document has an indexable token (all empty or stopwords)")
        retriever.index(tokens, create_empty_token=False, show_progress=False)
        return index

    # -- searching --------------------------------------------------------------------------
    def _token_ids(self, tokens: list[str]) -> list[int]:
        return self.retriever.get_tokens_ids(tokens)

    def prune(self, token_ids: list[int], max_terms: int) -> list[int]:
        """``token_ids`` (repetitions kept) restricted to the ``max_terms`` distinct terms of highest idf,
        i.e. those in the fewest documents (ties: the term met first). A long query's common terms carry
        little of its BM25 score and most of its cost: their posting lists span much of the collection."""
        distinct = list(dict.fromkeys(token_ids))
        if len(distinct) <= max_terms:
            return token_ids
        indptr = self.retriever.scores["indptr"]
        df = {t: int(indptr[t + 1] - indptr[t]) for t in distinct}
        keep = set(sorted(distinct, key=lambda t: df[t])[:max_terms])  # a stable sort: ties keep query order
        return [t for t in token_ids if t in keep]

    def use_numba(self, shards: int | None = None) -> None:
        """Score with numba-compiled code instead of numpy (the same scores; compiled on the first search):
        bm25s's scorer, or with ``shards`` the documents cut into that many ranges scored and searched by
        as many threads (:mod:`patent_demo.text.bm25_shards`). Needs numba (``pip install numba``; a bench
        dependency, see bench/bench_text_scale.py)."""
        try:
            import numba  # noqa: F401
        except ImportError:
            raise ImportError("use_numba needs numba: pip install numba==0.68.1") from None
        if shards is not None and shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        self.retriever.activate_numba_scorer()
        self._shards = shards

    def allowed_mask(self, allowed: Iterable[str]) -> np.ndarray:
        """A bool mask ``[N]`` over the index's documents: True for the ids in ``allowed``."""
        allowed = allowed if isinstance(allowed, (set, frozenset)) else set(allowed)
        return np.fromiter((d in allowed for d in self.doc_ids), dtype=bool, count=len(self.doc_ids))

    def _search_ids(self, token_ids: list[int], k: int, mask: np.ndarray | None = None) -> Results:
        if not token_ids:
            return Results.empty()
        ids = np.asarray(token_ids, dtype=np.int64)
        if self._shards:
            scores = self._sharded_scores(ids)
        else:
            scores = self.retriever.get_scores_from_ids(token_ids)
        return self._top(scores, scores > self._empty_score(ids, scores.dtype), k, mask)

    def _top(self, scores: np.ndarray, hit: np.ndarray, k: int, mask: np.ndarray | None) -> Results:
        """The top ``k`` of the documents ``hit`` (and ``mask``) by ``scores``; ties: lowest position first."""
        cand = np.flatnonzero(hit if mask is None else hit & mask)
        if cand.size > k:
            part = cand[np.argpartition(-scores[cand], k - 1)[:k]]
            kth = scores[part].min()
            above = cand[scores[cand] > kth]
            at = cand[scores[cand] == kth][: k - above.size]  # cand is ascending: lowest positions win
            cand = np.concatenate([above, at])
        order = np.lexsort((cand, -scores[cand]))
        chosen = cand[order]
        return Results(ids=[self.doc_ids[i] for i in chosen], scores=scores[chosen])

    def _empty_score(self, ids: np.ndarray, dtype) -> np.generic:
        """The score of a document holding none of the terms ``ids`` (0, or bm25l/bm25+'s non-occurrence sum)."""
        baseline = np.zeros(1, dtype=dtype)[0]
        if self.retriever.nonoccurrence_array is not None:
            baseline = baseline + self.retriever.nonoccurrence_array[ids].sum()
        return baseline

    def _sharded_scores(self, ids: np.ndarray) -> np.ndarray:
        """Every document's score for ``ids``, as ``get_scores_from_ids`` gives it, computed by
        :func:`~patent_demo.text.bm25_shards.sharded_scores` on ``use_numba(shards=...)`` threads."""
        from patent_demo.text.bm25_shards import sharded_scores

        s = self.retriever.scores
        scores = sharded_scores(s["data"], s["indptr"], s["indices"], int(s["num_docs"]), ids, self._shards)
        scores = scores.astype(self.retriever.dtype, copy=False)
        if self.retriever.nonoccurrence_array is not None:
            scores += self.retriever.nonoccurrence_array[ids].sum()
        return scores

    def search(
        self, query: str, k: int = 1000, allowed: Iterable[str] | None = None, max_terms: int | None = None
    ) -> Results:
        """Top ``k`` documents for raw ``query`` text (fewer when fewer documents match; empty for an
        empty, stopword-only or out-of-vocabulary query). ``allowed`` (document ids) restricts the
        ranking to those documents before the top k is taken; ``max_terms`` scores with the query's
        ``max_terms`` terms of highest idf only (:meth:`prune`; ``None``: every term)."""
        return self.search_many([query], k=k, allowed=allowed, max_terms=max_terms)[0]

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 1000,
        allowed: Iterable[str] | None = None,
        max_terms: int | None = None,
    ) -> list[Results]:
        """``search`` for each query; the queries are tokenised in one batch."""
        if isinstance(queries, str):
            raise TypeError("search_many takes a list of query strings; use search() for one")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if max_terms is not None and max_terms < 1:
            raise ValueError(f"max_terms must be >= 1 (or None for every term), got {max_terms}")
        mask = None if allowed is None else self.allowed_mask(allowed)
        token_lists = self.tokenize(queries) if queries else []
        ids = [self._token_ids(t) for t in token_lists]
        if max_terms is not None:
            ids = [self.prune(t, max_terms) for t in ids]
        return [self._search_ids(t, k, mask) for t in ids]

    def search_weighted(
        self, weights: Mapping[str, float], k: int = 1000, allowed: Iterable[str] | None = None
    ) -> Results:
        """Top ``k`` documents for a weighted query ``{term: w}`` (terms as :meth:`tokenize` makes them):
        ``score(d) = sum_t w_t * score(t, d)``, the BM25 of a query holding term t w_t times (so integer
        counts rank as :meth:`search` of that text does). Terms outside the vocabulary and weights <= 0 are
        skipped; only documents holding a kept term come back. RM3 (``patent_demo.text.expansion``) uses it."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        vocab = self.retriever.vocab_dict
        kept = [(vocab[t], float(w)) for t, w in weights.items() if t in vocab and w > 0]
        if not kept:
            return Results.empty()
        s = self.retriever.scores
        data, indptr, indices = s["data"], s["indptr"], s["indices"]
        scores = np.zeros(len(self.doc_ids), dtype=np.float64)
        hit = np.zeros(len(self.doc_ids), dtype=bool)
        for tid, w in kept:
            rows = indices[indptr[tid] : indptr[tid + 1]]
            scores[rows] += w * data[indptr[tid] : indptr[tid + 1]]
            hit[rows] = True
        if self.retriever.nonoccurrence_array is not None:
            scores += sum(w * float(self.retriever.nonoccurrence_array[t]) for t, w in kept)
        mask = None if allowed is None else self.allowed_mask(allowed)
        return self._top(scores, hit, k, mask)

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: str | os.PathLike) -> Path:
        """Write the bm25s files and ``lexical.json`` (written last, atomically) into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(directory), show_progress=False)
        atomic_json(directory / PARAMS_FILE, self.params(), private=True, indent=1)
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, mmap: bool = False) -> BM25Index:
        """Load an index written by ``save``; ``mmap`` memory-maps the score arrays."""
        directory = Path(directory)
        params_path = directory / PARAMS_FILE
        if not params_path.is_file():
            raise FileNotFoundError(f"{directory} is not a BM25 index: {PARAMS_FILE} not found")
        params = json.loads(params_path.read_text(encoding="utf-8"))
        if params.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{params_path}: unsupported format_version {params.get('format_version')!r}")
        retriever = bm25s.BM25.load(str(directory), mmap=mmap, load_corpus=False)
        n_docs = int(retriever.scores["num_docs"])
        if n_docs != len(params["doc_ids"]):
            raise ValueError(
                f"{params_path}: {len(params['doc_ids'])} doc ids but the index holds {n_docs} documents"
            )
        for key in ("k1", "b", "method"):
            if getattr(retriever, key) != params[key]:
                raise ValueError(
                    f"{params_path}: {key}={params[key]!r} but bm25s params say {getattr(retriever, key)!r}"
                )
        return cls(retriever, params["doc_ids"], params["fields"], params["stopwords"], params["stemmer"])


def _tokenize(texts: list[str], stopwords: str | list[str] | None, stemmer) -> list[list[str]]:
    if not texts:
        return []
    out = bm25s.tokenize(texts, stopwords=stopwords, stemmer=stemmer, return_ids=False, show_progress=False)
    return [list(t) for t in out]
