"""Whole-application queries: several views ranked against patents by an aggregate of per-view
best-figure similarity, exact on hand-built vectors, against a loop, and through the CLI."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from patent_demo.drawing.application import application_ranking, per_view_patent_scores


def _unit(deg):
    t = np.radians(np.asarray(deg, dtype=np.float64))
    return np.stack([np.cos(t), np.sin(t)], axis=1)


# gallery: patent A at 0 and 90 degrees, B at 30, C at 60 and 180
GALLERY = _unit([0, 90, 30, 60, 180])
PATENTS = ["A", "A", "B", "C", "C"]


def test_mean_and_max_aggregates_exact():
    views = _unit([0, 80])  # one view near A's first figure, one near A's second
    patents, s = per_view_patent_scores(views, GALLERY, PATENTS)
    assert patents == ["A", "B", "C"]
    np.testing.assert_allclose(s[:, 0], [1.0, np.cos(np.radians(10))])
    mean = application_ranking(views, GALLERY, PATENTS, how="mean")
    assert mean.ids == ["A", "B", "C"]  # B: (cos 30 + cos 50) / 2 = 0.754 > C: (cos 60 + cos 20) / 2 = 0.720
    np.testing.assert_allclose(mean.scores[0], (1 + np.cos(np.radians(10))) / 2, rtol=1e-6)
    top = application_ranking(views, GALLERY, PATENTS, k=1, how="max", allowed={"B", "C"})
    assert top.ids == ["C"] and top.extras[0]["per_view"] == pytest.approx(
        [np.cos(np.radians(60)), np.cos(np.radians(20))]
    )


def test_matches_a_loop_on_random_vectors():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(30, 8))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    pats = [f"P{i % 7}" for i in range(30)]
    v = rng.normal(size=(4, 8))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    res = application_ranking(v, g, pats)
    naive = {
        p: np.mean([max(float(x @ g[j]) for j in range(30) if pats[j] == p) for x in v]) for p in set(pats)
    }
    assert res.ids == sorted(naive, key=lambda p: (-naive[p], pats.index(p)))
    np.testing.assert_allclose(res.scores, [naive[p] for p in res.ids], rtol=1e-5)
    with pytest.raises(ValueError, match="aggregate must be one of"):
        application_ranking(v, g, pats, how="median")


def test_cli_application_query_ranks_patents(tmp_path, capsys):
    from patent_demo.cli import main
    from patent_demo.data.build import build_corpus
    from tests.conftest import require_shared

    src = require_shared("design_patents_2007_uspc_macaulay")
    rows = [r for r in csv.reader(open(src / "metadata_2007.txt", encoding="utf-8"), delimiter="\t") if r][:8]
    (tmp_path / "t.tsv").write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    build_corpus("images", src, tmp_path / "c", metadata=tmp_path / "t.tsv", progress=False)
    views = [str(src / "images" / f"{rows[0][0]}.png"), str(src / "images" / f"{rows[1][0]}.png")]
    args = [
        "search",
        "drawings",
        "--corpus",
        str(tmp_path / "c"),
        "--model",
        "zero-shot",
        "--query",
        *views,
        "--application",
        "mean",
        "--k",
        "3",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--checkpoints",
        str(tmp_path / "none"),
        "--run",
        str(tmp_path / "run.txt"),
    ]
    assert main(args) == 0
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert len(lines) == 3 and all(line.startswith("application Q0 ") for line in lines)
    # both views are corpus drawings, so their patents score (1 + s) / 2 with s <= 1 and lead the list
    assert {lines[0].split()[2], lines[1].split()[2]} == {rows[0][0], rows[1][0]}
