import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from patent_demo import metrics as M
from patent_demo.results import Results

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
def test_results_basics():
    r = Results.from_unsorted(["a", "b", "c"], [0.5, 2.0, 0.5], extras=[{"g": 1}, {"g": 2}, {"g": 3}])
    assert r.ids == ["b", "a", "c"]
    assert list(r) == [("b", 2.0), ("a", 0.5), ("c", 0.5)]
    assert r.extras == [{"g": 2}, {"g": 1}, {"g": 3}]
    assert r.scores.dtype == np.float32
    assert r.top(2).ids == ["b", "a"] and r.top(10).ids == ["b", "a", "c"]
    assert r.to_trec("q1", "bm25") == ["q1 Q0 b 1 2 bm25", "q1 Q0 a 2 0.5 bm25", "q1 Q0 c 3 0.5 bm25"]
    assert len(Results.empty()) == 0
    with pytest.raises(ValueError, match="descending"):
        Results(["a", "b"], [1.0, 2.0])
    with pytest.raises(ValueError, match="2 ids but 1 scores"):
        Results(["a", "b"], [1.0])
    with pytest.raises(ValueError, match="whitespace"):
        Results(["a b"], [1.0]).to_trec("q1")


# ---------------------------------------------------------------------------------------------
# Text metrics: hand-worked cases
# ---------------------------------------------------------------------------------------------
QREL = {"a": 1, "b": 2, "c": 1, "n": 0}


def test_pres_hand_worked():
    # ranks 1 and 3 found, c missing -> placed at N_max + found + 1 = 8; sum 12, n(n+1)/2 = 6
    assert M.pres_at_k(["a", "x", "b", "y", "z"], QREL, 5) == pytest.approx(1 - 6 / 15, abs=1e-15)
    # n = 4 > N_max = 2, both retrieved relevant: missing at 5, 6 -> 1 - (14 - 10) / 8 = recall
    qrel4 = {"a": 1, "b": 1, "c": 1, "d": 1}
    assert M.pres_at_k(["a", "b"], qrel4, 2) == 0.5
    assert M.recall_at_k(["a", "b"], qrel4, 2) == 0.5
    # nothing found -> 0; perfect -> 1; the only relevant one at the last rank -> 1 - 3/4
    assert M.pres_at_k(["x", "y", "z"], {"a": 1, "b": 1}, 3) == 0.0
    assert M.pres_at_k(["c", "b", "a", "x"], QREL, 10) == 1.0
    assert M.pres_at_k(["x", "y", "z", "a"], {"a": 1}, 4) == 0.25
    # a list shorter than N_max: missing documents still go after N_max (here 10)
    assert M.pres_at_k(["a"], {"a": 1, "b": 1}, 10) == pytest.approx(1 - (1 + 12 - 3) / 20, abs=1e-15)


def test_pres_matches_dssdnet_script_formula():
    # sumRank' = sumRank + remain * (N_max + n - (remain - 1) / 2), PRES = 1 - (sumRank' - n(n+1)/2) / (n N_max)
    rng = random.Random(3)
    for _ in range(200):
        docs = [f"d{i}" for i in range(30)]
        qrel = {d: 1 for d in rng.sample(docs, rng.randint(1, 12))}
        ranked = rng.sample(docs, rng.randint(0, 30))
        k = rng.randint(1, 20)
        ranks = [r for r, d in enumerate(ranked[:k], 1) if d in qrel]
        n, remain = len(qrel), len(qrel) - len(ranks)
        s = sum(ranks) + remain * (k + n - (remain - 1) / 2)
        assert M.pres_at_k(ranked, qrel, k) == pytest.approx(1 - (s - n * (n + 1) / 2) / (n * k), abs=1e-12)


