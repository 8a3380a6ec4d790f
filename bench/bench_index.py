"""Dense index benchmark: build time, query latency p50/p95 and recall@k against exact search for the
flat, IVF-Flat, IVF-PQ and HNSW kinds of ``patent_demo.index.dense.DenseIndex``.

The default corpus is 10,000 random unit vectors at D = 256 (the lite-clip embedding dimension),
the hardest case for the approximate kinds since random directions have no cluster structure;
``--data clustered`` draws Gaussian blobs instead, closer to real drawing embeddings. Latency is
measured one query at a time (an examiner uploads one drawing), plus batched throughput.

    python bench/bench_index.py                       # the default table
    python bench/bench_index.py --set ivf.nprobe=32 --set hnsw.efSearch=128 --threads 2

Embeddings come from ``make_vectors``; an encoder-backed source (upload → top-k including the
encoder forward pass) plugs in there without touching the timing code.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patent_demo.index import faiss_kinds  # noqa: E402
from patent_demo.index.dense import KINDS, DenseIndex  # noqa: E402
from patent_demo.index.scale import recall_against_exact  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10_000, help="number of figures in the index")
    p.add_argument("--dim", type=int, default=256, help="embedding dimension D")
    p.add_argument("--queries", type=int, default=200, help="number of queries timed and scored")
    p.add_argument("--k", type=int, default=50, help="k for the timed searches and for recall@k")
    p.add_argument("--figures-per-patent", type=int, default=4, help="figures sharing one patent id")
    p.add_argument(
        "--data",
        choices=("random", "clustered"),
        default="random",
        help="random unit vectors, or Gaussian blobs around --clusters random centres",
    )
    p.add_argument("--clusters", type=int, default=100, help="number of blobs for --data clustered")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated index kinds to benchmark")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KIND.NAME=VALUE",
        help="an index parameter, e.g. ivf.nprobe=32 or hnsw.M=16 (repeatable; integers)",
    )
    p.add_argument("--threads", type=int, default=1, help="FAISS OpenMP threads (0: all cores)")
    p.add_argument("--seed", type=int, default=0, help="seed for the vectors")
    return p.parse_args(argv)


def parse_sets(items: list[str], kinds: list[str]) -> dict[str, dict[str, int]]:
    """``["ivf.nprobe=32"]`` → ``{"ivf": {"nprobe": 32}}``."""
    out: dict[str, dict[str, int]] = {kind: {} for kind in kinds}
    for item in items:
        try:
            key, value = item.split("=", 1)
            kind, name = key.split(".", 1)
            out.setdefault(kind, {})[name] = int(value)
        except ValueError:
            raise SystemExit(f"--set {item!r}: expected KIND.NAME=INTEGER, e.g. ivf.nprobe=32") from None
    return out


def make_vectors(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, str]:
    """Corpus ``[N, D]`` and queries ``[Q, D]`` float32, unit rows, plus a one-line description."""
    rng = np.random.default_rng(args.seed)
    if args.data == "random":
        x = rng.standard_normal((args.n + args.queries, args.dim)).astype(np.float32)
        what = f"{args.n} random unit vectors, D={args.dim}"
    else:
        centres = rng.standard_normal((args.clusters, args.dim)).astype(np.float32)
        labels = rng.integers(0, args.clusters, args.n + args.queries)
        noise = rng.standard_normal((args.n + args.queries, args.dim)).astype(np.float32)
        x = centres[labels] + noise
        what = f"{args.n} clustered unit vectors ({args.clusters} blobs), D={args.dim}"
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x[: args.n], x[args.n :], what


def bench_kind(
    kind: str,
    params: dict[str, int],
    x: np.ndarray,
    q: np.ndarray,
    exact: DenseIndex | None,
    k: int,
    fpp: int,
) -> dict[str, object]:
    """Build one index and time it: build seconds, single-query p50/p95 ms, batch queries/s, recall@k."""
    ids = [f"f{i}" for i in range(len(x))]
    pids = [f"p{i // fpp}" for i in range(len(x))]
    index = DenseIndex.build(x, ids, pids, kind, **params)
    index.search(q[0], k)  # warm-up
    times = []
    for row in q:
        start = time.perf_counter()
        index.search(row, k)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    index.search_batch(q, k)
    batch_s = time.perf_counter() - start
    ms = np.array(times) * 1000
    return {
        "kind": kind,
        "params": ", ".join(f"{name}={value}" for name, value in index.params.items() if name != "seed"),
        "build_s": index.build_seconds,
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "qps_batch": len(q) / batch_s,
        "recall": recall_against_exact(index, exact, q, k) if exact is not None else 1.0,
        "index": index,
    }


def format_table(rows: list[dict[str, object]], k: int) -> str:
    head = f"{'kind':<6} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8} {'batch q/s':>10} {f'R@{k}':>7}  params"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['kind']:<6} {r['build_s']:>8.3f} {r['p50_ms']:>8.3f} {r['p95_ms']:>8.3f} "
            f"{r['qps_batch']:>10.0f} {r['recall']:>7.3f}  {r['params']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise SystemExit(f"--kinds: unknown {unknown}; choose from {list(KINDS)}")
    sets = parse_sets(args.set, kinds)
    threads = faiss_kinds.set_num_threads(args.threads or None)
    x, q, what = make_vectors(args)
    print(f"# {what}; {len(q)} queries; k={args.k}; faiss threads={threads}; faiss {faiss.__version__}")
    # flat goes first: it is the exact reference for every other kind's recall
    order = ["flat"] + [kind for kind in kinds if kind != "flat"]
    exact: DenseIndex | None = None
    rows = []
    for kind in order:
        row = bench_kind(kind, sets.get(kind, {}), x, q, exact, args.k, args.figures_per_patent)
        if kind == "flat":
            exact = row["index"]  # type: ignore[assignment]
        if kind in kinds:
            rows.append(row)
    print(format_table(rows, args.k))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
