"""Plotly figures: the embedding map and the gate plot, checked trace by trace."""

from __future__ import annotations

import numpy as np
import pytest

from patent_demo.plots import SYMBOLS_2D, embedding_map, gate_plot


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
        "silhouette": 0.1234,
        "sampled": sampled,
        "explained": [0.5, 0.25, 0.1][:dims],
        "model": "zero-shot",
    }


def test_embedding_map_2d_traces():
    fig = embedding_map(_data())
    names = [t.name for t in fig.data]
    assert names == ["06-01", "06-03", "07-01", "26-05", "query"]
    chairs = fig.data[0]
    assert list(chairs.marker.size) == [11, 6]  # the first is highlighted
    assert list(chairs.marker.symbol) == [SYMBOLS_2D[0], SYMBOLS_2D[0]]
    assert fig.data[1].marker.symbol == (SYMBOLS_2D[0],)  # same main class 06
    assert fig.data[2].marker.symbol == (SYMBOLS_2D[1],)
    assert chairs.hovertext[0] == "A · Chair<br>f0<br>Locarno 06-01"
    assert (
        fig.layout.title.text == "silhouette by subclass 0.123 · 5 drawings<br><sup>zero-shot</sup>"
    )  # score first
    assert fig.layout.xaxis.title.text == "PC1 (50%)"


def test_embedding_map_3d_says_when_sampled():
    fig = embedding_map(_data(dims=3, sampled=(5, 40), query=False))
    assert [t.type for t in fig.data] == ["scatter3d"] * 4
    assert (
        fig.layout.title.text
        == "silhouette by subclass 0.123 · 5 of 40 drawings sampled<br><sup>zero-shot</sup>"
    )
    assert fig.layout.scene.zaxis.title.text == "PC3 (10%)"


def test_embedding_map_rejects_bad_coords():
    with pytest.raises(ValueError, match=r"coords must be \[N, 2\] or \[N, 3\]"):
        embedding_map(_data() | {"coords": np.zeros((5, 4))})


def test_gate_plot():
    gate = [0.1, 0.9, 0.5, 0.3]
    fig = gate_plot(gate)
    np.testing.assert_allclose(fig.data[0].y, gate)
    assert fig.layout.shapes[0].y0 == pytest.approx(0.45)
    assert fig.layout.annotations[0].text == "mean 0.450"
    assert fig.layout.title.text == "gate g over 4 dimensions (1 = domain-sensitive)"
    with pytest.raises(ValueError, match="non-empty vector"):
        gate_plot([])
