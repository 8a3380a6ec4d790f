"""``patent-demo evaluate drawings|text``: the evaluation protocols, per query and per patent, with a paired
bootstrap against a baseline model.

Drawings use the one protocol of ``patent_demo.drawing.protocol`` (the app's Error-analysis tab and
``train.score_drawings`` call it too): the corpus's saved test split, each figure a query against every other
figure of the split (``all``), or one marked query figure per patent (``queries``, the demo corpus). On a
corpus without a test split every figure is evaluated against all others, and the output says so.

Text uses ``patent_demo.text.lists.text_runs``, the lists the app shows (``--model`` bm25, dense, hybrid,
dssdnet: the hybrid top ``--candidates`` re-ranked, fused), the query patent left out, scored against the
corpus qrels (citations) or ``--qrels``; ``--split-file`` takes the queries of a committed split.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from patent_demo.cli.common import (
    add_checkpoints,
    add_corpus,
    load_corpus,
    model_name,
    models,
    project_path,
    resolve_model,
)
from patent_demo.cli.paired import compare, summaries, table, write_json
from patent_demo.cli.text_lists import list_label, resolve_text_list, text_run
from patent_demo.data.corpus import Corpus, read_qrels

DRAWING_KEYS = ("patent_map", "subclass_map", "main_map")
TEXT_KS = (10, 100)


def add_parser(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate a model on a corpus (drawings or text)")
    es = p.add_subparsers(dest="task", required=True, metavar="TASK")
    for task in ("drawings", "text"):
        e = es.add_parser(
            task,
            help=f"evaluate {task} retrieval",
            description=__doc__.split("\n\n", 1)[1],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_corpus(e, required=task == "drawings")
        default_model = "default"
        e.add_argument(
            "--model",
            default=default_model,
            help="default, zero-shot (drawings), or a name from `patent-demo models`; text: bm25, dense, "
            "hybrid, dssdnet, fused, default (the shipped default list) or a DSSDNet checkpoint",
        )
        e.add_argument("--against", default=None, help="a baseline model: paired bootstrap of the difference")
        e.add_argument(
            "--split",
            default=None,
            help="split to evaluate (default: test when the corpus has one; 'all': every patent)",
        )
        e.add_argument(
            "--k", type=int, nargs="+", default=[10] if task == "drawings" else list(TEXT_KS), help="cut-offs"
        )
        e.add_argument("--json", default=None, help="write the full result (per-query values included) here")
        e.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (default 2000)")
        e.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        add_checkpoints(e)
        if task == "drawings":
            e.add_argument(
                "--image-size", type=int, default=None, help="input size in pixels (overrides the model's)"
            )
            e.add_argument(
                "--protocol",
                choices=("all", "queries"),
                default=None,
                help="all: every figure a query; queries: one marked query figure per patent "
                "(default: queries when the corpus marks them, else all)",
            )
            e.add_argument("--batch-size", type=int, default=32, help="figures per embedding batch")
            e.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
            e.add_argument(
                "--feedback-depth",
                type=int,
                default=0,
                metavar="N",
                help="also measure relevance feedback: an examiner simulated from the classification judges "
                "the top N hits, the query is refined (and a second round judges the next N); before / "
                "after on the residual collection (patent_demo.drawing.feedback_eval)",
            )
            e.add_argument("--feedback-rounds", type=int, default=2, help="feedback rounds (default 2)")
            e.add_argument(
                "--before",
                default="",
                help="prior-art cut-off: YYYY-MM-DD for every query, or 'own' (each query patent's filing, "
                "else priority, else publication date): both rankings with the query's own patent left out, "
                "over the whole gallery (the baseline) and over the prior art of the cut-off "
                "(patent_demo.prior_art), a relevant figure the cut-off hides counting as missed",
            )
            e.set_defaults(handler=run_drawings)
        else:
            e.add_argument("--qrels", default=None, help="TREC qrels (default: the corpus's qrels.txt)")
            e.add_argument(
                "--pairs",
                default=None,
                help="a labelled-pair file (DSSDNet TSV or label-export JSONL): rank each query's own "
                "candidates instead of searching the corpus (--corpus then only supplies texts); "
                "or a scored phrase-pair CSV (USPPM: id, anchor, target, context, title, label): "
                "Pearson and Spearman against the human scores (--model: a DSSDNet checkpoint or "
                "dense, the untrained bi-encoder's cosine)",
            )
            e.add_argument(
                "--queries",
                default=None,
                help="query texts for qrels ids that are not corpus patents (TSV id<TAB>text)",
            )
            e.add_argument(
                "--candidates",
                type=int,
                default=100,
                help="hybrid candidates re-ranked (default 100, as the app)",
            )
            e.add_argument(
                "--reranker",
                default=None,
                help="the DSSDNet checkpoint of --model dssdnet/fused (default: the app's)",
            )
            e.add_argument(
                "--split-file",
                default=None,
                help="a committed query split (splits/*.json, train/text/split.py): --split picks its queries",
            )
            e.add_argument(
                "--cache-dir",
                default=project_path("cache"),
                help="where the BM25 index is cached (shared with the app)",
            )
            e.add_argument(
                "--before",
                default="",
                help="prior-art cut-off: YYYY-MM-DD for every query, or 'own' (each query patent's "
                "filing, else priority, else publication date); the search returns only prior art "
                "(published before it, or a patent document filed before it: patent_demo.prior_art); "
                "every query is still scored against all its citations, a cited document the "
                "cut-off hides counting as missed (the output says how many)",
            )
            e.add_argument(
                "--feedback-depth",
                type=int,
                default=0,
                metavar="N",
                help="label each query's top N from the qrels, refine once and report before / after on the "
                "residual collection (patent_demo.cli.text_feedback)",
            )
            e.set_defaults(handler=run_text)


# -- shared ------------------------------------------------------------------------------------------------------
def _split(corpus: Corpus, asked: str | None, protocol: str | None = None) -> tuple[str | None, str, str]:
    """(split name or None for every patent, protocol, a note for the reader): the rule of
    ``patent_demo.drawing.protocol.resolve_split``, shared with the app and ``train.score_drawings``."""
    from patent_demo.drawing.protocol import resolve_split

    split, protocol = resolve_split(corpus, asked or "test", protocol)
    if split is None and asked == "all":
        note = "every patent of the corpus (asked with --split all)"
    elif split is None:
        note = "this corpus has no test split: every figure is evaluated against all others"
    elif asked:
        note = f"split {split!r} ({len(corpus.splits[split])} patents)"
    else:
        note = f"the corpus's saved test split ({len(corpus.splits[split])} patents)"
    return split, protocol, note


def drawing_run(
    corpus: Corpus,
    spec,
    split: str | None,
    protocol: str,
    ks: list[int],
    image_size: int | None,
    batch_size: int,
    device: str,
    keep_embeddings: bool = False,
) -> dict:
    """``evaluate_drawings`` of one model with per-query values."""
    from patent_demo.cli.common import load_drawing_model
    from patent_demo.drawing.protocol import evaluate_drawings

    model, tf = load_drawing_model(spec, image_size, device)
    res = evaluate_drawings(
        model,
        tf,
        corpus,
        split,
        ks=ks,
        protocol=protocol,
        batch_size=batch_size,
        silhouette=False,
        progress=sys.stderr.isatty(),
        per_query=True,
        keep_embeddings=keep_embeddings,
    )
    res["image_size"] = tf.size
    return res


def run_drawings(args: argparse.Namespace) -> int:
    from patent_demo.drawing.protocol import small_split_warning

    corpus = load_corpus(args.corpus)
    split, protocol, note = _split(corpus, args.split, args.protocol)
    warning = small_split_warning(corpus, split)
    if warning:
        print(warning, file=sys.stderr)
    spec = resolve_model(args.model, "drawing", args.checkpoints, corpus)
    if args.feedback_depth < 0 or args.feedback_rounds < 1:
        raise ValueError("--feedback-depth must be >= 0 and --feedback-rounds >= 1")
    depth = args.feedback_depth
    if args.before and (depth or args.against):
        raise ValueError(
            "--before compares the cut-off with no cut-off: give it without --against or --feedback-depth"
        )
    res = drawing_run(
        corpus,
        spec,
        split,
        protocol,
        args.k,
        args.image_size,
        args.batch_size,
        args.device,
        depth > 0 or bool(args.before),
    )
    if args.before:
        from patent_demo.cli.drawings_cutoff import evaluate_cutoff

        return evaluate_cutoff(args, corpus, spec, split, protocol, note, res)
    keys = [*DRAWING_KEYS, *(f"{lvl}_ndcg@{k}" for k in args.k for lvl in ("patent", "subclass", "main"))]
    keys = [k for k in keys if k in res["per_query"]]
    groups = list(res["query_patents"])
    result = {
        "task": "drawings",
        "corpus": str(corpus.root),
        "source": corpus.source_label or corpus.name,
        "evaluated": note + f"; protocol {protocol}",
        "split": split or "all",
        "protocol": protocol,
        "model": spec.key,
        "image_size": res["image_size"],
        "num_queries": len(groups),
        "num_patents": len(set(groups)),
        "num_gallery": res["num_gallery"],
        "summary": summaries(res["per_query"], groups, keys),
        "metrics": res["metrics"],
        "per_class": res["per_class"],
        "query_patents": groups,
        "per_query": res["per_query"],
    }
    if args.against:
        base = resolve_model(args.against, "drawing", args.checkpoints)
        bres = drawing_run(
            corpus, base, split, protocol, args.k, args.image_size, args.batch_size, args.device
        )
        result["against"] = base.key
        result["baseline_summary"] = summaries(bres["per_query"], groups, keys)
        result["baseline_per_query"] = bres["per_query"]
        result["comparison"] = compare(
            res["per_query"], bres["per_query"], groups, keys, args.bootstrap, args.seed
        )
    print(table(result, keys))
    if depth:
        from patent_demo.drawing.feedback_eval import feedback_of_run, feedback_table

        result["feedback"] = fb = feedback_of_run(corpus, split, protocol, res, depth, args)
        print("\n" + feedback_table(fb))
    write_json(result, args.json)
    return 0


# -- text ---------------------------------------------------------------------------------------------------------
def text_queries(corpus: Corpus, qrels: dict, extra_texts: dict[str, str]):
    from patent_demo.text.search import TextQuery, patent_query

    out, missing = [], []
    for qid in sorted(qrels):
        if qid in extra_texts:
            out.append(TextQuery(qid, extra_texts[qid]))
        elif qid in corpus:
            out.append(patent_query(corpus[qid]))
        else:
            missing.append(qid)
    if missing:
        raise ValueError(
            f"{len(missing)} qrels queries are neither corpus patents nor in --queries, e.g. {missing[0]!r}"
        )
    return out


def _pair_reranker(spec, corpus: Corpus | None):
    if spec is None:
        return None
    from patent_demo.registry import default_reranker

    return default_reranker(spec)


def _scored_model(name: str, dirs: list[str]):
    """(label, score function of pairs, context on) of ``--model`` for a scored-pair file: ``dense`` (or
    ``biencoder``) is the packaged bi-encoder's cosine; anything else a DSSDNet checkpoint, its input
    format (the context title or not) as it was trained."""
    from patent_demo.text.scored import biencoder_scores, score_pairs

    if name in ("dense", "biencoder"):
        return "dense (untrained bi-encoder, cosine)", (lambda pairs: (biencoder_scores(pairs), [])), True
    spec = resolve_model(name, "text", dirs)
    if spec is None:
        raise ValueError("bm25 cannot score a phrase pair; give a DSSDNet checkpoint or dense")
    rr = _pair_reranker(spec, None)
    context = not _train_args(spec.path).get("no_context", False)
    return model_name(spec), (lambda pairs: score_pairs(pairs, rr, extra="gate_mean")), context


def run_scored(args: argparse.Namespace) -> int:
    """``--pairs FILE.csv`` of human-scored phrase pairs: Pearson and Spearman of the model's scores; with
    ``--split-file`` (an anchor split, splits/usppm.json) only ``--split``'s anchors; ``--against`` adds a
    paired bootstrap of the difference, resampling anchors."""
    from patent_demo.text.scored import (
        bootstrap_correlation_diff,
        correlations,
        read_scored_pairs,
        spread,
        to_pairs,
    )

    rows = read_scored_pairs(args.pairs)
    where = "every row"
    if args.split_file:
        split = args.split or "test"
        anchors = set(json.loads(Path(args.split_file).read_text(encoding="utf-8"))[split])
        rows = [r for r in rows if r.anchor in anchors]
        where = f"the {split} anchors of {args.split_file}"
    if not rows:
        raise ValueError(f"{args.pairs}: no scored pairs to evaluate ({where})")
    labels = [r.label for r in rows]

    def scored(name: str) -> tuple[str, np.ndarray, list]:
        label, fn, context = _scored_model(name, args.checkpoints)
        scores, gate = fn(to_pairs(rows, context))
        return label, np.asarray(scores), gate

    name, scores, gate = scored(_scored_default(args.checkpoints) if args.model == "default" else args.model)
    result = {
        "task": "text",
        "corpus": args.pairs,
        "source": "scored phrase pairs",
        "evaluated": f"{len(rows)} pairs of {where}",
        "model": name,
        "anchors": len({r.anchor for r in rows}),
        **correlations(scores, labels),
        "gate_mean": spread(gate),
        "ids": [r.id for r in rows],
        "scores": [float(x) for x in scores],
    }
    if args.against:
        bname, bscores, _ = scored(args.against)
        groups = [r.anchor for r in rows]
        result.update(
            against=bname,
            baseline=correlations(bscores, labels),
            comparison={
                m: bootstrap_correlation_diff(scores, bscores, labels, groups, m, args.bootstrap, args.seed)
                for m in ("pearson", "spearman")
            },
        )
    print(
        f"{name}: Pearson {result['pearson']:.4f}  Spearman {result['spearman']:.4f}  "
        f"({len(rows)} pairs, {result['anchors']} anchors, {where})"
    )
    if args.against:
        for m, c in result["comparison"].items():
            print(
                f"  {m} - {result['against']}: {c['diff']:+.4f} [{c['low']:+.4f}, {c['high']:+.4f}] (anchors resampled)"
            )
    write_json(result, args.json)
    return 0


def _train_args(path) -> dict:
    """The training command's arguments a checkpoint recorded (``config.json`` ``train.args``), ``{}`` without."""
    from patent_demo.checkpoint import config_or_none

    return ((config_or_none(path) or {}).get("train") or {}).get("args") or {}


