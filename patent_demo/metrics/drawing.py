"""Drawing retrieval metrics (HMCL evaluation, see ``drawing_metrics``): mAP over all relevant gallery items
and nDCG@k at patent, subclass and main-class level, plus a graded "hierarchical" nDCG, computed
on a whole query x gallery score matrix at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from patent_demo.hierarchy import HMCLWeights, main_of, same_level
from patent_demo.metrics.text import _check_ks

LEVELS = ("patent", "subclass", "main")


@dataclass
class ItemLabels:
    """Per-item labels ``[N]``: patent id, subclass, main class, under any hierarchy scheme (Locarno
    ``"06-01"`` / ``"06"``, USPC ``"D6/369"`` / ``"D6"``, or scheme-qualified keys from
    ``hierarchy.hierarchy_keys``).

    ``mains`` defaults to ``hierarchy.main_of`` of each subclass. An empty label never matches.
    """

    patents: Sequence[str]
    subclasses: Sequence[str]
    mains: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.patents = [str(p) for p in self.patents]
        self.subclasses = [str(s) for s in self.subclasses]
        self.mains = (
            [main_of(s) for s in self.subclasses] if self.mains is None else [str(m) for m in self.mains]
        )
        if not (len(self.patents) == len(self.subclasses) == len(self.mains)):
            raise ValueError(
                f"ItemLabels: {len(self.patents)} patents, {len(self.subclasses)} subclasses, "
                f"{len(self.mains)} main classes; they must have one entry per item"
            )

    def __len__(self) -> int:
        return len(self.patents)


@dataclass
class DrawingEval:
    """Per-query drawing metrics: ``per_query[name]`` is a float array ``[Q]``, NaN where the metric is
    undefined (no relevant gallery item at that level). ``summary()`` averages the defined values."""

    per_query: dict[str, np.ndarray] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, values in self.per_query.items():
            defined = values[~np.isnan(values)]
            out[name] = float(defined.mean()) if defined.size else float("nan")
        out["num_queries"] = int(next(iter(self.per_query.values())).shape[0]) if self.per_query else 0
        return out

    def by_class(self, classes: Sequence[str]) -> dict[str, dict[str, float]]:
        """Per-class means, ``classes[Q]`` giving each query's class (e.g. its Locarno subclass)."""
        return breakdown_by_class(self.per_query, classes)


def breakdown_by_class(
    per_query: Mapping[str, np.ndarray], classes: Sequence[str]
) -> dict[str, dict[str, float]]:
    """{class: {metric: mean over that class's queries (NaNs skipped), "num_queries": count}}, classes sorted."""
    classes = np.asarray([str(c) for c in classes])
    out: dict[str, dict[str, float]] = {}
    for name, values in per_query.items():
        if len(values) != len(classes):
            raise ValueError(
                f"breakdown_by_class: {name} has {len(values)} values for {len(classes)} classes"
            )
    for cls in sorted(set(classes.tolist())):
        mask = classes == cls
        row: dict[str, float] = {}
        for name, values in per_query.items():
            v = np.asarray(values)[mask]
            v = v[~np.isnan(v)]
            row[name] = float(v.mean()) if v.size else float("nan")
        row["num_queries"] = int(mask.sum())
        out[cls] = row
    return out


