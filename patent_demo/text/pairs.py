"""Labelled (query, candidate) pairs: the unit DSSDNet trains on and the labelled-pair files it is
evaluated on.

* :class:`Pair`: one pair; ``y`` the relevance in [0, 1] (1/0, or a graded score), ``t`` the domain
  label of Eq. 4 (NaN when the data has none: the query or the candidate lacks a code of the scheme,
  and then the model uses its own prediction, see ``patent_demo.text.reranker.fill_t``).
* :func:`domain_t`: Eq. 4 over one scheme, the one place ``t`` is computed from codes for training,
  evaluation and the app.
* :func:`read_pair_file`: a DSSDNet labelled-pair TSV or label-export JSONL file -> pairs.
* :func:`pair_qrels`: graded qrels of pairs (``round(4 y)``: quarter steps of the score become grades 0-4).
* :func:`bm25_pair_run`: the BM25 baseline of a pair task, each query against its own candidates.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patent_demo.data.corpus import Corpus, CorpusError, iter_jsonl
from patent_demo.results import Results

GRADE_STEPS = 4  # y in [0, 1] -> qrels grade round(4 y): 0, 0.25, ..., 1 -> 0, 1, ..., 4


@dataclass(frozen=True)
class Pair:
    """One labelled pair: ``y`` relevance in [0, 1]; ``t`` the domain label (Eq. 4) or NaN if unknown."""

    qid: str
    query: str
    doc: str
    y: float
    t: float
    doc_id: str = ""


def domain_t(
    codes_a: Mapping | Sequence[str] | None,
    codes_b: Mapping | Sequence[str] | None,
    scheme: str,
    level: str = "subclass",
) -> float:
    """Eq. 4 over ``scheme``: 1.0 when the two code sets overlap at ``level``, 0.0 when they do not,
    NaN when either side has no code of the scheme (the label is unknown). Codes are a
    ``{scheme: [codes]}`` mapping like ``Patent.codes`` or a list of the scheme's codes."""
    from patent_demo.hierarchy import domain_label

    a, b = _codes(codes_a, scheme), _codes(codes_b, scheme)
    if not a or not b:
        return math.nan
    return float(domain_label(a, b, level=level, scheme=scheme))


def _codes(codes, scheme: str) -> list[str]:
    if not codes:
        return []
    if isinstance(codes, Mapping):
        return [str(c) for c in codes.get(scheme, []) or []]
    if isinstance(codes, str):
        return [codes]
    return [str(c) for c in codes]


def grade(y: float) -> int:
    """The qrels grade of a relevance score ``y`` in [0, 1]."""
    return int(round(GRADE_STEPS * float(y)))


