"""The text learning curve of the examiner loop: DSSDNet fine-tuned from B labelled queries, scored on test.

The labels are the simulated examiner's (``scripts/examiner_sim.py --modality text``: the hybrid list's top k of
training-split queries judged through the app's ``/label``, relevant = an in-corpus cited or citing patent).
For every budget ``B`` of labelled queries and every seed:

1. **subset**: the labelled training queries in a seeded order (:func:`budget_subset`: sorted ids shuffled by
   ``random.Random(seed)``), its first ``B``; so for one seed the subsets are nested over ``B``;
2. **rows**: their decided judgements as DSSDNet rows (``LabelStore.export_dssdnet`` with the corpus), each row
   tied to its query patent (the app stored the searched text, title + abstract: :func:`query_patents`), then the
   leak guard ``train.labels.data.guard_dssdnet_rows`` with the validation *and* test queries of ``--split-file``
   as the held-out split (:func:`guard_rows`): no row of a val/test query, no judged candidate that is one;
3. **fine-tune** the shipped re-ranker from them: ``train.dssdnet --init-from PARENT --labels ROWS`` (the path of
   ``train.retrain --text-from``), ``--max-length`` tokens, ``--epochs`` over the rows capped at ``--max-steps``
   optimiser steps, the top ``--train-layers`` encoder layers and the heads trained, no validation split;
4. **score** on the test queries of ``--split-file`` (never labelled): the app's hybrid list (BM25 + the dense
   first stage of ``patent_demo.text.dense.default_text_encoder``, top 100, the query patent left out), its top
   ``--depth`` re-ranked (``patent_demo.text.lists.text_runs``: the ``dssdnet`` and ``fused`` lists, the fusion
   weight the app reads from the parent checkpoint for its hybrid pool), MAP@10 and R@100 per query
   (``patent_demo.metrics.per_query_metrics``), and paired bootstrap intervals
   (``patent_demo.metrics.paired_bootstrap``, ``--boot`` resamples) of each point against ``B = 0`` (the parent,
   scored once) and against the hybrid first stage.

The parent may have trained on some test queries of the committed split (the shipped cs3245 checkpoint trained on
its own hash split): the JSON also gives every figure on the test queries it never saw (``unseen_by_parent``).
R@100 of a re-ranked list equals the hybrid's by construction (only the top ``--depth`` <= 100 is reordered).

    python -m train.loop.text --corpus runs/loop/cs3245 --labels runs/loop/text_labels.sqlite \\
        --split-file splits/cs3245_text.json --out docs/loop_text.json [--quick]

``--quick`` (CI): budgets 0 and 10, seed 0, at most 10 test queries. Each point's per-query figures are kept
under ``--work`` and reused when a later run asks for the same point with the same settings.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import shlex
import sys
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from train.loop.text_scores import Scorer, means, pick, summarise

PROG = "python -m train.loop.text"
DEFAULT_PARENT = "checkpoints/dssdnet-minilm-ipc"
QUICK = {"budgets": [0, 10], "seeds": [0], "max_test": 10}


# -- the pieces ------------------------------------------------------------------------------------------------
def budget_subset(query_ids: Sequence[str], budget: int, seed: int) -> list[str]:
    """The first ``budget`` of ``query_ids`` in the seeded order (sorted, then ``random.Random(seed)``-shuffled):
    for one seed a smaller budget's subset is a prefix of a larger one's, whatever order the ids come in."""
    if budget < 0:
        raise ValueError(f"a budget is a number of queries >= 0, not {budget}")
    order = sorted(set(query_ids))
    random.Random(seed).shuffle(order)
    return order[:budget]


def _text_key(text: str) -> str:
    # as patent_demo.examiner.text_search recognises a corpus patent's own text: spaces folded, outer dots off
    return " ".join(str(text).split()).strip(". ")


def query_patents(rows: Sequence[dict], corpus, prefer: Collection[str] = ()) -> dict[str, str]:
    """``{row query_id: corpus patent id}`` of the export rows whose query text is a corpus patent's (its title
    + abstract, ``candidate_text``, as the simulated examiner searches it), or its ``query_patent_id``. Patents
    sharing one text (continuations) are one query to the app: the first of them in ``prefer`` (the training
    queries) is taken, else the first in the corpus."""
    from patent_demo.text.search import candidate_text

    by_text: dict[str, list[str]] = {}
    for p in corpus.patents:
        by_text.setdefault(_text_key(candidate_text(p)), []).append(p.id)
    out = {}
    for row in rows:
        ids = by_text.get(_text_key(row.get("query") or ""), [])
        pid = str(row.get("query_patent_id") or "") or next(
            (i for i in ids if i in prefer), ids[0] if ids else ""
        )
        if pid:
            out[str(row["query_id"])] = pid
    return out


def guard_rows(rows: Sequence[dict], corpus, held_out: Sequence[str]) -> tuple[list[dict], dict]:
    """``guard_dssdnet_rows`` with the patents ``held_out`` (the validation and test queries) as its split: rows of
    such a query and judged candidates that are one are dropped. Returns the kept rows and the guard's figures."""
    from train.labels.data import guard_dssdnet_rows

    guarded = copy.copy(corpus)
    guarded.splits = {**corpus.splits, "held_out": sorted(set(held_out))}
    kept, stats = guard_dssdnet_rows(rows, guarded, "held_out")
    return kept, stats.to_dict()


