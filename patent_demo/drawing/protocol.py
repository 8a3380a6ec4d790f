"""The one drawing-evaluation protocol: which figures are queries and which the gallery, and the metrics of
a model on it. The app's Error-analysis tab, ``train.score_drawings``, the training scripts and the retraining
report all call :func:`evaluate_drawings` / :func:`score_embeddings`.

Protocols (``evaluate_drawings(protocol=...)``):

``queries``  the demo corpus protocol (``patent_demo.data.democorpus.retrieval_protocol``): one query figure
             per patent of the split, the gallery is every other figure of the split.
``all``      every figure of the split is a query against all other figures of the split (the query
             itself is skipped); used for real drawing pages, where no query view is marked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.drawing.embed import embed_corpus_figures
from patent_demo.hierarchy import patent_classes, patent_hierarchy

PROTOCOLS = ("queries", "all")
DEFAULT_KS = (10,)


SMALL_SPLIT = 10


def default_protocol(patents: Sequence[Patent]) -> str:
    """``queries`` when the patents mark a query view (``extra["query_figure"]``, the demo corpus), else
    ``all`` (real drawings: every figure a query)."""
    return "queries" if any("query_figure" in p.extra for p in patents) else "all"


def resolve_split(
    corpus: Corpus, split: str | None = "test", protocol: str | None = None
) -> tuple[str | None, str]:
    """The split and protocol evaluated on ``corpus``: the one rule the CLI (``patent-demo evaluate``), the
    app's Error-analysis tab and ``train.score_drawings`` share.

    ``split`` when the corpus has it. A corpus without a (non-empty) ``test`` split (real drawing pages
    loaded as they are), or ``split`` ``None`` / ``"all"``: every patent. ``protocol`` defaults to
    :func:`default_protocol` of the patents evaluated (every patent: ``all``). Another missing split raises
    ``CorpusError``.
    """
    if split is None or split == "all" or (split == "test" and not corpus.splits.get("test")):
        return None, protocol or "all"
    return split, protocol or default_protocol(corpus.split(split))  # raises CorpusError for a missing split


def small_split_warning(corpus: Corpus, split: str | None) -> str | None:
    """A warning when ``split`` holds fewer than :data:`SMALL_SPLIT` patents (figures from so few patents
    are noise), naming how to score the whole corpus instead; ``None`` otherwise."""
    if split is None:
        return None
    n = len(corpus.split(split))
    if n >= SMALL_SPLIT:
        return None
    return (
        f"warning: split {split!r} holds only {n} patents (fewer than {SMALL_SPLIT}); its figures are noise "
        "(patent, subclass and main-class mAP may coincide). Score the whole corpus with --split all, or build "
        "the corpus with a committed split file (patent-demo corpus build --splits FILE)."
    )


def drawing_protocol(
    corpus: Corpus, split: str | None = "test", protocol: str = "queries"
) -> tuple[list[tuple[Patent, Figure]], list[tuple[Patent, Figure]], np.ndarray]:
    """``(queries, gallery, self_index)`` of a split (``None``: every patent of the corpus).

    ``queries`` (the demo protocol): one query figure per patent (``extra["query_figure"]``, else its
    first), the gallery every other figure; ``self_index`` is all -1. ``all``: every figure is a query
    and the gallery is the same list; ``self_index[q] = q`` so a query never retrieves itself.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    patents = corpus.patents if split is None else corpus.split(split)
    if protocol == "all":
        items = [(p, f) for p in patents for f in p.figures]
        return items, items, np.arange(len(items), dtype=np.int64)
    queries, gallery = [], []
    for p in patents:
        q = int(p.extra.get("query_figure", 0))
        for i, f in enumerate(p.figures):
            (queries if i == q else gallery).append((p, f))
    return queries, gallery, np.full(len(queries), -1, dtype=np.int64)


def _labels(items: Sequence[tuple[Patent, Figure]]):
    from patent_demo.metrics import ItemLabels

    keys = [patent_hierarchy(p.codes) for p, _ in items]  # Locarno, else USPC; scheme-qualified
    return ItemLabels([p.id for p, _ in items], [k[0] for k in keys], [k[1] for k in keys])


def _finite(x: float) -> float | None:
    return float(x) if isinstance(x, float | int) and math.isfinite(x) else None


