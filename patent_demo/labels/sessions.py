"""The app's per-browser query state and the labels made from it.

A session records what one search showed (which lists, which candidates at which rank and score, which
checkpoint ranked them), so that a label names exactly what the examiner saw. It lives on the server
(a Gradio ``State``), never in the request, and carries an ``owner`` id drawn once per browser session
and kept across its searches: labels are stored with it, and undo only acts on labels of that owner.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from patent_demo.limits import MAX_RANK_CHARS
from patent_demo.workbench import Hit


def new_session(kind: str, query_id: str, previous: dict | None = None, **query: Any) -> dict:
    """The app's per-browser state for one query: what was shown, so a label can name it exactly.

    ``lists`` maps a list name (``patent_demo.labels.label.LISTS``) to rows ``{"id", "figure", "score", "extras"}``
    in rank order; ``checkpoints`` maps a list name to the checkpoint id that ranked it; ``owner`` is the
    browser session's id, taken from ``previous`` (the session of the last search) when there is one;
    ``search`` is drawn afresh for every search, so a hit named by ``hit_ref`` belongs to one search only.
    """
    return {
        "kind": kind,
        "query_id": query_id,
        "search": uuid.uuid4().hex[:12],
        "lists": {},
        "checkpoints": {},
        "owner": owner_of(previous),
        "history": history_of(previous),
        **query,
    }


def history_of(session: dict | None) -> list[dict]:
    """The search history of a browser session (a copy): one entry per search, oldest first."""
    return list((session or {}).get("history") or [])


def record_search(
    session: dict, kind: str, query: str, model: str, filters: str, examiner: str, notes: Sequence[str] = ()
) -> None:
    """Add this search to the session's history (what the search report cites): when (UTC), who, what
    was searched, with which model and filters (``filters.filters_line``: the exclusion of the query's own
    patent and family included when it was applied), the notes the status line showed, how many hits."""
    from datetime import UTC, datetime

    from patent_demo.filters import filters_line

    hits = max((len(rows) for rows in session.get("lists", {}).values()), default=0)
    session.setdefault("history", []).append(
        {
            "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "examiner": examiner or "(no name)",
            "kind": kind,
            "query": " ".join(str(query).split())[:200],
            "model": model,
            "filters": filters_line(filters, notes),
            "notes": "; ".join(n for n in notes if n),
            "hits": hits,
            "query_id": session.get("query_id", ""),
        }
    )


def owner_of(session: dict | None) -> str:
    """The owner id of a session, or a fresh random one when there is no session yet."""
    return (session or {}).get("owner") or uuid.uuid4().hex


def add_list(session: dict, name: str, hits: Sequence[Hit], checkpoint_id: str) -> None:
    """Record one shown list (``rows_of`` its hits) and the checkpoint that ranked it."""
    session["lists"][name] = rows_of(hits)
    session["checkpoints"][name] = checkpoint_id


def rows_of(hits: Sequence[Hit]) -> list[dict]:
    """The rows of a shown list: per hit its patent, figure, score and extras, and what the UI displays of
    it (``image`` path, ``view``, ``locarno_title``, gallery ``caption``)."""
    return [
        {
            "id": h.patent_id,
            "figure": h.figure,
            "score": h.score,
            "extras": h.extras,
            "image": h.image_path,
            "view": h.view,
            "locarno_title": h.locarno_title,
            "caption": f"{h.view} · {h.locarno} · {h.score:.3f}"
            if h.figure
            else f"{h.locarno} · {h.score:.3f}",
        }
        for h in hits
    ]


def parse_rank(value: Any) -> int:
    """A rank from a request (1, 1.0, "3"): a whole number from 1, else ``LabelError``."""
    from patent_demo.labels.store import LabelError

    if isinstance(value, bool) or value is None or value == "":
        raise LabelError(f"rank must be a whole number from 1, got {value!r}")
    if isinstance(value, str) and len(value) > MAX_RANK_CHARS:
        raise LabelError(f"rank must be a whole number from 1, got {len(value):,} characters")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):
        raise LabelError(f"rank must be a whole number from 1, got {str(value)[:20]!r}") from None
    if not number.is_integer() or number < 1:
        raise LabelError(f"rank must be a whole number from 1, got {str(value)[:20]!r}")
    return int(number)


def hit_ref(session: dict, list_name: str, rank: int) -> dict[str, str]:
    """The id of hit ``rank`` of ``list_name`` (a rank inside the list): the search that showed it, the list,
    the patent and the figure. A key pressed in the page carries it (``patent_demo.ui.keys``), so its label
    goes to that hit, whatever the cursor has done since."""
    row = session["lists"][list_name][rank - 1]
    return {
        "search": str(session.get("search", "")),
        "list": list_name,
        "id": row["id"],
        "figure": row.get("figure") or "",
    }


STALE_HIT = (
    "not stored: this label was given to a hit of an earlier search, not of the list now on screen "
    "(a new search replaced it); label the hit again"
)


def rank_of_hit(session: dict | None, hit: Any) -> int:
    """The rank of the hit ``hit`` (a ``hit_ref``) in the session's current lists, else ``LabelError``: a hit of
    an earlier search, or one its list does not hold, is refused with a clear message."""
    from patent_demo.labels.store import LabelError

    if not session or not session.get("lists"):
        raise LabelError("a label needs a query and a candidate: run a search first")
    if not isinstance(hit, dict) or not all(isinstance(hit.get(k), str) for k in ("search", "list", "id")):
        raise LabelError("a hit is named by its search, list, patent and figure")
    if hit["search"] != session.get("search"):
        raise LabelError(STALE_HIT)
    rows = session["lists"].get(hit["list"]) or []
    figure = hit.get("figure") or ""
    for r, row in enumerate(rows, 1):
        if row["id"] == hit["id"] and (row.get("figure") or "") == figure:
            return r
    raise LabelError(
        f"not stored: {hit['id'][:40]!r} is not a hit of the {hit['list'][:20]!r} list on screen"
    )


def sheet_figure(extras: dict) -> dict:
    """The figure of a sheet that was the query of a sheet search's hit (``patent_demo.search.sheet.search_sheet``: its
    name and its box on the stored query drawing), or ``{}`` for any other hit."""
    if not extras.get("query_figure"):
        return {}
    return {"name": str(extras["query_figure"]), "box": [int(x) for x in extras.get("query_box") or ()]}


def label_from_session(
    session: dict | None,
    list_name: str,
    rank: Any,
    label: str,
    annotator: str,
    category: str = "",
    note: str = "",
    request_key: str = "",
    hit: dict | None = None,
) -> Any:
    """A ``patent_demo.labels.store.Label`` for hit ``rank`` (from 1) of ``list_name`` in the current query,
    stored under the session's owner and with ``request_key`` as its idempotency key. Given ``hit`` (a
    ``hit_ref``), the label goes to that hit and to no other: refused when the current lists do not hold it
    (``rank_of_hit``), whatever ``list_name`` and ``rank`` say."""
    from patent_demo.labels.store import Label, LabelError

    if hit is not None:
        rank = rank_of_hit(session, hit)
        list_name = hit["list"]

    if not session or not session.get("lists"):
        raise LabelError("a label needs a query and a candidate: run a search first")
    rows = session["lists"].get(list_name) if isinstance(list_name, str) else None
    if rows is None:
        have = ", ".join(sorted(session["lists"]))
        raise LabelError(f"the current query has no {str(list_name)[:20]!r} list; it has {have}")
    if not rows:
        raise LabelError(f"the {list_name} list of the current query is empty: nothing to label")
    r = parse_rank(rank)
    if r > len(rows):
        raise LabelError(f"rank {r} is outside the {list_name} list (1..{len(rows)})")
    row = rows[r - 1]
    extras = row.get("extras") or {}
    return Label(
        annotator=annotator,
        query_id=session["query_id"],
        query_kind=session["kind"],
        candidate_id=row["id"],
        candidate_figure=row["figure"],
        list_name=list_name,
        rank=r,
        score=float(row["score"]),
        label=label,
        category=category or "",
        note=note or "",
        query_text=session.get("text", ""),
        query_codes=session.get("codes", {}),
        query_image_sha=session.get("image_sha", ""),
        query_image_file=session.get("image_file", ""),
        query_patent_id=session.get("patent_id", ""),
        query_figure=sheet_figure(extras),
        checkpoint_id=session["checkpoints"].get(list_name, ""),
        session_id=session.get("owner", ""),
        idempotency_key=request_key or "",
    )
