"""The review tabs of the page: Embedding map, Error analysis, Export, Training and Agreement. Each builder
lays out its tab inside the page's ``gr.Tabs`` and wires its events at once (none of them moves the cursor);
the map and error tabs return their model dropdowns, which the page refreshes on load."""

from __future__ import annotations

import gradio as gr

from patent_demo.labels import loop
from patent_demo.ui.events import Models, Shared
from patent_demo.ui.handlers import Handlers
from patent_demo.ui.labelling import QUEUE_HEADERS, LabelHandlers
from patent_demo.ui.review import FAILURE_HEADERS

ERROR_WIDTHS = ["9%", "10%", "15%", "10%", "15%", "5%", "16%", "11%", "9%"]  # the table fits 1366 px


def map_tab(models: Models, h: Handlers, shared: Shared) -> list[gr.Dropdown]:
    """Maps of two drawing models side by side (``/embedding_map``): PCA or t-SNE, coloured by main class,
    subclass or one class against the rest; returns the two model dropdowns."""
    with gr.Tab("Embedding map", id="map"):
        with gr.Row():
            left = gr.Dropdown(models.drawing, value=models.drawing_default, label="Left model")
            right = gr.Dropdown(
                models.drawing, value=models.drawing[min(1, len(models.drawing) - 1)][1], label="Right model"
            )
            projection = gr.Radio(["PCA", "t-SNE"], value="PCA", label="Projection", elem_id="m-proj")
            dims = gr.Radio(["2-D", "3-D"], value="2-D", label="Dimensions", elem_id="m-dims")
        with gr.Row():
            colour = gr.Radio(
                ["main class", "subclass"], value="main class", label="Colour by", elem_id="m-colour"
            )
            focus = gr.Dropdown(h.map_classes(), value="", label="Highlight a class", elem_id="m-focus")
            btn = gr.Button("Draw maps", variant="primary", elem_id="m-btn")
        status = gr.Markdown(
            "Colour: main class · ★ the query of your last drawing search, ringed: its hits · the title gives "
            "the silhouette at patent, subclass and main-class level.",
            elem_id="m-status",
        )
        with gr.Row():
            plot_left = gr.Plot(label="Left", elem_id="m-left")
            plot_right = gr.Plot(label="Right", elem_id="m-right")
    btn.click(
        **shared.mine(
            h.embedding_maps,
            [left, right, dims, shared.session, projection, colour, focus],
            [plot_left, plot_right, status],
        ),
        api_name="embedding_map",
    )
    return [left, right]


def errors_tab(models: Models, h: Handlers) -> list[gr.Dropdown]:
    """A drawing model's metrics and its failures split in-domain / out-of-domain, worst first, with the
    drawings of the worst and the table as CSV (``/evaluate``), and one query figure searched with two
    models (``/compare``); returns the three model dropdowns."""
    with gr.Tab("Error analysis", id="errors"):
        with gr.Row():
            model = gr.Dropdown(models.drawing, value=models.drawing_default, label="Model")
            split = gr.Radio(
                [("test split", "test"), ("all figures", "all")],
                value="test",
                label="Queries",
                elem_id="e-split",
            )
            domain = gr.Radio(
                [("both", ""), ("in-domain", "in-domain"), ("out-of-domain", "out-of-domain")],
                value="",
                label="Failures",
                elem_id="e-domain",
            )
            btn = gr.Button("Evaluate", variant="primary", elem_id="e-btn")
        summary = gr.Markdown(elem_id="e-summary")
        cards = gr.HTML(elem_id="e-cards")
        table = gr.Dataframe(
            headers=FAILURE_HEADERS,
            label="Failures, worst first: the best-ranked relevant figure of each domain, outranked "
            "(select a row for its drawings)",
            interactive=False,
            max_height=300,
            wrap=True,
            column_widths=ERROR_WIDTHS,
            elem_id="e-table",
        )
        csv = gr.File(label="The table (CSV)", elem_id="e-csv")
        with gr.Row():
            fig = gr.Dropdown([], label="Query figure")
            model_a = gr.Dropdown(models.drawing, value=models.drawing_default, label="Model A")
            model_b = gr.Dropdown(models.drawing, value=models.drawing[-1][1], label="Model B")
            compare = gr.Button("Compare")
        compared = gr.Markdown(
            "Evaluate, pick a query figure and two models, then *Compare*: each model's "
            "top hits for that figure show below.",
            elem_id="e-cmp-md",
        )
        with gr.Row():
            gallery_a = gr.Gallery(label="Model A", columns=4, height=260)
            gallery_b = gr.Gallery(label="Model B", columns=4, height=260)
    outputs = [summary, table, fig, cards, csv]
    btn.click(h.evaluate, [model, split, domain], outputs, api_name="evaluate")
    domain.change(h.evaluate, [model, split, domain], outputs, api_visibility="private")
    table.select(h.failure_card, [model, split, domain], [cards, fig], api_visibility="private")
    compare.click(h.compare, [fig, model_a, model_b], [gallery_a, gallery_b, compared], api_name="compare")
    return [model, model_a, model_b]


