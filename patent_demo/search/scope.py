"""What a search may return: the own-date cut-off (the query patent's filing date when none is
typed), the query's own patents and their families left out, and the notes of the status line that say so.

* :func:`drawing_scope`: the scope of a drawing search (one drawing, a sheet, an application) as one
  ``Where`` value for an engine backend and as the patent ids FAISS keeps.
* :func:`with_own_date`, :func:`allowed_ids`, :func:`mark_earlier`, :func:`earlier_note`, :func:`undated_note`: the cut-off and
  its notes, for the drawing and the text searches alike. A cut-off admits what the rule of
  ``patent_demo.prior_art`` admits; every hit it admits as an earlier application (filed before the
  cut-off, published on or after it) carries ``extras["prior_art"] = "E"``, and in a patent's own search
  every hit published between the patent's priority and filing dates carries ``"P"``.
"""

from __future__ import annotations

from patent_demo import prior_art
from patent_demo.backends import Where
from patent_demo.families import own_and_family
from patent_demo.filters import SearchFilter, exclusion_note, prior_art_date
from patent_demo.request import DrawingRequest
from patent_demo.wording import counted


def with_own_date(search_filter: SearchFilter, wb, patent_id: str, notes: list[str]) -> SearchFilter:
    """``search_filter`` with the cut-off at the filing date of the query patent ``patent_id`` when none is
    typed (``prior_art_date``; its earliest priority opens the intermediate window of the ``"P"`` marks),
    and the note that says so."""
    if search_filter.before or not patent_id:
        return search_filter
    patent = wb.corpus[patent_id]
    date = prior_art_date(patent)
    if not date:
        notes.append(f"the query patent {patent_id} has no date: no cut-off")
        return search_filter
    what = "filing date" if date == patent.filing_date else "own date"
    notes.append(f"cut-off {date}: the {what} of the query patent {patent_id}")
    return search_filter.with_before(date, prior_art.intermediate_from(patent))


def allowed_ids(search_filter: SearchFilter, wb, own_date_patent: str = "") -> set[str] | None:
    """The ids ``search_filter`` admits (``None``: every document), less ``own_date_patent``, the query patent
    whose own date the cut-off is: never prior art to itself, though its priority would make it "E" by date."""
    allowed = search_filter.allowed_ids(wb.corpus)
    return allowed - {own_date_patent} if allowed is not None and own_date_patent else allowed


def mark_earlier(hits, corpus, search_filter: SearchFilter, notes: list[str]) -> None:
    """Mark the earlier applications (E) and intermediate documents (P) among ``hits``
    (``prior_art.MARK_KEY``) for the cut-off of ``search_filter``, and say how many there are on the
    status line."""
    counts = prior_art.mark_hits(hits, corpus, search_filter.before, search_filter.intermediate_from)
    earlier_note(counts, search_filter, notes)


def earlier_note(counts: dict[str, int], search_filter: SearchFilter, notes: list[str]) -> None:
    """The status line's count of the earlier applications (E) and intermediate documents (P) among the
    hits of ``search_filter``'s cut-off (``counts``: ``{"E": n, "P": m}``)."""
    before, start = search_filter.before, search_filter.intermediate_from
    if counts.get(prior_art.EARLIER):
        n = counts[prior_art.EARLIER]
        notes.append(
            f"{counted(n, 'hit is an earlier application', 'hits are earlier applications')} (E): "
            f"filed before {before}, published on or after it"
        )
    if counts.get(prior_art.INTERMEDIATE):
        n = counts[prior_art.INTERMEDIATE]
        notes.append(
            f"{counted(n, 'hit is an intermediate document', 'hits are intermediate documents')} (P): "
            f"published from the priority date {start}"
        )


def undated_note(f: SearchFilter, corpus, notes: list[str]) -> None:
    """The status line's count of the undated documents a cut-off leaves out (none: no note)."""
    n = prior_art.count_undated(corpus, f.before) if not f.keep_undated else 0
    if n:
        notes.append(f"{counted(n, 'undated document')} left out by the cut-off")


def drawing_scope(wb, req: DrawingRequest) -> tuple[Where, set[str] | None, list[str]]:
    """``(where, allowed patent ids or None for all, notes)`` of a drawing request (see the module)."""
    notes: list[str] = []
    f = req.filters.search
    if req.filters.own_date:
        f = with_own_date(f, wb, req.own_patent, notes)
    where = Where(f, req.own if req.filters.exclude_own else ())
    allowed = allowed_ids(f, wb, req.own_patent if req.filters.own_date else "")
    drawn = set(wb.index(req.model).patent_ids)
    if allowed is not None:
        allowed &= drawn
        notes.append(f"{f.describe()}: {len(allowed)} of {len(drawn)} patents with drawings searched")
        undated_note(f, [wb.corpus[p] for p in drawn], notes)
        if not allowed:
            raise ValueError(f"no patent with drawings passes the filter ({f.describe()}); widen it")
    if where.own:
        out = set().union(*(own_and_family(wb.corpus, p) for p in where.own))
        allowed = (drawn if allowed is None else allowed) - out
        notes.append(exclusion_note(list(where.own), sorted(out - set(where.own))))
        if not allowed:
            raise ValueError("nothing is left to search once the query's own patent is left out")
    return where, allowed, notes
