"""Human-scored phrase pairs in a classification context: the USPPM file format (``id, anchor, target,
context, title, label``; Google's "U.S. Patent Phrase to Phrase Matching" data) and how a re-ranker is
scored on it (Pearson and Spearman against the human scores).

* :func:`read_scored_pairs`: a USPPM CSV -> :class:`ScoredPair` rows, checked (columns, labels in [0, 1]).
* :func:`to_pairs`: rows -> the :class:`patent_demo.text.pairs.Pair` DSSDNet trains on. The query is the
  anchor; the candidate is the target, followed by the CPC context's title when ``context`` is on
  (``target [SEP] title``, the pair encoding's third segment). The domain label ``t`` is
  :func:`domain_sensitive_t`, from training rows only; evaluation pairs carry NaN, so the model predicts it.
* :func:`correlations`: Pearson and Spearman (average ranks for ties) of scores against labels.
* :func:`score_pairs` / :func:`evaluate_scored`: a re-ranker's scores of the pairs through its one
  scoring path (``Reranker.rank``), and the JSON ``patent-demo evaluate text --pairs FILE.csv`` prints.

The domain label: in this data the same (anchor, target) pair can be scored in several CPC contexts, and
in some its score changes with the context. ``t = 1`` marks a pair whose human score differs between the
contexts it was scored in, ``t = 0`` one scored the same in two or more contexts, NaN one scored in a
single context (unknown). It is the domain-*sensitive* part of the similarity that the gate is meant to
separate, and the domain head ``g_T`` learns to tell it from ``e_ds`` (Eq. 10).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from patent_demo.data.corpus import CorpusError
from patent_demo.text.pairs import Pair

COLUMNS = ("id", "anchor", "target", "context", "title", "label")
CONTEXT_SEP = " [SEP] "


@dataclass(frozen=True)
class ScoredPair:
    """One human-scored phrase pair: ``label`` in [0, 1] is the similarity of ``target`` to ``anchor``
    in the CPC class ``context`` (whose title is ``title``)."""

    id: str
    anchor: str
    target: str
    context: str
    title: str
    label: float


def is_scored_csv(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a CSV whose header holds the USPPM columns."""
    if Path(path).suffix.lower() != ".csv":
        return False
    try:
        with open(path, encoding="utf-8", newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError):
        return False
    return set(COLUMNS) <= {h.strip() for h in header}


def read_scored_pairs(path: str | os.PathLike) -> list[ScoredPair]:
    """The rows of a USPPM CSV (``id, anchor, target, context, title, label``; other columns ignored).

    Raises :class:`CorpusError` naming the file and line for a missing column, an empty anchor or
    target, or a label that is not a number in [0, 1]."""
    path = Path(path)
    try:
        f = open(path, encoding="utf-8", newline="")
    except OSError as err:
        raise CorpusError(f"{path}: cannot read ({err.strerror or err})") from err
    rows: list[ScoredPair] = []
    with f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in {h.strip() for h in reader.fieldnames or []}]
        if missing:
            raise CorpusError(f"{path}: missing column(s) {missing}; a scored-pair CSV has {list(COLUMNS)}")
        for lineno, raw in enumerate(reader, 2):
            row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
            if not row["anchor"] or not row["target"]:
                raise CorpusError(f"{path}:{lineno}: empty anchor or target")
            try:
                label = float(row["label"])
            except ValueError:
                raise CorpusError(f"{path}:{lineno}: label {row['label']!r} is not a number") from None
            if not 0.0 <= label <= 1.0 or math.isnan(label):
                raise CorpusError(f"{path}:{lineno}: label {label} lies outside [0, 1]")
            rows.append(
                ScoredPair(
                    row["id"] or f"{lineno}",
                    row["anchor"],
                    row["target"],
                    row["context"],
                    row["title"],
                    label,
                )
            )
    return rows


def domain_sensitive_t(rows: Iterable[ScoredPair]) -> dict[tuple[str, str], float]:
    """``{(anchor, target): t}`` over ``rows`` (see the module docstring): 1.0 when the pair's label
    differs between its contexts, 0.0 when it is the same in two or more, NaN when scored in one."""
    by_pair: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        by_pair.setdefault((r.anchor, r.target), {})[r.context] = r.label
    return {
        key: (float(len(set(ctx.values())) > 1) if len(ctx) > 1 else math.nan) for key, ctx in by_pair.items()
    }


def candidate_text(row: ScoredPair, context: bool = True) -> str:
    """The candidate side of a pair: the target, then the context's title when ``context`` is on."""
    title = row.title or row.context
    return f"{row.target}{CONTEXT_SEP}{title}" if context and title else row.target


def to_pairs(
    rows: Sequence[ScoredPair], context: bool = True, t: Mapping[tuple[str, str], float] | None = None
) -> list[Pair]:
    """DSSDNet pairs of ``rows`` (query = anchor, so a group is one anchor); ``t`` from the mapping
    :func:`domain_sensitive_t` gives (training rows), NaN without one (evaluation: never from labels)."""
    t = t or {}
    return [
        Pair(
            r.anchor,
            r.anchor,
            candidate_text(r, context),
            r.label,
            t.get((r.anchor, r.target), math.nan),
            r.id,
        )
        for r in rows
    ]


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's r of two equal-length sequences; NaN when either is constant or shorter than 2."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"pearson needs two 1-d sequences of one length; got {x.shape} and {y.shape}")
    if len(x) < 2:
        return math.nan
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(dx @ dx) * float(dy @ dy))
    return float(dx @ dy) / denom if denom > 0 else math.nan


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the average ranks."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"spearman needs two 1-d sequences of one length; got {x.shape} and {y.shape}")
    return pearson(_ranks(x), _ranks(y))


