"""The "no good match" threshold: null scores against a naive loop, the judged threshold's rates and
when it is shown, the text ceiling as an upper bound, and the calibration on cs3245's citations."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo import calibration as cal
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.index.dense import DenseIndex
from patent_demo.text.bm25 import BM25Index
from tests.conftest import require_shared


@pytest.mark.parametrize("kind", [{"kind": "flat"}, {"kind": "ivfsq", "nlist": 4, "nprobe": 1, "rescore": 4}])
def test_drawing_null_scores_equal_a_naive_loop(kind):
    """On the exact index and on an approximate one (the calibration's searches probe every list, with the
    related patents left out inside FAISS), as a loop over every figure gives them."""
    rng = np.random.default_rng(0)
    classes = ["06-01", "06-02", "07-01", "26-05"]
    pats = [  # each also cites 40 documents the corpus does not hold
        Patent(
            f"P{i}",
            codes={"locarno": [classes[i % 4]]},
            citations=([f"P{i - 4}"] if i >= 4 else []) + [f"X{i}-{j}" for j in range(40)],
        )
        for i in range(40)
    ]
    corpus = Corpus(".", pats)
    x = rng.standard_normal((80, 8)).astype(np.float32)
    pids = [f"P{i // 2}" for i in range(80)]
    index = DenseIndex.build(x, [f"f{i}" for i in range(80)], pids, **kind)
    rows = list(range(0, 80, 3))
    got = cal.null_drawing_scores(index, corpus, rows)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    for j, r in enumerate(rows):
        p = corpus[pids[r]]
        main = p.locarno[:2]
        best = max(
            float(xn[r] @ xn[i])
            for i in range(80)
            if corpus[pids[i]].locarno[:2] != main
            and pids[i] != p.id
            and pids[i] not in p.citations
            and p.id not in corpus[pids[i]].citations
        )
        assert got[j] == pytest.approx(best, abs=1e-5)
    related = cal.related_drawing_scores(index, corpus, rows)
    for j, r in enumerate(rows):  # over the figures of every other patent
        assert related[j] == pytest.approx(
            max(float(xn[r] @ xn[i]) for i in range(80) if pids[i] != pids[r]), abs=1e-5
        )
    th = cal.calibrate_drawing(index, corpus, samples=30, quantile=0.5)
    assert th.task == "drawing" and th.unrelated == 30 and th.related_heldout == 15


def test_judged_threshold_rates_and_when_it_is_shown():
    related = np.arange(1, 101, dtype=float)  # 100 related searches scoring 1..100
    unrelated = np.array([0.5, 1.5, 2.5, 50.0])
    th = cal.judged_threshold("text", related, unrelated, quantile=0.03, seed=0, basis="a cited document")
    order = np.random.default_rng(0).permutation(100)
    fit, held = related[order[:50]], related[order[50:]]
    assert th.threshold == pytest.approx(float(np.quantile(fit, 0.03)))
    assert th.false_alarm == pytest.approx(float((held <= th.threshold).mean()))
    assert th.hit_rate == pytest.approx(float((unrelated <= th.threshold).mean()))
    assert th.related_heldout == 50 and th.unrelated == 4
    assert th.shown == (th.false_alarm <= 0.05 and th.hit_rate > th.false_alarm)
    assert th.is_weak(0.1) == th.shown and not th.is_weak(th.threshold + 1e-6)
    assert th.message(th.threshold + 0.1) == ""
    if th.shown:  # the score and threshold quoted are those given (the table's units)
        assert th.message(0.1, 11.82, 14.0).startswith(
            "no good match: the best hit scores 11.82, not above 14.0;"
        )
    # too few held-out related searches: never shown, whatever the rates
    few = cal.judged_threshold("drawing", related[:20], unrelated, quantile=0.03)
    assert few.related_heldout == 10 and not few.shown and few.message(-1.0) == ""
    # a warning that fires as often on related as on unrelated searches is not shown
    same = cal.judged_threshold("drawing", related, related, quantile=0.5)
    assert not same.shown


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
    th = cal.calibrate_text(bm25, corpus, samples=300, seed=0)
    th.save(tmp_path / "t.json")
    assert cal.NoMatchThreshold.load(tmp_path / "t.json") == th
    # measured on cs3245's citations: few false alarms, and shown
    assert th.related_heldout == 150 and th.unrelated == 300
    assert th.false_alarm <= cal.MAX_FALSE_ALARM and th.hit_rate > th.false_alarm and th.shown
    # a query of words this corpus never uses is flagged; a corpus abstract searched as it is is not
    q = "zyxwv qwvutsr"
    res = bm25.search(q, k=1)
    s = cal.normalized_text_score(bm25, q, float(res.scores[0])) if len(res) else 0.0
    assert th.is_weak(s)
    p = corpus.patents[0]
    from patent_demo.text.search import candidate_text

    qt = candidate_text(p)
    assert not th.is_weak(cal.normalized_text_score(bm25, qt, float(bm25.search(qt, k=1).scores[0])))