def training_rows(
    rows: Sequence[dict], patent_of: Mapping[str, str], chosen: Sequence[str], corpus, held_out: Sequence[str]
) -> tuple[list[dict], dict]:
    """The rows of the queries ``chosen`` (patent ids), each tied to its patent and codes, through
    :func:`guard_rows`."""
    want = set(chosen)
    picked = []
    for row in rows:
        pid = patent_of.get(str(row.get("query_id")))
        if pid in want:
            row = dict(row, query_patent_id=pid)
            if not row.get("query_codes") and pid in corpus:
                row["query_codes"] = dict(corpus[pid].codes)
            picked.append(row)
    return guard_rows(picked, corpus, held_out)


# -- one fine-tune ---------------------------------------------------------------------------------------------
def finetune_argv(args, rows_file: Path, out: Path, seed: int) -> list[str]:
    """The ``train.dssdnet`` command line of one point (its own evaluation cut to one validation query)."""
    argv = [
        "--init-from",
        str(args.parent),
        "--labels",
        str(rows_file),
        "--corpus",
        str(args.corpus),
        "--split-file",
        str(args.split_file),
        "--out",
        str(out),
        "--seed",
        str(seed),
        "--epochs",
        str(args.epochs),
        "--max-steps",
        str(args.max_steps),
        "--batch-size",
        str(args.batch_size),
        "--lr",
        str(args.lr),
        "--head-lr",
        str(args.head_lr),
        "--schedule",
        "linear",
        "--warmup",
        "0.1",
        "--train-layers",
        str(args.train_layers),
        "--max-length",
        str(args.max_length),
        "--val-fraction",
        "0",
        "--test-fraction",
        "0",
        "--eval-splits",
        "val",
        "--max-queries",
        "1",
        "--k-first",
        "10",
        "--k-rerank",
        "10",
        "--no-eval-before",
        "--cache-dir",
        str(args.cache_dir),
        "--log-every",
        "20",
    ]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    return argv


def settings(args) -> dict:
    keys = (
        "parent",
        "epochs",
        "max_steps",
        "batch_size",
        "lr",
        "head_lr",
        "train_layers",
        "max_length",
        "depth",
    )
    return {k: getattr(args, k) for k in keys} | {
        "split_file": str(args.split_file),
        "labels": str(args.labels),
    }


