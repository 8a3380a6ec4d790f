"""The workbench's page: ``build_demo(workbench, store)`` lays out the header, the tabs and the label panel,
one builder per part (``tabs_search``: Drawing, Text, Combined; ``examiner``: Document, Side by side, Search
report; ``tabs_review``: Embedding map, Error analysis, Export, Training, Agreement; ``panel``: the label
panel), then wires each part's events to its handlers (``handlers.Handlers``, ``examiner.ExaminerHandlers``,
``labelling.LabelHandlers``). Every event has an ``api_name`` (the app's API); nothing runs at import time."""

from __future__ import annotations

import gradio as gr

from patent_demo.labels.store import LabelStore
from patent_demo.ui import examiner as exam_ui
from patent_demo.ui.access import Identity, bind_owner, lenient
from patent_demo.ui.args import default_labels_path, on_space_with_sign_in
from patent_demo.ui.events import Cursor, Models, Shared
from patent_demo.ui.guidelines import GuidelineHandlers
from patent_demo.ui.handlers import Handlers
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.panel import LabelPanel
from patent_demo.ui.tabs_review import agreement_tab, errors_tab, export_tab, map_tab, training_tab
from patent_demo.ui.tabs_search import EXPLAIN_EMPTY, CombinedTab, DrawingTab, TextTab
from patent_demo.workbench import Workbench

NOT_UPLOADED = (
    "⚠️ a file of this request was not uploaded to this server: upload the drawing (an API client "
    "sends it with gradio_client.handle_file), never a path on the server"
)


class Page(gr.Blocks):
    """The page's ``gr.Blocks``. Gradio checks a request's file paths before any handler runs: a path the
    server never received (a forged ``{"path": "/etc/passwd"}``) fails there, and Gradio answers it with
    ``{"error": null}``. Here it is answered with ``NOT_UPLOADED`` (a ``gr.Error``: the toast in a page, the
    error message of an API call); nothing is read."""

    async def preprocess_data(self, *args, **kwargs):
        from gradio.exceptions import InvalidPathError

        try:
            return await super().preprocess_data(*args, **kwargs)
        except InvalidPathError:
            raise gr.Error(NOT_UPLOADED) from None


def build_demo(
    workbench: Workbench,
    store: LabelStore | None = None,
    storage_warning: str = "",
    identity: Identity | None = None,
) -> gr.Blocks:
    """The workbench UI. Every event has an ``api_name``; see the README for the API. ``identity`` says how
    the annotator is known (sign-in on a Space, ``--annotators`` login, else the typed name)."""
    wb = workbench
    store = store or LabelStore(default_labels_path()[0])
    identity = identity or Identity(oauth=on_space_with_sign_in())
    h, lh = Handlers(wb, store, identity), LabelHandlers(wb, store, identity)
    ex = exam_ui.ExaminerHandlers(wb, store, identity, h._ready)
    drawing_models = [(m.label, m.key) for m in wb.models("drawing")]
    d_default = wb.default_drawing_model().key if wb.has_drawings() else drawing_models[0][1]
    models = Models(drawing_models, d_default, [(m.label, m.key) for m in wb.models("text")])
    with Page(title="Patent prior-art workbench") as demo:
        shared, index_status, filter_panel = _header(wb, store, identity, storage_warning, lh)
        # every tab's name stays on the page (rows of names on a phone), none hidden in a "⋯" menu
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            drawing = DrawingTab.build(wb, models)
            text = TextTab.build(wb, models, lh)
            combined = CombinedTab.build(text.first)
            ext = exam_ui.build_tabs(wb.has_drawings())
            model_boxes = [drawing.model, text.model, *map_tab(models, h, shared), *errors_tab(models, h)]
            export_tab(lh, shared)
            training_tab(h)
            agreement_tab(lh, shared)
        guide = GuidelineHandlers(lh)
        panel = LabelPanel.build(wb, guide)
        # the events: a search ends with the cursor's refresh, which reaches the tabs and the panel above
        views = [
            drawing.gallery,
            drawing.table,
            *text.tables.values(),
            text.show,
            text.figures,
            combined.hm,
            combined.text_list,
            combined.rrf,
            text.gate,
            text.explain,
            panel.preview,
            panel.cursor,
            panel.marker,
        ]
        cur = Cursor(
            shared,
            lh,
            panel.list_name,
            panel.rank,
            panel.cursor,
            panel.progress,
            panel.unlabelled,
            views,
            marker=panel.marker,
        )
        cur.panels = {**_blank_panels(ext), text.gate: None, text.explain: EXPLAIN_EMPTY}
        demo.load(wb.index_status, None, index_status, api_name=False)
        gr.Timer(2.0).tick(wb.index_status, None, index_status, api_name=False)
        drawing.wire(cur, h, ex, ext)
        text.wire(cur, h, lh, ex, ext, panel.rank, panel.unlabelled)
        combined.wire(cur, h, lh, drawing.model, text.model)
        exam_ui.wire_tabs(
            ext,
            ex,
            shared,
            tabs,
            drawing.file,
            text.text,
            lambda start: text.search_chain(cur, h, start, api=False),
        )
        panel.wire(cur, lh)
        panel.guide.wire(demo, guide, shared.annotator)
        filter_panel.wire(demo)
        demo.load(h.refresh_models, None, model_boxes, api_name=False)
        # the buttons that read the session open once the load has bound it to this browser's token, so a
        # click as the page opens carries the token (before, it carried none and was refused as a stranger's)
        buttons = _session_buttons(demo, shared)
        for button in buttons:
            button.interactive = False
        demo.load(
            lambda token, session: (
                *bind_owner(token, session),
                *[gr.update(interactive=True)] * len(buttons),
            ),
            [shared.owner_token, shared.session],
            [shared.owner_token, shared.session, *buttons],
            api_name=False,
        )
        if identity.oauth or identity.login:
            # the annotator box shows who is signed in; labels take the name from the sign-in, not the box
            demo.load(signed_in_name, None, shared.annotator, api_name=False)
    _check(demo, shared)
    return demo


