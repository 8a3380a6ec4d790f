"""Tests for patent_demo.index.dense: exact search against numpy, ANN recall against exact, per-patent
aggregation by hand, save→load round trip, batched embedding, and exact error messages."""

from __future__ import annotations

import json
import sys

import faiss
import numpy as np
import pytest

from patent_demo.drawing.embed import embed_figures
from patent_demo.index import dense, faiss_kinds
from patent_demo.index.aggregate import aggregate_by_patent
from patent_demo.index.dense import DenseIndex
from patent_demo.index.scale import recall_against_exact
from patent_demo.results import Results


@pytest.fixture(autouse=True)
def one_thread():
    """One FAISS thread: builds (HNSW insertion order, k-means) are then deterministic."""
    before = faiss_kinds.get_num_threads()
    faiss_kinds.set_num_threads(1)
    yield
    faiss_kinds.set_num_threads(before)


def clustered(n: int, n_queries: int, dim: int = 32, clusters: int = 40, noise: float = 1.0, seed: int = 0):
    """Gaussian blobs around random centres: corpus [n, dim] and queries [n_queries, dim] drawn alike."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    x = centres[rng.integers(0, clusters, n)] + noise * rng.standard_normal((n, dim)).astype(np.float32)
    q = centres[rng.integers(0, clusters, n_queries)] + noise * rng.standard_normal((n_queries, dim)).astype(
        np.float32
    )
    return x, q


def names(n: int, per_patent: int = 4) -> tuple[list[str], list[str]]:
    return [f"f{i}" for i in range(n)], [f"p{i // per_patent}" for i in range(n)]


def numpy_top_k(x: np.ndarray, q: np.ndarray, k: int, normalize: bool = True):
    """Brute force reference: scores [Q, k] and rows [Q, k], ties by ascending row."""
    if normalize:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
    s = q.astype(np.float64) @ x.astype(np.float64).T
    rows = np.stack([np.lexsort((np.arange(len(x)), -row))[:k] for row in s])
    return np.take_along_axis(s, rows, axis=1), rows


@pytest.fixture(scope="module")
def data():
    x, q = clustered(2000, 100)
    ids, pids = names(len(x))
    return x, q, ids, pids


@pytest.fixture(scope="module")
def exact(data):
    x, _, ids, pids = data
    return DenseIndex.build(x, ids, pids)


# ---------------------------------------------------------------------------------------------- exact


@pytest.mark.parametrize("normalize", [True, False])
def test_exact_search_equals_numpy_brute_force(normalize):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    q = rng.standard_normal((7, 16)).astype(np.float32)
    ids, pids = names(300)
    index = DenseIndex.build(x, ids, pids, normalize=normalize)
    ref_scores, ref_rows = numpy_top_k(x, q, 20, normalize)
    hits = index.search_batch(q, k=20)
    assert len(hits) == 7
    for res, s, r in zip(hits, ref_scores, ref_rows, strict=True):
        assert res.ids == [f"f{i}" for i in r]
        np.testing.assert_allclose(res.scores, s, rtol=0, atol=2e-6)
        assert [e["patent_id"] for e in res.extras] == [f"p{i // 4}" for i in r]
    one = index.search(q[0], k=20)
    assert one.ids == hits[0].ids and np.array_equal(one.scores, hits[0].scores)
    assert index.metric == ("cosine" if normalize else "inner_product")


def test_stored_embeddings_are_normalised_rows():
    x = np.array([[3.0, 4.0], [0.0, -2.0]], dtype=np.float32)
    index = DenseIndex.build(x, ["a", "b"], ["P", "Q"])
    np.testing.assert_array_equal(index.embeddings, np.array([[0.6, 0.8], [0.0, -1.0]], dtype=np.float32))
    np.testing.assert_array_equal(index.embedding("b"), np.array([0.0, -1.0], dtype=np.float32))


# ---------------------------------------------------------------------------------------------- recall

# (kind, params, lower bound on recall@10 over 100 queries, 2,000 clustered points, D = 32, seed 0)
RECALL_BOUNDS = [
    ("ivf", {"nlist": 32, "nprobe": 4}, 0.95),
    ("ivfpq", {"nlist": 32, "nprobe": 8, "m": 8, "nbits": 8}, 0.70),
    ("ivfpq", {"nlist": 32, "nprobe": 8, "m": 8, "nbits": 8, "refine": 4}, 0.95),
    ("hnsw", {"M": 16, "efSearch": 32}, 0.98),
]


@pytest.mark.parametrize("kind,params,bound", RECALL_BOUNDS, ids=["ivf", "ivfpq", "ivfpq-refine", "hnsw"])
def test_approximate_recall_against_exact(data, exact, kind, params, bound):
    x, q, ids, pids = data
    index = DenseIndex.build(x, ids, pids, kind, **params)
    assert index.params == dense.resolve_params(kind, params, len(x), x.shape[1])
    recall = recall_against_exact(index, exact, q, k=10)
    assert recall >= bound, f"{kind} {params}: recall@10 {recall:.3f} < {bound}"


def test_ivf_probing_every_list_is_exact(data, exact):
    x, q, ids, pids = data
    index = DenseIndex.build(x, ids, pids, "ivf", nlist=16, nprobe=16)
    assert recall_against_exact(index, exact, q, k=25) == 1.0
    for a, e in zip(index.search_batch(q[:10], 25), exact.search_batch(q[:10], 25), strict=True):
        assert a.ids == e.ids
        np.testing.assert_allclose(a.scores, e.scores, rtol=0, atol=2e-6)


def test_recall_is_share_of_exact_top_k():
    # 2-D toy: the approximate index probes only the list nearest the query, so it misses a figure
    x = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]], dtype=np.float32)
    ids, pids = ["a", "b", "c", "d"], ["A", "B", "C", "D"]
    exact = DenseIndex.build(x, ids, pids)
    ivf = DenseIndex.build(x, ids, pids, "ivf", nlist=2, nprobe=1)
    # the query sits between the clusters but nearer the first: exact top-3 = a, b, d
    q = np.array([[0.8, 0.6]], dtype=np.float32)
    assert exact.search(q[0], 3).ids == ["b", "a", "d"]
    assert ivf.search(q[0], 3).ids == ["b", "a"]  # only the a/b list is probed
    assert recall_against_exact(ivf, exact, q, 3) == pytest.approx(2 / 3)
    ivf.set_search_params(nprobe=2)
    assert recall_against_exact(ivf, exact, q, 3) == 1.0


def test_set_search_params_changes_search_and_params(data):
    x, _, ids, pids = data
    hnsw = DenseIndex.build(x[:200], ids[:200], pids[:200], "hnsw", M=8)
    hnsw.set_search_params(efSearch=128)
    assert hnsw.params["efSearch"] == 128 and hnsw.index.hnsw.efSearch == 128
    with pytest.raises(ValueError) as err:
        hnsw.set_search_params(M=4)
    assert str(err.value) == "cannot change ['M'] on a built 'hnsw' index; search-time options: ['efSearch']"
    ivf = DenseIndex.build(x[:200], ids[:200], pids[:200], "ivf", nlist=8, nprobe=2)
    with pytest.raises(ValueError) as err:
        ivf.set_search_params(nprobe=9)
    assert str(err.value) == "nprobe=9 must be between 1 and nlist=8"
    assert ivf.params["nprobe"] == 2


def test_default_params_follow_n_and_d():
    x, _ = clustered(1000, 1, dim=24)
    ids, pids = names(1000)
    ivfpq = DenseIndex.build(x, ids, pids, "ivfpq")
    # nlist = min(round(sqrt(1000)), 1000 // 39) = 25; nprobe = 25 // 8 = 3; m = 24 / 8; nbits = 8
    assert ivfpq.params == {
        "nlist": 25,
        "nprobe": 3,
        "m": 3,
        "nbits": 8,
        "refine": 0,
        "rescore": 0,
        "seed": 1234,
        "train": None,
    }
    small = DenseIndex.build(x[:100], ids[:100], pids[:100], "ivfpq")
    assert small.params == {
        "nlist": 2,
        "nprobe": 1,
        "m": 3,
        "nbits": 6,
        "refine": 0,
        "rescore": 0,
        "seed": 1234,
        "train": None,
    }


# ---------------------------------------------------------------------------------------------- patents


def test_aggregate_by_patent_hand_worked():
    res = aggregate_by_patent(
        ["b1", "a1", "c1", "b2", "a2", "d1"],
        [0.9, 0.8, 0.7, 0.95, 0.6, 0.8],
        ["B", "A", "C", "B", "A", "D"],
    )
    # B = max(0.9, 0.95) via b2; A = max(0.8, 0.6) via a1; D ties A at 0.8 and appears later; C = 0.7
    assert isinstance(res, Results)
    assert res.ids == ["B", "A", "D", "C"]
    np.testing.assert_array_equal(res.scores, np.array([0.95, 0.8, 0.8, 0.7], dtype=np.float32))
    assert res.extras == [
        {"figure_id": "b2", "figure_hits": 2},
        {"figure_id": "a1", "figure_hits": 2},
        {"figure_id": "d1", "figure_hits": 1},
        {"figure_id": "c1", "figure_hits": 1},
    ]
    assert aggregate_by_patent(["b1", "a1"], [0.9, 0.8], ["B", "A"], k=1).ids == ["B"]


def square_corpus() -> DenseIndex:
    """Five unit vectors in 2-D; query (1, 0) scores f0 1.0, f3 0.8, f2 0.6, f1 0.0, f4 -1.0."""
    x = np.array([[1, 0], [0, 1], [0.6, 0.8], [0.8, 0.6], [-1, 0]], dtype=np.float32)
    return DenseIndex.build(x, ["f0", "f1", "f2", "f3", "f4"], ["P", "Q", "Q", "R", "P"], model="toy")


def test_search_patents_max_over_figures():
    index = square_corpus()
    res = index.search_patents(np.array([1.0, 0.0]), k=3)
    assert res.ids == ["P", "R", "Q"]
    np.testing.assert_allclose(res.scores, [1.0, 0.8, 0.6], rtol=0, atol=1e-6)
    # default fetch 4 * 3 = 12 > 5 figures: every figure is a hit
    assert res.extras == [
        {"figure_id": "f0", "figure_hits": 2},
        {"figure_id": "f3", "figure_hits": 1},
        {"figure_id": "f2", "figure_hits": 2},
    ]


def test_approximate_patent_search_scores_each_patent_by_all_its_figures(data):
    """An IVF index probing one list misses figures, but every patent it returns carries the exact best
    score over all its figures (a missed best view is re-scored from the stored embeddings), ranked by it,
    and the allowed filter holds inside that re-scoring too."""
    x, q, ids, pids = data
    index = DenseIndex.build(x, ids, pids, kind="ivfsq", nlist=32, nprobe=1)
    emb = index.embeddings
    rows_of: dict[str, list[int]] = {}
    for row, pid in enumerate(index.patent_ids):
        rows_of.setdefault(pid, []).append(row)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    allowed = {f"p{i}" for i in range(0, 500, 2)}
    for qi in range(20):
        for only in (None, allowed):
            res = index.search_patents(qn[qi], k=10, allowed=only)
            want = [float(np.max(emb[rows_of[p]] @ qn[qi])) for p in res.ids]
            np.testing.assert_allclose(res.scores, want, rtol=0, atol=1e-5)
            assert list(res.scores) == sorted(res.scores, reverse=True)
            assert only is None or set(res.ids) <= only
            for pid, extra in zip(res.ids, res.extras, strict=True):
                assert index.patent_ids[index.ids.index(extra["figure_id"])] == pid
    # the map it re-scores from (built once; the app's warm-up builds it before the first search)
    assert {p: r.tolist() for p, r in index.prepare_patents().items()} == rows_of
    assert index.prepare_patents() is index.prepare_patents()


def test_search_patents_fetches_more_until_k_patents():
    index = square_corpus()
    # fetch 1 → 1 patent; fetch 4 → f0 f3 f2 f1 → P, R, Q (Q hit twice)
    res = index.search_patents(np.array([1.0, 0.0]), k=3, fetch=1)
    assert res.ids == ["P", "R", "Q"]
    assert [e["figure_hits"] for e in res.extras] == [1, 1, 2]
    batch = index.search_patents_batch(np.array([[1.0, 0.0], [0.0, 1.0]]), k=2)
    assert [r.ids for r in batch] == [["P", "R"], ["Q", "R"]]


# ---------------------------------------------------------------------------------------------- save/load


@pytest.mark.parametrize(
    "kind,params",
    [("flat", {}), ("ivf", {"nlist": 8}), ("ivfpq", {"nlist": 8, "refine": 2}), ("hnsw", {"M": 8})],
)
def test_save_load_round_trip(tmp_path, data, kind, params):
    x, q, ids, pids = data
    built = DenseIndex.build(
        x[:400], ids[:400], pids[:400], kind, model="lite-clip", checkpoint="ckpt/hmcl", **params
    )
    root = built.save(tmp_path / "idx")
    assert sorted(p.name for p in root.iterdir()) == [
        "embeddings.npy",
        "ids.json",
        "index.faiss",
        "params.json",
    ]
    meta = json.loads((root / "params.json").read_text())
    assert {k: meta[k] for k in ("kind", "dim", "count", "metric", "normalize", "model", "checkpoint")} == {
        "kind": kind,
        "dim": 32,
        "count": 400,
        "metric": "cosine",
        "normalize": True,
        "model": "lite-clip",
        "checkpoint": "ckpt/hmcl",
    }
    assert meta["params"] == built.params and meta["embeddings_dtype"] == "float32"
    loaded = DenseIndex.load(root)
    assert (loaded.kind, loaded.params, loaded.ids, loaded.patent_ids) == (
        kind,
        built.params,
        ids[:400],
        pids[:400],
    )
    assert loaded.describe() == built.describe()
    np.testing.assert_array_equal(loaded.embeddings, built.embeddings)
    for a, b in zip(loaded.search_batch(q[:5], 10), built.search_batch(q[:5], 10), strict=True):
        assert a.ids == b.ids and a.extras == b.extras
        np.testing.assert_array_equal(a.scores, b.scores)


def test_save_float16_embeddings(tmp_path):
    index = square_corpus()
    index.save(tmp_path, embeddings_dtype="float16")
    assert np.load(tmp_path / "embeddings.npy").dtype == np.float16
    loaded = DenseIndex.load(tmp_path)
    assert loaded.embeddings.dtype == np.float32
    np.testing.assert_array_equal(loaded.embeddings, index.embeddings.astype(np.float16).astype(np.float32))
    assert json.loads((tmp_path / "params.json").read_text())["embeddings_dtype"] == "float16"


def test_load_rejects_missing_and_inconsistent_files(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        DenseIndex.load(tmp_path)
    assert str(err.value) == (
        f"{tmp_path} is not a dense index directory: missing index.faiss, ids.json, embeddings.npy, params.json"
    )
    square_corpus().save(tmp_path)
    (tmp_path / "ids.json").write_text(json.dumps({"ids": ["f0"], "patent_ids": ["P"]}))
    with pytest.raises(ValueError) as err:
        DenseIndex.load(tmp_path)
    assert str(err.value) == (
        f"{tmp_path}: the files disagree on the number of figures: {{'params.json count': 5, "
        "'index.faiss vectors': 5, 'figure ids': 1, 'patent ids': 1, 'embeddings.npy rows': 5}"
    )


# ---------------------------------------------------------------------------------------------- errors


def error(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as err:
        fn(*args, **kwargs)
    return str(err.value)


def test_search_errors():
    index = square_corpus()
    q = np.array([1.0, 0.0])
    assert error(index.search, q, 6) == "k=6 exceeds the 5 figures in the index; ask for at most 5"
    assert error(index.search, q, 0) == "k must be at least 1, got 0"
    assert error(index.search, np.ones(3), 2) == "query dimension 3 does not match the index dimension 2"
    assert (
        error(index.search_batch, np.ones((2, 3)), 2)
        == "query dimension 3 does not match the index dimension 2"
    )
    assert error(index.search, np.ones((1, 2)), 2) == (
        "search takes one query [D], got shape (1, 2); use search_batch for [Q, D]"
    )
    assert error(index.search, np.zeros(2), 2) == "query row 0 has zero norm and cannot be L2-normalised"
    assert error(index.search, np.array([np.nan, 1.0]), 2) == "queries contain NaN or infinite values"
    assert error(index.search_patents, q, 4) == "k=4 exceeds the 3 patents in the index; ask for at most 3"
    assert error(index.set_search_params, nprobe=2) == (
        "cannot change ['nprobe'] on a built 'flat' index; search-time options: []"
    )


def test_search_on_empty_index():
    empty = DenseIndex(faiss.IndexFlatIP(2), [], [], np.zeros((0, 2), np.float32), "flat", {})
    message = "the index is empty: build it from at least one embedding"
    assert error(empty.search, np.ones(2), 1) == message
    assert error(empty.search_patents, np.ones(2), 1) == message


def test_build_errors():
    x = np.eye(4, dtype=np.float32)
    ids, pids = ["a", "b", "c", "d"], ["A", "A", "B", "B"]
    assert error(DenseIndex.build, np.zeros((0, 8), dtype=np.float32), [], []) == (
        "cannot build an index from 0 embeddings"
    )
    assert (
        error(DenseIndex.build, np.ones(4), ids, pids)
        == "embeddings must be a 2-D array [N, D], got shape (4,)"
    )
    assert error(DenseIndex.build, x, ids[:3], pids) == "got 4 embeddings but 3 figure ids and 4 patent ids"
    assert error(DenseIndex.build, x, ["a", "b", "a", "d"], pids) == (
        "figure ids must be unique; 'a' appears more than once"
    )
    assert error(DenseIndex.build, x * 0, ids, pids) == (
        "embeddings row 0 has zero norm and cannot be L2-normalised"
    )
    assert error(DenseIndex.build, x, ids, pids, "lsh") == (
        "unknown index kind 'lsh'; choose one of ['flat', 'ivf', 'ivfsq', 'ivfpq', 'hnsw']"
    )
    assert error(DenseIndex.build, x, ids, pids, "ivf", nlists=2) == (
        "unknown parameter(s) for kind 'ivf': ['nlists']; allowed: ['nlist', 'nprobe', 'seed', 'train']"
    )
    assert error(DenseIndex.build, x, ids, pids, "ivf", nlist=5) == (
        "nlist=5 must be between 1 and the number of embeddings (4)"
    )
    assert (
        error(DenseIndex.build, x, ids, pids, "ivfpq", m=3)
        == "m=3 sub-quantisers must divide the dimension 4"
    )
    assert error(DenseIndex.build, x, ids, pids, "ivfpq", nbits=3) == (
        "nbits=3 needs at least 8 training embeddings, got 4; use nbits <= 2"
    )


def test_recall_against_exact_needs_same_figures():
    a = square_corpus()
    b = DenseIndex.build(np.eye(2, dtype=np.float32), ["x", "y"], ["X", "Y"])
    assert error(recall_against_exact, a, b, np.ones((1, 2)), 1) == (
        "recall_against_exact needs two indexes over the same figures in the same order"
    )


# ---------------------------------------------------------------------------------------------- embedding


class FakeTensor:
    """Stands in for a torch tensor: only ``detach().float().cpu().numpy()`` is used."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def detach(self):
        return self

    def float(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.a


def test_embed_figures_batches_in_order():
    seen: list[int] = []

    def encode(batch):
        seen.append(len(batch))
        return FakeTensor(np.array([[v, 2 * v, 1.0] for v in batch], dtype=np.float64))

    out = embed_figures(encode, (float(i) for i in range(7)), batch_size=3, progress=False)
    assert seen == [3, 3, 1]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array([[i, 2 * i, 1] for i in range(7)], dtype=np.float32))


