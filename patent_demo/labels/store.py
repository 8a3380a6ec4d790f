"""The relevance-label store (SQLite in WAL mode) and its exports to training rows and TREC qrels.

Every judgement is one row, written in its own transaction with ``synchronous=FULL`` before the UI
answers, so an acknowledged label survives a crash or power cut. Undo never deletes: it marks the row
``undone`` and the row stays for the audit trail. The database, its WAL, the kept query drawings and
the exports are readable by their owner only (files 0600, folders 0700).

A query is identified by ``query_id``: ``img-<sha256[:16]>`` of the uploaded bytes, ``txt-<sha256[:16]>`` of
the normalised text, ``mix-…`` of both, or ``app-…`` of the views of a whole application (in any order). Labels: ``relevant`` (grade 2), ``partly`` (grade 1),
``not`` (grade 0). Each label records the **modality** of the judged pair, set by the query kind: a
drawing query judges drawing against drawing (``drawing``), a text query text against text (``text``), a
drawing and an abstract together, or the views of a whole application, judge whole patents (``patent``). Exports follow the modality: HMCL
rows come only from ``drawing`` judgements, DSSDNet rows only from ``text`` ones, and every decided
judgement (``patent`` ones only there) goes to the qrels. Text hits may carry a search-report category
X / Y / A.

A (query, candidate) is *decided* by an adjudicated label, else by a strict majority of the annotators'
latest labels; a tie (one against one, say) stays undecided: it is exported nowhere but listed as
disputed until someone adjudicates it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from patent_demo.labels.fields import (
    LabelError,
    clean_id,
    clean_line,
)
from patent_demo.labels.guidelines import Guidelines, clean_guidelines
from patent_demo.labels.guidelines import default as default_guidelines
from patent_demo.labels.label import CATEGORIES, GRADES, LISTS, MODALITIES, QUERY_KINDS, Label
from patent_demo.labels.private import DIR_MODE, FILE_MODE, private_dir, write_private
from patent_demo.labels.watch import StoreUnwritable, StoreWatch
from patent_demo.labels.watch import writing as _writing

__all__ = [
    "CATEGORIES",
    "DIR_MODE",
    "FILE_MODE",
    "GRADES",
    "LISTS",
    "Label",
    "LabelError",
    "LabelStore",
    "QUERY_KINDS",
    "StoreUnwritable",
    "application_query_id",
    "combined_query_id",
    "image_query_id",
    "text_query_id",
    "write_private",
]


SCHEMA_VERSION = 4  # 4: the guidelines table (patent_demo.labels.guidelines)

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
CREATE TABLE IF NOT EXISTS guidelines (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    corpus          TEXT NOT NULL,
    text            TEXT NOT NULL,
    edited_by       TEXT NOT NULL,
    edited_at       TEXT NOT NULL
);
"""
# columns added in schemas 2 and 3, with their definitions (added to older databases on open)
V2_COLUMNS = {
    "modality": "TEXT NOT NULL DEFAULT ''",
    "session_id": "TEXT NOT NULL DEFAULT ''",
    "idempotency_key": "TEXT",
    "query_figure": "TEXT NOT NULL DEFAULT '{}'",  # schema 3: a sheet search's query figure (name, box)
}


def text_query_id(text: str) -> str:
    norm = " ".join(text.split()).lower()
    return "txt-" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def image_query_id(sha256: str) -> str:
    return "img-" + sha256[:16]


def application_query_id(sha256s: Collection[str]) -> str:
    """The id of a whole application: its views' sha256s, in any order."""
    return "app-" + hashlib.sha256("\n".join(sorted(sha256s)).encode()).hexdigest()[:16]


def combined_query_id(sha256: str, text: str) -> str:
    return "mix-" + hashlib.sha256((sha256 + "\n" + " ".join(text.split()).lower()).encode()).hexdigest()[:16]


_SUFFIX = re.compile(r"\.[a-z0-9]{1,5}")
_ALL_PARTIES = "none: every adjudicator labelled it; it stays disputed until one who did not is added"


