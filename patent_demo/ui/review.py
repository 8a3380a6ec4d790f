"""The review tabs' handlers (embedding maps, error analysis, two models compared, training), methods of
``handlers.Handlers``: they read its workbench (``self.wb``), label store, identity and evaluation cache."""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

from patent_demo.analysis import describe_protocol
from patent_demo.imageio import data_uri
from patent_demo.limits import MAX_ID_CHARS, check_text
from patent_demo.ui.access import SERVED
from patent_demo.ui.inputs import NO_DRAWINGS, TRACK_TQDM, BadInput, model_key
from patent_demo.ui.refine import labels_used_md
from patent_demo.ui.views import warn

FEW_PATENTS = 20  # fewer query patents than this in an evaluation: a warning
EVALUATIONS_KEPT = 8  # evaluations held in memory, one per (corpus, model weights, split)


DOMAIN_WORDS = {
    "in-domain": "the best-ranked figure of the query's own subclass",
    "out-of-domain": "of its main class, another subclass",
}
FAILURE_HEADERS = [
    "domain",
    "query",
    "query title",
    "missed hit",
    "its title",
    "rank",
    "outranked by",
    "classes",
    "subclass AP",
]
THUMB = 130  # px: the height of a failure card's drawings


def failure_row(wb, row, domain: str, miss: dict) -> list:
    """One failure (``analysis.failures``) as a row of the table and its CSV."""
    above = " · ".join(f"#{i} {a['patent']} ({a['class']})" for i, a in enumerate(miss["above"], 1))
    more = miss["rank"] - 1 - len(miss["above"])
    return [
        domain,
        row.query_patent,
        wb.corpus[row.query_patent].title,
        miss["patent"],
        wb.corpus[miss["patent"]].title,
        miss["rank"],
        above + (f" and {more} more" if more > 0 else ""),
        f"{row.locarno} → {miss['class']}",
        round(row.subclass_ap, 3),
    ]


def _figure_html(wb, path: str, caption: str, border: str) -> str:
    """A drawing of the corpus (its browser-ready image, inlined) and a caption."""
    p, f = wb.patent_of_figure(path)
    src = data_uri(wb.display_path(f), size=2 * THUMB)  # held by the page: no server path in it
    title = html.escape(f"{p.id} · {p.title}")
    return (
        f'<figure style="margin:0;box-sizing:border-box;width:{THUMB + 20}px;max-width:calc(50% - 4px);'
        f'border:2px solid {border};border-radius:6px;padding:4px">'
        f'<img src="{src}" alt="{title}" style="height:{THUMB}px;width:100%;object-fit:contain;background:#fff">'
        f'<figcaption style="font-size:12px;line-height:1.25"><b>{html.escape(caption)}</b><br>{title}'
        "</figcaption></figure>"
    )


def failure_cards(wb, failed) -> str:
    """Each failure as a strip of drawings: the query, the relevant figure it missed and what outranked it."""
    cards = []
    for row, domain, miss in failed:
        figs = [_figure_html(wb, row.query_figure, f"query · {row.locarno}", "#555")]
        figs.append(
            _figure_html(
                wb, miss["figure"], f"missed ({domain}) #{miss['rank']} · {miss['class']}", "#2ca02c"
            )
        )
        figs += [
            _figure_html(wb, a["figure"], f"outranked it: #{i} · {a['class']}", "#d62728")
            for i, a in enumerate(miss["above"], 1)
        ]
        cards.append(
            '<div class="e-card" style="display:flex;flex-wrap:wrap;gap:8px;margin-bottom:10px">'
            + "".join(figs)
            + "</div>"
        )
    return "".join(cards)


def _fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


