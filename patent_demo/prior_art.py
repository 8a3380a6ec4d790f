"""Prior art by the dates the law uses: the one rule every search path, the CLI, the API and the evaluation
apply for a cut-off date.

A reference is prior art to a search with cut-off date ``D`` when

* it was **published** before ``D``, or
* it is a **patent document** whose effective filing date (its earliest priority date, else its filing
  date) is before ``D``, although it was published on or after ``D``: an earlier application, prior art by
  its filing date (35 U.S.C. 102(a)(2), formerly 102(e); EPC Art. 54(3)). It is marked ``"E"``, the
  category of a European search report for such documents.

A patent's own search (the cut-off "at the query patent's own date") takes its **filing date**
(:func:`prior_art_date`), the date up to which a European search report covers the art: whether a claim is
entitled to an earlier priority is decided claim by claim during examination, so nothing that may be prior
art is hidden. A reference published from the application's earliest priority date up to its filing date is
an intermediate document, marked ``"P"``: prior art only where the priority claim fails. The filing date was
chosen over the earliest priority on validation (``python -m train.text.cutoff``, docs/results_text.md).

Each mark sits in ``extras["prior_art"]`` of a hit so that every list can badge it.

Non-patent literature (a record of ``kind`` ``"npl"``) has no filing date: only its publication date
counts. A document with neither a publication date nor a filing date is *undated*: it cannot be shown to be
prior art and is left out unless the filter panel keeps undated documents (``keep_undated``).

Dates are ISO ``YYYY-MM-DD`` strings, which compare as the dates do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from patent_demo.data.corpus import Patent

PUBLISHED = "published"  # published before the cut-off
EARLIER = "E"  # filed before the cut-off, published on or after it: an earlier application
INTERMEDIATE = "P"  # published from the query's earliest priority date up to its filing date (the cut-off)
OWN_DATE = "filing"  # the date of a patent's own search (chosen on validation, see the module)
LATER = "later"  # neither: not prior art
UNDATED = "undated"  # no publication date and no filing date
NON_PATENT_KINDS = frozenset({"npl"})
MARK_KEY = "prior_art"  # the extras key of a hit the rule admits as an earlier application


def is_patent_document(patent: Patent) -> bool:
    """Whether a record is a patent document (its filing date counts): every kind but non-patent literature."""
    return patent.kind not in NON_PATENT_KINDS


def effective_filing_date(patent: Patent) -> str:
    """The earliest of a patent document's priority and filing dates (``""`` for non-patent literature or
    a patent document without either)."""
    if not is_patent_document(patent):
        return ""
    dates = [d for d in (patent.priority_date, patent.filing_date) if d]
    return min(dates) if dates else ""


def prior_art_date(patent: Patent) -> str:
    """The cut-off a patent's own search uses: its filing date (see the module), else its earliest priority
    date, else its publication date (``""`` when it has none)."""
    return patent.filing_date or effective_filing_date(patent) or patent.date or ""


def intermediate_from(patent: Patent) -> str:
    """The start of the intermediate window of a patent's own search: its earliest priority date when that
    is before its cut-off (:func:`prior_art_date`), else ``""`` (no window, no ``"P"``)."""
    priority = effective_filing_date(patent)
    return priority if priority and priority < prior_art_date(patent) else ""


def status(patent: Patent, before: str) -> str:
    """How the rule sees ``patent`` for cut-off ``before``: ``PUBLISHED``, ``EARLIER`` (``"E"``), ``LATER``
    or ``UNDATED``. Without a cut-off every document is ``PUBLISHED`` (nothing to hide)."""
    if not before:
        return PUBLISHED
    published, filed = patent.date or "", effective_filing_date(patent)
    if published and published < before:
        return PUBLISHED
    if filed and filed < before:
        return EARLIER
    if not published and not filed:
        return UNDATED
    return LATER


def admits(patent: Patent, before: str, keep_undated: bool = False) -> bool:
    """Whether ``patent`` is prior art for cut-off ``before`` (an undated one only with ``keep_undated``)."""
    s = status(patent, before)
    return s in (PUBLISHED, EARLIER) or (s == UNDATED and keep_undated)


def reason(patent: Patent, before: str, keep_undated: bool = False) -> str:
    """Why the rule leaves ``patent`` out for cut-off ``before`` (``""`` when it is admitted); the reason
    starts with ``"not prior art"`` for a dated document, ``"no date"`` for an undated one."""
    s = status(patent, before)
    if s == UNDATED and not keep_undated:
        return "no date: neither published nor filed on record"
    if s != LATER:
        return ""
    filed = effective_filing_date(patent)
    parts = [f"published {patent.date}" if patent.date else "not published on record"]
    if filed:
        parts.append(f"filed {filed}")
    return f"not prior art: {', '.join(parts)}, on or after the cut-off {before}"


def mark(patent: Patent, before: str, priority: str = "") -> str:
    """The date mark of ``patent`` for cut-off ``before``: ``"E"`` when the rule admits it as an earlier
    application, ``"P"`` when it was published from ``priority`` (the query's earliest priority date,
    :func:`intermediate_from`) up to the cut-off, else ``""``."""
    s = status(patent, before)
    if s == EARLIER:
        return EARLIER
    if s == PUBLISHED and before and priority and patent.date and priority <= patent.date < before:
        return INTERMEDIATE
    return ""


def marked_extras(
    ids: Sequence[str],
    extras: Sequence[dict] | None,
    corpus: Mapping[str, Patent],
    before: str,
    priority: str = "",
) -> list[dict] | None:
    """``extras`` (one dict per id, or ``None``) with ``MARK_KEY`` set to each id's :func:`mark` for cut-off
    ``before``; unchanged (``None`` stays ``None``) when no id is marked."""
    marks = [mark(corpus[d], before, priority) if before and d in corpus else "" for d in ids]
    if not any(marks):
        return None if extras is None else list(extras)
    base = list(extras) if extras is not None else [{} for _ in ids]
    return [{**e, MARK_KEY: m} if m else dict(e) for e, m in zip(base, marks, strict=True)]


def count_undated(patents, before: str) -> int:
    """How many of ``patents`` the rule cannot date for cut-off ``before`` (left out unless kept)."""
    return sum(1 for p in patents if status(p, before) == UNDATED) if before else 0


REPORT_CATEGORIES = {
    "E": "earlier patent document, filed before the application's filing date but published on or after it",
    "P": "intermediate document, published between the application's priority date and its filing date",
}


def report_category(doc: Patent, query: Patent | None = None, before: str = "") -> str:
    """The date category of ``doc`` in the search report of ``query`` (the application under search), as the
    EPO's search reports mark it beside X, Y or A: :func:`mark` at the query's own date and intermediate
    window, else at ``before`` (no window); ``""`` otherwise."""
    if query is not None:
        return mark(doc, prior_art_date(query), intermediate_from(query))
    return mark(doc, before)


def mark_hits(hits, corpus: Mapping[str, Patent], before: str, priority: str = "") -> dict[str, int]:
    """Set ``extras[MARK_KEY]`` of each of ``hits`` (each with ``patent_id`` and an ``extras`` dict) to its
    :func:`mark` for cut-off ``before`` and intermediate window from ``priority``; returns how many hits
    carry each mark (``{"E": n, "P": m}``)."""
    for h in hits if before else ():
        m = mark(corpus[h.patent_id], before, priority)
        if m:
            h.extras[MARK_KEY] = m
    marks = [h.extras.get(MARK_KEY, "") for h in hits]
    return {EARLIER: marks.count(EARLIER), INTERMEDIATE: marks.count(INTERMEDIATE)}


def cutoff_summary(qrels: dict, corpus, cutoffs: dict, hidden: dict) -> dict:
    """What a cut-off did to the evaluation: the relevant documents it hides (still counted as missed),
    the queries without a cut-off (no date), the undated corpus documents it leaves out: what
    ``patent-demo evaluate text --before`` reports. ``hidden``: ``filters.hidden_relevant``'s per query."""
    relevant = sum(sum(1 for r in d.values() if r > 0) for d in qrels.values())
    n_hidden = sum(map(len, hidden.values()))
    undated = {count_undated(corpus, b) for b in set(cutoffs.values()) if b}
    line = (
        f"{n_hidden} of {relevant} relevant documents are not prior art by the cut-off "
        f"(counted as missed; {len(hidden)} of {len(qrels)} queries affected)"
    )
    no_date = sum(1 for q in qrels if not cutoffs.get(q))
    if no_date:
        line += f"; {no_date} queries have no date and no cut-off"
    if undated and max(undated):
        line += f"; {max(undated)} undated documents left out"
    return {
        "hidden": n_hidden,
        "relevant": relevant,
        "queries_affected": len(hidden),
        "queries_without_cutoff": no_date,
        "undated_left_out": max(undated) if undated else 0,
        "hidden_per_query": hidden,
        "line": line,
    }
