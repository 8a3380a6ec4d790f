"""The generated demo corpus: object types, drawings, families, splits, qrels, determinism, caching."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from patent_demo import hierarchy, taxonomy
from patent_demo.data.corpus import Corpus
from patent_demo.data.democorpus import (
    TYPES,
    VIEWS,
    Style,
    build_corpus,
    build_scene,
    ensure_demo_corpus,
    make_design,
    plan_corpus,
    render_view,
    retrieval_protocol,
)
from patent_demo.data.democorpus import build as build_mod
from patent_demo.data.democorpus.__main__ import main as cli_main
from patent_demo.data.democorpus.geometry import box, cylinder, revolve
from patent_demo.imageio import ink_bbox, ink_ratio
from tests.conftest import require_shared

N, SIZE = 40, 96


def _digest(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    root = tmp_path_factory.mktemp("demo") / "c"
    build_corpus(root, patents=N, seed=0, size=SIZE, workers=2)
    return Corpus.load(root)


# -- object types ---------------------------------------------------------------------------------
def test_registry_spans_real_locarno_classes():
    subclasses = {t.locarno for t in TYPES.values()}
    mains = {t.locarno_main for t in TYPES.values()}
    assert len(TYPES) >= 30 and len(subclasses) >= 20 and len(mains) >= 8
    for t in TYPES.values():
        assert str(taxonomy.parse_locarno(t.locarno)) == t.locarno
        assert t.titles and t.noun
    table = require_shared("locarno_subclass_table_clipdesignsearch") / "locarno_subclasses.tsv"
    real = {line.split("\t")[0] for line in table.read_text(encoding="utf-8").splitlines()[1:]}
    assert subclasses <= real, sorted(subclasses - real)


def test_every_type_renders_every_view_without_blank_or_clipped_drawings():
    for key in sorted(TYPES):
        design, params = make_design(key, np.random.default_rng(7))
        assert design.parts and design.features and params, key
        scene = build_scene(design.parts)
        for view in VIEWS:
            img = render_view(scene, view, SIZE, Style(label=False))
            assert img.mode == "L" and img.size == (SIZE, SIZE)
            ratio = ink_ratio(img)
            assert 0.004 < ratio < 0.45, (key, view, ratio)
            left, top, right, bottom = ink_bbox(img)
            assert left >= 2 and top >= 2 and right <= SIZE - 2 and bottom <= SIZE - 2, (key, view)
            assert max(right - left, bottom - top) >= SIZE * 0.6, (key, view)  # fills the sheet


def test_flat_faces_show_no_inner_edges():
    """A box drawn from the front is one rectangle outline: no diagonal or inner edges."""
    img = np.asarray(render_view(build_scene([box(1, 1, 1)]), "front", 64, Style(label=False, shading=False)))
    inner = img[12:52, 12:52]
    assert inner.min() == 255
    assert img.min() < 100


def test_hidden_lines_are_removed():
    """A small cylinder behind a big box is hidden from the front and visible from the rear."""
    scene = build_scene([box(1, 0.2, 1, (0, 0, 0)), cylinder(0.1, 0.4, 16).moved(0, 0.5, -0.2)])
    front = np.asarray(render_view(scene, "front", 64, Style(label=False, margin=0.0)))
    rear = np.asarray(render_view(scene, "rear", 64, Style(label=False, margin=0.0)))
    assert front[20:44, 20:44].min() == 255
    assert rear[20:44, 20:44].min() < 128


def test_open_surfaces_keep_both_sides():
    bowl = revolve([(0.5, 1.0), (0.2, 0.0), (0.0, 0.0)], caps=False)
    assert not bowl.closed
    img = render_view(build_scene([bowl]), "top", 64, Style(label=False))
    assert ink_ratio(img) > 0.02


def test_family_variants_keep_choices_and_move_a_little():
    d0, p0 = make_design("dining_chair", np.random.default_rng(1))
    d1, p1 = make_design("dining_chair", np.random.default_rng(2), base=p0, jitter=0.06)
    assert p0.keys() == p1.keys() and p0 != p1
    for k, v in p0.items():
        if isinstance(v, float):
            assert abs(v - p1[k]) <= 0.06 * 0.5 + 1e-4  # no chair parameter spans more than 0.5
        else:
            assert v == p1[k]


# -- the corpus -----------------------------------------------------------------------------------
def test_counts_ids_views_and_text(corpus: Corpus):
    assert len(corpus) == N
    assert [p.id for p in corpus] == [f"XD{i:06d}" for i in range(1, N + 1)]
    assert [p.date for p in corpus] == sorted(p.date for p in corpus)
    for p in corpus:
        t = TYPES[p.extra["type"]]
        assert 4 <= len(p.figures) <= 8
        assert p.figures[0].view == "perspective" and p.figures[1].view == "front"
        assert [f.label for f in p.figures] == [f"FIG. {i}" for i in range(1, len(p.figures) + 1)]
        assert p.figures[0].description.startswith("FIG. 1 is a") and t.noun in p.figures[0].description
        assert p.figures[-1].description.endswith(".") and p.figures[-2].description.endswith("; and,")
        assert p.title in t.titles and p.codes == {"locarno": [t.locarno]}
        assert p.text.endswith(
            f"design for {'an' if t.noun[0] in 'aeiou' else 'a'} {t.noun}, as shown and described."
        )
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.date)
        # examiner fields: filed 6-30 months before publication, generated office and kind
        lag = (dt.date.fromisoformat(p.date) - dt.date.fromisoformat(p.filing_date)).days
        assert 180 <= lag < 910 and p.priority_date == ""
        assert (p.country, p.kind_code) == ("XX", "S1") and p.text.endswith(p.claims)
        img = corpus.open_image(p.figures[0], crop=False)
        assert img.size == (SIZE, SIZE)


def test_families_splits_citations_and_qrels(corpus: Corpus):
    by_id = {p.id: p for p in corpus}
    assert sorted(sum(corpus.splits.values(), [])) == sorted(by_id)
    split_of = {i: s for s, ids in corpus.splits.items() for i in ids}
    fams: dict[str, set[str]] = {}
    for p in corpus:
        fams.setdefault(p.extra["family"], set()).add(split_of[p.id])
        assert split_of[p.id] == p.extra["split"]
        for c in p.citations:
            q = by_id[c]
            assert q.date <= p.date and q.id < p.id
            assert q.extra["type"] == p.extra["type"]
        earlier_family = [q.id for q in corpus if q.extra["family"] == p.extra["family"] and q.id < p.id]
        assert set(earlier_family) <= set(p.citations)
    assert all(len(s) == 1 for s in fams.values())
    assert any(len([p for p in corpus if p.extra["family"] == f]) > 1 for f in fams)
    assert set(corpus.qrels) == {p.id for p in corpus.split("test") if p.citations}
    for q, rels in corpus.qrels.items():
        assert set(rels) == set(by_id[q].citations)
        for d, r in rels.items():
            assert r == (2 if by_id[d].extra["family"] == by_id[q].extra["family"] else 1)


def test_each_split_holds_pairs_at_every_hierarchy_level(corpus: Corpus):
    for split in ("train", "val", "test"):
        figs = [(p.id, p.locarno) for p in corpus.split(split) for _ in p.figures]
        counts = Counter()
        for i, (pa, la) in enumerate(figs):
            for pb, lb in figs[i + 1 :]:
                counts[hierarchy.relation(pa, la, pb, lb)] += 1
        assert min(counts["patent"], counts["subclass"], counts["main"]) >= 10, (split, counts)


def test_retrieval_protocol(corpus: Corpus):
    queries, gallery = retrieval_protocol(corpus)
    test = corpus.split("test")
    assert [p.id for p, _ in queries] == [p.id for p in test]
    assert all(f is p.figures[p.extra["query_figure"]] for p, f in queries)
    assert len(queries) + len(gallery) == sum(len(p.figures) for p in test)
    assert not {f.path for _, f in queries} & {f.path for _, f in gallery}
    stored = json.loads((corpus.root / "protocol.json").read_text())
    assert stored["queries"] == [f.path for _, f in queries] and stored["gallery"] == [
        f.path for _, f in gallery
    ]


def test_same_seed_gives_identical_bytes_for_any_worker_count(corpus: Corpus, tmp_path: Path):
    build_corpus(tmp_path / "one", patents=N, seed=0, size=SIZE, workers=1)
    assert _digest(tmp_path / "one") == _digest(corpus.root)
    other = plan_corpus(N, seed=1)
    assert [p.type for p in other] != [p.type for p in plan_corpus(N, seed=0)]


def test_plan_scales_to_ten_thousand_patents():
    plans = plan_corpus(10_000, seed=0)
    assert len(plans) == 10_000 and len({p.type for p in plans}) == len(TYPES)
    assert Counter(p.split for p in plans)["test"] > 1000


def test_ensure_demo_corpus_builds_once(tmp_path: Path, monkeypatch):
    first = ensure_demo_corpus(tmp_path, patents=6, seed=3, size=64, workers=1)
    assert len(first) == 6 and first.root.name == "democorpus-v1-n6-s3-64px"
    first.validate()

    def fail(*args, **kwargs):
        raise AssertionError("rebuilt a cached corpus")

    monkeypatch.setattr(build_mod, "build_corpus", fail)
    again = ensure_demo_corpus(tmp_path, patents=6, seed=3, size=64)
    assert [p.to_dict() for p in again] == [p.to_dict() for p in first]
    assert [p.name for p in tmp_path.iterdir()] == ["democorpus-v1-n6-s3-64px"]


def test_cli(tmp_path: Path, capsys):
    assert cli_main([str(tmp_path / "out"), "--patents", "5", "--size", "64", "--workers", "1"]) == 0
    assert "wrote 5 patents" in capsys.readouterr().out
    assert len(Corpus.load(tmp_path / "out")) == 5


def test_every_demo_subclass_has_a_title():
    from patent_demo.titles import locarno_title

    assert [t.locarno for t in TYPES.values() if not locarno_title(t.locarno)] == []
