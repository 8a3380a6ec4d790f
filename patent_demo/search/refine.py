"""A drawing search ranked again with the examiner's labels: the app's **Refine with my labels** (key ``r``)
and ``/refine_drawing``.

* :class:`Basis`: what a drawing search keeps with its results so that a refine encodes nothing again: the
  request (its drawings dropped), the vectors it searched (``[D]`` a drawing or a crop of one, ``[F, D]`` a
  sheet's figures, ``[V, D]`` an application's views) and a sheet's figure names.
* :func:`refine_search`: the labelled patents' vectors read from the index by the rule chosen on validation
  (``patent_demo.search.feedback.hit_vectors``, as ``patent-demo search drawings --feedback`` reads them), the query moved by ``patent_demo.search.feedback.refine`` (the one Rocchio; the
  labels of every round pooled on the *original* query, so no drift), then ranked again through the same
  search (``Workbench.search_drawing`` / ``search_application`` with ``vector``,
  ``search.sheet.rank_figures`` for a sheet) with the request's filters and exclusions, ``k`` more than
  the labels deep so that ``k`` unlabelled hits come back.
* :func:`arrange`: the labelled hits on top (in the order they were shown), the others re-ranked below.
* :func:`moved`: what moved among the unlabelled hits (new in the top 10, the biggest rank moves).
* :class:`UsedLabels`: the labels refines used in this server run (the Training tab's "labels used now").

The refined list is a view of the same query: the app keeps its query id, so a label made on it files
against the original query.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from patent_demo.hits import Hit, mark_views
from patent_demo.request import DrawingRequest
from patent_demo.search.feedback import CONFIG, Feedback, Refined, hit_vectors, refine, split_labels

KINDS = ("drawing", "sheet", "application")
NEEDS_A_LABEL = (
    "Refine needs a label first: label at least one hit of this query (keys 1 relevant, 2 partly, "
    "3 not relevant), then press Refine (r)"
)


@dataclass(frozen=True)
class Basis:
    """A drawing search as a refine needs it: ``kind`` (drawing, sheet, application), the request without
    its drawings, the searched ``vector`` and, for a sheet, its figures' ``names`` and ``boxes`` (in pixels of
    the sheet, what a label of a refined sheet list keeps as its query figure)."""

    kind: str
    request: DrawingRequest
    vector: np.ndarray
    names: tuple[str, ...] = ()
    boxes: tuple = ()

    @classmethod
    def of(
        cls, kind: str, request: DrawingRequest, vector, names: Sequence[str] = (), boxes: Sequence = ()
    ) -> Basis:
        if kind not in KINDS:
            raise ValueError(f"a refine basis is one of {KINDS}, got {kind!r}")
        vector = np.asarray(vector, np.float32).copy()
        return cls(kind, replace(request, images=()), vector, tuple(names), tuple(tuple(b) for b in boxes))


@dataclass
class Outcome:
    """A refined search: the hits as shown (labelled on top, then the others re-ranked), the refined query,
    the labelled patents on top, the labels left out (their figure not in this model's index), the notes of
    the search (filters, exclusions) and the spread line when the search gave one."""

    hits: list[Hit]
    refined: Refined
    labelled: list[str]
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    spread: str = ""


def label_vectors(
    index, labels: Mapping[str, object], query, how: str = "best"
) -> tuple[list, list, list[str], list[str]]:
    """``(relevant vectors, not relevant vectors, ids used, ids left out)`` of ``labels`` ({candidate:
    label with ``label``}): each labelled patent's vector by the rule chosen on validation
    (``patent_demo.search.feedback.hit_vectors``, ``Feedback.hits``: its figure closest to ``query`` or the mean of
    its figures), the rule ``patent-demo search drawings --feedback`` uses; a patent without a figure in
    ``index`` is left out."""
    pos_ids, neg_ids = split_labels({c: lab.label for c, lab in labels.items()})
    pos, neg, used, out = [], [], [], []
    for ids, into in ((pos_ids, pos), (neg_ids, neg)):
        for c in ids:
            vec = hit_vectors(index, query, [c], how)
            if len(vec):
                into.append(vec[0])
                used.append(c)
            else:
                out.append(c)
    return pos, neg, used, out


def refine_search(
    wb, basis: Basis, labels: Mapping[str, object], shown: Sequence[str] = (), weights: Feedback | None = None
) -> Outcome:
    """``basis`` searched again with its query refined by ``labels`` ({candidate patent: its latest
    label}, see :func:`label_vectors`), arranged by :func:`arrange` (``shown``: the patent ids of the
    list on screen, in order). Raises ``ValueError`` with the message to show when no label can be used."""
    if not labels:
        raise ValueError(NEEDS_A_LABEL)
    req = basis.request
    index = wb.index(req.model)
    weights = weights or Feedback.load()
    pos, neg, used, left_out = label_vectors(index, labels, basis.vector, weights.hits)
    if not used:
        raise ValueError(
            "none of your labels of this query has its drawing in the index of this model: search again "
            "with the model they were made with"
        )
    refined = refine(basis.vector, pos, neg, weights)
    deep = replace(req, k=req.k + len(labels))
    notes, spread = [], ""
    if basis.kind == "sheet":
        from patent_demo.search.scope import drawing_scope
        from patent_demo.search.sheet import rank_figures

        _, allowed, notes = drawing_scope(wb, deep)
        hits = rank_figures(wb, refined.vector, basis.names, deep.model, deep.k, allowed, basis.boxes)[0]
    else:
        search = wb.search_application if basis.kind == "application" else wb.search_drawing
        res = search(deep, refined.vector)
        hits, notes, spread = res.hits, res.notes, res.spread
    mark_views(hits, basis.kind)
    arranged = arrange(wb, hits, {c: labels[c] for c in used}, shown, req.k, basis.kind)
    on_top = list(dict.fromkeys(h.patent_id for h in arranged if h.patent_id in used))
    return Outcome(arranged, refined, on_top, left_out, list(notes), spread)


def arrange(
    wb, hits: Sequence[Hit], labels: Mapping[str, object], shown: Sequence[str], k: int, kind: str
) -> list[Hit]:
    """The refined list as shown: every labelled patent on top (in the order of ``shown``, then the others
    in the order they were labelled), with its hit of the refined ranking when it is there (its score under
    the refined query), else its figure and score as shown when it was labelled; then the top ``k`` of the
    unlabelled hits in their refined order. Ranks are renumbered from 1."""
    order = [p for p in dict.fromkeys(shown) if p in labels] + [p for p in labels if p not in shown]
    by_patent: dict[str, list[Hit]] = {}
    for h in hits:
        by_patent.setdefault(h.patent_id, []).append(h)
    top: list[Hit] = []
    for p in order:
        if p in by_patent:
            top += by_patent[p]
        else:
            lab = labels[p]
            kept = wb.hit(0, p, float(lab.score), figure=lab.candidate_figure, extras={"kept": "labelled"})
            top += mark_views([kept], kind)
    rest = [h for h in hits if h.patent_id not in labels][:k]
    out = [*top, *rest]
    for r, h in enumerate(out, 1):
        h.rank = r
    return out


def moved(before: Sequence[str], after: Sequence[str], top: int = 10, most: int = 3) -> str:
    """What moved among the unlabelled hits, ``before`` and ``after`` their patent ids in rank order: the
    patents new in the top ``top`` (or "none"), and the ``most`` biggest rank moves of those in both lists
    ("D2 8→2"), largest first."""
    before, after = list(dict.fromkeys(before)), list(dict.fromkeys(after))
    fresh = [p for p in after[:top] if p not in before[:top]]
    was = {p: r for r, p in enumerate(before, 1)}
    moves = sorted(
        ((was[p] - r, p, was[p], r) for r, p in enumerate(after, 1) if p in was and was[p] != r),
        key=lambda m: (-abs(m[0]), m[2]),
    )[:most]
    head = f"{len(fresh)} new in the top {top}" + (f" ({', '.join(fresh)})" if fresh else "")
    if not moves:
        return head + "; no other rank changed"
    return head + "; biggest moves: " + ", ".join(f"{p} {a}→{b}" for _, p, a, b in moves)


def text_feedback_note(path=CONFIG) -> str:
    """The Text tab's line on relevance feedback: ``""`` when the config offers it for text, else that it is
    not offered and why (the config's ``text.reason``)."""
    text = json.loads(Path(path).read_text(encoding="utf-8")).get("text", {})
    if text.get("offered"):
        return ""
    why = text.get("reason") or "on the validation queries it did not rank the unseen documents better"
    why = why.removeprefix("not offered: ").split("; ")[-1]  # the verdict: the figures are in the docs
    return (
        f"Relevance feedback (Refine with my labels) is offered for drawing searches only, not for text: {why} "
        "(docs/feedback_text.md)."
    )


class UsedLabels:
    """The labels refines used in this server run (each label once, however often it was used) and the
    number of refines: the Training tab's "labels used now"."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[int] = set()
        self.refines = 0

    def add(self, label_ids: Sequence[int]) -> None:
        with self._lock:
            self._ids.update(i for i in label_ids if i is not None)
            self.refines += 1

    @property
    def labels(self) -> int:
        with self._lock:
            return len(self._ids)
