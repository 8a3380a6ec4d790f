"""Scored phrase pairs (USPPM format): reading, the domain label, the input text, and the correlations
checked against scipy and a hand-worked case."""

import math

import numpy as np
import pytest
from scipy import stats

from patent_demo.data.corpus import CorpusError
from patent_demo.text import scored

HEADER = "id,anchor,target,context,title,label\n"


def _csv(tmp_path, body, name="pairs.csv"):
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_read_and_domain_label(tmp_path):
    path = _csv(
        tmp_path,
        "a1,abatement,noise reduction,F16,engineering elements,0.5\n"
        "a2,abatement,noise reduction,H04,electric communication technique,0.25\n"
        "a3,abatement,pollution control,F16,engineering elements,0.75\n"
        "a4,abatement,pollution control,B01,physical or chemical processes,0.75\n"
        'a5,abatement,"forest, region",A01,agriculture,0\n',
    )
    assert scored.is_scored_csv(path)
    rows = scored.read_scored_pairs(path)
    assert [r.id for r in rows] == ["a1", "a2", "a3", "a4", "a5"]
    assert rows[4].target == "forest, region" and rows[0].label == 0.5
    t = scored.domain_sensitive_t(rows)
    # the score changes with the context -> 1; the same in two contexts -> 0; one context -> unknown
    assert t[("abatement", "noise reduction")] == 1.0
    assert t[("abatement", "pollution control")] == 0.0
    assert math.isnan(t[("abatement", "forest, region")])
    pairs = scored.to_pairs(rows, context=True, t=t)
    assert pairs[0].query == "abatement" and pairs[0].doc == "noise reduction [SEP] engineering elements"
    assert pairs[0].t == 1.0 and pairs[0].qid == "abatement" and pairs[0].doc_id == "a1"
    plain = scored.to_pairs(rows, context=False)
    assert plain[0].doc == "noise reduction" and all(
        math.isnan(p.t) for p in plain
    )  # no t without training labels


@pytest.mark.parametrize(
    "body, message",
    [
        ("x,anchor,target,A01,agri,1.5\n", r"outside \[0, 1\]"),
        ("x,anchor,target,A01,agri,high\n", "is not a number"),
        ("x,,target,A01,agri,0.5\n", "empty anchor or target"),
    ],
)
def test_bad_rows_are_refused_with_their_line(tmp_path, body, message):
    with pytest.raises(CorpusError, match=message) as err:
        scored.read_scored_pairs(_csv(tmp_path, body))
    assert ":2:" in str(err.value)


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("id,anchor,target,label\nx,a,b,0.5\n", encoding="utf-8")
    assert not scored.is_scored_csv(path)
    with pytest.raises(CorpusError, match=r"missing column\(s\) \['context', 'title'\]"):
        scored.read_scored_pairs(path)


def test_correlations_match_scipy_and_a_hand_worked_case():
    # hand-worked: x = 1, 2, 3; y = 1, 3, 2 -> deviations (-1, 0, 1) and (-1, 1, 0): r = 1 / 2
    assert scored.pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert scored.spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = np.round(0.6 * x + rng.normal(size=200), 0) / 4  # many ties, as in the quarter-step labels
    assert scored.pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert scored.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert math.isnan(scored.pearson([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="one length"):
        scored.pearson([1, 2], [1, 2, 3])


def test_bootstrap_resamples_whole_anchors():
    rng = np.random.default_rng(1)
    labels = rng.uniform(size=300)
    groups = [f"a{i // 10}" for i in range(300)]
    good = labels + rng.normal(scale=0.1, size=300)
    bad = labels + rng.normal(scale=1.0, size=300)
    out = scored.bootstrap_correlation_diff(good, bad, labels, groups, n_boot=500)
    assert out["groups"] == 30 and out["low"] > 0 and out["low"] < out["diff"] < out["high"]
    same = scored.bootstrap_correlation_diff(good, good, labels, groups, n_boot=50)
    assert same["diff"] == same["low"] == same["high"] == 0.0


class _LengthModel:
    """A stand-in re-ranker: scores a candidate by its length (through the ``rank`` interface)."""

    def rank(self, query, candidates, batch_size=32, known_t=None):
        from patent_demo.results import Results

        assert known_t is not None and len(known_t) == len(candidates)
        return Results.from_unsorted([c[0] for c in candidates], [float(len(c[1])) for c in candidates])


def test_evaluate_scored_keeps_the_row_order(tmp_path):
    path = _csv(
        tmp_path,
        "r1,bolt,screw,F16,engineering elements,0.75\n"
        "r2,bolt,nut and screw,F16,engineering elements,1\n"
        "r3,lamp,bulb,F21,lighting,0.25\n"
        "r4,lamp,a lighting body,F21,lighting,0.5\n",
    )
    rows = scored.read_scored_pairs(path)
    out = scored.evaluate_scored(rows, _LengthModel(), context=False)
    assert out["scores"] == [5.0, 13.0, 4.0, 15.0] and out["anchors"] == 2
    assert out["pearson"] == pytest.approx(stats.pearsonr(out["scores"], [0.75, 1, 0.25, 0.5]).statistic)
    assert set(out["by_section"]) == {"F"}
