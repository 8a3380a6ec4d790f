"""patent_demo.search.feedback: the Rocchio query against a naive loop, the views of an application, the labels
and qrels it reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.search.feedback import (
    CONFIG,
    Feedback,
    hit_vectors,
    read_qrels,
    refine,
    refine_from_labels,
    split_labels,
)


def _naive(q, pos, neg, beta, gamma):
    """Rocchio written out element by element (the reference)."""
    dim = len(q)
    norm = sum(x * x for x in q) ** 0.5
    out = [x / norm for x in q]
    for vectors, sign, weight in ((pos, 1.0, beta), (neg, -1.0, gamma)):
        if not vectors:
            continue
        mean = [0.0] * dim
        for v in vectors:
            n = sum(x * x for x in v) ** 0.5
            for i in range(dim):
                mean[i] += v[i] / n / len(vectors)
        for i in range(dim):
            out[i] += sign * weight * mean[i]
    n = sum(x * x for x in out) ** 0.5
    return [x / n for x in out]


def test_refine_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    q = rng.normal(size=16)
    pos, neg = rng.normal(size=(3, 16)), rng.normal(size=(2, 16))
    r = refine(q, pos, neg, Feedback(beta=0.8, gamma=0.25))
    want = _naive(list(q), [list(v) for v in pos], [list(v) for v in neg], 0.8, 0.25)
    np.testing.assert_allclose(r.vector, want, rtol=1e-5, atol=1e-6)
    assert (r.relevant, r.not_relevant, r.used) == (3, 2, 5)
    assert r.cosine == pytest.approx(float(np.dot(q / np.linalg.norm(q), r.vector)), abs=1e-6)


def test_no_labels_keep_the_query_and_relevant_labels_pull_it_closer():
    q = np.array([1.0, 0.0, 0.0])
    same = refine(q)
    np.testing.assert_allclose(same.vector, q)
    assert same.used == 0 and same.cosine == pytest.approx(1.0)
    hit = np.array([[0.0, 1.0, 0.0]])
    moved = refine(q, hit, weights=Feedback(1.0, 0.0))
    assert float(moved.vector @ hit[0]) > 0.5 and np.linalg.norm(moved.vector) == pytest.approx(1.0)
    away = refine(q, (), hit, weights=Feedback(0.0, 0.5))
    assert float(away.vector @ hit[0]) < 0


def test_each_view_of_an_application_moves_by_the_same_means():
    rng = np.random.default_rng(1)
    views = rng.normal(size=(4, 8))
    pos, neg = rng.normal(size=(2, 8)), rng.normal(size=(1, 8))
    w = Feedback(1.0, 0.3)
    r = refine(views, pos, neg, w)
    assert r.vector.shape == (4, 8)
    for i in range(4):
        np.testing.assert_allclose(r.vector[i], refine(views[i], pos, neg, w).vector, rtol=1e-5, atol=1e-6)


def test_a_move_that_cancels_the_query_keeps_the_original():
    q = np.array([1.0, 0.0])
    r = refine(q, (), [[1.0, 0.0]], Feedback(0.0, 1.0))
    np.testing.assert_allclose(r.vector, q)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="one vector"):
        refine(np.zeros((2, 2, 2)))


def test_split_labels_reads_grade_names_and_qrels_grades_last_label_wins():
    rel, nonrel = split_labels([("a", "relevant"), ("b", "partly"), ("c", "not"), ("a", "not"), ("d", "2")])
    assert sorted(rel) == ["b", "d"] and sorted(nonrel) == ["a", "c"]
    assert split_labels({"x": "0", "y": "1", "z": "maybe"}) == (["y"], ["x"])


def test_read_qrels(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("# judged\nq1 0 D1 2\nq1 0 D2 0\n\nq2 0 D1 1\nq1 0 D2 1\n")
    assert read_qrels(p) == {"q1": {"D1": 2, "D2": 1}, "q2": {"D1": 1}}
    p.write_text("q1 D1 2\n")
    with pytest.raises(ValueError, match="q.txt:1"):
        read_qrels(p)


def test_the_shipped_config_names_its_rule():
    data = json.loads(CONFIG.read_text())
    w = Feedback.load()
    assert w.beta == data["drawing"]["beta"] and w.gamma == data["drawing"]["gamma"]
    assert data["rule"]


def _index():
    from patent_demo.index.dense import DenseIndex

    emb = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    return DenseIndex.build(emb, ["a1", "a2", "b1", "c1"], ["A", "A", "B", "C"])


def test_hit_vectors_best_figure_or_mean_of_a_patents_figures():
    index = _index()
    q = np.array([0.9, 0.1, 0.0])
    best = hit_vectors(index, q, ["A", "C", "unknown"], "best")
    np.testing.assert_allclose(
        best, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    )  # A's figure closest to q; no row for unknown
    np.testing.assert_allclose(hit_vectors(index, [0.1, 0.9, 0.0], ["A"], "best"), [[0.0, 1.0, 0.0]])
    np.testing.assert_allclose(hit_vectors(index, q, ["A"], "mean"), [[0.5, 0.5, 0.0]])
    # an application's views: the figure with the best mean cosine over views
    views = np.array([[0.0, 1.0, 0.0], [0.2, 0.9, 0.0]])
    np.testing.assert_allclose(hit_vectors(index, views, ["A"], "best"), [[0.0, 1.0, 0.0]])
    assert hit_vectors(index, q, [], "best").shape == (0, 3)
    with pytest.raises(ValueError, match="hit vectors"):
        hit_vectors(index, q, ["A"], "max")


def test_refine_from_labels_is_refine_over_the_judged_patents_vectors():
    index = _index()
    q = np.array([0.0, 0.6, 0.8])
    w = Feedback(1.0, 0.5, hits="best")
    got = refine_from_labels(q, index, {"B": "2", "C": 0, "A": "relevant"}, w)
    want = refine(q, hit_vectors(index, q, ["B", "A"]), hit_vectors(index, q, ["C"]), w)
    np.testing.assert_allclose(got.vector, want.vector, rtol=1e-6)
    assert (got.relevant, got.not_relevant) == (2, 1)