def _codes(query: Sequence[str], gallery: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes over a shared vocabulary; the empty label gets -1 (matches nothing)."""
    vocab = {s: i for i, s in enumerate(sorted(set(query) | set(gallery)))}
    enc = lambda xs: np.array([vocab[x] if x else -1 for x in xs], dtype=np.int64)  # noqa: E731
    return enc(query), enc(gallery)


def _discount_cumsum(n: int) -> np.ndarray:
    """D[m] = sum_{r=1}^{m} 1 / log2(r + 1), D[0] = 0; shape [n + 1]."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))])


def drawing_metrics(
    query: ItemLabels,
    gallery: ItemLabels,
    scores: np.ndarray | None = None,
    ranked: np.ndarray | None = None,
    self_index: Sequence[int] | np.ndarray | None = None,
    ks: Sequence[int] = (10, 100),
    weights: HMCLWeights | Sequence[float] | None = None,
    exclude: np.ndarray | None = None,
) -> DrawingEval:
    """mAP and nDCG@k at patent, subclass and main-class level, and graded hierarchical nDCG@k.

    Give either ``scores`` ``[Q, G]`` (higher is closer; ties broken by ascending gallery index) or
    ``ranked`` ``[Q, L]`` gallery indices best first (L <= G; -1 pads a short row). ``self_index[Q]``
    is the gallery position of the query itself (-1 when absent): it is skipped, taking no rank and
    counting as no relevant item. ``exclude`` ``[Q, G]`` (bool) removes more gallery items per query the
    same way (the *residual collection* of relevance feedback: the hits the examiner already judged).

    Relevance at level L (binary): patent = same patent id; subclass = same Locarno subclass or same
    patent; main = same main class or subclass-relevant. Per query and level, with n relevant gallery
    items and rel_r = 1 when the item at rank r is relevant:

    * AP = (1/n) sum_r rel_r * P@r over the whole ranking (not truncated; items missing from a
      truncated ``ranked`` count as not retrieved);
    * nDCG@k = sum_{r<=k} rel_r / log2(r + 1)  /  sum_{r<=min(k, n)} 1 / log2(r + 1).

    ``hier_ndcg@k`` uses the HMCL relevance of Eq. 2 as graded gains (``hierarchy.HMCLWeights.relevance``,
    ``weights`` = ``(s_p, s_s, s_m)`` or ``HMCLWeights``, the paper's by default): s_p for the same
    patent, s_s for the same subclass (other patent), s_m for the same main class (other subclass),
    ideal ordering from those counts. Keys of ``per_query``: ``{level}_map``,
    ``{level}_ndcg@{k}``, ``hier_ndcg@{k}``; values NaN where n = 0 at that level.
    """
    ks = _check_ks(ks)
    hw = HMCLWeights.coerce(weights)
    s_p, s_s, s_m = hw.as_tuple()
    nq, ng = len(query), len(gallery)
    if (scores is None) == (ranked is None):
        raise ValueError("drawing_metrics: give exactly one of scores [Q, G] or ranked [Q, L]")
    if scores is not None:
        scores = np.asarray(scores)
        if scores.shape != (nq, ng):
            raise ValueError(f"drawing_metrics: scores has shape {scores.shape}, expected ({nq}, {ng})")
        order = np.argsort(-scores, axis=1, kind="stable")
    else:
        order = np.asarray(ranked, dtype=np.int64)
        if order.ndim != 2 or order.shape[0] != nq:
            raise ValueError(f"drawing_metrics: ranked has shape {order.shape}, expected ({nq}, L)")
        if order.size and (order.max() >= ng or order.min() < -1):
            raise ValueError(f"drawing_metrics: ranked holds indices outside [-1, {ng})")
    selfs = np.full(nq, -1, dtype=np.int64) if self_index is None else np.asarray(self_index, dtype=np.int64)
    if selfs.shape != (nq,):
        raise ValueError(f"drawing_metrics: self_index has shape {selfs.shape}, expected ({nq},)")

    # full relevance [Q, G] per level, nested: patent ⊆ subclass ⊆ main; the query itself excluded
    shared = {}
    for level, attr in zip(LEVELS, ("patents", "subclasses", "mains"), strict=True):
        qc, gc = _codes(getattr(query, attr), getattr(gallery, attr))
        shared[level] = same_level(qc, gc)
    rel_full = {level: m.copy() for level, m in shared.items()}
    rel_full["subclass"] |= rel_full["patent"]
    rel_full["main"] |= rel_full["subclass"]
    has_self = selfs >= 0
    gone = None
    if exclude is not None:
        gone = np.asarray(exclude, dtype=bool)
        if gone.shape != (nq, ng):
            raise ValueError(f"drawing_metrics: exclude has shape {gone.shape}, expected ({nq}, {ng})")
    for m in (*rel_full.values(), *shared.values()):
        m[np.flatnonzero(has_self), selfs[has_self]] = False
        if gone is not None:
            m[gone] = False

    rows = np.arange(nq)[:, None]
    safe = np.where(order >= 0, order, 0)
    valid = (order >= 0) & (order != selfs[:, None])
    if gone is not None:
        valid &= ~gone[rows, safe]
    ranks = np.cumsum(valid, axis=1)  # rank of each position, self and padding take none
    disc = np.where(valid, 1.0 / np.log2(np.maximum(ranks, 1) + 1.0), 0.0)
    dsum = _discount_cumsum(max(ks + (ng,)))
    out: dict[str, np.ndarray] = {}
    counts = {}
    for level in LEVELS:
        n_rel = rel_full[level].sum(axis=1)
        counts[level] = n_rel
        rel = rel_full[level][rows, safe] & valid
        hits = np.cumsum(rel, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ap = np.where(rel, hits / np.maximum(ranks, 1), 0.0).sum(axis=1) / n_rel
            out[f"{level}_map"] = np.where(n_rel > 0, ap, np.nan)
            for k in ks:
                dcg = np.where(rel & (ranks <= k), disc, 0.0).sum(axis=1)
                ideal = dsum[np.minimum(n_rel, k)]
                out[f"{level}_ndcg@{k}"] = np.where(n_rel > 0, dcg / ideal, np.nan)

    gains_full = hw.relevance(shared["patent"], shared["subclass"], shared["main"], np.float64)
    gains = np.where(valid, gains_full[rows, safe], 0.0)
    n_p, n_ps, n_all = counts["patent"], counts["subclass"], counts["main"]
    for k in ks:
        dcg = np.where(ranks <= k, gains * disc, 0.0).sum(axis=1)
        a, b, c = dsum[np.minimum(n_p, k)], dsum[np.minimum(n_ps, k)], dsum[np.minimum(n_all, k)]
        ideal = s_p * a + s_s * (b - a) + s_m * (c - b)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"hier_ndcg@{k}"] = np.where(ideal > 0, dcg / ideal, np.nan)
    return DrawingEval(per_query=out)


def macro_means(per_query: Mapping[str, np.ndarray], groups: Sequence[str]) -> dict[str, float]:
    """Per metric, the mean over groups (e.g. patents) of each group's mean over its queries; NaN
    values are skipped and a group without a defined value does not count."""
    out = {}
    table = breakdown_by_class(per_query, groups)
    for name in per_query:
        vals = np.asarray([row[name] for row in table.values()], dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        out[name] = float(vals.mean()) if vals.size else float("nan")
    return out


def silhouette_by_subclass(
    embeddings: np.ndarray, labels: Sequence[str], sample_size: int | None = None, seed: int = 0
) -> tuple[float, dict[str, float]]:
    """Cosine silhouette of embeddings ``[N, D]`` grouped by ``labels[N]`` (e.g. Locarno subclass).

    Returns (mean silhouette over all items, {label: mean silhouette of its items}). Needs 2 <= number
    of labels <= N - 1 (scikit-learn's condition). ``sample_size`` draws that many items first
    (seeded) to bound the O(N^2) cost.
    """
    from sklearn.metrics import silhouette_samples

    x = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray([str(s) for s in labels])
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"silhouette_by_subclass: embeddings {x.shape} do not match {y.shape[0]} labels")
    if sample_size is not None and sample_size < x.shape[0]:
        pick = np.sort(np.random.default_rng(seed).choice(x.shape[0], size=sample_size, replace=False))
        x, y = x[pick], y[pick]
    n_labels = len(set(y.tolist()))
    if not 2 <= n_labels <= x.shape[0] - 1:
        raise ValueError(f"silhouette needs 2..{x.shape[0] - 1} distinct labels, got {n_labels}")
    values = silhouette_samples(x, y, metric="cosine")
    per_class = {c: float(values[y == c].mean()) for c in sorted(set(y.tolist()))}
    return float(values.mean()), per_class
