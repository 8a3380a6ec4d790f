"""Training data of ``train/dssdnet.py``: (query, candidate, y, t) pairs from three sources.

* **Labelled-pair TSV** (the public DSSDNet data, ``loaders.textcorpus.load_labelled_pairs``): pairs as
  given; ``t`` from the file's ``ipc_3`` column.
* **Label JSONL** (``labels.LabelStore.export_dssdnet``): ``{"query", "query_codes", "pos", "neg"}``
  rows; every ``pos`` item (any grade > 0) is a positive, every ``neg`` item a negative. Items without
  ``text`` take it, and their codes, from a library corpus (``--corpus``/...), which is then required.
* **Corpus + qrels**: queries are patents with in-library citations (or qrels). Positives are the
  relevant documents; negatives are drawn as the article does, at random from the library, one per
  positive, afresh every epoch, plus optionally the ``bm25_negatives`` highest-ranked non-relevant
  BM25 candidates of each query (fixed).

The domain label ``t`` of a generated pair is Eq. 4 over the chosen scheme
(``taxonomy.domain_label``), 0 when either side has no code of that scheme.

Splits: a corpus with ``splits.json`` keeps them (queries from the train and val splits; test
queries from its qrels when it has them, else from the test split's citations). Otherwise, and for
the pair sources, each query id goes to test, val or train by a hash of the id, so the split is
the same on every run and machine.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus, CorpusError
from patent_demo.taxonomy import domain_label
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.search import TextQuery, candidate_text, first_stage, patent_query

SPLITS = ("train", "val", "test")
VAL_PAIR_SEED = 20240601  # fixed: validation negatives are the same for every training seed


@dataclass(frozen=True)
class Pair:
    """One training pair: ``y`` 1.0 relevant / 0.0 not; ``t`` the domain label (Eq. 4)."""

    qid: str
    query: str
    doc: str
    y: float
    t: float
    doc_id: str = ""


def hash_split(qid: str, val_fraction: float, test_fraction: float) -> str:
    """ "test", "val" or "train" for ``qid`` from the first 8 hex digits of its SHA-1."""
    u = int(hashlib.sha1(qid.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    if u < test_fraction:
        return "test"
    return "val" if u < test_fraction + val_fraction else "train"


def scheme_t(codes_a: Mapping | None, codes_b: Mapping | None, scheme: str, level: str = "subclass") -> float:
    """Eq. 4 over ``scheme``: 1.0 when the two code sets overlap at ``level``; 0.0 when either is empty."""
    a = list((codes_a or {}).get(scheme, []) or [])
    b = list((codes_b or {}).get(scheme, []) or [])
    return float(domain_label(a, b, level=level, scheme=scheme)) if a and b else 0.0


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
            q.qid, q.text, candidate_text(p), y, scheme_t(q.codes, p.codes, self.scheme, self.level), doc_id
        )

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
            by_split[hash_split(qid, val_fraction, test_fraction)][qid] = rel
    queries: dict[str, list[TextQuery]] = {}
    for s in SPLITS:
        qids = sorted(
            q for q, rel in by_split[s].items() if q in library and any(v > 0 for v in rel.values())
        )
        if max_queries is not None:
            qids = qids[:max_queries]
        by_split[s] = {q: by_split[s][q] for q in qids}
        queries[s] = [patent_query(library[q]) for q in qids]
    return CorpusTask(library, queries, by_split, scheme, level)


# -- pair sources ------------------------------------------------------------------------------------
@dataclass
class PairTask:
    """Fixed pairs per split (TSV or label JSONL); ``groups`` hold the held-out queries' candidates."""

    pairs: dict[str, list[Pair]]
    scheme: str
    rows: int = 0

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for p in self.pairs[split]:
            out.setdefault(p.qid, {})[p.doc_id] = int(p.y > 0)
        return out


def _split_pairs(pairs: Sequence[Pair], val_fraction: float, test_fraction: float) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    for p in pairs:
        out[hash_split(p.qid, val_fraction, test_fraction)].append(p)
    return out


def tsv_task(path: str | os.PathLike, val_fraction: float = 0.15, test_fraction: float = 0.15) -> PairTask:
    """Pairs of a DSSDNet labelled-pair TSV, split by the query id (``#1 ID``)."""
    from patent_demo.data.loaders.textcorpus import load_labelled_pairs

    rows = load_labelled_pairs(path)
    pairs = [Pair(r.id_a, r.text_a, r.text_b, float(r.label), float(r.t), r.id_b) for r in rows]
    return PairTask(_split_pairs(pairs, val_fraction, test_fraction), "ipc", rows=len(rows))


