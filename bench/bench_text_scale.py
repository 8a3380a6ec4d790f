"""Text at scale: BM25 (bm25s, ``patent_demo.text.bm25.BM25Index``) over 100k and 1M generated abstracts:
build time, memory, p50 / p95 per query. (The dense text index, 384-d, is measured by
``bench_scale.py --dim 384``: the same kinds and the same recall rule as the drawing index.)

Abstracts are bags of words drawn from the vocabulary of the CS3245 PatSnap corpus with a Zipf law
(``bench_bm25.generate_texts``: the corpus is read, never copied), about 120 words each; a query is an
abstract of the same kind (the DSSDNet first stage searches with title and abstract). Memory is the
process's resident set after the build less before it (the index; the generated texts are counted
before), and its peak.

    nice -n 10 python bench/bench_text_scale.py --docs 100000 1000000 --log docs/bench/bench_text_scale.log
    python bench/bench_text_scale.py --render docs/bench/bench_text_scale.log   # the table in docs/scale.md
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_bm25 import DEFAULT_VOCAB, generate_texts, load_vocabulary  # noqa: E402

from patent_demo.text.bm25 import BM25Index  # noqa: E402


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    vals = {
        ln.split(":")[0]: int(ln.split()[1])
        for ln in open("/proc/self/status")
        if ln.startswith(("VmRSS", "VmHWM"))
    }
    return vals["VmRSS"] / 1024, vals["VmHWM"] / 1024


def measure(n: int, vocab: list[str], queries: list[str], k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    docs = [{"id": f"D{i}", "text": t} for i, t in enumerate(generate_texts(vocab, n, 120, 1.0, rng))]
    gen = time.perf_counter() - t0
    gc.collect()
    before, _ = rss_mb()
    t0 = time.perf_counter()
    index = BM25Index.build(docs, fields=("text",))
    build = time.perf_counter() - t0
    del docs
    gc.collect()
    after, peak = rss_mb()
    index.search(queries[0], k=k)  # warm-up
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q, k=k)
        lat.append(time.perf_counter() - t0)
    return {"kind": "bm25", "n": n, "k": k, "generate_s": round(gen, 1), "build_s": round(build, 1),
            "index_mb": round(after - before, 1), "peak_rss_mb": round(peak, 1),
            "latency_ms_p50": round(1000 * float(np.median(lat)), 2),
            "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 2), "queries": len(lat),
            "load": [round(v, 2) for v in os.getloadavg()]}  # fmt: skip


def render_markdown(records: list[dict]) -> str:
    """The BM25 table (markdown) from this bench's records."""
    lines = ["| abstracts | build s | index MB (RSS) | peak RSS MB | p50 ms | p95 ms | k | load |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in (r for r in records if r.get("kind") == "bm25"):
        lines.append(f"| {r['n']:,} | {r['build_s']:.0f} | {r['index_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
                     f"{r['latency_ms_p50']:.1f} | {r['latency_ms_p95']:.1f} | {r['k']} | {r['load'][0]:.1f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--k", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab-from", type=Path, default=DEFAULT_VOCAB)
    p.add_argument("--log", default=None)
    p.add_argument(
        "--render",
        default=None,
        metavar="LOG",
        help="only print the BM25 table of LOG (python scripts/figures.py writes docs/scale.md)",
    )
    args = p.parse_args(argv)
    if args.render:
        records = [json.loads(ln) for ln in Path(args.render).read_text().splitlines() if ln.strip()]
        print(render_markdown(records))  # scripts/figures.py writes docs/scale.md
        return 0
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115

    def emit(obj: dict) -> None:
        print(json.dumps(obj), flush=True)
        if log:
            log.write(json.dumps(obj) + "\n")
            log.flush()

    emit({"command": " ".join(sys.argv), "cpus": os.cpu_count(), "load": os.getloadavg(),
          "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})  # fmt: skip
    vocab = load_vocabulary(args.vocab_from)
    queries = generate_texts(vocab, args.queries, 120, 1.0, np.random.default_rng(args.seed + 1))
    for n in args.docs:
        emit(measure(n, vocab, queries, args.k, args.seed))
        gc.collect()
    if log:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