def _scored_default(dirs: list[str]) -> str:
    """``--model default`` for scored pairs: the DSSDNet checkpoint trained on scored pairs, else dense."""
    for m in models(dirs):
        if m.task == "text" and m.path is not None:
            if _train_args(m.path).get("scored_pairs"):
                return str(m.path)
    return "dense"


def run_pairs(args: argparse.Namespace) -> int:
    """``--pairs``: each query's labelled candidates ranked by the model (``patent_demo.text.pair_scores``)."""
    from patent_demo.text.scored import is_scored_csv

    if is_scored_csv(args.pairs):
        return run_scored(args)
    from patent_demo.metrics.text import TEXT_METRICS, per_query_metrics
    from patent_demo.text.pair_scores import pair_run
    from patent_demo.text.pairs import pair_qrels, read_pair_file

    corpus = load_corpus(args.corpus) if args.corpus else None
    pairs = read_pair_file(args.pairs, library=corpus)
    if not pairs:
        raise ValueError(f"{args.pairs}: no labelled pairs")
    qrels = pair_qrels(pairs)
    keys = [f"{m}@{k}" for k in args.k for m in TEXT_METRICS]

    def scored(name: str) -> tuple[str, dict]:
        spec = resolve_model(name, "text", args.checkpoints)
        pq = per_query_metrics(pair_run(pairs, _pair_reranker(spec, corpus)), qrels, args.k)
        return model_name(spec), pq

    name, pq = scored(args.model)
    qids = sorted(pq)
    per_query = {k: [pq[q][k] for q in qids] for k in keys}
    result = {
        "task": "text",
        "corpus": args.pairs,
        "source": "labelled pairs",
        "evaluated": f"{len(pairs)} labelled pairs, each query's own candidates ranked",
        "model": name,
        "num_queries": len(qids),
        "num_patents": len(qids),
        "summary": summaries(per_query, qids, keys),
        "queries": qids,
        "per_query": per_query,
    }
    if args.against:
        bname, bq = scored(args.against)
        bper = {k: [bq[q][k] for q in qids] for k in keys}
        result.update(
            against=bname,
            baseline_summary=summaries(bper, qids, keys),
            baseline_per_query=bper,
            comparison=compare(per_query, bper, qids, keys, args.bootstrap, args.seed),
        )
    print(table(result, keys))
    write_json(result, args.json)
    return 0


