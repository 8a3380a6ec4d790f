"""The label store's guarantees: modality-true exports, ties left undecided, adjudication by someone
else, idempotent writes, bounded clean text, private files, FULL sync, staged query drawings and the
migration of an older database."""

import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from patent_demo.data.corpus import Corpus, Patent, read_qrels
from patent_demo.labels.exports import EXPORT_FILES
from patent_demo.labels.store import (
    Label,
    LabelError,
    LabelStore,
    combined_query_id,
    image_query_id,
    text_query_id,
)

SHA = "ab" * 32
TEXT = "a folding chair with a hinged seat"


def _text(**kw):
    base = dict(
        annotator="ann",
        query_id=text_query_id(TEXT),
        query_kind="text",
        query_text=TEXT,
        candidate_id="P1",
        list_name="dssdnet",
        rank=1,
        score=0.9,
        label="relevant",
    )
    return Label(**(base | kw))


def _image(store, **kw):
    sha, rel = store.save_query_image(b"\x89PNG drawing bytes")
    base = dict(
        annotator="ann",
        query_id=image_query_id(sha),
        query_kind="image",
        query_image_sha=sha,
        query_image_file=rel,
        candidate_id="P1",
        candidate_figure="img/p1_1.png",
        list_name="hmcl",
        rank=1,
        score=0.8,
        label="relevant",
    )
    return Label(**(base | kw))


def _combined(**kw):
    base = dict(
        annotator="ann",
        query_id=combined_query_id(SHA, TEXT),
        query_kind="combined",
        query_text=TEXT,
        query_image_sha=SHA,
        candidate_id="P1",
        list_name="hmcl",
        rank=1,
        score=0.5,
        label="relevant",
    )
    return Label(**(base | kw))


def _corpus(tmp_path):
    return Corpus(
        root=tmp_path,
        patents=[
            Patent(id=f"P{i}", kind="design", title=f"Thing {i}", text=f"Text {i}.", codes={})
            for i in range(1, 5)
        ],
    )


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_every_label_records_the_modality_of_its_query(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text())
    store.add(_image(store))
    store.add(_combined())
    assert [x.modality for x in store.labels()] == ["text", "drawing", "patent"]
    with pytest.raises(LabelError, match="a text query judges text pairs, not 'drawing'"):
        store.add(_text(modality="drawing"))


def test_exports_take_only_their_modality_and_combined_goes_to_qrels(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text(candidate_id="P1", label="relevant"))
    store.add(_image(store, candidate_id="P2", label="partly"))
    # a combined query judged on its drawing list and its fused list: patent-level judgements
    store.add(_combined(candidate_id="P3", list_name="hmcl", label="relevant"))
    store.add(_combined(candidate_id="P4", list_name="fused", label="not"))
    out = store.export_all(tmp_path / "exports", corpus=_corpus(tmp_path))
    assert {k: n for k, (_, n) in out.items()} == {
        "qrels.txt": 4,
        "hmcl.jsonl": 1,
        "dssdnet.jsonl": 1,
        "disputed.jsonl": 0,
        "guidelines.md": 0,  # saved versions: none, the default in force
    }
    qrels = read_qrels(out["qrels.txt"][0])
    assert qrels[combined_query_id(SHA, TEXT)] == {"P3": 2, "P4": 0}
    (h,) = _rows(out["hmcl.jsonl"][0])
    assert [p["patent_id"] for p in h["positives"]] == ["P2"] and h["positives"][0][
        "figure"
    ] == "img/p1_1.png"
    (d,) = _rows(out["dssdnet.jsonl"][0])
    assert [p["id"] for p in d["pos"]] == ["P1"] and d["neg"] == []


