"""Evaluation helpers of ``train/dssdnet.py``: BM25 and re-ranking metrics of one split.

* A library task: BM25 top ``k_first`` per query, the first ``k_rerank`` re-ranked
  (``patent_demo.text.search.rerank_run``).
* A pair task (TSV or label rows): each held-out query's own labelled candidates, ranked by BM25 over
  those candidates (``patent_demo.text.pairs.bm25_pair_run``) or by the re-ranker, against graded qrels
  (``patent_demo.text.evaluate.evaluate_pairs``, the function ``patent-demo evaluate text`` calls).
"""

from __future__ import annotations

from pathlib import Path

from patent_demo import checkpoint
from patent_demo.metrics import evaluate_run
from patent_demo.results import Results
from patent_demo.text.evaluate import MAP_DEFINITIONS, pair_run
from patent_demo.text.pairs import pair_qrels
from patent_demo.text.search import rerank_run
from train import dssdnet_data as data

__all__ = ["MAP_DEFINITIONS", "evaluate", "eval_description", "fmt", "write_run"]


def evaluate(model, task, args, split: str) -> tuple[dict, dict[str, Results]]:
    """Metrics of ``split`` (``model`` None: BM25) and the run itself."""
    ks = sorted(set(args.ks))
    if isinstance(task, data.CorpusTask):
        queries = task.queries[split]
        k_first = min(args.k_first, len(task.library))
        run = rerank_run(
            task.bm25,
            model,
            queries,
            task.library,
            k_first=k_first,
            k_rerank=None if args.k_rerank is None else min(args.k_rerank, k_first),
            batch_size=args.eval_batch_size,
        )
        return evaluate_run(run, task.qrels[split], ks), run
    pairs = task.pairs[split]
    run = pair_run(pairs, model, batch_size=args.eval_batch_size)
    return evaluate_run(run, pair_qrels(pairs), ks), run


def write_run(path: str | Path, run: dict[str, Results], name: str) -> None:
    """A TREC run file of ``run`` (scores as ranked: a re-ranked head keeps its re-ranker scores shifted
    above the BM25 tail, see ``patent_demo.text.search.merge_head``)."""
    lines = [line for qid in sorted(run) for line in run[qid].to_trec(qid, name)]
    checkpoint.write_text(path, "\n".join(lines) + "\n")


def eval_description(args, task, split: str) -> dict:
    if isinstance(task, data.CorpusTask):
        k_first = min(args.k_first, len(task.library))
        return {
            "protocol": "BM25 (title + abstract, k1 1.2, b 0.75) top k_first per query, the query patent excluded; the first k_rerank re-ranked, the rest in BM25 order",
            "split": split, "queries": len(task.queries[split]), "library": len(task.library),
            "k_first": k_first, "k_rerank": k_first if args.k_rerank is None else min(args.k_rerank, k_first),
        }  # fmt: skip
    if task is None:
        return {}
    return {
        "protocol": "each held-out query's labelled candidates: BM25 over those candidates vs the re-ranker; graded qrels round(4 y)",
        "split": split,
        "queries": len(task.qrels(split)),
    }


def fmt(m: dict) -> str:
    keys = [k for k in m if k.split("@")[0] in ("recall", "map", "map_retrieved", "ndcg")]
    return " ".join(f"{k}={m[k]:.4f}" for k in keys) + f" (n={m.get('num_queries')})"
