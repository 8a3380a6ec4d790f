"""Scale benchmark: build time per 1,000 figures, index memory, query latency and recall@100 against exact
search for the flat, IVF-PQ and HNSW kinds of ``patent_demo.drawing.index.DenseIndex``, up to 1,000,000
vectors of the lite-clip embedding dimension (256).

Vectors: real drawing embeddings are not spread evenly over the sphere. They share a common direction
(every drawing is black lines on white), and they cluster by main class, subclass and patent (the
views of one design). ``make_vectors`` draws that hierarchy, 32 main classes → 8 subclasses each →
patents of 10 figures, plus a shared offset, with the spreads set so the mean cosine of random pairs,
same-subclass pairs and same-patent pairs is close to what the zero-shot encoder gives on the real Red
Book pages. ``--real CORPUS`` embeds a built corpus with the zero-shot encoder and prints those
statistics beside the synthetic ones, so the match is checked in the same run.

Latency is one query at a time (an examiner uploads one drawing), medians and p95 over ``--queries``.
Memory is the size of the serialised FAISS index (what a process holds for it) plus, separately, the
float32 embeddings ``DenseIndex`` keeps for the maps.

    OMP_NUM_THREADS=1 nice -n 10 python bench/bench_scale.py --sizes 100000 1000000 \
        --hnsw-sizes 100000 300000 --real /tmp/corpora/redbook --log docs/bench/bench_scale.log
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

from patent_demo.drawing.faiss_kinds import set_num_threads  # noqa: E402
from patent_demo.drawing.index import DenseIndex  # noqa: E402
from patent_demo.drawing.scale import choose_kind  # noqa: E402

DIM = 256
FIGURES_PER_PATENT = 10
MAINS, SUBS_PER_MAIN = 32, 8
# the spectrum decays as (i+1)^-SPECTRUM in a random basis (real embeddings use few directions); the
# spreads were chosen so the cosine statistics match the zero-shot encoder on real pages (see --real)
SPECTRUM = 0.5
SHARED, MAIN_SPREAD, SUB_SPREAD, PATENT_SPREAD, FIGURE_SPREAD = 1.05, 0.45, 0.3, 0.8, 1.0


def make_vectors(n: int, dim: int = DIM, seed: int = 0, chunk: int = 50_000) -> tuple[np.ndarray, np.ndarray]:
    """``(x [n, dim] float32 unit rows, subclass [n])``: figure = shared direction + main-class + subclass
    + patent + figure offsets, each Gaussian with the spread above and the decaying spectrum."""
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
    return {
        "random_pair": round(rand, 3),
        "same_subclass_other_patent": None
        if within(subclass, patent) is None
        else round(within(subclass, patent), 3),
        "same_patent": None if within(patent) is None else round(within(patent), 3),
        "participation_ratio": round(float(ev.sum() ** 2 / (ev**2).sum()), 1),
    }


def real_stats(corpus_dir: str) -> dict:
    """Embed a built corpus with the zero-shot encoder and return its cosine statistics."""
    from patent_demo.data.corpus import Corpus
    from patent_demo.drawing.embed import embed_corpus_figures
    from patent_demo.drawing.finetune import load_encoder

    corpus = Corpus.load(corpus_dir, validate=False)
    figs = corpus.figures()
    model, tf, _ = load_encoder("lite-clip")
    t0 = time.perf_counter()
    x = embed_corpus_figures(model, tf, corpus, figs, batch_size=16)
    secs = time.perf_counter() - t0
    patents = np.array([p.id for p, _ in figs])
    subs = np.array([p.locarno or next(iter(p.codes.values()), [""])[0] for p, _ in figs])
    out = cosine_stats(x, patents, subs)
    out.update(
        corpus=str(corpus_dir), figures=len(figs), embed_seconds_per_1000=round(1000 * secs / len(figs), 1)
    )
    return out


def index_bytes(index: faiss.Index) -> int:
    return int(faiss.serialize_index(index).nbytes)


def bench_kind(
    kind: str, x: np.ndarray, queries: np.ndarray, truth: np.ndarray, k: int, params: dict
) -> dict:
    ids = [str(i) for i in range(len(x))]
    t0 = time.perf_counter()
    index = DenseIndex.build(x, ids, ids, kind=kind, normalize=False, **params)
    build = time.perf_counter() - t0
    lat = []
    found = []
    for q in queries:
        t = time.perf_counter()
        _, rows = index.search_raw(q[None, :], k)
        lat.append(time.perf_counter() - t)
        found.append(rows[0])
    recall = float(
        np.mean([len(set(f.tolist()) & set(t.tolist())) / k for f, t in zip(found, truth, strict=True)])
    )
    row = {
        "kind": kind, "n": len(x), "params": index.params, "build_s": round(build, 2),
        "build_s_per_1000": round(1000 * build / len(x), 4), "index_mb": round(index_bytes(index.index) / 2**20, 1),
        "embeddings_mb": round(index.embeddings.nbytes / 2**20, 1),
        "latency_ms_p50": round(1000 * float(np.median(lat)), 3),
        "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 3), f"recall@{k}": round(recall, 4),
    }  # fmt: skip
    del index
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="flat and IVF-PQ sizes")
    p.add_argument("--hnsw-sizes", type=int, nargs="*", default=[100_000], help="HNSW sizes (slow to build)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--real", default=None, help="a built corpus to compare cosine statistics with")
    p.add_argument("--ivfpq", nargs="+", default=["refine=0", "refine=4"],
                   help="IVF-PQ settings to measure, e.g. 'nprobe=32,refine=4' (codes only with refine=0)")  # fmt: skip
    p.add_argument("--hnsw", default="efSearch=128", help="HNSW parameters (efSearch >= k for recall@k)")
    p.add_argument("--log", default=None, help="append each result line (JSON) here as it is measured")
    args = p.parse_args(argv)
    set_num_threads(args.threads)
    parse = lambda s: {k: int(v) for k, v in (kv.split("=") for kv in s.split(",") if kv)}  # noqa: E731
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115

    def emit(obj: dict) -> None:
        line = json.dumps(obj)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    emit({"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(), "threads": args.threads,
          "load": os.getloadavg(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})  # fmt: skip
    if args.real:
        emit({"real_embeddings": real_stats(args.real)})
    largest = max([*args.sizes, *args.hnsw_sizes])
    t0 = time.perf_counter()
    x_all, sub_all = make_vectors(largest + args.queries, seed=0)
    emit({"generated": largest + args.queries, "seconds": round(time.perf_counter() - t0, 1)})
    queries, base_all, base_sub = x_all[-args.queries :], x_all[:largest], sub_all[:largest]
    patents = np.arange(largest) // FIGURES_PER_PATENT
    emit({"synthetic_embeddings": cosine_stats(base_all[:200_000], patents[:200_000], base_sub[:200_000])})
    for n in sorted(set(args.sizes) | set(args.hnsw_sizes)):
        x = base_all[:n]
        exact = faiss.IndexFlatIP(x.shape[1])
        exact.add(x)
        _, truth = exact.search(queries, args.k)
        del exact
        runs = [("flat", {})] if n in args.sizes else []
        runs += [("ivfpq", parse(s)) for s in args.ivfpq] if n in args.sizes else []
        runs += [("hnsw", parse(args.hnsw))] if n in args.hnsw_sizes else []
        for kind, params in runs:
            row = bench_kind(kind, x, queries, truth, args.k, params)
            row["app_would_pick"] = choose_kind(n)
            emit(row)
    if log:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