def test_a_tie_is_exported_nowhere_but_listed_as_disputed_until_adjudicated(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text(annotator="a", label="relevant"))
    store.add(_text(annotator="b", label="not"))
    store.add(_image(store, annotator="a", label="relevant"))
    store.add(_image(store, annotator="b", label="partly"))
    store.add(_image(store, annotator="c", label="partly"))  # 2 vs 1: decided
    out = store.export_all(tmp_path / "x")
    assert {k: n for k, (_, n) in out.items()} == {
        "qrels.txt": 1,
        "hmcl.jsonl": 1,
        "dssdnet.jsonl": 0,
        "disputed.jsonl": 1,
        "guidelines.md": 0,
    }
    (row,) = _rows(out["disputed.jsonl"][0])
    assert row == {
        "query_id": text_query_id(TEXT),
        "candidate_id": "P1",
        "modality": "text",
        "votes": {"a": "relevant", "b": "not"},
    }
    (h,) = _rows(out["hmcl.jsonl"][0])
    assert [(p["patent_id"], p["grade"]) for p in h["positives"]] == [("P1", 1)]
    store.adjudicate(text_query_id(TEXT), "P1", "not", "lead")
    out = store.export_all(tmp_path / "x")
    assert (out["dssdnet.jsonl"][1], out["disputed.jsonl"][1]) == (1, 0)
    (d,) = _rows(out["dssdnet.jsonl"][0])
    assert [n["id"] for n in d["neg"]] == ["P1"]


def test_adjudication_is_refused_to_a_party_always(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text(annotator="alice", label="relevant"))
    store.add(_text(annotator="bob", label="not"))
    q = text_query_id(TEXT)
    with pytest.raises(
        LabelError, match="alice labelled this pair and cannot settle it; ask another adjudicator: lead"
    ):
        store.adjudicate(q, "P1", "relevant", "alice", adjudicators=["alice", "lead"])
    with pytest.raises(LabelError, match="mallory is not an adjudicator here; ask one of: alice, lead"):
        store.adjudicate(q, "P1", "relevant", "mallory", adjudicators=["alice", "lead"])
    assert store.disagreements()  # nothing stored by the refusals
    # not even the only configured adjudicator settles a pair they labelled: it stays disputed
    with pytest.raises(LabelError) as err:
        store.adjudicate(q, "P1", "relevant", "alice", adjudicators=["alice"])
    assert str(err.value) == (
        "alice labelled this pair and cannot settle it; ask another adjudicator: none: every adjudicator "
        "labelled it; it stays disputed until one who did not is added"
    )
    # with no adjudicators configured anyone may adjudicate, but still no party
    with pytest.raises(
        LabelError, match="bob labelled this pair and cannot settle it; ask another adjudicator: anyone who"
    ):
        store.adjudicate(q, "P1", "relevant", "bob")
    lab = store.adjudicate(q, "P1", "not", "lead", adjudicators=["alice", "lead"])
    assert lab.adjudicated and lab.annotator == "lead" and lab.label == "not"
    assert store.adjudicate(q, "P1", "relevant", "chief").label == "relevant"  # a non-party, none configured


def test_a_party_who_undid_the_label_still_cannot_adjudicate(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text(annotator="alice", label="relevant", session_id="s-alice"))
    store.add(_text(annotator="bob", label="not", session_id="s-bob"))
    store.add(_text(annotator="carol", label="not", session_id="s-carol"))
    assert store.undo_last("s-alice").annotator == "alice"  # alice's label is gone from the live set
    with pytest.raises(
        LabelError, match="alice labelled this pair and cannot settle it; ask another adjudicator: lead"
    ):
        store.adjudicate(text_query_id(TEXT), "P1", "relevant", "alice", adjudicators=["alice", "lead"])


