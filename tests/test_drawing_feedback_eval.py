"""Relevance feedback on the residual collection: the judged hits leave both lists (a hand-made case worked
out by hand, and on a real corpus against a gallery with the judged items really taken out), and
``patent-demo evaluate drawings --feedback-depth`` on a corpus built from the shared DeepPatent2 sample."""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.cli import main
from patent_demo.data.corpus import Figure, Patent
from patent_demo.drawing.feedback_eval import examiner_labels, simulate_feedback
from patent_demo.drawing.protocol import _labels
from patent_demo.metrics import ItemLabels, drawing_metrics
from patent_demo.search.feedback import Feedback
from tests.conftest import CKPT


def test_excluded_items_take_no_rank_and_count_as_no_relevant_item():
    # one query of subclass A; gallery: a0 (A), b (B), a1 (A), a2 (A), ranked in that order
    q = ItemLabels(["q"], ["A"])
    g = ItemLabels(["p0", "p1", "p2", "p3"], ["A", "B", "A", "A"])
    scores = np.array([[0.9, 0.8, 0.7, 0.6]])
    full = drawing_metrics(q, g, scores=scores, ks=(10,)).per_query["subclass_map"][0]
    assert full == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 3)
    # the examiner judged a0 and b: the residual list is a1, a2, both relevant
    gone = np.array([[True, True, False, False]])
    res = drawing_metrics(q, g, scores=scores, ks=(10,), exclude=gone).per_query
    assert res["subclass_map"][0] == pytest.approx(1.0)
    # judging every relevant item leaves nothing to find: undefined, not zero
    gone = np.array([[True, False, True, True]])
    assert np.isnan(drawing_metrics(q, g, scores=scores, ks=(10,), exclude=gone).per_query["subclass_map"][0])
    with pytest.raises(ValueError, match="exclude has shape"):
        drawing_metrics(q, g, scores=scores, exclude=np.zeros((2, 4), dtype=bool))


def _item(pid: str, code: str) -> tuple[Patent, Figure]:
    return Patent(pid, codes={"locarno": [code]}), Figure(f"{pid}.png")


def test_one_round_by_hand():
    # query of 06-01; gallery: near but other subclass (judged not relevant), a relevant one judged, and two
    # unjudged ones of 06-01 that feedback must lift above the unjudged other-subclass item
    queries = [_item("Q", "06-01")]
    gallery = [
        _item("N", "07-01"),  # top hit, not relevant
        _item("R", "06-01"),  # second hit, relevant
        _item("X", "07-01"),  # unjudged, not relevant, close to N
        _item("S", "06-01"),  # unjudged, relevant, close to R
    ]
    q = np.array([[1.0, 0.0, 0.0]])
    g = np.array([[0.9, 0.0, 0.44], [0.8, 0.6, 0.0], [0.5, 0.0, 0.87], [0.2, 0.98, 0.0]])
    g = g / np.linalg.norm(g, axis=1, keepdims=True)
    out = simulate_feedback(
        queries, gallery, q, g, np.array([-1]), depth=2, weights=Feedback(1.0, 0.5), rounds=1, resamples=50
    )
    row = out["rounds"][0]
    assert row["judged"] == 2 and row["relevant_labels"] == 1
    # before: the residual list is X (0.5) then S (0.2): AP 1/2; after the refine S comes first: AP 1
    assert row["before"]["subclass_map"] == pytest.approx(0.5)
    assert row["after"]["subclass_map"] == pytest.approx(1.0)
    assert row["gain"]["subclass_map"]["diff"] == pytest.approx(0.5)
    assert examiner_labels(queries, gallery).tolist() == [[False, True, False, True]]


@pytest.fixture(scope="module")
def dp2_embedded(dp2):
    from patent_demo.cli.common import load_drawing_model, resolve_model
    from patent_demo.data.corpus import Corpus
    from patent_demo.drawing.embed import embed_corpus_figures
    from patent_demo.drawing.protocol import drawing_protocol

    corpus = Corpus.load(dp2)
    model, tf = load_drawing_model(resolve_model("zero-shot", "drawing", [CKPT]))
    queries, gallery, self_index = drawing_protocol(corpus, None, "all")
    return queries, gallery, self_index, embed_corpus_figures(model, tf, corpus, gallery, 16)


def test_residual_scores_equal_a_gallery_with_the_judged_items_taken_out(dp2_embedded):
    queries, gallery, self_index, emb = dp2_embedded
    out = simulate_feedback(
        queries, gallery, emb, emb, self_index, depth=3, weights=Feedback(1.0, 0.3), rounds=2
    )
    for row in out["rounds"]:
        assert row["judged"] == 3 * row["round"]
    # round 1 redone apart: per query, the top 3 (not itself) judged, removed from the gallery, scored again
    rel = examiner_labels(queries, gallery)
    for i in range(len(queries)):
        s = emb[i] @ emb.T
        s[i] = -np.inf
        top = list(np.argsort(-s, kind="stable")[:3])
        keep = [j for j in range(len(gallery)) if j not in top and j != i]
        ql, gl = _labels([queries[i]]), _labels([gallery[j] for j in keep])
        before = drawing_metrics(ql, gl, scores=(emb[i] @ emb[keep].T)[None, :], ks=(10,)).per_query
        pos = emb[[j for j in top if rel[i, j]]]
        neg = emb[[j for j in top if not rel[i, j]]]
        r = emb[i] + pos.mean(0) if len(pos) else emb[i].copy()
        r = r - 0.3 * neg.mean(0) if len(neg) else r
        after = drawing_metrics(ql, gl, scores=(r @ emb[keep].T)[None, :], ks=(10,)).per_query
        for key in ("patent_map", "subclass_map", "main_map"):
            for name, want in (("before", before), ("after", after)):
                got = out["rounds"][0]["per_query"][name][key][i]
                if np.isnan(want[key][0]):
                    assert got is None
                else:
                    assert got == pytest.approx(float(want[key][0]), abs=1e-9)


def test_evaluate_drawings_feedback_depth(dp2, tmp_path, capsys):
    out = tmp_path / "fb.json"
    args = ["evaluate", "drawings", "--corpus", str(dp2), "--model", "zero-shot", "--split", "all"]
    args += ["--checkpoints", CKPT, "--feedback-depth", "3", "--bootstrap", "200", "--json", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert (
        "residual collection" in text
        and "round 1: 3 hits judged" in text
        and "round 2: 6 hits judged" in text
    )
    fb = json.loads(out.read_text())["feedback"]
    assert fb["depth"] == 3 and [r["round"] for r in fb["rounds"]] == [1, 2]
    w = Feedback.load()
    assert (fb["beta"], fb["gamma"]) == (w.beta, w.gamma)
    for row in fb["rounds"]:
        for key, g in row["gain"].items():
            assert g["met"] == (g["low"] > 0)
            assert g["low"] <= g["diff"] + 1e-12 and g["diff"] <= g["high"] + 1e-12 or np.isnan(g["diff"])
            assert key in row["before"] and key in row["after"]
    assert main([*args[:-2], "--feedback-depth", "-1"]) == 2
    assert "--feedback-depth must be >= 0" in capsys.readouterr().err
