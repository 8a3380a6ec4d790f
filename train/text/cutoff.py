"""The text lists with and without the own-date prior-art cut-off, scored against all citations:
``python -m train.text.cutoff``.

For the val and the test queries of ``--split-file`` (each a citing patent of the corpus: title + abstract,
the query patent left out), each first-stage list the app shows (``bm25``, ``dense``, ``hybrid``: made as
``patent-demo evaluate text`` makes them, ``patent_demo.text.lists.text_runs``) is run over the whole
corpus, and restricted inside the search to the prior art of a cut-off date (the rule of
``patent_demo.prior_art``: published before it, or a patent document filed before it, "E") at each of the
two dates a query patent's own search could take:

* ``own``: the date the app, the CLI and the API use (``prior_art.prior_art_date``: the filing date);
* ``priority``: the query's earliest priority date, else its filing date.

Every run is scored against **every** citation of every query (none dropped; a citation the cut-off hides
counts as missed), by ``patent_demo.metrics`` and again by ir_measures (the independent check). Paired
bootstrap intervals of cut-off minus none per split and over val and test together. The date is chosen on
**val** alone (:func:`choose_on_val`); the output says whether it is the one the app uses.

    python -m train.text.cutoff --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --out docs/results_text_cutoff.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from patent_demo.data.corpus import Corpus
from patent_demo.filters import allowed_per_query, apply_cutoff, cutoff_of_queries, hidden_relevant
from patent_demo.metrics import paired_bootstrap, per_query_metrics
from patent_demo.prior_art import (
    OWN_DATE,
    count_undated,
    effective_filing_date,
    intermediate_from,
    mark,
    status,
)
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.precision import cpu_name
from patent_demo.text.search import patent_query
from train.text.first_stages import ir_measures_summary, load_split

LISTS = ("bm25", "dense", "hybrid")
METRICS = ("map@10", "recall@10", "ndcg@10", "recall@100")
SPLITS = ("val", "test")


DATES = ("own", "priority")  # the app's own date (prior_art.prior_art_date) and the earliest priority


def split_result(wb, corpus: Corpus, qrels: dict, k: int = 100) -> dict:
    """Per list, without a cut-off and with each of ``DATES``: the per-query metrics (queries sorted),
    ir_measures' means, and what each cut-off hid."""
    from patent_demo.text.lists import text_runs

    qids = sorted(qrels)
    queries = [patent_query(corpus[q]) for q in qids]
    cutoffs = cutoff_of_queries(qids, corpus)
    dates = {"own": cutoffs, "priority": {q: effective_filing_date(corpus[q]) or cutoffs[q] for q in qids}}
    window = {q: intermediate_from(corpus[q]) for q in qids}  # the P marks of the own date
    stage = wb.text_stage()
    runs = {"none": text_runs(stage, queries, corpus, k, LISTS)}
    for cut, by_query in dates.items():
        runs[cut] = text_runs(
            stage, queries, corpus, k, LISTS, allowed=allowed_per_query(qids, corpus, by_query)
        )
    hidden = {cut: hidden_relevant(qrels, corpus, by_query) for cut, by_query in dates.items()}
    cited = [(q, d) for q in qids for d in qrels[q] if d in corpus]
    marks = [mark(corpus[d], cutoffs[q], window[q]) for q, d in cited]
    statuses = [status(corpus[d], cutoffs[q]) for q, d in cited]
    out: dict = {
        "queries": qids,
        "queries_without_date": sum(1 for q in qids if not cutoffs[q]),
        "queries_with_priority_before_filing": sum(1 for q in qids if window[q]),
        "relevant": sum(len(qrels[q]) for q in qids),
        "relevant_published_before": statuses.count("published"),
        "relevant_earlier_applications": marks.count("E"),
        "relevant_intermediate": marks.count("P"),
        "hidden": sum(map(len, hidden["own"].values())),
        "hidden_priority": sum(map(len, hidden["priority"].values())),
        "undated_left_out": max((count_undated(corpus, c) for c in set(cutoffs.values()) if c), default=0),
        "lists": {},
    }
    for cut, by_list in runs.items():
        for name, run in by_list.items():
            if cut != "none":
                run, scored = apply_cutoff(run, qrels, corpus, dates[cut])
                assert scored == qrels  # every query, every citation
            pq = per_query_metrics(run, qrels, (10, 100))
            top = [(q, d) for q in qids for d in run[q].ids[:10]]
            out["lists"].setdefault(name, {})[cut] = {
                "per_query": {m: [pq[q][m] for q in qids] for m in METRICS},
                "mean": {m: float(np.mean([pq[q][m] for q in qids])) for m in METRICS},
                "ir_measures": ir_measures_summary(run, qrels),
                "e_in_top10": sum(
                    1 for q, d in top if cut != "none" and status(corpus[d], dates[cut][q]) == "E"
                ),
                "p_in_top10": sum(
                    1 for q, d in top if cut == "own" and mark(corpus[d], cutoffs[q], window[q]) == "P"
                ),
            }
    return out


def choose_on_val(splits: dict, shipped: str, max_recall_drop: float = 0.05) -> dict:
    """The cut-off date chosen on **val** alone for the ``shipped`` list: among ``DATES`` whose mean R@100
    is at most ``max_recall_drop`` below no cut-off, the one with the highest mean MAP@10 (none qualifies:
    the highest R@100). Says whether it is the app's (``own``)."""
    val = splits["val"]["lists"][shipped]
    gain = {
        cut: {m: val[cut]["mean"][m] - val["none"]["mean"][m] for m in ("map@10", "recall@100")}
        for cut in DATES
    }
    fit = [c for c in DATES if gain[c]["recall@100"] >= -max_recall_drop]
    chosen = (
        max(fit, key=lambda c: gain[c]["map@10"]) if fit else max(DATES, key=lambda c: gain[c]["recall@100"])
    )
    return {
        "rule": f"on val, the {shipped} list: the date with the highest MAP@10 among those at most "
        f"{max_recall_drop} lower at R@100 than no cut-off",
        "val_gain": gain,
        "chosen": chosen,
        "app": OWN_DATE,
        "app_follows": chosen == "own",
    }


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
        "rule": "prior art of a cut-off date: published before it, or a patent document filed (earliest "
        "priority, else filing) before it (patent_demo.prior_art)",
        "own_date": OWN_DATE,
        "splits": splits,
        "comparison": comparisons(splits, args.bootstrap),
        "comparison_priority": comparisons(splits, args.bootstrap, cut="priority"),
        "choice": choose_on_val(splits, default_text_list()),
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
    c = result["choice"]
    print(
        f"chosen on val: {c['chosen']} ({c['rule']}); the app uses {c['app']}: follows val {c['app_follows']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