def test_a_retried_request_stores_once(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    first = store.add(_text(idempotency_key="req-1"))
    again = store.add(_text(idempotency_key="req-1"))
    assert (again.id, again.replayed, first.replayed) == (first.id, True, False)
    assert store.count() == 1
    with pytest.raises(LabelError, match="already stored label #1 for a different judgement"):
        store.add(_text(idempotency_key="req-1", label="not"))
    store.add(_text(idempotency_key="req-2", label="not"))
    store.add(_text(label="not"))
    store.add(_text(label="not"))  # no key: two requests, two rows
    assert store.count() == 4


def test_the_same_key_from_several_processes_stores_once(tmp_path):
    path = tmp_path / "l.sqlite"
    LabelStore(path).close()
    code = (
        "import sys; from patent_demo.labels.store import Label, LabelStore\n"
        "s = LabelStore(sys.argv[1])\n"
        "for i in range(30):\n"
        "    s.add(Label(annotator='x', query_id='q', query_kind='text', candidate_id=f'P{i}',"
        " list_name='bm25', rank=i + 1, score=0.0, label='not', idempotency_key=f'k{i}'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert LabelStore(path).count() == 30


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(annotator="ann\x00"), "annotator 'ann\\x00' holds the control character U+0000"),
        (dict(annotator="ann\nother"), "annotator 'ann\\nother' holds the control character U+000A"),
        (dict(annotator="x" * 101), "annotator has 101 characters; at most 100 are allowed"),
        (dict(annotator="x" * 10_000), "annotator has 10,000 characters; at most 100 are allowed"),
        (dict(annotator="ann\ud800"), "annotator holds a character that is not valid Unicode"),
        (dict(annotator=42), "annotator must be text, got int"),
        (dict(note="n" * 1_000_000), "note has 1,000,000 characters; at most 2,000 are allowed"),
        (dict(note="a\x00b"), "note holds the control character U+0000"),
        (dict(query_codes={"ipc": ["A47C"] * 51}), "a query carries 51 classification codes; at most 50"),
        (dict(query_codes={"ipc": ["A" * 101]}), "ipc code has 101 characters; at most 100 are allowed"),
        (dict(candidate_id="P" * 300), "candidate id has 300 characters; at most 200 are allowed"),
        (dict(rank=0), "rank must be a whole number from 1, got 0"),
        (dict(label=["relevant"]), "label must be text, got list"),
        (dict(query_kind="image", list_name="hmcl", category="X"), "applies to text hits only"),
        (dict(query_kind="combined", list_name="fused", category="A"), "applies to text hits only"),
        (dict(category="X", label="not"), "category X marks a relevant document"),
    ],
)
def test_bad_fields_are_refused_and_nothing_is_stored(tmp_path, kw, message):
    store = LabelStore(tmp_path / "l.sqlite")
    with pytest.raises(LabelError) as err:
        store.add(_text(**kw))
    assert message in str(err.value)
    assert len(str(err.value)) < 300
    assert store.count() == 0


