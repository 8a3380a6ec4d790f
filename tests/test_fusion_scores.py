"""BM25 + DSSDNet score fusion: weight 1 is BM25, 0 the re-ranker, tuned on validation queries.

Tests: patent_demo/text/fusion.py
"""

import numpy as np
import pytest

from patent_demo.request import TextRequest
from patent_demo.results import Results
from patent_demo.text.fusion import (
    DEFAULT_FUSION_WEIGHT,
    checkpoint_fusion_weight,
    fuse_run,
    minmax,
    score_fusion,
    tune_fusion_weight,
)

FIRST = Results(["a", "b", "c", "d", "e"], [9.0, 7.0, 6.0, 2.0, 1.0])  # BM25, best first
RERANKED = Results.from_unsorted(
    ["a", "b", "c", "d"], [0.1, 0.9, 0.5, 0.7], [{"gate_mean": 0.5}] * 4
)  # the head


def test_minmax():
    np.testing.assert_allclose(minmax([2.0, 4.0, 3.0]), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax([5.0, 5.0]), [0.0, 0.0])
    assert minmax([]).size == 0


def test_weight_one_is_bm25_zero_is_the_reranker_and_the_tail_keeps_bm25_order():
    assert score_fusion(FIRST, RERANKED, 1.0).ids == ["a", "b", "c", "d", "e"]
    assert score_fusion(FIRST, RERANKED, 0.0).ids == ["b", "d", "c", "a", "e"]
    half = score_fusion(FIRST, RERANKED, 0.5)
    # by hand: bm25 minmax over the head a 1, b 5/7, c 4/7, d 0; reranker a 0, b 1, c 0.5, d 0.75
    want = {"a": 0.5, "b": (5 / 7 + 1) / 2, "c": (4 / 7 + 0.5) / 2, "d": 0.375}
    assert half.ids[:4] == sorted(want, key=lambda d: -want[d]) and half.ids[4] == "e"
    fused = {d: e["fused"] for d, e in zip(half.ids, half.extras, strict=True) if "fused" in e}
    assert fused == pytest.approx(want)
    assert half.extras[0]["gate_mean"] == 0.5 and half.extras[0]["bm25_rank"] == 2
    assert list(half.scores) == sorted(half.scores, reverse=True)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        score_fusion(FIRST, RERANKED, 1.5)


def test_tuning_picks_the_best_validation_weight_and_prefers_bm25_on_ties():
    # query 1: BM25 is right; query 2: the re-ranker is right -> a mix wins over both ends
    first = {"q1": Results(["x", "y", "z"], [3.0, 2.0, 1.0]), "q2": Results(["u", "v", "w"], [3.0, 2.9, 1.0])}
    rer = {
        "q1": Results.from_unsorted(["x", "y", "z"], [0.5, 0.6, 0.1]),
        "q2": Results.from_unsorted(["u", "v", "w"], [0.1, 0.9, 0.2]),
    }
    qrels = {"q1": {"x": 1}, "q2": {"v": 1}}
    w, rows = tune_fusion_weight(first, rer, qrels, metrics=("ndcg@1",))
    best = max(r["objective"] for r in rows)
    assert best == 1.0 and {r["weight"] for r in rows if r["objective"] == best} >= {w} and 0 < w < 1
    assert w == max(r["weight"] for r in rows if r["objective"] == best)
    fused = fuse_run(first, rer, w)
    assert fused["q1"].ids[0] == "x" and fused["q2"].ids[0] == "v"
    # a re-ranker that adds nothing: every weight ties, BM25 (1.0) is chosen
    same = {q: Results.from_unsorted(r.ids, [0.5] * len(r)) for q, r in first.items()}
    assert tune_fusion_weight(first, same, qrels, metrics=("ndcg@1",))[0] == 1.0


