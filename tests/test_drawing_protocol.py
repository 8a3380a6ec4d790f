"""The drawing-retrieval protocol and its scores on a hand-built corpus with exact expected numbers.

Each figure is a flat gray square; a stand-in encoder maps the gray level at the image centre to a unit
vector at a chosen angle, so the cosine rankings (and so every metric) are known by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.drawing.protocol import drawing_protocol, evaluate_drawings
from patent_demo.drawing.transforms import DrawingEvalTransform

# figure -> (gray level, angle in degrees); queries a, c, e, g (the first figure of each patent)
FIGS = {
    "a": (10, 0),
    "b": (20, 10),
    "c": (30, 22),
    "d": (40, 50),
    "e": (50, 45),
    "f": (60, 60),
    "g": (70, 180),
    "h": (80, 175),
}
PATENTS = [("P1", "06-01", "ab"), ("P2", "06-01", "cd"), ("P3", "06-02", "ef"), ("P4", "07-01", "gh")]


class GrayAngleEncoder(torch.nn.Module):
    """``encode_image([B, 3, S, S]) -> [B, 2]``: the unit vector at the angle of the centre gray level."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.angles = {level: math.radians(deg) for level, deg in FIGS.values()}

    def encode_image(self, x: torch.Tensor, normalize: bool = True) -> torch.Tensor:
        s = x.shape[-1] // 2
        levels = ((x[:, 0, s, s] * 0.5 + 0.5) * 255).round().long().tolist()
        theta = torch.tensor([self.angles[v] for v in levels], dtype=torch.float64)
        return torch.stack([theta.cos(), theta.sin()], dim=1).float()


@pytest.fixture
def corpus(tmp_path) -> Corpus:
    patents = []
    for pid, code, figs in PATENTS:
        figures = []
        for f in figs:
            Image.new("L", (40, 30), FIGS[f][0]).save(tmp_path / f"{f}.png")
            figures.append(Figure(path=f"{f}.png", view="front"))
        patents.append(Patent(id=pid, title=pid, codes={"locarno": [code]}, figures=figures))
    splits = {"test": [p.id for p in patents]}
    return Corpus(root=tmp_path, patents=patents, splits=splits, name="hand")


def test_protocol_queries_and_all(corpus):
    queries, gallery, selfs = drawing_protocol(corpus, "test", "queries")
    assert [f.path for _, f in queries] == ["a.png", "c.png", "e.png", "g.png"]
    assert [f.path for _, f in gallery] == ["b.png", "d.png", "f.png", "h.png"]
    assert selfs.tolist() == [-1, -1, -1, -1]
    queries, gallery, selfs = drawing_protocol(corpus, None, "all")
    assert [f.path for _, f in queries] == [f"{c}.png" for c in "abcdefgh"] == [f.path for _, f in gallery]
    assert selfs.tolist() == list(range(8))
    with pytest.raises(ValueError, match="protocol must be one of"):
        drawing_protocol(corpus, "test", "pages")


def test_evaluate_queries_protocol_exact(corpus):
    tf = DrawingEvalTransform(16, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    out = evaluate_drawings(GrayAngleEncoder(), tf, corpus, "test", ks=(10,), batch_size=3)
    m = out["metrics"]
    # rankings: a -> b d f h; c -> b d f h; e -> d f b h; g -> h f d b
    assert m["num_queries"] == 4 and out["num_gallery"] == 4
    assert m["patent_map"] == pytest.approx((1 + 0.5 + 0.5 + 1) / 4, abs=1e-12)
    assert m["subclass_map"] == pytest.approx((1 + 1 + 0.5 + 1) / 4, abs=1e-12)
    assert m["main_map"] == pytest.approx(1.0, abs=1e-12)
    half = 1 / math.log2(3)
    assert m["patent_ndcg@10"] == pytest.approx((2 + 2 * half) / 4, abs=1e-12)
    assert out["per_class"]["06-01"]["patent_map"] == pytest.approx(0.75, abs=1e-12)
    assert out["per_class"]["06-02"]["patent_map"] == pytest.approx(0.5, abs=1e-12)
    assert out["per_class"]["07-01"]["num_queries"] == 1
    assert set(out["silhouette_per_class"]) == {"06-01", "06-02", "07-01"}
    assert out["split"] == "test" and out["protocol"] == "queries"


def test_evaluate_all_protocol_skips_the_query_itself(corpus):
    tf = DrawingEvalTransform(16, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    out = evaluate_drawings(GrayAngleEncoder(), tf, corpus, None, ks=(1,), protocol="all", silhouette=False)
    per = out["metrics"]
    # the nearest other figure (angle distance) of a..h: b, a, b, e, d, d, h, g
    assert per["patent_ndcg@1"] == pytest.approx(4 / 8, abs=1e-12)  # a, b, g, h
    assert per["subclass_ndcg@1"] == pytest.approx(5 / 8, abs=1e-12)  # and c (06-01)
    assert per["main_ndcg@1"] == pytest.approx(8 / 8, abs=1e-12)  # d, e, f stay in main class 06
    assert out["silhouette"] is None and per["num_queries"] == 8
    assert np.isfinite(per["patent_map"])
