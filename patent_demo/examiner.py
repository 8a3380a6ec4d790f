"""What an examiner's search adds to a plain search: filters with a prior-art cut-off, the
"no good match" signal, and the side-by-side views. The app's handlers call these with a
``patent_demo.workbench.Workbench``.

* :func:`drawing_search` / :func:`application_search` / :func:`text_search`: the workbench searches
  with a ``SearchFilter`` applied inside retrieval (every drawing search, a sheet's too, restricted by
  :func:`drawing_allowed`, so each leaves out the query's own patent and family the same way); with ``own_date`` a query that is a corpus drawing (same file bytes) or
  a corpus patent's text gets that patent's priority / filing date as the cut-off when none is typed.
  Each returns the notes the status line shows (filter, cut-off, no-good-match).
* :func:`no_match_threshold`: the threshold of ``patent_demo.calibration``, calibrated on judged
  searches of the corpus (citations for text, same subclass for drawings), computed once and cached
  under ``cache_dir/calibration/``; the warning appears only where its measured false-alarm rate is
  at most 5 %, and quotes the score the hit table shows.
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

from patent_demo.backends import Where
from patent_demo.calibration import (
    NoMatchThreshold,
    calibrate_drawing,
    calibrate_text,
    text_ceiling,
)
from patent_demo.families import own_and_family  # noqa: F401 - the examiner's exclusion, used here and by the UI
from patent_demo.filters import SearchFilter, exclusion_note, prior_art_date
from patent_demo.text import syntax
from patent_demo.wording import counted

CALIBRATION_SAMPLES = 300


def no_match_threshold(wb, task: str, model: str = "") -> NoMatchThreshold | None:
    """The calibrated threshold for ``task`` ("drawing" with ``model``, or "text"), cached on disk;
    ``None`` when the corpus cannot be calibrated (a single class, no text)."""
    cache = wb.__dict__.setdefault("_no_match", {})
    if task == "drawing":
        spec = wb.model(model, "drawing")
        key = f"drawing-{spec.fingerprint}-judged"
    else:
        key = "text-bm25-judged"
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
    return [f"{search_filter.describe()}: {len(allowed)} of {counted(total, 'document')} searched"]


def drawing_allowed(
    wb,
    model: str,
    search_filter: SearchFilter | None = None,
    own_patents: Sequence[str] = (),
    own_date: bool = False,
    exclude_own: bool = False,
) -> tuple[set[str] | None, list[str]]:
    """``(allowed patent ids or None for all, notes)``: what every drawing search (one drawing, a sheet,
    a whole application) may return. ``own_patents`` are the corpus patents the query drawings come from;
    with ``own_date`` the cut-off defaults to the first one's priority / filing date, with ``exclude_own``
    each of them and its family is left out. The notes say so (the status line and the search history)."""
    notes: list[str] = []
    f = search_filter or SearchFilter()
    own = [p for p in dict.fromkeys(own_patents) if p]
    if own_date:
        f = _with_own_date(f, wb, own[0] if own else "", notes)
    allowed = f.allowed_ids(wb.corpus)
    drawn = set(wb.index(model).patent_ids)
    if allowed is not None:
        allowed &= drawn
        notes.append(f"{f.describe()}: {len(allowed)} of {len(drawn)} patents with drawings searched")
        if not allowed:
            raise ValueError(f"no patent with drawings passes the filter ({f.describe()}); widen it")
    if exclude_own and own:
        out = set().union(*(own_and_family(wb.corpus, p) for p in own))
        allowed = (drawn if allowed is None else allowed) - out
        notes.append(exclusion_note(own, sorted(out - set(own))))
        if not allowed:
            raise ValueError("nothing is left to search once the query's own patent is left out")
    return allowed, notes


def _no_match_note(wb, model: str, hits) -> list[str]:
    th = no_match_threshold(wb, "drawing", model)
    msg = th.message(hits[0].score) if th is not None and hits else ""
    return ["⚠️ " + msg] if msg else []


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
    exclude_own: bool = False,
):
    """``(DrawingSearch, notes)``: ``wb.search_drawing`` restricted by :func:`drawing_allowed` for the
    corpus patent the drawing belongs to (or ``query_patent``, for a drawing cut from one of its figures)."""
    data = image if isinstance(image, bytes) else Path(image).read_bytes()
    own_patent = query_patent or corpus_patent_of(wb, data)
    allowed, notes = drawing_allowed(wb, model, search_filter, [own_patent], own_date, exclude_own)
    # a crop of a corpus figure still belongs to its patent: its class and its spread line
    res = wb.search_drawing(image, model, k, group_by_patent, crop, query_locarno, allowed=allowed,
                            query_patent=own_patent, where=_where(wb, search_filter, own_patent, own_date, exclude_own))  # fmt: skip
    return res, notes + ([res.note] if res.note else []) + _no_match_note(wb, model, res.hits)


def _where(wb, search_filter: SearchFilter | None, own_patent: str, own_date: bool, exclude_own: bool) -> Where:
    """The filters of :func:`drawing_allowed` as values (``patent_demo.backends.Where``) for an engine
    backend: the same cut-off (the query patent's own date), the own patent and its family left out."""
    f = search_filter or SearchFilter()
    if own_date:
        f = _with_own_date(f, wb, own_patent, [])
    return Where(f, (own_patent,) if exclude_own and own_patent else ())


def application_search(
    wb,
    views: Sequence[bytes | str | os.PathLike],
    model: str,
    k: int = 10,
    crop: bool = True,
    search_filter: SearchFilter | None = None,
    own_date: bool = False,
    exclude_own: bool = False,
):
    """``(DrawingSearch, notes)``: ``wb.search_application`` (several views of one application) restricted
    by :func:`drawing_allowed` for the corpus patents the views come from; the first of them is the
    query patent (``query_patent_id``, the spread line's class). The no-good-match threshold is
    calibrated on single drawings, so no such note is given here."""
    data = [v if isinstance(v, bytes) else Path(v).read_bytes() for v in views]
    own = [p for p in dict.fromkeys(corpus_patent_of(wb, d) for d in data) if p]
    allowed, notes = drawing_allowed(wb, model, search_filter, own, own_date, exclude_own)
    res = wb.search_application(data, model, k, "mean", crop, allowed=allowed, query_patent=own[0] if own else "")
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
    exclude_own: bool = False,
    per_family: bool = False,
    lists: Sequence[str] | None = None,
    own_patent: str = "",
):
    """``(lists, notes)``: ``wb.search_text_lists`` (``bm25``, ``dense``, ``hybrid``, ``dssdnet``,
    ``fused`` or those named in ``lists``; ``bm25`` alone with ``rerank=False``) restricted by
    ``search_filter``; with ``exclude_own`` a query that is a corpus patent's text leaves that patent and
    its family out; with ``per_family`` each list keeps one hit per family
    (``patent_demo.families.collapse``); a query in the search syntax (``patent_demo.text.syntax``)
    selects the documents that BM25 then ranks by its words; with
    ``own_date`` a query whose text is a corpus patent's (title and abstract) takes that patent's
    date as the cut-off (and the patent itself is then later than the cut-off, so it drops out). ``own_patent``
    names the query's own patent when the search knows it otherwise (the Combined tab: the drawing's patent),
    so it and its family are left out of the text lists as well."""
    from patent_demo.query import check_abstract
    from patent_demo.text.search import candidate_text

    text = check_abstract(abstract)
    notes: list[str] = []
    f = search_filter or SearchFilter()
    own = own_patent if own_patent in wb.corpus else ""
    if not own and (own_date or exclude_own):
        key = " ".join(text.split()).strip(". ")  # as candidate_text writes it: no outer dots or spaces
        own = next((p.id for p in wb.corpus if " ".join(candidate_text(p).split()).strip(". ") == key), "")
    if own_date:
        f = _with_own_date(f, wb, own, notes)
    allowed = f.allowed_ids(wb.corpus)
    notes += _filter_note(f, allowed, len(wb.corpus))
    if exclude_own and own:
        out = own_and_family(wb.corpus, own)
        allowed = ({p.id for p in wb.corpus} if allowed is None else allowed) - out
        notes.append(exclusion_note([own], sorted(out - {own})))
    if allowed is not None and not allowed:
        raise ValueError(f"no document passes the filter ({f.describe()}); widen it")
    only = None  # the documents a query in the search syntax matches
    if syntax.uses_syntax(text):  # phrases, truncation, AND / OR / NOT, fields: a filter, then BM25 ranks
        query = syntax.parse(text)
        matched = query.matches(wb.corpus)
        allowed = matched if allowed is None else allowed & matched
        if not allowed:
            raise ValueError(f"no document matches {text[:80]!r}; {syntax.HELP}")
        only = frozenset(matched)
        notes.append(f"search syntax: {counted(len(allowed), 'document matches', 'documents match')}")
        text = query.ranking_text(wb.bm25())
        if not text:
            raise ValueError(
                f"{counted(len(allowed), 'document matches', 'documents match')}; add a word to rank them by (a code alone only filters)"
            )
    where = Where(f, (own,) if exclude_own and own else (), only=only)
    names = lists if lists is None or "bm25" in lists else [*lists, "bm25"]  # the no-match check reads BM25
    if per_family:  # more candidates, then one per family: k families come back
        from patent_demo.families import collapse

        wide = wb.search_text_lists(text, codes, max(k, min(3 * k, wb.config.bm25_candidates)), model,
                                    allowed=allowed, rerank=rerank, lists=names, where=where)  # fmt: skip
        lists = {name: collapse(res, wb.corpus, k) for name, res in wide.items()}
    else:
        lists = wb.search_text_lists(text, codes, k, model, allowed=allowed, rerank=rerank, lists=names, where=where)
    notes += [n for n in [wb.take_backend_note()] if n]
    bm25 = lists["bm25"]
    th = no_match_threshold(wb, "text")
    if th is not None and th.shown:
        raw = float(bm25.scores[0]) if len(bm25) else 0.0
        ceiling = text_ceiling(wb.bm25(), text)
        best = raw / ceiling if ceiling > 0 else 0.0
        msg = th.message(best, raw, th.threshold * ceiling)  # quoted in the BM25 table's units
        if msg:
            notes.append("⚠️ " + msg.replace("best hit scores", "best BM25 hit scores"))
    return lists, notes


def side_by_side(query: Image.Image | bytes | str | os.PathLike, figure_path: str | os.PathLike,
                 size: int = 448, crop: bool = True) -> tuple[Image.Image, Image.Image]:  # fmt: skip
    """The query and a corpus figure as the encoder sees them, each cropped to its ink (unless
    ``crop`` is off for the query), centred on a white square and resized to ``size`` pixels."""
    from patent_demo.imageio import load_drawing

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
