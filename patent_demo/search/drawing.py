"""The drawing searches: :func:`search_drawing` (one drawing) and :func:`search_application` (every view of
an application), the dense index searched inside :func:`patent_demo.search.scope.drawing_scope`; a single
drawing also gets the no-good-match note (``examiner.no_match_threshold``). Given ``vector`` (a query
already encoded, e.g. refined by the examiner's labels: ``patent_demo.search.feedback``), they rank with it
instead of encoding the drawing again: one search path, refined or not. ``Workbench.search_drawing`` and
``search_application`` call these.
"""

from __future__ import annotations

import numpy as np

from patent_demo.drawing.application import application_ranking
from patent_demo.examiner import no_match_threshold
from patent_demo.hits import DrawingSearch
from patent_demo.imageio import load_drawing
from patent_demo.request import DrawingRequest
from patent_demo.search.scope import drawing_scope, mark_earlier


def _class_of(wb, req: DrawingRequest) -> str:
    """The query's Locarno code: typed, else that of its own patent."""
    return req.locarno or (wb.corpus[req.own_patent].locarno if req.own_patent else "")


def search_drawing(wb, req: DrawingRequest, vector: np.ndarray | None = None) -> DrawingSearch:
    """Top-k for one drawing inside :func:`drawing_scope`: patents (best figure each) or figures; the
    query's own patent gives the spread line its class and is not counted in it. ``vector`` (``[D]``, e.g.
    the query refined by ``patent_demo.search.feedback``) is searched instead of the drawing's embedding: nothing
    is encoded."""
    where, allowed, notes = drawing_scope(wb, req)
    spec = wb.model(req.model, "drawing")
    index = wb.index(spec)
    k = max(1, min(req.k, len(set(index.patent_ids)) if req.per_patent else index.count))
    if vector is not None:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
    else:
        q = np.asarray(
            wb.encoder(spec).encode([load_drawing(req.image, crop=req.crop, name=req.name or None)]),
            dtype=np.float32,
        )[0]
    if wb.config.backend != "faiss":
        res = wb.backend("drawing", spec).search(q, k, where, per_patent=req.per_patent)
        notes += [n for n in [wb.take_backend_note()] if n]
    elif req.per_patent:
        res = index.search_patents(q, k, allowed=allowed)
    else:
        res = index.search(q, k, allowed=allowed)
    extras = res.extras or [{}] * len(res)
    if req.per_patent:
        hits = [
            wb.hit(r, pid, s, figure=e.get("figure_id", ""))
            for r, ((pid, s), e) in enumerate(zip(res, extras, strict=True), 1)
        ]
    else:
        hits = [
            wb.hit(r, e["patent_id"], s, figure=fid)
            for r, ((fid, s), e) in enumerate(zip(res, extras, strict=True), 1)
        ]
    mark_earlier(hits, wb.corpus, where.search, notes)
    loc = _class_of(wb, req)
    others = [h for h in hits if h.patent_id != req.own_patent]  # the query's own patent is not counted
    th = no_match_threshold(wb, "drawing", spec.key)
    msg = th.message(hits[0].score) if th is not None and hits else ""
    return DrawingSearch(
        hits,
        wb.spread(others, loc, req.own_patent),
        q,
        req.sha,
        req.own_patent,
        loc,
        spec.key,
        spec.checkpoint_id,
        notes + (["⚠️ " + msg] if msg else []),
    )


def search_application(wb, req: DrawingRequest, vector: np.ndarray | None = None) -> DrawingSearch:
    """Top-k patents for a whole application inside :func:`drawing_scope`: each patent scored by the
    ``req.how`` aggregate (mean / max) of every view's best-figure cosine (``patent_demo.drawing.application``); each hit shows the patent's figure
    closest to any view and holds its per-view scores in its extras; ``query_embedding`` is ``[V, D]``. The
    no-good-match threshold is calibrated on single drawings, so no such note is given here. ``vector``
    (``[V, D]``, e.g. the views refined by ``patent_demo.search.feedback``) is searched instead of the views'
    embeddings: nothing is encoded."""
    where, allowed, notes = drawing_scope(wb, req)
    spec = wb.model(req.model, "drawing")
    index = wb.index(spec)
    images = []  # the views as searched, decoded once: the handler's sheet of views is drawn from them
    if vector is not None:
        views = np.asarray(vector, dtype=np.float32).reshape(-1, index.dim)
    else:
        images = [load_drawing(im, crop=req.crop) for im in req.images]
        views = np.asarray(wb.encoder(spec).encode(images), np.float32)
    k = max(1, min(req.k, len(set(index.patent_ids))))
    res = application_ranking(views, index.embeddings, index.patent_ids, k, req.how, allowed)
    hits = [
        wb.hit(r, pid, s, figure=index.ids[e.pop("figure")], extras=e)
        for r, ((pid, s), e) in enumerate(zip(res, res.extras, strict=True), 1)
    ]
    mark_earlier(hits, wb.corpus, where.search, notes)
    others = [h for h in hits if h.patent_id != req.own_patent]
    return DrawingSearch(
        hits,
        wb.spread(others, req.locarno, req.own_patent),
        views,
        req.sha,
        req.own_patent,
        req.locarno,
        spec.key,
        spec.checkpoint_id,
        notes,
        views=images,
    )
