"""Whole-application drawing queries: several views of one design (an application under examination has
4 to 8) ranked against a corpus's patents by an aggregate of per-view similarity.

For views ``v`` and a patent ``p`` with figures ``f``, the per-view score is the best cosine
``s_vp = max_f cos(z_v, z_f)``; the patent's score aggregates over views: ``mean`` (every view must find
a match: the default, chosen on the Red Book validation pages, see ``docs/retrieval_choices.md``) or
``max`` (any one view suffices). :func:`application_ranking` is exact (all figures scored, no FAISS), so
it is also the reference an evaluation uses.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from patent_demo.limits import MAX_APPLICATION_BYTES, MAX_APPLICATION_VIEWS
from patent_demo.results import Results

AGGREGATES = ("mean", "max")


def check_views(images: Sequence[bytes | str | os.PathLike]) -> None:
    """Refuse an application query over the budget before any view is decoded: more than
    ``MAX_APPLICATION_VIEWS`` views (counted first, nothing read), or views that decode to more than
    ``MAX_APPLICATION_BYTES`` together (read from their headers). ``ValueError`` says which and by how much."""
    from patent_demo.imageio import decoded_size

    if len(images) > MAX_APPLICATION_VIEWS:
        raise ValueError(
            f"an application query takes at most {MAX_APPLICATION_VIEWS} views; {len(images):,} were sent: "
            "choose the views to search (nothing was searched)"
        )
    names = [
        Path(im).name if isinstance(im, str | os.PathLike) else f"view {i}" for i, im in enumerate(images, 1)
    ]
    total = sum(decoded_size(im, name=n) for im, n in zip(images, names, strict=True))
    if total > MAX_APPLICATION_BYTES:
        raise ValueError(
            f"the {len(images)} views decode to {total / 1e6:,.0f} MB together, over the budget of "
            f"{MAX_APPLICATION_BYTES / 1e6:,.0f} MB: send them smaller or fewer (nothing was searched)"
        )


def _scores(views, gallery, gallery_patents) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(patents [P], scores [V, P], best figure [P])``: :func:`per_view_patent_scores` and, per patent,
    the gallery index of its figure closest to any view (the figure a hit shows)."""
    views, gallery = np.atleast_2d(np.asarray(views, np.float64)), np.asarray(gallery, np.float64)
    patents = list(dict.fromkeys(gallery_patents))
    col = {p: i for i, p in enumerate(patents)}
    which = np.array([col[p] for p in gallery_patents])
    sims = views @ gallery.T  # [V, N]
    out = np.full((views.shape[0], len(patents)), -np.inf)
    np.maximum.at(out.T, which, sims.T)
    order = np.lexsort((sims.max(axis=0), which))  # by patent, then by its figures' best cosine
    last = order[np.r_[which[order][1:] != which[order][:-1], True]]  # each patent's best figure
    best = np.empty(len(patents), dtype=np.int64)
    best[which[last]] = last
    return patents, out, best


def per_view_patent_scores(
    views: np.ndarray, gallery: np.ndarray, gallery_patents: Sequence[str]
) -> tuple[list[str], np.ndarray]:
    """``(patents [P] in order of first appearance, scores [V, P])``: each view's best cosine over each
    patent's figures. ``views [V, D]`` and ``gallery [N, D]`` are L2-normalised."""
    patents, out, _ = _scores(views, gallery, gallery_patents)
    return patents, out


def application_ranking(
    views: np.ndarray,
    gallery: np.ndarray,
    gallery_patents: Sequence[str],
    k: int | None = None,
    how: str = "mean",
    allowed: Collection[str] | None = None,
) -> Results:
    """Patents ranked for one application of ``V`` views (``[V, D]``): per-view best-figure cosine,
    aggregated by ``how`` (``mean`` or ``max``); ``allowed`` keeps only those patent ids; top ``k``
    (all when ``None``), equal scores in corpus order. Extras: ``{"per_view": [V] scores, "figure": the
    gallery index of the patent's figure closest to any view}``."""
    if how not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {how!r}")
    patents, s, best = _scores(views, gallery, gallery_patents)
    keep = [i for i, p in enumerate(patents) if allowed is None or p in allowed]
    agg = s.mean(axis=0) if how == "mean" else s.max(axis=0)
    res = Results.from_unsorted(
        [patents[i] for i in keep],
        agg[keep],
        [{"per_view": [float(x) for x in s[:, i]], "figure": int(best[i])} for i in keep],
    )
    return res if k is None else res.top(k)


def views_sheet(views: Sequence, size: int = 256, columns: int = 4, cropped: bool = False) -> bytes:
    """The views of an application side by side on one PNG (each cropped to its ink and centred on a
    ``size`` px square, up to ``columns`` a row): the query drawing a label of the application keeps.
    ``views``: the uploads' bytes, or the views as the search decoded them (``DrawingSearch.views``: no
    second decode; ``cropped`` when the search already cut them to their ink, so no second crop either,
    and each is first reduced by a whole factor to at least twice ``size``)."""
    import io

    from PIL import Image

    from patent_demo.imageio import load_drawing

    def tile(v) -> Image.Image:
        if isinstance(v, Image.Image):
            factor = min(v.size) // (2 * size)
            v = v.reduce(factor) if factor > 1 else v
        return load_drawing(v, crop=not cropped, square=True, size=size).convert("L")

    tiles = [tile(v) for v in views]
    cols = max(1, min(columns, len(tiles)))
    rows = -(-len(tiles) // cols)
    sheet = Image.new("L", (cols * size, rows * size), 255)
    for i, t in enumerate(tiles):
        sheet.paste(t, ((i % cols) * size, (i // cols) * size))
    buf = io.BytesIO()
    sheet.save(buf, format="PNG")
    return buf.getvalue()
