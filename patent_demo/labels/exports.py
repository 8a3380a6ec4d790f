"""The label store's exports: TREC qrels, HMCL and DSSDNet training rows, and the disputed pairs.

Only *decided* judgements are exported (``LabelStore.resolved``: an adjudication, else a strict
majority), and each training export takes only the modality it can learn from: HMCL rows come from
drawing judgements (query drawing against candidate drawing), DSSDNet rows from text judgements (query
text against candidate text). Patent-level judgements (a drawing and an abstract together) go only to
the qrels, which hold every decided judgement. Tied pairs go to ``disputed.jsonl`` and nowhere else. The
labelling guidelines the annotators worked by go with them (``guidelines.md``).
Every file is written atomically with mode 0600 in a 0700 folder.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Protocol

from patent_demo.labels.guidelines import Guidelines, corpus_key, guidelines_markdown
from patent_demo.labels.label import Label
from patent_demo.labels.private import write_private

EXPORT_FILES = ("qrels.txt", "hmcl.jsonl", "dssdnet.jsonl", "disputed.jsonl", "guidelines.md")


class LabelStore(Protocol):
    """What the exports read of a label store (``patent_demo.labels.store.LabelStore``, whose ``export_*``
    methods call these functions): its decided, disputed and stored labels."""

    def resolved(self) -> dict[tuple[str, str], Label]: ...

    def disputed(self) -> list[tuple[tuple[str, str], dict[str, str]]]: ...

    def labels(self, include_undone: bool = False, query_id: str | None = None) -> list[Label]: ...

    def guideline_versions(self, corpus: str) -> list[Guidelines]: ...

    def guideline_corpora(self) -> list[str]: ...


def _write_lines(path: str | os.PathLike, lines: list[str]) -> None:
    write_private(Path(path), "".join(lines).encode("utf-8"))


def _jsonl(rows: list[dict]) -> list[str]:
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows]


def grouped(store: LabelStore, modality: str) -> list[tuple[Label, list[Label]]]:
    """The decided judgements of one modality grouped by query: (first label, labels by rank)."""
    by_query: dict[str, list[Label]] = defaultdict(list)
    for lab in store.resolved().values():
        if lab.modality == modality:
            by_query[lab.query_id].append(lab)
    return [
        (labs[0], sorted(labs, key=lambda x: (x.rank, x.candidate_id)))
        for _, labs in sorted(by_query.items())
    ]


def export_qrels(store: LabelStore, path: str | os.PathLike) -> int:
    """TREC qrels ``query_id 0 candidate_id grade`` (relevant 2, partly 1, not 0) of every decided
    judgement of every modality; returns the row count."""
    rows = [f"{q} 0 {c} {lab.grade}\n" for (q, c), lab in store.resolved().items()]
    _write_lines(path, rows)
    return len(rows)


def export_disputed(store: LabelStore, path: str | os.PathLike) -> int:
    """JSONL ``{"query_id", "candidate_id", "modality", "votes": {annotator: label}}`` of the tied pairs."""
    modality = {(x.query_id, x.candidate_id): x.modality for x in store.labels()}
    rows = [
        {"query_id": q, "candidate_id": c, "modality": modality[(q, c)], "votes": votes}
        for (q, c), votes in store.disputed()
    ]
    _write_lines(path, _jsonl(rows))
    return len(rows)


def export_dssdnet(store: LabelStore, path: str | os.PathLike, corpus=None) -> int:
    """JSONL rows ``{"query", "query_codes", "pos", "neg"}`` for ``train/dssdnet/main.py`` from decided text
    judgements. ``pos`` holds candidates judged relevant or partly relevant (with their grade), ``neg``
    those judged not relevant (hard negatives: they were ranked high). Candidate texts and codes come
    from ``corpus``."""
    rows = []
    for first, labs in grouped(store, "text"):
        if not first.query_text:
            continue
        pos, neg = [], []
        for lab in labs:
            item = {"id": lab.candidate_id, "grade": lab.grade, "rank": lab.rank, "list": lab.list_name}
            if lab.category:
                item["category"] = lab.category
            if corpus is not None and lab.candidate_id in corpus:
                p = corpus[lab.candidate_id]
                item.update(text=f"{p.title}. {p.text}".strip(), codes=p.codes)
            (pos if lab.grade > 0 else neg).append(item)
        rows.append(
            {
                "query_id": first.query_id,
                "modality": "text",
                "query": first.query_text,
                "query_codes": first.query_codes,
                "query_patent_id": first.query_patent_id,
                "pos": pos,
                "neg": neg,
            }
        )
    _write_lines(path, _jsonl(rows))
    return len(rows)


def _query_figure(lab: Label) -> dict:
    """``{"query_figure": {"name", "box"}}`` for a judgement made on a sheet search (the figure of the sheet
    that was the query, its box in pixels of the anchor drawing), else nothing: the anchor as a whole."""
    return {"query_figure": lab.query_figure} if lab.query_figure else {}


def export_hmcl(store: LabelStore, path: str | os.PathLike) -> int:
    """JSONL rows for ``train/hmcl/main.py`` from decided drawing judgements: the anchor drawing with its
    judged positives (``grade`` 2 relevant, 1 partly) and hard negatives (judged not relevant after
    ranking in the top-k), each naming the candidate figure that was shown and, for a sheet search, the
    figure of the sheet that was the query (``query_figure``: its name and box on the anchor drawing)."""
    rows = []
    for first, labs in grouped(store, "drawing"):
        if not first.query_image_sha:
            continue
        rows.append(
            {
                "query_id": first.query_id,
                "modality": "drawing",
                "anchor": {
                    "image_sha256": first.query_image_sha,
                    "image_file": first.query_image_file,
                    "patent_id": first.query_patent_id,
                },
                "positives": [
                    {
                        "patent_id": x.candidate_id,
                        "figure": x.candidate_figure,
                        "grade": x.grade,
                        "rank": x.rank,
                        **_query_figure(x),
                    }
                    for x in labs
                    if x.grade > 0
                ],
                "hard_negatives": [
                    {
                        "patent_id": x.candidate_id,
                        "figure": x.candidate_figure,
                        "rank": x.rank,
                        **_query_figure(x),
                    }
                    for x in labs
                    if x.grade == 0
                ],
            }
        )
    _write_lines(path, _jsonl(rows))
    return len(rows)


def export_guidelines(store: LabelStore, path: str | os.PathLike, corpus=None) -> int:
    """``guidelines.md``: the labelling guidelines of ``corpus`` (every corpus with saved ones when None) in
    force and every earlier version (``labels.guidelines``); returns the number of saved versions."""
    names = [corpus_key(corpus)] if corpus is not None else store.guideline_corpora() or ["every corpus"]
    versions = {name: store.guideline_versions(name) for name in names}
    text = "\n".join(guidelines_markdown(v, name) for name, v in versions.items())
    write_private(Path(path), text.encode("utf-8"))
    return sum(map(len, versions.values()))


def export_all(store: LabelStore, out_dir: str | os.PathLike, corpus=None) -> dict[str, tuple[Path, int]]:
    """Every export into ``out_dir``: ``{file name: (path, rows)}`` for ``EXPORT_FILES``."""
    out = Path(out_dir)
    writers = {
        "qrels.txt": lambda p: export_qrels(store, p),
        "hmcl.jsonl": lambda p: export_hmcl(store, p),
        "dssdnet.jsonl": lambda p: export_dssdnet(store, p, corpus),
        "disputed.jsonl": lambda p: export_disputed(store, p),
        "guidelines.md": lambda p: export_guidelines(store, p, corpus),
    }
    return {name: (out / name, writers[name](out / name)) for name in EXPORT_FILES}