def score_embeddings(
    queries: Sequence[tuple[Patent, Figure]],
    gallery: Sequence[tuple[Patent, Figure]],
    query_emb: np.ndarray,
    gallery_emb: np.ndarray,
    self_index: np.ndarray,
    ks: Sequence[int] = DEFAULT_KS,
    silhouette: bool = True,
    per_query: bool = False,
) -> dict:
    """Metrics of given embeddings (``[Q, D]``, ``[G, D]``, L2-normalised; cosine scores).

    Returns ``{"metrics": {patent_map, patent_ndcg@k, subclass_*, main_*, hier_ndcg@k, num_queries},
    "per_class": {subclass: {...}}, "silhouette": float | None, "silhouette_per_class": {...},
    "num_gallery": G}``. The silhouette is over the distinct figures of queries and gallery, grouped by
    Locarno subclass (``None`` when fewer than two subclasses are present). With ``per_query``, also
    ``"per_query": {metric: [Q] values, None where undefined}``, ``"query_patents": [Q]`` and
    ``"macro": {metric: mean over patents of each patent's query mean}`` (each patent counts once).
    """
    from patent_demo.metrics import drawing_metrics, silhouette_by_subclass

    scores = query_emb.astype(np.float64) @ gallery_emb.astype(np.float64).T
    ev = drawing_metrics(_labels(queries), _labels(gallery), scores=scores, self_index=self_index, ks=ks)
    out: dict[str, Any] = {
        "metrics": {k: (_finite(v) if k != "num_queries" else v) for k, v in ev.summary().items()},
        "per_class": {
            c: {k: (_finite(v) if k != "num_queries" else v) for k, v in row.items()}
            for c, row in ev.by_class([patent_classes(p.codes)[0] for p, _ in queries]).items()
        },
        "num_gallery": len(gallery),
        "silhouette": None,
        "silhouette_per_class": {},
    }
    if per_query:
        from patent_demo.metrics import macro_means

        patents = [p.id for p, _ in queries]
        out["per_query"] = {k: [_finite(float(x)) for x in v] for k, v in ev.per_query.items()}
        out["query_patents"] = patents
        out["macro"] = {k: _finite(v) for k, v in macro_means(ev.per_query, patents).items()}
    if silhouette:
        same = bool((self_index >= 0).all()) and len(queries) == len(gallery)
        emb = gallery_emb if same else np.concatenate([query_emb, gallery_emb])
        labels = [patent_classes(p.codes)[0] for p, _ in (gallery if same else [*queries, *gallery])]
        try:
            mean, per_class = silhouette_by_subclass(emb, labels)
            out["silhouette"], out["silhouette_per_class"] = mean, per_class
        except ValueError:
            pass
    return out