def export_tab(lh: LabelHandlers, shared: Shared) -> None:
    """The decided labels as TREC qrels and training rows (``/export_labels``)."""
    with gr.Tab("Export", id="export"):
        gr.Markdown(
            "Decided labels → TREC qrels (every modality), HMCL rows (`train/hmcl/main.py`, drawing judgements "
            "only), DSSDNet rows (`train/dssdnet/main.py`, text judgements only); tied pairs → `disputed.jsonl`; "
            "the labelling guidelines in force and their earlier versions → `guidelines.md`."
        )
        btn = gr.Button("Export labels", variant="primary", elem_id="x-btn")
        md = gr.Markdown()
        files = gr.File(label="Exports", file_count="multiple", elem_id="x-files")
    btn.click(lh.export_labels, [shared.annotator], [files, md], api_name="export_labels")


def training_tab(h: Handlers) -> None:
    """What the labels bought: learning curves, retrained models, the retrain command (``/training``, on
    opening the tab)."""
    with gr.Tab("Training", id="training") as tab:
        md = gr.Markdown(elem_id="tr-summary")
        plot = gr.Plot(label="Learning curve on the test split (never labelled)", elem_id="tr-plot")
        rows = gr.Dataframe(
            headers=loop.CURVE_HEADERS,
            label="Every point (test split)",
            interactive=False,
            wrap=True,
            max_height=320,
            elem_id="tr-rows",
        )
        text = gr.Markdown(elem_id="tr-text")
        models = gr.Dataframe(
            headers=loop.LINEAGE_HEADERS,
            label="Retrained models beside their parents",
            interactive=False,
            wrap=True,
            elem_id="tr-models",
        )
        cmd = gr.Markdown(elem_id="tr-cmd")
    tab.select(h.training, None, [md, plot, rows, text, models, cmd], api_name="training")


def agreement_tab(lh: LabelHandlers, shared: Shared) -> None:
    """The agreement report, the disagreement queue and the adjudication form (``/agreement``,
    ``/select_disagreement``, ``/adjudicate``)."""
    with gr.Tab("Agreement", id="agreement") as tab:
        with gr.Row():
            gr.Markdown(
                "Where two or more annotators judged the same (query, candidate): Cohen's kappa per pair, "
                "Krippendorff's alpha overall, and the open disagreements. An adjudicated label wins in the exports."
            )
            refresh = gr.Button("Refresh", variant="primary", elem_id="g-refresh", scale=0, min_width=120)
        report = gr.Markdown(elem_id="g-report")
        queue = gr.Dataframe(
            headers=QUEUE_HEADERS,
            label="Disagreement queue (select a row to adjudicate it)",
            interactive=False,
            max_height=300,
            wrap=True,
            elem_id="g-queue",
        )
        pair = gr.Markdown("Select a row of the queue.", elem_id="g-pair")
        with gr.Row():
            qimg = gr.Image(
                label="Query drawing", type="pil", height=220, interactive=False, elem_id="g-qimg"
            )
            cimg = gr.Image(
                label="Candidate drawing", type="filepath", height=220, interactive=False, elem_id="g-cimg"
            )
        with gr.Row():
            qid = gr.Textbox(label="Query id", interactive=False, elem_id="g-qid", scale=1)
            cid = gr.Textbox(label="Candidate", interactive=False, elem_id="g-cid", scale=1)
            label = gr.Radio(
                [("relevant", "relevant"), ("partly", "partly"), ("not relevant", "not")],
                value=None,
                label="Adjudicated label",
                elem_id="g-label",
                scale=2,
            )
            note = gr.Textbox(label="Note (optional)", elem_id="g-note", scale=2)
        btn = gr.Button("Adjudicate", variant="primary", elem_id="g-adjudicate")
        status = gr.Markdown(elem_id="g-status")
    refresh.click(lh.agreement, None, [report, queue], api_name="agreement")
    tab.select(lh.agreement, None, [report, queue], api_visibility="private")
    queue.select(lh.select_disagreement, None, [qid, cid, pair, qimg, cimg], api_name="select_disagreement")
    btn.click(
        lh.adjudicate,
        [qid, cid, label, note, shared.annotator],
        [status, report, queue, qid, cid, note, pair],
        api_name="adjudicate",
    )
