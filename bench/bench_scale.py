"""Scale benchmark: recall@100 against exact search, p50 / p95 latency (one query at a time), build time
and index memory of every ``DenseIndex`` kind (flat, IVF-Flat, IVF-SQ8 / IVF-fp16 and IVF-PQ with exact
re-scoring from the stored embeddings, HNSW) at several nprobe / rescore / efSearch settings, at 100k,
300k and 1M figures; the per-patent over-fetch at which the patent top 10 equals exact search's; and the
start time and RSS of opening a saved 1M index memory-mapped. One JSON record per measurement.

Vectors: real drawing embeddings are not spread evenly over the sphere. They share a common direction
(every drawing is black lines on white), and they cluster by main class, subclass and patent (the
views of one design). ``make_vectors`` draws that hierarchy, 32 main classes -> 8 subclasses each ->
patents of 10 figures, plus a shared offset, with the spreads set so the mean cosine of random pairs,
same-subclass pairs and same-patent pairs is close to what the encoder gives on the real Red Book
pages. ``--real INDEX_DIR`` (a saved index of real figures) mixes those real embeddings into every base
set and prints their statistics beside the synthetic ones.

``--table`` writes the records the app chooses from (``patent_demo/index/scale_table.json``, read by
``patent_demo.index.scale.choose_settings``); ``--render LOG`` rewrites the table in docs/scale.md from
a log (``bench_scale_render.render_markdown``).

    OMP_NUM_THREADS=2 nice -n 10 python bench/bench_scale.py --sizes 100000 300000 1000000 \
        --real /tmp/scale/redbook --mmap-dir /tmp/scale/mmap1m/idx --log docs/bench/bench_scale.log \
        --table patent_demo/index/scale_table.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss  # noqa: E402

from patent_demo.index.dense import DenseIndex  # noqa: E402
from patent_demo.index.faiss_kinds import set_num_threads  # noqa: E402
from patent_demo.index.scale import describe_choice, pick  # noqa: E402

DIM = 256
FIGURES_PER_PATENT = 10
MAINS, SUBS_PER_MAIN = 32, 8
# the spectrum decays as (i+1)^-SPECTRUM in a random basis (real embeddings use few directions); the
# spreads were chosen so the cosine statistics match the zero-shot encoder on real pages (see --real)
SPECTRUM = 0.5
SHARED, MAIN_SPREAD, SUB_SPREAD, PATENT_SPREAD, FIGURE_SPREAD = 1.05, 0.45, 0.3, 0.8, 1.0


def make_vectors(
    n: int, dim: int = DIM, seed: int = 0, chunk: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(x [n, dim] float32 unit rows, subclass [n])``: figure = shared direction + main-class + subclass
    + patent + figure offsets, each Gaussian with the spread above and the decaying spectrum. ``chunk``
    patents are drawn at a time (default 50,000; 10,000 above 512-d, whose float64 draws would need
    tens of GB at once)."""
    chunk = chunk or (50_000 if dim <= 512 else 10_000)
    rng = np.random.default_rng(seed)
    scale = (np.arange(dim) + 1.0) ** -SPECTRUM
    scale /= np.sqrt((scale**2).sum())
    basis, _ = np.linalg.qr(rng.normal(size=(dim, dim)))

    def noise(k: int, spread: float) -> np.ndarray:
        return ((rng.normal(size=(k, dim)) * (scale * spread)) @ basis.T).astype(np.float32)

    shared = rng.normal(size=dim).astype(np.float32)
    shared /= np.linalg.norm(shared)
    subs = np.repeat(noise(MAINS, MAIN_SPREAD), SUBS_PER_MAIN, axis=0) + noise(
        MAINS * SUBS_PER_MAIN, SUB_SPREAD
    )
    n_patents = -(-n // FIGURES_PER_PATENT)
    patent_sub = rng.integers(0, len(subs), n_patents)
    x = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n_patents, chunk):
        stop = min(n_patents, start + chunk)
        centres = SHARED * shared + subs[patent_sub[start:stop]] + noise(stop - start, PATENT_SPREAD)
        figs = np.repeat(centres, FIGURES_PER_PATENT, axis=0)
        figs += noise(len(figs), FIGURE_SPREAD)
        a, b = start * FIGURES_PER_PATENT, min(n, stop * FIGURES_PER_PATENT)
        x[a:b] = figs[: b - a]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, np.repeat(patent_sub, FIGURES_PER_PATENT)[:n]


