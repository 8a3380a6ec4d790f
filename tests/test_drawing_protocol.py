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


def test_score_with_cutoff_against_a_naive_loop():
    """Four patents (Locarno 06-01 twice, 06-02, 07-01), one figure each plus a second figure of the query
    patent; the query's cut-off 2015-06-01 admits A (published before) and B (filed before, published after:
    E), hides C (filed after). Both rankings leave the query's own patent out; AP and nDCG@10 recomputed by a
    plain loop, the hidden relevant figure counted as missed."""
    from patent_demo.drawing.protocol import score_with_cutoff

    def pat(pid, code, date, filed):
        return Patent(pid, codes={"locarno": [code]}, date=date, filing_date=filed)

    q = pat("Q", "06-01", "2016-01-01", "2015-06-01")
    a, b, c, d = (
        pat("A", "06-01", "2014-01-01", "2013-01-01"),
        pat("B", "06-02", "2016-03-01", "2015-01-01"),
        pat("C", "06-01", "2017-01-01", "2015-09-01"),
        pat("D", "07-01", "2010-01-01", "2009-01-01"),
    )
    gallery = [(p, Figure(f"{p.id}.png")) for p in (q, c, b, a, d)]  # Q's second figure first
    queries = [(q, Figure("Q1.png"))]
    # cosine order of the gallery for the query: Q (own), C, B, A, D
    g = np.eye(5, dtype=np.float32)
    qv = np.array([[0.9, 0.8, 0.6, 0.4, 0.1]], dtype=np.float32)
    out = score_with_cutoff(queries, gallery, qv, g, ["2015-06-01"], ks=[10])

    def ap(ranked_ids, relevant):
        hits, total = 0, 0.0
        for r, x in enumerate(ranked_ids, 1):
            if x in relevant:
                hits += 1
                total += hits / r
        return total / len(relevant)

    def ndcg(ranked_ids, relevant):
        dcg = sum(1 / math.log2(r + 1) for r, x in enumerate(ranked_ids, 1) if x in relevant)
        return dcg / sum(1 / math.log2(r + 1) for r in range(1, len(relevant) + 1))

    sub, main = {"C", "A"}, {"C", "B", "A"}  # Q's own figure is neither (left out)
    none, cut = ["C", "B", "A", "D"], ["B", "A", "D"]  # the cut-off hides C
    assert out["none"]["subclass_map"][0] == pytest.approx(ap(none, sub))
    assert out["cut"]["subclass_map"][0] == pytest.approx(ap(cut, sub))  # C missed: AP = (1/2)/2
    assert out["cut"]["subclass_map"][0] == pytest.approx(0.25)
    assert out["cut"]["main_map"][0] == pytest.approx(ap(cut, main))
    assert out["cut"]["subclass_ndcg@10"][0] == pytest.approx(ndcg(cut, sub))
    assert out["none"]["main_ndcg@10"][0] == pytest.approx(ndcg(none, main))
    assert out["cut"]["patent_map"][0] is None  # its own patent is all the patent level holds
    assert out["hidden"] == {"subclass": 1, "main": 1} and out["relevant"] == {"subclass": 2, "main": 3}
    # no cut-off for a query without a date: both rankings are the same
    same = score_with_cutoff(queries, gallery, qv, g, [""], ks=[10])
    assert same["cut"] == same["none"] and same["hidden"] == {"subclass": 0, "main": 0}