def test_map_variants_hand_worked():
    ranked = ["a", "x", "b", "y", "z"]
    assert M.average_precision_at_k(ranked, QREL, 5) == pytest.approx((1 + 2 / 3) / 3, abs=1e-15)
    assert M.average_precision_retrieved_at_k(ranked, QREL, 5) == pytest.approx((1 + 2 / 3) / 2, abs=1e-15)
    assert M.average_precision_retrieved_at_k(["x"], QREL, 5) == 0.0
    assert M.recall_at_k(ranked, QREL, 2) == pytest.approx(1 / 3, abs=1e-15)
    # nDCG: gains a=1 at rank 1, b=2 at rank 3; ideal 2, 1, 1
    dcg = 1 + 2 / 2
    ideal = 2 + 1 / math.log2(3) + 1 / 2
    assert M.ndcg_at_k(ranked, QREL, 5) == pytest.approx(dcg / ideal, abs=1e-15)


def test_rank_by_score_breaks_ties_like_trec_eval():
    assert M.rank_by_score({"a": 1.0, "c": 2.0, "b": 1.0, "d": 0.5}) == ["c", "b", "a", "d"]


def test_evaluate_run_averages_and_missing_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": ["a", "x"], "q9": ["b"]}
    out = M.evaluate_run(run, qrels, ks=[1, 2])
    # q1 perfect, q2 has no run (zeros), q3 has no relevant document (left out), q9 not in qrels
    assert out["num_queries"] == 2 and out["num_queries_without_run"] == 1
    for name in M.TEXT_METRICS:
        assert out[f"{name}@1"] == 0.5 and out[f"{name}@2"] == 0.5
    with pytest.raises(ValueError, match="appears twice"):
        M.evaluate_run({"q1": ["a", "a"]}, qrels)
    with pytest.raises(ValueError, match="positive integers"):
        M.evaluate_run(run, qrels, ks=[0])


# ---------------------------------------------------------------------------------------------
# Text metrics: against ir_measures (pytrec_eval, i.e. trec_eval) on random runs
# ---------------------------------------------------------------------------------------------
def _random_case(rng: random.Random, n_queries: int = 25):
    docs = [f"D{i:03d}" for i in range(120)]
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 40))
        qrels[qid] = {d: rng.choice([0, 0, 1, 1, 2, 3]) for d in judged}
        if not any(r >= 1 for r in qrels[qid].values()):
            qrels[qid][judged[0]] = 1
        retrieved = rng.sample(docs, rng.randint(0, 120))
        # integer scores: many ties, which trec_eval orders by docid descending
        run[qid] = {d: float(rng.randint(0, 15)) if rng.random() < 0.5 else rng.random() for d in retrieved}
    return qrels, run


def test_text_metrics_match_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, R, nDCG

    rng = random.Random(0)
    ks = (5, 17, 40)
    measures = {f"{name}@{k}": m @ k for k in ks for name, m in (("recall", R), ("map", AP), ("ndcg", nDCG))}
    compared = 0
    for _ in range(8):
        qrels, run = _random_case(rng)
        ours = M.per_query_metrics(run, qrels, ks)
        theirs = {}
        for res in ir_measures.iter_calc(list(measures.values()), qrels, run):
            theirs.setdefault(res.query_id, {})[str(res.measure)] = res.value
        for qid, values in ours.items():
            if not run[qid]:
                continue  # trec_eval reports nothing for a query with an empty ranking
            for key, measure in measures.items():
                assert values[key] == pytest.approx(theirs[qid][str(measure)], abs=1e-9), (qid, key)
                compared += 1
    assert compared > 1500


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def _cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "patent_demo.metrics", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def test_cli_scores_run_file(tmp_path):
    qrels, run = _random_case(random.Random(5), n_queries=6)
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    lines = []
    for qid, docs in run.items():
        lines += Results.from_unsorted(list(docs), list(docs.values())).to_trec(qid, "test")
    run_path.write_text("\n".join(lines) + "\n")
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, dr in qrels.items() for d, r in dr.items()))
    proc = _cli(run_path, qrels_path, "--k", 5, 10)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    expected = M.evaluate_run(M.read_run(run_path), qrels, ks=(5, 10))
    assert set(out) == set(expected)
    assert set(out) >= {"recall@5", "map@5", "map_retrieved@5", "pres@5", "ndcg@10", "num_queries"}
    for key, value in expected.items():
        assert out[key] == pytest.approx(value, abs=1e-12)


