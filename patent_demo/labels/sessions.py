"""The app's per-browser query state and the labels made from it.

A session records what one search showed (which lists, which candidates at which rank and score, which
checkpoint ranked them), so that a label names exactly what the examiner saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from patent_demo.workbench import Hit


def new_session(kind: str, query_id: str, **query: Any) -> dict:
    """The app's per-browser state for one query: what was shown, so a label can name it exactly.

    ``lists`` maps a list name (hmcl, bm25, dssdnet, fused) to rows ``{"id", "figure", "score", "extras"}``
    in rank order; ``checkpoints`` maps a list name to the checkpoint id that ranked it.
    """
    return {"kind": kind, "query_id": query_id, "lists": {}, "checkpoints": {}, **query}


def add_list(session: dict, name: str, hits: Sequence[Hit], checkpoint_id: str) -> None:
    session["lists"][name] = [
        {"id": h.patent_id, "figure": h.figure, "score": h.score, "extras": h.extras} for h in hits
    ]
    session["checkpoints"][name] = checkpoint_id


def label_from_session(
    session: dict | None,
    list_name: str,
    rank: int,
    label: str,
    annotator: str,
    category: str = "",
    note: str = "",
) -> Any:
    """A ``patent_demo.labels.store.Label`` for hit ``rank`` (from 1) of ``list_name`` in the current query."""
    from patent_demo.labels.store import Label, LabelError

    if not session or not session.get("lists"):
        raise LabelError("a label needs a query and a candidate: run a search first")
    rows = session["lists"].get(list_name)
    if not rows:
        raise LabelError(f"the current query has no {list_name!r} list; it has {sorted(session['lists'])}")
    if not 1 <= int(rank) <= len(rows):
        raise LabelError(f"rank {rank} is outside the {list_name} list (1..{len(rows)})")
    row = rows[int(rank) - 1]
    return Label(
        annotator=(annotator or "").strip(),
        query_id=session["query_id"],
        query_kind=session["kind"],
        candidate_id=row["id"],
        candidate_figure=row["figure"],
        list_name=list_name,
        rank=int(rank),
        score=float(row["score"]),
        label=label,
        category=category or "",
        note=(note or "").strip(),
        query_text=session.get("text", ""),
        query_codes=session.get("codes", {}),
        query_image_sha=session.get("image_sha", ""),
        query_image_file=session.get("image_file", ""),
        query_patent_id=session.get("patent_id", ""),
        checkpoint_id=session["checkpoints"].get(list_name, ""),
    )