def test_checkpoint_weight(tmp_path):
    assert checkpoint_fusion_weight(None) == DEFAULT_FUSION_WEIGHT
    (tmp_path / "metrics.json").write_text('{"fusion": {"weight": 0.35}}')
    assert checkpoint_fusion_weight(tmp_path) == 0.35
    (tmp_path / "metrics.json").write_text('{"after": {}}')
    assert checkpoint_fusion_weight(tmp_path) == DEFAULT_FUSION_WEIGHT


def test_workbench_text_lists_hold_the_fused_list(tmp_path):
    from patent_demo.text.lists import first_stage_runs
    from patent_demo.text.search import TextQuery
    from tests.support.tiny import make_workbench

    wb, _ = make_workbench(tmp_path)
    lists = wb.search_text(TextRequest.build("lamp with a shade and bulb", "26-05", k=5)).lists
    n = min(5, len(lists["bm25"]))
    assert sorted(lists) == ["bm25", "dense", "dssdnet", "fused", "hybrid"] and n >= 2
    assert all(len(lists[name]) == 5 for name in ("dense", "hybrid", "dssdnet", "fused"))
    query = TextQuery("query", "lamp with a shade and bulb", {"locarno": ["26-05"]})
    pool = first_stage_runs(wb.text_stage(), [query], wb.config.bm25_candidates, names=("hybrid",))["hybrid"][
        "query"
    ]
    spec = wb.default_text_model()
    reranked = wb.reranker(spec).rank(
        "lamp with a shade and bulb",
        [(p, wb.candidate_text(wb.corpus[p]), wb.corpus[p].codes) for p in pool.ids],
        query_codes={"locarno": ["26-05"]},
    )
    assert lists["dssdnet"].ids == reranked.ids[:5]
    weight, note = wb.fusion_weight(spec)
    assert weight == 0.5 and note.endswith(
        "records no fusion weight tuned on the hybrid top 100: the fused list uses an untuned 0.5"
    )
    want = score_fusion(pool, reranked, weight, rank_key="pool_rank")
    assert lists["fused"].ids == want.ids[:5]
    assert all("fused" in e and "bm25_rank" in e and "dense_rank" in e for e in lists["fused"].extras)


def test_tuned_fusion_weight_is_per_pool_and_depth(tmp_path):
    from patent_demo.text.fusion import tuned_fusion_weight

    assert tuned_fusion_weight(None) is None
    (tmp_path / "metrics.json").write_text('{"fusion": {"weight": 0.15}}')  # an old checkpoint: BM25 pool
    assert tuned_fusion_weight(tmp_path, "hybrid", 100) is None
    assert tuned_fusion_weight(tmp_path, "bm25") == 0.15
    (tmp_path / "metrics.json").write_text('{"fusion": {"weight": 0.3, "pool": "hybrid", "k_rerank": 100}}')
    assert tuned_fusion_weight(tmp_path, "hybrid", 100) == 0.3
    assert tuned_fusion_weight(tmp_path, "hybrid", 50) is None
    (tmp_path / "metrics.json").write_text(
        '{"fusion": {"weight": 0.15}, "fusion_pools": {"hybrid@100": {"weight": 0.4, "pool": "hybrid", "k_rerank": 100}}}'
    )
    assert (
        tuned_fusion_weight(tmp_path, "hybrid", 100) == 0.4 and tuned_fusion_weight(tmp_path, "bm25") == 0.15
    )


def test_the_tuned_fusion_cannot_fall_below_its_first_stage_on_validation():
    """The grid holds weight 1 (the first stage alone, its order exactly), so whatever the re-ranker does,
    the weight chosen on validation scores at least the first stage there."""
    from patent_demo.metrics import evaluate_run

    rng = np.random.default_rng(7)
    for trial in range(20):
        first, rer, qrels = {}, {}, {}
        for q in range(8):
            ids = [f"d{q}_{i}" for i in range(30)]
            first[f"q{q}"] = Results(ids, np.sort(rng.normal(size=30))[::-1].copy())
            rer[f"q{q}"] = Results.from_unsorted(
                ids, rng.normal(size=30)
            )  # a re-ranker no better than chance
            qrels[f"q{q}"] = {d: 1 for d in rng.choice(ids, 3, replace=False)}
        w, rows = tune_fusion_weight(first, rer, qrels)
        alone = evaluate_run(first, qrels, [10])
        base = np.mean([alone[m] for m in ("recall@10", "map@10", "ndcg@10")])
        chosen = next(r for r in rows if r["weight"] == w)
        assert chosen["objective"] >= base - 1e-12, trial
        assert fuse_run(first, rer, 1.0)["q0"].ids == first["q0"].ids  # weight 1 is the first stage's order


