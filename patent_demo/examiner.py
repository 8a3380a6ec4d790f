"""What an examiner's search adds to a plain search: filters with a prior-art cut-off, the
"no good match" signal, and the side-by-side views. The app's handlers call these with a
``patent_demo.workbench.Workbench``.

* :func:`drawing_search` / :func:`text_search`: the workbench searches with a ``SearchFilter``
  applied inside retrieval; with ``own_date`` a query that is a corpus drawing (same file bytes) or
  a corpus patent's text gets that patent's priority / filing date as the cut-off when none is typed.
  Each returns the notes the status line shows (filter, cut-off, no-good-match).
* :func:`no_match_threshold`: the calibrated threshold of ``patent_demo.calibration`` for the
  corpus and model, computed once and cached under ``cache_dir/calibration/``.
* :func:`side_by_side`: the query drawing (after the examiner's crop) and a hit's figure, both as the
  encoder sees them (cropped to ink, centred on a white square) at one size, so they share a scale.
* :func:`text_pair_html`: the query and a candidate with the BM25-matched words marked (escaped).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from PIL import Image

from patent_demo.calibration import (
    NoMatchThreshold,
    calibrate_drawing,
    calibrate_text,
    normalized_text_score,
)
from patent_demo.filters import SearchFilter, prior_art_date

CALIBRATION_SAMPLES = 300


def no_match_threshold(wb, task: str, model: str = "") -> NoMatchThreshold | None:
    """The calibrated threshold for ``task`` ("drawing" with ``model``, or "text"), cached on disk;
    ``None`` when the corpus cannot be calibrated (a single class, no text)."""
    cache = wb.__dict__.setdefault("_no_match", {})
    if task == "drawing":
        spec = wb.model(model, "drawing")
        key = f"drawing-{spec.fingerprint}"
    else:
        key = "text-bm25"
    if key in cache:
        return cache[key]
    path = Path(wb.config.cache_dir) / "calibration" / wb.fingerprint / f"{key}.json"
    th = None
    if path.is_file():
        th = NoMatchThreshold.load(path)
    else:
        try:
            if task == "drawing":
                th = calibrate_drawing(wb.index(spec), wb.corpus, CALIBRATION_SAMPLES, seed=wb.config.seed)
            else:
                th = calibrate_text(wb.bm25(), wb.corpus, CALIBRATION_SAMPLES, seed=wb.config.seed)
            th.save(path)
        except ValueError:
            th = None
    cache[key] = th
    return th


def corpus_patent_of(wb, data: bytes) -> str:
    """The corpus patent whose figure file has exactly these bytes (``""`` when none)."""
    sha = hashlib.sha256(data).hexdigest()
    fig = wb.figure_sha().get(sha)
    return wb.patent_of_figure(fig)[0].id if fig else ""


def _with_own_date(search_filter: SearchFilter, wb, patent_id: str, notes: list[str]) -> SearchFilter:
    if search_filter.before or not patent_id:
        return search_filter
    date = prior_art_date(wb.corpus[patent_id])
    if not date:
        notes.append(f"the query patent {patent_id} has no date: no cut-off")
        return search_filter
    notes.append(f"cut-off {date}: the priority / filing date of the query patent {patent_id}")
    return search_filter.with_before(date)


def _filter_note(search_filter: SearchFilter, allowed: set[str] | None, total: int) -> list[str]:
    if allowed is None:
        return []
    return [f"{search_filter.describe()}: {len(allowed)} of {total} documents searched"]


def drawing_search(
    wb,
    image: bytes | str | os.PathLike,
    model: str,
    k: int = 10,
    group_by_patent: bool = True,
    crop: bool = True,
    query_locarno: str = "",
    search_filter: SearchFilter | None = None,
    own_date: bool = False,
    query_patent: str = "",
):
    """``(DrawingSearch, notes)``: ``wb.search_drawing`` restricted by ``search_filter``; with
    ``own_date`` the cut-off defaults to the date of the corpus patent the drawing belongs to (or of
    ``query_patent``, for a drawing cut from one of its figures)."""
    data = image if isinstance(image, bytes) else Path(image).read_bytes()
    notes: list[str] = []
    f = search_filter or SearchFilter()
    if own_date:
        f = _with_own_date(f, wb, query_patent or corpus_patent_of(wb, data), notes)
    allowed = f.allowed_ids(wb.corpus)
    if allowed is not None:
        drawn = set(wb.index(model).patent_ids)
        allowed &= drawn
        notes.append(f"{f.describe()}: {len(allowed)} of {len(drawn)} patents with drawings searched")
        if not allowed:
            raise ValueError(f"no patent with drawings passes the filter ({f.describe()}); widen it")
    res = wb.search_drawing(image, model, k, group_by_patent, crop, query_locarno, allowed=allowed)
    th = no_match_threshold(wb, "drawing", model)
    if th is not None and res.hits:
        msg = th.message(res.hits[0].score)
        if msg:
            notes.append("⚠️ " + msg)
    return res, notes


def text_search(
    wb,
    abstract: str,
    codes: str | Mapping[str, Sequence[str]] = "",
    k: int = 10,
    model: str = "",
    search_filter: SearchFilter | None = None,
    own_date: bool = False,
    rerank: bool = True,
    lists: Sequence[str] | None = None,
):
    """``(lists, notes)``: ``wb.search_text_lists`` (``bm25``, ``dense``, ``hybrid``, ``dssdnet``,
    ``fused`` or those named in ``lists``; ``bm25`` alone with ``rerank=False``) restricted by
    ``search_filter``; with
    ``own_date`` a query whose text is a corpus patent's (title and abstract) takes that patent's
    date as the cut-off (and the patent itself is then later than the cut-off, so it drops out)."""
    from patent_demo.query import check_abstract
    from patent_demo.text.search import candidate_text

    text = check_abstract(abstract)
    notes: list[str] = []
    f = search_filter or SearchFilter()
    if own_date:
        key = " ".join(text.split())
        own = next((p.id for p in wb.corpus if " ".join(candidate_text(p).split()) == key), "")
        f = _with_own_date(f, wb, own, notes)
    allowed = f.allowed_ids(wb.corpus)
    notes += _filter_note(f, allowed, len(wb.corpus))
    if allowed is not None and not allowed:
        raise ValueError(f"no document passes the filter ({f.describe()}); widen it")
    names = lists if lists is None or "bm25" in lists else [*lists, "bm25"]  # the no-match check reads BM25
    lists = wb.search_text_lists(text, codes, k, model, allowed=allowed, rerank=rerank, lists=names)
    bm25 = lists["bm25"]
    th = no_match_threshold(wb, "text")
    best = normalized_text_score(wb.bm25(), text, float(bm25.scores[0])) if len(bm25) else 0.0
    if th is not None:
        msg = th.message(best)
        if msg:
            notes.append("⚠️ " + msg.replace("best hit scores", "best BM25 hit scores"))
    return lists, notes


def side_by_side(query: Image.Image | bytes | str | os.PathLike, figure_path: str | os.PathLike,
                 size: int = 448, crop: bool = True) -> tuple[Image.Image, Image.Image]:  # fmt: skip
    """The query and a corpus figure as the encoder sees them, each cropped to its ink (unless
    ``crop`` is off for the query), centred on a white square and resized to ``size`` pixels."""
    from patent_demo.drawing.imageio import load_drawing

    q = load_drawing(query, crop=crop, square=True, size=size)
    h = load_drawing(figure_path, crop=True, square=True, size=size)
    return q, h


def text_pair_html(wb, query: str, patent_id: str) -> tuple[str, str]:
    """``(query HTML, candidate HTML)``, each escaped, the words BM25 matched between them marked."""
    from patent_demo.text.highlight import highlight_html, matched_spans, query_tokens
    from patent_demo.text.search import candidate_text

    bm25 = wb.bm25()
    p = wb.corpus[patent_id]
    cand = candidate_text(p)
    shared = query_tokens(bm25, query) & query_tokens(bm25, cand)
    return (
        highlight_html(query, matched_spans(bm25, query, shared)),
        highlight_html(cand, matched_spans(bm25, cand, shared)),
    )