def test_cli_reports_malformed_files(tmp_path):
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("q1 0 a 1\n")
    bad = tmp_path / "run.txt"
    bad.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 t\n")
    proc = _cli(bad, qrels_path)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == f"error: {bad}:2: a run line has 6 fields (qid Q0 docid rank score tag), got 5"
    )
    bad.write_text("q1 Q0 a 1 high t\n")
    assert f"{bad}:1: score 'high' is not a number" in _cli(bad, qrels_path).stderr
    bad.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 a 2 1.0 t\n")
    assert f"{bad}:2: docid 'a' appears twice for query 'q1'" in _cli(bad, qrels_path).stderr
    bad.write_text("q1 Q0 a 1 2.0 t\n")
    qrels_path.write_text("q1 0 a 1\nq1 a 1\n")
    proc = _cli(bad, qrels_path)
    assert proc.returncode == 2 and f"{qrels_path}:2: a qrels line has 4 fields" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Drawing metrics
# ---------------------------------------------------------------------------------------------
def _naive_rel(q_labels, g_labels, qi, g, level):
    same_p = q_labels.patents[qi] == g_labels.patents[g] and q_labels.patents[qi] != ""
    same_s = q_labels.subclasses[qi] == g_labels.subclasses[g] and q_labels.subclasses[qi] != ""
    same_m = q_labels.mains[qi] == g_labels.mains[g] and q_labels.mains[qi] != ""
    return {"patent": same_p, "subclass": same_p or same_s, "main": same_p or same_s or same_m}[level]


def _naive_drawing(q_labels, g_labels, scores, self_index, ks, weights):
    """One query at a time, plain Python, ties by ascending gallery index."""
    out = {}
    s_p, s_s, s_m = weights
    for qi in range(len(q_labels.patents)):
        order = sorted(range(len(g_labels.patents)), key=lambda g: (-scores[qi][g], g))  # noqa: B023
        order = [g for g in order if g != self_index[qi]]
        for level in M.LEVELS:
            rels = [_naive_rel(q_labels, g_labels, qi, g, level) for g in order]
            n = sum(rels)
            hits, ap = 0, 0.0
            for r, rel in enumerate(rels, 1):
                if rel:
                    hits += 1
                    ap += hits / r
            out.setdefault(f"{level}_map", []).append(ap / n if n else float("nan"))
            for k in ks:
                dcg = sum(1 / math.log2(r + 1) for r, rel in enumerate(rels[:k], 1) if rel)
                ideal = sum(1 / math.log2(r + 1) for r in range(1, min(k, n) + 1))
                out.setdefault(f"{level}_ndcg@{k}", []).append(dcg / ideal if n else float("nan"))
        gains = []
        for g in order:
            if _naive_rel(q_labels, g_labels, qi, g, "patent"):
                gains.append(s_p)
            elif _naive_rel(q_labels, g_labels, qi, g, "subclass"):
                gains.append(s_s)
            elif _naive_rel(q_labels, g_labels, qi, g, "main"):
                gains.append(s_m)
            else:
                gains.append(0.0)
        for k in ks:
            dcg = sum(x / math.log2(r + 1) for r, x in enumerate(gains[:k], 1))
            ideal = sum(x / math.log2(r + 1) for r, x in enumerate(sorted(gains, reverse=True)[:k], 1))
            out.setdefault(f"hier_ndcg@{k}", []).append(dcg / ideal if ideal > 0 else float("nan"))
    return {k: np.array(v) for k, v in out.items()}