class ReviewHandlers:
    """Handlers of the Embedding map, Error analysis and Training tabs (mixed into ``Handlers``)."""

    def map_classes(self) -> list[tuple[str, str]]:
        """The choices of the map's "Highlight a class": none, then every main class and subclass of the
        corpus drawings, largest first, each with its number of drawings."""
        from patent_demo.analysis import class_of, main_class_of

        counts: dict[tuple[str, str], int] = {}
        try:
            for p in self.wb.corpus:
                for level, c in (("main class", main_class_of(p)), ("subclass", class_of(p))):
                    if c and p.figures:
                        counts[(level, c)] = counts.get((level, c), 0) + len(p.figures)
        except Exception:  # noqa: BLE001 - no corpus yet: the map says so when drawn
            counts = {}
        ranked = sorted(counts, key=lambda lc: (lc[0] != "main class", -counts[lc], lc[1]))
        return [("none", "")] + [(f"{c} · {level} · {counts[(level, c)]} drawings", c) for level, c in ranked]

    def embedding_maps(
        self,
        model_a,
        model_b,
        dims,
        session,
        projection="PCA",
        colour="main class",
        focus="",
        progress=TRACK_TQDM,
    ):
        """Maps of two drawing models side by side (PCA or t-SNE), coloured by main class, subclass or one
        class against the rest; the last drawing search's query (★, with its own model) and hits (ringed)."""
        from patent_demo.analysis import PROJECTIONS
        from patent_demo.analysis import embedding_map as map_data
        from patent_demo.plots import LEVEL_KEYS, embedding_map

        try:
            if not self.wb.has_drawings():
                raise BadInput(NO_DRAWINGS)
            projection = projection if projection in PROJECTIONS else "PCA"
            colour = colour if colour in LEVEL_KEYS else "main class"
            if not check_text(focus or "", "the class", MAX_ID_CHARS):
                focus = ""
            figs, notes = [], []
            hits = [r.get("figure") or r["id"] for r in ((session or {}).get("lists") or {}).get("hmcl", [])]
            for model in (model_a, model_b):
                key = model_key(model, "drawing")
                q = None
                if session and session.get("model") == key and session.get("embedding"):
                    q = np.asarray(session["embedding"], dtype="float32")
                data = map_data(
                    self.wb,
                    key,
                    query=q,
                    highlight=hits,
                    dims=3 if dims == "3-D" else 2,
                    projection=projection,
                )
                figs.append(embedding_map(data, colour_by=colour, focus=focus))
                if hits and q is None:
                    notes.append(
                        f"the query was searched with another model than {data['model']}: its hits only"
                    )
            return *figs, self._map_legend(projection, colour, focus, bool(hits), notes)
        except Exception as err:  # noqa: BLE001
            return gr.update(), gr.update(), warn(err)

    @staticmethod
    def _map_legend(projection: str, colour: str, focus: str, hits: bool, notes: list[str]) -> str:
        what = f"**{focus}** against the rest" if focus else f"**{colour}** (the 15 largest, the rest grey)"
        line = f"Colour: {what}"
        line += (
            " · ★ the query of your last drawing search, ringed: its hits"
            if hits
            else " · run a drawing search to see its query (★) and hits (ringed) here"
        )
        line += (
            " · **silhouette** (cosine, on the full embeddings) per level: near 1, that level's groups are "
            "tight and apart; near 0 or below, mixed"
        )
        if projection == "t-SNE":
            line += (
                " · t-SNE keeps neighbours, not distances (fitted once per model and corpus, then cached); the "
                "query and any hit outside the sample sit at the mean of their 5 nearest drawings"
            )
        return line + "".join(f"\n\n⚠️ {n}" for n in notes)

    def _evaluation(self, model: str, split: str) -> tuple[dict, list, dict]:
        """``analysis.cached_evaluation`` of a drawing model (read from the disk cache the background job
        fills at start-up, else computed once) kept in memory per (corpus, model and its weights, split):
        a retrained checkpoint has other weights and is computed again. One computation at a time, so
        concurrent requests for the same evaluation wait for the one running."""
        from patent_demo.analysis import cached_evaluation

        spec = self.wb.model(model, "drawing")
        key = (self.wb.fingerprint, spec.key, spec.fingerprint, split)
        with self._evaluating:
            if key not in self._evaluated:
                summary, rows, about = cached_evaluation(self.wb, spec.key, split=split)
                while len(self._evaluated) >= EVALUATIONS_KEPT:
                    self._evaluated.pop(next(iter(self._evaluated)))
                self._evaluated[key] = (summary, rows, about)
            return self._evaluated[key]

    def evaluate(self, model, split="test", domain="", progress=TRACK_TQDM):
        """Drawing metrics on the test split (or every figure, ``split="all"``), the failures split
        in-domain / out-of-domain (``analysis.failures``), worst first, with thumbnails of the worst and the
        table as CSV; a warning when the queries come from so few patents that the figures say little.
        Computed once per model and corpus (``_evaluation``); the summary says when and how long it took."""
        from patent_demo.analysis import DOMAINS, domain_summary, failures

        try:
            if not self.wb.has_drawings():
                raise BadInput(NO_DRAWINGS)
            split = "all" if split == "all" else "test"
            domain = domain if domain in DOMAINS else ""
            progress(0.05, desc="reading or computing the evaluation (once per model and corpus)")
            summary, rows, about = self._evaluation(model_key(model, "drawing"), split)
            keys = ["patent_map", "subclass_map", "main_map", "hier_ndcg@10"]
            md = " · ".join(f"**{k}** {_fmt(summary[k])}" for k in keys if k in summary)
            md += f" · {summary['num_queries']} queries\n\n"
            for d, s in domain_summary(rows).items():
                med = "–" if s["queries"] == 0 else f"{s['median_rank']:g}"
                md += (
                    f"**{d}** ({DOMAIN_WORDS[d]}): {s['queries']} queries have one · first at #1 for "
                    f"{s['first']} · missed from the top 10 by {s['missed']} · median rank {med}  \n"
                )
            md += (
                f"\n{self.wb.corpus_description()} · evaluated on {describe_protocol(self.wb, split)} · computed "
                f"{about['computed']} in {about['seconds']:g} s, once per model and corpus"
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
            failed = failures(rows, domain)
            table = [failure_row(self.wb, *f) for f in failed]
            figures = list(dict.fromkeys(r.query_figure for r, _, _ in failed)) or [
                r.query_figure for r in rows
            ]
            cards = (
                failure_cards(self.wb, failed[:3])
                if failed
                else "<p>No failure: every query finds it at #1.</p>"
            )
            csv_path = self._failure_csv(table, model, split, domain)
            return (
                md,
                table,
                gr.update(choices=figures, value=figures[0] if figures else None),
                cards,
                csv_path,
            )
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update(), gr.update(), gr.update(), gr.update()

    def _failure_csv(self, table: list[list], model: str, split: str, domain: str) -> str:
        """The failure table as a CSV file, served to anybody (it holds the corpus's ids and titles only);
        the same table is served from the same copy while it lasts (``SERVED`` keeps the newest few)."""
        import csv
        import hashlib
        import re
        import tempfile

        body = io.StringIO()
        w = csv.writer(body)
        w.writerow(FAILURE_HEADERS)
        w.writerows(table)
        text = body.getvalue()
        memo = self._failure_csvs
        sha = hashlib.sha256(text.encode()).hexdigest()
        if sha in memo and Path(memo[sha]).is_file():
            return memo[sha]
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"failures-{model}-{split}-{domain or 'both'}.csv")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8", newline="")
            memo[sha] = SERVED.serve([path], "errors", "")[0]
        return memo[sha]

    def failure_card(self, model, split, domain, evt: gr.SelectData):
        """Thumbnails of the failure of a selected table row, and its query figure for *Compare*."""
        from patent_demo.analysis import DOMAINS, failures

        try:
            split = "all" if split == "all" else "test"
            _, rows, _ = self._evaluation(model_key(model, "drawing"), split)
            picked = [str(v) for v in (evt.row_value or [])][:6]
            failed = [
                f
                for f in failures(rows, domain if domain in DOMAINS else "")
                if [str(v) for v in failure_row(self.wb, *f)[:6]] == picked
            ]
            if not failed:
                return gr.update(), gr.update()
            return failure_cards(self.wb, failed[:1]), failed[0][0].query_figure
        except Exception as err:  # noqa: BLE001
            return warn(err), gr.update()

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
                "No learning curve measured yet: `python -m train.loop.curves` (docs/loop.md).",
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