def test_the_depth_a_checkpoint_chose_on_validation_is_the_depth_the_lists_rerank(tmp_path, monkeypatch):
    """``metrics.json`` ``rerank_depth`` (written by ``train.text.rerank_eval --write-depth``) sets how many
    hybrid candidates the workbench re-ranks and which tuned fusion weight it reads; without it the
    configured ``bm25_candidates``."""
    import json
    from types import SimpleNamespace

    from patent_demo.text.fusion import validated_depth
    from tests.support.tiny import make_workbench

    ck = tmp_path / "ck"
    ck.mkdir()
    assert validated_depth(None) is None and validated_depth(ck) is None
    (ck / "metrics.json").write_text(
        json.dumps(
            {
                "rerank_depth": {"depth": 30},
                "fusion_pools": {"hybrid@30": {"weight": 0.6, "pool": "hybrid", "k_rerank": 30}},
            }
        )
    )
    assert validated_depth(ck) == 30
    wb, _ = make_workbench(tmp_path / "wb")
    spec = SimpleNamespace(path=ck, key="ck")
    assert wb.rerank_depth(spec) == 30 and wb.fusion_weight(spec) == (0.6, "")
    assert wb.rerank_depth(SimpleNamespace(path=None, key="x")) == wb.config.bm25_candidates
    query = "lamp with a shade and bulb"
    top6 = wb.search_text(TextRequest.build(query, "26-05", k=6, lists=("hybrid",))).lists["hybrid"].ids
    for depth in (3, 6):  # k = 3: the re-ranked hits come from the hybrid's top `depth`
        monkeypatch.setattr(type(wb), "rerank_depth", lambda self, spec, d=depth: d)
        shown = (
            wb.search_text(TextRequest.build(query, "26-05", k=3, lists=("dssdnet",))).lists["dssdnet"].ids
        )
        assert set(shown) <= set(top6[:depth]) and len(shown) == 3
    assert set(shown) != set(top6[:3])  # re-ranking 6 brought up a hit from below the hybrid's top 3


def test_the_shallowest_depth_that_loses_nothing_on_validation(tmp_path):
    from train.text.rerank_eval import record, shallowest_lossless

    def split(d, f):
        return {"val": {"dssdnet": {"map@10": d}, "fused": {"map@10": f}}}

    out = {
        "k_rerank": 100,
        "command": "python -m train.text.rerank_eval …",
        "fusion": {"weight": 0.6, "tuned_on": "18 validation queries"},
        "splits": {"val": {"summary": {"dssdnet": {"map@10": 0.30}, "fused": {"map@10": 0.40}}}},
        "depths": {
            "30": {"fusion_weight": 0.5, "splits": split(0.31, 0.39)},
            "50": {"fusion_weight": 0.7, "splits": split(0.30, 0.40)},
        },
    }
    assert shallowest_lossless(out) == 50  # 30 loses on the fused list
    out["depths"]["50"]["splits"] = split(0.29, 0.41)
    assert shallowest_lossless(out) == 100  # nothing shallower keeps both lists
    (tmp_path / "metrics.json").write_text("{}")
    record(tmp_path, out, 50, rerank_depth=True)
    import json

    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["rerank_depth"]["depth"] == 50 and m["fusion_pools"]["hybrid@50"]["weight"] == 0.7
