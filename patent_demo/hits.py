"""The result records the workbench returns and the UI shows: one ``Hit`` per row, a ``DrawingSearch``, a
``TextSearch``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


# -- result records --------------------------------------------------------------------------------
@dataclass
class Hit:
    """One row of a result list as the UI shows it."""

    rank: int
    patent_id: str
    score: float
    title: str = ""
    locarno: str = ""
    locarno_title: str = ""
    figure: str = ""  # figure path relative to the corpus root ("" for text hits)
    view: str = ""
    image_path: str = ""  # absolute path of the figure image
    extras: dict = field(default_factory=dict)


@dataclass
class DrawingSearch:
    """A drawing query's results: ``hits`` (top-k), the spread over the query's classes, and the query."""

    hits: list[Hit]
    spread: str
    query_embedding: np.ndarray
    image_sha: str
    query_patent_id: str
    query_locarno: str
    model: str
    checkpoint_id: str
    notes: list[str] = field(
        default_factory=list
    )  # filter, cut-off, exclusion, engine fallback, no good match
    views: list = field(default_factory=list)  # an application's views as searched (decoded once), PIL "L"


@dataclass
class TextSearch:
    """A text query's lists (``patent_demo.text.lists``: name -> ``Results``) and the notes of its search;
    it unpacks as ``lists, notes``."""

    lists: dict
    notes: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter((self.lists, self.notes))


def mark_views(hits: list[Hit], kind: str) -> list[Hit]:
    """What the view column says of a merged hit, in place: an application's (``kind`` "application") is
    the whole patent, its tile the figure closest to the views ("all views · shown: front"); a sheet's
    (``kind`` "sheet") names the query figure that matched it ("front · matched by FIG. 2")."""
    for h in hits:
        if kind == "application":
            h.view = "all views" + (f" · shown: {h.view}" if h.view else "")
        elif kind == "sheet" and h.extras.get("query_figure"):
            h.view = " · ".join(x for x in (h.view, "matched by " + h.extras["query_figure"]) if x)
    return hits
