"""Citation re-ranking as a training and evaluation task: a library corpus with citations or qrels becomes
train / val / test queries with their positives and negatives (:func:`corpus_task`).

Splits: a corpus with ``splits.json`` keeps them (queries from the train and val splits; test queries from
its qrels when it has them, else from the test split's citations). Otherwise each query goes to test, val or
train by a hash of its *family* (:func:`hash_split`, :func:`families`), so members of one family never sit
on both sides of a split, and the split is the same on every run and machine. Negatives are drawn as the
DSSDNet article does, at random from the library, one per positive, afresh every epoch, plus optionally the
highest-ranked non-relevant BM25 or hybrid candidates of each query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.pairs import Pair, domain_t
from patent_demo.text.search import TextQuery, candidate_text, first_stage, patent_query

SPLITS = ("train", "val", "test")
VAL_PAIR_SEED = 20240601  # fixed: validation negatives are the same for every training seed


def hash_split(qid: str, val_fraction: float, test_fraction: float) -> str:
    """ "test", "val" or "train" for ``qid`` from the first 8 hex digits of its SHA-1."""
    u = int(hashlib.sha1(qid.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    if u < test_fraction:
        return "test"
    return "val" if u < test_fraction + val_fraction else "train"


def families(library: Corpus) -> dict[str, str]:
    """``{patent id: family key}``: the smallest id of the connected group of library patents linked by
    ``extra["family_members"]`` (either direction); a patent with no family in the library is its own key."""
    parent = {p.id: p.id for p in library}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in library:
        for m in (p.extra or {}).get("family_members") or []:
            if m in parent and m != p.id:
                a, b = find(p.id), find(m)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {pid: find(pid) for pid in parent}


def resolve_scheme(scheme: str, library: Corpus | None) -> str:
    """``auto``: IPC when at least half the library's patents carry IPC codes (or there is no
    library), else CPC when they carry CPC, else Locarno (design corpora such as the built-in one)."""
    if scheme != "auto":
        return scheme
    if library is None or not len(library):
        return "ipc"
    n = len(library)
    for s in ("ipc", "cpc"):
        if 2 * sum(1 for p in library if p.codes.get(s)) >= n:
            return s
    return "locarno"


@dataclass
class CorpusTask:
    """Queries and qrels per split over a library; BM25 is built once, on first use."""

    library: Corpus
    queries: dict[str, list[TextQuery]]
    qrels: dict[str, dict[str, dict[str, int]]]
    scheme: str
    level: str = "subclass"
    bm25_fields: tuple[str, ...] = ("title", "text")
    fractions: tuple[float, float] = (0.15, 0.3)
    family_of: dict[str, str] = field(default_factory=dict)
    _bm25: BM25Index | None = field(default=None, repr=False)

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = BM25Index.build(self.library, fields=self.bm25_fields)
        return self._bm25

    def positives(self, split: str) -> list[tuple[TextQuery, str]]:
        """(query, relevant id) of every relevant document of ``split``'s queries, in a fixed order."""
        out = []
        for q in self.queries[split]:
            out += [(q, d) for d, rel in sorted(self.qrels[split][q.qid].items()) if rel > 0]
        return out

    def pair(self, q: TextQuery, doc_id: str, y: float) -> Pair:
        p = self.library[doc_id]
        return Pair(
            q.qid, q.text, candidate_text(p), y, domain_t(q.codes, p.codes, self.scheme, self.level), doc_id
        )

    def split_of(self, pid: str) -> str | None:
        """The split whose queries include ``pid``, or None."""
        for s in SPLITS:
            if pid in self.qrels[s]:
                return s
        return None

    def family_pairs(self, split: str, rng: np.random.Generator) -> list[Pair]:
        """Each same-family pair (both directions) of patents whose family falls in ``split`` (by the
        hash of the family key), as a positive, plus one random negative each."""
        val_f, test_f = self.fractions
        groups: dict[str, list[str]] = {}
        for pid, key in self.family_of.items():
            groups.setdefault(key, []).append(pid)
        ids = [p.id for p in self.library]
        out = []
        for key, members in sorted(groups.items()):
            if len(members) < 2 or hash_split(key, val_f, test_f) != split:
                continue
            for a in sorted(members):
                q = patent_query(self.library[a])
                for b in sorted(members):
                    if b == a:
                        continue
                    out.append(self.pair(q, b, 1.0))
                    while True:
                        d = ids[int(rng.integers(len(ids)))]
                        if d not in members:
                            break
                    out.append(self.pair(q, d, 0.0))
        return out

    def random_negatives(self, split: str, rng: np.random.Generator) -> list[Pair]:
        """One negative per positive, drawn uniformly from the library outside the query's relevant set."""
        ids = [p.id for p in self.library]
        out = []
        for q, _ in self.positives(split):
            banned = set(self.qrels[split][q.qid]) | set(q.exclude)
            while True:
                d = ids[int(rng.integers(len(ids)))]
                if d not in banned:
                    break
            out.append(self.pair(q, d, 0.0))
        return out

    def hybrid_negatives(self, split: str, n: int, cache_dir: str = "cache", depth: int = 100) -> list[Pair]:
        """The ``n`` best-ranked non-relevant candidates of each query of ``split`` in the untrained hybrid
        list (BM25 + the packaged MiniLM, the app's first stage and re-ranking pool)."""
        if n <= 0:
            return []
        from patent_demo.text.bm25 import BM25Index
        from patent_demo.text.dense import TextEncoder, cached_dense_index
        from patent_demo.text.hybrid import load_hybrid_settings
        from patent_demo.text.lists import FirstStage, first_stage_runs
        from patent_demo.workbench import corpus_fingerprint

        enc = TextEncoder()
        dense = cached_dense_index(
            enc, self.library.patents, Path(cache_dir) / "dense" / corpus_fingerprint(self.library)
        )
        stage = FirstStage(BM25Index.build(self.library.patents), dense, enc, load_hybrid_settings())
        run = first_stage_runs(stage, self.queries[split], min(depth, len(self.library)), ("hybrid",))[
            "hybrid"
        ]
        out = []
        for q in self.queries[split]:
            rel = self.qrels[split][q.qid]
            hard = [d for d in run[q.qid].ids if rel.get(d, 0) <= 0 and d not in q.exclude][:n]
            out += [self.pair(q, d, 0.0) for d in hard]
        return out

    def bm25_negatives(self, split: str, n: int, k_first: int = 1000) -> list[Pair]:
        """The ``n`` best-ranked non-relevant BM25 candidates of each query of ``split``."""
        if n <= 0:
            return []
        run = first_stage(self.bm25, self.queries[split], k=min(k_first, len(self.library)))
        out = []
        for q in self.queries[split]:
            rel = self.qrels[split][q.qid]
            hard = [d for d in run[q.qid].ids if rel.get(d, 0) <= 0][:n]
            out += [self.pair(q, d, 0.0) for d in hard]
        return out


