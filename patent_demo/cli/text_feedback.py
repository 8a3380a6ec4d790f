"""Relevance feedback in ``patent-demo search text --feedback QRELS`` and ``patent-demo evaluate text
--feedback-depth N`` (the computation is ``patent_demo.text.feedback``'s; this module reads the labels,
checks them against the list asked for and reports).

``--feedback`` takes TREC qrels ``qid 0 docid rel`` (qid as the run prints it, docid a corpus patent,
``rel >= 1`` relevant, ``0`` not relevant): each query with lines ranks with its dense query vector refined
by Rocchio (the ``text`` weights of ``patent_demo/configs/feedback.json``), which the hybrid list fuses and
the re-ranked lists re-rank; a query without lines ranks as before. ``--feedback-depth`` labels the top N
hits of each query from the qrels, searches again once with those labels and reports both lists on the
residual collection (the judged hits removed from both and from the qrels) with a paired bootstrap.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from patent_demo.cli.text_lists import list_label, text_run
from patent_demo.data.corpus import Corpus
from patent_demo.search.feedback import read_qrels
from patent_demo.text.feedback import TextFeedback, residual_comparison, simulate_examiner

METRICS = ("map", "ndcg", "recall")


def check_feedback_list(list_name: str, settings: TextFeedback) -> None:
    """A ``ValueError`` when ``list_name`` has nothing the labels can refine."""
    if list_name == "bm25" and settings.lexical is None:
        raise ValueError(
            "--feedback refines the dense query vector, and the bm25 list has none; use --model dense or "
            "hybrid (lexical feedback, RM3, is not shipped: see docs/feedback_text.md)"
        )


def feedback_labels(
    path: str, qids: Sequence[str], list_name: str, settings: TextFeedback, corpus: Corpus
) -> dict[str, dict[str, int]]:
    """The labels of ``--feedback`` for the queries ``qids`` (qrels of other qids are named on stderr and
    ignored); a malformed line, a judged id that is no corpus patent or an unusable list is a
    ``ValueError`` naming it."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"--feedback: qrels file {path} not found")
    check_feedback_list(list_name, settings)
    qrels = read_qrels(path)
    unknown = sorted({d for docs in qrels.values() for d in docs if d not in corpus})
    if unknown:
        raise ValueError(
            f"--feedback {path}: {len(unknown)} judged ids are not patents of the corpus, e.g. {unknown[0]!r}"
        )
    other = sorted(set(qrels) - set(qids))
    if other:
        print(
            f"note: --feedback has lines for {len(other)} qids that are not queries of this run "
            f"(ignored), e.g. {other[0]!r}",
            file=sys.stderr,
        )
    if not settings.offered and settings.reason:
        print(f"note: the app does not offer text feedback: {settings.reason}", file=sys.stderr)
    return {q: qrels[q] for q in qids if q in qrels}


def evaluate_feedback(
    args: argparse.Namespace,
    corpus: Corpus,
    queries,
    qrels: dict,
    list_name: str,
    spec,
    allowed,
    cutoffs,
    note: str,
) -> int:
    """``evaluate text --feedback-depth``: the list before and after one round of feedback, scored on the
    residual collection; prints a table and writes ``--json``."""
    from patent_demo.filters import apply_cutoff

    depth = args.feedback_depth
    settings = TextFeedback.load()
    check_feedback_list(list_name, settings)
    ks = sorted(set(args.k))
    deep = [max(ks) + depth]  # the residual list keeps max(ks) hits after the judged ones leave

    def one(labels=None):
        run = text_run(
            corpus,
            spec,
            queries,
            deep,
            args.candidates,
            args.cache_dir,
            args.checkpoints,
            allowed,
            list_name,
            labels=labels,
            feedback=settings,
        )
        return run if cutoffs is None else apply_cutoff(run, qrels, corpus, cutoffs)[0]

    before = one()
    if cutoffs is not None:  # relevant patents after a query's cut-off are not prior art: out of the qrels
        qrels = apply_cutoff(before, qrels, corpus, cutoffs)[1]
    labels = simulate_examiner(before, qrels, depth)
    after = one(labels)
    judged = {q: set(lab) for q, lab in labels.items()}
    keys = [f"{m}@{k}" for k in ks for m in METRICS]
    res = residual_comparison(before, after, qrels, judged, ks, keys, args.bootstrap, args.seed)
    dense = settings.dense
    result = {
        "task": "text",
        "corpus": str(corpus.root),
        "source": corpus.source_label or corpus.name,
        "evaluated": note,
        "model": list_label(list_name, spec),
        "feedback_depth": depth,
        "feedback": {
            "dense": None if dense is None else {"beta": dense.beta, "gamma": dense.gamma},
            "rm3": None if settings.lexical is None else settings.lexical.to_dict(),
            "offered_in_app": settings.offered,
            "reason": settings.reason,
        },
        "judged": {
            "queries": len(labels),
            "relevant": sum(1 for lab in labels.values() for v in lab.values() if v >= 1),
            "not_relevant": sum(1 for lab in labels.values() for v in lab.values() if v < 1),
        },
        "residual": res,
    }
    print(feedback_table(result, keys))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def feedback_table(result: dict, keys: Sequence[str]) -> str:
    res, j = result["residual"], result["judged"]
    fb = result["feedback"]["dense"]
    weights = f"Rocchio beta {fb['beta']:g}, gamma {fb['gamma']:g}" if fb else "no dense feedback"
    lines = [
        f"text · corpus {result['corpus']} ({result['source']}) · {result['evaluated']}",
        f"model {result['model']} · feedback: top {result['feedback_depth']} judged from the qrels "
        f"({j['relevant']} relevant, {j['not_relevant']} not, {j['queries']} queries), {weights}",
        f"residual collection (judged hits removed from both lists and the qrels): {res['queries']} queries "
        "with an unseen relevant patent",
        "",
    ]
    head = f"{'metric':12s} {'before':>8s} {'after':>8s}  {'after - before [95% CI]':>28s} {'P(<=0)':>6s}"
    lines += [head, "-" * len(head)]
    for k in keys:
        if k not in res["difference"]:
            continue
        d = res["difference"][k]
        ci = f"{d['diff']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"
        lines.append(f"{k:12s} {res['before'][k]:8.4f} {res['after'][k]:8.4f}  {ci:>28s} {d['p_le_0']:6.3f}")
    return "\n".join(lines)
