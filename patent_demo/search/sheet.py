"""A whole drawing sheet as a query: split it into figures, search each, merge the lists.

``search_sheet`` cuts the sheet into figures (``patent_demo.drawing.sheets.split_sheet``; "FIG. n"
label positions guide it when given), keeps the ``MAX_SHEET_FIGURES`` largest when it found more (chosen
from the boxes alone, before any figure is cut out or embedded; the status says so), embeds each figure
as a drawing query is embedded (crop to ink, the encoder's preprocessing), searches the dense index with
the same filter for every figure (inside FAISS, see ``DenseIndex.search_patents``) and merges the
per-figure patent lists: a patent scores the best of its scores over the query figures (the max, as
figures are aggregated into patents), and its hit says which query figure matched it (``extras["query_figure"]``, its
box on the sheet ``extras["query_box"]``) and the score each query figure gave it (``extras["figure_scores"]``).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from patent_demo import prior_art
from patent_demo.drawing.sheets import FigureLabel, SheetFigure, crop_figures, split_sheet
from patent_demo.filters import SearchFilter
from patent_demo.imageio import DrawingError, load_drawing
from patent_demo.limits import MAX_SHEET_FIGURES


@dataclass
class SheetSearch:
    """The figures found on a sheet (boxes, crops), the merged hits, and one line saying what happened."""

    figures: list[SheetFigure]
    crops: list[Image.Image]
    hits: list  # list[patent_demo.workbench.Hit]
    per_figure: list[list[str]]  # patent ids found for each query figure, best first
    status: str
    image_sha: str
    queries: np.ndarray | None = None  # the figures' embeddings [F, D], in the order of ``figures``


def figure_names(figures: Sequence[SheetFigure]) -> list[str]:
    """A name per figure: its printed label, else ``"figure i of n"`` in reading order."""
    n = len(figures)
    return [f.label or f"figure {i} of {n}" for i, f in enumerate(figures, 1)]


def largest(figures: Sequence[SheetFigure], n: int) -> list[SheetFigure]:
    """The ``n`` largest figures by box area (ties: the earlier), kept in their order."""
    area = lambda f: (f.box[2] - f.box[0]) * (f.box[3] - f.box[1])  # noqa: E731
    keep = set(sorted(range(len(figures)), key=lambda i: (-area(figures[i]), i))[:n])
    return [f for i, f in enumerate(figures) if i in keep]


def search_sheet(
    wb,
    sheet: bytes | str | os.PathLike | Image.Image,
    model: str,
    k: int = 10,
    search_filter: SearchFilter | None = None,
    labels: Sequence[FigureLabel] | None = None,
    name: str = "the sheet",
    allowed: Collection[str] | None = None,
    before: SearchFilter | None = None,
) -> SheetSearch:
    """Search every figure of ``sheet`` against ``wb``'s corpus (a ``patent_demo.workbench.Workbench``)
    and merge the lists into the top ``k`` patents. ``allowed`` (the patent ids the app's
    ``search.drawing_scope`` admits: filters, the query's own patent left out) restricts every figure's
    search; without it the patents passing ``search_filter`` are searched. The earlier applications among
    the hits (and its intermediate documents) for the cut-off of ``before`` (a filter; default
    ``search_filter``) carry ``extras["prior_art"] = "E"`` (``"P"``; ``patent_demo.prior_art``). Raises ``DrawingError`` for an
    unreadable sheet or one without ink (its message names the sheet ``name``, e.g. the upload's file name)."""
    data = sheet if isinstance(sheet, bytes) else None
    if isinstance(sheet, (str, os.PathLike)):
        data = Path(sheet).read_bytes()
    if isinstance(sheet, Image.Image):
        buf = io.BytesIO()
        sheet.save(buf, format="PNG")
        data = buf.getvalue()
    page = load_drawing(data, crop=False, square=False, name=name)
    figures = split_sheet(page, labels)
    if not figures:
        raise DrawingError("the sheet holds no drawing (no ink found)")
    found = len(figures)
    figures = largest(figures, MAX_SHEET_FIGURES)
    crops = crop_figures(page, figures)
    names = figure_names(figures)
    spec = wb.model(model, "drawing")
    queries = np.asarray(
        wb.encoder(spec).encode([load_drawing(c, crop=True) for c in crops]), dtype=np.float32
    )
    given = allowed is not None
    if not given:
        allowed = (search_filter or SearchFilter()).allowed_ids(wb.corpus)
    hits, per_figure = rank_figures(wb, queries, names, model, k, allowed, [f.box for f in figures])
    cut = before or search_filter or SearchFilter()
    prior_art.mark_hits(hits, wb.corpus, cut.before, cut.intermediate_from)
    status = f"{len(figures)} figure(s) on the sheet ({', '.join(names)}); each searched, lists merged"
    if found > len(figures):
        status = (
            f"⚠️ {found} boxes found on the sheet: searched the {len(figures)} largest of {found} "
            f"({', '.join(names)}; at most {MAX_SHEET_FIGURES} a sheet), lists merged"
        )
    if allowed is not None and not given:
        status += f"; {search_filter.describe()} ({len(allowed)} documents allowed)"  # type: ignore[union-attr]
    return SheetSearch(figures, crops, hits, per_figure, status, hashlib.sha256(data).hexdigest(), queries)


def rank_figures(
    wb,
    queries: np.ndarray,
    names: Sequence[str],
    model: str,
    k: int,
    allowed: Collection[str] | None,
    boxes: Sequence = (),
) -> tuple[list, list[list[str]]]:
    """The merged top ``k`` patents of the query figures' vectors ``queries`` (``[F, D]``, named
    ``names``, their ``boxes`` on the sheet kept in each hit's extras) inside ``allowed``, and the patent ids
    each figure found: what :func:`search_sheet` ranks once
    it has embedded the figures, and what a refined sheet query (``patent_demo.search.refine``) ranks again."""
    spec = wb.model(model, "drawing")
    index = wb.index(spec)
    k = max(1, min(int(k), len(set(index.patent_ids))))
    lists = index.search_patents_batch(np.asarray(queries, dtype=np.float32), k, allowed=allowed)
    best: dict[str, tuple[float, int, str]] = {}
    scores: dict[str, dict[str, float]] = {}
    for fi, res in enumerate(lists):
        for pid, s, extra in zip(res.ids, res.scores.tolist(), res.extras or [{}] * len(res), strict=True):
            scores.setdefault(pid, {})[names[fi]] = round(float(s), 4)
            if pid not in best or s > best[pid][0]:
                best[pid] = (float(s), fi, extra.get("figure_id", ""))
    order = sorted(best, key=lambda p: (-best[p][0], best[p][1]))[:k]
    hits = [
        wb.hit(
            r,
            pid,
            best[pid][0],
            figure=best[pid][2],
            extras={
                "query_figure": names[best[pid][1]],
                "query_box": [int(x) for x in boxes[best[pid][1]]] if boxes else [],
                "figure_scores": scores[pid],
            },
        )
        for r, pid in enumerate(order, 1)
    ]
    return hits, [list(r.ids) for r in lists]
