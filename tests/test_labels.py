import json
import sqlite3
import subprocess
import sys

import pytest

from patent_demo.data.corpus import Corpus, Patent, read_qrels
from patent_demo.labels.store import Label, LabelError, LabelStore, image_query_id, text_query_id


def _lab(**kw):
    base = dict(
        annotator="ann",
        query_id=text_query_id("a folding chair"),
        query_kind="text",
        query_text="a folding chair",
        candidate_id="P1",
        list_name="dssdnet",
        rank=1,
        score=0.9,
        label="relevant",
    )
    base.update(kw)
    return Label(**base)


def test_wal_and_survives_restart(tmp_path):
    path = tmp_path / "labels.sqlite"
    store = LabelStore(path)
    stored = store.add(_lab(query_codes={"ipc": ["A47C"]}, category="X", note="same hinge"))
    assert stored.id == 1 and stored.created_at
    store.close()  # a restart
    again = LabelStore(path)
    (row,) = again.labels()
    assert (row.candidate_id, row.label, row.category, row.note, row.query_codes) == (
        "P1",
        "relevant",
        "X",
        "same hinge",
        {"ipc": ["A47C"]},
    )
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_undo_acts_on_the_sessions_own_last_label(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_lab(candidate_id="P1", session_id="s1"))
    store.add(_lab(candidate_id="P2", label="not", session_id="s1"))
    store.add(_lab(candidate_id="P3", session_id="s2"))  # same name, another browser session
    undone = store.undo_last("s1")
    assert undone.candidate_id == "P2" and undone.undone
    assert [lab.candidate_id for lab in store.labels()] == ["P1", "P3"]
    assert [lab.candidate_id for lab in store.labels(include_undone=True)] == ["P1", "P2", "P3"]
    assert store.undo_last("s1").candidate_id == "P1"
    assert store.undo_last("s1") is None
    assert store.undo_last("s3") is None  # a session that labelled nothing undoes nothing
    assert [lab.candidate_id for lab in store.labels()] == ["P3"]


def test_undo_by_id_is_refused_to_another_session(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    lab = store.add(_lab(session_id="s1"))
    with pytest.raises(LabelError, match="was not made in this session"):
        store.undo(lab.id, "s2")
    with pytest.raises(LabelError, match="was not made in this session"):
        store.undo(lab.id, "")
    with pytest.raises(LabelError, match="there is no label #99"):
        store.undo(99, "s1")
    assert store.undo(lab.id, "s1").undone
    with pytest.raises(LabelError, match="already undone"):
        store.undo(lab.id, "s1")


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("annotator", " ", "annotator is empty: enter your name (or sign in) before labelling"),
        ("label", "maybe", "label 'maybe' is not one of ['not', 'partly', 'relevant']"),
        ("category", "Z", "category 'Z' is not one of X, Y, A or empty"),
        (
            "list_name",
            "google",
            "list 'google' is not one of ('hmcl', 'bm25', 'dense', 'hybrid', 'dssdnet', 'fused', 'rrf')",
        ),
    ],
)
def test_bad_labels_are_refused_with_a_message(tmp_path, field, value, message):
    store = LabelStore(tmp_path / "l.sqlite")
    with pytest.raises(LabelError) as err:
        store.add(_lab(**{field: value}))
    assert str(err.value) == message
    assert store.count() == 0


def test_resolution_adjudication_wins_then_majority_and_ties_stay_undecided(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_lab(annotator="a", label="relevant"))
    store.add(_lab(annotator="b", label="not"))
    store.add(_lab(annotator="c", label="not"))
    store.add(_lab(annotator="a", candidate_id="P2", label="partly"))
    store.add(_lab(annotator="b", candidate_id="P2", label="relevant"))  # 1 vs 1
    store.add(_lab(annotator="a", candidate_id="P3", label="not"))
    store.add(_lab(annotator="a", candidate_id="P3", label="partly"))  # a relabel replaces, no dispute
    res = store.resolved()
    q = text_query_id("a folding chair")
    assert res[(q, "P1")].label == "not"
    assert (q, "P2") not in res  # a tie is no decision
    assert res[(q, "P3")].label == "partly"
    assert store.disputed() == [((q, "P2"), {"a": "partly", "b": "relevant"})]
    assert [k for k, _ in store.disagreements()] == [(q, "P1"), (q, "P2")]
    store.add(_lab(annotator="lead", label="partly", adjudicated=True))
    store.add(_lab(annotator="lead", candidate_id="P2", label="relevant", adjudicated=True))
    assert store.resolved()[(q, "P1")].label == "partly"
    assert store.resolved()[(q, "P2")].label == "relevant"
    assert store.disputed() == [] and store.disagreements() == []