def pair_qrels(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """``{qid: {doc_id: grade(y)}}`` of ``pairs`` (graded; a grade > 0 is relevant)."""
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        out.setdefault(p.qid, {})[p.doc_id] = grade(p.y)
    return out


def group_pairs(pairs: Sequence[Pair]) -> dict[str, list[Pair]]:
    """Pairs per query id, each query's candidates once (the first pair of a repeated doc id kept)."""
    groups: dict[str, dict[str, Pair]] = {}
    for p in pairs:
        groups.setdefault(p.qid, {}).setdefault(p.doc_id, p)
    return {q: list(g.values()) for q, g in groups.items()}


def _tie_key(doc_id: str) -> str:
    return hashlib.sha1(doc_id.encode("utf-8")).hexdigest()


def bm25_pair_run(pairs: Sequence[Pair], **bm25_params) -> dict[str, Results]:
    """The BM25 baseline of a pair task: for each query, its own candidates ranked by BM25 (an index
    over that query's candidate texts, ``BM25Index.build`` defaults or ``bm25_params``). Its term
    statistics (idf, average length) therefore come from that query's candidates alone, as few as two
    documents: a weaker baseline than BM25 over a corpus, which ``evaluate text --corpus`` uses. Candidates
    sharing no term with the query score 0. Ties are broken by a hash of the doc id, never by the
    file's order, so a file sorted by label ranks exactly as the same file shuffled."""
    from patent_demo.text.bm25 import BM25Index

    run = {}
    for qid, group in group_pairs(pairs).items():
        group = sorted(group, key=lambda p: _tie_key(p.doc_id))
        docs = [{"id": p.doc_id, "text": p.doc} for p in group]
        try:
            index = BM25Index.build(docs, fields=("text",), **bm25_params)
            found = index.search(group[0].query, k=len(group))
        except ValueError:  # every candidate text is empty or stopwords
            found = Results.empty()
        score = dict(zip(found.ids, found.scores.tolist(), strict=True))
        ids = list(found.ids) + [p.doc_id for p in group if p.doc_id not in score]
        run[qid] = Results(ids, [score.get(d, 0.0) for d in ids])
    return run


# -- files ------------------------------------------------------------------------------------------
def read_tsv_pairs(path: str | os.PathLike) -> list[Pair]:
    """The pairs of a DSSDNet labelled-pair TSV (``Quality`` in [0, 1], ``ipc_3`` as ``t``), file order."""
    from patent_demo.data.loaders.textcorpus import load_labelled_pairs

    return [
        Pair(r.id_a, r.text_a, r.text_b, float(r.label), float(r.t), r.id_b)
        for r in load_labelled_pairs(path)
    ]


def jsonl_rows_pairs(
    rows: Sequence[tuple[str, dict]],
    library: Corpus | None = None,
    scheme: str = "ipc",
    level: str = "subclass",
) -> list[Pair]:
    """Pairs of label-export rows ``{"query", "query_codes", "pos", "neg"}`` (``(where, row)`` tuples).

    A ``pos`` item with a ``grade`` of 1 (partly relevant) gets ``y = 0.5``, any other ``pos`` item 1.0,
    an item's own ``y`` (a score in [0, 1]) wins; every ``neg`` item is 0. Items without ``text`` take
    it, and their codes, from ``library``, which is then required."""
    from patent_demo.text.search import candidate_text

    pairs: list[Pair] = []
    for where, row in rows:
        if not isinstance(row, dict) or not str(row.get("query") or "").strip():
            raise CorpusError(f"{where}: expected an object with a non-empty 'query'")
        qtext = str(row["query"]).strip()
        qid = str(row.get("query_id") or hashlib.sha1(qtext.encode("utf-8")).hexdigest()[:12])
        qcodes = row.get("query_codes") or {}
        for key in ("pos", "neg"):
            for j, item in enumerate(row.get(key) or []):
                label = f"{where}: {key}[{j}]"
                did = str(item.get("id") or "")
                text = str(item.get("text") or "").strip()
                codes = item.get("codes") or {}
                if library is not None and did in library:
                    text = text or candidate_text(library[did])
                    codes = codes or library[did].codes
                if not text:
                    raise CorpusError(
                        f"{label}: candidate {did!r} has no 'text'; pass the library it comes from "
                        f"(--corpus DIR / --demo-patents N / --text-corpus FILE) or export labels with the corpus"
                    )
                y = _item_y(item, key, label)
                did = did or hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
                pairs.append(Pair(qid, qtext, text, y, domain_t(qcodes, codes, scheme, level), did))
    return pairs


def _item_y(item: Mapping, key: str, where: str) -> float:
    if key == "neg":
        return 0.0
    if "y" in item:
        try:
            y = float(item["y"])
        except (TypeError, ValueError):
            raise CorpusError(f"{where}: y {item['y']!r} is not a number") from None
        if not 0.0 <= y <= 1.0:
            raise CorpusError(f"{where}: y {y} is not in [0, 1]")
        return y
    return 0.5 if str(item.get("grade", "")) == "1" else 1.0


def read_jsonl_pairs(
    path: str | os.PathLike, library: Corpus | None = None, scheme: str = "ipc", level: str = "subclass"
) -> list[Pair]:
    """The pairs of a label-export JSONL file (see :func:`jsonl_rows_pairs`)."""
    rows = [(f"{path}:{lineno}", row) for lineno, row in iter_jsonl(path, "label row")]
    return jsonl_rows_pairs(rows, library, scheme, level)


def read_pair_file(
    path: str | os.PathLike, library: Corpus | None = None, scheme: str = "ipc", level: str = "subclass"
) -> list[Pair]:
    """A labelled-pair file by its extension: ``.tsv`` (DSSDNet TSV) or ``.jsonl``/``.json`` (label rows)."""
    suffix = Path(path).suffix.lower()
    if suffix in (".tsv", ".txt"):
        return read_tsv_pairs(path)
    if suffix in (".jsonl", ".json"):
        return read_jsonl_pairs(path, library, scheme, level)
    raise CorpusError(f"{path}: expected a .tsv (DSSDNet pairs) or .jsonl (label rows) file")
