"""The relevance-label store (SQLite in WAL mode) and its exports to training rows and TREC qrels.

Every judgement is one row, written in its own transaction before the UI answers, so no label is lost
across a restart. Undo never deletes: it marks the row ``undone`` and the row stays for the audit trail.

A query is identified by ``query_id``: ``img-<sha256[:16]>`` of the uploaded bytes, ``txt-<sha256[:16]>`` of
the normalised text, or ``mix-…`` of both. Labels: ``relevant`` (grade 2), ``partly`` (grade 1),
``not`` (grade 0); text hits may also carry a search-report category X / Y / A.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

GRADES = {"relevant": 2, "partly": 1, "not": 0}
CATEGORIES = ("", "X", "Y", "A")
LISTS = ("hmcl", "bm25", "dssdnet", "fused")
QUERY_KINDS = ("image", "text", "combined")

SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at      TEXT NOT NULL,
    annotator       TEXT NOT NULL,
    query_id        TEXT NOT NULL,
    query_kind      TEXT NOT NULL,
    query_text      TEXT NOT NULL DEFAULT '',
    query_codes     TEXT NOT NULL DEFAULT '{}',
    query_image_sha TEXT NOT NULL DEFAULT '',
    query_image_file TEXT NOT NULL DEFAULT '',
    query_patent_id TEXT NOT NULL DEFAULT '',
    candidate_id    TEXT NOT NULL,
    candidate_figure TEXT NOT NULL DEFAULT '',
    list_name       TEXT NOT NULL,
    rank            INTEGER NOT NULL,
    score           REAL NOT NULL,
    checkpoint_id   TEXT NOT NULL DEFAULT '',
    label           TEXT NOT NULL,
    category        TEXT NOT NULL DEFAULT '',
    note            TEXT NOT NULL DEFAULT '',
    undone          INTEGER NOT NULL DEFAULT 0,
    adjudicated     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS labels_query ON labels(query_id, candidate_id);
"""


class LabelError(ValueError):
    """A label that cannot be stored; the message says which field is wrong."""


@dataclass
class Label:
    """One judgement of one candidate shown for one query."""

    annotator: str
    query_id: str
    query_kind: str
    candidate_id: str
    list_name: str
    rank: int
    score: float
    label: str
    query_text: str = ""
    query_codes: dict = field(default_factory=dict)
    query_image_sha: str = ""
    query_image_file: str = ""
    query_patent_id: str = ""
    candidate_figure: str = ""
    checkpoint_id: str = ""
    category: str = ""
    note: str = ""
    adjudicated: bool = False
    id: int | None = None
    created_at: str = ""
    undone: bool = False

    @property
    def grade(self) -> int:
        return GRADES[self.label]

    def check(self) -> None:
        if not self.annotator.strip():
            raise LabelError("annotator is empty: enter your name (or sign in) before labelling")
        if self.label not in GRADES:
            raise LabelError(f"label {self.label!r} is not one of {sorted(GRADES)}")
        if self.category not in CATEGORIES:
            raise LabelError(f"category {self.category!r} is not one of X, Y, A or empty")
        if self.list_name not in LISTS:
            raise LabelError(f"list {self.list_name!r} is not one of {LISTS}")
        if self.query_kind not in QUERY_KINDS:
            raise LabelError(f"query kind {self.query_kind!r} is not one of {QUERY_KINDS}")
        if not self.query_id or not self.candidate_id:
            raise LabelError("a label needs a query and a candidate: run a search first")


def text_query_id(text: str) -> str:
    norm = " ".join(text.split()).lower()
    return "txt-" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def image_query_id(sha256: str) -> str:
    return "img-" + sha256[:16]


def combined_query_id(sha256: str, text: str) -> str:
    return "mix-" + hashlib.sha256((sha256 + "\n" + " ".join(text.split()).lower()).encode()).hexdigest()[:16]