def cosine_stats(
    x: np.ndarray, patent: np.ndarray, subclass: np.ndarray, pairs: int = 20000, seed: int = 1
) -> dict:
    """Mean cosine of random pairs, same-subclass (other patent) pairs and same-patent pairs, and the
    participation ratio of the spectrum (effective dimension)."""
    rng = np.random.default_rng(seed)
    n = len(x)
    i, j = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    keep = i != j
    rand = float(np.mean(np.sum(x[i[keep]] * x[j[keep]], axis=1)))

    def within(labels: np.ndarray, exclude: np.ndarray | None = None) -> float | None:
        order = np.argsort(labels, kind="stable")
        vals = []
        for _ in range(pairs):
            a = order[rng.integers(0, n)]
            same = np.flatnonzero(labels == labels[a])
            if exclude is not None:
                same = same[exclude[same] != exclude[a]]
            same = same[same != a]
            if len(same):
                vals.append(float(x[a] @ x[same[rng.integers(0, len(same))]]))
            if len(vals) >= 2000:
                break
        return float(np.mean(vals)) if vals else None

    sample = x[rng.choice(n, min(n, 20000), replace=False)]
    ev = np.linalg.eigvalsh(np.cov(sample.T.astype(np.float64)))
    _, first = np.unique(patent, return_index=True)  # one figure of each patent
    if len(first) >= 1000:  # as the 1,000 one-drawing patents of the USPC 2007 sample are measured
        ev1 = np.linalg.eigvalsh(np.cov(x[rng.choice(first, 1000, replace=False)].T.astype(np.float64)))
    return {
        "random_pair": round(rand, 3),
        "same_subclass_other_patent": None
        if within(subclass, patent) is None
        else round(within(subclass, patent), 3),
        "same_patent": None if within(patent) is None else round(within(patent), 3),
        "participation_ratio": round(float(ev.sum() ** 2 / (ev**2).sum()), 1),
        "participation_ratio_1000_patents": round(float(ev1.sum() ** 2 / (ev1**2).sum()), 1)
        if len(first) >= 1000
        else None,
    }


def load_real(index_dir: str) -> tuple[np.ndarray, list[str]]:
    """The embeddings and patent ids of a saved index of real figures."""
    root = Path(index_dir)
    x = np.load(root / "embeddings.npy").astype(np.float32)
    pids = json.loads((root / "ids.json").read_text())["patent_ids"]
    return x / np.linalg.norm(x, axis=1, keepdims=True), pids


def index_bytes(index: faiss.Index) -> int:
    return int(faiss.serialize_index(index).nbytes)


def timed_queries(index: DenseIndex, queries: np.ndarray, k: int) -> tuple[list[float], np.ndarray]:
    """Per-query seconds and the found rows ``[Q, k]``, one query at a time (an examiner's upload)."""
    lat, found = [], []
    for q in queries:
        t = time.perf_counter()
        _, rows = index.search_raw(q[None, :], k)
        lat.append(time.perf_counter() - t)
        found.append(rows[0])
    return lat, np.stack(found)


def per_query_recall(found: np.ndarray, truth: np.ndarray) -> np.ndarray:
    k = truth.shape[1]
    return np.asarray([len(set(f.tolist()) & set(t.tolist())) / k for f, t in zip(found, truth, strict=True)])


def record(index: DenseIndex, n: int, lat: list[float], rec: np.ndarray, k: int, build: float) -> dict:
    """One measurement; ``rec`` the per-query recall@k (its mean and standard error are recorded)."""
    rec = np.asarray(rec, dtype=np.float64)
    se = float(rec.std(ddof=1) / np.sqrt(len(rec))) if len(rec) > 1 else 0.0
    return {
        "kind": index.kind,
        "n": n,
        "dim": index.dim,
        "params": dict(index.params),
        "build_s": round(build, 1),
        "index_mb": round(index_bytes(index.index) / 2**20, 1),
        "embeddings_mb": round(index.embeddings.nbytes / 2**20, 1),
        "latency_ms_p50": round(1000 * float(np.median(lat)), 3),
        "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 3),
        f"recall@{k}": round(float(rec.mean()), 4),
        f"recall@{k}_se": round(se, 4),
        "queries": len(lat),
        "load": [round(v, 2) for v in os.getloadavg()],
    }


