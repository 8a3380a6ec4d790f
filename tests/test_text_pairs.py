"""Labelled-pair evaluation: the BM25 baseline of a pair task is BM25 (each query against its own
candidates, independent of the file's order), graded labels, t from the data."""

import math
import random

import numpy as np
import pytest
import torch

from patent_demo.metrics import evaluate_run
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.pair_scores import evaluate_pairs, pair_run
from patent_demo.text.pairs import Pair, bm25_pair_run, domain_t, grade, pair_qrels, read_pair_file

HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\tipc_1\tipc_2\tipc_3"
QUERIES = {
    "Q1": "water filter membrane for removing salt",
    "Q2": "washing machine drum with bubble generator",
    "Q3": "battery electrode coating of lithium",
}
CANDIDATES = {
    "Q1": [
        (1.0, "membrane filter removes salt from sea water", 1),
        (0.75, "salt water membrane", 1),
        (0.25, "a filter", 0),
        (0.0, "garden hose nozzle", 0),
        (0.0, "shoe sole with heel", 0),
    ],
    "Q2": [
        (1.0, "drum washing machine that makes bubbles", 1),
        (0.5, "laundry detergent bubbles", 0),
        (0.0, "bicycle saddle", 0),
        (0.0, "lamp shade", 0),
    ],
    "Q3": [
        (1.0, "lithium battery electrode with a coating", 1),
        (0.0, "coffee machine", 0),
        (0.0, "chair", 0),
    ],
}


def _pairs() -> list[Pair]:
    out = []
    for q, cands in CANDIDATES.items():
        for i, (y, text, t) in enumerate(cands):
            out.append(Pair(q, QUERIES[q], text, y, float(t), f"{q}-D{i}"))
    return out


def _write_tsv(path, pairs):
    rows = [HEADER] + [f"{p.y}\t{p.qid}\t{p.doc_id}\t{p.query}\t{p.doc}\t0\t0\t{int(p.t)}" for p in pairs]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_pair_file_in_label_order_or_shuffled_gives_the_same_bm25_baseline(tmp_path):
    pairs = _pairs()
    by_label = sorted(pairs, key=lambda p: (p.qid, -p.y))
    shuffled = list(pairs)
    random.Random(3).shuffle(shuffled)
    a = evaluate_pairs(_write_tsv(tmp_path / "sorted.tsv", by_label), "bm25", ks=[1, 3, 5])
    b = evaluate_pairs(_write_tsv(tmp_path / "shuffled.tsv", shuffled), "bm25", ks=[1, 3, 5])
    reversed_ = evaluate_pairs(list(reversed(by_label)), "bm25", ks=[1, 3, 5])
    assert a["metrics"] == b["metrics"] == reversed_["metrics"]
    # the baseline is not the file order: sorted by label, file order would be a perfect ranking
    assert a["metrics"]["ndcg@5"] < 1.0 and a["model"] == "bm25" and a["queries"] == 3 and a["pairs"] == 12
    runs = [bm25_pair_run(p) for p in (by_label, shuffled)]
    assert {q: r.ids for q, r in runs[0].items()} == {q: r.ids for q, r in runs[1].items()}


def test_pair_bm25_scores_match_rank_bm25_over_the_query_candidates():
    """A known BM25 case: Lucene-idf Okapi over one query's candidates (rank_bm25, idf replaced)."""
    from rank_bm25 import BM25Okapi

    pairs = [p for p in _pairs() if p.qid == "Q1"]
    run = bm25_pair_run(pairs)["Q1"]
    index = BM25Index.build([{"id": p.doc_id, "text": p.doc} for p in pairs], fields=("text",))
    tokens = index.tokenize([p.doc for p in pairs])

    class LuceneOkapi(BM25Okapi):
        def _calc_idf(self, nd):
            self.idf = {w: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for w, n in nd.items()}

    ref = LuceneOkapi(tokens, k1=1.2, b=0.75).get_scores(index.tokenize([QUERIES["Q1"]])[0]) / 2.2
    want = dict(zip([p.doc_id for p in pairs], ref.tolist(), strict=True))
    got = dict(zip(run.ids, run.scores.tolist(), strict=True))
    assert set(got) == set(want)
    for d in want:
        assert got[d] == pytest.approx(want[d], rel=1e-5, abs=1e-9)
    # best first; the two candidates sharing no term with the query score 0, after the others
    assert list(run.scores) == sorted(run.scores, reverse=True) and list(run.scores[-2:]) == [0.0, 0.0]