class LabelStore:
    """Labels in one SQLite file (WAL journal, one short transaction per write, safe across threads)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.image_dir = self.path.parent / "query_images"
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- query images ---------------------------------------------------------------------------
    def save_query_image(self, data: bytes, suffix: str = ".png") -> tuple[str, str]:
        """Keep an uploaded query drawing beside the database; returns (sha256, path relative to it)."""
        sha = hashlib.sha256(data).hexdigest()
        self.image_dir.mkdir(parents=True, exist_ok=True)
        path = self.image_dir / f"{sha[:16]}{suffix}"
        if not path.exists():
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return sha, str(path.relative_to(self.path.parent))

    # -- writes -------------------------------------------------------------------------------------
    def add(self, label: Label) -> Label:
        """Store one judgement (committed before returning) and return it with id and time filled in."""
        label.check()
        label.created_at = label.created_at or datetime.now(UTC).isoformat(timespec="milliseconds")
        row = asdict(label)
        row.pop("id")
        row["query_codes"] = json.dumps(row["query_codes"], sort_keys=True)
        row["adjudicated"] = int(row["adjudicated"])
        row["undone"] = int(row["undone"])
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._lock:
            cur = self._conn.execute(f"INSERT INTO labels ({cols}) VALUES ({marks})", list(row.values()))
            label.id = cur.lastrowid
        return label

    def undo_last(self, annotator: str, query_id: str | None = None) -> Label | None:
        """Mark the annotator's latest live label (for ``query_id`` when given) undone; None when none is left."""
        sql = "SELECT * FROM labels WHERE annotator = ? AND undone = 0"
        args: list = [annotator]
        if query_id:
            sql += " AND query_id = ?"
            args.append(query_id)
        with self._lock:
            row = self._conn.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
            if row is None:
                return None
            self._conn.execute("UPDATE labels SET undone = 1 WHERE id = ?", (row["id"],))
        out = _row_to_label(row)
        out.undone = True
        return out

    def adjudicate(
        self, query_id: str, candidate_id: str, label: str, annotator: str, note: str = ""
    ) -> Label:
        """Store an adjudicated label for one (query, candidate) that annotators judged; it wins in every export.

        The query fields, list, rank, score, figure and checkpoint are copied from the latest annotator label
        that agrees with the verdict, else from the latest one (the category only from an agreeing label).
        """
        who, query_id, candidate_id = annotator.strip(), query_id.strip(), candidate_id.strip()
        if not who:
            raise LabelError("enter your name first: an adjudication is stored under the adjudicator's name")
        if not query_id or not candidate_id:
            raise LabelError("select a disagreement in the queue first (or give a query id and a candidate)")
        judged = [
            x for x in self.labels(query_id=query_id) if x.candidate_id == candidate_id and not x.adjudicated
        ]
        if not judged:
            raise LabelError(
                f"nobody labelled candidate {candidate_id!r} for query {query_id!r}: nothing to adjudicate"
            )
        src = max(judged, key=lambda x: (x.label == label, x.id))
        return self.add(
            Label(
                annotator=who,
                query_id=query_id,
                query_kind=src.query_kind,
                candidate_id=candidate_id,
                list_name=src.list_name,
                rank=src.rank,
                score=src.score,
                label=label,
                query_text=src.query_text,
                query_codes=src.query_codes,
                query_image_sha=src.query_image_sha,
                query_image_file=src.query_image_file,
                query_patent_id=src.query_patent_id,
                candidate_figure=src.candidate_figure,
                checkpoint_id=src.checkpoint_id,
                category=src.category if src.label == label else "",
                note=note.strip(),
                adjudicated=True,
            )
        )

    # -- reads ----------------------------------------------------------------------------------------
    def labels(self, include_undone: bool = False, query_id: str | None = None) -> list[Label]:
        sql = "SELECT * FROM labels WHERE 1=1"
        args: list = []
        if not include_undone:
            sql += " AND undone = 0"
        if query_id:
            sql += " AND query_id = ?"
            args.append(query_id)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY id", args).fetchall()
        return [_row_to_label(r) for r in rows]

    def count(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM labels WHERE undone = 0").fetchone()[0]

    def judged(self, query_id: str, annotator: str) -> dict[str, str]:
        """{candidate_id: label} of the annotator's live labels for one query (latest wins)."""
        out = {}
        for lab in self.labels(query_id=query_id):
            if lab.annotator == annotator:
                out[lab.candidate_id] = lab.label
        return out

    def resolved(self) -> dict[tuple[str, str], Label]:
        """One label per (query, candidate): an adjudicated label wins, else the majority grade among
        annotators (each annotator's latest label counts once), ties going to the most recent label."""
        latest: dict[tuple[str, str], dict[str, Label]] = defaultdict(dict)
        adjudicated: dict[tuple[str, str], Label] = {}
        for lab in self.labels():
            key = (lab.query_id, lab.candidate_id)
            if lab.adjudicated:
                adjudicated[key] = lab
            else:
                latest[key][lab.annotator] = lab
        out = {}
        for key, by_annotator in latest.items():
            if key in adjudicated:
                continue
            votes = Counter(lab.label for lab in by_annotator.values())
            top = max(votes.values())
            winners = {lbl for lbl, n in votes.items() if n == top}
            out[key] = max((lab for lab in by_annotator.values() if lab.label in winners), key=lambda x: x.id)
        out.update(adjudicated)
        return dict(sorted(out.items()))

    def disagreements(self) -> list[tuple[tuple[str, str], dict[str, str]]]:
        """(query, candidate) pairs where annotators' latest labels differ and nobody adjudicated yet."""
        latest: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
        done = set()
        for lab in self.labels():
            key = (lab.query_id, lab.candidate_id)
            if lab.adjudicated:
                done.add(key)
            else:
                latest[key][lab.annotator] = lab.label
        return [(k, v) for k, v in sorted(latest.items()) if k not in done and len(set(v.values())) > 1]

    # -- exports -------------------------------------------------------------------------------------
    def export_qrels(self, path: str | os.PathLike) -> int:
        """TREC qrels ``query_id 0 candidate_id grade`` (relevant 2, partly 1, not 0); returns the row count."""
        rows = [f"{q} 0 {c} {lab.grade}\n" for (q, c), lab in self.resolved().items()]
        _write_lines(path, rows)
        return len(rows)

    def export_dssdnet(self, path: str | os.PathLike, corpus=None) -> int:
        """JSONL rows ``{"query", "query_codes", "pos", "neg"}`` for ``train/dssdnet.py`` from text queries.

        ``pos`` holds candidates judged relevant or partly relevant (with their grade), ``neg`` those judged
        not relevant (hard negatives: they were ranked high). Candidate texts and codes come from ``corpus``.
        """
        groups = self._grouped(kinds=("text", "combined"))
        rows = []
        for first, labs in groups:
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
                    "query": first.query_text,
                    "query_codes": first.query_codes,
                    "query_patent_id": first.query_patent_id,
                    "pos": pos,
                    "neg": neg,
                }
            )
        _write_lines(path, [json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows])
        return len(rows)

    def export_hmcl(self, path: str | os.PathLike) -> int:
        """JSONL rows for ``train/hmcl.py`` from drawing queries: the anchor drawing with its judged positives
        (``grade`` 2 relevant, 1 partly) and hard negatives (judged not relevant after ranking in the top-k)."""
        groups = self._grouped(kinds=("image", "combined"))
        rows = []
        for first, labs in groups:
            if not first.query_image_sha:
                continue
            positives = [
                {
                    "patent_id": lab.candidate_id,
                    "figure": lab.candidate_figure,
                    "grade": lab.grade,
                    "rank": lab.rank,
                }
                for lab in labs
                if lab.grade > 0
            ]
            negatives = [
                {"patent_id": lab.candidate_id, "figure": lab.candidate_figure, "rank": lab.rank}
                for lab in labs
                if lab.grade == 0
            ]
            rows.append(
                {
                    "query_id": first.query_id,
                    "anchor": {
                        "image_sha256": first.query_image_sha,
                        "image_file": first.query_image_file,
                        "patent_id": first.query_patent_id,
                    },
                    "positives": positives,
                    "hard_negatives": negatives,
                }
            )
        _write_lines(path, [json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows])
        return len(rows)

    def _grouped(self, kinds: Iterable[str]) -> list[tuple[Label, list[Label]]]:
        by_query: dict[str, list[Label]] = defaultdict(list)
        for (_, _), lab in self.resolved().items():
            if lab.query_kind in kinds:
                by_query[lab.query_id].append(lab)
        return [
            (labs[0], sorted(labs, key=lambda x: (x.rank, x.candidate_id)))
            for _, labs in sorted(by_query.items())
        ]


def _row_to_label(row: sqlite3.Row) -> Label:
    d = dict(row)
    d["query_codes"] = json.loads(d["query_codes"] or "{}")
    d["adjudicated"] = bool(d["adjudicated"])
    d["undone"] = bool(d["undone"])
    return Label(**d)


def _write_lines(path: str | os.PathLike, lines: list[str]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, path)
