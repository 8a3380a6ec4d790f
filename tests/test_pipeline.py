"""The workbench pipeline on a hand-built corpus with a pixel encoder and a tiny random BERT re-ranker.

Tests: patent_demo/workbench.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patent_demo import analysis
from patent_demo.data.corpus import Corpus
from patent_demo.query import check_abstract, parse_query_codes
from patent_demo.registry import ZERO_SHOT, scan_models
from patent_demo.request import DrawingRequest, TextRequest
from patent_demo.results import Results
from patent_demo.text.fusion import reciprocal_rank_fusion
from patent_demo.text.search import TextQuery, first_stage
from patent_demo.workbench import Workbench, WorkbenchConfig
from tests.support.tiny import make_tiny_corpus, make_workbench, tiny_reranker


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return make_workbench(tmp_path_factory.mktemp("wb"))


def test_drawing_search_finds_own_patent_first(bench):
    wb, _ = bench
    fig = wb.corpus["D0004"].figures[1]
    res = wb.search_drawing(DrawingRequest.build(wb, wb.corpus.image_path(fig), ZERO_SHOT, 4))
    assert [h.patent_id for h in res.hits][:1] == ["D0004"]
    assert res.hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert res.hits[0].figure == fig.path and res.hits[0].view == "top"
    assert res.query_patent_id == "D0004" and res.query_locarno == "07-01"
    assert len({h.patent_id for h in res.hits}) == 4  # grouped: one hit per patent
    others = [h for h in res.hits if h.patent_id != "D0004"]  # the query's own patent is never counted
    same = sum(h.locarno == "07-01" for h in others)
    main = sum(h.locarno[:2] == "07" for h in others)
    assert res.spread == (
        f"of the top-3: {same} in the query's subclass 07-01, {main} in its main class 07, {3 - main} elsewhere"
    )


def test_drawing_search_by_figure_and_bad_image(bench):
    wb, _ = bench
    fig = wb.corpus["D0000"].figures[0]
    res = wb.search_drawing(
        DrawingRequest.build(wb, wb.corpus.image_path(fig), ZERO_SHOT, 3, per_patent=False)
    )
    assert res.hits[0].figure == fig.path
    assert [h.rank for h in res.hits] == [1, 2, 3]
    from patent_demo.imageio import DrawingError

    with pytest.raises(DrawingError):
        wb.search_drawing(DrawingRequest.build(wb, b"this is not an image", ZERO_SHOT, 3))


def test_index_is_cached_on_disk(tmp_path):
    wb, enc = make_workbench(tmp_path)
    wb.index(ZERO_SHOT)
    assert enc.calls == 1  # 30 figures in one batch of 32
    again, enc2 = make_workbench(tmp_path)
    index = again.index(ZERO_SHOT)
    assert enc2.calls == 0 and index.count == 30
    np.testing.assert_allclose(index.embeddings, wb.index(ZERO_SHOT).embeddings)


def _hybrid_pool(wb, query, n):
    from patent_demo.text.lists import first_stage_runs

    return first_stage_runs(wb.text_stage(), [query], n, names=("hybrid",))["hybrid"]


def test_text_search_bm25_then_rerank(bench):
    wb, _ = bench
    lists = wb.search_text(TextRequest.build("lamp with a shade and bulb", "26-05", k=5)).lists
    bm25, dss = lists["bm25"], lists["dssdnet"]
    assert bm25.ids[:2] == ["D0008", "D0009"]  # the two lamps share three query words
    query = TextQuery("query", "lamp with a shade and bulb", {"locarno": ["26-05"]})
    expected_pool = _hybrid_pool(wb, query, 100)["query"]  # the re-ranker reads the hybrid pool
    direct = tiny_reranker().rank(
        "lamp with a shade and bulb",
        [(p, wb.candidate_text(wb.corpus[p]), wb.corpus[p].codes) for p in expected_pool.ids],
        query_codes={"locarno": ["26-05"]},
    )
    assert dss.ids == direct.ids[:5]
    np.testing.assert_allclose(dss.rerank_scores, direct.scores[:5], rtol=1e-5)
    ex = dss.extras[0]
    at = expected_pool.ids.index(dss.ids[0])
    assert ex["pool_rank"] == at + 1 and ex["bm25_rank"] == expected_pool.extras[at]["bm25_rank"]
    assert len(ex["gate"]) == 16 and ex["t_source"] == "codes"
    assert ex["t"] == int(wb.corpus[dss.ids[0]].locarno == "26-05")


def test_app_text_list_is_rerank_runs(bench):
    """One re-ranking path: the app's DSSDNet list is ``rerank_first``'s over the hybrid pool (the
    evaluation's), in order, with the same extras; its BM25 list is ``first_stage``'s."""
    from patent_demo.text.search import rerank_first

    wb, _ = bench
    text = "a lamp with a shade, a chair seat and a cup handle"
    lists = wb.search_text(TextRequest.build(text, "26-05", k=4)).lists
    bm25, dss = lists["bm25"], lists["dssdnet"]
    query = TextQuery("q", text, {"locarno": ["26-05"]})
    n = wb.config.bm25_candidates
    pool = _hybrid_pool(wb, query, n)
    run = rerank_first(pool, tiny_reranker(), [query], wb.corpus, n, keep_extras=True, rank_key="pool_rank")[
        "q"
    ]
    assert dss.ids == run.ids[:4] and len(run) > 4
    assert dss.extras == run.extras[:4]  # gate, t, ds/di/fusion..., bm25_rank, dense_rank, pool_rank
    assert np.all(np.diff(dss.rerank_scores) <= 0) and np.all(
        (dss.rerank_scores > 0) & (dss.rerank_scores < 1)
    )
    first = first_stage(wb.bm25(), [query], k=n)["q"]
    assert bm25.ids == first.ids[:4]
    np.testing.assert_allclose(bm25.scores, first.scores[:4])


def test_bad_text_inputs():
    with pytest.raises(ValueError, match="the abstract is empty"):
        check_abstract("   ")
    with pytest.raises(ValueError, match="has 100,000 characters; paste at most 20,000"):
        check_abstract("x" * 100_000)
    assert parse_query_codes("06-01; A47C 7/02, 0603") == {
        "locarno": ["06-01", "06-03"],
        "ipc": ["A47C 7/02"],
    }
    with pytest.raises(ValueError, match="unknown classification code 'ZZ-99'"):
        parse_query_codes("06-01; ZZ-99")


def test_reciprocal_rank_fusion_by_hand():
    a = Results(["x", "y", "z"], [3.0, 2.0, 1.0])
    b = Results(["z", "y"], [0.9, 0.8])
    fused = reciprocal_rank_fusion({"hmcl": a, "dssdnet": b}, k=1)
    assert fused.ids == ["z", "y", "x"]
    np.testing.assert_allclose(fused.scores, [1 / 4 + 1 / 2, 1 / 3 + 1 / 3, 1 / 2], rtol=1e-6)
    assert fused.extras[0]["ranks"] == {"hmcl": 3, "dssdnet": 1}
    default = reciprocal_rank_fusion({"hmcl": a, "dssdnet": b})
    np.testing.assert_allclose(default.scores[0], 1 / 63 + 1 / 61, rtol=1e-6)


def test_embedding_map_samples_and_keeps_highlight(bench):
    from sklearn.metrics import silhouette_score

    wb, _ = bench
    full = analysis.embedding_map(wb, ZERO_SHOT, dims=2)
    assert full["coords"].shape == (30, 2) and full["sampled"] == (30, 30)
    index = wb.index(ZERO_SHOT)
    labels = [wb.corpus[p].locarno for p in index.patent_ids]
    assert full["silhouette"] == pytest.approx(
        silhouette_score(index.embeddings, labels, metric="cosine"), abs=1e-6
    )
    assert full["silhouettes"]["patent"] == pytest.approx(  # float64 here, float32 in scikit-learn's call
        silhouette_score(index.embeddings, index.patent_ids, metric="cosine"), abs=1e-5
    )
    q = index.embeddings[0]
    part = analysis.embedding_map(wb, ZERO_SHOT, query=q, highlight=["D0009"], dims=3, max_points=10)
    marked = sum(p == "D0009" for p in index.patent_ids)
    outside = sum(p == "D0009" for p in part["patents"][:10])  # the seeded sample, then the hits it missed
    assert part["coords"].shape == (10 + marked - outside, 3)
    assert part["sampled"] == (10 + marked - outside, 30)
    assert sum(part["highlight"]) == marked and all(
        p == "D0009" for p, h in zip(part["patents"], part["highlight"], strict=True) if h
    )
    assert part["query"].shape == (3,)


def test_evaluate_worst_first(bench):
    wb, _ = bench
    summary, rows = analysis.evaluate(wb, ZERO_SHOT, k=5)
    assert len(rows) == 10 and summary["num_queries"] == 10
    assert [r.subclass_ap for r in rows] == sorted(r.subclass_ap for r in rows)
    # naive subclass AP for the worst query: gallery = other test figures, ranked by cosine
    index = wb.index(ZERO_SHOT)
    q_rows, g_rows = wb.protocol()
    worst = rows[0]
    qi = [index.ids[i] for i in q_rows].index(worst.query_figure)
    sims = index.embeddings[g_rows] @ index.embeddings[q_rows[qi]]
    order = np.argsort(-sims, kind="stable")
    rel = [wb.corpus[index.patent_ids[g_rows[j]]].locarno == worst.locarno for j in order]
    hits, precisions = 0, []
    for r, ok in enumerate(rel, 1):
        if ok:
            hits += 1
            precisions.append(hits / r)
    assert worst.subclass_ap == pytest.approx(np.mean(precisions), abs=1e-9)
    assert worst.first_relevant_rank == rel.index(True) + 1


@pytest.mark.slow
@pytest.mark.parametrize("test_split", [True, False], ids=["test-split", "no-split"])
def test_error_analysis_reports_what_train_evaluate_reports(tmp_path, test_split):
    """One protocol: the app's Error-analysis numbers (zero-shot, the untouched trunk, over the cached index) equal
    ``python -m train.score_drawings`` on the same corpus, with a test split and (the shared fallback) without."""
    from train.score_drawings import main as evaluate_main

    corpus = make_tiny_corpus(tmp_path / "corpus", per_subclass=2, figures=2)
    if not test_split:
        (tmp_path / "corpus" / "splits.json").unlink()
        corpus = Corpus.load(tmp_path / "corpus")
    wb = Workbench(
        WorkbenchConfig(cache_dir=tmp_path / "cache", checkpoint_dirs=()), corpus=corpus, progress=False
    )
    summary, rows = analysis.evaluate(wb, ZERO_SHOT, k=10)
    out = tmp_path / "eval.json"
    assert (
        evaluate_main(
            [
                "--model",
                "lite-trunk",
                "--corpus",
                str(tmp_path / "corpus"),
                "--out",
                str(out),
                "--no-silhouette",
            ]
        )
        == 0
    )
    reference = json.loads(out.read_text())
    assert reference["protocol"] == ("queries" if test_split else "all")
    assert reference["split"] == ("test" if test_split else "all")
    assert summary["num_queries"] == reference["metrics"]["num_queries"] == len(rows)
    assert summary["num_queries"] == (10 if test_split else 20)
    for key in ("patent_map", "subclass_map", "main_map", "hier_ndcg@10", "subclass_ndcg@10"):
        assert summary[key] == pytest.approx(reference["metrics"][key], abs=1e-5), key
    # the per-query rows the tab lists average to its summary
    assert np.mean([r.subclass_ap for r in rows]) == pytest.approx(summary["subclass_map"], abs=1e-12)
    assert np.mean([r.patent_ap for r in rows]) == pytest.approx(summary["patent_map"], abs=1e-12)


def test_registry_scans_checkpoints(tmp_path):
    def ckpt(name, config):
        d = tmp_path / "ckpts" / name
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps(config))
        (d / "model.safetensors").write_bytes(b"")
        return d

    ckpt("hmcl-demo", {"kind": "hmcl", "version": "3", "train": {"num_labels": 20}})
    ckpt("cl-demo", {"kind": "hmcl", "train": {"s_s": 0.0, "s_m": 0.0}})
    ckpt("dssdnet-demo", {"kind": "dssdnet", "base": "minilm-l6"})
    (tmp_path / "ckpts" / "not-a-checkpoint").mkdir()
    specs = scan_models([tmp_path / "ckpts", tmp_path / "missing"])
    assert [(s.key, s.task, s.kind) for s in specs] == [
        ("hmcl-demo", "drawing", "hmcl"),
        ("cl-demo", "drawing", "cl"),
        (ZERO_SHOT, "drawing", "zero-shot"),
        ("dssdnet-demo", "text", "dssdnet"),
        ("dssdnet-untrained", "text", "dssdnet"),
    ]
    assert specs[0].label == "HMCL: hmcl-demo v3, 20 labels" and specs[0].checkpoint_id == "hmcl-demo@3"
    before = specs[0].fingerprint
    (tmp_path / "ckpts" / "hmcl-demo" / "model.safetensors").write_bytes(b"changed")
    assert scan_models([tmp_path / "ckpts"])[0].fingerprint != before


def test_examples_one_per_subclass(bench):
    wb, _ = bench
    ex = wb.examples(n=10)
    assert [Path(p).name for p in ex] == [
        "D0000_0.png",
        "D0002_0.png",
        "D0004_0.png",
        "D0006_0.png",
        "D0008_0.png",
    ]


def test_bm25_on_several_threads_gives_the_same_lists(tmp_path, bench):
    """``bm25_shards`` (the app's ``--bm25-shards``) scores BM25 on threads: the same lists and scores."""
    pytest.importorskip("numba")
    wb, _ = bench
    sharded, _ = make_workbench(tmp_path, bm25_shards=2)
    for text in ("lamp with a shade and bulb", "chair seat leg"):
        req = TextRequest.build(text, "", k=8, lists=["bm25"], rerank=False)
        a, b = wb.search_text(req).lists["bm25"], sharded.search_text(req).lists["bm25"]
        assert a.ids == b.ids and np.array_equal(a.scores, b.scores)
    assert sharded.bm25()._shards == 2 and wb.bm25()._shards is None