def test_names_and_notes_are_normalised(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    lab = store.add(_text(annotator="  Jose\u0301   Ruiz ", note=" line one\r\nline two \n", category="A"))
    (row,) = store.labels()
    assert row.annotator == lab.annotator == "Jos\u00e9 Ruiz"  # NFC, one space, stripped
    assert row.note == "line one\nline two"
    assert row.category == "A" and row.modality == "text"


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_database_wal_images_and_exports_are_private(tmp_path):
    store = LabelStore(tmp_path / "new" / "labels.sqlite")
    store.add(_image(store))
    store.export_all(tmp_path / "new" / "exports")
    root = tmp_path / "new"
    assert _mode(root) == 0o700
    for name in ("labels.sqlite", "labels.sqlite-wal", "labels.sqlite-shm"):
        assert _mode(root / name) == 0o600, name
    assert _mode(root / "query_images") == 0o700
    (img,) = (root / "query_images").glob("*.png")
    assert _mode(img) == 0o600
    assert _mode(root / "exports") == 0o700
    assert sorted(p.name for p in (root / "exports").iterdir()) == sorted(EXPORT_FILES)
    assert {_mode(p) for p in (root / "exports").iterdir()} == {0o600}


def test_synchronous_full_and_wal(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    assert store.pragma("synchronous") == 2  # FULL: a label is on disk when add() returns
    assert store.pragma("journal_mode") == "wal"


def test_query_drawings_are_kept_only_when_labelled(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    sha, rel = store.stage_query_image(b"drawing one", ".PNG")
    sha2, rel2 = store.stage_query_image(b"drawing two", ".png")
    store.stage_query_image(b"drawing two", ".png")  # a second search shows it too
    assert rel == f"query_images/{sha[:16]}.png" and not (tmp_path / rel).exists()
    store.add(
        _text(
            query_kind="image",
            list_name="hmcl",
            query_id=image_query_id(sha),
            query_image_sha=sha,
            query_image_file=rel,
            query_text="",
        )
    )
    assert (tmp_path / rel).read_bytes() == b"drawing one"
    store.release_query_image(rel)  # labelled: stays
    store.release_query_image(rel2)
    assert list((tmp_path / "query_images" / ".pending").iterdir())  # still shown by one search
    store.release_query_image(rel2)
    assert list((tmp_path / "query_images" / ".pending").iterdir()) == []
    assert not (tmp_path / rel2).exists()
    with pytest.raises(LabelError, match="no longer held: run the search again"):
        store.add(
            _text(
                query_kind="image",
                list_name="hmcl",
                query_id=image_query_id(sha2),
                query_image_sha=sha2,
                query_image_file=rel2,
                query_text="",
            )
        )
    store.stage_query_image(b"drawing three")
    assert LabelStore(tmp_path / "l.sqlite").purge_staged_images() == 1


OLD_SCHEMA = """
CREATE TABLE labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, annotator TEXT NOT NULL,
    query_id TEXT NOT NULL, query_kind TEXT NOT NULL, query_text TEXT NOT NULL DEFAULT '',
    query_codes TEXT NOT NULL DEFAULT '{}', query_image_sha TEXT NOT NULL DEFAULT '',
    query_image_file TEXT NOT NULL DEFAULT '', query_patent_id TEXT NOT NULL DEFAULT '',
    candidate_id TEXT NOT NULL, candidate_figure TEXT NOT NULL DEFAULT '', list_name TEXT NOT NULL,
    rank INTEGER NOT NULL, score REAL NOT NULL, checkpoint_id TEXT NOT NULL DEFAULT '',
    label TEXT NOT NULL, category TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT '',
    undone INTEGER NOT NULL DEFAULT 0, adjudicated INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX labels_query ON labels(query_id, candidate_id);
"""


def test_an_older_database_is_migrated_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    rows = [
        ("img-1", "image", "hmcl", "relevant"),
        ("txt-1", "text", "bm25", "not"),
        ("mix-1", "combined", "fused", "partly"),
    ]
    for q, kind, lst, lab in rows:
        con.execute(
            "INSERT INTO labels (created_at, annotator, query_id, query_kind, candidate_id, list_name, rank, score, "
            "label, query_image_sha, query_text) VALUES ('2026-01-01', 'old', ?, ?, 'P1', ?, 1, 0.5, ?, 'ab', 't')",
            (q, kind, lst, lab),
        )
    con.commit()
    con.close()
    store = LabelStore(path)
    assert [(x.query_id, x.modality, x.session_id, x.idempotency_key) for x in store.labels()] == [
        ("img-1", "drawing", "", ""),
        ("txt-1", "text", "", ""),
        ("mix-1", "patent", "", ""),
    ]
    assert store.pragma("user_version") == 4
    assert store.export_qrels(tmp_path / "q.txt") == 3
    assert store.export_dssdnet(tmp_path / "d.jsonl") == 1
    store.add(_text(idempotency_key="k"))
    store.close()
    assert LabelStore(path).count() == 4  # opening again changes nothing


def test_training_reads_refuse_rows_of_another_modality(tmp_path):
    from patent_demo.data.corpus import CorpusError
    from train.labels.data import read_rows

    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_text())
    store.export_dssdnet(tmp_path / "d.jsonl")
    assert read_rows(tmp_path / "d.jsonl", modality="text")[0]["modality"] == "text"
    with pytest.raises(
        CorpusError, match=r"d.jsonl:1: label row 'txt-\w+' holds text judgements, not drawing"
    ):
        read_rows(tmp_path / "d.jsonl", modality="drawing")
