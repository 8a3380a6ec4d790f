"""Labelling in the workbench UI: who labels (``Identity``), the one cursor and everything that follows it,
labels, undo, export, agreement and adjudication (``LabelHandlers``).

**One cursor.** The label panel's list and rank name the hit being labelled. Every view follows it: the
gallery selects that drawing (its preview shows it), the result table highlights its row, the label
panel shows its drawing and title, and the explanation panel explains it. Labelled hits carry a badge
with the grade (the current annotator's latest label); "show unlabelled only" hides the others and makes
next / previous skip them. After a label the cursor moves on only when "auto-advance" is ticked, and
the search-report category goes back to none.

**Identity.** On a Space with sign-in the annotator is the signed-in Hugging Face account; with
``--annotators`` it is the user who logged in (Gradio's login page); otherwise the typed name. Values
sent in a request never override the first two. ``--admin`` names who may adjudicate and export.
Undo only acts on the last label of the browser session (``session["owner"]``) that made it.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from patent_demo.document import scheme_code
from patent_demo.labels.fields import MAX_NOTE_CHARS, LabelError
from patent_demo.labels.sessions import label_from_session, parse_rank, rank_of_hit
from patent_demo.labels.store import Label, LabelStore
from patent_demo.limits import check_text
from patent_demo.text.explain import MOVE_FROM, explain_markdown, found_by
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import LISTS as TEXT_LISTS
from patent_demo.text.measured import list_note
from patent_demo.ui.access import SERVED, Identity, check_owner
from patent_demo.ui.inputs import NO_SELECTION, Selection, picked_rank
from patent_demo.ui.views import (
    DRAWING_KINDS,
    _moved,
    cursor_marker,
    cursor_md,
    cursor_of,
    esc,
    gallery_items,
    plain,
    progress_md,
    shown_text_list,
    table_value,
    warn,
)
from patent_demo.wording import counted
from patent_demo.workbench import Workbench

QUEUE_HEADERS = ["query id", "query", "candidate", "title"]
OTHERS_NOTE = "other annotators' labels, notes and decisions are for the admins"


# -- handlers --------------------------------------------------------------------------------------------------
class LabelHandlers:
    """Event handlers of the label panel, the export and the agreement tab."""

    def __init__(self, workbench: Workbench, store: LabelStore, identity: Identity | None = None) -> None:
        self.wb, self.store = workbench, store
        self.identity = identity or Identity()

    def _who(self, typed, request, profile) -> str:
        return self.identity.who(typed, request, profile)

    def _judged(self, session: dict | None, who: str) -> dict[str, str]:
        if not session or not session.get("query_id") or not who:
            return {}
        return self.store.judged(session["query_id"], who)

    def _soft_who(self, typed, request, profile) -> str:
        try:
            return self._who(typed, request, profile)
        except LabelError:
            return ""

    # -- cursor -------------------------------------------------------------------------------------------------
    def show(
        self,
        session,
        list_name,
        rank,
        unlabelled_only,
        annotator,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        """Everything that follows the cursor: gallery (selection and badges), the tables (badges, cursor
        row), the label panel's drawing and line, the explanation. Views of other search kinds are cleared."""
        try:
            return self._show(session, list_name, rank, unlabelled_only, annotator, request, profile)
        except Exception as err:  # noqa: BLE001 - the views stay as they are, the cursor line says why
            return (*(gr.update() for _ in range(15)), warn(err), gr.update())

    def _show(self, session, list_name, rank, unlabelled_only, annotator, request, profile):
        who = self._soft_who(annotator, request, profile)
        judged = self._judged(session, who)
        at = cursor_of(session, list_name, rank)
        kind = (session or {}).get("kind")
        only = bool(unlabelled_only)
        out: dict[str, Any] = {}
        if kind in DRAWING_KINDS:
            items = gallery_items(session, judged, only)
            ranks = [int(c.split(" ", 1)[0][1:]) for _, c in items]
            sel = ranks.index(at[1]) if at and at[0] == "hmcl" and at[1] in ranks else None
            out["gallery"] = gr.update(value=items, selected_index=sel)
            out["d_table"] = table_value(self.wb, session, "hmcl", judged, at[1] if at else None, only)
        else:
            out["gallery"], out["d_table"] = gr.update(value=[], selected_index=None), None
        shown = shown_text_list(list_name)  # one text list at a time: the cursor's
        for name in TEXT_LISTS:
            hot = at[1] if at and at[0] == name else None
            value = table_value(self.wb, session, name, judged, hot, only) if kind == "text" else None
            out[name] = gr.update(value=value, visible=True) if name == shown else gr.update(visible=False)
        out["t_show"], out["t_figures"] = shown, self.list_figures(session, shown)
        combined = ("hmcl", (session or {}).get("text_list") or default_text_list(), "rrf")
        for key, name in zip(("c_hm", "c_list", "c_rrf"), combined, strict=True):
            hot = at[1] if at and at[0] == name else None
            out[key] = table_value(self.wb, session, name, judged, hot, only) if kind == "combined" else None
        out["gate"], out["explain"] = self.explain_at(session, at)
        out["preview"] = self._preview(session, at)
        out["cursor"] = cursor_md(self.wb, session, list_name, rank, judged)
        out["marker"] = cursor_marker(session, list_name, rank, judged)
        return tuple(
            out[k]
            for k in (
                "gallery",
                "d_table",
                *TEXT_LISTS,
                "t_show",
                "t_figures",
                "c_hm",
                "c_list",
                "c_rrf",
                "gate",
                "explain",
                "preview",
                "cursor",
                "marker",
            )
        )

    def list_figures(self, session, name: str) -> str:
        """The line beside the shown text list: what it measured against the default list
        (``patent_demo.text.measured.list_note``) for the session's re-ranker (else the default one)."""
        key = (session or {}).get("text_model")
        spec = self.wb.model(key, "text") if key else self.wb.default_text_model()
        fusion = self.wb.fusion_weight(spec)[1] if name == "fused" else ""
        move = f"*move*: from its {MOVE_FROM[name][1]} rank" if name in MOVE_FROM else ""
        return " · ".join(x for x in (list_note(name, spec), esc(fusion), move) if x)

    def _preview(self, session, at) -> str | None:
        if at is None:
            return None
        row = session["lists"][at[0]][at[1] - 1]
        if row.get("image"):
            return row["image"]
        p = self.wb.corpus[row["id"]]
        return (
            self.wb.display_path(p.figures[0]) if p.figures else None
        )  # a browser-ready PNG, not a TIFF page

    def explain_at(self, session, at):
        """The explanation panel for the cursor hit: DSSDNet's gate and components, or the candidate text."""
        from patent_demo.plots import gate_plot

        if at is None or session.get("kind") != "text":
            return None, "Run a text search, then select a candidate to see why it ranks where it does."
        list_name, r = at
        row = session["lists"][list_name][r - 1]
        p = self.wb.corpus[row["id"]]
        head = f"### {esc(p.id)} · {esc(p.title)}\n"
        body = f"**Query**: {esc(session.get('text', ''))}\n\n**Candidate** ({esc(scheme_code(p))}): {esc(self.wb.candidate_text(p))}"
        e = row.get("extras") or {}
        if list_name != "dssdnet":
            found = f"{found_by(e)}\n\n".lstrip()
            return (
                None,
                head
                + f"{list_name} rank {r}{_moved(list_name, e, r)} · score {row['score']:.3f}\n\n{found}"
                + body,
            )
        fig = gate_plot(e["gate"]) if e.get("gate") else None
        md = (
            head + f"DSSDNet rank {r}{_moved(list_name, e, r)}  \n"
            f"**score** {_fmt(row['score'])} · **with t flipped** {_fmt(e.get('score_t_flipped'))}  \n"
            f"**domain-sensitive share** (gate mean) {_fmt(e.get('gate_mean'))}  \n"
            f"**t** = {_fmt(e.get('t'))} ({esc(e.get('t_source') or '–')}) · **t̂** = {_fmt(e.get('t_hat'))}  \n"
            f"**components**: ds {_fmt(e.get('ds'))} · di {_fmt(e.get('di'))} · fusion {_fmt(e.get('fusion'))}\n\n"
            f"{explain_markdown(e, [h.get('extras') or {} for h in session['lists']['dssdnet']])}\n\n" + body
        )
        return fig, md

    def explain(self, session, rank):
        """``/explain``: the explanation of DSSDNet hit ``rank`` of the current text query."""
        try:
            parse_rank(rank)
        except LabelError as err:
            return None, warn(err)
        return self.explain_at(session, cursor_of(session, "dssdnet", rank))

    def move(
        self,
        list_name,
        rank,
        step,
        session,
        unlabelled_only=False,
        annotator="",
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """The cursor ``step`` hits on (0: stay), skipping labelled hits when "show unlabelled only" is on."""
        try:
            parse_rank(rank)
        except LabelError as err:
            return 1, warn(err)
        at = cursor_of(session, list_name, rank)
        if at is None:
            return 1, cursor_md(self.wb, session, list_name, rank)
        rows = session["lists"][at[0]]
        who = self._soft_who(annotator, request, profile)
        judged = self._judged(session, who) if unlabelled_only else {}
        r = at[1]
        if step:
            r2 = r + step
            while 1 <= r2 <= len(rows) and rows[r2 - 1]["id"] in judged:
                r2 += step
            r = r2 if 1 <= r2 <= len(rows) else r
        return r, cursor_md(self.wb, session, at[0], r, self._judged(session, who))

    def select(self, list_name: str, session, evt: Selection):
        """A click on a gallery item or a table row puts the cursor on that hit: (list, rank, cursor line);
        a call without a selection leaves the cursor where it is and says why."""
        try:
            gallery = list_name == "hmcl" and (session or {}).get("kind") in DRAWING_KINDS
            rank = picked_rank(evt, gallery)
            return list_name, rank, cursor_md(self.wb, session, list_name, rank)
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return gr.update(), gr.update(), warn(err)

    # -- labels ----------------------------------------------------------------------------------------------
    def do_label(
        self,
        label,
        list_name,
        rank,
        category,
        note,
        annotator,
        session,
        request_key="",
        auto_advance=True,
        owner_token=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
        hit: dict | None = None,
    ):
        """Store one judgement of hit ``rank`` of ``list_name`` for the current query (of the hit ``hit`` names,
        ``sessions.hit_ref``, when given). With ``auto_advance`` the cursor moves to the next hit;
        ``request_key`` (optional) makes a retried request store once; a session bound to a browser's token
        takes labels only with that token (``access.check_owner``)."""
        try:
            check_owner(session, owner_token, "label on your own result lists only")
            parse_rank(rank)  # the same message with or without a current list
            who = self._who(annotator, request, profile)
            at = cursor_of(session, list_name, rank)
            kind_ok = at is not None and (session.get("kind") == "text")
            lab = self.store.add(
                label_from_session(
                    session,
                    list_name,
                    rank,
                    label,
                    who,
                    category if kind_ok else "",
                    note,
                    request_key or "",
                    hit=hit,
                )
            )
            if category and not kind_ok and lab is not None:
                extra = " · (the category applies to text hits only and was not stored)"
            else:
                extra = ""
            n = len(session["lists"][list_name])
            nxt = min(lab.rank + 1, n) if auto_advance else lab.rank
            again = " (already stored: this request was sent before)" if lab.replayed else ""
            msg = f"✓ {lab.label} · {esc(lab.candidate_id)} ({list_name} #{lab.rank}) · label #{lab.id}{again}{extra}"
            judged = self._judged(session, who)
            return (
                msg,
                progress_md(self.store, session, who),
                nxt,
                cursor_md(self.wb, session, list_name, nxt, judged),
                "",
            )
        except Exception as err:  # noqa: BLE001 - every failure is a message, the server carries on
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update()

    def key(
        self,
        item,
        annotator,
        session,
        owner_token=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """One entry of the page's key queue (``patent_demo.ui.keys``): a label, a move or an undo, each bound
        in the browser to the hit under the cursor when its key was pressed (``sessions.hit_ref``), sent in
        the order pressed, one at a time. A label goes to that hit or is refused (a hit of an earlier
        search, or not in the list on screen); ``auto`` puts the cursor on the next hit. Returns the label
        panel's status, progress, list, rank and cursor line, and last the entry's request key (``ack``),
        which tells the page to send the next one."""
        ack = ""
        try:
            entry = parse_key_entry(item)
            ack, action, hit = entry["key"], entry["action"], entry.get("hit")
            if action == "undo":
                return (*self.undo(annotator, session, owner_token, request, profile), ack)
            check_owner(session, owner_token, "label on your own result lists only")
            rank = rank_of_hit(session, hit)
            if action == "goto":
                who = self._soft_who(annotator, request, profile)
                line = cursor_md(self.wb, session, hit["list"], rank, self._judged(session, who))
                return gr.update(), gr.update(), hit["list"], rank, line, ack
            out = self.do_label(
                action,
                hit["list"],
                rank,
                entry.get("category", ""),
                entry.get("note", ""),
                annotator,
                session,
                ack,
                bool(entry.get("auto", True)),
                owner_token,
                request,
                profile,
                hit=hit,
            )
            moved = isinstance(out[2], int)  # stored: the cursor on the hit labelled (or the next one)
            return out[0], out[1], hit["list"] if moved else gr.update(), *out[2:4], ack
        except Exception as err:  # noqa: BLE001 - every failure is a message, the queue goes on
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update(), ack

    def undo(
        self,
        annotator,
        session,
        owner_token=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """Undo the last label this browser session made (whatever name it was made under); a session bound
        to a browser's token needs that token (``access.check_owner``)."""
        try:
            check_owner(session, owner_token)
            who = self._soft_who(annotator, request, profile)
            owner = (session or {}).get("owner")
            bound = self.identity.login or self.identity.oauth  # behind a login: that login's labels only
            if bound and not who:
                raise LabelError("log in first: undo acts on your own labels only")
            lab = self.store.undo_last(owner, annotator=who if bound else "") if owner else None
            msg = (
                "nothing to undo: this session has no label left to undo"
                if lab is None
                else f"↶ undid {lab.label} · {esc(lab.candidate_id)} ({lab.list_name} #{lab.rank})"
            )
            stay = gr.update(), gr.update(), gr.update()
            if lab is not None and lab.query_id == (session or {}).get("query_id"):
                at = cursor_of(session, lab.list_name, lab.rank)  # the cursor goes back to the undone hit
                if at is not None:
                    stay = at[0], at[1], cursor_md(self.wb, session, at[0], at[1], self._judged(session, who))
            return msg, progress_md(self.store, session, who), *stay
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update()

    # -- export -------------------------------------------------------------------------------------------------
    def export_labels(self, annotator="", request: gr.Request = None, profile: gr.OAuthProfile | None = None):
        """Write TREC qrels, HMCL / DSSDNet training rows and the disputed pairs; returns the files (a private
        copy that only this login may download)."""
        try:
            who = self._soft_who(annotator, request, profile)
            if self.identity.admins:
                self.identity.check_admin(who, "export the labels")
            out = self.store.export_all(self.store.path.parent / "exports", corpus=self.wb.corpus)
            served = SERVED.serve(
                [p for p, _ in out.values()], "exports", self.identity.download_owner(request)
            )
            n = {k: v for k, (_, v) in out.items()}
            md = (
                f"{counted(self.store.count(), 'label')} → {n['qrels.txt']} qrels lines, {n['hmcl.jsonl']} HMCL rows (drawing "
                f"judgements), {n['dssdnet.jsonl']} DSSDNet rows (text judgements), {n['disputed.jsonl']} disputed "
                f"pairs (tied, exported nowhere until adjudicated) · written to `exports/` beside {esc(self.store.name)}"
            )
            return served, md
        except Exception as err:  # noqa: BLE001
            return gr.update(), warn(err)

    # -- agreement and adjudication --------------------------------------------------------------------------
    def _queue(self) -> dict:
        first: dict[tuple[str, str], Label] = {}
        for lab in self.store.labels():
            first.setdefault((lab.query_id, lab.candidate_id), lab)
        open_pairs = self.store.disagreements()
        names = sorted({a for _, by in open_pairs for a in by})
        corpus = self.wb.corpus
        rows = [
            [q, _query_ref(first[(q, c)]), c, corpus[c].title if c in corpus else "(not in this corpus)"]
            + [by.get(a, "–") for a in names]
            for (q, c), by in open_pairs
        ]
        return {"headers": QUEUE_HEADERS + names, "data": rows}  # a table's text cells show as typed

    def agreement(self, request: gr.Request = None, profile: gr.OAuthProfile | None = None):
        """The agreement report (kappa per annotator pair, Krippendorff's alpha) and the disagreement queue;
        to a non-admin (when admins are set) the report of their own labels only, and no queue."""
        from patent_demo.labels.agreement import agreement_markdown, agreement_report

        try:
            reader = self.identity.reader("", request, profile)
            if reader is None:
                return agreement_markdown(agreement_report(self.store)), self._queue()
            own = [x for x in self.store.labels() if x.annotator == reader and reader]
            note = f"\n\n_Your own labels only; {OTHERS_NOTE}: {', '.join(sorted(self.identity.admins))}._"
            return agreement_markdown(agreement_report(own)) + note, {"headers": QUEUE_HEADERS, "data": []}
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update()

    def select_disagreement(
        self, evt: Selection, request: gr.Request = None, profile: gr.OAuthProfile | None = None
    ):
        try:
            if getattr(evt, "index", None) is None:
                raise LabelError(NO_SELECTION.replace("a hit", "a row of the queue"))
            if self.identity.reader("", request, profile) is not None:
                raise LabelError(
                    f"the disagreement queue shows every annotator's labels; {OTHERS_NOTE}: "
                    + ", ".join(sorted(self.identity.admins))
                )
            return self._select_disagreement(evt)
        except Exception as err:  # noqa: BLE001
            return "", "", warn(err), None, None

    def _select_disagreement(self, evt: gr.SelectData):
        """Fill the adjudication form from a queue row: query id, candidate, each annotator's label and note,
        and both sides in full (query drawing and text, candidate drawing and text)."""
        row = evt.row_value or ["", "", ""]
        query_id, cand = str(row[0]), str(row[2])
        labs = [
            x for x in self.store.labels(query_id=query_id) if x.candidate_id == cand and not x.adjudicated
        ]
        if not labs:
            return "", "", "Select a row of the queue.", None, None
        latest = {x.annotator: x for x in labs}
        who = "  \n".join(
            f"**{plain(a)}**: {x.label}"
            + (f" ({x.category})" if x.category else "")
            + (f" — {plain(x.note)}" if x.note else "")
            for a, x in sorted(latest.items())
        )
        corpus = self.wb.corpus
        p = corpus[cand] if cand in corpus else None
        q = labs[-1]
        q_text = plain(q.query_text) if q.query_text else "(a drawing only)"
        c_text = f"{esc(p.title)}: {esc(self.wb.candidate_text(p))}" if p else "(not in this corpus)"
        md = (
            f"**Query** ({q.modality} judgement): {q_text}  \n**Candidate** `{esc(cand)}` · {c_text}  \n{who}"
        )
        return query_id, cand, md, self._query_image(q), self._candidate_image(q, p)

    def _query_image(self, lab: Label):
        from PIL import Image

        if not lab.query_image_file:
            return None
        path = self.store.path.parent / lab.query_image_file
        if not path.is_file():
            return None
        with Image.open(path) as im:  # a copy in memory: the label folder is not served
            im.thumbnail((512, 512))
            return im.convert("L")

    def _candidate_image(self, lab: Label, patent) -> str | None:
        if patent is None or not patent.figures:
            return None
        fig = next((f for f in patent.figures if f.path == lab.candidate_figure), patent.figures[0])
        return self.wb.display_path(fig)  # a browser-ready PNG (a TIFF page would not render)

    def adjudicate(
        self,
        query_id,
        candidate_id,
        label,
        note,
        annotator,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """Store the adjudicated label of one (query, candidate); it wins over the annotators' labels in exports.
        Refused to a party of the pair, always: when every ``--admin`` labelled it, it stays disputed until
        an admin who did not is added."""
        try:
            who = self._who(annotator, request, profile)
            check_text(note, "the note", MAX_NOTE_CHARS)  # before any work
            self.identity.check_admin(who, "adjudicate")
            if not label:
                raise LabelError("choose the adjudicated label first: relevant, partly or not relevant")
            qid, cid = str(query_id or "").strip(), str(candidate_id or "").strip()
            previous = [x for x in self.store.labels(query_id=qid) if x.candidate_id == cid]
            try:
                lab = self.store.adjudicate(
                    qid, cid, label, who, note or "", adjudicators=self.identity.admins
                )
            except LabelError as err:
                if "every adjudicator labelled it" in str(err):
                    raise LabelError(f"{err} (start the app with another name in --admin)") from None
                raise
            by_annotator = {x.annotator: x.label for x in previous if not x.adjudicated}
            votes = ", ".join(f"{plain(a)}: {v}" for a, v in sorted(by_annotator.items()))
            again = " (replaces the earlier adjudication)" if any(x.adjudicated for x in previous) else ""
            msg = (
                f"✓ adjudicated {esc(lab.candidate_id)} for {esc(lab.query_id)} as **{lab.label}**{again} · "
                f"was {votes} · label #{lab.id}"
            )
            return (msg, *self.agreement(request, profile), "", "", "", "Select a row of the queue.")
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update(), gr.update(), gr.update()

    def release(self, session: dict | None) -> None:
        """A browser session ended: its staged query drawing goes unless a label kept it."""
        if session and session.get("image_file"):
            self.store.release_query_image(session["image_file"])


def parse_key_entry(item: Any) -> dict:
    """An entry of the page's key queue as sent (JSON): ``{"key", "action", "hit", "auto", "category",
    "note"}``, ``action`` a grade of ``GRADES``, ``goto`` or ``undo``; else ``LabelError``."""
    import json

    from patent_demo.labels.store import GRADES

    try:
        entry = json.loads(check_text(item, "a key entry", 8_000) or "{}")
    except (TypeError, ValueError):
        raise LabelError("a key entry is one JSON object") from None
    if not isinstance(entry, dict) or entry.get("action") not in (*GRADES, "goto", "undo"):
        raise LabelError("a key entry names a label (relevant, partly, not), goto or undo")
    if not isinstance(entry.get("key", ""), str):
        raise LabelError("the request key of a key entry is text")
    return entry


def _fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else esc(x))


def _query_ref(lab: Label, width: int = 60) -> str:
    """How a labelled query reads in the disagreement queue: its text (shortened), its drawing, or both."""
    text = " ".join(lab.query_text.split())
    text = text if len(text) <= width else text[: width - 1] + "…"
    drawing = ""
    if lab.query_image_file:  # named by the patent it came from, not by the stored file's internal name
        drawing = f"a drawing of {lab.query_patent_id}" if lab.query_patent_id else "an uploaded drawing"
    return " + ".join(x for x in (drawing, f"“{text}”" if text else "") if x) or lab.query_id
