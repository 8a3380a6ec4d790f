"""Labelling guidelines: one text per corpus, every version kept with who saved it, exported with the labels;
the app's ``/guidelines`` and ``/save_guidelines`` behind a login: tests/test_reliability.py; in the browser:
tests/test_browser_tabs.py.

Tests: patent_demo/labels/guidelines.py, patent_demo/labels/store.py, patent_demo/labels/exports.py,
patent_demo/ui/guidelines.py"""

from __future__ import annotations

import re
import sqlite3

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.labels.fields import LabelError
from patent_demo.labels.guidelines import DEFAULT_TEXT, MAX_GUIDELINES_CHARS, corpus_key
from patent_demo.labels.store import LabelStore


def test_the_default_follows_the_search_report_categories(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    g = store.guidelines("redbook")
    assert (g.text, g.version, g.provenance) == (DEFAULT_TEXT, 0, "the default text (never edited)")
    for grade, category in (
        ("Relevant · key 1", "X"),
        ("Partly relevant · key 2", "Y"),
        ("Not relevant · key 3", "A"),
    ):
        line = next(x for x in DEFAULT_TEXT.splitlines() if x.startswith(f"**{grade}"))
        assert f"as {category}" in line or f"at most {category}" in line, line


def test_versions_are_kept_per_corpus_with_their_editor(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite")
    one = store.save_guidelines("redbook", "  Relevant: the same article.\r\nNot: the rest.  ", "alice")
    assert (one.version, one.edited_by, one.text) == (
        1,
        "alice",
        "Relevant: the same article.\nNot: the rest.",
    )
    assert one.provenance.startswith("version 1, saved by alice on 20")
    assert store.save_guidelines("redbook", one.text, "bob") == one  # the same text: nothing saved
    two = store.save_guidelines("redbook", "Relevant: same article, same ornament.", "bob")
    assert [g.version for g in store.guideline_versions("redbook")] == [1, 2] and store.guidelines(
        "redbook"
    ) == two
    assert store.guidelines("uspc").version == 0  # another corpus keeps the default
    assert store.guideline_corpora() == ["redbook"]
    reopened = LabelStore(store.path)  # saved on disk, in the store's own table
    assert reopened.guidelines("redbook") == two
    rows = (
        sqlite3.connect(store.path).execute("SELECT corpus, edited_by FROM guidelines ORDER BY id").fetchall()
    )
    assert rows == [("redbook", "alice"), ("redbook", "bob")]


@pytest.mark.parametrize(
    ("text", "editor", "message"),
    [
        ("", "alice", "the guidelines are empty"),
        ("   \n ", "alice", "the guidelines are empty"),
        ("fine", "", "the guidelines need an editor"),
        ("a\x00b", "alice", "control character U+0000"),
        ("x" * (MAX_GUIDELINES_CHARS + 1), "alice", f"at most {MAX_GUIDELINES_CHARS:,}"),
        (None, "alice", "the guidelines are empty"),
        (42, "alice", "must be text"),
        ("fine", "al\nice", "control character"),
    ],
)
def test_a_bad_edit_is_refused_in_words_and_nothing_is_saved(tmp_path, text, editor, message):
    store = LabelStore(tmp_path / "l.sqlite")
    with pytest.raises(LabelError, match=re.escape(message)):
        store.save_guidelines("redbook", text, editor)
    assert store.guideline_versions("redbook") == []


def test_the_export_carries_the_text_in_force_and_every_earlier_one(tmp_path):
    corpus = Corpus(
        root=tmp_path / "redbook", patents=[Patent(id="P1", kind="design", title="t", text="", codes={})]
    )
    store = LabelStore(tmp_path / "l.sqlite")
    out = store.export_all(tmp_path / "x", corpus=corpus)
    assert out["guidelines.md"][1] == 0
    text = out["guidelines.md"][0].read_text()
    assert (
        text.startswith("# Labelling guidelines: redbook\n")
        and "In force: the default text (never edited)." in text
    )
    assert DEFAULT_TEXT.strip() in text and "Earlier versions" not in text

    store.save_guidelines(corpus_key(corpus), "First edit.", "alice")
    store.save_guidelines(corpus_key(corpus), "Second edit.", "bob")
    out = store.export_all(tmp_path / "x", corpus=corpus)
    text = out["guidelines.md"][0].read_text()
    assert out["guidelines.md"][1] == 2
    current, earlier = text.split("## Earlier versions")
    assert (
        "In force: version 2, saved by bob" in current
        and "Second edit." in current
        and "First" not in current
    )
    assert earlier.index("First edit.") < earlier.index(
        DEFAULT_TEXT.strip()
    )  # newest first, down to the default
    assert "version 1, saved by alice" in earlier
