"""The residual collection (``patent_demo.search.feedback.residual``) and the text feedback measured on it
(``patent_demo.text.feedback``: the simulated examiner, before / after with a paired bootstrap), on runs
worked out by hand.

Tests: patent_demo/search/feedback.py, patent_demo/text/feedback.py
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from patent_demo.results import Results
from patent_demo.search.feedback import Feedback, residual
from patent_demo.text.feedback import TextFeedback, residual_comparison, simulate_examiner


def _res(ids):
    return Results(ids, np.linspace(1.0, 0.1, len(ids)), [{"i": i} for i in range(len(ids))])


def test_residual_removes_the_judged_ids_from_every_kind_of_entry():
    run = {"q": _res(["a", "b", "c", "d"]), "p": _res(["a", "x"])}
    out = residual(run, {"q": {"b", "d"}})
    assert out["q"].ids == ["a", "c"] and out["q"].extras == [{"i": 0}, {"i": 2}]
    np.testing.assert_allclose(out["q"].scores, run["q"].scores[[0, 2]])
    assert out["p"] is run["p"]  # nothing judged: as it was
    assert residual({"q": {"a": 1, "b": 0, "c": 2}}, {"q": ["a", "b"]}) == {"q": {"c": 2}}
    assert residual({"q": ["a", "b", "c"]}, {"q": ("c",)}) == {"q": ["a", "b"]}


def test_the_examiner_labels_the_top_hits_from_the_qrels():
    run = {"q": _res(["r1", "x1", "r2"]), "p": _res(["y"])}
    labels = simulate_examiner(run, {"q": {"r1": 2, "r2": 1}}, depth=2)
    assert labels == {"q": {"r1": 2, "x1": 0}, "p": {"y": 0}}
    with pytest.raises(ValueError, match="at least 1"):
        simulate_examiner(run, {}, depth=0)


def test_residual_comparison_by_hand():
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}, "p": {"s1": 1}, "t": {"u1": 1}}
    before = {
        "q": _res(["r1", "x1", "x2", "r2", "x3", "r3"]),
        "p": _res(["s1", "y1", "y2"]),
        "t": _res(["y", "z", "w", "u1"]),
    }
    after = {
        "q": _res(["r1", "r2", "x1", "r3", "x2", "x3"]),
        "p": _res(["y2", "s1", "y1"]),
        "t": _res(["y", "z", "u1", "w"]),
    }
    labels = simulate_examiner(before, qrels, 2)
    judged = {q: set(lab) for q, lab in labels.items()}
    out = residual_comparison(before, after, qrels, judged, ks=(10,), keys=("map@10", "recall@10"))
    # p's only relevant patent was seen: it drops out. q: residual before [x2 r2 x3 r3] -> AP (1/2 + 2/4)/2,
    # after [r2 r3 x2 x3] -> 1; t: before [w u1] -> 1/2, after [u1 w] -> 1
    assert out["queries"] == 2 and out["qids"] == ["q", "t"]
    assert out["before"]["map@10"] == pytest.approx(0.5) and out["after"]["map@10"] == pytest.approx(1.0)
    d = out["difference"]["map@10"]
    assert (d["diff"], d["low"], d["high"]) == pytest.approx((0.5, 0.5, 0.5))
    assert out["difference"]["recall@10"]["diff"] == pytest.approx(0.0)  # every residual relevant in both
    assert out["per_query"]["map@10"] == {"before": [0.5, 0.5], "after": [1.0, 1.0]}


def test_text_feedback_settings_come_from_the_config(tmp_path):
    path = tmp_path / "feedback.json"
    path.write_text(
        json.dumps(
            {
                "drawing": {"beta": 1.0, "gamma": 0.3},
                "text": {
                    "beta": 0.5,
                    "gamma": 0.25,
                    "offered": False,
                    "reason": "not offered: x",
                    "rule": "r",
                },
                "rule": "top",
                "command": "c",
            }
        )
    )
    s = TextFeedback.load(path)
    assert s.dense == Feedback(0.5, 0.25, "r", "") and s.lexical is None  # the text part's own rule
    assert (s.offered, s.reason) == (False, "not offered: x")