def correlations(scores: Sequence[float], labels: Sequence[float]) -> dict[str, float]:
    """``{"pearson", "spearman", "pairs"}`` of ``scores`` against ``labels``."""
    return {"pearson": pearson(scores, labels), "spearman": spearman(scores, labels), "pairs": len(labels)}


def score_pairs(pairs: Sequence[Pair], model: Any, batch_size: int = 128, extra: str | None = None):
    """The re-ranker's score of every pair (in the order given), through ``Reranker.rank`` (one call per
    query, its ``t`` from the pairs: NaN -> predicted); with ``extra`` (e.g. ``"gate_mean"``) also that
    explanation value per pair: ``(scores, values)``."""
    from patent_demo.text.pairs import group_pairs

    ids = [p.doc_id for p in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError("scored pairs need unique ids (the file's id column)")
    score_of: dict[str, float] = {}
    extra_of: dict[str, Any] = {}
    for _, group in group_pairs(pairs).items():
        known = [None if p.t != p.t else int(p.t >= 0.5) for p in group]
        res = model.rank(
            group[0].query, [(p.doc_id, p.doc, None) for p in group], batch_size=batch_size, known_t=known
        )
        score_of.update(zip(res.ids, res.scores.tolist(), strict=True))
        if extra is not None:
            extra_of.update(
                zip(res.ids, [(e or {}).get(extra) for e in res.extras or [None] * len(res)], strict=True)
            )
    scores = np.asarray([score_of[i] for i in ids], dtype=np.float64)
    return (scores, [extra_of[i] for i in ids]) if extra is not None else scores


def spread(values: Sequence[float | None]) -> dict[str, float] | None:
    """Mean, standard deviation and the 5th / 95th percentiles of ``values`` (None when there are none)."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if not len(x):
        return None
    return {
        "mean": float(x.mean()),
        "std": float(x.std()),
        "p5": float(np.percentile(x, 5)),
        "p95": float(np.percentile(x, 95)),
    }


def evaluate_scored(
    rows: Sequence[ScoredPair], model: Any, context: bool = True, batch_size: int = 128
) -> dict:
    """Pearson and Spearman of ``model``'s scores against the human labels of ``rows`` (all, and per CPC
    section), with the scores themselves (for paired bootstraps over anchors)."""
    pairs = to_pairs(rows, context)
    scores = score_pairs(pairs, model, batch_size)
    labels = np.asarray([r.label for r in rows])
    sections: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        sections.setdefault(r.context[:1].upper() or "?", []).append(i)
    return {
        **correlations(scores, labels),
        "anchors": len({r.anchor for r in rows}),
        "by_section": {s: correlations(scores[idx], labels[idx]) for s, idx in sorted(sections.items())},
        "ids": [r.id for r in rows],
        "anchor_of": [r.anchor for r in rows],
        "scores": [float(s) for s in scores],
        "labels": labels.tolist(),
    }


def bootstrap_correlation_diff(
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    labels: Sequence[float],
    groups: Sequence[str],
    metric: str = "pearson",
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """Paired bootstrap of ``metric(a) - metric(b)`` against ``labels``, resampling whole ``groups``
    (anchors: the pairs of one anchor are not independent). Returns the observed difference and the
    2.5 / 97.5 percentiles."""
    fn = {"pearson": pearson, "spearman": spearman}[metric]
    a, b, y = (np.asarray(v, dtype=np.float64) for v in (scores_a, scores_b, labels))
    keys = sorted(set(groups))
    members = {k: [] for k in keys}
    for i, g in enumerate(groups):
        members[g].append(i)
    index = [np.asarray(members[k]) for k in keys]
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_boot)
    for n in range(n_boot):
        idx = np.concatenate([index[j] for j in rng.integers(len(keys), size=len(keys))])
        diffs[n] = fn(a[idx], y[idx]) - fn(b[idx], y[idx])
    return {
        "diff": fn(a, y) - fn(b, y),
        "low": float(np.percentile(diffs, 2.5)),
        "high": float(np.percentile(diffs, 97.5)),
        "groups": len(keys),
        "n_boot": n_boot,
    }


def biencoder_scores(pairs: Sequence[Pair], encoder: Any = None, batch_size: int = 64) -> np.ndarray:
    """The untrained baseline: cosine of the packaged MiniLM bi-encoder's embeddings of the query and the
    candidate's first segment (the target; the context title is not embedded), per pair in order."""
    if encoder is None:
        from patent_demo.text.dense import TextEncoder

        encoder = TextEncoder()
    queries = sorted({p.query for p in pairs})
    targets = sorted({p.doc.split(CONTEXT_SEP)[0] for p in pairs})
    q = dict(zip(queries, encoder.encode(queries, batch_size=batch_size), strict=True))
    d = dict(zip(targets, encoder.encode(targets, batch_size=batch_size), strict=True))
    return np.asarray([float(q[p.query] @ d[p.doc.split(CONTEXT_SEP)[0]]) for p in pairs])
