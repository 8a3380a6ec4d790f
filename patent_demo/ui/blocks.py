"""The workbench's page: ``build_demo(workbench, store)`` lays out the tabs and the label panel and connects
every event to its handler (``handlers.Handlers``, ``examiner.ExaminerHandlers``, ``labelling.LabelHandlers``).
Every event has an ``api_name`` (the app's API); nothing runs at import time."""

from __future__ import annotations

import gradio as gr

from patent_demo.labels import loop
from patent_demo.labels.store import GRADES, LabelStore
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import LISTS as TEXT_LISTS
from patent_demo.text.lists import TITLES
from patent_demo.text.syntax import HELP as SYNTAX_HELP
from patent_demo.ui import examiner as exam_ui
from patent_demo.ui.access import Identity, bind_owner, lenient, owned
from patent_demo.ui.args import default_labels_path, on_space_with_sign_in
from patent_demo.ui.handlers import Handlers
from patent_demo.ui.inputs import NO_DRAWINGS, Selection
from patent_demo.ui.labelling import (
    COMBINED_HEADERS,
    HIT_HEADERS,
    QUEUE_HEADERS,
    TEXT_HEADERS,
    LabelHandlers,
    esc,
)
from patent_demo.workbench import Workbench

LIST_NAMES = ("hmcl", "bm25", "dense", "hybrid", "dssdnet", "fused", "rrf")
TEXT_IDS = {"bm25": "t-bm25", "dense": "t-dense", "hybrid": "t-hybrid", "dssdnet": "t-dss", "fused": "t-fused"}
TEXT_TABLE_HEIGHT = 380  # px: the label panel starts within a screen and a half at 1366 x 900
TEXT_TYPES = ["number", "str", "str", "str", "str", "str", "number", "html", "str"]
# rank, patent, class, title, publication date and score fit 1366 px without scrolling sideways
HIT_WIDTHS = ["6%", "12%", "11%", "7%", "16%", "18%", "12%", "8%", "10%"]
TEXT_WIDTHS = ["5%", "5%", "12%", "8%", "18%", "10%", "7%", "27%", "8%"]
# the Combined tab's three lists, one under the other (three side by side cut the title and hid the label)
COMBINED_WIDTHS = ["6%", "13%", "8%", "37%", "13%", "9%", "14%"]
ERROR_WIDTHS = ["10%", "27%", "6%", "8%", "7%", "10%", "10%", "22%"]  # the error table fits 1366 px
NOT_UPLOADED = ("⚠️ a file of this request was not uploaded to this server: upload the drawing (an API client "
                "sends it with gradio_client.handle_file), never a path on the server")  # fmt: skip


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