def sweep(
    index: DenseIndex,
    n: int,
    queries: np.ndarray,
    truth: np.ndarray,
    k: int,
    build: float,
    grid: list[dict],
    emit,
) -> list[dict]:
    """Measure ``index`` at each search-parameter setting of ``grid`` (no rebuild between them)."""
    rows = []
    for params in grid:
        index.set_search_params(**params)
        lat, found = timed_queries(index, queries, k)
        rows.append(record(index, n, lat, per_query_recall(found, truth), k, build))
        emit(rows[-1])
    return rows


TIE = 1e-6  # cosines this close are a tie: float32 sums in another order differ by about 1e-7


def exact_patent_top(
    truth_rows: np.ndarray, patent_of: np.ndarray, k: int, truth_scores: np.ndarray | None = None
) -> list[list[tuple[int, float]]]:
    """The exact per-patent top k as ``[(patent, score)]``: the first k distinct patents of the exact
    figure ranking (a patent scores its best figure; ``truth_scores`` the exact figure scores)."""
    out = []
    for i, rows in enumerate(truth_rows):
        seen: dict[int, float] = {}
        for j, r in enumerate(rows):
            p = int(patent_of[r])
            if p not in seen:
                seen[p] = float("nan") if truth_scores is None else float(truth_scores[i, j])
                if len(seen) == k:
                    break
        out.append(list(seen.items()))
    return out


def patent_overfetch(
    index: DenseIndex,
    queries: np.ndarray,
    exact: list[list[tuple[int, float]]],
    k: int,
    factors: list[int],
    nprobes: list[int] = (0,),
) -> list[dict]:
    """For each over-fetch factor f (``fetch = f * k`` figures) and lists probed (IVF kinds; 0: the
    index's nprobe), the share of queries whose patent top k equals exact search's: ``exact_share``, the
    same score at every rank (to ``TIE``: two patents whose best figures tie may come in either order);
    ``equal_share``, the same patents in the same order; ``same_set_share``, the same patents."""
    out = []
    for nprobe in nprobes:
        index.patent_nprobe = nprobe
        for f in factors:
            same, same_set, same_scores, lat = 0, 0, 0, []
            for q, want in zip(queries, exact, strict=True):
                t = time.perf_counter()
                res = index.search_patents(q, k, fetch=f * k)
                lat.append(time.perf_counter() - t)
                got = [int(p) for p in res.ids]
                want_ids = [p for p, _ in want]
                same += got == want_ids
                same_set += set(got) == set(want_ids)
                same_scores += len(got) == len(want) and bool(
                    np.all(np.abs(np.asarray(res.scores, np.float64) - [s for _, s in want]) <= TIE)
                )
            out.append(
                {
                    "nprobe": nprobe,
                    "factor": f,
                    "exact_share": round(same_scores / len(exact), 4),
                    "equal_share": round(same / len(exact), 4),
                    "same_set_share": round(same_set / len(exact), 4),
                    "latency_ms_p50": round(1000 * float(np.median(lat)), 3),
                    "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 3),
                }
            )
    index.patent_nprobe = 0
    return out


def patent_settings(
    index: DenseIndex, queries: np.ndarray, exact: list[list[int]], factors: list[int], emit
) -> tuple[int | None, int]:
    """Measure the per-patent top 10 of ``index`` against exact search over over-fetch factors and, for
    IVF kinds, 1x-8x the index's nprobe; returns ``(factor, nprobe)`` of the fastest setting whose top 10
    equals exact search's for every query (``(None, 0)``: none did)."""
    nprobes = [0]
    if "nprobe" in index.params:
        nl, base = int(index.params["nlist"]), int(index.params["nprobe"])
        nprobes = sorted({min(nl, base * m) for m in (1, 2, 4, 8)})
    over = patent_overfetch(index, queries, exact, 10, factors, nprobes)
    exact_rows = [o for o in over if o.get("exact_share", o["equal_share"]) == 1.0]
    best = min(exact_rows, key=lambda o: o["latency_ms_p50"], default=None)
    emit(
        {
            "patent_overfetch": {
                "n": index.count,
                "kind": index.kind,
                "params": index.params,
                "top": 10,
                "factors": over,
                "first_exact_factor": best and best["factor"],
                "exact_nprobe": best and best["nprobe"],
            }
        }
    )
    return (best["factor"], best["nprobe"]) if best else (None, 0)