def _header(
    wb: Workbench, store: LabelStore, identity: Identity, storage_warning: str, lh: LabelHandlers
) -> tuple[Shared, gr.Markdown, exam_ui.FilterPanel]:
    """The page's state, heading, index status line, annotator box and filter panel."""
    # a function, not the bound method: gradio deep-copies the page config (this callback included)
    # for every page load, and a bound method would copy the handlers with the workbench and corpus
    session = gr.State(None, delete_callback=lambda value: lh.release(value))
    # this browser's proof of its session: undo needs it as well as the session hash (access.bind_owner)
    owner_token = gr.BrowserState("", storage_key="patent-demo-owner")
    crop_state = gr.State(None)  # the examiner's crop of the query drawing (PIL) or None
    gr.Markdown(
        f"## Prior-art workbench\n{wb.corpus_description()} · labels in the store **{store.name}**",
        elem_id="header",
    )
    index_status = gr.HTML("", elem_id="index-status")  # filled on load and every 2 s: what is being built
    if storage_warning:
        gr.Markdown(f"⚠️ **{storage_warning}**", elem_id="storage-warning")
    with gr.Row():
        signed = identity.oauth or identity.login
        annotator = gr.Textbox(
            value="",
            label="Annotator" + (" (your sign-in)" if signed else ""),
            scale=2,
            placeholder="your name",
            elem_id="annotator",
            interactive=not signed,
        )
        if identity.oauth:
            gr.LoginButton(scale=1)
        own_date = exam_ui.build_own_date()
    filter_panel = exam_ui.build_filters(own_date)
    return Shared(session, owner_token, crop_state, annotator, filter_panel.value), index_status, filter_panel


def _session_readers(demo: gr.Blocks, shared: Shared) -> list:
    """The page's events that read the browser's session."""
    return [fn for fn in demo.fns.values() if shared.session in fn.inputs]


def _session_buttons(demo: gr.Blocks, shared: Shared) -> list[gr.Button]:
    """Every button whose click runs an event that reads the browser's session."""
    ids = {block for fn in _session_readers(demo, shared) for block, _ in fn.targets}
    return [b for i, b in demo.blocks.items() if i in ids and isinstance(b, gr.Button)]


def _check(demo: gr.Blocks, shared: Shared) -> None:
    """Every event that reads a browser's session checks its owner (``access.owned``); every dropdown and
    radio passes a value outside its choices on to the handler, which says why it is refused."""
    for fn in _session_readers(demo, shared):
        if shared.owner_token not in fn.inputs:
            raise RuntimeError(
                f"the event {fn.api_name or fn.name} reads the session without its owner check"
            )
    for block in demo.blocks.values():
        if isinstance(block, gr.Dropdown | gr.Radio):
            lenient(block)


def signed_in_name(request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
    """The name labels are stored under: the Hugging Face account or the login (shown, not editable)."""
    name = getattr(profile, "username", "") if profile is not None else ""
    return name or getattr(request, "username", "") or ""


def _blank_panels(ext: exam_ui.ExaminerTabs) -> dict:
    """The Document and Side by side panels as the page starts: what a new search puts back
    (``events.Cursor.fresh``), so neither shows a hit of the search it replaced."""
    panels = (ext.doc_html, ext.doc_gallery, ext.doc_id, ext.sbs_query, ext.sbs_hit, ext.sbs_md, ext.tq_html)
    return {
        **dict(zip(panels, (exam_ui.DOC_EMPTY, None, "", None, None, exam_ui.SBS_EMPTY, ""), strict=True)),
        ext.tc_html: "",
    }
