"""The Error-analysis and Embedding-map computations on a corpus classified under USPC (real design
drawings such as the 2007 USPC set carry no Locarno code): classes come from the hierarchy, not Locarno."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.analysis import (
    ABOVE,
    cached_evaluation,
    class_of,
    describe_protocol,
    domain_summary,
    embedding_map,
    evaluate,
    failures,
    main_class_of,
)
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


def _uspc_bench(tmp_path) -> Workbench:
    return Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()),
        corpus=_uspc_corpus(tmp_path / "corpus"),
        drawing_encoder_factory=lambda spec: PixelEncoder(),
        progress=False,
    )


def test_failures_are_split_in_domain_and_out_of_domain(tmp_path):
    """Each query's best-ranked figure of its own subclass (in-domain) and of another subclass of its main
    class (out-of-domain), found by a naive ranking, with what outranked it."""
    wb = _uspc_bench(tmp_path)
    _, rows = evaluate(wb, ZERO_SHOT, k=5)
    index = wb.index(ZERO_SHOT)
    q_rows, g_rows = wb.protocol()
    seen = set()
    for row in rows:
        qi = [index.ids[i] for i in q_rows].index(row.query_figure)
        sims = index.embeddings[g_rows] @ index.embeddings[q_rows[qi]]
        ranked = [g_rows[j] for j in np.argsort(-sims, kind="stable") if g_rows[j] != q_rows[qi]]
        subs = [class_of(wb.corpus[index.patent_ids[g]]) for g in ranked]
        same = next(r for r, s in enumerate(subs) if s == row.locarno)
        miss = row.misses["in-domain"]
        assert miss["rank"] == same + 1 == row.first_relevant_rank
        assert miss["figure"] == index.ids[ranked[same]] and miss["class"] == row.locarno
        assert [a["figure"] for a in miss["above"]] == [index.ids[g] for g in ranked[: min(same, ABOVE)]]
        main = row.locarno.split("/")[0]
        other = [r for r, s in enumerate(subs) if s != row.locarno and s.split("/")[0] == main]
        if other:  # D6/369 and D6/380 share D6; D7/500 and D7/501 share D7; D26/1 has no sibling
            out = row.misses["out-of-domain"]
            assert out["rank"] == other[0] + 1 and out["class"] != row.locarno
            seen.add(row.locarno)
        else:
            assert "out-of-domain" not in row.misses
    assert seen == {"D6/369", "D6/380", "D7/500", "D7/501"}
    failed = failures(rows)
    assert failed and all(m["rank"] > 1 for _, _, m in failed)
    assert [m["rank"] for _, _, m in failed] == sorted((m["rank"] for _, _, m in failed), reverse=True)
    assert {d for _, d, _ in failures(rows, "out-of-domain")} == {"out-of-domain"}
    split = domain_summary(rows, k=5)
    assert split["in-domain"]["queries"] == 10 and split["out-of-domain"]["queries"] == 8
    assert split["in-domain"]["first"] == sum(r.misses["in-domain"]["rank"] == 1 for r in rows)


def test_an_evaluation_is_read_from_the_disk_cache(tmp_path, monkeypatch):
    import patent_demo.analysis as analysis

    wb = _uspc_bench(tmp_path)
    metrics, rows, about = cached_evaluation(wb, ZERO_SHOT)
    monkeypatch.setattr(analysis, "evaluate", lambda *a, **k: pytest.fail("computed again"))
    again = cached_evaluation(_uspc_bench(tmp_path), ZERO_SHOT)  # another workbench, the same cache
    assert again == (metrics, rows, about) and about["seconds"] >= 0


def test_tsne_map_is_fitted_once_and_says_three_silhouettes(tmp_path, monkeypatch):
    import patent_demo.analysis as analysis

    wb = _uspc_bench(tmp_path)
    index = wb.index(ZERO_SHOT)
    first = embedding_map(wb, ZERO_SHOT, query=index.embeddings[0], projection="t-SNE")
    assert first["coords"].shape == (20, 2) and first["explained"] == []
    assert set(first["silhouettes"]) == {"patent", "subclass", "main class"}
    # the query is figure 0 itself: it sits at the mean of its 5 nearest drawings, itself among them
    near = np.argsort(-(index.embeddings @ index.embeddings[0]), kind="stable")[:5]
    np.testing.assert_allclose(first["query"], first["coords"][near].mean(axis=0), atol=1e-9)
    monkeypatch.setattr(analysis, "_tsne", lambda *a, **k: pytest.fail("t-SNE fitted again"))
    again = embedding_map(wb, ZERO_SHOT, projection="t-SNE")
    np.testing.assert_array_equal(again["coords"], first["coords"])
    with pytest.raises(ValueError, match="projection must be one of PCA, t-SNE"):
        embedding_map(wb, ZERO_SHOT, projection="UMAP")
