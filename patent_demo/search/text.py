"""The text search: :func:`search_text`, the text lists (``patent_demo.text.lists``) inside the filters, a
query in the search syntax (``patent_demo.text.syntax``) selecting the documents BM25 then ranks, one hit per
family on request, and the no-good-match note of BM25. ``Workbench.search_text`` calls it.
"""

from __future__ import annotations

from patent_demo import prior_art
from patent_demo.backends import Where
from patent_demo.calibration import text_ceiling
from patent_demo.examiner import no_match_threshold
from patent_demo.families import collapse, own_and_family
from patent_demo.filters import exclusion_note
from patent_demo.hits import TextSearch
from patent_demo.request import TextRequest
from patent_demo.results import Results
from patent_demo.search.scope import allowed_ids, earlier_note, undated_note, with_own_date
from patent_demo.text import syntax
from patent_demo.text.lists import LISTS, text_runs
from patent_demo.text.search import TextQuery, candidate_text, first_stage
from patent_demo.wording import counted

BM25_ONLY = "BM25 only for now"  # a text search answered while the warm-up builds the dense index
BM25_ONLY_AFTER = "the dense, hybrid, DSSDNet and fused lists come with a search once it is built"


def _same_text(text: str) -> str:
    """A text as two copies of it compare: whitespace collapsed, outer dots and spaces gone, case folded."""
    return " ".join(text.split()).strip(". ").casefold()


def _own_text_patents(wb, req: TextRequest) -> list[str]:
    """The query's own patents: the one given, else (when the filters need it) every corpus patent whose
    text the query is, its title and abstract as the index holds them or its abstract alone (a pasted
    abstract is that patent's own search; continuations with the same text are left out with it)."""
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
    notes: list[str] = []
    f, text = req.filters.search, req.text
    owns = _own_text_patents(wb, req)
    own = owns[0] if owns else ""
    if req.filters.own_date:
        f = with_own_date(f, wb, own, notes)
    allowed = allowed_ids(f, wb, own if req.filters.own_date else "")
    if allowed is not None:
        notes.append(f"{f.describe()}: {len(allowed)} of {counted(len(wb.corpus), 'document')} searched")
        undated_note(f, wb.corpus, notes)
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
        wide = _text_lists(
            wb, req, text, max(req.k, min(3 * req.k, wb.config.bm25_candidates)), allowed, where, notes
        )
        lists = {name: collapse(res, wb.corpus, req.k) for name, res in wide.items()}
    else:
        lists = _text_lists(wb, req, text, req.k, allowed, where, notes)
    notes += [n for n in [wb.take_backend_note()] if n]
    for res in lists.values() if f.before else ():
        res.extras = prior_art.marked_extras(res.ids, res.extras, wb.corpus, f.before, f.intermediate_from)
    marks = {
        d: e[prior_art.MARK_KEY]
        for res in lists.values()
        for d, e in zip(res.ids, res.extras or [], strict=False)
        if e.get(prior_art.MARK_KEY)
    }
    marked = list(marks.values())
    earlier_note({m: marked.count(m) for m in (prior_art.EARLIER, prior_art.INTERMEDIATE)}, f, notes)
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
