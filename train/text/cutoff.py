"""The text lists with and without the own-date prior-art cut-off, scored against all citations:
``python -m train.text.cutoff``.

For the val and the test queries of ``--split-file`` (each a citing patent of the corpus: title + abstract,
the query patent left out), each first-stage list the app shows (``bm25``, ``dense``, ``hybrid``: made as
``patent-demo evaluate text`` makes them, ``patent_demo.text.lists.text_runs``) is run twice: over the whole
corpus, and restricted inside the search to the prior art of the query's own date (its earliest priority,
else filing date; the rule of ``patent_demo.prior_art``: published before it, or a patent document filed
before it, "E"). Both runs are scored against **every** citation of every query (none dropped; a citation
the cut-off hides counts as missed), by ``patent_demo.metrics`` and again by ir_measures (the independent
check). Paired bootstrap intervals of cut-off minus none per split and over val and test together.

A second cut-off (``filing``) takes the query's filing date instead of its earliest priority, the same rule
applied to a later date: how much the figures owe to the priority claims.

    python -m train.text.cutoff --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --out docs/results_text_cutoff.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus
from patent_demo.filters import allowed_per_query, apply_cutoff, cutoff_of_queries, hidden_relevant
from patent_demo.metrics import paired_bootstrap, per_query_metrics
from patent_demo.prior_art import count_undated, status
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.search import patent_query
from train.text.first_stages import ir_measures_summary, load_split

LISTS = ("bm25", "dense", "hybrid")
METRICS = ("map@10", "recall@10", "ndcg@10", "recall@100")
SPLITS = ("val", "test")


def split_result(wb, corpus: Corpus, qrels: dict, k: int = 100) -> dict:
    """Per list, with and without the own-date cut-off: the per-query metrics (queries sorted), ir_measures'
    means, and what the cut-off hid."""
    from patent_demo.text.lists import text_runs

    qids = sorted(qrels)
    queries = [patent_query(corpus[q]) for q in qids]
    cutoffs = cutoff_of_queries(qids, corpus)
    dates = {"own": cutoffs, "filing": {q: corpus[q].filing_date or cutoffs[q] for q in qids}}
    stage = wb.text_stage()
    runs = {"none": text_runs(stage, queries, corpus, k, LISTS)}
    for cut, by_query in dates.items():
        runs[cut] = text_runs(
            stage, queries, corpus, k, LISTS, allowed=allowed_per_query(qids, corpus, by_query)
        )
    hidden = hidden_relevant(qrels, corpus, cutoffs)
    statuses = [status(corpus[d], cutoffs[q]) for q in qids for d in qrels[q] if d in corpus]
    out: dict = {
        "queries": qids,
        "queries_without_date": sum(1 for q in qids if not cutoffs[q]),
        "relevant": sum(len(qrels[q]) for q in qids),
        "relevant_published_before": statuses.count("published"),
        "relevant_earlier_applications": statuses.count("E"),
        "hidden": sum(map(len, hidden.values())),
        "hidden_filing": sum(map(len, hidden_relevant(qrels, corpus, dates["filing"]).values())),
        "undated_left_out": max((count_undated(corpus, c) for c in set(cutoffs.values()) if c), default=0),
        "lists": {},
    }
    for cut, by_list in runs.items():
        for name, run in by_list.items():
            if cut != "none":
                run, scored = apply_cutoff(run, qrels, corpus, dates[cut])
                assert scored == qrels  # every query, every citation
            pq = per_query_metrics(run, qrels, (10, 100))
            out["lists"].setdefault(name, {})[cut] = {
                "per_query": {m: [pq[q][m] for q in qids] for m in METRICS},
                "mean": {m: float(np.mean([pq[q][m] for q in qids])) for m in METRICS},
                "ir_measures": ir_measures_summary(run, qrels),
                "e_in_top10": sum(
                    1 for q in qids for d in run[q].ids[:10] if status(corpus[d], dates[cut][q]) == "E"
                )
                if cut != "none"
                else 0,
            }
    return out


def comparisons(splits: dict, n_boot: int, seed: int = 0, cut: str = "own") -> dict:
    """Cut-off ``cut`` minus none, per list and metric: per split and over val and test pooled (paired
    bootstrap of the queries, ``patent_demo.metrics.paired_bootstrap``)."""
    out: dict = {}
    for name in LISTS:
        for m in ("map@10", "recall@100"):
            for where in (*SPLITS, "val+test"):
                parts = SPLITS if where == "val+test" else (where,)
                a = np.concatenate([splits[s]["lists"][name][cut]["per_query"][m] for s in parts])
                b = np.concatenate([splits[s]["lists"][name]["none"]["per_query"][m] for s in parts])
                out.setdefault(name, {}).setdefault(m, {})[where] = paired_bootstrap(
                    a, b, n_boot=n_boot, seed=seed
                ) | {"cut": float(a.mean()), "none": float(b.mean()), "queries": int(a.size)}
    return out


def cpu_name() -> str:
    """The CPU's model name (``lscpu``'s *Model name*, from ``/proc/cpuinfo``), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--corpus", required=True, help="a text corpus directory (patent-demo corpus build --source text)"
    )
    p.add_argument("--split-file", required=True, help="the committed query split (splits/cs3245_text.json)")
    p.add_argument("--cache-dir", default="cache", help="where the BM25 and dense indexes are cached")
    p.add_argument("--bootstrap", type=int, default=10000, help="bootstrap resamples (default 10000)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    p.add_argument("--out", required=True, help="the JSON to write")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from patent_demo.workbench import Workbench, WorkbenchConfig

    start = time.time()
    corpus = Corpus.load(args.corpus, validate=False)
    _, qrels = load_split(corpus, args.split_file)
    wb = Workbench(WorkbenchConfig(cache_dir=Path(args.cache_dir), corpus=corpus.root), corpus=corpus)
    splits = {s: split_result(wb, corpus, qrels[s]) for s in SPLITS}
    result = {
        "rule": "prior art of the query's own date: published before it, or a patent document filed "
        "(earliest priority, else filing) before it (patent_demo.prior_art)",
        "splits": splits,
        "comparison": comparisons(splits, args.bootstrap),
        "comparison_filing": comparisons(splits, args.bootstrap, cut="filing"),
        "shipped": default_text_list(),
        "bootstrap": args.bootstrap,
        "split_file": args.split_file,
        "corpus": str(args.corpus),
        "cpu": cpu_name(),
        "seconds": round(time.time() - start, 1),
        "command": "python -m train.text.cutoff " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for s in SPLITS:
        r = splits[s]
        print(
            f"{s}: {len(r['queries'])} queries, {r['hidden']} of {r['relevant']} citations hidden by the cut-off"
        )
        for name in LISTS:
            row = r["lists"][name]
            print(
                f"  {name:7s} MAP@10 {row['none']['mean']['map@10']:.3f} -> {row['own']['mean']['map@10']:.3f}"
                f"  R@100 {row['none']['mean']['recall@100']:.3f} -> {row['own']['mean']['recall@100']:.3f}"
                f"  (ir_measures {row['own']['ir_measures']['map@10']:.3f}, "
                f"{row['own']['ir_measures']['recall@100']:.3f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