def jsonl_task(
    path: str | os.PathLike,
    library: Corpus | None = None,
    scheme: str = "auto",
    level: str = "subclass",
    val_fraction: float = 0.15,
    test_fraction: float = 0.15,
    seed: int = 0,
) -> PairTask:
    """Pairs of a ``{"query", "query_codes", "pos", "neg"}`` JSONL file (the label export). A query
    with fewer negatives than positives is topped up with random library patents when a library is given."""
    scheme = resolve_scheme(scheme, library)
    rng = np.random.default_rng([seed, 7])
    pairs: list[Pair] = []
    n_rows = 0
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise CorpusError(f"{where}: not JSON ({err.msg})") from None
            if not isinstance(row, dict) or not str(row.get("query") or "").strip():
                raise CorpusError(f"{where}: expected an object with a non-empty 'query'")
            n_rows += 1
            qtext = str(row["query"]).strip()
            qid = str(row.get("query_id") or hashlib.sha1(qtext.encode("utf-8")).hexdigest()[:12])
            qcodes = row.get("query_codes") or {}
            seen = set()
            for y, key in ((1.0, "pos"), (0.0, "neg")):
                for j, item in enumerate(row.get(key) or []):
                    text, codes, did = _item(item, library, f"{where}: {key}[{j}]")
                    seen.add(did)
                    pairs.append(Pair(qid, qtext, text, y, scheme_t(qcodes, codes, scheme, level), did))
            n_pos, n_neg = len(row.get("pos") or []), len(row.get("neg") or [])
            if library is not None and n_neg < n_pos:
                ids = [p.id for p in library if p.id not in seen and p.id != row.get("query_patent_id")]
                for i in rng.choice(len(ids), size=min(n_pos - n_neg, len(ids)), replace=False):
                    p = library[ids[int(i)]]
                    pairs.append(
                        Pair(
                            qid, qtext, candidate_text(p), 0.0, scheme_t(qcodes, p.codes, scheme, level), p.id
                        )
                    )
    return PairTask(_split_pairs(pairs, val_fraction, test_fraction), scheme, rows=n_rows)


def _item(item: Mapping, library: Corpus | None, where: str) -> tuple[str, dict, str]:
    did = str(item.get("id") or "")
    text = str(item.get("text") or "").strip()
    codes = item.get("codes") or {}
    if library is not None and did in library:
        text = text or candidate_text(library[did])
        codes = codes or library[did].codes
    if not text:
        raise CorpusError(
            f"{where}: candidate {did!r} has no 'text'; pass the library it comes from "
            f"(--corpus DIR / --demo-patents N / --text-corpus FILE) or export labels with the corpus"
        )
    return text, dict(codes), did or hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def load_library(args) -> tuple[Corpus | None, dict[str, dict[str, int]] | None]:
    """The library corpus named by the command line (``--corpus``, ``--demo-patents``, ``--text-corpus``)
    and explicit qrels (``--pairs`` citation pairs or ``--qrels``), if any."""
    from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs

    qrels = None
    if args.text_corpus:
        library = load_text_corpus(args.text_corpus)
        if args.pairs:
            pairs = [(a, b) for a, b in read_pairs(args.pairs) if a in library and b in library]
            qrels = qrels_from_pairs(pairs)
    elif args.corpus:
        library = Corpus.load(args.corpus, validate=False)
    elif args.demo_patents:
        from patent_demo.data.democorpus import ensure_demo_corpus

        library = ensure_demo_corpus(
            Path(args.cache_dir) / "democorpus",
            patents=args.demo_patents,
            seed=args.demo_seed,
            size=args.demo_size,
        )
    else:
        return None, None
    if args.qrels:
        from patent_demo.data.corpus import read_qrels

        qrels = read_qrels(args.qrels)
    return library, qrels


@dataclass
class TrainingData:
    """What ``train/dssdnet.py`` trains and evaluates on (see :func:`training_data`)."""

    train_task: PairTask | None
    corpus_task: CorpusTask | None
    scheme: str
    val_pairs: list[Pair]
    fixed_train: list[Pair]
    seed: int
    negative_seed: int | None = None
    fixed_negatives: bool = False

    @property
    def eval_task(self) -> CorpusTask | PairTask | None:
        return self.corpus_task if self.corpus_task is not None else self.train_task

    def epoch_pairs(self, epoch: int) -> list[Pair]:
        """The training pairs of ``epoch``: the fixed pairs of a pair source; for a corpus its
        positives, one random negative each (drawn per epoch unless ``fixed_negatives``) and the
        BM25 negatives."""
        if self.train_task is not None:
            return list(self.fixed_train)
        task = self.corpus_task
        seed = self.seed if self.negative_seed is None else self.negative_seed
        rng = np.random.default_rng([seed, 0 if self.fixed_negatives else epoch])
        pos = [task.pair(q, d, 1.0) for q, d in task.positives("train")]
        return pos + task.random_negatives("train", rng) + self.fixed_train


def training_data(args) -> TrainingData:
    """Read the data source named by the command line (``train/dssdnet.py``'s arguments)."""
    library, qrels = load_library(args)
    if args.tsv and args.labels:
        raise SystemExit("give one of --tsv and --labels")
    pair_test = args.test_fraction if args.test_fraction is not None else 0.15
    train_task = None
    if args.tsv:
        train_task = tsv_task(args.tsv, args.val_fraction, pair_test)
    elif args.labels:
        train_task = jsonl_task(
            args.labels,
            library,
            args.domain_scheme,
            args.domain_level,
            args.val_fraction,
            pair_test,
            args.seed,
        )
    elif library is None:
        raise SystemExit(
            "no training data: give --tsv, --labels, or a library with qrels (--corpus, --demo-patents, --text-corpus)"
        )
    ctask = None
    if library is not None:
        test = args.test_fraction if args.test_fraction is not None else 0.3
        ctask = corpus_task(
            library, qrels, args.domain_scheme, args.domain_level, args.val_fraction, test, args.max_queries
        )
    if train_task is not None:
        fixed, val = train_task.pairs["train"], train_task.pairs["val"]
    else:
        fixed = ctask.bm25_negatives("train", args.bm25_negatives, args.k_first)
        val = [ctask.pair(q, d, 1.0) for q, d in ctask.positives("val")]
        val += ctask.random_negatives("val", np.random.default_rng(VAL_PAIR_SEED))
    scheme = ctask.scheme if ctask is not None else train_task.scheme
    return TrainingData(
        train_task, ctask, scheme, val, fixed, args.seed, args.negative_seed, args.fixed_negatives
    )
