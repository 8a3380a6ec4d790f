"""The search API: a request (``patent_demo.request``) in, hits and the notes of the status line out.

* :func:`drawing_scope`: what a drawing search (one drawing, a sheet, an application) may return: the
  filters with the own-date cut-off (the query patent's priority / filing date when none is typed), the
  query's own patents and their families left out (``exclude_own``); as one ``Where`` value for an engine
  backend and as the patent ids FAISS keeps, with the notes saying so.
* :func:`search_drawing` / :func:`search_application`: the dense index searched inside that scope; a
  single drawing also gets the no-good-match note (``examiner.no_match_threshold``). Given ``vector`` (a
  query already encoded, e.g. refined by the examiner's labels: ``patent_demo.feedback``), they rank with
  it instead of encoding the drawing again: one search path, refined or not.
* :func:`search_text`: the text lists (``patent_demo.text.lists``) inside the filters, a query in the search
  syntax (``patent_demo.text.syntax``) selecting the documents BM25 then ranks, one hit per family on
  request, and the no-good-match note of BM25.

A cut-off admits what the rule of ``patent_demo.prior_art`` admits; every hit it admits as an earlier
application (filed before the cut-off, published on or after it) carries ``extras["prior_art"] = "E"``.

``Workbench.search_drawing`` / ``search_application`` / ``search_text`` call these.
"""

from __future__ import annotations

import numpy as np

from patent_demo import prior_art
from patent_demo.backends import Where
from patent_demo.families import own_and_family
from patent_demo.filters import SearchFilter, exclusion_note, prior_art_date
from patent_demo.hits import DrawingSearch, TextSearch
from patent_demo.request import DrawingRequest, TextRequest
from patent_demo.results import Results
from patent_demo.wording import counted

BM25_ONLY = "BM25 only for now"  # a text search answered while the warm-up builds the dense index
BM25_ONLY_AFTER = "the dense, hybrid, DSSDNet and fused lists come with a search once it is built"


def _with_own_date(search_filter: SearchFilter, wb, patent_id: str, notes: list[str]) -> SearchFilter:
    if search_filter.before or not patent_id:
        return search_filter
    date = prior_art_date(wb.corpus[patent_id])
    if not date:
        notes.append(f"the query patent {patent_id} has no date: no cut-off")
        return search_filter
    notes.append(f"cut-off {date}: the priority / filing date of the query patent {patent_id}")
    return search_filter.with_before(date)


def _mark(hits, corpus, before: str, notes: list[str]) -> None:
    """Mark the earlier applications among ``hits`` (``prior_art.MARK_KEY``: ``"E"``) for cut-off ``before``,
    and say how many there are on the status line."""
    _e_note(prior_art.mark_hits(hits, corpus, before), before, notes)


def _e_note(n: int, before: str, notes: list[str]) -> None:
    if n:
        notes.append(
            f"{counted(n, 'hit is an earlier application', 'hits are earlier applications')} (E): "
            f"filed before {before}, published on or after it"
        )


def _undated_note(f: SearchFilter, corpus, notes: list[str]) -> None:
    """The status line's count of the undated documents a cut-off leaves out (none: no note)."""
    n = prior_art.count_undated(corpus, f.before) if not f.keep_undated else 0
    if n:
        notes.append(f"{counted(n, 'undated document')} left out by the cut-off")


def drawing_scope(wb, req: DrawingRequest) -> tuple[Where, set[str] | None, list[str]]:
    """``(where, allowed patent ids or None for all, notes)`` of a drawing request (see the module)."""
    notes: list[str] = []
    f = req.filters.search
    if req.filters.own_date:
        f = _with_own_date(f, wb, req.own_patent, notes)
    where = Where(f, req.own if req.filters.exclude_own else ())
    allowed = f.allowed_ids(wb.corpus)
    drawn = set(wb.index(req.model).patent_ids)
    if allowed is not None:
        allowed &= drawn
        notes.append(f"{f.describe()}: {len(allowed)} of {len(drawn)} patents with drawings searched")
        _undated_note(f, [wb.corpus[p] for p in drawn], notes)
        if not allowed:
            raise ValueError(f"no patent with drawings passes the filter ({f.describe()}); widen it")
    if where.own:
        out = set().union(*(own_and_family(wb.corpus, p) for p in where.own))
        allowed = (drawn if allowed is None else allowed) - out
        notes.append(exclusion_note(list(where.own), sorted(out - set(where.own))))
        if not allowed:
            raise ValueError("nothing is left to search once the query's own patent is left out")
    return where, allowed, notes


