"""The examiner's parts of the workbench UI: search filters and prior-art cut-off, query crop, drawing
sheets, the whole record of a hit, side-by-side views, the search report.

``build_own_date()``, ``build_filters()`` and ``build_tabs()`` create the components inside ``blocks.build_demo``'s layout;
``ExaminerHandlers`` holds their event handlers; ``FilterPanel.wire``, ``wire_crop`` and ``wire_tabs``
connect them. The filter panel is read as one value (``FilterPanel.value``, a
``patent_demo.filters.Filters`` as JSON). The core work is in ``patent_demo.search``,
``patent_demo.examiner``, ``patent_demo.search.sheet``, ``patent_demo.document`` and ``patent_demo.labels.search_report``.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from PIL import Image, ImageDraw

from patent_demo import examiner
from patent_demo.document import document_html, document_view
from patent_demo.filters import FILTER_KEYS, Filters
from patent_demo.hits import mark_views
from patent_demo.imageio import data_uri, load_drawing
from patent_demo.labels.search_report import build_report, queries, to_html, write_report
from patent_demo.labels.sessions import record_search
from patent_demo.labels.store import LabelStore
from patent_demo.limits import MAX_ID_CHARS, check_text
from patent_demo.numbers import resolve_patent_id
from patent_demo.search.refine import Basis
from patent_demo.search.scope import drawing_scope
from patent_demo.text.highlight import snippet_html, snippet_text
from patent_demo.ui.events import Shared
from patent_demo.ui.handlers import drawing_answer, drawing_failed, drawing_session, emptied
from patent_demo.ui.inputs import (
    TRACK_TQDM,
    BadInput,
    Selection,
    cropped_query,
    drawing_request,
    model_key,
    picked_rank,
    top_k,
    upload,
)
from patent_demo.ui.views import warn
from patent_demo.wording import counted
from patent_demo.workbench import Workbench


@dataclass
class FilterPanel:
    """The filter panel's fields (in the order of ``patent_demo.filters.FILTER_KEYS``) and ``value``, the one
    JSON value every search reads: the page rebuilds it from the fields whenever one changes (in the
    browser, before any search can read it), and an API call sends it as one parameter (``{}``: no filter)."""

    fields: list
    value: gr.JSON

    def wire(self, demo) -> None:
        """Keep ``value`` equal to the fields: on page load (the ticked boxes) and on every change."""
        keys = json.dumps(list(FILTER_KEYS))
        js = f"(...v) => Object.fromEntries({keys}.map((key, i) => [key, v[i]]))"
        demo.load(None, self.fields, self.value, js=js, api_name=False)
        gr.on([f.change for f in self.fields], None, self.fields, self.value, js=js, api_name=False)


def build_own_date() -> gr.Checkbox:
    """The own-date cut-off, in sight beside the annotator box and ticked: a corpus patent's search shows its
    prior art, one click turns it off."""
    return gr.Checkbox(
        label="Prior-art cut-off at the query patent's filing date (untick to search everything)",
        value=True,
        elem_id="f-own",
        scale=3,
    )


def build_filters(own: gr.Checkbox) -> FilterPanel:
    """The filter panel every search reads: the own-date cut-off ``own`` (:func:`build_own_date`) and the
    other filters in an accordion under the annotator box."""
    with gr.Accordion(
        "Search filters and a typed cut-off (apply to every search)", open=False, elem_id="filters"
    ):
        with gr.Row():
            before = gr.Textbox(
                value="",
                label="Prior-art cut-off (YYYY-MM-DD)",
                placeholder="2019-06-30",
                elem_id="f-before",
            )
        with gr.Row():
            cls = gr.Textbox(
                value="", label="Classification prefix", placeholder="06-01, A47C 7/, D6", elem_id="f-class"
            )
            country = gr.Textbox(value="", label="Office", placeholder="US, EP", elem_id="f-country")
            kind = gr.Textbox(value="", label="Kind code", placeholder="S, B", elem_id="f-kind")
            d_from = gr.Textbox(value="", label="Published from", placeholder="YYYY-MM-DD", elem_id="f-from")
            d_to = gr.Textbox(value="", label="Published to", placeholder="YYYY-MM-DD", elem_id="f-to")
        with gr.Row():
            exclude = gr.Checkbox(
                value=True,
                label="exclude the query's own patent and family (a corpus drawing or text)",
                elem_id="f-exclude",
            )
            family = gr.Checkbox(
                value=True,
                label="one hit per family in text lists (the others listed under it)",
                elem_id="f-family",
            )
    value = gr.JSON({}, visible=False, label="filters")
    return FilterPanel([before, own, cls, country, kind, d_from, d_to, exclude, family], value)


@dataclass
class CropInputs:
    """The crop box: four edges in % of the drawing, a preview with the box drawn, a line that says what is searched."""

    left: gr.Number
    top: gr.Number
    right: gr.Number
    bottom: gr.Number
    preview: gr.Image
    md: gr.Markdown

    def edges(self) -> list:
        return [self.left, self.top, self.right, self.bottom]


def build_crop() -> CropInputs:
    """The crop box of the query drawing (inside the drawing tab's left column)."""
    with gr.Accordion(
        "Crop the query (optional): edges in % of the drawing", open=False, elem_id="d-cropbox"
    ):
        with gr.Row():
            edges = [
                gr.Number(
                    value=v,
                    minimum=0,
                    maximum=100,
                    step=1,
                    label=name,
                    min_width=60,
                    elem_id=f"d-crop-{name}",
                )
                for name, v in (("left", 0), ("top", 0), ("right", 100), ("bottom", 100))
            ]
        preview = gr.Image(
            label="The box searched (red)",
            type="pil",
            interactive=False,
            height=220,
            elem_id="d-crop-preview",
        )
        md = gr.Markdown("The whole drawing is searched.", elem_id="d-crop-md")
    return CropInputs(*edges, preview, md)


def crop_box(file, left, top, right, bottom):
    """``(preview, crop, line)``: the drawing with the box drawn, the cropped drawing (None for the whole
    drawing) and what is searched; a bad box is a ⚠️ line and no crop."""
    from patent_demo.imageio import DrawingError

    if not file or not isinstance(file, str):
        return None, None, "Upload a drawing first, then set the box."
    try:
        page = load_drawing(file, crop=False, square=False)
    except (DrawingError, OSError):
        return None, None, "⚠️ this drawing cannot be read"
    small = page.copy()
    small.thumbnail((900, 900))  # the preview: a large upload is never sent to the browser at full size
    try:
        box = [float(x) for x in (left, top, right, bottom)]
    except (TypeError, ValueError):
        return small, None, "⚠️ each edge is a number from 0 to 100"
    if not all(0 <= x <= 100 for x in box) or box[0] >= box[2] or box[1] >= box[3]:
        return small, None, "⚠️ the box needs 0 ≤ left < right ≤ 100 and 0 ≤ top < bottom ≤ 100"
    w, h = page.size
    px = (round(box[0] * w / 100), round(box[1] * h / 100), round(box[2] * w / 100), round(box[3] * h / 100))
    if px[2] - px[0] < 8 or px[3] - px[1] < 8:
        return small, None, "⚠️ the box is too small: make it at least 8 pixels each way"
    if px == (0, 0, w, h):
        return small, None, "The whole drawing is searched."
    shown = sheet_overlay(page, [px], ["crop"])
    return shown, page.crop(px), f"The box {px[2] - px[0]} × {px[3] - px[1]} px of {w} × {h} is searched."


def wire_crop(crop: CropInputs, d_file, crop_state) -> None:
    """A new upload resets the box; every edge change recomputes the crop the searches read."""
    d_file.change(
        lambda f: (0, 0, 100, 100, *crop_box(f, 0, 0, 100, 100)),
        d_file,
        [*crop.edges(), crop.preview, crop_state, crop.md],
        api_name=False,
    )
    for edge in crop.edges():
        edge.input(crop_box, [d_file, *crop.edges()], [crop.preview, crop_state, crop.md], api_name=False)


def sheet_overlay(page: Image.Image, boxes, names) -> Image.Image:
    """The sheet at most 900 px a side with its figure boxes: shrunk in grayscale first, then coloured
    (a 6000 x 6000 page in RGB alone would hold 108 MB)."""
    small = page.copy()
    small.thumbnail((900, 900))
    sx, sy = small.size[0] / page.size[0], small.size[1] / page.size[1]
    rgb = small.convert("RGB")
    d = ImageDraw.Draw(rgb)
    for box, name in zip(boxes, names, strict=True):
        b = (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)
        d.rectangle(b, outline=(220, 30, 30), width=2)
        d.text((b[0] + 4, b[1] + 4), name, fill=(220, 30, 30))
    return rgb


class ExaminerHandlers:
    """Handlers of the examiner's events over one workbench and one label store."""

    def __init__(self, workbench: Workbench, store: LabelStore, identity=None, ready=None) -> None:
        from patent_demo.ui.access import Identity

        self.wb = workbench
        self.store = store
        self.identity = identity or Identity()
        self._ready = ready or (lambda model: None)  # handlers.Handlers._ready: refuse an unbuilt index

    def _who(self, annotator, request, profile) -> str:
        try:
            return self.identity.who(annotator, request, profile)
        except Exception:  # noqa: BLE001 - searching needs no name; labelling will ask for one
            return ""

    # -- searches ------------------------------------------------------------------------------------
    def search_sheet(
        self,
        file,
        crop_image,
        model,
        k,
        annotator="",
        filters=None,
        previous=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
        progress=TRACK_TQDM,
    ):
        """Split an uploaded sheet into figures, search each with the filters and the same exclusions as a
        single drawing (``search.drawing_scope``: a corpus page leaves out its own patent and family),
        merge the lists. On failure the previous list is cleared (no label can go to it)."""
        from patent_demo.search.sheet import figure_names, search_sheet

        try:
            file, upload_data, _ = upload(file, "a drawing sheet (PNG, JPEG or TIFF)")
            self._ready(model_key(model, "drawing"))
            req = drawing_request(self.wb, upload_data, crop_image, model, k=top_k(k), filters=filters)
            where, allowed, notes = drawing_scope(self.wb, req)  # the page (or a crop) is of its own patent
            res = search_sheet(
                self.wb,
                req.image,
                req.model,
                req.k,
                name=Path(file).name,
                allowed=allowed,
                before=where.search,
            )
            spec, data, own_patent, f = (
                self.wb.model(req.model, "drawing"),
                req.image,
                req.own_patent,
                req.filters,
            )
            mark_views(res.hits, "sheet")
            suffix = Path(file).suffix.lower() or ".png"
            session = drawing_session(
                self.store, "image", data, suffix, res.hits, spec, previous, sha=req.sha, patent_id=own_patent
            )
            session["basis"] = Basis.of(
                "sheet", req, res.queries, figure_names(res.figures), [f.box for f in res.figures]
            )
            who = self._who(annotator, request, profile)  # the login when there is one, else the typed name
            record_search(session, "drawing sheet", Path(file).name, spec.label, f.describe(), who, notes)
            if previous and previous.get("image_file"):
                self.store.release_query_image(previous["image_file"])
            page = load_drawing(data, crop=False, square=False)
            overlay = sheet_overlay(page, [x.box for x in res.figures], figure_names(res.figures))
            status = " · ".join([res.status, *notes])
            return drawing_answer(
                self.wb, self.store, session, status, who, gr.update(value=overlay, visible=True)
            )
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return drawing_failed(warn(err), emptied(self.store, previous), None)

    # -- the whole record and the side-by-side views --------------------------------------------------
    def document(self, patent_id, query_text: str = ""):
        """The record of ``patent_id`` (HTML) and all its figures (gallery, zoomable)."""
        try:
            if not check_text(patent_id, "the patent id", MAX_ID_CHARS).strip():
                raise BadInput("type a patent id or select a hit first")
            pid = resolve_patent_id(self.wb.corpus, patent_id)
            view = document_view(self.wb.corpus, pid)
            page = document_html(view, query_text, self.wb.bm25() if query_text else None)
            gallery = [
                (self.wb.display_path(f), " · ".join(x for x in (f.label, f.view) if x) or view.id)
                for f in self.wb.corpus[pid].figures
            ]
            return page, gallery, pid
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return warn(err), gr.update(), gr.update()

    def _hit_row(self, session, list_name: str, rank: int) -> dict:
        rows = (session or {}).get("lists", {}).get(list_name) or []
        if not rows:
            raise BadInput("run a search and select a hit first")
        return rows[max(1, min(int(rank), len(rows))) - 1]

    def open_drawing_hit(self, session, file, crop_image, crop, evt: Selection):
        """Selecting a drawing hit (a gallery tile): its record, and the query next to its figure at the
        same scale (``inputs.picked_rank``: the tile's caption names its rank)."""
        return self.open_drawing_rank(session, file, crop_image, crop, evt, gallery=True)

    def open_drawing_row(self, session, file, crop_image, crop, evt: Selection):
        """Selecting a row of the drawing hits table: as a gallery tile (the row's first cell is its rank)."""
        return self.open_drawing_rank(session, file, crop_image, crop, evt)

    def open_drawing_rank(self, session, file, crop_image, crop, evt, gallery: bool = False):
        """The drawing hit a click picked (``inputs.picked_rank``): its record, and the query next to its
        figure at the same scale."""
        try:
            row = self._hit_row(session, "hmcl", picked_rank(evt, gallery))
            page, gallery, pid = self.document(row["id"])
            q, h = None, None
            caption = ""
            query = self._searched_query(session, row, file, crop_image)
            if query and row.get("figure"):
                data, what = query
                figure = self.wb.corpus.image_root / row["figure"]  # figure paths are under the image root
                q, h = examiner.side_by_side(data, figure, crop=bool(crop))
                caption = (
                    f"{what} and `{pid}` {row['figure']}, both cropped to the ink and shown at {h.width} px "
                    f"as the encoder sees them · score {row['score']:.3f}"
                )
            return page, gallery, pid, q, h, caption
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update(), gr.update()

    def _searched_query(self, session, row: dict, file, crop_image) -> tuple[bytes, str] | None:
        """What the search of ``row`` had as its query and how the caption names it: an application's views
        or a sheet's figure (``examiner.searched_drawing``), else the upload (or the examiner's crop of it)."""
        held = examiner.searched_drawing(self.store, session, row.get("extras") or {})
        if held is not None or not file:
            return held
        data, cropped = cropped_query(file, crop_image)
        return data, f"Query{' (your crop)' if cropped else ''}"

    def open_text_hit(self, list_name: str, session, evt: Selection):
        """Selecting a text hit: its record with the query's words marked, and query vs candidate."""
        try:
            row = self._hit_row(session, list_name, picked_rank(evt))
            query = (session or {}).get("text", "")
            page, gallery, pid = self.document(row["id"], query)
            qh, ch = examiner.text_pair_html(self.wb, query, pid)
            return page, gallery, pid, f"<h4>Query</h4><p>{qh}</p>", f"<h4>{html.escape(pid)}</h4><p>{ch}</p>"
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update()

    def opener(self, list_name: str):
        """The select handler of one text list's table (``/open_<list>_hit``): :meth:`open_text_hit`."""

        def open_hit(session, evt: Selection):
            return self.open_text_hit(list_name, session, evt)

        return open_hit

    def snippets(self, query: str, ids) -> list[str]:
        """One highlighted snippet (escaped HTML) per text hit."""
        bm25 = self.wb.bm25()
        return [snippet_html(bm25, self.wb.corpus[i].text, query, width=140) for i in ids]

    # -- more like this -----------------------------------------------------------------------------
    def more_drawing(self, patent_id, session):
        """The open document's drawing as the next query: the figure that matched when it is a drawing hit
        of the current search, else its first figure."""
        try:
            pid = resolve_patent_id(self.wb.corpus, patent_id)
        except KeyError as err:
            raise gr.Error(str(err).strip("'\"")) from None
        p = self.wb.corpus[pid]
        if not p.figures:
            raise gr.Error(f"{pid} has no drawings: use More like this: its text")
        rows = [
            r
            for r in ((session or {}).get("lists") or {}).get("hmcl", [])
            if r["id"] == pid and r.get("figure")
        ]
        fig = next((f for f in p.figures if rows and f.path == rows[0]["figure"]), p.figures[0])
        return str(self.wb.corpus.image_path(fig)), gr.Tabs(selected="drawing")

    def more_text(self, patent_id):
        """The open document's title and abstract as the next text query."""
        try:
            p = self.wb.corpus[resolve_patent_id(self.wb.corpus, patent_id)]
        except KeyError as err:
            raise gr.Error(str(err).strip("'\"")) from None
        if not self.wb.candidate_text(p).strip():
            raise gr.Error(f"{p.id} has no text: use More like this: its drawing")
        return self.wb.candidate_text(p), gr.Tabs(selected="text")

    # -- the search report -----------------------------------------------------------------------------
    def report_queries(self, request: gr.Request = None, profile: gr.OAuthProfile | None = None):
        rows = queries(self.store, annotator=self.identity.reader("", request, profile))
        choices = [
            (f"{what[:50]} · {kind} · {counted(n, 'label')} · {qid}", qid) for qid, kind, what, n in rows
        ]
        return gr.update(choices=choices, value=choices[0][1] if choices else None)

    def report(
        self,
        query_id,
        filters,
        include_not,
        session=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """Write the search report of one query (CSV + HTML, 0600 in a 0700 folder beside the database)
        with this browser session's search history (each query, its filters, model, date and examiner), and
        preview it; served from a private copy that only this login may download. A non-admin's report holds
        their own labels only."""
        from patent_demo.ui.access import SERVED

        try:
            reader = self.identity.reader("", request, profile)
            query_id = check_text(query_id, "the query id", MAX_ID_CHARS)
            cutoff = Filters.from_value(filters).search.before
            if not query_id:
                raise BadInput("label some hits, press Refresh, then pick a query")
            bm25 = self.wb.bm25()
            corpus = self.wb.corpus
            passage = lambda q, d: snippet_text(bm25, corpus[d].text, q) if d in corpus else ""  # noqa: E731
            rep = build_report(
                self.store,
                query_id,
                corpus,
                passage,
                include_not=bool(include_not),
                cutoff=cutoff,
                annotator=reader,
            )
            rep.history = list((session or {}).get("history") or [])
            images = {r.figure_path: data_uri(r.figure_path) for r in rep.rows if r.figure_path}
            csv_path, html_path = write_report(rep, self.store.path.parent / "reports", images)
            preview = to_html(rep, images)
            frame = (
                f'<iframe id="r-frame" style="width:100%;height:520px;border:1px solid #ccc" '
                f'srcdoc="{html.escape(preview, quote=True)}"></iframe>'
            )
            md = f"{counted(len(rep.rows), 'document')} in the report of `{query_id}` · open the HTML file and print it to PDF"
            served = SERVED.serve([csv_path, html_path], "reports", self.identity.download_owner(request))
            return served, md, frame
        except Exception as err:  # noqa: BLE001 - every failure is a message
            return gr.update(), warn(err), gr.update()


@dataclass
class ExaminerTabs:
    doc_id: gr.Textbox
    doc_btn: gr.Button
    doc_html: gr.HTML
    doc_gallery: gr.Gallery
    sbs_query: gr.Image
    sbs_hit: gr.Image
    sbs_md: gr.Markdown
    tq_html: gr.HTML
    tc_html: gr.HTML
    r_query: gr.Dropdown
    r_refresh: gr.Button
    r_include: gr.Checkbox
    r_btn: gr.Button
    r_files: gr.File
    r_md: gr.Markdown
    r_frame: gr.HTML
    more_d: gr.Button
    more_t: gr.Button


DOC_EMPTY = "Select a hit in a result list to open its whole record here."
SBS_EMPTY = "Select a drawing hit to compare it with the query; a text hit to compare the texts."


def build_tabs(drawings: bool = True) -> ExaminerTabs:
    """The Document, Side by side and Search report tabs (inside the app's ``gr.Tabs``). Without ``drawings``
    (a corpus of texts) the figure gallery, the drawing pair and "More like this: its drawing" are left off
    the page rather than shown as empty boxes."""
    with gr.Tab("Document", id="document"):
        with gr.Row():
            doc_id = gr.Textbox(
                label="Patent", placeholder="select a hit, or type an id", elem_id="doc-id", scale=3
            )
            doc_btn = gr.Button("Open", elem_id="doc-open", scale=1)
            more_d = gr.Button(
                "More like this: its drawing", elem_id="more-drawing", scale=1, visible=drawings
            )
            more_t = gr.Button("More like this: its text", elem_id="more-text", scale=1)
        with gr.Row():
            # side by side on a laptop; on a phone the record above its figures (each needs 360 px)
            doc_html = gr.HTML(
                DOC_EMPTY,
                elem_id="doc-html",
                min_width=360,
            )
            doc_gallery = gr.Gallery(
                label="All figures (click to zoom)",
                columns=3,
                height=460,
                elem_id="doc-gallery",
                object_fit="contain",
                min_width=360,
                visible=drawings,
            )
    with gr.Tab("Side by side", id="sbs"):
        sbs_md = gr.Markdown(
            SBS_EMPTY,
            elem_id="sbs-md",
        )
        with gr.Row(visible=drawings):
            sbs_query = gr.Image(
                label="Query", type="pil", elem_id="sbs-query", interactive=False, height=448
            )
            sbs_hit = gr.Image(
                label="Selected hit", type="pil", elem_id="sbs-hit", interactive=False, height=448
            )
        with gr.Row():
            tq_html = gr.HTML(elem_id="sbs-tq")
            tc_html = gr.HTML(elem_id="sbs-tc")
    with gr.Tab("Search report", id="report"):
        gr.Markdown(
            "The labelled documents of one query with their X / Y / A category, notes and what matched: "
            "CSV and a printable HTML page (print it to PDF from the browser)."
        )
        with gr.Row():
            r_query = gr.Dropdown([], label="Query", scale=4, elem_id="r-query")
            r_refresh = gr.Button("Refresh", scale=1, elem_id="r-refresh")
            r_include = gr.Checkbox(label="include 'not relevant'", value=False, scale=1)
        r_btn = gr.Button("Make the search report", variant="primary", elem_id="r-make")
        r_md = gr.Markdown(elem_id="r-md")
        r_files = gr.File(label="Report files", file_count="multiple", elem_id="r-files")
        r_frame = gr.HTML(elem_id="r-preview")
    return ExaminerTabs(
        doc_id,
        doc_btn,
        doc_html,
        doc_gallery,
        sbs_query,
        sbs_hit,
        sbs_md,
        tq_html,
        tc_html,
        r_query,
        r_refresh,
        r_include,
        r_btn,
        r_files,
        r_md,
        r_frame,
        more_d,
        more_t,
    )


def wire_tabs(
    ext: ExaminerTabs, ex: ExaminerHandlers, shared: Shared, tabs, d_file, t_text, text_search
) -> None:
    """The Document tab (a record by its number, "More like this") and the Search report tab. ``text_search``
    chains the text search to the event that fills the abstract."""
    doc_out = [ext.doc_html, ext.doc_gallery, ext.doc_id]
    ext.doc_btn.click(ex.document, [ext.doc_id], doc_out, api_name="open_document")
    ext.doc_id.submit(ex.document, [ext.doc_id], doc_out, api_name=False)  # Enter in the number box: the same
    text_search(wire_more_like_this(ext, ex, shared, tabs, d_file, t_text).success)
    ext.r_refresh.click(ex.report_queries, None, ext.r_query, api_name="report_queries")
    ext.r_btn.click(
        **shared.mine(
            ex.report,
            [ext.r_query, shared.filters, ext.r_include, shared.session],
            [ext.r_files, ext.r_md, ext.r_frame],
        ),
        api_name="search_report",
    )


def wire_more_like_this(ext: ExaminerTabs, ex: ExaminerHandlers, shared: Shared, tabs, d_file, t_text):
    """ "More like this" in the Document tab: the record's drawing (or text) becomes the query and is searched
    (its own patent and family are then left out, as for any corpus query). The drawing tab is the first, so
    its button is on the page and is clicked; returns the event that fills the abstract, which the caller
    chains the text search to on the server (the Text tab's button is not rendered until the tab is opened)."""
    ext.more_d.click(
        **shared.mine(ex.more_drawing, [ext.doc_id, shared.session], [d_file, tabs]), api_name=False
    ).success(None, None, None, js="() => document.querySelector('#d-search').click()")
    return ext.more_t.click(ex.more_text, [ext.doc_id], [t_text, tabs], api_name=False)