def hnsw_capped(x: np.ndarray, budget_s: float, chunk: int = 50_000, M: int = 32, ef: int = 80) -> dict:
    """Add ``x`` to an HNSW graph in chunks until done or ``budget_s`` of build has passed."""
    index = faiss.IndexHNSWFlat(x.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef
    t0 = time.perf_counter()
    while index.ntotal < len(x) and time.perf_counter() - t0 < budget_s:
        index.add(x[index.ntotal : index.ntotal + chunk])
    return {"index": index, "added": int(index.ntotal), "seconds": round(time.perf_counter() - t0, 1)}


def nlist_for(n: int) -> int:
    """~2 sqrt(N) lists, a power of two (512 at 100k, 1024 at 300k, 2048 at 1M)."""
    return int(2 ** round(np.log2(2 * np.sqrt(n))))


def measure_size(
    n: int, base: np.ndarray, patent_of: np.ndarray, queries: np.ndarray, args, emit
) -> list[dict]:
    x = base[:n]
    k = args.k
    exact = faiss.IndexFlatIP(x.shape[1])
    exact.add(x)
    truth_scores, truth = exact.search(queries, max(k, 1000))
    del exact
    truth_k = truth[:, :k]
    ids = [str(i) for i in range(n)]
    pids = [str(p) for p in patent_of[:n]]
    nl = nlist_for(n)
    probes = [p for p in args.nprobe if p <= nl]
    plans = [("flat", {}, [{}]), ("ivf", {"nlist": nl, "train": args.train}, [{"nprobe": p} for p in probes])]
    if 0 in args.pca:
        plans += [
            (
                "ivfsq",
                {"nlist": nl, "train": args.train, "qtype": "sq8", "rescore": 4},
                [{"nprobe": p, "rescore": r} for p in probes for r in (0, 2, 4)],
            ),
            ("ivfsq", {"nlist": nl, "train": args.train, "qtype": "fp16"}, [{"nprobe": p} for p in probes]),
        ]
    # the codes of the first ``pca`` principal components, re-scored exactly in the full dimension
    plans += [
        (
            "ivfsq",
            {"nlist": nl, "train": args.train, "qtype": "sq8", "pca": d, "rescore": 4},
            [{"nprobe": p, "rescore": r} for p in probes for r in (2, 4, 8)],
        )
        for d in args.pca
        if d
    ]
    plans.append(
        (
            "ivfpq",
            {"nlist": nl, "train": args.train, "m": 32, "rescore": 10},
            [{"nprobe": p, "rescore": r} for p in probes for r in (4, 10)],
        )
    )
    rows: list[dict] = []
    for kind, build_params, grid in plans:
        if kind not in args.kinds:
            continue
        t0 = time.perf_counter()
        index = DenseIndex.build(x, ids, pids, kind=kind, normalize=False, **build_params)
        build = time.perf_counter() - t0
        qs = queries[: args.flat_queries] if kind == "flat" and n > 300_000 else queries
        rows += sweep(index, n, qs, truth_k[: len(qs)], k, build, grid, emit)
        del index
    if "hnsw" in args.kinds:
        built = hnsw_capped(x, args.hnsw_budget)
        emit(
            {
                "hnsw_build": {
                    "n": n,
                    "added": built["added"],
                    "seconds": built["seconds"],
                    "budget_s": args.hnsw_budget,
                    "complete": built["added"] == n,
                }
            }
        )
        if built["added"] == n:
            index = DenseIndex(
                built["index"],
                ids,
                pids,
                x,
                "hnsw",
                {"M": 32, "efConstruction": 80, "efSearch": 64},
                normalize=False,
            )
            rows += sweep(
                index, n, queries, truth_k, k, built["seconds"], [{"efSearch": e} for e in args.ef], emit
            )
    # the settings the app would take at this size, and their per-patent over-fetch
    exact_top = exact_patent_top(truth, patent_of, 10, truth_scores)
    choice, index = settle_pick(rows, n, x, ids, pids, queries, exact_top, args.fetch, emit)
    if index is not None and n == max(args.sizes) and args.mmap_dir:
        emit({"mmap_open": mmap_open(index, Path(args.mmap_dir), queries[0])})
    return rows


def settle_pick(
    records: list[dict],
    n: int,
    x: np.ndarray,
    ids: list[str],
    pids: list[str],
    queries: np.ndarray,
    exact_top: list,
    fetch: list[int],
    emit,
) -> tuple[dict | None, DenseIndex | None]:
    """The record ``pick`` takes from ``records`` for ``n`` figures, with its per-patent search measured
    (``patent_fetch`` / ``patent_nprobe`` written into it) and its built index; a pick whose patent top 10
    is exact at no setting tried is marked ``patent_exact: False`` (``scale.exact_scores`` then passes it
    over) and the next pick measured. ``(None or the flat record, None)`` when no approximate kind is left."""
    while (choice := pick(records, n, x.shape[1])) is not None and choice["kind"] != "flat":
        emit({"pick": {"n": n, "choice": describe_choice(choice)}})
        index = DenseIndex.build(x, ids, pids, kind=choice["kind"], normalize=False, **choice["params"])
        got, nprobe = patent_settings(index, queries, exact_top, fetch, emit)
        choice["patent_exact"] = got is not None
        if got is not None:
            choice["patent_fetch"], choice["patent_nprobe"] = got, nprobe
            return choice, index
        del index
    emit({"pick": {"n": n, "choice": describe_choice(choice) if choice else None}})
    return choice, None


OPEN_SCRIPT = """
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import numpy as np
from patent_demo.index.dense import DenseIndex
t1 = time.perf_counter()
index = DenseIndex.load({path!r}, mmap={mmap})
t2 = time.perf_counter()
q = np.load({query!r})
index.search(q, 100)
t3 = time.perf_counter()
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(("VmRSS", "VmHWM"))]
print(json.dumps({{"mmap": {mmap}, "import_s": round(t1 - t0, 2), "open_s": round(t2 - t1, 2),
                  "first_query_s": round(t3 - t2, 3), "rss_mb": round(rss[1] / 1024, 1),
                  "peak_rss_mb": round(rss[0] / 1024, 1)}}))
"""


def mmap_open(index: DenseIndex, root: Path, query: np.ndarray) -> list[dict]:
    """Save ``index`` under ``root`` and measure :func:`open_costs` of it."""
    index.save(root)
    return open_costs(root, query)


def open_costs(root: Path, query: np.ndarray) -> list[dict]:
    """Open a saved index in a fresh process, read whole and memory-mapped: start time and RSS
    (``/proc/self/status`` VmRSS, VmHWM) after the open and one query."""
    import subprocess
    import tempfile

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "query.npy", query)
        for mmap in (False, True):
            script = OPEN_SCRIPT.format(
                root=str(Path(__file__).resolve().parents[1]),
                path=str(root),
                mmap=mmap,
                query=str(Path(tmp) / "query.npy"),
            )
            res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
            out.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


