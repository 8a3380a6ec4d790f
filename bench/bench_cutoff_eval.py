"""BM25 on the cs3245 citation qrels evaluated with and without the prior-art cut-off.

Queries: the citing patents of ``in_corpus_citation_pairs.tsv`` (relevant: the patents each cites).
With ``--cutoff own`` every query is searched only among documents published before its own
priority / filing date (inside BM25), and relevant documents on or after that date leave its qrels
(``patent_demo.filters.evaluate_text_with_cutoff``). Prints both evaluations.

    python bench/bench_cutoff_eval.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patent_demo.data.loaders.textcorpus import load_text_corpus, qrels_from_pairs, read_pairs  # noqa: E402
from patent_demo.filters import evaluate_text_with_cutoff  # noqa: E402
from patent_demo.text.bm25 import BM25Index  # noqa: E402
from patent_demo.text.search import patent_query  # noqa: E402


def main() -> int:
    root = ROOT.parent / "shared" / "data" / "cs3245_patsnap_corpus_qrels"
    corpus = load_text_corpus(root / "patsnap_docs.jsonl")
    qrels = qrels_from_pairs(read_pairs(root / "in_corpus_citation_pairs.tsv"))
    queries = [patent_query(corpus[q]) for q in sorted(qrels)]
    bm25 = BM25Index.build(corpus)
    later = sum(
        1
        for q, rel in qrels.items()
        for d in rel
        if not (
            corpus[d].date
            and corpus[d].date < (corpus[q].priority_date or corpus[q].filing_date or corpus[q].date)
        )
    )
    print(
        f"{len(queries)} queries, {sum(len(r) for r in qrels.values())} citation pairs, "
        f"{later} of them cite a document published on or after the citing patent's own date"
    )
    for cutoff in ("", "own"):
        m = evaluate_text_with_cutoff(bm25, None, queries, corpus, qrels, cutoff=cutoff, ks=(10, 100))
        name = "no cut-off" if not cutoff else "own cut-off"
        print(
            f"{name:12s} queries {m['num_queries']:3d}  recall@10 {m['recall@10']:.3f}  recall@100 "
            f"{m['recall@100']:.3f}  map@100 {m['map@100']:.3f}  ndcg@100 {m['ndcg@100']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
