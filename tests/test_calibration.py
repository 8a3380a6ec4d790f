"""The "no good match" threshold: null scores against a naive loop, the text ceiling as an upper
bound, and the message."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo import calibration as cal
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.drawing.index import DenseIndex
from patent_demo.text.bm25 import BM25Index
from tests.conftest import require_shared


def test_drawing_null_scores_equal_a_naive_loop():
    rng = np.random.default_rng(0)
    classes = ["06-01", "06-02", "07-01", "26-05"]
    pats = [
        Patent(f"P{i}", codes={"locarno": [classes[i % 4]]}, citations=[f"P{i - 4}"] if i >= 4 else [])
        for i in range(40)
    ]
    corpus = Corpus(".", pats)
    x = rng.standard_normal((80, 8)).astype(np.float32)
    pids = [f"P{i // 2}" for i in range(80)]
    index = DenseIndex.build(x, [f"f{i}" for i in range(80)], pids)
    rows = list(range(0, 80, 3))
    got = cal.null_drawing_scores(index, corpus, rows)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    for j, r in enumerate(rows):
        p = corpus[pids[r]]
        main = p.locarno[:2]
        best = max(
            float(xn[r] @ xn[i])
            for i in range(80)
            if corpus[pids[i]].locarno[:2] != main and pids[i] != p.id
            and pids[i] not in p.citations and p.id not in corpus[pids[i]].citations
        )  # fmt: skip
        assert got[j] == pytest.approx(best, abs=1e-5)
    th = cal.calibrate_drawing(index, corpus, samples=30, quantile=0.9)
    assert th.samples == 30 and th.task == "drawing"
    assert th.is_weak(th.threshold) and not th.is_weak(th.threshold + 1e-6)
    assert th.message(th.threshold + 0.1) == ""
    assert th.message(0.1).startswith("no good match: the best hit scores 0.100, not above")


def test_text_ceiling_bounds_every_score_and_is_reached():
    docs = [
        {"id": "a", "text": "pump pump pump valve"},
        {"id": "b", "text": "valve valve valve valve seal"},
        {"id": "c", "text": "seal"},
    ]
    bm25 = BM25Index.build(docs, fields=("text",))
    for q in ("pump valve", "seal", "pump seal valve"):
        ceiling = cal.text_ceiling(bm25, q)
        res = bm25.search(q, k=10)
        assert all(s <= ceiling + 1e-6 for s in res.scores)
    # one token: the ceiling is that token's best document score
    assert cal.text_ceiling(bm25, "pump") == pytest.approx(float(bm25.search("pump", k=1).scores[0]))
    # a token the corpus lacks counts as the best any token gives
    best = max(cal.text_ceiling(bm25, t) for t in ("pump", "valve", "seal"))
    assert cal.text_ceiling(bm25, "pump zzz") == pytest.approx(cal.text_ceiling(bm25, "pump") + best)
    assert cal.text_ceiling(bm25, "the of") == 0.0
    assert cal.normalized_text_score(bm25, "the of", 3.0) == 0.0


def test_text_threshold_on_real_corpus_flags_unrelated_searches(tmp_path):
    from patent_demo.data.loaders.textcorpus import load_text_corpus

    corpus = load_text_corpus(require_shared("cs3245_patsnap_corpus_qrels") / "patsnap_docs.jsonl")
    bm25 = BM25Index.build(corpus)
    th = cal.calibrate_text(bm25, corpus, samples=100, seed=0)
    assert 0.0 < th.threshold < 1.0 and th.samples == 100
    th.save(tmp_path / "t.json")
    assert cal.NoMatchThreshold.load(tmp_path / "t.json") == th
    # an off-topic query over this corpus is flagged; a corpus abstract searched as it is is not
    q = "a recipe for chocolate cake with strawberries"
    res = bm25.search(q, k=1)
    s = cal.normalized_text_score(bm25, q, float(res.scores[0])) if len(res) else 0.0
    assert th.is_weak(s)
    p = corpus.patents[0]
    from patent_demo.text.search import candidate_text

    qt = candidate_text(p)
    assert not th.is_weak(cal.normalized_text_score(bm25, qt, float(bm25.search(qt, k=1).scores[0])))
