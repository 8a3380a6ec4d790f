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

The ways to a faster query, each measured against the plain search (numpy scorer, every query term):
``--numba`` scores with bm25s's numba-compiled scorer (the same scores), ``--shards S ...`` with the
documents cut into S ranges scored and searched by S threads (``patent_demo.text.bm25_shards``: the same
scores and lists), and ``--max-terms M ...`` keeps
the query's M terms of highest idf (``BM25Index.prune``); each such record carries its recall@100 against
the plain search's top 100 over the same queries. ``--index-dir DIR`` saves each built index under
``DIR/<n>`` and loads it there on a later run (a build at 1M takes many minutes).

    nice -n 10 python bench/bench_text_scale.py --docs 1000000 --numba --max-terms 8 16 24 32 \
        --index-dir /tmp/bm25-1m --log docs/bench/bench_text_scale.log
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


def build(n: int, vocab: list[str], seed: int, index_dir: Path | None) -> tuple[BM25Index, dict]:
    """The index of ``n`` generated abstracts (loaded from ``index_dir/<n>`` when saved there) and the
    build's figures (none when loaded)."""
    saved = index_dir / str(n) if index_dir else None
    if saved is not None and (saved / "lexical.json").is_file():
        return BM25Index.load(saved), {"loaded_from": str(saved)}
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    docs = [{"id": f"D{i}", "text": t} for i, t in enumerate(generate_texts(vocab, n, 120, 1.0, rng))]
    gen = time.perf_counter() - t0
    gc.collect()
    before, _ = rss_mb()
    t0 = time.perf_counter()
    index = BM25Index.build(docs, fields=("text",))
    seconds = time.perf_counter() - t0
    del docs
    gc.collect()
    after, peak = rss_mb()
    if saved is not None:
        index.save(saved)
    return index, {
        "generate_s": round(gen, 1),
        "build_s": round(seconds, 1),
        "index_mb": round(after - before, 1),
        "peak_rss_mb": round(peak, 1),
    }


def timed(index: BM25Index, queries: list[str], k: int, max_terms: int | None) -> tuple[list, list[float]]:
    """(results, seconds) of each query, one at a time, after one warm-up search."""
    index.search(queries[0], k=k, max_terms=max_terms)
    out, lat = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(index.search(q, k=k, max_terms=max_terms))
        lat.append(time.perf_counter() - t0)
    return out, lat


def measure(
    n: int,
    vocab: list[str],
    queries: list[str],
    k: int,
    seed: int,
    numba: bool = False,
    max_terms: tuple[int, ...] = (),
    index_dir: Path | None = None,
    shards: tuple[int, ...] = (),
) -> list[dict]:
    """One record for the plain search of ``n`` abstracts, then one per faster variant."""
    index, built = build(n, vocab, seed, index_dir)
    variants = [
        ("numpy", None),
        *([("numba", None)] if numba else []),
        *((f"numba, {s} shards", None) for s in shards),
        *((("numba" if numba else "numpy"), m) for m in max_terms),
    ]
    records, reference = [], None
    for scorer, m in variants:
        if scorer.startswith("numba"):
            index.use_numba(shards=int(scorer.split()[1]) if "shards" in scorer else None)
        found, lat = timed(index, queries, k, m)
        if reference is None:
            reference, first = [set(r.ids[:100]) for r in found], [(r.ids, r.scores) for r in found]
        same = all(
            r.ids == ids and np.array_equal(r.scores, sc) for r, (ids, sc) in zip(found, first, strict=True)
        )
        recall = float(
            np.mean(
                [
                    len(set(r.ids[:100]) & ref) / max(1, len(ref))
                    for r, ref in zip(found, reference, strict=True)
                ]
            )
        )
        records.append(
            {
                "kind": "bm25",
                "n": n,
                "k": k,
                **(built if not records else {}),
                "scorer": scorer,
                "max_terms": m,
                "recall@100": round(recall, 4),
                "same_lists_and_scores": same,
                "latency_ms_p50": round(1000 * float(np.median(lat)), 2),
                "latency_ms_p95": round(1000 * float(np.quantile(lat, 0.95)), 2),
                "queries": len(lat),
                "load": [round(v, 2) for v in os.getloadavg()],
            }
        )
    return records


def render_markdown(records: list[dict]) -> str:
    """The BM25 table (markdown) from this bench's records."""
    lines = [
        "| abstracts | scorer | query terms | recall@100 | build s | index MB (RSS) | peak RSS MB | p50 ms | "
        "p95 ms | k | load |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def num(r: dict, key: str, fmt: str) -> str:
        return format(r[key], fmt) if r.get(key) is not None else "-"

    for r in (r for r in records if r.get("kind") == "bm25"):
        terms = f"top {r['max_terms']} by idf" if r.get("max_terms") else "all"
        lines.append(
            f"| {r['n']:,} | {r.get('scorer', 'numpy')} | {terms} | {r.get('recall@100', 1.0):.3f} | "
            f"{num(r, 'build_s', '.0f')} | {num(r, 'index_mb', '.0f')} | {num(r, 'peak_rss_mb', '.0f')} | "
            f"{r['latency_ms_p50']:.1f} | {r['latency_ms_p95']:.1f} | {r['k']} | {r['load'][0]:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--k", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab-from", type=Path, default=DEFAULT_VOCAB)
    p.add_argument("--log", default=None)
    p.add_argument("--numba", action="store_true", help="also measure bm25s's numba scorer (needs numba)")
    p.add_argument(
        "--shards",
        type=int,
        nargs="*",
        default=[],
        help="also measure the exact sharded scorer with S threads (BM25Index.use_numba(shards=S); needs numba)",
    )
    p.add_argument(
        "--max-terms",
        type=int,
        nargs="*",
        default=[],
        help="also measure queries pruned to their M terms of highest idf (with --numba: numba scored)",
    )
    p.add_argument(
        "--index-dir", type=Path, default=None, help="save each built index under DIR/<n>; load it from there"
    )
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

    emit(
        {
            "command": " ".join(sys.argv),
            "cpus": os.cpu_count(),
            "load": os.getloadavg(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    vocab = load_vocabulary(args.vocab_from)
    queries = generate_texts(vocab, args.queries, 120, 1.0, np.random.default_rng(args.seed + 1))
    for n in args.docs:
        for record in measure(
            n,
            vocab,
            queries,
            args.k,
            args.seed,
            args.numba,
            tuple(args.max_terms),
            args.index_dir,
            tuple(args.shards),
        ):
            emit(record)
        gc.collect()
    if log:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
