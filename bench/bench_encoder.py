"""Drawing encoder throughput and query latency on CPU.

    python bench/bench_encoder.py                      # lite-clip at 128 px, 2 threads, 10,000-figure index
    python bench/bench_encoder.py --model checkpoints/hmcl-lite-clip --threads 2

1. **Throughput**: drawings encoded per second, end to end (PNG decode with ``load_drawing``, eval
   transform, batched ``encode_images`` without gradients), in batches of ``--batch-size``.
2. **Query latency**: one uploaded drawing at a time: PNG bytes -> ``load_drawing`` -> eval transform ->
   encode -> exact inner-product search (``DenseIndex``, flat) over ``--index-size`` figures ->
   top-50 patents (max over figures). The index holds random unit vectors (the search cost does not
   depend on what the vectors mean); the query path is real. Reports p50 and p95 and the median of
   each stage.

Targets (issue 4): >= 25 drawings/s and p50 <= 150 ms on 2 cores. Figures vary with the machine and
its load; nothing here asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patent_demo.drawing.encoders import encode_images  # noqa: E402
from patent_demo.drawing.finetune import load_encoder  # noqa: E402
from patent_demo.imageio import load_drawing  # noqa: E402
from patent_demo.index import dense, faiss_kinds  # noqa: E402

TARGET_RATE = 25.0
TARGET_P50_MS = 150.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="lite-clip", help="encoder name (zero-shot) or checkpoint directory")
    p.add_argument("--image-size", type=int, default=128, help="input size of a zero-shot encoder")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--drawings", type=int, default=256, help="drawings encoded for the throughput figure")
    p.add_argument("--batch-size", type=int, default=32, help="batch size of the throughput run")
    p.add_argument("--queries", type=int, default=60, help="timed single queries (after 5 warm-up queries)")
    p.add_argument("--index-size", type=int, default=10_000, help="figures in the index")
    p.add_argument("--figures-per-patent", type=int, default=6, help="figures per patent in the index")
    p.add_argument("--top", type=int, default=50, help="patents returned per query")
    p.add_argument("--demo-patents", type=int, default=400, help="demo corpus the drawings come from")
    p.add_argument("--cache-dir", default="cache", help="cache of the generated demo corpus")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    faiss_kinds.set_num_threads(1)
    from patent_demo.data.democorpus import ensure_demo_corpus

    corpus = ensure_demo_corpus(args.cache_dir, patents=args.demo_patents)
    paths = [corpus.image_path(f) for _, f in corpus.figures()]
    model, eval_tf, config = load_encoder(args.model, image_size=args.image_size)
    print(
        f"model {args.model} ({config.get('kind')}), input {eval_tf.size} px, {torch.get_num_threads()} threads"
    )

    # 1. throughput, decode to embedding
    blobs = [Path(q).read_bytes() for q in paths[: args.drawings]]
    with torch.no_grad():
        encode_images(
            model, torch.stack([eval_tf(load_drawing(b)) for b in blobs[: args.batch_size]])
        )  # warm-up
        t0 = time.perf_counter()
        t_enc = 0.0
        for i in range(0, len(blobs), args.batch_size):
            x = torch.stack([eval_tf(load_drawing(b)) for b in blobs[i : i + args.batch_size]])
            t1 = time.perf_counter()
            encode_images(model, x)
            t_enc += time.perf_counter() - t1
        total = time.perf_counter() - t0
    rate = len(blobs) / total
    print(
        f"throughput: {rate:.1f} drawings/s end to end ({len(blobs)} drawings, batch {args.batch_size}); "
        f"encoder alone {len(blobs) / t_enc:.1f}/s  [target >= {TARGET_RATE:g}/s]"
    )

    # 2. query latency against a flat index of random unit vectors
    dim = int(encode_images(model, eval_tf(load_drawing(blobs[0]))[None]).shape[1])
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.index_size, dim)).astype(np.float32)
    ids = [f"F{i:06d}" for i in range(args.index_size)]
    pids = [f"P{i // args.figures_per_patent:06d}" for i in range(args.index_size)]
    index = dense.DenseIndex.build(vectors, ids, pids, kind="flat")
    stages: dict[str, list[float]] = {"decode": [], "preprocess": [], "encode": [], "search": [], "total": []}
    queries = [Path(q).read_bytes() for q in paths[-(args.queries + 5) :]]
    with torch.no_grad():
        for n, blob in enumerate(queries):
            t0 = time.perf_counter()
            img = load_drawing(blob)
            t1 = time.perf_counter()
            x = eval_tf(img)[None]
            t2 = time.perf_counter()
            z = encode_images(model, x)[0].numpy()
            t3 = time.perf_counter()
            hits = index.search_patents(z, k=args.top)
            t4 = time.perf_counter()
            assert len(hits.ids) == args.top
            if n >= 5:
                for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
                    stages[key].append(value * 1000)
    total_ms = np.asarray(stages["total"])
    p50, p95 = float(np.percentile(total_ms, 50)), float(np.percentile(total_ms, 95))
    print(
        f"query latency over {len(total_ms)} queries, {args.index_size:,}-figure flat index, top-{args.top} patents: "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms  [target p50 <= {TARGET_P50_MS:g} ms]"
    )
    print(
        "  median per stage: "
        + ", ".join(f"{k} {np.median(v):.1f} ms" for k, v in stages.items() if k != "total")
    )
    ok = rate >= TARGET_RATE and p50 <= TARGET_P50_MS
    print(f"targets {'met' if ok else 'NOT met'} on this machine (load average {_load()})")
    return 0


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