def test_graded_labels_become_graded_qrels_and_ndcg(tmp_path):
    path = _write_tsv(tmp_path / "pairs.tsv", _pairs())
    pairs = read_pair_file(path)
    assert sorted({p.y for p in pairs}) == [0.0, 0.25, 0.5, 0.75, 1.0]
    qrels = pair_qrels(pairs)
    assert qrels["Q1"] == {"Q1-D0": 4, "Q1-D1": 3, "Q1-D2": 1, "Q1-D3": 0, "Q1-D4": 0}
    assert [grade(y) for y in (0, 0.25, 0.5, 0.75, 1)] == [0, 1, 2, 3, 4]
    # nDCG@5 of Q1 by hand from the BM25 order (trec_eval gains: the grade itself)
    run = bm25_pair_run(pairs)
    order = run["Q1"].ids
    dcg = sum(qrels["Q1"][d] / math.log2(r + 2) for r, d in enumerate(order[:5]))
    ideal = sorted(qrels["Q1"].values(), reverse=True)
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    m = evaluate_run({"Q1": run["Q1"]}, {"Q1": qrels["Q1"]}, [5])
    assert m["ndcg@5"] == pytest.approx(dcg / idcg, abs=1e-6)


def test_domain_t_is_nan_without_codes():
    assert domain_t({"ipc": ["C02F 1/44"]}, {"ipc": ["C02F 3/00"]}, "ipc") == 1.0
    assert domain_t({"ipc": ["C02F 1/44"]}, {"ipc": ["B01D 61/00"]}, "ipc") == 0.0
    assert math.isnan(domain_t({"ipc": ["C02F 1/44"]}, {"locarno": ["06-01"]}, "ipc"))
    assert math.isnan(domain_t(None, {"ipc": ["C02F 1/44"]}, "ipc"))


def test_reranker_on_pairs_takes_t_from_the_file_and_predicts_only_where_missing():
    from tests.support.reranker import tiny_reranker

    model = tiny_reranker("DSSDNet")
    pairs = [p for p in _pairs() if p.qid == "Q2"]
    pairs[2] = Pair(**{**pairs[2].__dict__, "t": float("nan")})
    res = pair_run(pairs, model)["Q2"]
    extras = dict(zip(res.ids, res.extras, strict=True))
    assert [extras[p.doc_id]["t_source"] for p in pairs] == ["codes", "codes", "predicted", "codes"]
    assert [extras[p.doc_id]["t"] for p in pairs if p.t == p.t] == [1, 0, 0]
    # the file's t, not the domain head's guess, drives the score: equal to the heads with that t
    batch = model.tokenize([p.query for p in pairs], [p.doc for p in pairs])
    with torch.no_grad():
        e = model.encode(**batch)
        from_file = model.heads(e, torch.tensor([p.t for p in pairs]))["score"]
        predicted = model.heads(e)["score"]
    np.testing.assert_allclose(
        [s for d, s in zip(res.ids, res.scores, strict=True) if d == pairs[0].doc_id],
        [float(from_file[0])],
        rtol=1e-5,
    )
    got = {d: s for d, s in zip(res.ids, res.scores.tolist(), strict=True)}
    np.testing.assert_allclose([got[p.doc_id] for p in pairs], from_file.tolist(), rtol=1e-5)
    flips = [extras[p.doc_id]["t"] != int(extras[p.doc_id]["t_hat"] >= 0.5) for p in pairs if p.t == p.t]
    if any(flips):  # where the file disagrees with the head, the scores differ from the predicted-t ones
        assert not np.allclose([got[p.doc_id] for p in pairs], predicted.tolist())


def test_evaluate_pairs_takes_a_checkpoint_or_a_model_and_rejects_bad_names(tmp_path):
    from tests.support.reranker import tiny_reranker

    model = tiny_reranker("DS_SD_MR")
    out = evaluate_pairs(_pairs(), model, ks=[5])
    assert out["queries"] == 3 and 0.0 <= out["metrics"]["ndcg@5"] <= 1.0
    model.save(tmp_path / "ckpt")
    again = evaluate_pairs(_pairs(), str(tmp_path / "ckpt"), ks=[5])
    assert again["metrics"] == pytest.approx(out["metrics"])
    with pytest.raises(FileNotFoundError, match="neither 'bm25' nor a DSSDNet checkpoint"):
        evaluate_pairs(_pairs(), str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="no labelled pairs"):
        evaluate_pairs([], "bm25")
