"""The Error-analysis and Embedding-map computations on a corpus classified under USPC (real design
drawings such as the 2007 USPC set carry no Locarno code): classes come from the hierarchy, not Locarno."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.analysis import class_of, describe_protocol, embedding_map, evaluate, main_class_of
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.registry import ZERO_SHOT
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.support.tiny import PixelEncoder, make_tiny_corpus

USPC = {"06-01": "D6/369", "06-03": "D6/380", "07-01": "D7/500", "07-02": "D7/501", "26-05": "D26/1"}


def _uspc_corpus(root) -> Corpus:
    corpus = make_tiny_corpus(root, per_subclass=2, figures=2)
    for p in corpus.patents:
        p.codes = {"uspc": [USPC[p.codes["locarno"][0]]]}
        p.extra["query_figure"] = 0  # a marked query view: the queries protocol (resolve_split)
    corpus.save()
    return Corpus.load(root)


def test_class_of_reads_the_hierarchy():
    assert class_of(Patent("A", codes={"locarno": ["06-01"], "uspc": ["D6/369"]})) == "06-01"
    assert class_of(Patent("B", codes={"uspc": ["D6/369"]})) == "D6/369"
    assert main_class_of(Patent("B", codes={"uspc": ["D6/369"]})) == "D6"
    assert class_of(Patent("C")) == "" and main_class_of(Patent("C")) == ""


def test_error_analysis_on_a_uspc_corpus(tmp_path):
    corpus = _uspc_corpus(tmp_path / "corpus")
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()),
        corpus=corpus,
        drawing_encoder_factory=lambda spec: PixelEncoder(),
        progress=False,
    )
    summary, rows = evaluate(wb, ZERO_SHOT, k=5)
    assert summary["num_queries"] == len(rows) == 10
    assert {r.locarno for r in rows} == set(USPC.values())
    # the naive subclass AP of every row: same USPC subclass, other test figures ranked by cosine
    index = wb.index(ZERO_SHOT)
    q_rows, g_rows = wb.protocol()
    ids = [index.ids[i] for i in q_rows]
    for row in rows:
        qi = ids.index(row.query_figure)
        sims = index.embeddings[g_rows] @ index.embeddings[q_rows[qi]]
        order = np.argsort(-sims, kind="stable")
        rel = [class_of(wb.corpus[index.patent_ids[g_rows[j]]]) == row.locarno for j in order]
        precisions = [sum(rel[:r]) / r for r in range(1, len(rel) + 1) if rel[r - 1]]
        assert row.subclass_ap == pytest.approx(np.mean(precisions), abs=1e-9)
        assert row.first_relevant_rank == rel.index(True) + 1
    assert describe_protocol(wb) == (
        "the test split, one query figure per patent against the split's other figures: 10 queries, 10 gallery figures"
    )
    m = embedding_map(wb, ZERO_SHOT, dims=2)
    assert set(m["subclasses"]) == set(USPC.values())
    assert set(m["mains"]) == {"D6", "D7", "D26"}


def test_protocol_without_a_test_split(tmp_path):
    _uspc_corpus(tmp_path / "corpus")
    (tmp_path / "corpus" / "splits.json").unlink()
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()),
        corpus=Corpus.load(tmp_path / "corpus"),
        drawing_encoder_factory=lambda spec: PixelEncoder(),
        progress=False,
    )
    assert (
        describe_protocol(wb)
        == "every figure against all the others (the corpus has no test split): 20 queries, 20 gallery figures"
    )


def test_protocol_of_every_patent_on_a_corpus_with_a_test_split(tmp_path):
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()),
        corpus=_uspc_corpus(tmp_path / "corpus"),
        drawing_encoder_factory=lambda spec: PixelEncoder(),
        progress=False,
    )
    assert wb.corpus.splits.get("test")  # it has one; "all" was asked for
    assert describe_protocol(wb, "all").startswith(
        "every figure against all the others of every patent (all splits): "
    )


def test_corpus_description_says_where_the_corpus_comes_from(tmp_path):
    corpus = _uspc_corpus(tmp_path / "corpus")  # a corpus object handed in: not the built-in generated one
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()), corpus=corpus, progress=False
    )
    assert (
        wb.corpus_description()
        == f"Corpus **{corpus.name}** · corpus · 10 patents, 20 drawings · schemes: uspc"
    )
    corpus.meta.update({"generated": True})
    assert "generated demo corpus (synthetic drawings and texts, not real patents)" in wb.corpus_description()
    corpus.meta.update({"generated": False, "source_label": "USPTO Red Book"})
    assert wb.corpus_description().startswith(f"Corpus **{corpus.name}** · USPTO Red Book · 10 patents")