def test_embed_figures_counter_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # makes ``from tqdm.auto import tqdm`` fail
    out = embed_figures(lambda b: np.ones((len(b), 2)), list(range(5)), batch_size=2, desc="figs")
    assert out.shape == (5, 2)
    assert capsys.readouterr().err == "figs: 2/5\nfigs: 4/5\nfigs: 5/5\n"


def test_embed_figures_tqdm_bar(capsys):
    embed_figures(lambda b: np.ones((len(b), 2)), list(range(4)), batch_size=4, desc="figs")
    assert "figs: 100%" in capsys.readouterr().err


def test_embed_figures_errors():
    assert error(embed_figures, lambda b: np.ones((len(b), 2)), [], progress=False) == (
        "embed_figures got no images to embed"
    )
    assert error(embed_figures, lambda b: np.ones((1, 2)), [1, 2], batch_size=2, progress=False) == (
        "encode_fn must return [B, D] for a batch of B=2 inputs, got shape (1, 2)"
    )
    dims = iter([2, 3])
    assert error(
        embed_figures, lambda b: np.ones((len(b), next(dims))), [1, 2], batch_size=1, progress=False
    ) == ("encode_fn returned dimension 3 after returning 2")
    assert error(embed_figures, lambda b: b, [1], batch_size=0) == "batch_size must be at least 1, got 0"


def test_num_threads():
    assert faiss_kinds.set_num_threads(2) == 2
    assert faiss_kinds.get_num_threads() == 2
    assert error(faiss_kinds.set_num_threads, 0) == "thread count must be at least 1, got 0"