def run_text(args: argparse.Namespace) -> int:
    from patent_demo.cli.search_cmd import read_text_queries
    from patent_demo.metrics.text import TEXT_METRICS, per_query_metrics

    if args.pairs:
        return run_pairs(args)
    if not args.corpus:
        raise ValueError("give --corpus (a built corpus) or --pairs (a labelled-pair file)")
    corpus = load_corpus(args.corpus)
    qrels = read_qrels(args.qrels) if args.qrels else corpus.qrels
    if not qrels:
        raise ValueError(
            f"{corpus.root} has no qrels.txt; give judgements with --qrels (see `patent-demo qrels convert`)"
        )
    split, _, note = _split(corpus, args.split)
    if args.split_file:
        chosen = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
        split = args.split or "test"
        if split not in ("train", "val", "test"):
            raise ValueError(f"--split-file holds train, val and test; got --split {split!r}")
        qrels = {q: d for q, d in qrels.items() if q in set(chosen[split])}
        note = f"the {split} queries of {args.split_file}"
    elif split is not None and not args.qrels:
        ids = set(corpus.splits[split])
        qrels = {q: d for q, d in qrels.items() if q in ids}
        note = f"qrels queries in {note}"
    elif split is not None:
        note = "every query of --qrels"
    extra = dict(read_text_queries(args.queries)) if args.queries else {}
    queries = text_queries(corpus, qrels, extra)
    list_name, spec = resolve_text_list(args.model, args.reranker, args.checkpoints, corpus)
    allowed, cutoffs = None, None
    if args.before:
        from patent_demo.filters import allowed_per_query, cutoff_of_queries, parse_date

        qids_all = [q.qid for q in queries]
        cutoffs = (
            cutoff_of_queries(qids_all, corpus)
            if args.before == "own"
            else dict.fromkeys(qids_all, parse_date(args.before, "cut-off date"))
        )
        allowed = allowed_per_query(qids_all, corpus, cutoffs)
        note += f"; prior-art cut-off {args.before}"
    if args.feedback_depth:
        from patent_demo.cli.text_feedback import evaluate_feedback

        return evaluate_feedback(args, corpus, queries, qrels, list_name, spec, allowed, cutoffs, note)
    hidden: dict[str, list[str]] = {}
    run = text_run(
        corpus, spec, queries, args.k, args.candidates, args.cache_dir, args.checkpoints, allowed, list_name
    )
    if cutoffs is not None:
        from patent_demo.filters import apply_cutoff, hidden_relevant

        run, qrels = apply_cutoff(run, qrels, corpus, cutoffs)
        hidden = hidden_relevant(qrels, corpus, cutoffs)
    pq = per_query_metrics(run, qrels, args.k)
    qids = sorted(pq)
    keys = [f"{m}@{k}" for k in args.k for m in TEXT_METRICS]
    per_query = {k: [pq[q][k] for q in qids] for k in keys}
    result = {
        "task": "text",
        "corpus": str(corpus.root),
        "source": corpus.source_label or corpus.name,
        "evaluated": note + (f"; the hybrid top {args.candidates} re-ranked" if spec is not None else ""),
        "model": list_label(list_name, spec),
        "num_queries": len(qids),
        "num_patents": len(qids),
        "summary": summaries(per_query, qids, keys),
        "queries": qids,
        "per_query": per_query,
    }
    if cutoffs is not None:
        from patent_demo.prior_art import cutoff_summary

        result["cutoff"] = cutoff_summary(qrels, corpus, cutoffs, hidden)
        result["evaluated"] += "; " + result["cutoff"]["line"]
    if args.against:
        base_list, base = resolve_text_list(args.against, args.reranker, args.checkpoints, corpus)
        brun = text_run(
            corpus,
            base,
            queries,
            args.k,
            args.candidates,
            args.cache_dir,
            args.checkpoints,
            allowed,
            base_list,
        )
        if cutoffs is not None:
            brun, _ = apply_cutoff(brun, qrels, corpus, cutoffs)
        bq = per_query_metrics(brun, qrels, args.k)
        bper = {k: [bq[q][k] for q in qids] for k in keys}
        result["against"] = list_label(base_list, base)
        result["baseline_summary"] = summaries(bper, qids, keys)
        result["baseline_per_query"] = bper
        result["comparison"] = compare(per_query, bper, qids, keys, args.bootstrap, args.seed)
    print(table(result, keys))
    write_json(result, args.json)
    return 0
