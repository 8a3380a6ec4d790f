"""The committed text split (``splits/cs3245_text.json``): families by union-find, no test query with a
twin (same family or identical normalised text) among the training or validation queries, and the
file is what its rule draws."""

from __future__ import annotations

import json

import pytest

from patent_demo.data.corpus import Corpus, Patent
from patent_demo.data.families import families, text_key
from tests.conftest import REPO_ROOT, require_shared

SPLIT = REPO_ROOT / "splits" / "cs3245_text.json"
TWINS = [
    ("US6535378", "US5583744"),
    ("US7678275", "US8020710"),
    ("US7943044", "US8057670"),
    ("US7981642", "US8003355"),
]


def test_families_join_members_pairs_and_identical_texts():
    pats = [
        Patent("A", title="Spray nozzle", text="A nozzle."),
        Patent("B", title="spray  NOZZLE", text="a nozzle"),  # same normalised text as A
        Patent("C", title="Other", text="x", extra={"family_members": ["D", "ZZ"]}),
        Patent("D", title="Else", text="y"),
        Patent("E", title="Third", text="z"),
        Patent("F", title="Fourth", text="w"),
    ]
    assert text_key(pats[1]) == "spray nozzle a nozzle"
    assert families(pats, [("E", "F"), ("E", "nope")]) == {
        "A": "A",
        "B": "A",
        "C": "C",
        "D": "C",
        "E": "E",
        "F": "E",
    }
    assert families(pats, same_text=False)["B"] == "B"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from patent_demo.data.build import build_corpus

    src = require_shared("cs3245_patsnap_corpus_qrels")
    out = tmp_path_factory.mktemp("cs3245")
    build_corpus("text", src, out, progress=False)
    return Corpus.load(out, validate=False)


def test_committed_split_is_what_its_rule_draws(corpus):
    from patent_demo.data.loaders.textcorpus import read_pairs
    from train.text.split import draw_split

    saved = json.loads(SPLIT.read_text(encoding="utf-8"))
    pairs = read_pairs(require_shared("cs3245_patsnap_corpus_qrels") / "in_corpus_family_pairs.tsv")
    drawn = draw_split(corpus, pairs, tuple(saved["fractions"]), saved["seed"])
    assert {s: drawn[s] for s in ("train", "val", "test")} == {s: saved[s] for s in ("train", "val", "test")}
    assert saved["stats"]["queries"] == {"train": 118, "val": 59, "test": 59}
    assert sorted(saved["train"] + saved["val"] + saved["test"]) == sorted(corpus.qrels)


def test_no_test_query_has_a_training_twin(corpus):
    from patent_demo.data.loaders.textcorpus import read_pairs

    saved = json.loads(SPLIT.read_text(encoding="utf-8"))
    fam = families(
        corpus.patents,
        read_pairs(require_shared("cs3245_patsnap_corpus_qrels") / "in_corpus_family_pairs.tsv"),
    )
    seen = {fam[q] for q in saved["train"] + saved["val"]}
    texts = {text_key(corpus[q]) for q in saved["train"] + saved["val"]}
    assert [q for q in saved["test"] if fam[q] in seen] == []
    assert [q for q in saved["test"] if text_key(corpus[q]) in texts] == []
    split_of = {q: s for s in ("train", "val", "test") for q in saved[s]}
    for a, b in TWINS:  # the four identical-text twins now share a split
        assert split_of[a] == split_of[b]


def test_corpus_build_split_keeps_identical_texts_together(corpus):
    """``patent-demo corpus build`` draws its patent-level split over the same families: twins share a split."""
    split_of = {pid: s for s, ids in corpus.splits.items() for pid in ids}
    by_text: dict[str, set[str]] = {}
    for p in corpus.patents:
        if text_key(p):
            by_text.setdefault(text_key(p), set()).add(split_of[p.id])
    assert sum(len(v) > 1 for v in by_text.values()) == 0
    assert sum(1 for p in corpus.patents if text_key(p)) > len(by_text)  # there are twins to keep together