def _setting(dim: int, r: dict) -> tuple:
    params = {k: v for k, v in r["params"].items() if not (k == "pca" and not v)}  # older runs: no "pca"
    return dim, r["n"], r["kind"], json.dumps(params, sort_keys=True)


def read_logs(*paths: str) -> list[dict]:
    """The records of one or more logs, the newest measurement of each setting: the runs of every log (a
    run starts with its ``command`` header) in the order of their start times; for each dimension, size,
    kind and setting the record of the last run that measured it, with the per-patent measurement
    (``--patents`` runs included) of the last run that measured it, unless the setting was measured
    again after it; and the latest of each statistics, build and open record. Records of the first
    format (no ``dim``) are left out: every setting they hold was measured again."""
    runs: list[tuple[str, int, list[dict]]] = []
    for order, path in enumerate(paths):
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if "command" in obj:
                runs.append((obj.get("time", ""), order, []))
            runs[-1][2].append(obj)
    runs.sort(key=lambda r: (r[0], r[1]))
    rows: dict[tuple, tuple[int, dict]] = {}
    patent: dict[tuple, tuple[int, dict]] = {}
    other: dict[tuple, dict] = {}
    for age, (_, _, run) in enumerate(runs):
        dim = run[0].get("dim", DIM)
        for r in run[1:]:
            if "recall@100" in r:
                if "dim" in r:
                    rows[_setting(r["dim"], r)] = (age, r)
            elif "patent_overfetch" in r:  # (its run's dimension goes with it)
                patent[_setting(dim, r["patent_overfetch"])] = (age, {**r, "dim": dim})
            else:
                name = next(iter(r))  # "synthetic_embeddings", "hnsw_build", "mmap_open", ...
                sub = r[name].get("n") if isinstance(r[name], dict) else None
                other[(dim, name, sub)] = r
    out = [r for _, r in rows.values()]
    out += [r for key, (age, r) in patent.items() if age >= rows.get(key, (-1,))[0]]
    return out + list(other.values())


