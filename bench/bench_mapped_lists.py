"""One saved index's FAISS file opened two ways, read whole and memory-mapped (``IO_FLAG_MMAP``, which
serves IVF lists through ``OnDiskInvertedLists``): p50 / p95 of one query at a time at a given nprobe and
k, on 2 threads, each way measured twice (the second pass has the pages cached). Why
``DenseIndex.load`` maps only the kinds that hold full vectors (``MAPPED_KINDS``)::

    OMP_NUM_THREADS=2 python bench/bench_mapped_lists.py --index CACHE/index/<corpus>/<model> \\
        --queries /tmp/scale/c1m/queries.npy --nprobe 1024 --k 1280 --log docs/bench/bench_mapped_lists.log
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import faiss
import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True, help="a saved DenseIndex directory (holds index.faiss)")
    p.add_argument("--queries", required=True, help="a .npy of queries [Q, D] (L2-normalised here)")
    p.add_argument("--nprobe", type=int, default=1024)
    p.add_argument("--k", type=int, default=1280, help="results asked of FAISS (the per-patent candidates)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log", default=None)
    args = p.parse_args(argv)
    faiss.omp_set_num_threads(args.threads)
    q = np.load(args.queries).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    out = {
        "command": " ".join(sys.argv),
        "faiss": faiss.__version__,
        "threads": args.threads,
        "queries": len(q),
        "nprobe": args.nprobe,
        "k": args.k,
        "runs": [],
    }
    for flag, name in ((0, "read whole"), (faiss.IO_FLAG_MMAP, "memory-mapped")):
        index = faiss.read_index(str(Path(args.index) / "index.faiss"), flag)
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe, ivf.parallel_mode = args.nprobe, 1  # as DenseIndex searches one query
        lists = type(faiss.downcast_InvertedLists(ivf.invlists)).__name__
        for attempt in (1, 2):
            lat = []
            for v in q:
                t = time.perf_counter()
                index.search(v[None, :], args.k)
                lat.append(time.perf_counter() - t)
            out["runs"].append(
                {
                    "open": name,
                    "lists": lists,
                    "pass": attempt,
                    "p50_ms": round(1000 * float(np.median(lat)), 2),
                    "p95_ms": round(1000 * float(np.quantile(lat, 0.95)), 2),
                }
            )
        del index
    out["load"] = [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(out))
    if args.log:
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