def test_exports(tmp_path):
    corpus = Corpus(
        root=tmp_path,
        patents=[
            Patent(id="P1", kind="utility", title="Chair", text="A folding chair.", codes={"ipc": ["A47C"]}),
            Patent(id="P2", kind="utility", title="Table", text="A table.", codes={"ipc": ["A47B"]}),
        ],
    )
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_lab(candidate_id="P1", label="relevant", query_codes={"ipc": ["A47C"]}))
    store.add(_lab(candidate_id="P2", label="not", rank=2))
    sha, rel = store.save_query_image(b"\x89PNG fake bytes")
    iq = image_query_id(sha)
    store.add(
        _lab(
            query_id=iq,
            query_kind="image",
            query_text="",
            query_image_sha=sha,
            query_image_file=rel,
            candidate_id="P2",
            candidate_figure="img/p2_1.png",
            list_name="hmcl",
            label="partly",
        )
    )
    store.add(
        _lab(
            query_id=iq,
            query_kind="image",
            query_text="",
            query_image_sha=sha,
            query_image_file=rel,
            candidate_id="P1",
            list_name="hmcl",
            rank=3,
            label="not",
        )
    )

    assert store.export_qrels(tmp_path / "q.txt") == 4
    qrels = read_qrels(tmp_path / "q.txt")
    assert qrels[text_query_id("a folding chair")] == {"P1": 2, "P2": 0}
    assert qrels[iq] == {"P1": 0, "P2": 1}

    assert store.export_dssdnet(tmp_path / "d.jsonl", corpus) == 1
    (row,) = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert row["query"] == "a folding chair" and row["query_codes"] == {"ipc": ["A47C"]}
    assert [(p["id"], p["grade"], p["text"]) for p in row["pos"]] == [("P1", 2, "Chair. A folding chair.")]
    assert [(n["id"], n["rank"], n["codes"]) for n in row["neg"]] == [("P2", 2, {"ipc": ["A47B"]})]

    assert store.export_hmcl(tmp_path / "h.jsonl") == 1
    (row,) = [json.loads(x) for x in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert row["anchor"] == {"image_sha256": sha, "image_file": rel, "patent_id": ""}
    assert (tmp_path / rel).read_bytes() == b"\x89PNG fake bytes"
    assert row["positives"] == [{"patent_id": "P2", "figure": "img/p2_1.png", "grade": 1, "rank": 1}]
    assert row["hard_negatives"] == [{"patent_id": "P1", "figure": "", "rank": 3}]


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "l.sqlite"
    code = (
        "import sys; from patent_demo.labels.store import Label, LabelStore\n"
        "s = LabelStore(sys.argv[1])\n"
        "for i in range(50):\n"
        "    s.add(Label(annotator=sys.argv[2], query_id='q', query_kind='text', candidate_id=f'P{i}',"
        " list_name='bm25', rank=i + 1, score=0.0, label='not'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), name]) for name in ("x", "y", "z")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    assert LabelStore(path).count() == 150


def test_adjudicate_copies_the_query_from_an_agreeing_label(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    store.add(_lab(annotator="a", label="relevant", rank=4, category="X", query_codes={"ipc": ["A47C"]}))
    store.add(_lab(annotator="b", label="not", rank=4))
    lab = store.adjudicate(text_query_id("a folding chair"), "P1", "relevant", "lead", note=" same seat ")
    assert (lab.annotator, lab.label, lab.adjudicated, lab.category, lab.note, lab.query_codes) == (
        "lead",
        "relevant",
        True,
        "X",
        "same seat",
        {"ipc": ["A47C"]},
    )
    assert store.resolved()[(text_query_id("a folding chair"), "P1")].label == "relevant"
    with pytest.raises(LabelError) as err:
        store.adjudicate("txt-none", "P1", "not", "lead")
    assert str(err.value) == "nobody labelled candidate 'P1' for query 'txt-none': nothing to adjudicate"
    with pytest.raises(LabelError, match="enter your name first"):
        store.adjudicate(text_query_id("a folding chair"), "P1", "not", " ")
