"""Plotly figures: the embedding map and the gate plot, checked trace by trace."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.plots import COLOURS_SHOWN, GREY, embedding_map, gate_plot, groups


def _data(dims=2, sampled=(5, 5), query=True):
    rng = np.random.default_rng(0)
    return {
        "coords": rng.normal(size=(5, dims)),
        "ids": [f"f{i}" for i in range(5)],
        "patents": ["A", "A", "B", "C", "D"],
        "titles": ["Chair", "Chair", "Table", "Cup", "Lamp"],
        "subclasses": ["06-01", "06-01", "06-03", "07-01", "26-05"],
        "mains": ["06", "06", "06", "07", "26"],
        "query": rng.normal(size=dims) if query else None,
        "highlight": [True, False, True, False, False],
        "silhouettes": {"patent": 0.5, "subclass": 0.1234, "main class": -0.02},
        "sampled": sampled,
        "explained": [0.5, 0.25, 0.1][:dims],
        "projection": "PCA",
        "model": "zero-shot",
    }


def test_embedding_map_2d_traces():
    fig = embedding_map(_data())
    names = [t.name for t in fig.data]
    assert names == ["06 (3)", "07 (1)", "26 (1)", "hits of the query (2)", "query"]  # by main class
    assert fig.data[0].hovertext[0] == "A · Chair<br>f0<br>class 06-01"
    hits = fig.data[3]
    assert list(hits.x) == [fig.data[0].x[0], fig.data[0].x[2]]  # the highlighted figures, ringed
    assert hits.marker.line.color == "black"
    assert fig.layout.title.text == (
        "silhouette: patent 0.500 · subclass 0.123 ·<br>main class -0.020<br><sup>5 drawings · PCA · zero-shot</sup>"
    )  # the scores first, at every level
    assert fig.layout.xaxis.title.text == "PC1 (50%)"
    assert fig.layout.legend.title.text == "main class"


def test_embedding_map_by_subclass_and_one_class_against_the_rest():
    names = [t.name for t in embedding_map(_data(query=False), colour_by="subclass").data]
    assert names == ["06-01 (2)", "06-03 (1)", "07-01 (1)", "26-05 (1)", "hits of the query (2)"]
    focus = embedding_map(_data(query=False), focus="06")  # a main class: all its subclasses
    assert [t.name for t in focus.data] == ["the rest (2 subclasses) (2)", "06 (3)", "hits of the query (2)"]
    assert focus.data[0].marker.color == GREY  # the rest, grey and drawn first (under)
    assert [t.name for t in embedding_map(_data(query=False), focus="06-03").data][:2] == [
        "the rest (3 subclasses) (4)",
        "06-03 (1)",
    ]


def test_a_level_with_many_classes_keeps_a_short_legend():
    values = [f"D{i}" for i in range(40) for _ in range(i + 1)]  # 40 classes, D39 the largest
    group, colour = groups(values)
    assert len(colour) == COLOURS_SHOWN + 1 and colour["other: 25 classes"] == GREY
    assert group[-1] == "D39" and group[0] == "other: 25 classes"
    assert groups(["a", "b"])[1].keys() == {"a", "b"}  # few classes: no "other"


def test_embedding_map_3d_says_when_sampled():
    fig = embedding_map(
        _data(dims=3, sampled=(5, 40), query=False) | {"projection": "t-SNE", "explained": []}
    )
    assert [t.type for t in fig.data] == ["scatter3d"] * 4
    assert fig.layout.title.text.endswith("<sup>5 of 40 drawings sampled · t-SNE · zero-shot</sup>")
    assert fig.layout.scene.zaxis.title.text == "t-SNE 3"


def test_embedding_map_rejects_bad_input():
    with pytest.raises(ValueError, match=r"coords must be \[N, 2\] or \[N, 3\]"):
        embedding_map(_data() | {"coords": np.zeros((5, 4))})
    with pytest.raises(ValueError, match="colour_by must be one of"):
        embedding_map(_data(), colour_by="patent")


def test_gate_plot():
    gate = [0.1, 0.9, 0.5, 0.3]
    fig = gate_plot(gate)
    np.testing.assert_allclose(fig.data[0].y, gate)
    assert fig.layout.shapes[0].y0 == pytest.approx(0.45)
    assert fig.layout.annotations[0].text == "mean 0.450"
    assert fig.layout.title.text == "gate g over 4 dimensions (1 = domain-sensitive)"
    with pytest.raises(ValueError, match="non-empty vector"):
        gate_plot([])
