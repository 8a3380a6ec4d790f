"""BM25 speed: bm25s (``patent_demo.text.bm25.BM25Index``) against rank_bm25 on generated abstracts.

Documents are bags of words drawn from the vocabulary of the CS3245 PatSnap corpus with a Zipf law
(p(rank r) proportional to 1 / r^s), about 120 tokens each; queries are drawn the same way, like the
title+abstract queries of the DSSDNet first stage. Both libraries index the same token lists.

    python bench/bench_bm25.py                  # 100,000 documents (rank_bm25 needs a few GB and minutes)
    python bench/bench_bm25.py --docs 5000      # a quick check

Prints: tokenisation and index build time, median per-query latency of each library
(bm25s: raw text in, top-k ``Results`` out, tokenisation included; rank_bm25: tokens in,
``get_scores`` plus top-k selection), and the latency ratio rank_bm25 / bm25s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo.text.bm25 import BM25Index  # noqa: E402

DEFAULT_VOCAB = ROOT.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels" / "patsnap_docs.jsonl"


def load_vocabulary(path: Path) -> list[str]:
    """Words of the corpus's titles and abstracts (bm25s tokeniser, English stopwords removed),
    most frequent first."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    probe = BM25Index.build([{"id": "probe", "text": "probe"}], fields=("text",))
    counts: Counter[str] = Counter()
    for tokens in probe.tokenize([r.get("title", "") + "\n" + r.get("abstract", "") for r in rows]):
        counts.update(tokens)
    return [w for w, _ in counts.most_common()]


def generate_texts(
    vocab: list[str], n: int, mean_tokens: int, zipf_s: float, rng: np.random.Generator
) -> list[str]:
    """``n`` texts of about ``mean_tokens`` words (uniform in [0.6, 1.4] x mean) drawn by Zipf rank."""
    p = 1.0 / np.arange(1, len(vocab) + 1) ** zipf_s
    p /= p.sum()
    lengths = rng.integers(int(0.6 * mean_tokens), int(1.4 * mean_tokens) + 1, size=n)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    arr = np.asarray(vocab, dtype=object)
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(arr[words[start : start + length]]))
        start += length
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=100_000, help="number of generated documents")
    parser.add_argument("--queries", type=int, default=20, help="number of timed queries per library")
    parser.add_argument("--doc-tokens", type=int, default=120, help="mean tokens per document")
    parser.add_argument("--query-tokens", type=int, default=120, help="mean tokens per query (an abstract)")
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent s")
    parser.add_argument("--k", type=int, default=1000, help="documents returned per query")
    parser.add_argument("--method", default="lucene", help="bm25s scoring method")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--vocab-from", type=Path, default=DEFAULT_VOCAB, help="patsnap_docs.jsonl to take words from"
    )
    parser.add_argument("--skip-rank-bm25", action="store_true", help="time bm25s only")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    vocab = load_vocabulary(args.vocab_from)
    t0 = time.perf_counter()
    texts = generate_texts(vocab, args.docs, args.doc_tokens, args.zipf, rng)
    queries = generate_texts(vocab, args.queries, args.query_tokens, args.zipf, rng)
    print(
        f"vocabulary {len(vocab)} words; generated {args.docs} documents in {time.perf_counter() - t0:.1f} s"
    )
    docs = [{"id": f"D{i}", "text": t} for i, t in enumerate(texts)]

    t0 = time.perf_counter()
    index = BM25Index.build(docs, fields=("text",), method=args.method)
    build_bm25s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tokens = index.tokenize(texts)
    tokenise = time.perf_counter() - t0
    query_tokens = index.tokenize(queries)
    print(f"tokenisation: {tokenise:.2f} s ({sum(map(len, tokens)) / len(tokens):.1f} tokens per document)")
    print(f"bm25s build (tokenisation included): {build_bm25s:.2f} s")

    index.search(queries[0], k=args.k)  # warm-up
    lat_bm25s = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q, k=args.k)
        lat_bm25s.append(time.perf_counter() - t0)
    med_bm25s = statistics.median(lat_bm25s)
    print(f"bm25s median query latency: {med_bm25s * 1e3:.2f} ms (k={args.k}, {len(queries)} queries)")
    if args.skip_rank_bm25:
        return 0

    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    ref = BM25Okapi(tokens, k1=index.k1, b=index.b)
    build_ref = time.perf_counter() - t0
    print(f"rank_bm25 build (tokenisation excluded): {build_ref:.2f} s")
    lat_ref = []
    for qt in query_tokens:
        t0 = time.perf_counter()
        scores = ref.get_scores(qt)
        top = np.argpartition(-scores, min(args.k, len(scores) - 1))[: args.k]
        _ = top[np.argsort(-scores[top], kind="stable")]
        lat_ref.append(time.perf_counter() - t0)
    med_ref = statistics.median(lat_ref)
    print(f"rank_bm25 median query latency: {med_ref * 1e3:.2f} ms")
    print(f"ratio rank_bm25 / bm25s: {med_ref / med_bm25s:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
