"""Re-ranking latency: DSSDNet (MiniLM, fp32 and dynamic int8) against sentence-transformers'
CrossEncoder on the same base folder, for 100 and 1000 BM25 candidates, in one process.

    python bench/bench_rerank.py --threads 2 --candidates 100 1000 --repeats 3

Queries and candidates are real patents of ``../shared/data/cs3245_patsnap_corpus_qrels`` (title +
abstract, about 120 words, so most pairs reach the 128-token limit); the candidates are the query's
BM25 top-N. Timings interleave the models (A, B, C, A, B, C, ...) so that load on a shared machine
hits them alike; the figures printed are medians. The int8 model is
``torch.ao.quantization.quantize_dynamic`` over every ``nn.Linear``; its effect on ranking quality
is measured on test queries of that corpus (BM25 top ``--quality-k`` re-ranked, metrics at 10/20/50).
Targets: DSSDNet <= 1.10x the CrossEncoder's time; 100 candidates <= 1.5 s. CPU seconds (all threads)
are printed too: on a shared machine they show what a quiet one would take (wall >= CPU / threads).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs  # noqa: E402
from patent_demo.metrics import evaluate_run  # noqa: E402
from patent_demo.text.reranker import Reranker, create_reranker, resolve_base_path  # noqa: E402
from patent_demo.text.search import candidate_text, rerank_run  # noqa: E402
from patent_demo.text.tasks import corpus_task  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"


def load_model(path: str | None) -> Reranker:
    torch.manual_seed(0)
    if path and Path(path, "config.json").is_file():
        return Reranker.load(path).eval()
    return create_reranker("minilm", domain_scheme="ipc").eval()


def quantize(model: Reranker) -> Reranker:
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--checkpoint",
        default=str(REPO / "checkpoints" / "dssdnet-minilm"),
        help="DSSDNet checkpoint (an untrained head on MiniLM when absent)",
    )
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--candidates", type=int, nargs="+", default=[100, 1000], help="candidate list sizes")
    p.add_argument(
        "--repeats", type=int, default=3, help="timed repeats per model and size (medians printed)"
    )
    p.add_argument(
        "--repeats-large",
        type=int,
        default=None,
        help="timed repeats for lists over 100 candidates (default: --repeats)",
    )
    p.add_argument(
        "--batch-size", type=int, default=32, help="pairs per forward pass, the same for every model"
    )
    p.add_argument(
        "--quality-queries", type=int, default=20, help="test queries for the int8 metric change (0: skip)"
    )
    p.add_argument("--quality-k", type=int, default=50, help="BM25 candidates re-ranked per quality query")
    p.add_argument("--json", default=None, help="also write the figures here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    from sentence_transformers import CrossEncoder

    library = load_text_corpus(DATA / "patsnap_docs.jsonl")
    pairs = [
        (a, b) for a, b in read_pairs(DATA / "in_corpus_citation_pairs.tsv") if a in library and b in library
    ]
    task = corpus_task(library, qrels_from_pairs(pairs))
    model = load_model(args.checkpoint)
    int8 = quantize(load_model(args.checkpoint))
    base = resolve_base_path(model.config)
    ce = CrossEncoder(base, num_labels=1, max_length=model.config.max_length, device="cpu")
    query = task.queries["test"][0]
    ranked = task.bm25.search(query.text, k=max(args.candidates) + 1).ids
    ranked = [d for d in ranked if d != query.qid]
    print(
        f"threads {torch.get_num_threads()}, base {base}, max_length {model.config.max_length}, batch {args.batch_size}, variant {model.config.variant}"
    )
    figures: dict = {"threads": args.threads, "batch_size": args.batch_size, "latency_s": {}}
    with torch.inference_mode():
        for n in args.candidates:
            cands = [(d, candidate_text(library[d]), library[d].codes) for d in ranked[:n]]
            texts = [(query.text, c[1]) for c in cands]
            models = {
                "dssdnet_fp32": lambda c=cands: model.rank(
                    query.text, c, query_codes=query.codes, batch_size=args.batch_size
                ),
                "dssdnet_int8": lambda c=cands: int8.rank(
                    query.text, c, query_codes=query.codes, batch_size=args.batch_size
                ),
                "crossencoder_fp32": lambda t=texts: ce.predict(
                    t, batch_size=args.batch_size, show_progress_bar=False
                ),
            }
            if n == args.candidates[0]:
                for fn in models.values():  # warm-up (first calls allocate)
                    fn()
            times: dict[str, list[float]] = {k: [] for k in models}
            cpu: dict[str, list[float]] = {k: [] for k in models}
            repeats = args.repeats if n <= 100 or args.repeats_large is None else args.repeats_large
            for _ in range(repeats):
                for name, fn in models.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn()
                    times[name].append(time.perf_counter() - t0)
                    cpu[name].append(time.process_time() - c0)
            med = {k: statistics.median(v) for k, v in times.items()}
            cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
            figures["latency_s"][n] = {
                k: {"median": med[k], "all": times[k], "cpu_median": cpu_med[k]} for k in models
            }
            ratio = med["dssdnet_fp32"] / med["crossencoder_fp32"]
            print(
                f"{n:5d} candidates: DSSDNet fp32 {med['dssdnet_fp32']:.3f} s, int8 {med['dssdnet_int8']:.3f} s, "
                f"CrossEncoder {med['crossencoder_fp32']:.3f} s; DSSDNet/CrossEncoder {ratio:.3f}x, int8/fp32 "
                f"{med['dssdnet_int8'] / med['dssdnet_fp32']:.3f}x"
            )
            figures["latency_s"][n]["ratio_dssdnet_over_crossencoder"] = ratio
            print(
                f"{n:5d} candidates, CPU seconds (all threads): DSSDNet fp32 {cpu_med['dssdnet_fp32']:.3f}, "
                f"int8 {cpu_med['dssdnet_int8']:.3f}, CrossEncoder {cpu_med['crossencoder_fp32']:.3f}"
            )
    if args.quality_queries:
        queries = task.queries["test"][: args.quality_queries]
        qrels = {q.qid: task.qrels["test"][q.qid] for q in queries}
        out = {}
        runs = {}
        for name, m in (("fp32", model), ("int8", int8)):
            runs[name] = rerank_run(
                task.bm25, m, queries, library, k_first=args.quality_k, batch_size=args.batch_size
            )
            out[name] = evaluate_run(runs[name], qrels, [10, 20, 50])
        same_top10 = sum(runs["fp32"][q.qid].ids[:10] == runs["int8"][q.qid].ids[:10] for q in queries)
        overlap = statistics.fmean(
            len(set(runs["fp32"][q.qid].ids[:10]) & set(runs["int8"][q.qid].ids[:10])) / 10 for q in queries
        )
        figures["int8_quality"] = {
            **out,
            "identical_top10_queries": same_top10,
            "mean_top10_overlap": overlap,
        }
        print(
            f"int8 vs fp32: identical top-10 on {same_top10}/{len(queries)} queries, mean top-10 overlap {overlap:.3f}"
        )
        for key in ("recall@10", "map@10", "pres@10", "recall@20", "map@20", "pres@20"):
            print(
                f"{key}: fp32 {out['fp32'][key]:.4f}  int8 {out['int8'][key]:.4f}  change {out['int8'][key] - out['fp32'][key]:+.4f}"
            )
        print(f"({len(queries)} cs3245 test queries, BM25 top {args.quality_k} re-ranked)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
