"""Relevance feedback on the text lists, and its measurement on the residual collection.

An examiner's labels (qid -> {patent id: label}; a label as ``patent_demo.search.feedback.split_labels`` reads it:
a grade name, or a qrels grade, ``rel >= 1`` relevant, ``0`` not) change a text search in two places:

* the **dense** query: the bi-encoder's query vector refined by Rocchio (``patent_demo.search.feedback.refine``,
  the one home of the refined query) with the dense index's stored vectors of the labelled patents;
* the **BM25** query, where asked: expanded by RM3 with the relevant patents' terms
  (``patent_demo.text.expansion``).

The lists are then made as always (``patent_demo.text.lists.text_runs`` with ``query_vectors`` and
``term_weights``), so the hybrid fuses the refined stages and a re-ranked list re-ranks the refined pool.
A query without labels searches exactly as before. Whether the app offers text feedback, and with which
weights, is the ``text`` part of ``patent_demo/configs/feedback.json``, chosen on validation by
``python -m train.feedback.text`` (``docs/feedback_text.md``).

The measurement (:func:`simulate_examiner`, :func:`residual_comparison`): the examiner labels the top
``depth`` hits of a list from the qrels (a cited patent relevant, any other hit not), the refined search
runs once, and both lists are scored on the residual collection (``patent_demo.search.feedback.residual``: the
judged hits removed from both lists and from the qrels, so a query whose every relevant patent was
already seen drops out), with a paired bootstrap of after - before over the queries.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from patent_demo.results import Results
from patent_demo.search.feedback import CONFIG, Feedback, Refined, refine, residual, split_labels
from patent_demo.text.expansion import RM3, expanded_queries

Labels = Mapping[str, Mapping[str, int | str]]
RESIDUAL_KEYS = ("map@10", "ndcg@10", "recall@10", "recall@100")


@dataclass(frozen=True)
class TextFeedback:
    """How labels change a text search: ``dense`` (Rocchio weights; None: the dense query stays) and
    ``lexical`` (RM3 settings; None: the BM25 query stays); ``offered`` and ``reason``: whether the app
    offers it, and why (the config's words)."""

    dense: Feedback | None = Feedback(1.0, 0.3)
    lexical: RM3 | None = None
    offered: bool = False
    reason: str = ""

    @classmethod
    def load(cls, path: str | Path = CONFIG) -> TextFeedback:
        """The ``text`` part of the feedback config (``beta``, ``gamma``, optional ``rm3`` {terms,
        original}, ``offered``, ``reason``)."""
        part = json.loads(Path(path).read_text(encoding="utf-8"))["text"]
        rm3 = part.get("rm3")
        return cls(
            Feedback(
                float(part["beta"]), float(part["gamma"]), part.get("rule", ""), part.get("command", "")
            ),
            RM3(int(rm3["terms"]), float(rm3["original"])) if rm3 else None,
            bool(part.get("offered", False)),
            str(part.get("reason", "")),
        )


@dataclass
class FeedbackInputs:
    """What a refined text search is given: the query vectors ``[Q, D]`` (None: no dense stage to refine),
    the expanded BM25 queries (qid -> {term: weight}), each refined query's :class:`Refined`, and the
    labelled ids that are not patents of the index (ignored)."""

    query_vectors: np.ndarray | None = None
    term_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    refined: dict[str, Refined] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    def note(self) -> str:
        """One line for the reader: queries refined, labels used, labelled ids ignored."""
        pos = sum(r.relevant for r in self.refined.values())
        neg = sum(r.not_relevant for r in self.refined.values())
        parts = [f"{len(self.refined)} queries refined with {pos + neg} labels ({pos} relevant, {neg} not)"]
        if self.term_weights:
            parts.append(f"{len(self.term_weights)} BM25 queries expanded (RM3)")
        if self.unknown:
            parts.append(
                f"{len(self.unknown)} labelled ids not in the corpus ignored, e.g. {self.unknown[0]}"
            )
        return "; ".join(parts)


def feedback_inputs(
    stage, queries: Sequence, labels: Labels, settings: TextFeedback, library, query_vectors=None
) -> FeedbackInputs:
    """The refined query vectors and expanded BM25 queries of ``queries`` (``TextQuery``) for ``labels``,
    on ``stage`` (``patent_demo.text.lists.FirstStage``; the dense part only where it has a dense index
    and encoder). Queries without labels keep their encoded vector and their text. ``query_vectors``
    ``[Q, D]``: the queries already encoded (copied, not changed)."""
    out = FeedbackInputs()
    labelled = {q.qid: labels[q.qid] for q in queries if labels.get(q.qid)}
    known = set(stage.dense.ids) if stage.dense is not None else set(stage.bm25.doc_ids)
    out.unknown = sorted({d for lab in labelled.values() for d in lab if d not in known})
    if (
        settings.dense is not None
        and stage.dense is not None
        and (stage.encoder is not None or query_vectors is not None)
    ):
        vecs = np.array(
            stage.encoder.encode([q.text for q in queries]) if query_vectors is None else query_vectors,
            dtype=np.float32,
        )
        for i, q in enumerate(queries):
            if q.qid not in labelled:
                continue
            rel, nrel = split_labels(labelled[q.qid])
            r = refine(vecs[i], _rows(stage.dense, rel), _rows(stage.dense, nrel), settings.dense)
            vecs[i] = r.vector
            out.refined[q.qid] = r
        out.query_vectors = vecs
    if settings.lexical is not None:
        out.term_weights = expanded_queries(stage.bm25, queries, labelled, library, settings.lexical)
    return out


def _rows(index, ids: Sequence[str]) -> np.ndarray:
    """The stored vectors ``[n, D]`` of those ``ids`` the dense index holds."""
    rows = []
    for d in ids:
        try:
            rows.append(index.embedding(d))
        except KeyError:  # not a patent of the index: counted in FeedbackInputs.unknown
            continue
    return np.stack(rows) if rows else np.zeros((0, index.dim), dtype=np.float32)


# -- measurement on the residual collection -------------------------------------------------------------------
def simulate_examiner(
    run: Mapping[str, Results], qrels: Mapping[str, Mapping[str, int]], depth: int
) -> dict[str, dict[str, int]]:
    """The labels an examiner who knows the qrels gives the top ``depth`` hits of each query of ``run``:
    the qrels grade of a hit (``>= 1`` relevant), 0 for a hit the qrels do not list."""
    if depth < 1:
        raise ValueError(f"the feedback depth is at least 1 hit, got {depth}")
    return {q: {d: int(qrels.get(q, {}).get(d, 0)) for d in res.ids[:depth]} for q, res in run.items()}


def residual_comparison(
    before: Mapping[str, Results],
    after: Mapping[str, Results],
    qrels: Mapping[str, Mapping[str, int]],
    judged: Mapping[str, Collection[str]],
    ks: Sequence[int] = (10, 100),
    keys: Sequence[str] = RESIDUAL_KEYS,
    resamples: int = 2000,
    seed: int = 0,
) -> dict:
    """``before`` and ``after`` scored on the residual collection of ``judged`` (qid -> ids seen): the
    mean of each metric of ``keys`` before and after, and the paired bootstrap of after - before
    (``patent_demo.metrics.paired_bootstrap``) over the queries left with a relevant patent, how many of
    them the feedback changed; per-query values kept."""
    from patent_demo.metrics import paired_bootstrap
    from patent_demo.metrics.text import per_query_metrics

    rest = residual(qrels, judged)
    pb = per_query_metrics(residual(before, judged), rest, ks)
    pa = per_query_metrics(residual(after, judged), rest, ks)
    qids = sorted(pb)
    keys = [key for key in keys if qids and key in pb[qids[0]]]
    out = {
        "queries": len(qids),
        "qids": qids,
        "before": {},
        "after": {},
        "difference": {},
        "changed": {},
        "per_query": {},
    }
    for key in keys:
        b = [pb[q][key] for q in qids]
        a = [pa[q][key] for q in qids]
        out["before"][key] = float(np.mean(b)) if qids else float("nan")
        out["after"][key] = float(np.mean(a)) if qids else float("nan")
        out["difference"][key] = paired_bootstrap(a, b, n_boot=resamples, seed=seed)
        out["changed"][key] = sum(1 for x, y in zip(a, b, strict=True) if x != y)
        out["per_query"][key] = {"before": b, "after": a}
    return out


def residual_table(rows: Mapping[str, Mapping], key: str = "map@10") -> str:
    """A markdown table of :func:`residual_comparison` results, one row per named result."""
    lines = [
        f"| list | queries | {key} before | {key} after | after - before [95 %] |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        d = r["difference"].get(key)
        if d is None:
            lines.append(f"| {name} | {r['queries']} | | | |")
            continue
        lines.append(
            f"| {name} | {r['queries']} | {r['before'][key]:.3f} | {r['after'][key]:.3f} | "
            f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] |"
        )
    return "\n".join(lines)