def read_log(path: str) -> list[dict]:
    """``read_logs`` of one log."""
    return read_logs(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    p.add_argument("--dim", type=int, default=DIM)
    p.add_argument("--kinds", nargs="+", default=["flat", "ivf", "ivfsq", "ivfpq", "hnsw"])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--flat-queries", type=int, default=40, help="queries for flat search above 300k (slow)")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--nprobe", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    p.add_argument("--train", type=int, default=64, help="k-means training points per IVF list")
    p.add_argument("--ef", type=int, nargs="+", default=[128, 256, 512], help="HNSW efSearch settings")
    p.add_argument("--hnsw-budget", type=float, default=900.0, help="seconds of HNSW build before giving up")
    p.add_argument(
        "--fetch", type=int, nargs="+", default=[2, 4, 8, 16], help="per-patent over-fetch factors"
    )
    p.add_argument(
        "--pca",
        type=int,
        nargs="+",
        default=[0],
        help="IVF-SQ8 over the first PCA components (0: the full dimension), re-scored exactly",
    )
    p.add_argument("--real", default=None, help="a saved index of real figures, mixed into the base")
    p.add_argument(
        "--real-stats",
        nargs="*",
        default=[],
        metavar="INDEX_DIR",
        help="[LABEL=]INDEX_DIR of other real figures: their statistics are printed, not mixed in",
    )
    p.add_argument("--mmap-dir", default=None, help="save the largest picked index here and time opening it")
    p.add_argument("--log", default=None, help="append each record (JSON) here as it is measured")
    p.add_argument("--table", default=None, help="write the measured records the app chooses from here")
    p.add_argument(
        "--shared", type=float, default=SHARED, help="spread of the shared direction (random-pair cosine)"
    )
    p.add_argument("--spectrum", type=float, default=SPECTRUM, help="spectrum decay (effective dimension)")
    p.add_argument(
        "--patents",
        action="store_true",
        help="only measure the per-patent search of the picks in --table and write it back",
    )
    p.add_argument(
        "--render",
        default=None,
        nargs="+",
        metavar="LOG",
        help="only print the tables of LOG(s) (python scripts/figures.py writes docs/scale.md)",
    )
    p.add_argument(
        "--table-from-log",
        default=None,
        nargs="+",
        metavar="LOG",
        help="only write --table from the records of each LOG's last full run at --dim (their union) and the "
        "per-patent settings measured in them",
    )
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale_render import apply_patent, render_markdown

    if args.render:
        print(render_markdown(read_logs(*args.render)))  # scripts/figures.py writes docs
        return 0
    if args.table_from_log:
        logs = read_logs(*args.table_from_log)
        rows = [r for r in logs if "recall@100" in r and r["dim"] == args.dim]
        rows = apply_patent(rows, logs)
        write_table(Path(args.table), rows, args.dim)
        return 0
    set_num_threads(args.threads)
    globals().update(SHARED=args.shared, SPECTRUM=args.spectrum)  # make_vectors reads them
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115

    def emit(obj: dict) -> None:
        line = json.dumps(obj)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    emit(
        {
            "command": " ".join(sys.argv),
            "dim": args.dim,
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "threads": args.threads,
            "load": os.getloadavg(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    queries, base, patent_of = base_set(args, emit)
    if args.patents:
        return patents_only(args, queries, base, patent_of, emit)
    rows: list[dict] = []
    for n in sorted(args.sizes):
        rows += measure_size(n, base, patent_of, queries, args, emit)
    if args.table:  # the records of other dimensions (another run) are kept
        write_table(Path(args.table), rows, args.dim)
    if log:
        log.close()
    return 0


def write_table(table: Path, rows: list[dict], dim: int) -> None:
    old = json.loads(table.read_text()) if table.is_file() else {"commands": [], "records": []}
    keep = [r for r in old["records"] if r.get("dim") != dim]
    commands = [c for c in old.get("commands", []) if c.get("dim") != dim]
    commands.append({"dim": dim, "command": " ".join(sys.argv)})
    table.write_text(json.dumps({"commands": commands, "records": keep + rows}, indent=1) + "\n")


def patents_only(args, queries: np.ndarray, base: np.ndarray, patent_of: np.ndarray, emit) -> int:
    """``--patents``: for each size, the per-patent search of the pick in ``--table`` (rebuilt), measured
    against exact search; the fastest exact setting is written back into the table's record."""
    table = json.loads(Path(args.table).read_text())
    mine = [r for r in table["records"] if r.get("dim") == args.dim]
    for n in sorted(args.sizes):
        x = base[:n]
        exact = faiss.IndexFlatIP(x.shape[1])
        exact.add(x)
        truth_scores, truth = exact.search(queries, 1000)
        del exact
        ids, pids = [str(i) for i in range(n)], [str(p) for p in patent_of[:n]]
        exact_top = exact_patent_top(truth, patent_of, 10, truth_scores)
        settle_pick(mine, n, x, ids, pids, queries, exact_top, args.fetch, emit)
    Path(args.table).write_text(json.dumps(table, indent=1) + "\n")
    return 0


def base_set(args, emit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, base vectors (the real ones mixed into the first rows) and the patent of each row. The
    queries are one figure of each of ``--queries`` held-out patents (drawn after the base set), so no
    two queries share a patent and its neighbourhood."""
    largest = max(args.sizes)
    t0 = time.perf_counter()
    held_out = args.queries * FIGURES_PER_PATENT
    x_all, sub_all = make_vectors(largest + held_out, dim=args.dim, seed=0)
    emit({"generated": largest + held_out, "seconds": round(time.perf_counter() - t0, 1)})
    queries = np.ascontiguousarray(x_all[largest:][::FIGURES_PER_PATENT][: args.queries])
    base, sub_all = x_all[:largest], sub_all[:largest]
    patent_of = np.arange(largest) // FIGURES_PER_PATENT
    emit({"synthetic_embeddings": cosine_stats(base[:200_000], patent_of[:200_000], sub_all[:200_000])})
    if args.real:
        real, real_pids = load_real(args.real)
        if real.shape[1] == args.dim:
            # the real figures take the first rows (patent numbers after the synthetic ones)
            codes = {p: i for i, p in enumerate(dict.fromkeys(real_pids))}
            base[: len(real)] = real
            patent_of[: len(real)] = [patent_of[-1] + 1 + codes[p] for p in real_pids]
            emit(
                {
                    "real_embeddings": {
                        "index": args.real,
                        "figures": len(real),
                        "mixed_in": True,
                        **cosine_stats(real, np.array(real_pids), np.array(real_pids)),
                    }
                }
            )
    for other in args.real_stats:  # further real collections, only compared (not mixed in)
        label, _, other = other.rpartition("=")
        real, real_pids = load_real(other)
        emit(
            {
                "real_stats": {
                    "label": label or Path(other).name,
                    "index": other,
                    "figures": len(real),
                    "dim": int(real.shape[1]),
                    **cosine_stats(real, np.array(real_pids), np.array(real_pids)),
                }
            }
        )
    return queries, base, patent_of


if __name__ == "__main__":
    sys.exit(main())