def build_demo(workbench: Workbench, store: LabelStore | None = None, storage_warning: str = "",
               identity: Identity | None = None) -> gr.Blocks:  # fmt: skip
    """The workbench UI. Every event has an ``api_name``; see the README for the API. ``identity`` says how
    the annotator is known (sign-in on a Space, ``--annotators`` login, else the typed name)."""
    wb = workbench
    store = store or LabelStore(default_labels_path()[0])
    identity = identity or Identity(oauth=on_space_with_sign_in())
    h = Handlers(wb, store, identity)
    lh = LabelHandlers(wb, store, identity)
    ex = exam_ui.ExaminerHandlers(wb, store, identity, h._ready)
    drawing_models = [(m.label, m.key) for m in wb.models("drawing")]
    d_default = wb.default_drawing_model().key if wb.has_drawings() else drawing_models[0][1]
    text_models = [(m.label, m.key) for m in wb.models("text")]
    example_figs = wb.example_figures(6)
    example_paths = [str(wb.corpus.image_path(f)) for _, f in example_figs]
    example_tiles = [(wb.display_path(f), f"{p.id} · {f.label or f.view}") for p, f in example_figs]
    keys_legend = " · ".join(
        f"<span class='kbd'>{k}</span> {v}"
        for k, v in (
            ("1", "relevant (grade 2)"),
            ("2", "partly (grade 1)"),
            ("3", "not relevant (grade 0)"),
            ("u", "undo"),
            ("j", "next"),
            ("k", "previous"),
        )
    )

    # -- layout --------------------------------------------------------------------------------------
    with Page(title="Patent prior-art workbench") as demo:
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
        index_status = gr.Markdown("", elem_id="index-status")  # filled on load: a value baked at build time goes stale
        if storage_warning:
            gr.Markdown(f"⚠️ **{storage_warning}**", elem_id="storage-warning")
        with gr.Row():
            signed = identity.oauth or identity.login
            annotator = gr.Textbox(value="", label="Annotator" + (" (your sign-in)" if signed else ""), scale=2,
                                   placeholder="your name", elem_id="annotator", interactive=not signed)  # fmt: skip
            if identity.oauth:
                gr.LoginButton(scale=1)
        filter_panel = exam_ui.build_filters()
        filters = filter_panel.value  # the panel's fields as one JSON value
        # every tab's name stays on the page (rows of names on a phone), none hidden in a "⋯" menu
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            with gr.Tab("Drawing search", id="drawing"):
                if not wb.has_drawings():
                    gr.Markdown(f"⚠️ **{NO_DRAWINGS}**.", elem_id="d-none")
                with gr.Row():
                    with gr.Column(scale=1, min_width=260):
                        d_file = gr.File(
                            label="Query drawing (PNG, JPEG, TIFF)",
                            type="filepath",
                            elem_id="d-file",
                            height=120,
                        )
                        d_examples = gr.Gallery(example_tiles, label="Examples (test split): click to use",
                                                columns=2, height=280, allow_preview=False, elem_id="d-examples",
                                                object_fit="contain")  # fmt: skip
                        d_query = gr.Image(label="Query as searched", type="pil", height=180, interactive=False,
                                           elem_id="d-query")  # fmt: skip
                        d_model = gr.Dropdown(
                            drawing_models, value=d_default, label="Model", elem_id="d-model"
                        )
                        d_k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
                        with gr.Row():
                            d_group = gr.Checkbox(value=True, label="group by patent", min_width=120)
                            d_crop = gr.Checkbox(value=True, label="crop to the drawing", min_width=120)
                        d_loc = gr.Textbox(label="Query Locarno code (optional)", placeholder="e.g. 06-01")
                        d_btn = gr.Button("Search drawings", variant="primary", elem_id="d-search")
                        d_sheet_btn = gr.Button(
                            "Split a sheet into figures and search each", elem_id="d-sheet"
                        )
                        crop = exam_ui.build_crop()
                        d_views = gr.File(label="Whole application: several views at once", file_count="multiple",
                                          type="filepath", elem_id="d-views", height=190)  # fmt: skip
                        d_app_btn = gr.Button(
                            "Search with all views (whole application)", elem_id="d-application"
                        )
                    with gr.Column(scale=3):
                        d_status = gr.Markdown(elem_id="d-status")
                        # a grid without a preview: a click opens the hit in Document and Side by side
                        d_gallery = gr.Gallery(label="Results", columns=5, height="auto", elem_id="d-gallery",
                                               object_fit="contain", allow_preview=False)  # fmt: skip
                        d_table = gr.Dataframe(headers=HIT_HEADERS, label="Hits (the cursor row is highlighted)",
                                               interactive=False, max_height=420, elem_id="d-table", wrap=True,
                                               column_widths=HIT_WIDTHS)  # fmt: skip
                        d_sheet_img = gr.Image(label="Figures found on the sheet", type="pil", interactive=False,
                                               height=300, elem_id="d-sheet-img", visible=False)  # fmt: skip
            with gr.Tab("Text search", id="text"):
                with gr.Row():
                    with gr.Column(scale=3):
                        t_text = gr.Textbox(label="Abstract, or a search", lines=5, elem_id="t-text",
                                            placeholder="Paste the abstract (or a claim) of the application")  # fmt: skip
                        # a Markdown line, not the box's info (which eats the * of truncat* as emphasis)
                        gr.Markdown(f"<small>{esc(SYNTAX_HELP)}</small>", elem_id="t-syntax")
                        t_btn = gr.Button("Search texts", variant="primary", elem_id="t-search")
                    with gr.Column(scale=1, min_width=220):
                        t_codes = gr.Textbox(label="Query codes (optional)", placeholder="06-01; A47C 7/02")
                        t_model = gr.Dropdown(text_models, value=wb.default_text_model().key, label="Re-ranker",
                                              elem_id="t-model")  # the checkpoint of the corpus's scheme  # fmt: skip
                        t_k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
                t_status = gr.Markdown(elem_id="t-status")
                first = default_text_list()  # shown first, and where the cursor starts
                with gr.Row(equal_height=True):
                    t_show = gr.Radio([(n + (" (default)" if n == first else ""), n) for n in (first, *(x for x in TEXT_LISTS if x != first))],
                                      value=first, label="List shown (the cursor labels its hits)", elem_id="t-show",
                                      scale=1, min_width=480)  # fmt: skip
                    with gr.Column(scale=1):
                        t_figures = gr.Markdown(lh.list_figures(None, first), elem_id="t-figures")
                # one list at a time, full width (title and snippet readable); show() follows the cursor's list
                with gr.Column(elem_classes=["text-lists"]):  # on a phone: scrolls sideways, the columns readable
                    t_tables = {n: gr.Dataframe(headers=TEXT_HEADERS, datatype=TEXT_TYPES, wrap=True, interactive=False,
                                                label=TITLES[n], show_label=False, elem_id=TEXT_IDS[n], column_widths=TEXT_WIDTHS,
                                                max_height=TEXT_TABLE_HEIGHT, visible=n == first, elem_classes=["text-list"])
                                for n in TEXT_LISTS}  # fmt: skip
                t_bm25, t_dense, t_hybrid, t_dss, t_fused = t_tables.values()
                with gr.Accordion("Why the cursor hit ranks here: its first-stage ranks; for DSSDNet the gate, t and "
                                  "the score's parts", open=False, elem_id="t-why"):  # fmt: skip
                    with gr.Row():  # side by side on a laptop, the plot above the text on a phone
                        t_gate = gr.Plot(label="Gate activations (a DSSDNet hit)", elem_id="t-gate", min_width=320)
                        t_explain = gr.Markdown("Select a DSSDNet candidate to see why it moved.", elem_id="t-explain",
                                                min_width=320)  # fmt: skip
            with gr.Tab("Combined", id="combined"):
                with gr.Row():
                    c_file = gr.File(label="Query drawing", type="filepath", height=120, elem_id="c-file")
                    c_text = gr.Textbox(label="Abstract", lines=4, elem_id="c-text")
                    with gr.Column(min_width=200):
                        c_codes = gr.Textbox(label="Query codes (optional)")
                        c_k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
                        c_btn = gr.Button("Search both", variant="primary", elem_id="c-search")
                c_status = gr.Markdown()
                heads = COMBINED_HEADERS
                c_look = {"interactive": False, "wrap": True, "column_widths": COMBINED_WIDTHS, "max_height": 420,
                          "min_width": 720}  # side by side only where each list gets 720 px
                with gr.Row():
                    c_hm = gr.Dataframe(headers=heads, label="HMCL (drawing)", elem_id="c-hm", **c_look)
                    c_list = gr.Dataframe(headers=heads, label=f"{TITLES[first]} (text: the default list)",
                                          elem_id="c-list", **c_look)  # fmt: skip
                    c_rrf = gr.Dataframe(headers=heads, label="Fused (RRF)", elem_id="c-rrf", **c_look)
            ext = exam_ui.build_tabs(wb.has_drawings())
            with gr.Tab("Embedding map", id="map"):
                with gr.Row():
                    m_a = gr.Dropdown(drawing_models, value=d_default, label="Left model")
                    m_b = gr.Dropdown(
                        drawing_models,
                        value=drawing_models[min(1, len(drawing_models) - 1)][1],
                        label="Right model",
                    )
                    m_dims = gr.Radio(["2-D", "3-D"], value="2-D", label="PCA")
                    m_btn = gr.Button("Draw maps", variant="primary")
                m_status = gr.Markdown(
                    "Colour: Locarno subclass · symbol: main class · ★ the last drawing query, outlined: its top-k."
                )
                with gr.Row():
                    m_plot_a = gr.Plot(label="Left")
                    m_plot_b = gr.Plot(label="Right")
            with gr.Tab("Error analysis", id="errors"):
                with gr.Row():
                    e_model = gr.Dropdown(drawing_models, value=d_default, label="Model")
                    e_split = gr.Radio([("test split", "test"), ("all figures", "all")], value="test",
                                       label="Queries", elem_id="e-split")  # fmt: skip
                    e_btn = gr.Button("Evaluate", variant="primary", elem_id="e-btn")
                e_summary = gr.Markdown(elem_id="e-summary")
                e_table = gr.Dataframe(headers=["query patent", "figure", "class", "subclass AP", "patent AP",
                                                "first same-subclass rank", "expected", "returned"],
                                       label="Worst queries first", interactive=False, max_height=300, wrap=True,
                                       column_widths=ERROR_WIDTHS, elem_id="e-table")  # fmt: skip
                with gr.Row():
                    e_fig = gr.Dropdown([], label="Query figure")
                    e_a = gr.Dropdown(drawing_models, value=d_default, label="Model A")
                    e_b = gr.Dropdown(drawing_models, value=drawing_models[-1][1], label="Model B")
                    e_cmp = gr.Button("Compare")
                e_cmp_md = gr.Markdown("Evaluate, pick a query figure and two models, then *Compare*: each model's "
                                       "top hits for that figure show below.", elem_id="e-cmp-md")  # fmt: skip
                with gr.Row():
                    e_gal_a = gr.Gallery(label="Model A", columns=4, height=260)
                    e_gal_b = gr.Gallery(label="Model B", columns=4, height=260)
            with gr.Tab("Export", id="export"):
                gr.Markdown(
                    "Decided labels → TREC qrels (every modality), HMCL rows (`train/hmcl.py`, drawing judgements "
                    "only), DSSDNet rows (`train/dssdnet.py`, text judgements only); tied pairs → `disputed.jsonl`."
                )
                x_btn = gr.Button("Export labels", variant="primary", elem_id="x-btn")
                x_md = gr.Markdown()
                x_files = gr.File(label="Exports", file_count="multiple")
            with gr.Tab("Training", id="training") as tr_tab:
                tr_md = gr.Markdown(elem_id="tr-summary")
                tr_plot = gr.Plot(label="Learning curve on the test split (never labelled)", elem_id="tr-plot")
                tr_rows = gr.Dataframe(headers=loop.CURVE_HEADERS, label="Every point (test split)", interactive=False,
                                       wrap=True, max_height=320, elem_id="tr-rows")  # fmt: skip
                tr_text = gr.Markdown(elem_id="tr-text")
                tr_models = gr.Dataframe(headers=loop.LINEAGE_HEADERS, label="Retrained models beside their parents",
                                         interactive=False, wrap=True, elem_id="tr-models")  # fmt: skip
                tr_cmd = gr.Markdown(elem_id="tr-cmd")
            with gr.Tab("Agreement", id="agreement") as g_tab:
                with gr.Row():
                    gr.Markdown(
                        "Where two or more annotators judged the same (query, candidate): Cohen's kappa per pair, "
                        "Krippendorff's alpha overall, and the open disagreements. An adjudicated label wins in the exports."
                    )
                    g_refresh = gr.Button(
                        "Refresh", variant="primary", elem_id="g-refresh", scale=0, min_width=120
                    )
                g_report = gr.Markdown(elem_id="g-report")
                g_queue = gr.Dataframe(headers=QUEUE_HEADERS, label="Disagreement queue (select a row to adjudicate it)",
                                       interactive=False, max_height=300, wrap=True, elem_id="g-queue")  # fmt: skip
                g_pair = gr.Markdown("Select a row of the queue.", elem_id="g-pair")
                with gr.Row():
                    g_qimg = gr.Image(label="Query drawing", type="pil", height=220, interactive=False,
                                      elem_id="g-qimg")  # fmt: skip
                    g_cimg = gr.Image(label="Candidate drawing", type="filepath", height=220, interactive=False,
                                      elem_id="g-cimg")  # fmt: skip
                with gr.Row():
                    g_qid = gr.Textbox(label="Query id", interactive=False, elem_id="g-qid", scale=1)
                    g_cid = gr.Textbox(label="Candidate", interactive=False, elem_id="g-cid", scale=1)
                    g_label = gr.Radio([("relevant", "relevant"), ("partly", "partly"), ("not relevant", "not")],
                                       value=None, label="Adjudicated label", elem_id="g-label", scale=2)  # fmt: skip
                    g_note = gr.Textbox(label="Note (optional)", elem_id="g-note", scale=2)
                g_btn = gr.Button("Adjudicate", variant="primary", elem_id="g-adjudicate")
                g_status = gr.Markdown(elem_id="g-status")
        with gr.Group(elem_id="label-panel"):
            gr.Markdown(
                f"**Label the hit under the cursor** · keys (outside text fields): {keys_legend} · a label moves "
                "the cursor on only when *auto-advance* is ticked; the category (text hits only) resets after each label"
            )
            with gr.Row(elem_id="l-pick"):
                l_list = gr.Radio(list(LIST_NAMES), value="hmcl", label="List", scale=2)
                l_rank = lenient(
                    gr.Number(value=1, minimum=1, step=1, label="Rank", scale=1, elem_id="l-rank")
                )
                l_cat = gr.Radio(
                    [("none", ""), ("X", "X"), ("Y", "Y"), ("A", "A")],
                    value="",
                    label="Search-report category (text)",
                    scale=2,
                )
            with gr.Row():
                l_preview = gr.Image(label="Cursor hit", type="filepath", height=160, interactive=False, scale=1,
                                     elem_id="l-preview", visible=wb.has_drawings())  # no empty box without drawings
                with gr.Column(scale=4):
                    l_cursor = gr.Markdown("Run a search first.", elem_id="l-cursor")
                    with gr.Row():
                        l_auto = gr.Checkbox(value=True, label="auto-advance: after a label, move to the next hit",
                                             elem_id="l-auto")  # fmt: skip
                        l_unlabelled = gr.Checkbox(
                            value=False, label="show unlabelled only", elem_id="l-unlabelled"
                        )
            with gr.Row():
                b_prev = gr.Button("◀ prev (k)", elem_id="lbl-prev", size="sm")
                b_rel = gr.Button("Relevant · 2 (key 1)", variant="primary", elem_id="lbl-rel", size="sm")
                b_part = gr.Button("Partly · 1 (key 2)", elem_id="lbl-part", size="sm")
                b_not = gr.Button("Not relevant · 0 (key 3)", variant="stop", elem_id="lbl-not", size="sm")
                b_next = gr.Button("next ▶ (j)", elem_id="lbl-next", size="sm")
                b_undo = gr.Button("Undo (u)", elem_id="lbl-undo", size="sm")
            l_note = gr.Textbox(label="Note (optional)", lines=1)
            with gr.Row():
                l_status = gr.Markdown(elem_id="l-status")
                l_progress = gr.Markdown(elem_id="l-progress")
            l_value = gr.Radio(list(GRADES), value="relevant", visible=False)
            l_key = gr.Textbox(value="", visible=False, label="request key")
            l_api = gr.Button(visible=False)

        # -- events --------------------------------------------------------------------------------------
        # the cursor: every event that moves it, or changes what it shows, ends with lh.show
        show_in = [session, l_list, l_rank, l_unlabelled, annotator]
        show_out = [d_gallery, d_table, *t_tables.values(), t_show, t_figures, c_hm, c_list, c_rrf, t_gate, t_explain,
                    l_preview, l_cursor]  # fmt: skip
        quiet = {"api_visibility": "private"}

        def mine(fn, inputs, outputs):
            """An event that reads the session: refused to a request without this browser's token."""
            return {"fn": owned(fn, outputs), "inputs": inputs, "outputs": outputs,
                    "inputs_kwargs": {"owner_token": owner_token, "owner_session": session}}  # fmt: skip

        def then_show(event):
            return event.then(**mine(lh.show, show_in, show_out), **quiet)

        label_panel = [session, l_list, l_rank, l_cursor, l_progress]

        def pick_example(evt: Selection) -> str:
            return example_paths[evt.index] if isinstance(evt.index, int) else gr.update()

        d_examples.select(pick_example, None, d_file, api_name=False)
        d_file.change(h.query_preview, [d_file, d_crop], d_query, api_name=False)
        d_crop.change(h.query_preview, [d_file, d_crop], d_query, api_name=False)
        demo.load(wb.index_status, None, index_status, api_name=False)
        gr.Timer(2.0).tick(wb.index_status, None, index_status, api_name=False)
        then_show(d_btn.click(**mine(h.search_drawing, [d_file, d_model, d_k, d_group, d_crop, d_loc, annotator, filters,
                                                        session, crop_state],
                                     [d_gallery, d_status, d_table, *label_panel]), api_name="search_drawing"))  # fmt: skip
        then_show(d_app_btn.click(**mine(h.search_application, [d_views, d_model, d_k, d_crop, annotator, filters, session],
                                         [d_gallery, d_status, d_table, *label_panel]), api_name="search_application"))  # fmt: skip

        def text_search(start, api: bool = True):
            """The text button's steps after ``start`` (an event's listener: the button's click, or "More like
            this: its text" once it has filled the abstract): BM25 first, then dense and hybrid, then every
            list. Chained on the server, so it runs whether or not the Text tab was ever rendered."""
            name = (lambda n: n) if api else (lambda n: False)  # noqa: E731 - the button's chain names the API
            bm25_first = start(**mine(h.search_bm25, [t_text, t_codes, t_model, t_k, filters, session],
                                      [t_bm25, t_dss, t_fused, t_status, session]), api_name=name("search_bm25"))  # fmt: skip
            dense_next = bm25_first.then(h.search_dense, [t_text, t_codes, t_model, t_k, filters],
                                         [t_dense, t_hybrid, t_status], api_name=name("search_dense"))  # fmt: skip
            then_show(dense_next.then(**mine(h.search_text, [t_text, t_codes, t_model, t_k, annotator, filters, session],
                                             [t_bm25, t_dss, t_status, *label_panel]), api_name=name("search_text")).then(
                      **mine(h.fused_table, [session, annotator], [t_fused]), api_name=name("fused_text")))  # fmt: skip

        text_search(t_btn.click)
        then_show(c_btn.click(**mine(h.search_combined, [c_file, c_text, c_codes, d_model, t_model, c_k, annotator,
                                                         filters, session],
                                     [c_hm, c_list, c_rrf, c_status, *label_panel]), api_name="search_combined"))  # fmt: skip

        exam_ui.wire_crop(crop, d_file, crop_state)
        then_show(d_sheet_btn.click(**mine(ex.search_sheet, [d_file, crop_state, d_model, d_k, annotator, filters, session],
                                           [d_gallery, d_status, d_table, d_sheet_img, *label_panel]), api_name="search_sheet"))  # fmt: skip
        doc_out = [ext.doc_html, ext.doc_gallery, ext.doc_id]
        d_gallery.select(**mine(ex.open_drawing_hit, [session, d_file, crop_state, d_crop],
                                [*doc_out, ext.sbs_query, ext.sbs_hit, ext.sbs_md]), api_name="open_drawing_hit")  # fmt: skip
        d_table.select(**mine(ex.open_drawing_row, [session, d_file, crop_state, d_crop],
                              [*doc_out, ext.sbs_query, ext.sbs_hit, ext.sbs_md]), api_name="open_drawing_row")  # fmt: skip
        for name, table in t_tables.items():
            table.select(**mine(ex.opener(name), [session], [*doc_out, ext.tq_html, ext.tc_html]), api_name=f"open_{name}_hit")
        ext.doc_btn.click(ex.document, [ext.doc_id], doc_out, api_name="open_document")
        ext.doc_id.submit(ex.document, [ext.doc_id], doc_out, api_name=False)  # Enter in the number box: the same
        text_search(exam_ui.wire_more_like_this(ext, ex, tabs, mine, session, d_file, t_text).success, api=False)
        ext.r_refresh.click(ex.report_queries, None, ext.r_query, api_name="report_queries")
        ext.r_btn.click(**mine(ex.report, [ext.r_query, filters, ext.r_include, session], [ext.r_files, ext.r_md, ext.r_frame]),
                        api_name="search_report")  # fmt: skip

        def selector(list_name: str):
            def select(session, evt: Selection):
                return lh.select(list_name, session, evt)

            return select

        for comp, name, api in ((d_gallery, "hmcl", "select_hit"), (d_table, "hmcl", "select_hit_row"), (t_bm25, "bm25", "select_bm25"),
                                (t_dense, "dense", "select_dense"), (t_hybrid, "hybrid", "select_hybrid"),
                                (t_dss, "dssdnet", "select_dssdnet"), (t_fused, "fused", "select_text_fused"),
                                (c_hm, "hmcl", "select_combined_hmcl"), (c_rrf, "rrf", "select_combined_rrf")):  # fmt: skip
            then_show(comp.select(**mine(selector(name), [session], [l_list, l_rank, l_cursor]), api_name=api))

        def select_combined_text(session, evt: Selection):  # the Combined tab's text list: the default one
            return lh.select((session or {}).get("text_list") or default_text_list(), session, evt)

        then_show(c_list.select(**mine(select_combined_text, [session], [l_list, l_rank, l_cursor]),
                                api_name="select_combined_text"))
        gr.Button(visible=False).click(**mine(lh.explain, [session, l_rank], [t_gate, t_explain]), api_name="explain")
        m_btn.click(**mine(h.embedding_maps, [m_a, m_b, m_dims, session], [m_plot_a, m_plot_b, m_status]),
                    api_name="embedding_map")
        e_btn.click(h.evaluate, [e_model, e_split], [e_summary, e_table, e_fig], api_name="evaluate")
        e_cmp.click(h.compare, [e_fig, e_a, e_b], [e_gal_a, e_gal_b, e_cmp_md], api_name="compare")

        label_out = [l_status, l_progress, l_rank, l_cursor, l_note]

        def after_label(event):  # the category goes back to none after every label
            return then_show(event.then(lambda: "", None, l_cat, **quiet))

        after_label(l_api.click(lh.do_label, [l_value, l_list, l_rank, l_cat, l_note, annotator, session, l_key,
                                              l_auto, owner_token], label_out, api_name="label"))  # fmt: skip

        def button(value: str):
            def label(list_name, rank, category, note, annotator, session, auto, token=None, request: gr.Request = None,
                      profile: gr.OAuthProfile | None = None):  # fmt: skip
                return lh.do_label(value, list_name, rank, category, note, annotator, session, "", auto, token,
                                   request, profile)  # fmt: skip

            return label

        for btn, value in ((b_rel, "relevant"), (b_part, "partly"), (b_not, "not")):
            after_label(btn.click(button(value), [l_list, l_rank, l_cat, l_note, annotator, session, l_auto,
                                                  owner_token], label_out, api_name=f"label_{value}"))  # fmt: skip
        then_show(b_undo.click(lh.undo, [annotator, session, owner_token],
                               [l_status, l_progress, l_list, l_rank, l_cursor], api_name="undo"))  # fmt: skip

        def mover(step: int):
            def move(list_name, rank, session, unlabelled, annotator, request: gr.Request,
                     profile: gr.OAuthProfile | None = None):  # fmt: skip
                return lh.move(
                    list_name, rank if step else 1, step, session, unlabelled, annotator, request, profile
                )

            return move

        move_in = [l_list, l_rank, session, l_unlabelled, annotator]
        then_show(b_next.click(**mine(mover(1), move_in, [l_rank, l_cursor]), api_name="next_hit"))
        then_show(b_prev.click(**mine(mover(-1), move_in, [l_rank, l_cursor]), api_name="prev_hit"))
        then_show(l_list.input(**mine(mover(0), move_in, [l_rank, l_cursor]), api_name="choose_list"))

        def show_list(list_name, session, unlabelled, annotator, request: gr.Request,
                      profile: gr.OAuthProfile | None = None):  # fmt: skip
            """The Text tab's list choice: that list is shown and the cursor moves to its first hit."""
            return list_name, *lh.move(list_name, 1, 0, session, unlabelled, annotator, request, profile)

        then_show(t_show.input(**mine(show_list, [t_show, session, l_unlabelled, annotator], [l_list, l_rank, l_cursor]),
                               api_name="show_list"))  # fmt: skip
        l_rank.input(**mine(lh.show, show_in, show_out), **quiet)
        l_unlabelled.change(**mine(lh.show, show_in, show_out), **quiet)
        x_btn.click(lh.export_labels, [annotator], [x_files, x_md], api_name="export_labels")
        tr_tab.select(h.training, None, [tr_md, tr_plot, tr_rows, tr_text, tr_models, tr_cmd], api_name="training")
        g_refresh.click(lh.agreement, None, [g_report, g_queue], api_name="agreement")
        g_tab.select(lh.agreement, None, [g_report, g_queue], api_visibility="private")
        g_queue.select(lh.select_disagreement, None, [g_qid, g_cid, g_pair, g_qimg, g_cimg],
                       api_name="select_disagreement")  # fmt: skip
        g_btn.click(lh.adjudicate, [g_qid, g_cid, g_label, g_note, annotator],
                    [g_status, g_report, g_queue, g_qid, g_cid, g_note, g_pair], api_name="adjudicate")  # fmt: skip

        filter_panel.wire(demo)
        demo.load(h.refresh_models, None, [d_model, t_model, m_a, m_b, e_model, e_a, e_b], api_name=False)
        demo.load(bind_owner, [owner_token, session], [owner_token, session], api_name=False)
        if identity.oauth or identity.login:
            # the annotator box shows who is signed in; labels take the name from the sign-in, not the box
            demo.load(signed_in_name, None, annotator, api_name=False)
    for fn in demo.fns.values():  # every event that reads a browser's session checks its owner (access.owned)
        if session in fn.inputs and owner_token not in fn.inputs:
            raise RuntimeError(f"the event {fn.api_name or fn.name} reads the session without its owner check")
    for block in demo.blocks.values():  # a value outside the choices reaches the handler, which says why
        if isinstance(block, gr.Dropdown | gr.Radio):
            lenient(block)
    return demo


def signed_in_name(request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
    """The name labels are stored under: the Hugging Face account or the login (shown, not editable)."""
    name = getattr(profile, "username", "") if profile is not None else ""
    return name or getattr(request, "username", "") or ""