def _class_of(wb, req: DrawingRequest) -> str:
    """The query's Locarno code: typed, else that of its own patent."""
    return req.locarno or (wb.corpus[req.own_patent].locarno if req.own_patent else "")


def search_drawing(wb, req: DrawingRequest, vector: np.ndarray | None = None) -> DrawingSearch:
    """Top-k for one drawing inside :func:`drawing_scope`: patents (best figure each) or figures; the
    query's own patent gives the spread line its class and is not counted in it. ``vector`` (``[D]``, e.g.
    the query refined by ``patent_demo.feedback``) is searched instead of the drawing's embedding: nothing
    is encoded."""
    from patent_demo.examiner import no_match_threshold
    from patent_demo.imageio import load_drawing

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
    _mark(hits, wb.corpus, where.search.before, notes)
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
    (``[V, D]``, e.g. the views refined by ``patent_demo.feedback``) is searched instead of the views'
    embeddings: nothing is encoded."""
    from patent_demo.drawing.application import application_ranking
    from patent_demo.imageio import load_drawing

    where, allowed, notes = drawing_scope(wb, req)
    spec = wb.model(req.model, "drawing")
    index = wb.index(spec)
    if vector is not None:
        views = np.asarray(vector, dtype=np.float32).reshape(-1, index.dim)
    else:
        views = np.asarray(
            wb.encoder(spec).encode([load_drawing(im, crop=req.crop) for im in req.images]), np.float32
        )
    k = max(1, min(req.k, len(set(index.patent_ids))))
    res = application_ranking(views, index.embeddings, index.patent_ids, k, req.how, allowed)
    hits = [
        wb.hit(r, pid, s, figure=index.ids[e.pop("figure")], extras=e)
        for r, ((pid, s), e) in enumerate(zip(res, res.extras, strict=True), 1)
    ]
    _mark(hits, wb.corpus, where.search.before, notes)
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
    )


def _same_text(text: str) -> str:
    """A text as two copies of it compare: whitespace collapsed, outer dots and spaces gone, case folded."""
    return " ".join(text.split()).strip(". ").casefold()


def _own_text_patents(wb, req: TextRequest) -> list[str]:
    """The query's own patents: the one given, else (when the filters need it) every corpus patent whose
    text the query is, its title and abstract as the index holds them or its abstract alone (a pasted
    abstract is that patent's own search; continuations with the same text are left out with it)."""
    from patent_demo.text.search import candidate_text

    if req.own_patent in wb.corpus:
        return [req.own_patent]
    if not (req.filters.own_date or req.filters.exclude_own):
        return []
    key = _same_text(req.text)
    if not key:
        return []
    return [p.id for p in wb.corpus if key in (_same_text(candidate_text(p)), _same_text(p.text or ""))]


def search_text(wb, req: TextRequest) -> TextSearch:
    """The text lists of ``req`` (``bm25``, ``dense``, ``hybrid``, ``dssdnet``, ``fused`` or those named; ``bm25``
    alone without ``rerank``) inside its filters, with the notes (filter, cut-off, exclusion, syntax, engine,
    no good match). The ``dssdnet`` list holds the re-ranker's own scores in ``rerank_scores``."""
    from patent_demo.calibration import text_ceiling
    from patent_demo.examiner import no_match_threshold
    from patent_demo.text import syntax

    notes: list[str] = []
    f, text = req.filters.search, req.text
    owns = _own_text_patents(wb, req)
    own = owns[0] if owns else ""
    if req.filters.own_date:
        f = _with_own_date(f, wb, own, notes)
    allowed = f.allowed_ids(wb.corpus)
    if allowed is not None:
        notes.append(f"{f.describe()}: {len(allowed)} of {counted(len(wb.corpus), 'document')} searched")
        _undated_note(f, wb.corpus, notes)
    if req.filters.exclude_own and owns:
        out = set().union(*(own_and_family(wb.corpus, o) for o in owns))
        allowed = ({p.id for p in wb.corpus} if allowed is None else allowed) - out
        notes.append(exclusion_note(owns, sorted(out - set(owns))))
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
                f"{counted(len(allowed), 'document matches', 'documents match')}; "
                "add a word to rank them by (a code alone only filters)"
            )
    where = Where(f, tuple(owns) if req.filters.exclude_own else (), only=only)
    if req.filters.per_family:  # more candidates, then one per family: k families come back
        from patent_demo.families import collapse

        wide = _text_lists(
            wb, req, text, max(req.k, min(3 * req.k, wb.config.bm25_candidates)), allowed, where, notes
        )
        lists = {name: collapse(res, wb.corpus, req.k) for name, res in wide.items()}
    else:
        lists = _text_lists(wb, req, text, req.k, allowed, where, notes)
    notes += [n for n in [wb.take_backend_note()] if n]
    for res in lists.values() if f.before else ():
        res.extras = prior_art.marked_extras(res.ids, res.extras, wb.corpus, f.before)
    marked = {
        d
        for res in lists.values()
        for d, e in zip(res.ids, res.extras or [], strict=False)
        if e.get(prior_art.MARK_KEY)
    }
    _e_note(len(marked), f.before, notes)
    bm25 = lists["bm25"]
    th = no_match_threshold(wb, "text")
    if th is not None and th.shown:
        raw = float(bm25.scores[0]) if len(bm25) else 0.0
        ceiling = text_ceiling(wb.bm25(), text)
        best = raw / ceiling if ceiling > 0 else 0.0
        msg = th.message(best, raw, th.threshold * ceiling)  # quoted in the BM25 table's units
        if msg:
            notes.append("⚠️ " + msg.replace("best hit scores", "best BM25 hit scores"))
    return TextSearch(lists, notes)