def corpus_task(
    library: Corpus,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    scheme: str = "auto",
    level: str = "subclass",
    val_fraction: float = 0.15,
    test_fraction: float = 0.3,
    max_queries: int | None = None,
) -> CorpusTask:
    """Queries per split over ``library`` (see the module docstring); a query's relevant documents are
    its qrels, else its citations that lie in the library; queries with none are dropped.
    ``max_queries`` keeps the first queries (by id) of each split, for quick runs."""
    scheme = resolve_scheme(scheme, library)
    family_of = families(library)
    all_qrels = {str(q): dict(d) for q, d in (qrels if qrels is not None else library.qrels).items()}
    citation_qrels = {}
    for p in library:
        cited = {c: 1 for c in p.citations if c in library and c != p.id}
        if cited:
            citation_qrels[p.id] = cited
    by_split: dict[str, dict[str, dict[str, int]]] = {s: {} for s in SPLITS}
    if library.splits.get("train"):
        split_of = {pid: s for s in SPLITS for pid in library.splits.get(s, [])}
        for qid, rel in citation_qrels.items():
            if split_of.get(qid) in ("train", "val"):
                by_split[split_of[qid]][qid] = rel
        test_ids = set(library.splits.get("test", []))
        if all_qrels:
            by_split["test"] = {q: r for q, r in all_qrels.items() if q in test_ids or q not in split_of}
        else:
            by_split["test"] = {q: r for q, r in citation_qrels.items() if q in test_ids}
    else:
        for qid, rel in (all_qrels or citation_qrels).items():
            by_split[hash_split(family_of.get(qid, qid), val_fraction, test_fraction)][qid] = rel
    queries: dict[str, list[TextQuery]] = {}
    for s in SPLITS:
        qids = sorted(
            q for q, rel in by_split[s].items() if q in library and any(v > 0 for v in rel.values())
        )
        if max_queries is not None:
            qids = qids[:max_queries]
        by_split[s] = {q: by_split[s][q] for q in qids}
        queries[s] = [patent_query(library[q]) for q in qids]
    return CorpusTask(
        library,
        queries,
        by_split,
        scheme,
        level,
        fractions=(val_fraction, test_fraction),
        family_of=family_of,
    )


# -- pair sources ------------------------------------------------------------------------------------
