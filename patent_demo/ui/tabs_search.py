"""The search tabs of the page: Drawing search, Text search and Combined. Each tab's ``build`` lays out its
components inside the page's ``gr.Tabs``; its ``wire`` connects their events once the whole page exists (a
search ends with the cursor's refresh, which reaches the other tabs and the label panel below the tabs)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from patent_demo.search.refine import text_feedback_note
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import LISTS as TEXT_LISTS
from patent_demo.text.lists import TITLES
from patent_demo.text.syntax import HELP as SYNTAX_HELP
from patent_demo.ui import examiner as exam_ui
from patent_demo.ui.access import lenient
from patent_demo.ui.events import Cursor, Models
from patent_demo.ui.handlers import LATER_TABLES, Handlers
from patent_demo.ui.inputs import NO_DRAWINGS, Selection
from patent_demo.ui.labelling import LabelHandlers
from patent_demo.ui.views import COMBINED_HEADERS, HIT_HEADERS, esc, text_headers
from patent_demo.workbench import Workbench

TEXT_IDS = {
    "bm25": "t-bm25",
    "dense": "t-dense",
    "hybrid": "t-hybrid",
    "dssdnet": "t-dss",
    "fused": "t-fused",
}
TEXT_SELECT_APIS = {
    "bm25": "select_bm25",
    "dense": "select_dense",
    "hybrid": "select_hybrid",
    "dssdnet": "select_dssdnet",
    "fused": "select_text_fused",
}
REFINE_HINT = (
    "<small>After labelling a few hits: ranks again with the query moved towards your relevant hits and "
    "away from the others (this query, your labels); the labelled stay on top</small>"
)
EXPLAIN_EMPTY = "Select a DSSDNet candidate to see why it moved."
TEXT_TABLE_HEIGHT = 330  # px: the label panel starts within a screen and a half at 1366 x 900
TEXT_TYPES = ["number", "str", "str", "str", "str", "str", "number", "html", "str"]
# rank, patent, class, title, publication date and score fit 1366 px without scrolling sideways
HIT_WIDTHS = ["6%", "12%", "10%", "7%", "15%", "17%", "15%", "8%", "10%"]  # "2021-05-18 · E" on one line
TEXT_WIDTHS = [
    "5%",
    "12%",
    "10%",
    "8%",
    "16%",
    "13%",
    "7%",
    "21%",
    "8%",
]  # "move vs BM25", a marked date on one line
# the Combined tab's three lists, one under the other (three side by side cut the title and hid the label)
COMBINED_WIDTHS = ["6%", "13%", "8%", "37%", "13%", "9%", "14%"]


def _example_picker(paths: list[str]):
    def pick_example(evt: Selection) -> str:
        return paths[evt.index] if isinstance(evt.index, int) else gr.update()

    return pick_example


@dataclass
class DrawingTab:
    """The Drawing search tab: one drawing (or the examiner's crop of it), a sheet of figures, or the views
    of a whole application."""

    file: gr.File
    examples: gr.Gallery
    example_paths: list[str]
    query: gr.Image
    model: gr.Dropdown
    k: gr.Slider
    group: gr.Checkbox
    crop: gr.Checkbox  # crop to the drawing's ink
    locarno: gr.Textbox
    search: gr.Button
    sheet: gr.Button
    crop_box: exam_ui.CropInputs
    views: gr.File
    application: gr.Button
    status: gr.Markdown
    gallery: gr.Gallery
    table: gr.Dataframe
    sheet_img: gr.Image
    refine: gr.Button  # Refine with my labels (key r)

    @classmethod
    def build(cls, wb: Workbench, models: Models) -> DrawingTab:
        example_figs = wb.example_figures(6)
        example_tiles = [(wb.display_path(f), f"{p.id} · {f.label or f.view}") for p, f in example_figs]
        with gr.Tab("Drawing search", id="drawing"):
            if not wb.has_drawings():
                gr.Markdown(f"⚠️ **{NO_DRAWINGS}**.", elem_id="d-none")
            with gr.Row():
                with gr.Column(scale=1, min_width=260):
                    file = gr.File(
                        label="Query drawing (PNG, JPEG, TIFF)", type="filepath", elem_id="d-file", height=120
                    )
                    examples = gr.Gallery(
                        example_tiles,
                        label="Examples (test split): click to use",
                        columns=2,
                        height=280,
                        allow_preview=False,
                        elem_id="d-examples",
                        object_fit="contain",
                    )
                    query = gr.Image(
                        label="Query as searched",
                        type="pil",
                        height=180,
                        interactive=False,
                        elem_id="d-query",
                    )
                    model = gr.Dropdown(
                        models.drawing, value=models.drawing_default, label="Model", elem_id="d-model"
                    )
                    k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
                    with gr.Row():
                        group = gr.Checkbox(value=True, label="group by patent", min_width=120)
                        crop = gr.Checkbox(value=True, label="crop to the drawing", min_width=120)
                    locarno = gr.Textbox(label="Query Locarno code (optional)", placeholder="e.g. 06-01")
                    search = gr.Button("Search drawings", variant="primary", elem_id="d-search")
                    sheet = gr.Button("Split a sheet into figures and search each", elem_id="d-sheet")
                    crop_box = exam_ui.build_crop()
                    views = gr.File(
                        label="Whole application: several views at once",
                        file_count="multiple",
                        type="filepath",
                        elem_id="d-views",
                        height=190,
                    )
                    application = gr.Button(
                        "Search with all views (whole application)", elem_id="d-application"
                    )
                with gr.Column(scale=3):
                    status = gr.Markdown(elem_id="d-status")
                    with gr.Row(equal_height=True):
                        refine = gr.Button(
                            "Refine with my labels (r)", elem_id="d-refine", scale=0, min_width=230, size="sm"
                        )
                        gr.Markdown(REFINE_HINT, elem_id="d-refine-hint")
                    # a grid without a preview: a click opens the hit in Document and Side by side
                    gallery = gr.Gallery(
                        label="Results",
                        columns=5,
                        height="auto",
                        elem_id="d-gallery",
                        object_fit="contain",
                        allow_preview=False,
                    )
                    table = gr.Dataframe(
                        headers=HIT_HEADERS,
                        label="Hits (the cursor row is highlighted)",
                        interactive=False,
                        max_height=420,
                        elem_id="d-table",
                        wrap=True,
                        column_widths=HIT_WIDTHS,
                    )
                    sheet_img = gr.Image(
                        label="Figures found on the sheet",
                        type="pil",
                        interactive=False,
                        height=300,
                        elem_id="d-sheet-img",
                        visible=False,
                    )
        paths = [str(wb.corpus.image_path(f)) for _, f in example_figs]
        return cls(
            file,
            examples,
            paths,
            query,
            model,
            k,
            group,
            crop,
            locarno,
            search,
            sheet,
            crop_box,
            views,
            application,
            status,
            gallery,
            table,
            sheet_img,
            refine,
        )

    def wire(self, cur: Cursor, h: Handlers, ex: exam_ui.ExaminerHandlers, ext: exam_ui.ExaminerTabs) -> None:
        """Examples, the query preview, the three searches and the crop box; a click on a hit opens it in
        Document and Side by side and puts the cursor on it."""
        s, results = cur.shared, [self.gallery, self.status, self.table]
        self.examples.select(_example_picker(self.example_paths), None, self.file, api_name=False)
        self.file.change(h.query_preview, [self.file, self.crop], self.query, api_name=False)
        self.crop.change(h.query_preview, [self.file, self.crop], self.query, api_name=False)
        cur.searched_then_show(
            self.search.click(
                **cur.search(
                    h.search_drawing,
                    [
                        self.file,
                        self.model,
                        self.k,
                        self.group,
                        self.crop,
                        self.locarno,
                        s.annotator,
                        s.filters,
                        s.session,
                        s.crop_state,
                    ],
                    [*results, *cur.searched],
                ),
                api_name="search_drawing",
            )
        )
        cur.searched_then_show(
            self.application.click(
                **cur.search(
                    h.search_application,
                    [self.views, self.model, self.k, self.crop, s.annotator, s.filters, s.session],
                    [*results, *cur.searched],
                ),
                api_name="search_application",
            )
        )
        cur.then_show(
            self.refine.click(
                **cur.mine(h.refine_drawing, [s.session, s.annotator], [*results, *cur.searched]),
                api_name="refine_drawing",
            )
        )
        exam_ui.wire_crop(self.crop_box, self.file, s.crop_state)
        cur.searched_then_show(
            self.sheet.click(
                **cur.search(
                    ex.search_sheet,
                    [self.file, s.crop_state, self.model, self.k, s.annotator, s.filters, s.session],
                    [*results, self.sheet_img, *cur.searched],
                ),
                api_name="search_sheet",
            )
        )
        hit_in = [s.session, self.file, s.crop_state, self.crop]
        opened = [ext.doc_html, ext.doc_gallery, ext.doc_id, ext.sbs_query, ext.sbs_hit, ext.sbs_md]
        self.gallery.select(**cur.mine(ex.open_drawing_hit, hit_in, opened), api_name="open_drawing_hit")
        self.table.select(**cur.mine(ex.open_drawing_row, hit_in, opened), api_name="open_drawing_row")
        cur.select(self.gallery, "hmcl", "select_hit")
        cur.select(self.table, "hmcl", "select_hit_row")


@dataclass
class TextTab:
    """The Text search tab: an abstract (or a search), every text list one at a time, and why the cursor hit
    ranks where it does."""

    text: gr.Textbox
    search: gr.Button
    codes: gr.Textbox
    model: gr.Dropdown
    k: gr.Slider
    status: gr.Markdown
    first: str  # the list shown first, and where the cursor starts
    show: gr.Radio
    figures: gr.Markdown
    tables: dict[str, gr.Dataframe]  # by list name (``patent_demo.text.lists.LISTS``)
    gate: gr.Plot
    explain: gr.Markdown

    @classmethod
    def build(cls, wb: Workbench, models: Models, lh: LabelHandlers) -> TextTab:
        with gr.Tab("Text search", id="text"):
            with gr.Row():
                with gr.Column(scale=3):
                    text = gr.Textbox(
                        label="Abstract, or a search",
                        lines=5,
                        elem_id="t-text",
                        placeholder="Paste the abstract (or a claim) of the application",
                    )
                    # a Markdown line, not the box's info (which eats the * of truncat* as emphasis)
                    gr.Markdown(f"<small>{esc(SYNTAX_HELP)}</small>", elem_id="t-syntax")
                    search = gr.Button("Search texts", variant="primary", elem_id="t-search")
                with gr.Column(scale=1, min_width=220):
                    codes = gr.Textbox(label="Query codes (optional)", placeholder="06-01; A47C 7/02")
                    model = gr.Dropdown(
                        models.text, value=wb.default_text_model().key, label="Re-ranker", elem_id="t-model"
                    )  # the checkpoint of the corpus's scheme
                    k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
            status = gr.Markdown(elem_id="t-status")
            first = default_text_list()
            with gr.Row(equal_height=True):
                show = gr.Radio(
                    [
                        (n + (" (default)" if n == first else ""), n)
                        for n in (first, *(x for x in TEXT_LISTS if x != first))
                    ],
                    value=first,
                    label="List shown (the cursor labels its hits)",
                    elem_id="t-show",
                    scale=1,
                    min_width=480,
                )
                with gr.Column(scale=1):
                    figures = gr.Markdown(lh.list_figures(None, first), elem_id="t-figures")
            # one list at a time, full width (title and snippet readable); show() follows the cursor's list
            with gr.Column(elem_classes=["text-lists"]):  # on a phone: scrolls sideways, the columns readable
                tables = {
                    n: gr.Dataframe(
                        headers=text_headers(n),
                        datatype=TEXT_TYPES,
                        wrap=True,
                        interactive=False,
                        label=TITLES[n],
                        show_label=False,
                        elem_id=TEXT_IDS[n],
                        column_widths=TEXT_WIDTHS,
                        max_height=TEXT_TABLE_HEIGHT,
                        visible=n == first,
                        elem_classes=["text-list"],
                    )
                    for n in TEXT_LISTS
                }
            with gr.Accordion(
                "Why the cursor hit ranks here: its first-stage ranks; for DSSDNet the gate, t and "
                "the score's parts",
                open=False,
                elem_id="t-why",
            ):
                with gr.Row():  # side by side on a laptop, the plot above the text on a phone
                    gate = gr.Plot(label="Gate activations (a DSSDNet hit)", elem_id="t-gate", min_width=320)
                    explain = gr.Markdown(EXPLAIN_EMPTY, elem_id="t-explain", min_width=320)
            # why the Text tab has no Refine (the reason kept in patent_demo/configs/feedback.json), under the
            # lists so that the hit table starts within the first screen
            if note := text_feedback_note():
                gr.Markdown(f"<small>{esc(note)}</small>", elem_id="t-feedback")
        return cls(text, search, codes, model, k, status, first, show, figures, tables, gate, explain)

    def search_chain(self, cur: Cursor, h: Handlers, start, api: bool = True):
        """The text button's one search after ``start`` (an event's listener: the button's click, or "More
        like this: its text" once it has filled the abstract): BM25, dense and hybrid computed once, the
        hybrid top re-ranked once, every list filled. Chained on the server, so it runs whether or not the
        Text tab was ever rendered. Only the button's event (``api``) names the API's ``/search_text``."""
        s, t = cur.shared, self.tables
        query = [self.text, self.codes, self.model, self.k]
        cur.searched_then_show(
            start(
                **cur.search(
                    h.search_text,
                    [*query, s.annotator, s.filters, s.session],
                    [t["bm25"], t["dssdnet"], self.status, *(t[n] for n in LATER_TABLES), *cur.searched],
                ),
                api_name="search_text" if api else False,
            )
        )

    def wire_list_endpoints(self, cur: Cursor, h: Handlers) -> None:
        """API-only endpoints that answer one part of a text search for clients that need no more: the
        BM25 list at once (``/search_bm25``), the dense and hybrid lists (``/search_dense``), the fused
        table of the current query (``/fused_text``). No click of the page calls them."""
        s, t = cur.shared, self.tables
        query = [self.text, self.codes, self.model, self.k]
        gr.Button(visible=False).click(
            **cur.mine(
                h.search_bm25,
                [*query, s.filters, s.session],
                [t["bm25"], t["dssdnet"], t["fused"], self.status, s.session],
            ),
            api_name="search_bm25",
        )
        gr.Button(visible=False).click(
            h.search_dense,
            [*query, s.filters],
            [t["dense"], t["hybrid"], self.status],
            api_name="search_dense",
        )
        gr.Button(visible=False).click(
            **cur.mine(h.fused_table, [s.session, s.annotator], [t["fused"]]), api_name="fused_text"
        )

    def wire(
        self,
        cur: Cursor,
        h: Handlers,
        lh: LabelHandlers,
        ex: exam_ui.ExaminerHandlers,
        ext: exam_ui.ExaminerTabs,
        rank: gr.Number,
        unlabelled: gr.Checkbox,
    ) -> None:
        """The search, the list shown, and a click on a hit: its record opens in Document and Side by side
        and the cursor moves to it; ``/explain`` explains a DSSDNet hit by its rank (the label panel's)."""
        s = cur.shared
        self.search_chain(cur, h, self.search.click)
        self.wire_list_endpoints(cur, h)
        opened = [ext.doc_html, ext.doc_gallery, ext.doc_id, ext.tq_html, ext.tc_html]
        for name, table in self.tables.items():
            table.select(**cur.mine(ex.opener(name), [s.session], opened), api_name=f"open_{name}_hit")
            cur.select(table, name, TEXT_SELECT_APIS[name])
        gr.Button(visible=False).click(
            **cur.mine(lh.explain, [s.session, rank], [self.gate, self.explain]), api_name="explain"
        )

        def show_list(
            list_name,
            session,
            unlabelled,
            annotator,
            request: gr.Request,
            profile: gr.OAuthProfile | None = None,
        ):
            """The Text tab's list choice: that list is shown and the cursor moves to its first hit."""
            return list_name, *lh.move(list_name, 1, 0, session, unlabelled, annotator, request, profile)

        cur.then_show(
            self.show.input(
                **cur.mine(show_list, [self.show, s.session, unlabelled, s.annotator], cur.picked),
                api_name="show_list",
            )
        )


@dataclass
class CombinedTab:
    """The Combined tab: a drawing and an abstract together, HMCL, the default text list and their fusion."""

    file: gr.File
    text: gr.Textbox
    codes: gr.Textbox
    k: gr.Slider
    search: gr.Button
    status: gr.Markdown
    hm: gr.Dataframe
    text_list: gr.Dataframe
    rrf: gr.Dataframe

    @classmethod
    def build(cls, first: str) -> CombinedTab:
        """``first``: the default text list, the one this tab searches."""
        with gr.Tab("Combined", id="combined"):
            with gr.Row():
                file = gr.File(label="Query drawing", type="filepath", height=120, elem_id="c-file")
                text = gr.Textbox(label="Abstract", lines=4, elem_id="c-text")
                with gr.Column(min_width=200):
                    codes = gr.Textbox(label="Query codes (optional)")
                    k = lenient(gr.Slider(1, 50, value=10, step=1, label="top-k"))
                    search = gr.Button("Search both", variant="primary", elem_id="c-search")
            status = gr.Markdown()
            heads = COMBINED_HEADERS
            look = {
                "interactive": False,
                "wrap": True,
                "column_widths": COMBINED_WIDTHS,
                "max_height": 420,
                "min_width": 720,
            }  # side by side only where each list gets 720 px
            with gr.Row():
                hm = gr.Dataframe(headers=heads, label="HMCL (drawing)", elem_id="c-hm", **look)
                text_list = gr.Dataframe(
                    headers=heads, label=f"{TITLES[first]} (text: the default list)", elem_id="c-list", **look
                )
                rrf = gr.Dataframe(headers=heads, label="Fused (RRF)", elem_id="c-rrf", **look)
        return cls(file, text, codes, k, search, status, hm, text_list, rrf)

    def wire(
        self, cur: Cursor, h: Handlers, lh: LabelHandlers, drawing_model: gr.Dropdown, text_model: gr.Dropdown
    ) -> None:
        """The search (with the Drawing and Text tabs' models) and a click on a hit of each list."""
        s = cur.shared
        cur.searched_then_show(
            self.search.click(
                **cur.search(
                    h.search_combined,
                    [
                        self.file,
                        self.text,
                        self.codes,
                        drawing_model,
                        text_model,
                        self.k,
                        s.annotator,
                        s.filters,
                        s.session,
                    ],
                    [self.hm, self.text_list, self.rrf, self.status, *cur.searched],
                ),
                api_name="search_combined",
            )
        )
        cur.select(self.hm, "hmcl", "select_combined_hmcl")
        cur.select(self.rrf, "rrf", "select_combined_rrf")

        def select_combined_text(session, evt: Selection):  # the Combined tab's text list: the default one
            return lh.select((session or {}).get("text_list") or default_text_list(), session, evt)

        cur.then_show(
            self.text_list.select(
                **cur.mine(select_combined_text, [s.session], cur.picked), api_name="select_combined_text"
            )
        )