def _text_lists(
    wb, req: TextRequest, text: str, k: int, allowed, where: Where, notes: list[str]
) -> dict[str, Results]:
    """The lists of ``req`` for ``text`` (the ranking words of a query in the search syntax), top ``k`` each:
    ``dssdnet`` re-ranks the hybrid's top ``Workbench.rerank_depth``, ``fused`` takes the checkpoint's
    weight (``Workbench.fusion_weight``); ``where`` sends the dense list to an engine backend. While the
    warm-up builds the dense index (a cold start) BM25 answers alone, the other lists empty, and a note
    says so (``BM25_ONLY``)."""
    from patent_demo.text.lists import LISTS, text_runs
    from patent_demo.text.search import TextQuery, first_stage

    query = TextQuery("query", text, {s: list(c) for s, c in req.codes.items()})
    only = {"query": allowed} if allowed is not None else None
    if not req.rerank:
        return {"bm25": first_stage(wb.bm25(), [query], k=k, allowed=only)["query"]}
    if pending := wb.dense_pending():  # a cold start: BM25 answers now, the lists that need dense follow
        notes.append(f"{BM25_ONLY}: {pending}; {BM25_ONLY_AFTER}")
        bm25 = first_stage(wb.bm25(), [query], k=k, allowed=only)["query"]
        return {n: bm25 if n == "bm25" else Results.empty() for n in [*(req.lists or LISTS), "bm25"]}
    names = list(req.lists or LISTS)
    names += [] if "bm25" in names else ["bm25"]  # the no-good-match note reads BM25
    reranker = weight = None
    depth = wb.config.bm25_candidates
    if {"dssdnet", "fused"} & set(names):
        spec = wb.model(req.model, "text") if req.model else wb.default_text_model()
        depth = wb.rerank_depth(spec)
        reranker, weight = wb.reranker(spec), wb.fusion_weight(spec, depth)[0]
    runs = text_runs(
        wb.text_stage(),
        [query],
        wb.corpus,
        k,
        names,
        reranker,
        max(k, depth),
        weight,
        allowed=only,
        batch_size=wb.config.batch_size,
        keep_extras=True,
        where={"query": where},
    )
    return {n: r["query"] for n, r in runs.items()}