def _random_items(rng: np.random.Generator, n: int) -> M.ItemLabels:
    patents = [f"P{rng.integers(0, n // 3 + 1)}" for _ in range(n)]
    pat_sub = {p: f"{rng.integers(1, 4):02d}-{rng.integers(1, 4):02d}" for p in set(patents)}
    subclasses = [pat_sub[p] if rng.random() > 0.05 else "" for p in patents]
    return M.ItemLabels(patents, subclasses)


def test_drawing_metrics_match_naive_loop():
    rng = np.random.default_rng(0)
    ks = (3, 10)
    weights = (1.0, 0.35, 0.2)
    for trial in range(6):
        gallery = _random_items(rng, 40)
        q_idx = rng.choice(40, size=12, replace=False)
        query = M.ItemLabels([gallery.patents[i] for i in q_idx], [gallery.subclasses[i] for i in q_idx])
        scores = rng.integers(0, 6, size=(12, 40)).astype(np.float32)  # ties on purpose
        self_index = q_idx if trial % 2 == 0 else np.full(12, -1)
        got = M.drawing_metrics(query, gallery, scores=scores, self_index=self_index, ks=ks, weights=weights)
        want = _naive_drawing(query, gallery, scores, self_index, ks, weights)
        assert set(got.per_query) == set(want)
        for key in want:
            np.testing.assert_allclose(got.per_query[key], want[key], atol=1e-12, equal_nan=True, err_msg=key)


def test_drawing_metrics_hand_worked_and_ranked_input():
    query = M.ItemLabels(["P1"], ["06-01"])
    gallery = M.ItemLabels(["P2", "P1", "P3", "P4"], ["06-01", "06-01", "06-02", "07-01"])
    scores = np.array([[0.9, 0.8, 0.7, 0.1]])
    ev = M.drawing_metrics(query, gallery, scores=scores, ks=(2, 3))
    l3 = math.log2(3)
    assert ev.per_query["patent_map"][0] == 0.5
    assert ev.per_query["patent_ndcg@2"][0] == pytest.approx(1 / l3, abs=1e-15)
    assert ev.per_query["subclass_map"][0] == 1.0 and ev.per_query["subclass_ndcg@2"][0] == 1.0
    assert ev.per_query["main_map"][0] == 1.0
    hier = (0.35 + 1 / l3 + 0.2 / 2) / (1 + 0.35 / l3 + 0.2 / 2)
    assert ev.per_query["hier_ndcg@3"][0] == pytest.approx(hier, abs=1e-15)
    # a truncated ranked list: P1's drawing is not retrieved; AP still divides by all relevant items
    ev2 = M.drawing_metrics(query, gallery, ranked=np.array([[0, 2, -1]]), ks=(2,))
    assert ev2.per_query["patent_map"][0] == 0.0
    assert ev2.per_query["subclass_map"][0] == 0.5
    assert ev2.per_query["main_map"][0] == pytest.approx((1 + 1) / 3, abs=1e-15)
    summary = ev.summary()
    assert summary["num_queries"] == 1 and summary["patent_map"] == 0.5
    with pytest.raises(ValueError, match="exactly one of"):
        M.drawing_metrics(query, gallery)
    with pytest.raises(ValueError, match=r"expected \(1, 4\)"):
        M.drawing_metrics(query, gallery, scores=np.zeros((1, 3)))


def test_drawing_breakdown_by_class():
    per_query = {"patent_map": np.array([1.0, 0.5, np.nan, 0.25])}
    out = M.breakdown_by_class(per_query, ["06-01", "06-01", "07-02", "07-02"])
    assert out == {
        "06-01": {"patent_map": 0.75, "num_queries": 2},
        "07-02": {"patent_map": 0.25, "num_queries": 2},
    }


