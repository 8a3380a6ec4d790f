"""Latency of the text lists: BM25, dense and hybrid on 100,000 abstracts, and the app's full text
search (``Workbench.search_text``: every list, the re-ranker in the precision this CPU gets).

    python bench/bench_dense_hybrid.py --threads 1 --docs 100000 --app-checkpoint checkpoints/dssdnet-minilm-ipc

(One thread per query: on two shared cores, two torch threads plus FAISS's OpenMP threads oversubscribe
the CPU and a query encoding took seconds instead of tens of milliseconds.)

Corpus at scale: the 2,244 real cs3245 texts (``../shared/data``, read, not copied) repeated with their
words shuffled and 20 % dropped to ``--docs`` documents for BM25; for the dense index, the real MiniLM
embeddings of those texts plus Gaussian noise (sigma 0.05) re-normalised, ``--docs`` rows (a flat
FAISS search costs the same whatever the vectors hold). Queries: real citing patents (title +
abstract), encoded by the real MiniLM per query (the cost the app pays). Medians over ``--queries``.
Target: the dense and hybrid lists within 150 ms on 100,000 abstracts; the log splits each into the query
encoding (fixed cost, one MiniLM pass over up to 256 tokens) and the search + fusion (what grows with N). ``--app-checkpoint`` also times
the app's path on the real 2,244-patent corpus (``/search_text`` does this work), its precision printed.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from patent_demo.request import TextRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="cache/corpora/cs3245", help="the built cs3245 corpus")
    p.add_argument("--docs", type=int, default=100_000, help="documents at scale")
    p.add_argument("--queries", type=int, default=20, help="queries timed")
    p.add_argument("--threads", type=int, default=1, help="torch / FAISS threads")
    p.add_argument("--app-checkpoint", default=None, help="also time Workbench.search_text with this DSSDNet")
    p.add_argument("--app-only", action="store_true", help="time only the app's whole text search")
    p.add_argument(
        "--depths",
        type=int,
        nargs="+",
        default=[0],
        help="hybrid candidates re-ranked (0: the app's own, the depth the checkpoint chose on validation)",
    )
    p.add_argument(
        "--app-queries", type=int, default=5, help="queries timed for the app's search (after one warm-up)"
    )
    args = p.parse_args(argv)
    import faiss
    import torch

    from patent_demo.data.corpus import Corpus, Patent
    from patent_demo.index.dense import DenseIndex
    from patent_demo.text.bm25 import BM25Index
    from patent_demo.text.dense import TextEncoder, cached_dense_index
    from patent_demo.text.hybrid import load_hybrid_settings
    from patent_demo.text.lists import FirstStage, first_stage_runs
    from patent_demo.text.precision import choose_precision, cpu_flags
    from patent_demo.text.search import patent_query
    from patent_demo.workbench import corpus_fingerprint

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    corpus = Corpus.load(args.corpus, validate=False)
    flags = cpu_flags()
    print(
        f"CPU {platform.processor() or platform.machine()}, avx512_bf16={'avx512_bf16' in flags}, "
        f"amx_bf16={'amx_bf16' in flags}; auto precision -> {choose_precision('auto')}; threads {args.threads}"
    )
    if not args.app_only:  # the lists at scale
        rng = random.Random(0)
        base = corpus.patents
        docs = []
        for i in range(args.docs):
            src = base[i % len(base)]
            words = f"{src.title} {src.text}".split()
            rng.shuffle(words)
            docs.append(Patent(f"S{i:06d}", title="", text=" ".join(w for w in words if rng.random() > 0.2)))
        t0 = time.perf_counter()
        bm25 = BM25Index.build(docs)
        print(f"BM25 index over {len(docs):,} documents: {time.perf_counter() - t0:.1f} s")
        for precision in ("fp32", "bf16") if choose_precision("auto") == "bf16" else ("fp32",):
            enc = TextEncoder(precision="fp32")
            real = cached_dense_index(enc, base, Path("cache/dense") / corpus_fingerprint(corpus)).embeddings
            enc = TextEncoder(precision=precision)
            noise = (
                np.random.default_rng(0)
                .normal(scale=0.05, size=(args.docs, real.shape[1]))
                .astype(np.float32)
            )
            x = real[np.arange(args.docs) % len(real)] + noise
            ids = [d.id for d in docs]
            dense = DenseIndex.build(x, ids, ids, kind="flat")
            stage = FirstStage(bm25, dense, enc, load_hybrid_settings())
            queries = [patent_query(corpus[q]) for q in sorted(corpus.qrels)[: args.queries]]
            first_stage_runs(stage, queries[:2], 10)  # warm-up
            times = {
                "bm25": [],
                "dense": [],
                "hybrid": [],
                "encode query": [],
                "dense search": [],
                "hybrid search": [],
            }
            for q in queries:
                for name in ("bm25", "dense", "hybrid"):
                    t = time.perf_counter()
                    first_stage_runs(stage, [q], 10, names=(name,))
                    times[name].append(1000 * (time.perf_counter() - t))
                t = time.perf_counter()
                v = enc.encode([q.text])
                times["encode query"].append(1000 * (time.perf_counter() - t))
                for name in ("dense", "hybrid"):
                    t = time.perf_counter()
                    first_stage_runs(stage, [q], 10, names=(name,), query_vectors=v)
                    times[f"{name} search"].append(1000 * (time.perf_counter() - t))
            print(
                f"[{precision} query encoder] top 10 of {args.docs:,} abstracts, median ms over {len(queries)} queries "
                "(query encoding included; hybrid = BM25 + dense top 1000 each, min-max fused):"
            )
            for name, v in times.items():
                print(
                    f"  {name:7s} {statistics.median(v):7.1f} ms   (p90 {sorted(v)[int(0.9 * len(v)) - 1]:.1f})"
                )
    if args.app_checkpoint:
        from patent_demo.registry import read_checkpoint_spec
        from patent_demo.workbench import Workbench, WorkbenchConfig

        queries = [corpus[q] for q in sorted(corpus.qrels) if corpus[q].text][: args.app_queries + 1]
        for depth in args.depths:
            wb = Workbench(
                WorkbenchConfig(
                    cache_dir=Path("cache"),
                    corpus=Path(args.corpus),
                    checkpoint_dirs=(Path(args.app_checkpoint).parent,),
                ),
                progress=False,
            )
            spec = read_checkpoint_spec(Path(args.app_checkpoint))
            if depth:  # forced, whatever depth the checkpoint chose on validation
                wb.rerank_depth = lambda spec, d=depth: d
            wb.bm25(), wb.dense()  # the text indexes (this corpus has no drawings to index)
            rr = wb.reranker(spec)
            wb.search_text(
                TextRequest.build(f"{queries[0].title}. {queries[0].text}", "", spec.key, 10)
            )  # warm-up
            t_all = []
            for q in queries[1:]:
                t = time.perf_counter()
                wb.search_text(TextRequest.build(f"{q.title}. {q.text}", "", spec.key, 10))
                t_all.append(time.perf_counter() - t)
            print(
                f"app: Workbench.search_text (bm25, dense, hybrid, dssdnet on the hybrid top "
                f"{wb.rerank_depth(spec)}{'' if depth else ' (chosen on validation)'}, fused) on {len(corpus):,} patents, re-ranker precision {rr.precision}, "
                f"dense {wb.dense()[0].precision}: median {statistics.median(t_all):.2f} s, "
                f"p90 {sorted(t_all)[max(0, int(0.9 * len(t_all)) - 1)]:.2f} s over {len(t_all)} queries"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
