"""What the workbench pages show of a search and its labels: user text made inert (``esc``, ``plain``),
handler failures as ⚠️ lines (``warn``), the result tables with their label badges and cursor row, the
drawing gallery, and the cursor and progress lines."""

from __future__ import annotations

import html
import re
from typing import Any

import gradio as gr

from patent_demo.document import scheme_code
from patent_demo.filters import publication_date
from patent_demo.hierarchy import patent_classes
from patent_demo.labels.fields import LabelError, unlink
from patent_demo.labels.sessions import parse_rank
from patent_demo.labels.store import LabelStore
from patent_demo.prior_art import MARK_KEY
from patent_demo.text.explain import MOVE_FROM, rank_move
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import LISTS as TEXT_LISTS
from patent_demo.workbench import Workbench

BADGES = {"relevant": "✓ relevant (2)", "partly": "◐ partly (1)", "not": "✗ not relevant (0)"}
# every hit table shows the publication date (what a prior-art cut-off is checked against)
HIT_HEADERS = ["rank", "patent", "view", "class", "class title", "title", "published", "score", "label"]
TEXT_HEADERS = [
    "rank",
    "move",
    "patent",
    "class",
    "title",
    "published",
    "score",
    "snippet (BM25 words)",
    "label",
]
COMBINED_HEADERS = ["rank", "patent", "class", "title", "published", "score", "label"]
DRAWING_KINDS = ("image", "application")  # query kinds whose hits the drawing tab's grid and table show
CURSOR_STYLE = "background-color: #ffe9a8; font-weight: 600"
_MD_SPECIAL = re.compile(r"([\\`\[\]|*])")  # links and images need [ ], tables |, code `, italics *
_ABS_PATH = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?(?:[\\/][^\s'\"\\/:]+){2,}[\\/]?")


def esc(value: Any) -> str:
    """User or corpus text made inert for Markdown: HTML characters as entities, and the brackets of links
    and images, table bars, backticks and asterisks (``bubbl*`` is truncation, not italics) escaped, so a name, note, abstract or title never renders as
    HTML, a link, an image or a table cell."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=False))


def plain(value: Any) -> str:
    """A name, note or typed query as plain text in Markdown or a table: ``esc``, and no bare address (an
    ``https://`` or ``www.`` address, an e-mail address) left for the renderer to link (``fields.unlink``)."""
    return unlink(esc(value))


def scrub_paths(message: str) -> str:
    """A message with every absolute path replaced by its file name (no server path reaches a page)."""
    return _ABS_PATH.sub(lambda m: re.split(r"[\\/]", m.group(0).rstrip("\\/"))[-1] or "(path)", message)


def warn(err: BaseException) -> str:
    """A handler failure as the ⚠️ message shown in the page (and a toast): paths scrubbed, text escaped,
    at most 500 characters."""
    if isinstance(err, MemoryError):
        msg = "not enough memory for this request; try a smaller input"
    else:
        text = str(err)
        if isinstance(err, KeyError) and len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]  # KeyError quotes its message
        msg = scrub_paths(text) or type(err).__name__
    msg = msg if len(msg) <= 500 else msg[:499] + "…"
    gr.Warning(html.escape(msg))
    return f"⚠️ {esc(msg)}"


# -- what the cursor shows -----------------------------------------------------------------------------------
def cursor_of(session: dict | None, list_name: Any, rank: Any) -> tuple[str, int] | None:
    """(list, rank) clamped to the session's lists, or None without results."""
    lists = (session or {}).get("lists") or {}
    if not isinstance(list_name, str) or list_name not in lists or not lists[list_name]:
        return None
    try:
        r = parse_rank(rank)
    except LabelError:
        r = 1
    return list_name, max(1, min(r, len(lists[list_name])))


def class_code(patent, kind: str) -> str:
    """The code a result row shows: for drawings the hierarchy's subclass (Locarno, else USPC), for texts
    the first code of Locarno, IPC, CPC or USPC, whichever the patent has."""
    if kind in DRAWING_KINDS:
        return patent_classes(patent.codes)[0]
    return next((c[0] for s in ("locarno", "ipc", "cpc", "uspc") if (c := patent.codes.get(s))), "")


def published_cell(patent, extras: dict | None) -> str:
    """The "published" cell of a hit: its publication date, badged ``· E`` when the search's cut-off admitted
    it as an earlier application (``patent_demo.prior_art``: filed before the cut-off, published on or after),
    ``· P`` when it is an intermediate document of a patent's own search (published between the patent's
    priority and filing dates)."""
    mark = (extras or {}).get(MARK_KEY, "")
    return f"{publication_date(patent)}\u00a0·\u00a0{mark}" if mark else publication_date(patent)  # one line


def hit_rows(wb: Workbench, session: dict, list_name: str) -> list[list]:
    """The table rows of one list of a session (without the label column)."""
    corpus, kind = wb.corpus, session.get("kind")
    rows = []
    for r, row in enumerate(session["lists"].get(list_name) or [], 1):
        p = corpus[row["id"]]
        score, published = round(float(row["score"]), 4), published_cell(p, row.get("extras"))
        if kind in DRAWING_KINDS:
            rows.append(
                [
                    r,
                    p.id,
                    row.get("view", ""),
                    class_code(p, kind),
                    row.get("locarno_title", ""),
                    p.title,
                    published,
                    score,
                ]
            )
        elif kind == "text":
            e = row.get("extras") or {}
            rows.append(
                [
                    r,
                    rank_move(list_name, e, r),
                    p.id,
                    class_code(p, kind),
                    p.title,
                    published,
                    score,
                    e.get("snippet", ""),
                ]
            )
        else:
            rows.append([r, p.id, class_code(p, kind), p.title, published, score])
    return rows


def text_headers(list_name: str) -> list[str]:
    """A text list's column names: its "move" column names the list the move is counted from (``MOVE_FROM``:
    "move vs BM25", "move vs hybrid pool"), so that no move reads as one against the list on screen."""
    vs = MOVE_FROM.get(list_name, ("", ""))[1]
    return [f"move vs {vs}" if h == "move" and vs else h for h in TEXT_HEADERS]


def shown_text_list(list_name: Any) -> str:
    """The text list the Text tab shows: the cursor's when it is on a text list, else the default list."""
    return list_name if list_name in TEXT_LISTS else default_text_list()


def _moved(list_name: str, extra: dict, rank: int) -> str:
    """ " (hybrid pool rank 33, ↑ 32)": where the hit was in the list it is compared with, and the move."""
    if list_name not in MOVE_FROM:
        return ""
    before = extra.get(MOVE_FROM[list_name][0])
    return f" ({MOVE_FROM[list_name][1]} rank {'–' if before is None else before}, {rank_move(list_name, extra, rank) or '–'})"


def table_value(
    wb: Workbench,
    session: dict,
    list_name: str,
    judged: dict[str, str],
    cursor_rank: int | None,
    unlabelled_only: bool = False,
):
    """A result table with the label badge column, the cursor row highlighted (a pandas Styler)."""
    import pandas as pd

    headers = {**dict.fromkeys(DRAWING_KINDS, HIT_HEADERS), "text": text_headers(list_name)}.get(
        session.get("kind"), COMBINED_HEADERS
    )
    ids = [row["id"] for row in session["lists"].get(list_name) or []]
    rows = []
    for row, pid in zip(hit_rows(wb, session, list_name), ids, strict=True):
        if unlabelled_only and pid in judged:
            continue
        rows.append([*row, BADGES.get(judged.get(pid, ""), "")])
    frame = pd.DataFrame(rows, columns=headers)
    if cursor_rank is None or frame.empty:
        return frame
    hot = frame["rank"] == cursor_rank
    return frame.style.apply(lambda r: [CURSOR_STYLE if hot[r.name] else ""] * len(r), axis=1).format(
        {"score": str}
    )


def gallery_items(
    session: dict, judged: dict[str, str], unlabelled_only: bool = False
) -> list[tuple[str, str]]:
    items = []
    for r, row in enumerate(session["lists"].get("hmcl") or [], 1):
        if unlabelled_only and row["id"] in judged:
            continue
        badge = f" · {BADGES[judged[row['id']]]}" if row["id"] in judged else ""
        items.append((row["image"], f"#{r} {row['id']} · {row.get('caption', '')}{badge}"))
    return items


def progress_md(store: LabelStore, session: dict | None, who: str) -> str:
    if not session or not session.get("lists"):
        return "No query yet: run a search, then label its hits."
    shown = {row["id"] for rows in session["lists"].values() for row in rows}
    judged = store.judged(session["query_id"], who) if who else {}
    done = len(shown & set(judged))
    return f"**{done} of {len(shown)}** candidates of this query labelled by {plain(who) if who else '(enter your name)'}"


def cursor_md(
    wb: Workbench, session: dict | None, list_name: Any, rank: Any, judged: dict | None = None
) -> str:
    at = cursor_of(session, list_name, rank)
    if at is None:
        return "Select a hit (click it) or choose a list and rank."
    list_name, r = at
    row = session["lists"][list_name][r - 1]
    p = wb.corpus[row["id"]]
    badge = f" · **{BADGES[judged[p.id]]}**" if judged and p.id in judged else ""
    return (
        f"**{list_name} #{r}** · `{esc(p.id)}` · {esc(p.title)} · {esc(scheme_code(p))} · "
        f"score {row['score']:.3f}{badge}"
    )


def cursor_marker(session: dict | None, list_name: Any, rank: Any, judged: dict | None) -> str:
    """An empty element (the label panel's hidden ``l-at``) that tells the page's key queue
    (``patent_demo.ui.keys``) where the cursor is: the search, the list, the rank, every hit of the list by
    id (``sessions.hit_ref``) and the hits already labelled, so a key binds to the hit under the cursor when
    it is pressed. Empty without a cursor hit."""
    import json

    at = cursor_of(session, list_name, rank)
    if at is None:
        return '<span class="l-at"></span>'
    rows = session["lists"][at[0]]
    data = {
        "search": str(session.get("search", "")),
        "list": at[0],
        "rank": at[1],
        "hits": [[row["id"], row.get("figure") or ""] for row in rows],
        "judged": sorted(judged or {}),
    }
    return f'<span class="l-at" data-at="{html.escape(json.dumps(data), quote=True)}"></span>'
