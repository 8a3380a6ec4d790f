"""Evaluate the text first stages (and a bi-encoder checkpoint) on a committed split, the hybrid tuned
on validation only: ``python -m train.text.first_stages``.

For the chosen encoder (the packaged MiniLM, or ``--encoder`` a ``train/text/biencoder.py`` checkpoint) this
writes one JSON with, for the val and the test queries of ``--split-file``: the per-query metrics of
``bm25``, ``dense`` and ``hybrid``, the hybrid's (method, BM25 weight) chosen on validation MAP@10
(``patent_demo.text.hybrid.tune_hybrid``) and the grid it was chosen from. Test values are computed
once with the validation choice; nothing is tuned on them. Queries are the split's citing patents
(title + abstract, the query patent left out); relevant = its in-corpus cited patents.

    python -m train.text.first_stages --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --out runs/text/untrained/eval.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from patent_demo.data.corpus import Corpus
from patent_demo.metrics import evaluate_run, per_query_metrics
from patent_demo.text.bm25 import BM25Index
from patent_demo.text.dense import TextEncoder, cached_dense_index
from patent_demo.text.hybrid import tune_hybrid
from patent_demo.text.lists import FirstStage, first_stage_runs
from patent_demo.text.search import patent_query

KS = (10, 20, 100)
SUMMARY = ("recall@10", "map@10", "ndcg@10", "recall@100", "pres@100")


def load_split(corpus: Corpus, path: str | Path) -> tuple[dict, dict[str, dict[str, dict[str, int]]]]:
    """The split file and its qrels per split ``{split: {qid: {doc: rel}}}`` (queries from the file)."""
    split = json.loads(Path(path).read_text(encoding="utf-8"))
    return split, {s: {q: dict(corpus.qrels[q]) for q in split[s]} for s in ("train", "val", "test")}


def split_runs(stage: FirstStage, corpus: Corpus, qids, depth: int = 1000) -> dict:
    """bm25/dense runs (top ``depth``) of the queries ``qids`` (each its patent's title + abstract)."""
    queries = [patent_query(corpus[q]) for q in qids]
    return first_stage_runs(stage, queries, depth, names=("bm25", "dense"))


def ir_measures_summary(run: dict, qrels: dict) -> dict:
    """R@10, AP@10, nDCG@10 and R@100 of ``run`` by ir_measures (the independent check of our metrics;
    ranks given as scores ``1/rank`` so ties cannot reorder them)."""
    import ir_measures
    from ir_measures import AP, R, nDCG

    qr = [ir_measures.Qrel(q, d, int(r)) for q, ds in qrels.items() for d, r in ds.items()]
    sd = [
        ir_measures.ScoredDoc(q, d, 1.0 / i)
        for q, res in run.items()
        if q in qrels
        for i, d in enumerate(res.ids[:100], 1)
    ]
    agg = ir_measures.calc_aggregate([R @ 10, AP @ 10, nDCG @ 10, R @ 100], qr, sd)
    return {
        "recall@10": agg[R @ 10],
        "map@10": agg[AP @ 10],
        "ndcg@10": agg[nDCG @ 10],
        "recall@100": agg[R @ 100],
    }


def evaluate_stage(stage: FirstStage, corpus: Corpus, qrels: dict, depth: int = 1000) -> dict:
    """Tune the hybrid on ``qrels["val"]``, then score bm25/dense/hybrid on val and test."""
    from patent_demo.text.hybrid import hybrid_run

    runs = {s: split_runs(stage, corpus, sorted(qrels[s]), depth) for s in ("val", "test")}
    settings, grid = tune_hybrid(
        runs["val"]["bm25"],
        runs["val"]["dense"],
        qrels["val"],
        depth=depth,
        tuned_on="validation queries, MAP@10",
    )
    out = {"hybrid": settings.to_dict(), "hybrid_grid": grid, "splits": {}}
    for s in ("val", "test"):
        lists = {**runs[s], "hybrid": hybrid_run(runs[s]["bm25"], runs[s]["dense"], settings)}
        per = {n: per_query_metrics(r, qrels[s], KS) for n, r in lists.items()}
        out.setdefault("ir_measures", {})[s] = {n: ir_measures_summary(r, qrels[s]) for n, r in lists.items()}
        out["splits"][s] = {
            "queries": sorted(qrels[s]),
            "summary": {n: {m: evaluate_run(r, qrels[s], KS)[m] for m in SUMMARY} for n, r in lists.items()},
            "per_query": {n: {m: [per[n][q][m] for q in sorted(qrels[s])] for m in SUMMARY} for n in per},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--corpus", required=True, help="a text corpus directory (patent-demo corpus build --source text)"
    )
    p.add_argument("--split-file", required=True, help="the committed split (train/text/split.py)")
    p.add_argument("--encoder", default=None, help="a bi-encoder checkpoint (default: the packaged MiniLM)")
    p.add_argument("--cache-dir", default="cache", help="where the dense index is cached")
    p.add_argument("--depth", type=int, default=1000, help="depth of each first stage fused into the hybrid")
    p.add_argument("--precision", default="fp32", help="encoder precision: fp32, bf16 or auto")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    p.add_argument("--out", required=True, help="the JSON to write")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    start = time.time()
    corpus = Corpus.load(args.corpus, validate=False)
    from patent_demo.workbench import corpus_fingerprint

    _, qrels = load_split(corpus, args.split_file)
    encoder = TextEncoder(args.encoder, precision=args.precision)
    dense = cached_dense_index(
        encoder, corpus.patents, Path(args.cache_dir) / "dense" / corpus_fingerprint(corpus), progress=True
    )
    stage = FirstStage(BM25Index.build(corpus.patents), dense, encoder)
    result = evaluate_stage(stage, corpus, qrels, args.depth)
    result.update(
        encoder=args.encoder or "minilm-l6 (packaged, untrained)",
        precision=encoder.precision,
        split_file=args.split_file,
        corpus=str(args.corpus),
        seconds=round(time.time() - start, 1),
        command="python -m train.text.first_stages " + " ".join(argv if argv is not None else sys.argv[1:]),
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for s in ("val", "test"):
        for n, m in result["splits"][s]["summary"].items():
            print(s, n.ljust(7), "  ".join(f"{k} {v:.3f}" for k, v in m.items()))
    print("hybrid", result["hybrid"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