def test_drawing_metrics_large_matrix_is_vectorised():
    rng = np.random.default_rng(1)
    gallery = _random_items(rng, 6000)
    query = M.ItemLabels(gallery.patents[:1000], gallery.subclasses[:1000])
    scores = rng.standard_normal((1000, 6000)).astype(np.float32)
    ev = M.drawing_metrics(query, gallery, scores=scores, self_index=np.arange(1000), ks=(10, 100))
    assert all(v.shape == (1000,) for v in ev.per_query.values())
    # random scores: mAP near the share of relevant items, far from 1
    assert ev.summary()["patent_map"] < 0.2


def _naive_silhouette(x, y):
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = 1 - xn @ xn.T
    s = []
    for i in range(len(y)):
        same = (y == y[i]) & (np.arange(len(y)) != i)
        if not same.any():
            s.append(0.0)
            continue
        a = d[i, same].mean()
        b = min(d[i, y == c].mean() for c in set(y.tolist()) if c != y[i])
        s.append((b - a) / max(a, b))
    return np.array(s)


def test_silhouette_by_subclass():
    x = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    overall, per = M.silhouette_by_subclass(x, ["06-01", "06-01", "07-01", "07-01"])
    assert overall == pytest.approx(1.0, abs=1e-12) and per == pytest.approx({"06-01": 1.0, "07-01": 1.0})
    rng = np.random.default_rng(2)
    x = rng.standard_normal((60, 5))
    y = np.array([f"0{i % 3}-01" for i in range(60)])
    overall, per = M.silhouette_by_subclass(x, y)
    naive = _naive_silhouette(x, y)
    assert overall == pytest.approx(naive.mean(), abs=1e-9)
    assert per["00-01"] == pytest.approx(naive[y == "00-01"].mean(), abs=1e-9)
    with pytest.raises(ValueError, match="distinct labels"):
        M.silhouette_by_subclass(x, ["a"] * 60)


def test_paired_bootstrap_matches_a_naive_loop():
    """The one paired bootstrap (``patent_demo.metrics.bootstrap``) against a loop that resamples queries
    (or whole groups) one by one with the same generator, and against the query bootstrap the DSSDNet report
    used to compute itself (``diff[rng.integers(0, n, (B, n))].mean(1)``, ``np.percentile`` 2.5 / 97.5)."""
    from patent_demo.metrics import paired_bootstrap
    from patent_demo.metrics.bootstrap import interval

    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    a[7] = np.nan  # a NaN pair is dropped
    groups = [f"p{i // 3}" for i in range(30)]
    for grp in (None, groups):
        res = paired_bootstrap(a, b, grp, n_boot=300, seed=4)
        keep = [i for i in range(30) if not np.isnan(a[i])]
        d = {i: a[i] - b[i] for i in keep}
        names = sorted({str(i) for i in range(len(keep))}) if grp is None else sorted({grp[i] for i in keep})
        members = (
            {n: [keep[int(n)]] for n in names}
            if grp is None
            else {n: [i for i in keep if grp[i] == n] for n in names}
        )
        r = np.random.default_rng(4)
        boots = []
        for row in r.integers(0, len(names), size=(300, len(names))):
            picked = [i for k in row for i in members[names[k]]]
            boots.append(sum(d[i] for i in picked) / len(picked))
        assert res["diff"] == pytest.approx(np.mean(list(d.values())))
        assert res["low"] == pytest.approx(np.percentile(boots, 2.5))
        assert res["high"] == pytest.approx(np.percentile(boots, 97.5))
        assert res["p_le_0"] == pytest.approx(np.mean(np.asarray(boots) <= 0))
    # the text reports' form: one group per query, ids sorted, is the plain query bootstrap, bit for bit
    a, b = rng.random(50), rng.random(50)
    qids = sorted(f"q{i:03d}" for i in range(50))
    diff = a - b
    means = diff[np.random.default_rng(0).integers(0, 50, size=(1000, 50))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert interval(paired_bootstrap(a, b, qids, 1000, seed=0)) == {
        "mean": float(diff.mean()),
        "ci95": [float(lo), float(hi)],
        "p_le_0": float((means <= 0).mean()),
    }