class LabelStore:
    """Labels in one SQLite file (WAL journal, ``synchronous=FULL``, one short transaction per write,
    safe across threads and processes)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        private_dir(self.path.parent)
        self.image_dir = self.path.parent / "query_images"
        self._pending_dir = self.image_dir / ".pending"
        self._pending: Counter[str] = Counter()  # staged query drawing -> searches still showing it
        self._lock = threading.Lock()
        with _writing(self.path):  # a read-only database is refused here, in plain words
            if not self.path.exists():
                os.close(
                    os.open(self.path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
                )  # -wal / -shm inherit the mode
            self._conn = sqlite3.connect(
                str(self.path), check_same_thread=False, isolation_level=None, timeout=30
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._migrate()
        self._watch = StoreWatch(self.path)  # the file opened: checked before every write

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write under the lock: the database file checked first (``labels.watch``), then SQLite's and
        the file system's refusals in plain words."""
        with self._lock:
            try:
                with _writing(self.path):
                    self._watch.check(self._conn)
                    yield
            except StoreUnwritable as err:  # the server's log says it, once per cause
                self._watch.log(err.why)
                raise

    @property
    def name(self) -> str:
        """The store's file name (what the app shows; never the server path)."""
        return self.path.name

    def _migrate(self) -> None:
        """Create the table, or bring a database of an older schema up to ``SCHEMA_VERSION`` in place:
        missing columns are added and the modality of old rows is filled from their query kind."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for stmt in SCHEMA.strip().split(";"):
                    if stmt.strip():
                        self._conn.execute(stmt)
                have = {r["name"] for r in self._conn.execute("PRAGMA table_info(labels)")}
                for col, decl in V2_COLUMNS.items():
                    if col not in have:
                        self._conn.execute(f"ALTER TABLE labels ADD COLUMN {col} {decl}")
                for kind, modality in MODALITIES.items():
                    self._conn.execute(
                        "UPDATE labels SET modality = ? WHERE modality = '' AND query_kind = ?",
                        (modality, kind),
                    )
                self._conn.execute(
                    "CREATE UNIQUE INDEX IF NOT EXISTS labels_idempotency ON labels(idempotency_key)"
                )
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def pragma(self, name: str) -> object:
        """A PRAGMA's current value on the store's connection (``synchronous`` is 2 = FULL)."""
        if not re.fullmatch(r"[a-z_]+", name):
            raise ValueError(f"not a pragma name: {name!r}")
        with self._lock:
            return self._conn.execute(f"PRAGMA {name}").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- query images ---------------------------------------------------------------------------
    def _image_rel(self, sha: str, suffix: str) -> str:
        suffix = suffix.lower() if _SUFFIX.fullmatch(suffix.lower() or "") else ".png"
        return f"query_images/{sha[:16]}{suffix}"

    def save_query_image(self, data: bytes, suffix: str = ".png") -> tuple[str, str]:
        """Keep a query drawing beside the database now; returns (sha256, path relative to it)."""
        sha = hashlib.sha256(data).hexdigest()
        rel = self._image_rel(sha, suffix)
        if not (self.path.parent / rel).exists():
            write_private(self.path.parent / rel, data)
        return sha, rel

    def stage_query_image(self, data: bytes, suffix: str = ".png", sha: str = "") -> tuple[str, str]:
        """Hold an uploaded query drawing until a label needs it: it is kept (moved beside the database)
        with the first label of its query and removed by ``release_query_image`` otherwise. Returns
        (sha256, the path relative to the database it will have); ``sha`` when the caller has it."""
        sha = sha or hashlib.sha256(data).hexdigest()
        rel = self._image_rel(sha, suffix)
        if (self.path.parent / rel).exists():
            return sha, rel
        name = Path(rel).name
        with self._lock:
            if not (self._pending_dir / name).exists():
                write_private(self._pending_dir / name, data)
            self._pending[name] += 1
        return sha, rel

    def release_query_image(self, rel: str) -> None:
        """A search that showed a staged drawing is over; the drawing goes when no search shows it."""
        name = Path(rel or "").name
        with self._lock:
            if name not in self._pending:
                return
            self._pending[name] -= 1
            if self._pending[name] <= 0:
                del self._pending[name]
                (self._pending_dir / name).unlink(missing_ok=True)

    def purge_staged_images(self) -> int:
        """Remove every staged drawing (left by a server that stopped); the app calls it at start-up."""
        with self._lock:
            self._pending.clear()
            files = list(self._pending_dir.glob("*")) if self._pending_dir.is_dir() else []
            for f in files:
                f.unlink(missing_ok=True)
        return len(files)

    def query_image(self, rel: str) -> Path | None:
        """The file of a search's query drawing (``rel`` as ``stage_query_image`` returned it): kept beside the
        database, else still staged; None when it is neither."""
        name = Path(rel or "").name
        if not name or not _SUFFIX.fullmatch(Path(name).suffix.lower() or ""):
            return None
        for path in (self.image_dir / name, self._pending_dir / name):
            if path.is_file():
                return path
        return None

    def _keep_image(self, rel: str) -> None:
        final = self.path.parent / rel
        if final.exists():
            return
        staged = self._pending_dir / Path(rel).name
        if not staged.exists():
            raise LabelError("the query drawing of this search is no longer held: run the search again")
        private_dir(final.parent)
        os.replace(staged, final)
        self._pending.pop(staged.name, None)

    # -- writes -------------------------------------------------------------------------------------
    def add(self, label: Label) -> Label:
        """Store one judgement (committed before returning) and return it with id and time filled in.

        With an ``idempotency_key`` already stored, nothing is written: the stored label comes back with
        ``replayed`` set (a key reused for a different judgement raises ``LabelError``)."""
        label.check()
        label.created_at = label.created_at or datetime.now(UTC).isoformat(timespec="milliseconds")
        row = asdict(label)
        for k in ("id", "replayed"):
            row.pop(k)
        row["query_codes"] = json.dumps(row["query_codes"], sort_keys=True)
        row["query_figure"] = json.dumps(row["query_figure"], sort_keys=True)
        row["adjudicated"] = int(row["adjudicated"])
        row["undone"] = int(row["undone"])
        row["idempotency_key"] = row["idempotency_key"] or None
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._write():
            if label.idempotency_key:
                prior = self._conn.execute(
                    "SELECT * FROM labels WHERE idempotency_key = ?", (label.idempotency_key,)
                ).fetchone()
                if prior is not None:
                    return self._replay(prior, label)
            if label.query_image_file:
                self._keep_image(label.query_image_file)
            try:
                cur = self._conn.execute(f"INSERT INTO labels ({cols}) VALUES ({marks})", list(row.values()))
            except sqlite3.IntegrityError:  # the same key stored by another process meanwhile
                prior = self._conn.execute(
                    "SELECT * FROM labels WHERE idempotency_key = ?", (label.idempotency_key,)
                ).fetchone()
                if prior is None:
                    raise
                return self._replay(prior, label)
            label.id = cur.lastrowid
        return label

    @staticmethod
    def _replay(prior: sqlite3.Row, label: Label) -> Label:
        stored = _row_to_label(prior)
        same = ("annotator", "query_id", "candidate_id", "list_name", "label", "adjudicated")
        if any(getattr(stored, k) != getattr(label, k) for k in same):
            raise LabelError(
                f"idempotency key {label.idempotency_key!r} already stored label #{stored.id} for a different "
                "judgement; send a new key for a new label"
            )
        stored.replayed = True
        return stored

    def undo_last(self, session_id: str, annotator: str = "") -> Label | None:
        """Mark the latest live label made by app session ``session_id`` (and, given, stored under
        ``annotator``) undone; None when it has none left. Adjudications are not undone here."""
        session_id = clean_id(session_id, "session id")
        if not session_id:
            raise LabelError("undo needs the session that made the label")
        who = " AND annotator = ?" if annotator else ""
        with self._write():
            row = self._conn.execute(
                f"SELECT * FROM labels WHERE session_id = ?{who} AND undone = 0 AND adjudicated = 0 "
                "ORDER BY id DESC LIMIT 1",
                (session_id, *([annotator] if annotator else [])),
            ).fetchone()
            if row is None:
                return None
            self._conn.execute("UPDATE labels SET undone = 1 WHERE id = ?", (row["id"],))
        out = _row_to_label(row)
        out.undone = True
        return out

    def undo(self, label_id: int, session_id: str) -> Label:
        """Mark label ``label_id`` undone, when app session ``session_id`` made it and it is live."""
        with self._write():
            row = self._conn.execute("SELECT * FROM labels WHERE id = ?", (int(label_id),)).fetchone()
            if row is None:
                raise LabelError(f"there is no label #{label_id}")
            if not session_id or row["session_id"] != session_id:
                raise LabelError(
                    f"label #{label_id} was not made in this session: undo acts on your own labels only"
                )
            if row["undone"]:
                raise LabelError(f"label #{label_id} is already undone")
            self._conn.execute("UPDATE labels SET undone = 1 WHERE id = ?", (int(label_id),))
        out = _row_to_label(row)
        out.undone = True
        return out

    def adjudicate(
        self,
        query_id: str,
        candidate_id: str,
        label: str,
        annotator: str,
        note: str = "",
        adjudicators: Collection[str] = (),
        session_id: str = "",
    ) -> Label:
        """Store an adjudicated label for one (query, candidate) that annotators judged; it wins in every export.

        ``adjudicators`` are the names configured to adjudicate (empty: anyone may). A configured list
        refuses everybody else; a party (anyone who labelled the pair, undone or not) is always refused:
        when every adjudicator is a party the pair stays disputed. The query fields, list, rank, score,
        figure and checkpoint are copied from the latest annotator label that agrees with the verdict, else from the
        latest one (the category only from an agreeing label).
        """
        who = clean_line(annotator, "adjudicator")
        query_id, candidate_id = clean_id(query_id, "query id"), clean_id(candidate_id, "candidate")
        if not who:
            raise LabelError("enter your name first: an adjudication is stored under the adjudicator's name")
        if not query_id or not candidate_id:
            raise LabelError("select a disagreement in the queue first (or give a query id and a candidate)")
        if not isinstance(label, str) or label not in GRADES:
            raise LabelError(f"label {str(label)[:20]!r} is not one of {sorted(GRADES)}")
        judged = [
            x for x in self.labels(query_id=query_id) if x.candidate_id == candidate_id and not x.adjudicated
        ]
        if not judged:
            raise LabelError(
                f"nobody labelled candidate {candidate_id!r} for query {query_id!r}: nothing to adjudicate"
            )
        allowed = {clean_line(a, "adjudicator") for a in adjudicators} - {""}
        if allowed and who not in allowed:
            raise LabelError(f"{who} is not an adjudicator here; ask one of: {', '.join(sorted(allowed))}")
        every = self.labels(include_undone=True, query_id=query_id)  # an undone label makes a party too
        parties = {x.annotator for x in every if x.candidate_id == candidate_id and not x.adjudicated}
        if who in parties:  # a party never settles its own disagreement, undone or not
            others = ", ".join(sorted(allowed - parties)) or (
                _ALL_PARTIES if allowed else "anyone who did not"
            )
            raise LabelError(
                f"{who} labelled this pair and cannot settle it; ask another adjudicator: {others}"
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
                query_figure=src.query_figure,
                candidate_figure=src.candidate_figure,
                checkpoint_id=src.checkpoint_id,
                category=src.category if src.label == label else "",
                note=note,
                adjudicated=True,
                session_id=session_id,
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

    def latest(self, query_id: str, annotator: str) -> dict[str, Label]:
        """{candidate_id: Label}: the annotator's latest live label of each candidate of one query (an
        undone label no longer counts; adjudications are not an annotator's)."""
        out = {}
        for lab in self.labels(query_id=query_id):
            if lab.annotator == annotator and not lab.adjudicated:
                out[lab.candidate_id] = lab
        return out

    def judged(self, query_id: str, annotator: str) -> dict[str, str]:
        """{candidate_id: label} of the annotator's live labels for one query (latest wins)."""
        return {c: lab.label for c, lab in self.latest(query_id, annotator).items()}

    def _units(self) -> tuple[dict[tuple[str, str], dict[str, Label]], dict[tuple[str, str], Label]]:
        """Each annotator's latest live label per (query, candidate), and the latest adjudication."""
        latest: dict[tuple[str, str], dict[str, Label]] = defaultdict(dict)
        adjudicated: dict[tuple[str, str], Label] = {}
        for lab in self.labels():
            key = (lab.query_id, lab.candidate_id)
            if lab.adjudicated:
                adjudicated[key] = lab
            else:
                latest[key][lab.annotator] = lab
        return latest, adjudicated

    def resolved(self) -> dict[tuple[str, str], Label]:
        """The decided label per (query, candidate): an adjudicated label wins, else the grade most of the
        annotators gave (each annotator's latest label counts once). A tie is undecided and left out
        (see ``disputed``); the label returned is the most recent one with the winning grade."""
        latest, adjudicated = self._units()
        out = dict(adjudicated)
        for key, by_annotator in latest.items():
            if key in adjudicated:
                continue
            top = _majority(by_annotator)
            if top is not None:
                out[key] = max((x for x in by_annotator.values() if x.label == top), key=lambda x: x.id)
        return dict(sorted(out.items()))

    def disputed(self) -> list[tuple[tuple[str, str], dict[str, str]]]:
        """(query, candidate) pairs whose annotators are tied and nobody adjudicated: exported nowhere."""
        latest, adjudicated = self._units()
        return [
            (k, {a: x.label for a, x in sorted(v.items())})
            for k, v in sorted(latest.items())
            if k not in adjudicated and _majority(v) is None
        ]

    def disagreements(self) -> list[tuple[tuple[str, str], dict[str, str]]]:
        """(query, candidate) pairs where annotators' latest labels differ and nobody adjudicated yet
        (ties and majorities alike: the adjudication queue)."""
        latest, adjudicated = self._units()
        return [
            (k, {a: x.label for a, x in sorted(v.items())})
            for k, v in sorted(latest.items())
            if k not in adjudicated and len({x.label for x in v.values()}) > 1
        ]

    # -- exports (patent_demo.labels.exports) ---------------------------------------------------------
    # -- labelling guidelines (``patent_demo.labels.guidelines``) -----------------------------------------
    def guideline_versions(self, corpus: str) -> list[Guidelines]:
        """Every saved version of ``corpus``'s guidelines, oldest first (empty: the default is in force)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT text, edited_by, edited_at FROM guidelines WHERE corpus = ? ORDER BY id", (corpus,)
            ).fetchall()
        return [
            Guidelines(corpus, r["text"], n, r["edited_by"], r["edited_at"]) for n, r in enumerate(rows, 1)
        ]

    def guideline_corpora(self) -> list[str]:
        """The corpora with saved guidelines."""
        with self._lock:
            return [
                r[0] for r in self._conn.execute("SELECT DISTINCT corpus FROM guidelines ORDER BY corpus")
            ]

    def guidelines(self, corpus: str) -> Guidelines:
        """The guidelines in force for ``corpus``: its last saved version, else the default text."""
        versions = self.guideline_versions(corpus)
        return versions[-1] if versions else default_guidelines(corpus)

    def save_guidelines(self, corpus: str, text: str, editor: str) -> Guidelines:
        """A new version of ``corpus``'s guidelines, saved by ``editor`` (earlier versions are kept). The same
        text as the version in force saves nothing and returns that version."""
        corpus, editor = clean_line(corpus, "corpus name"), clean_line(editor, "editor")
        if not editor:
            raise LabelError("the guidelines need an editor: enter your name as annotator first")
        text = clean_guidelines(text)
        current = self.guidelines(corpus)
        if text == current.text.strip():
            return current
        with self._write():
            self._conn.execute(
                "INSERT INTO guidelines (corpus, text, edited_by, edited_at) VALUES (?, ?, ?, ?)",
                (corpus, text, editor, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        return self.guidelines(corpus)

    def export_qrels(self, path: str | os.PathLike) -> int:
        from patent_demo.labels.exports import export_qrels

        return export_qrels(self, path)

    def export_hmcl(self, path: str | os.PathLike) -> int:
        from patent_demo.labels.exports import export_hmcl

        return export_hmcl(self, path)

    def export_dssdnet(self, path: str | os.PathLike, corpus=None) -> int:
        from patent_demo.labels.exports import export_dssdnet

        return export_dssdnet(self, path, corpus)

    def export_all(self, out_dir: str | os.PathLike, corpus=None) -> dict[str, tuple[Path, int]]:
        from patent_demo.labels.exports import export_all

        return export_all(self, out_dir, corpus)


def _majority(by_annotator: dict[str, Label]) -> str | None:
    """The label given by more annotators than any other, or None on a tie."""
    votes = Counter(x.label for x in by_annotator.values()).most_common()
    if len(votes) > 1 and votes[0][1] == votes[1][1]:
        return None
    return votes[0][0]


def _row_to_label(row: sqlite3.Row) -> Label:
    d = dict(row)
    d["query_codes"] = json.loads(d["query_codes"] or "{}")
    d["query_figure"] = json.loads(d.get("query_figure") or "{}")
    d["adjudicated"] = bool(d["adjudicated"])
    d["undone"] = bool(d["undone"])
    d["idempotency_key"] = d.get("idempotency_key") or ""
    return Label(**d)
