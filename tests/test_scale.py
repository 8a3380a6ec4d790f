"""Index kinds chosen by measurement (``patent_demo.index.scale``), IVF-SQ with exact re-scoring,
memory-mapped loading, and the scale benchmark's table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from patent_demo.index import dense as index_mod
from patent_demo.index import scale
from patent_demo.index.dense import DenseIndex
from patent_demo.index.scale import recall_against_exact

ROOT = Path(__file__).resolve().parents[1]


def _rec(kind, n, recall, p50, mb, dim=256, **params):
    return {
        "kind": kind,
        "n": n,
        "dim": dim,
        "params": params,
        "recall@100": recall,
        "latency_ms_p50": p50,
        "latency_ms_p95": 2 * p50,
        "index_mb": mb,
        "build_s": 1.0,
    }


RECORDS = [
    _rec("flat", 100_000, 1.0, 30.0, 98),
    _rec("ivfsq", 100_000, 0.97, 2.0, 26, nlist=512, nprobe=64, qtype="sq8", rescore=2),
    _rec("ivfsq", 100_000, 0.93, 1.0, 26, nlist=512, nprobe=32, qtype="sq8", rescore=2),
    _rec("ivfpq", 100_000, 0.96, 3.0, 5, nlist=512, nprobe=64, m=32, rescore=10),
    _rec("ivf", 100_000, 0.99, 1.5, 99, nlist=512, nprobe=128),
    _rec("flat", 1_000_000, 1.0, 300.0, 977),
    _rec("ivfsq", 1_000_000, 0.96, 8.0, 250, nlist=2048, nprobe=128, qtype="sq8", rescore=2),
    _rec("ivfpq", 1_000_000, 0.90, 9.0, 40, nlist=2048, nprobe=128, m=32, rescore=10),
    _rec("ivf", 1_000_000, 0.97, 25.0, 980, nlist=2048, nprobe=256),  # over the latency budget
]


def test_pick_takes_the_cheapest_record_meeting_recall_within_budget():
    # small corpora: flat's p50 scaled to n (linear) stays within the budget -> exact search
    assert scale.pick(RECORDS, 50_000)["kind"] == "flat"  # 30 ms * 50k / 100k = 15 ms
    # at 100k flat is 30 ms: the least memory among those meeting recall and latency is IVF-PQ
    assert scale.pick(RECORDS, 100_000) is RECORDS[3]
    # 300k uses the 1M records (smallest measured size >= n); IVF-PQ misses recall, IVF-Flat the budget
    assert scale.pick(RECORDS, 300_000) is RECORDS[6]
    # beyond the largest measured size: the largest size's records
    assert scale.pick(RECORDS, 5_000_000) is RECORDS[6]
    # another dimension was never measured: exact search
    assert scale.pick(RECORDS, 1_000_000, dim=1280) is None
    # nothing meets the rule: exact search
    assert scale.pick([r for r in RECORDS if r["kind"] in ("flat", "ivfpq", "ivf")], 1_000_000) is None


def test_index_settings_and_descriptions_come_from_the_table(monkeypatch):
    table = [*RECORDS]
    table[6] = {**table[6], "patent_fetch": 4}
    monkeypatch.setattr(scale, "load_table", lambda path=None: table)
    assert scale.index_settings(1000) == {"kind": "flat"}
    assert scale.index_settings(1_000_000) == {
        "kind": "ivfsq",
        "nlist": 2048,
        "nprobe": 128,
        "qtype": "sq8",
        "rescore": 2,
        "patent_fetch": 4,
    }
    assert scale.choose_kind(1_000_000) == "ivfsq" and scale.choose_kind(1_000_000, dim=1280) == "flat"
    text = scale.describe_choice(table[6])
    assert (
        text
        == "IVF-SQ8 (nprobe 128, re-scored 2x), measured recall@100 0.96, p50 8.0 ms at 1,000,000 figures"
    )
    built = SimpleNamespace(
        kind="ivfsq",
        params={"nlist": 1024, "nprobe": 128, "qtype": "sq8", "rescore": 2, "seed": 1234, "train": 64},
        count=400_000,
        dim=256,
    )
    assert scale.describe_index(built) == f"{text}; 400,000 figures here"
    other = SimpleNamespace(
        kind="ivfsq", params={"nprobe": 7, "qtype": "sq8", "rescore": 0}, count=10, dim=256
    )
    assert "recall not measured" in scale.describe_index(other)
    flat = SimpleNamespace(kind="flat", params={}, count=300, dim=256)
    assert scale.describe_index(flat) == "flat (exact), recall@100 1.00 over 300 figures"
    assert "no measured kind" in scale.describe_choice(None)


def _clustered(n=6000, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, dim))
    x = centres[rng.integers(0, 60, n)] + 0.6 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_ivfsq_rescore_gives_exact_scores_and_recall(tmp_path):
    x = _clustered()
    ids = [f"f{i}" for i in range(len(x))]
    pids = [f"p{i // 4}" for i in range(len(x))]
    exact = DenseIndex.build(x, ids, pids)
    q = x[:40] + 0.05
    for qtype in ("sq8", "fp16"):
        idx = DenseIndex.build(
            x, ids, pids, kind="ivfsq", nlist=32, nprobe=32, qtype=qtype, rescore=2, train=40
        )
        assert recall_against_exact(idx, exact, q, 50) == 1.0  # every list probed: only the codes differ
        s, rows = idx.search_raw(q[:3], 10)
        qn = q[:3] / np.linalg.norm(q[:3], axis=1, keepdims=True)
        np.testing.assert_allclose(
            s, np.take_along_axis(qn @ x.T, rows, axis=1), rtol=1e-5
        )  # re-scored exactly
        assert idx.search_patents(q[0], 10).ids == exact.search_patents(q[0], 10).ids
    idx.set_search_params(nprobe=4, rescore=0)
    assert idx.params["rescore"] == 0 and recall_against_exact(idx, exact, q, 50) < 1.0
    with pytest.raises(ValueError, match="qtype"):
        DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=8, qtype="sq4")
    with pytest.raises(ValueError, match="rescore"):
        DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=8, rescore=-1)


def test_memory_mapped_load_matches_a_read_load(tmp_path, monkeypatch):
    x = _clustered(3000)
    ids = [f"f{i}" for i in range(len(x))]
    pids = [f"p{i // 5}" for i in range(len(x))]
    for kind, params in (
        ("flat", {}),
        ("ivfsq", {"nlist": 16, "nprobe": 8, "rescore": 3}),
        ("ivf", {"nlist": 16}),
    ):
        built = DenseIndex.build(x, ids, pids, kind=kind, patent_fetch=6, **params)
        root = built.save(tmp_path / kind)
        read, mapped = DenseIndex.load(root, mmap=False), DenseIndex.load(root, mmap=True)
        assert isinstance(mapped.embeddings, np.memmap) and not isinstance(read.embeddings, np.memmap)
        assert mapped.patent_fetch == 6 and mapped.params == built.params
        for a, b in zip(read.search_batch(x[:5], 20), mapped.search_batch(x[:5], 20), strict=True):
            assert a.ids == b.ids
        assert mapped.embedding("f7").tolist() == x[7].tolist()
        if kind in ("ivf", "ivfsq"):  # the full vectors' lists are mapped; the compact codes are read
            import faiss

            lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(mapped.index).invlists)
            assert type(lists).__name__ == ("OnDiskInvertedLists" if kind == "ivf" else "ArrayInvertedLists")
    # mmap=None maps an index of MMAP_MIN figures or more
    monkeypatch.setattr(index_mod, "MMAP_MIN", 3000)
    assert isinstance(DenseIndex.load(tmp_path / "flat").embeddings, np.memmap)
    monkeypatch.setattr(index_mod, "MMAP_MIN", 3001)
    assert not isinstance(DenseIndex.load(tmp_path / "flat").embeddings, np.memmap)


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bench():
    return _bench_module("bench_scale")


def test_bench_measures_a_small_size_and_renders_the_table(tmp_path):
    bench = _bench()
    log, table = tmp_path / "log.jsonl", tmp_path / "table.json"
    assert (
        bench.main(
            [
                "--sizes",
                "4000",
                "--queries",
                "20",
                "--kinds",
                "flat",
                "ivfsq",
                "--nprobe",
                "8",
                "64",
                "--log",
                str(log),
                "--table",
                str(table),
                "--fetch",
                "1",
                "4",
            ]
        )
        == 0
    )
    records = bench.read_log(str(log))
    rows = [r for r in records if "recall@100" in r]
    assert {r["kind"] for r in rows} == {"flat", "ivfsq"} and all(0 <= r["recall@100"] <= 1 for r in rows)
    assert json.loads(table.read_text())["records"] == rows
    table.unlink()
    assert (
        bench.main(["--table-from-log", str(log), "--table", str(table)]) == 0
    )  # (several logs: their union)
    assert json.loads(table.read_text())["records"] == rows
    text = _bench_module("bench_scale_render").render_markdown(records)  # what scripts/figures.py writes
    assert "| 4,000 | flat (exact) |" in text and "IVF-SQ8" in text and "the app picks" in text


@pytest.mark.parametrize("dim", [256, 1280])
def test_the_shipped_table_meets_the_targets_at_a_million_figures(dim):
    """256-d (the trained heads) and 1280-d (the zero-shot trunk): at 1M the pick meets recall@100 with three
    standard errors to spare, the latency, memory and build budgets, and its per-patent search was
    measured exact (with the over-fetch and lists it needs)."""
    records = scale.load_table()
    sizes = {r["n"] for r in records if r["dim"] == dim}
    assert {100_000, 300_000, 1_000_000} <= sizes
    best = scale.pick(records, 1_000_000, dim)
    assert best is not None and best["kind"] != "flat"
    assert scale.meets_recall(best) and best["latency_ms_p50"] <= scale.LATENCY_BUDGET_MS
    assert best["index_mb"] <= 500 and best["build_s"] <= 15 * 60
    assert best.get("patent_exact") is True and best.get("patent_fetch") and best.get("patent_nprobe")
    settings = scale.index_settings(1_000_000, dim)
    assert (
        settings["patent_fetch"] == best["patent_fetch"]
        and settings["patent_nprobe"] == best["patent_nprobe"]
    )


def test_patent_search_probes_patent_nprobe_lists_and_the_bench_measures_it(tmp_path):
    x = _clustered(4000)
    ids = [f"f{i}" for i in range(len(x))]
    pids = [str(i // 4) for i in range(len(x))]
    exact = DenseIndex.build(x, ids, pids)
    q = x[:30] + 0.3 * np.random.default_rng(3).normal(size=(30, x.shape[1])).astype(np.float32)
    want = [exact.search_patents(v, 10).ids for v in q]
    narrow = DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=32, nprobe=1, rescore=2, train=40)
    assert [narrow.search_patents(v, 10).ids for v in q] != want
    wide = DenseIndex.build(
        x, ids, pids, kind="ivfsq", nlist=32, nprobe=1, rescore=2, train=40, patent_nprobe=32
    )
    assert [wide.search_patents(v, 10).ids for v in q] == want
    assert wide.search_raw(q, 10)[1].tolist() == narrow.search_raw(q, 10)[1].tolist()  # figures: nprobe 1
    assert DenseIndex.load(wide.save(tmp_path / "w")).patent_nprobe == 32
    # the bench finds the fastest exact (over-fetch, nprobe) setting by measurement
    bench, emitted = _bench(), []
    truth = [exact.search_patents(v, 10) for v in q]
    exact_top = [[(int(p), float(s)) for p, s in zip(t.ids, t.scores, strict=True)] for t in truth]
    fetch, nprobe = bench.patent_settings(narrow, q, exact_top, [2, 4], emitted.append)
    over = emitted[0]["patent_overfetch"]
    assert {o["nprobe"] for o in over["factors"]} == {1, 2, 4, 8}
    ok = [o for o in over["factors"] if o["exact_share"] == 1.0]
    assert (fetch, nprobe) == (
        (ok and min(ok, key=lambda o: o["latency_ms_p50"])["factor"]) or None,
        ok and min(ok, key=lambda o: o["latency_ms_p50"])["nprobe"] or 0,
    )


def test_pick_wants_exact_scores():
    codes_only = _rec("ivfsq", 100_000, 0.99, 0.5, 26, nlist=512, nprobe=64, qtype="sq8", rescore=0)
    assert not scale.exact_scores(codes_only) and scale.exact_scores(RECORDS[1])
    assert scale.pick([*RECORDS, codes_only], 100_000) is RECORDS[3]  # not the approximate scores
    failed = {**RECORDS[3], "patent_exact": False}  # its patent top 10 was measured not to be exact
    assert scale.pick([r if r is not RECORDS[3] else failed for r in RECORDS], 100_000) is RECORDS[1]


def test_a_tie_between_two_patents_counts_as_exact_in_either_order():
    """Two patents whose best figures score the same (to 1e-6) may come back in either order: the bench's
    ``exact_share`` counts that as exact, ``equal_share`` (same order) does not."""
    x = _clustered(400)
    x[4:8] = x[0:4]  # patent 1's figures are patent 0's: every query ties them
    ids, pids = [f"f{i}" for i in range(len(x))], [str(i // 4) for i in range(len(x))]
    index = DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=8, nprobe=8, rescore=2, train=40)
    q = x[:1] + 0.01
    got = index.search_patents(q[0], 10)
    assert got.scores[0] == got.scores[1]
    swapped = [list(zip([int(p) for p in got.ids], got.scores.tolist(), strict=True))]
    swapped[0][0], swapped[0][1] = swapped[0][1], swapped[0][0]
    over = _bench().patent_overfetch(index, q, swapped, 10, [2])[0]
    assert (over["exact_share"], over["equal_share"], over["same_set_share"]) == (1.0, 0.0, 1.0)
    moved = [[(p, s - 1e-3 * (i == 2)) for i, (p, s) in enumerate(swapped[0])]]  # a different score
    assert _bench().patent_overfetch(index, q, moved, 10, [2])[0]["exact_share"] == 0.0


def test_ivfsq_over_pca_rescores_exactly_in_the_full_dimension(tmp_path):
    """``pca`` > 0: the lists hold SQ8 codes of the first principal components, the candidates are
    re-scored from the stored full-dimension embeddings, so the scores are the exact cosines."""
    rng = np.random.default_rng(4)  # most of the variance in 8 of 32 directions, as in real embeddings
    x = rng.normal(size=(3000, 8)) @ rng.normal(size=(8, 32)) + 0.15 * rng.normal(size=(3000, 32)) + 2.0
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    ids, pids = [f"f{i}" for i in range(len(x))], [str(i // 5) for i in range(len(x))]
    exact = DenseIndex.build(x, ids, pids)
    pca = DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=16, nprobe=16, pca=8, rescore=8, train=40)
    assert pca.params["pca"] == 8 and pca.dim == x.shape[1]
    q = x[:20] + 0.05 * np.random.default_rng(5).normal(size=(20, x.shape[1])).astype(np.float32)
    for v in q:
        got, want = pca.search(v, 10), exact.search(v, 10)
        assert np.allclose(
            got.scores, [float(exact.embedding(f) @ (v / np.linalg.norm(v))) for f in got.ids], atol=1e-5
        )
        assert len(set(got.ids) & set(want.ids)) >= 8
    assert recall_against_exact(pca, exact, q, 10) >= 0.9
    back = DenseIndex.load(pca.save(tmp_path / "p"), mmap=True)
    assert [back.search(v, 10).ids for v in q] == [pca.search(v, 10).ids for v in q]
    assert scale.kind_label("ivfsq", pca.params) == "IVF-SQ8 of PCA-8"
    with pytest.raises(ValueError, match="pca=8 needs rescore > 0"):
        DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=16, pca=8)
    with pytest.raises(ValueError, match="pca=64 must be 0"):
        DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=16, pca=64, rescore=2)
    with pytest.raises(ValueError, match="needs rescore > 0"):
        pca.set_search_params(rescore=0)


def test_one_query_searches_the_lists_in_parallel_and_finds_what_a_batch_finds():
    """One query (fewer than the threads) makes FAISS split the probed lists over the threads; a batch
    splits by query. Both find the same figures with the same scores."""
    from patent_demo.index.faiss_kinds import set_num_threads

    x = _clustered(3000)
    ids, pids = [f"f{i}" for i in range(len(x))], [str(i // 5) for i in range(len(x))]
    q = x[:12] + 0.1
    before = set_num_threads()
    try:
        set_num_threads(2)
        for kind, extra in (("ivf", {}), ("ivfsq", {"rescore": 2}), ("ivfsq", {"rescore": 2, "pca": 8})):
            index = DenseIndex.build(x, ids, pids, kind=kind, nlist=16, nprobe=6, train=40, **extra)
            batch = index.search_batch(q, 10)
            assert faiss_parallel_mode(index) == 0
            one = [index.search(v, 10) for v in q]
            assert faiss_parallel_mode(index) == 1
            assert [r.ids for r in one] == [r.ids for r in batch]
            assert np.allclose([r.scores for r in one], [r.scores for r in batch], atol=1e-6)
    finally:
        set_num_threads(before)


def faiss_parallel_mode(index: DenseIndex) -> int:
    import faiss

    return int(faiss.extract_index_ivf(index.index).parallel_mode)


def test_read_logs_keeps_the_newest_measurement_of_each_setting(tmp_path):
    """Runs are ordered by their start time across logs; a setting measured again replaces the older
    record, one not measured again stays, and a per-patent record older than its setting's newest
    measurement is dropped."""
    bench = _bench()

    def row(nprobe, p50, **extra):
        return {
            "kind": "ivfsq",
            "n": 1000,
            "dim": 256,
            "params": {"nlist": 8, "nprobe": nprobe, **extra},
            "recall@100": 0.99,
            "latency_ms_p50": p50,
        }

    def over(nprobe):
        return {
            "patent_overfetch": {
                "n": 1000,
                "kind": "ivfsq",
                "params": {"nlist": 8, "nprobe": nprobe},
                "factors": [],
                "first_exact_factor": 2,
            }
        }

    old, new = tmp_path / "old.log", tmp_path / "new.log"
    old.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"command": "old", "dim": 256, "time": "2026-01-01T00:00:00Z"},
                row(2, 9.0),
                row(4, 9.0),
                over(2),
                over(4),
                {"synthetic_embeddings": {"random_pair": 0.1}},
            ]
        )
        + "\n"
    )
    new.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"command": "new", "dim": 256, "time": "2026-02-01T00:00:00Z"},
                row(2, 1.0, pca=0),
                {"synthetic_embeddings": {"random_pair": 0.2}},
            ]
        )
        + "\n"
    )
    for order in ((new, old), (old, new)):  # the start times decide, not the order of the files
        records = bench.read_logs(*map(str, order))
        rows = sorted((r["params"]["nprobe"], r["latency_ms_p50"]) for r in records if "recall@100" in r)
        assert rows == [(2, 1.0), (4, 9.0)]  # nprobe 2 measured again (its "pca": 0 is the older default)
        assert [
            (r["patent_overfetch"]["params"]["nprobe"], r["dim"]) for r in records if "patent_overfetch" in r
        ] == [(4, 256)]  # with its run's dimension: a 384-d run's setting is not a 256-d one's
        assert [r["synthetic_embeddings"]["random_pair"] for r in records if "synthetic_embeddings" in r] == [
            0.2
        ]


def test_pick_wants_recall_with_three_standard_errors_to_spare():
    close = {**RECORDS[6], "recall@100": 0.96, "recall@100_se": 0.004}  # 0.96 - 3 * 0.004 < 0.95
    sure = {**RECORDS[6], "recall@100": 0.96, "recall@100_se": 0.003, "latency_ms_p50": 9.0}
    assert not scale.meets_recall(close) and scale.meets_recall(sure) and scale.meets_recall(RECORDS[6])
    assert scale.pick([RECORDS[5], close], 1_000_000) is None
    assert scale.pick([RECORDS[5], close, sure], 1_000_000) is sure
