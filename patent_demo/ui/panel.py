"""The label panel under the tabs: the hit under the cursor, its label buttons and keys, undo, next and
previous (``LabelPanel``); the handlers are ``labelling.LabelHandlers``."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from patent_demo.labels.store import GRADES
from patent_demo.ui.access import lenient
from patent_demo.ui.events import QUIET, Cursor
from patent_demo.ui.guidelines import GuidelineHandlers, GuidelinesPanel
from patent_demo.ui.keys import ACK_JS, ENTRY_ID, MARKER_ID, QUEUE_LINE_ID, SEND_ID, SEND_JS
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.workbench import Workbench

LIST_NAMES = ("hmcl", "bm25", "dense", "hybrid", "dssdnet", "fused", "rrf")
KEYS = (
    ("1", "relevant (grade 2)"),
    ("2", "partly (grade 1)"),
    ("3", "not relevant (grade 0)"),
    ("u", "undo"),
    ("j", "next"),
    ("k", "previous"),
    ("r", "refine the drawing search with your labels"),
)


def _button(lh: LabelHandlers, value: str):
    """The handler of one label button: ``LabelHandlers.do_label`` with the button's grade."""

    def label(
        list_name,
        rank,
        category,
        note,
        annotator,
        session,
        auto,
        token=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        return lh.do_label(
            value, list_name, rank, category, note, annotator, session, "", auto, token, request, profile
        )

    return label


def _mover(lh: LabelHandlers, step: int):
    """The handler that moves the cursor ``step`` hits on (0: to the first hit of the chosen list)."""

    def move(
        list_name,
        rank,
        session,
        unlabelled,
        annotator,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        return lh.move(list_name, rank if step else 1, step, session, unlabelled, annotator, request, profile)

    return move


@dataclass
class LabelPanel:
    """The label panel's components."""

    list_name: gr.Radio
    rank: gr.Number
    category: gr.Radio
    preview: gr.Image
    cursor: gr.Markdown
    auto: gr.Checkbox
    unlabelled: gr.Checkbox
    prev: gr.Button
    relevant: gr.Button
    partly: gr.Button
    not_relevant: gr.Button
    next: gr.Button
    undo: gr.Button
    note: gr.Textbox
    status: gr.Markdown
    progress: gr.Markdown
    value: gr.Radio  # the grade of an API call's ``/label``
    key: gr.Textbox  # its request key
    api: gr.Button
    entry: gr.Textbox  # the key queue's entry being sent (``patent_demo.ui.keys``)
    send: gr.Button  # the queue's hidden button, and the answer's request key
    ack: gr.Textbox
    queue_line: gr.HTML  # what waits in the queue
    marker: gr.HTML  # where the cursor is, for the queue (``views.cursor_marker``)
    guide: GuidelinesPanel  # what each grade means here, beside the keys

    @classmethod
    def build(cls, wb: Workbench, gh: GuidelineHandlers) -> LabelPanel:
        keys_legend = " · ".join(f"<span class='kbd'>{k}</span> {v}" for k, v in KEYS)
        with gr.Group(elem_id="label-panel"):
            gr.Markdown(
                f"**Label the hit under the cursor** · keys (outside text fields): {keys_legend} · each key labels "
                "the hit under the cursor when pressed, however fast · a label moves the cursor on only when "
                "*auto-advance* is ticked; the category (text hits only) resets after each label"
            )
            guide = GuidelinesPanel.build(gh)
            with gr.Row(elem_id="l-pick"):
                list_name = gr.Radio(list(LIST_NAMES), value="hmcl", label="List", scale=2)
                rank = lenient(gr.Number(value=1, minimum=1, step=1, label="Rank", scale=1, elem_id="l-rank"))
                category = gr.Radio(
                    [("none", ""), ("X", "X"), ("Y", "Y"), ("A", "A")],
                    value="",
                    label="Search-report category (text)",
                    scale=2,
                    elem_id="l-category",
                )
            with gr.Row():
                preview = gr.Image(
                    label="Cursor hit",
                    type="filepath",
                    height=160,
                    interactive=False,
                    scale=1,
                    elem_id="l-preview",
                    visible=wb.has_drawings(),
                )  # no empty box without drawings
                with gr.Column(scale=4):
                    cursor = gr.Markdown("Run a search first.", elem_id="l-cursor")
                    with gr.Row():
                        auto = gr.Checkbox(
                            value=True,
                            label="auto-advance: after a label, move to the next hit",
                            elem_id="l-auto",
                        )
                        unlabelled = gr.Checkbox(
                            value=False, label="show unlabelled only", elem_id="l-unlabelled"
                        )
            with gr.Row():
                prev = gr.Button("◀ prev (k)", elem_id="lbl-prev", size="sm")
                relevant = gr.Button("Relevant · 2 (key 1)", variant="primary", elem_id="lbl-rel", size="sm")
                partly = gr.Button("Partly · 1 (key 2)", elem_id="lbl-part", size="sm")
                not_relevant = gr.Button(
                    "Not relevant · 0 (key 3)", variant="stop", elem_id="lbl-not", size="sm"
                )
                next_ = gr.Button("next ▶ (j)", elem_id="lbl-next", size="sm")
                undo = gr.Button("Undo (u)", elem_id="lbl-undo", size="sm")
            note = gr.Textbox(label="Note (optional)", lines=1, elem_id="l-note")
            with gr.Row():
                status = gr.Markdown(elem_id="l-status")
                progress = gr.Markdown(elem_id="l-progress")
            queue_line = gr.HTML("", elem_id=QUEUE_LINE_ID)
            marker = gr.HTML("", elem_id=MARKER_ID, visible="hidden")
            value = gr.Radio(list(GRADES), value="relevant", visible=False)
            key = gr.Textbox(value="", visible=False, label="request key")
            api = gr.Button(visible=False)
            entry = gr.Textbox(value="", visible=False, label="key entry", elem_id=ENTRY_ID)
            send = gr.Button("send", visible="hidden", elem_id=SEND_ID)
            ack = gr.Textbox(value="", visible=False, label="answered entry")
        return cls(
            list_name,
            rank,
            category,
            preview,
            cursor,
            auto,
            unlabelled,
            prev,
            relevant,
            partly,
            not_relevant,
            next_,
            undo,
            note,
            status,
            progress,
            value,
            key,
            api,
            entry,
            send,
            ack,
            queue_line,
            marker,
            guide,
        )

    def wire(self, cur: Cursor, lh: LabelHandlers) -> None:
        """Labels (``/label`` and the three buttons), undo, next / previous / the list chosen, and the rank
        or "show unlabelled only" changed: each ends with the cursor's refresh."""
        s = cur.shared
        label_out = [self.status, self.progress, self.rank, self.cursor, self.note]

        def after_label(event):  # the category goes back to none after every label
            return cur.then_show(
                event.then(lambda: "", None, self.category, trigger_mode="always_last", **QUIET)
            )

        after_label(
            self.api.click(
                lh.do_label,
                [
                    self.value,
                    self.list_name,
                    self.rank,
                    self.category,
                    self.note,
                    s.annotator,
                    s.session,
                    self.key,
                    self.auto,
                    s.owner_token,
                ],
                label_out,
                api_name="label",
            )
        )
        for btn, value in ((self.relevant, "relevant"), (self.partly, "partly"), (self.not_relevant, "not")):
            after_label(
                btn.click(
                    _button(lh, value),
                    [
                        self.list_name,
                        self.rank,
                        self.category,
                        self.note,
                        s.annotator,
                        s.session,
                        self.auto,
                        s.owner_token,
                    ],
                    label_out,
                    api_name=f"label_{value}",
                )
            )
        # the page's key queue: one entry at a time, the next sent when this one's request key is back
        sent = self.send.click(
            lh.key,
            [self.entry, s.annotator, s.session, s.owner_token],
            [self.status, self.progress, self.list_name, self.rank, self.cursor, self.ack],
            js=SEND_JS,
            trigger_mode="multiple",
            show_progress="hidden",
            **QUIET,
        )
        sent.then(None, [self.ack], None, js=ACK_JS, show_progress="hidden", **QUIET)
        cur.then_show(sent)
        cur.then_show(
            self.undo.click(
                lh.undo,
                [s.annotator, s.session, s.owner_token],
                [self.status, self.progress, self.list_name, self.rank, self.cursor],
                api_name="undo",
            )
        )
        move_in, moved = (
            [self.list_name, self.rank, s.session, self.unlabelled, s.annotator],
            [self.rank, self.cursor],
        )
        cur.then_show(self.next.click(**cur.mine(_mover(lh, 1), move_in, moved), api_name="next_hit"))
        cur.then_show(self.prev.click(**cur.mine(_mover(lh, -1), move_in, moved), api_name="prev_hit"))
        cur.then_show(self.list_name.input(**cur.mine(_mover(lh, 0), move_in, moved), api_name="choose_list"))
        self.rank.input(**cur.mine(lh.show, cur.show_in, cur.views), **QUIET)
        self.unlabelled.change(**cur.mine(lh.show, cur.show_in, cur.views), **QUIET)
