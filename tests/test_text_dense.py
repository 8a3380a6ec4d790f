"""The dense and hybrid first stages: the packaged MiniLM against sentence-transformers, FAISS against
brute force, the index's save/load round trip, the hybrid fusion on hand-built lists, the list runner."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.data.corpus import Patent
from patent_demo.index.dense import DenseIndex
from patent_demo.results import Results
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.dense import dense_search, dense_text
from patent_demo.text.hybrid import HybridSettings, hybrid_fusion, tune_hybrid
from patent_demo.text.lists import FirstStage, first_stage_runs, text_runs
from patent_demo.text.search import TextQuery

TEXTS = [
    "A washing machine that cleans laundry with micro bubbles.",
    "Biological treatment of waste water in an aerated tank.",
    "A spray nozzle for cleaning printed circuit boards.",
]


@pytest.fixture(scope="module")
def encoder():
    from patent_demo.text.dense import TextEncoder

    return TextEncoder()


def test_packaged_minilm_matches_sentence_transformers(encoder):
    st = pytest.importorskip("sentence_transformers")
    from patent_demo.text.dense import packaged_minilm

    ref = st.SentenceTransformer(str(packaged_minilm()), device="cpu").encode(
        TEXTS, normalize_embeddings=True
    )
    ours = encoder.encode(TEXTS, batch_size=2)
    assert ours.shape == (3, 384)
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_dense_search_equals_brute_force_and_survives_save_load(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ids = [f"P{i:02d}" for i in range(50)]
    index = DenseIndex.build(x, ids, ids, kind="flat")
    q = x[:3] + 0.1 * rng.normal(size=(3, 8)).astype(np.float32)
    run = dense_search(index, q, ["a", "b", "c"], k=5, exclude={"a": {"P00"}})
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    brute = qn @ x.T
    for row, qid in enumerate(["a", "b", "c"]):
        order = [ids[i] for i in np.argsort(-brute[row], kind="stable") if not (qid == "a" and i == 0)][:5]
        assert run[qid].ids == order
        np.testing.assert_allclose(
            run[qid].scores, np.sort(brute[row][[ids.index(d) for d in order]])[::-1], atol=1e-5
        )
    index.save(tmp_path / "ix")
    again = dense_search(DenseIndex.load(tmp_path / "ix"), q, ["a", "b", "c"], k=5, exclude={"a": {"P00"}})
    assert {k: v.ids for k, v in again.items()} == {k: v.ids for k, v in run.items()}


def test_hybrid_minmax_and_rrf_on_hand_built_lists():
    bm25 = Results(["a", "b", "c"], np.array([3.0, 2.0, 1.0]))
    dense = Results(["c", "d", "a"], np.array([0.9, 0.8, 0.5]))
    # minmax: bm25 a 1, b .5, c 0; dense c 1, d .75, a 0; missing 0
    h = hybrid_fusion(bm25, dense, 0.5)
    assert h.ids == ["c", "a", "d", "b"]
    np.testing.assert_allclose(h.scores, [0.5, 0.5, 0.375, 0.25])
    assert h.extras[0] == {"bm25_rank": 3, "dense_rank": 1}
    assert h.extras[3] == {"bm25_rank": 2, "dense_rank": None}
    assert hybrid_fusion(bm25, dense, 1.0).ids[:3] == ["a", "b", "c"]
    r = hybrid_fusion(bm25, dense, 0.5, "rrf")
    # a: .5/61 + .5/63; c: .5/63 + .5/61 (tie, dense order first); d: .5/62; b: .5/62 (tie: dense first)
    assert r.ids == ["c", "a", "d", "b"]
    np.testing.assert_allclose(r.scores[0], 0.5 / 61 + 0.5 / 63)


def test_tune_hybrid_picks_the_best_weight_on_validation():
    bm25 = {"q": Results(["x", "rel"], np.array([2.0, 1.0]))}
    dense = {"q": Results(["rel", "x"], np.array([0.9, 0.1]))}
    best, rows = tune_hybrid(
        bm25, dense, {"q": {"rel": 1}}, methods=("minmax",), weights=[0.0, 0.4, 0.6, 1.0]
    )
    assert (best.method, best.weight) == ("minmax", 0.4)  # 0 and 0.4 tie at MAP 1; 0.4 is nearer 0.5
    assert [r["map@10"] for r in rows] == [1.0, 1.0, 0.5, 0.5]


class _Enc:
    """A fixed 'encoder': texts mentioning bubble point one way, water the other."""

    def encode(self, texts):
        v = np.array(
            [[1.0 if "bubble" in t else 0.1, 1.0 if "water" in t else 0.1] for t in texts], dtype=np.float32
        )
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class _Rev:
    """A "reranker" that scores candidates by the code of their last letter (C above A)."""

    def rank(self, query_text, candidates, query_codes=None, batch_size=32):
        ids = [c[0] for c in candidates]
        return Results.from_unsorted(ids, [float(ord(i[-1])) for i in ids], [{"gate_mean": 0.5}] * len(ids))


def test_text_runs_make_every_list_with_first_stage_ranks():
    pats = [
        Patent("A", title="bubble washer", text="laundry with bubble"),
        Patent("B", title="water tank", text="waste water"),
        Patent("C", title="bubble water", text="both"),
        Patent("Q", title="bubble laundry", text="query patent"),
    ]
    library = {p.id: p for p in pats}
    bm25 = BM25Index.build(pats)
    enc = _Enc()
    dense = DenseIndex.build(
        enc.encode([dense_text(p) for p in pats]), [p.id for p in pats], [p.id for p in pats]
    )
    stage = FirstStage(bm25, dense, enc, HybridSettings("minmax", 0.5, 10))
    q = TextQuery("Q", "bubble laundry", exclude=frozenset({"Q"}))
    runs = text_runs(stage, [q], library, k=3, reranker=_Rev(), k_rerank=2, fusion_weight=0.5)
    assert runs["bm25"]["Q"].ids == ["A", "C"]
    assert runs["dense"]["Q"].ids == ["A", "C", "B"]
    assert runs["hybrid"]["Q"].ids == ["A", "C", "B"]
    # the hybrid's top 2 (A, C) re-ranked by reverse id: C before A, B below
    assert runs["dssdnet"]["Q"].ids == ["C", "A", "B"]
    assert runs["dssdnet"]["Q"].extras[0] == {
        "bm25_rank": 2,
        "dense_rank": 2,
        "pool_rank": 2,
    }
    assert runs["dssdnet"]["Q"].rerank_scores[0] == 67.0  # the re-ranker's own score, a field of its own
    assert runs["fused"]["Q"].ids[2] == "B"
    assert runs["fused"]["Q"].extras[2]["pool_rank"] == 3
    with pytest.raises(ValueError, match="records none"):
        text_runs(stage, [q], library, k=3, names=("fused",), reranker=_Rev())
    only = first_stage_runs(stage, [q], 3, names=("dense",), allowed={"Q": {"B"}})
    assert only["dense"]["Q"].ids == ["B"]


def test_app_and_cli_models_run_in_the_precision_chosen_for_the_cpu(monkeypatch):
    """``registry.default_reranker`` (the app's and the CLI's re-ranker) and the dense encoder apply
    ``choose_precision``: bf16 on a CPU with AVX512-BF16/AMX, fp32 elsewhere, or what the env var says."""
    from patent_demo.registry import builtin_models, default_reranker
    from patent_demo.text.dense import default_text_encoder
    from patent_demo.text.precision import ENV, choose_precision

    spec = next(m for m in builtin_models() if m.task == "text")
    for forced in ("fp32", "bf16"):
        monkeypatch.setenv(ENV, forced)
        assert default_reranker(spec).precision == forced
        assert default_text_encoder(())[0].precision == forced
    monkeypatch.delenv(ENV)
    assert default_reranker(spec).precision == choose_precision("auto", None)
    assert choose_precision("auto", {"avx2"}) == "fp32" and choose_precision("auto", {"amx_bf16"}) == "bf16"


def test_found_by_names_both_first_stages():
    from patent_demo.text.explain import found_by

    assert found_by({"bm25_rank": 3, "dense_rank": None, "pool_rank": 5}) == (
        "First stages: BM25 rank 3, dense rank – (not in its list); hybrid pool rank 5."
    )
    assert found_by({"bm25_rank": 7}) == "First stages: BM25 rank 7."
    assert found_by({"gate": None}) == ""
