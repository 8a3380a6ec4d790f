"""The review tabs' handlers (embedding maps, error analysis, two models compared, training), methods of
``handlers.Handlers``: they read its workbench (``self.wb``), label store, identity and evaluation cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

from patent_demo.analysis import describe_protocol
from patent_demo.limits import MAX_ID_CHARS, check_text
from patent_demo.ui.inputs import NO_DRAWINGS, TRACK_TQDM, BadInput, model_key
from patent_demo.ui.refine import labels_used_md
from patent_demo.ui.views import warn

FEW_PATENTS = 20  # fewer query patents than this in an evaluation: a warning
EVALUATIONS_KEPT = 8  # evaluations held in memory, one per (corpus, model weights, split)


def _fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


class ReviewHandlers:
    """Handlers of the Embedding map, Error analysis and Training tabs (mixed into ``Handlers``)."""

    def embedding_maps(self, model_a, model_b, dims, session, progress=TRACK_TQDM):
        """PCA maps of two drawing models side by side (query and its top-k highlighted when present)."""
        from patent_demo.analysis import embedding_map as map_data
        from patent_demo.plots import embedding_map

        figs = []
        try:
            for model in (model_a, model_b):
                q = None
                hl = []
                if session and session.get("model") == model and session.get("embedding"):
                    q = np.asarray(session["embedding"], dtype="float32")
                    hl = [r["id"] for r in session["lists"].get("hmcl", [])]
                figs.append(
                    embedding_map(
                        map_data(self.wb, model, query=q, highlight=hl, dims=3 if dims == "3-D" else 2)
                    )
                )
            return *figs, ""
        except Exception as err:  # noqa: BLE001
            return gr.update(), gr.update(), warn(err)

    def _evaluation(self, model: str, split: str) -> tuple[dict, list, str]:
        """``analysis.evaluate`` of a drawing model, computed once per (corpus, model and its weights, split)
        and then answered from memory (a retrained checkpoint has other weights: computed again); one
        computation at a time, so concurrent requests for the same evaluation wait for the one running."""
        from datetime import UTC, datetime

        from patent_demo.analysis import evaluate

        spec = self.wb.model(model, "drawing")
        key = (self.wb.fingerprint, spec.key, spec.fingerprint, split)
        with self._evaluating:
            if key not in self._evaluated:
                summary, rows = evaluate(self.wb, spec.key, k=10, split=split)
                while len(self._evaluated) >= EVALUATIONS_KEPT:
                    self._evaluated.pop(next(iter(self._evaluated)))
                self._evaluated[key] = (summary, rows, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
            return self._evaluated[key]

    def evaluate(self, model, split="test", progress=TRACK_TQDM):
        """Drawing metrics on the test split (or every figure, ``split="all"``) and the worst queries first;
        a warning when the queries come from so few patents that the figures say little. Computed once per
        model and corpus (``_evaluation``); the summary says when."""
        try:
            if not self.wb.has_drawings():
                raise BadInput(NO_DRAWINGS)
            split = "all" if split == "all" else "test"
            summary, rows, when = self._evaluation(model_key(model, "drawing"), split)
            keys = ["patent_map", "subclass_map", "main_map", "hier_ndcg@10"]
            md = " · ".join(f"**{k}** {_fmt(summary[k])}" for k in keys if k in summary)
            md += (
                f" · {summary['num_queries']} queries\n\n{self.wb.corpus_description()} · evaluated on "
                f"{describe_protocol(self.wb, split)} · computed {when}, once per model and corpus"
            )
            patents = len({r.query_patent for r in rows})
            if patents < FEW_PATENTS:
                md = (
                    f"⚠️ only {patents} query patents: with so few, patent, subclass and main-class mAP can coincide "
                    f"and one query moves them a lot"
                    + ("; choose *all figures* for a larger sample" if split != "all" else "")
                    + "\n\n"
                    + md
                )
            table = [
                [
                    r.query_patent,
                    r.query_figure,
                    r.locarno,
                    round(r.subclass_ap, 3),
                    round(r.patent_ap, 3),
                    r.first_relevant_rank,
                    " ".join(r.expected[:5]),
                    " ".join(r.returned[:5]),
                ]
                for r in rows
            ]
            figures = [r.query_figure for r in rows]
            return md, table, gr.update(choices=figures, value=figures[0] if figures else None)
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update(), gr.update()

    def compare(self, figure, model_a, model_b):
        """One test figure searched with two models."""
        try:
            if not check_text(figure, "the query figure", MAX_ID_CHARS):
                raise BadInput("evaluate a model first, then pick a query figure")
            for model in (model_a, model_b):
                self._ready(model_key(model, "drawing"))
            a, b = self.wb.compare(figure, model_a, model_b, k=8)
            gal_a, gal_b = (
                [(h.image_path, f"#{h.rank} {h.patent_id} {h.locarno} {h.score:.3f}") for h in res.hits]
                for res in (a, b)
            )
            return gal_a, gal_b, f"A: {a.spread}  \nB: {b.spread}"
        except Exception as err:  # noqa: BLE001
            return gr.update(), gr.update(), warn(err)

    def training(self, request: gr.Request = None, profile: gr.OAuthProfile | None = None):
        """The Training tab: what examiner labels bought (the measured learning curves, ``labels.loop``), the
        retrained models beside their parents, and the command that retrains from this app's label store
        (for the admins when the server names any; names, never server paths)."""
        from patent_demo.labels import loop
        from patent_demo.plots import learning_curve

        result = loop.read_results(loop.RESULTS)
        if result is None:
            head, fig, rows = (
                "No learning curve measured yet: `python -m train.loop_curves` (docs/loop.md).",
                None,
                [],
            )
        else:
            head, fig, rows = loop.summary_markdown(result), learning_curve(result), loop.curve_rows(result)
        text = loop.text_markdown(loop.read_results(loop.TEXT_RESULTS))
        lineage = loop.lineage_rows(self.wb.models("drawing"))
        head = f"{labels_used_md(self.used, self.store, lineage)}\n\n{head}"
        who = self._who("", request, profile)
        if self.identity.admins and who not in self.identity.admins:
            cmd_md = f"_Retraining from the label store is for the admins: {', '.join(sorted(self.identity.admins))}._"
            return head, fig, rows, text, lineage, cmd_md
        # names, never the server's paths (tests/test_ui_leaks.py): the admin runs it in the app's folder
        parent = self.wb.default_drawing_model() if self.wb.has_drawings() else None
        start = f"checkpoints/{parent.key}" if parent is not None and parent.path is not None else "zero-shot"
        out = f"checkpoints/{parent.key if parent is not None else 'hmcl'}-retrained"
        cmd = loop.retrain_command(self.store.name, start, Path(str(self.wb.corpus.root)).name, out)
        cmd_md = (
            f"**Retrain from the label store** (the default drawing model's head, validation-chosen; the new "
            f"checkpoint lists here after a reload, with its parent, label count and figures), run where the "
            f"app runs, with the store's and the corpus's folders in front of their names:\n\n`{cmd}`"
        )
        return head, fig, rows, text, lineage, cmd_md