def score_with_cutoff(
    queries: Sequence[tuple[Patent, Figure]],
    gallery: Sequence[tuple[Patent, Figure]],
    query_emb: np.ndarray,
    gallery_emb: np.ndarray,
    cutoffs: Sequence[str],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict:
    """The same embeddings ranked twice, as a patent's own search ranks them: the query's own patent left out
    (never prior art to itself, and not relevant), once over the whole gallery and once over the prior art of
    each query's cut-off (``cutoffs[Q]``, ISO dates, ``""`` none; the rule of ``patent_demo.prior_art``). A
    relevant figure the cut-off hides stays relevant and counts as missed.

    Returns ``{"none": per_query, "cut": per_query, "hidden": {level: relevant figures hidden},
    "relevant": {level: relevant figures}}``; each ``per_query`` ``{metric: [Q] values, None where
    undefined}`` (``patent_demo.metrics.drawing_metrics``'s keys; the patent level is undefined: its own
    patent is all a query's patent level holds)."""
    from patent_demo import prior_art
    from patent_demo.metrics import drawing_metrics

    q_lab, g_lab = _labels(queries), _labels(gallery)
    scores = query_emb.astype(np.float64) @ gallery_emb.astype(np.float64).T
    own = np.array([[gp.id == qp.id for gp, _ in gallery] for qp, _ in queries], dtype=bool).reshape(
        len(queries), len(gallery)
    )
    order = np.argsort(-scores, axis=1, kind="stable")
    admitted = np.array(
        [[not c or prior_art.admits(gp, c) for gp, _ in gallery] for c in cutoffs], dtype=bool
    ).reshape(len(queries), len(gallery))
    ranked = np.full_like(order, -1)
    for i, row in enumerate(order):
        kept = row[admitted[i, row]]
        ranked[i, : len(kept)] = kept
    none = drawing_metrics(q_lab, g_lab, scores=scores, ks=ks, exclude=own)
    cut = drawing_metrics(q_lab, g_lab, ranked=ranked, ks=ks, exclude=own)
    hidden, relevant = {}, {}
    same_sub = _same(q_lab.subclasses, g_lab.subclasses)
    for level, same in (("subclass", same_sub), ("main", same_sub | _same(q_lab.mains, g_lab.mains))):
        rel = same & ~own
        relevant[level], hidden[level] = int(rel.sum()), int((rel & ~admitted).sum())
    as_lists = lambda ev: {k: [_finite(float(x)) for x in v] for k, v in ev.per_query.items()}  # noqa: E731
    return {"none": as_lists(none), "cut": as_lists(cut), "hidden": hidden, "relevant": relevant}


def _same(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """``[len(a), len(b)]``: where the codes agree (an empty code agrees with nothing)."""
    return np.array([[x != "" and x == y for y in b] for x in a], dtype=bool).reshape(len(a), len(b))


def evaluate_drawings(
    model: torch.nn.Module,
    transform: Any,
    corpus: Corpus,
    split: str | None = "test",
    ks: Sequence[int] = DEFAULT_KS,
    protocol: str = "queries",
    batch_size: int = 64,
    silhouette: bool = True,
    progress: bool = False,
    per_query: bool = False,
    keep_embeddings: bool = False,
) -> dict:
    """Drawing retrieval of one split at patent, subclass and main-class level.

    Embeds the figures of the split once (:func:`embed_corpus_figures`), ranks the gallery for each query
    by cosine similarity and scores it with ``patent_demo.metrics.drawing_metrics`` (mAP over all
    relevant gallery items, nDCG@k per level, graded ``hier_ndcg@k``); see :func:`score_embeddings` for
    the keys (``per_query`` adds per-query values and per-patent means). ``split`` and ``protocol`` are
    also recorded in the result; ``keep_embeddings`` adds ``query_embeddings`` and ``gallery_embeddings``
    (what relevance feedback refines: ``patent_demo.drawing.feedback_eval``).
    """
    queries, gallery, self_index = drawing_protocol(corpus, split, protocol)
    if not queries or not gallery:
        raise ValueError(
            f"split {split!r} of {corpus.name or corpus.root} has no queries or no gallery figures"
        )
    if protocol == "all":
        emb = embed_corpus_figures(model, transform, corpus, gallery, batch_size, progress)
        q_emb, g_emb = emb, emb
    else:
        emb = embed_corpus_figures(model, transform, corpus, [*queries, *gallery], batch_size, progress)
        q_emb, g_emb = emb[: len(queries)], emb[len(queries) :]
    out = score_embeddings(queries, gallery, q_emb, g_emb, self_index, ks, silhouette, per_query)
    if keep_embeddings:
        out.update(query_embeddings=q_emb, gallery_embeddings=g_emb)
    return {"split": split, "protocol": protocol, "ks": list(ks), **out}


def evaluate_splits(
    model: torch.nn.Module,
    transform: Any,
    corpus: Corpus,
    splits: Sequence[str],
    ks: Sequence[int],
    batch_size: int,
) -> dict:
    """``{split: evaluate_drawings(...)}`` of the non-empty ``splits`` of ``corpus``."""
    out = {}
    for split in splits:
        if corpus.splits.get(split):
            out[split] = evaluate_drawings(model, transform, corpus, split, ks=ks, batch_size=batch_size)
    return out


def brief_maps(results: dict) -> str:
    """One log line of patent, subclass and main-class mAP per split of :func:`evaluate_splits`."""
    keys = ("patent_map", "subclass_map", "main_map")
    return "; ".join(
        f"{split}: " + " ".join(f"{k}={(m['metrics'].get(k) or float('nan')):.4f}" for k in keys)
        for split, m in results.items()
    )


SUMMARY_KEYS = ("patent_map", "subclass_map", "main_map", "hier_ndcg@10")


def validation_summary(result: dict, corpus: str, image_size: int | None = None) -> dict:
    """What a model list shows of an evaluation (stored as ``real_validation`` in a checkpoint's
    ``config.json`` and ``metrics.json``): ``{"corpus", "protocol", "image_size", "num_queries",
    "metrics": {patent_map, subclass_map, main_map, hier_ndcg@10} (mean over queries),
    "macro": {...} (mean over patents, when the result has per-query values)}``."""
    out = {
        "corpus": corpus,
        "protocol": result.get("protocol"),
        "image_size": image_size,
        "num_queries": result["metrics"].get("num_queries"),
        "metrics": {k: result["metrics"].get(k) for k in SUMMARY_KEYS},
    }
    if "macro" in result:
        out["macro"] = {k: result["macro"].get(k) for k in SUMMARY_KEYS}
    return out