def run_point(args, scorer: Scorer, rows, patent_of, labelled, held_out, budget: int, seed: int) -> dict:
    """Fine-tune from ``budget`` labelled queries (seed ``seed``) and score it; reused from ``--work`` when there."""
    from train.dssdnet import main as dssdnet
    from train.labels.data import write_rows

    t0 = time.perf_counter()
    chosen = budget_subset(labelled, budget, seed)
    kept, guard = training_rows(rows, patent_of, chosen, scorer.corpus, held_out)
    if not kept:
        raise SystemExit(f"B={budget} seed={seed}: no label rows left after the leak guard")
    work = Path(args.work) / f"b{budget}-s{seed}"
    cached = work / "point.json"
    digest = hashlib.sha1(json.dumps(kept, sort_keys=True).encode("utf-8")).hexdigest()
    want = {
        "settings": settings(args),
        "test_queries": scorer.qids,
        "budget": budget,
        "seed": seed,
        "rows_sha1": digest,
    }
    if cached.is_file():
        old = json.loads(cached.read_text(encoding="utf-8"))
        if all(old.get(k) == v for k, v in want.items()):
            print(f"B={budget} seed={seed}: reused {cached}", flush=True)
            return old | {"reused": True}
    rows_file = write_rows(work / "labels.jsonl", kept)
    out = work / "checkpoint"
    if dssdnet.main(finetune_argv(args, rows_file, out, seed)) != 0:
        raise SystemExit(f"train.dssdnet failed for B={budget} seed={seed}")
    trained = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    per, precision = scorer.reranked(out)
    point = {
        **want,
        "queries": len(chosen),
        "query_ids": chosen,
        "judgements": guard["pairs_used"],
        "guard": guard,
        "steps": trained.get("steps"),
        "epochs_run": trained.get("epochs_run"),
        "train_seconds": trained.get("train_seconds"),
        "precision": precision,
        "per_query": per,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if not args.keep_checkpoints:
        for f in ("model.safetensors", "state.pt"):
            (out / f).unlink(missing_ok=True)
    cached.write_text(json.dumps(point) + "\n", encoding="utf-8")
    return point


# -- the command ----------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--corpus", required=True, help="the cs3245 corpus the examiner labelled in (patent-demo corpus build)")
    a("--labels", required=True, help="the app's label store the simulated examiner wrote (labels.sqlite)")
    a("--split-file", required=True, help="the committed query split (splits/cs3245_text.json)")
    a("--out", required=True, help="the JSON to write")
    a("--parent", default=DEFAULT_PARENT, help="the shipped re-ranker fine-tuned (the app's text model)")
    a(
        "--budgets",
        type=int,
        nargs="+",
        default=[0, 25, 50, 118],
        help="labelled queries per point (0: the parent)",
    )
    a("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the subsets and the fine-tunes")
    a(
        "--top-seeds",
        type=int,
        default=None,
        help="seeds run at the largest budget (default: all; fewer to save time, said in the JSON)",
    )
    a("--max-test", type=int, default=None, help="score only the first N test queries (quick runs)")
    a("--depth", type=int, default=30, help="hybrid candidates re-ranked")
    a("--epochs", type=int, default=2, help="passes over a point's label pairs")
    a("--max-steps", type=int, default=60, help="at most this many optimiser steps per fine-tune")
    a("--batch-size", type=int, default=32, help="pairs per optimiser step")
    a("--lr", type=float, default=2e-5, help="learning rate of the trained encoder layers")
    a("--head-lr", type=float, default=2e-4, help="learning rate of the heads")
    a("--train-layers", type=int, default=2, help="top encoder layers trained (the parent trained 2)")
    a("--max-length", type=int, default=128, help="tokens of a query-candidate pair")
    a("--boot", type=int, default=2000, help="bootstrap resamples")
    a("--eval-batch-size", type=int, default=32, help="pairs per re-ranker forward pass when scoring")
    a(
        "--text-corpus",
        default="../shared/data/cs3245_patsnap_corpus_qrels/patsnap_docs.jsonl",
        help="the JSONL a hash-split parent trained from (to find the test queries it saw)",
    )
    a("--cache-dir", default="cache", help="the app's cache folder (dense index)")
    a(
        "--checkpoints",
        nargs="+",
        default=["checkpoints"],
        help="where the app finds a bi-encoder (dense stage)",
    )
    a("--work", default="runs/loop/text", help="per-point rows, checkpoints and figures")
    a("--keep-checkpoints", action="store_true", help="keep each fine-tuned model's weights under --work")
    a("--threads", type=int, default=1, help="torch (and FAISS) threads")
    a("--quick", action="store_true", help="budgets 0 and 10, seed 0, 10 test queries (CI)")
    return p


def parent_seen(args) -> tuple[set[str], str]:
    """The queries the parent trained (or selected) on, and how that was found (``train.text.rerank_eval``'s rule)."""
    from train.text.rerank_eval import checkpoint_seen_queries

    trained = json.loads((Path(args.parent) / "config.json").read_text(encoding="utf-8")).get("train", {})
    targs = trained.get("args") or {}
    if targs.get("split_file"):
        own = json.loads(Path(targs["split_file"]).read_text(encoding="utf-8"))
        return set(own["train"]) | set(own["val"]), f"the train and val queries of {targs['split_file']}"
    text_corpus = targs.get("text_corpus") or args.text_corpus
    val = float(targs.get("val_fraction") or 0.15)
    test = float(targs["test_fraction"]) if targs.get("test_fraction") is not None else 0.3
    rule = f"the train and val queries of its hash split of {text_corpus}"
    return checkpoint_seen_queries(text_corpus, val, test), rule


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.quick:
        args.budgets, args.seeds = QUICK["budgets"], QUICK["seeds"]
        args.max_test = QUICK["max_test"] if args.max_test is None else args.max_test
    import torch

    from patent_demo.data.corpus import Corpus
    from patent_demo.labels.store import LabelStore
    from patent_demo.text import precision
    from patent_demo.text.fusion import tuned_fusion_weight
    from patent_demo.text.search import candidate_text
    from train.labels.data import read_rows

    torch.set_num_threads(args.threads)
    try:
        import faiss

        faiss.omp_set_num_threads(args.threads)
    except ImportError:
        pass
    started = time.perf_counter()
    if not Path(args.labels).is_file():
        raise SystemExit(
            f"label store {args.labels} not found: run scripts/examiner_sim.py --modality text first"
        )
    split = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
    corpus = Corpus.load(args.corpus, validate=False)
    corpus.splits = {s: list(split[s]) for s in ("train", "val", "test")}  # the committed query split
    held_out = sorted(set(split["val"]) | set(split["test"]))

    # the labels: the store's DSSDNet export (decided text judgements) and the training queries they belong to
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    store = LabelStore(args.labels)
    try:
        annotators = sorted({lab.annotator for lab in store.labels() if lab.modality == "text"})
        store.export_dssdnet(work / "dssdnet.jsonl", corpus=corpus)
    finally:
        store.close()
    rows = read_rows(work / "dssdnet.jsonl", modality="text")
    train_ids = set(split["train"])
    patent_of = query_patents(rows, corpus, train_ids)
    labelled = sorted({pid for pid in patent_of.values() if pid in train_ids})
    not_train = sorted({pid for pid in patent_of.values() if pid not in train_ids})
    unknown = [r["query_id"] for r in rows if str(r["query_id"]) not in patent_of]
    texts = {_text_key(r.get("query") or "") for r in rows}
    never = sorted(q for q in train_ids if q in corpus and _text_key(candidate_text(corpus[q])) not in texts)
    if not labelled:
        raise SystemExit(f"{args.labels}: no text labels on training queries of {args.split_file}")
    budgets = sorted({min(b, len(labelled)) for b in args.budgets})
    print(
        f"{len(rows)} labelled text queries: {len(labelled)} training queries, {len(not_train)} others "
        f"(held out: {len(set(not_train) & set(held_out))}), {len(unknown)} not a corpus patent; "
        f"budgets {budgets}",
        flush=True,
    )

    # the test queries and the first stage
    test = [q for q in split["test"] if q in corpus and corpus.qrels.get(q)][: args.max_test]
    weight = tuned_fusion_weight(args.parent, "hybrid", 100)
    weight_note = "the parent's fusion_pools['hybrid@100'] (the app's default depth)"
    if weight is None:
        weight, weight_note = (
            0.5,
            "0.5: the parent records no weight for the hybrid pool (the app's fallback)",
        )
    scorer = Scorer(corpus, test, args.cache_dir, args.checkpoints, args.depth, weight, args.eval_batch_size)
    hybrid = scorer.hybrid()
    t0 = time.perf_counter()
    zero, zero_precision = scorer.reranked(args.parent)
    zero_seconds = round(time.perf_counter() - t0, 1)
    seen, seen_rule = parent_seen(args)
    unseen = [i for i, q in enumerate(test) if q not in seen]
    print(
        f"{len(test)} test queries ({len(unseen)} unseen by the parent); hybrid {means(hybrid)}; "
        f"B=0 {means(zero['dssdnet'])} fused {means(zero['fused'])} ({zero_seconds} s)",
        flush=True,
    )

    # the points
    top = max(budgets)
    points = []
    for budget in [b for b in budgets if b > 0]:
        seeds = args.seeds[: args.top_seeds] if budget == top and args.top_seeds else args.seeds
        for seed in seeds:
            pt = run_point(args, scorer, rows, patent_of, labelled, held_out, budget, seed)
            entry = {
                "queries": pt["queries"],
                "judgements": pt["judgements"],
                "seed": seed,
                **summarise(pt["per_query"], zero, hybrid, args.boot),
                "unseen_by_parent": summarise(pt["per_query"], zero, hybrid, args.boot, unseen),
                "steps": pt["steps"],
                "epochs_run": pt["epochs_run"],
                "train_seconds": pt["train_seconds"],
                "seconds": pt["seconds"],
                "reused": bool(pt.get("reused")),
                "guard": pt["guard"],
                "query_ids": pt["query_ids"],
                "per_query": pt["per_query"],
            }
            points.append(entry)
            print(
                f"B={budget} seed={seed}: {entry['judgements']} judgements, {entry['steps']} steps; "
                f"MAP@10 {entry['test']['map@10']:.4f} (vs B=0 {entry['vs_zero']['map@10']['diff']:+.4f} "
                f"[{entry['vs_zero']['map@10']['low']:+.4f}, {entry['vs_zero']['map@10']['high']:+.4f}]), "
                f"fused {entry['fused']['map@10']:.4f}; {entry['seconds']} s",
                flush=True,
            )

    zero_entry = {
        "queries": 0,
        "judgements": 0,
        "checkpoint": str(args.parent),
        "precision": zero_precision,
        **summarise(zero, zero, hybrid, args.boot),
        "unseen_by_parent": summarise(zero, zero, hybrid, args.boot, unseen),
        "seconds": zero_seconds,
        "per_query": zero,
    }
    for key in ("vs_zero", "fused_vs_zero"):  # B = 0 against itself says nothing
        zero_entry.pop(key)
        zero_entry["unseen_by_parent"].pop(key)
    grid_note = (
        f"seeds {args.seeds[: args.top_seeds]} at B={top}, {args.seeds} below"
        if args.top_seeds
        else f"seeds {args.seeds} at every budget"
    )
    note = (
        f"Budgets count labelled query texts: {len(labelled)} cover the {len(train_ids) - len(never)} training "
        f"queries the examiner searched (patents with one title + abstract are one query to the app)"
        + (
            f"; never searched: {', '.join(never)} (scripts/examiner_sim.py skips a patent without abstract)"
            if never
            else ""
        )
        + f". The parent trained on {len(test) - len(unseen)} of the {len(test)} test queries (its own split); "
        f"`unseen_by_parent` scores the {len(unseen)} it never saw. R@100 of a re-ranked list is the hybrid's "
        f"(only the top {args.depth} is reordered). {grid_note}."
    )
    out = {
        "command": shlex.join([*PROG.split(), *argv]),
        "modality": "text",
        "split_file": str(args.split_file),
        "corpus": str(args.corpus),
        "labels": {
            "store": str(args.labels),
            "annotators": annotators,
            "labelled_queries": len(rows),
            "training_queries": len(labelled),
            "training_queries_covered": len(train_ids) - len(never),
            "training_queries_never_searched": never,
            "other_queries": not_train,
            "unmatched_rows": unknown,
            "subset_rule": "sorted training query ids shuffled by random.Random(seed), the first B "
            "(nested over B for one seed)",
            "leak_guard": "train.labels.data.guard_dssdnet_rows with the val and test queries of the "
            "split file held out (their rows and judged candidates dropped)",
        },
        "test_queries": len(test),
        "test_query_ids": test,
        "unseen_by_parent": {
            "queries": [test[i] for i in unseen],
            "seen_rule": seen_rule,
            "hybrid": means(pick(hybrid, unseen)) if unseen else None,
        },
        "protocol": {
            "first_stage": f"hybrid (BM25 + dense {scorer.encoder}, patent_demo/configs/hybrid.json) "
            "top 100, the query patent left out; query = title + abstract",
            "depth": args.depth,
            "fusion_weight": weight,
            "fusion_weight_from": weight_note,
            "bootstrap": {
                "resamples": args.boot,
                "seed": 0,
                "level": 0.95,
                "pairs": "per test query, point minus B=0 (or minus hybrid)",
            },
            "lists": {
                "test": "the dssdnet list (hybrid top depth re-ranked)",
                "fused": "hybrid + re-ranker scores of that head, the fusion weight above",
            },
            "recall@100": "equal to the hybrid's for every re-ranked list (only the top depth is reordered)",
            "grid": grid_note,
        },
        "finetune": {k: v for k, v in settings(args).items() if k not in ("split_file", "labels")}
        | {
            "schedule": "linear, warm-up 0.1",
            "validation": "none (--val-fraction 0: the last weights are kept)",
            "path": "train.dssdnet --init-from PARENT --labels ROWS",
        },
        "hybrid": means(hybrid) | {"per_query": hybrid},
        "zero": zero_entry,
        "points": points,
        "cpu": precision.cpu_name(),
        "threads": args.threads,
        "seconds": round(time.perf_counter() - started, 1),  # this run's wall time (reused points cost ~0)
        "grid_seconds": round(
            zero_seconds + sum(p["seconds"] for p in points), 1
        ),  # B = 0 and every point, when run
        "note": note,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {out['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
