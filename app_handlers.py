"""The workbench UI's event handlers: ``Handlers(workbench, store)``, one method per event of ``app.py``.

Gradio calls the bound methods; each takes the values of its event's input components and returns the
values of its outputs. Errors the user can act on (``ERRORS``) come back as a ⚠️ message and a toast; the
server carries on. The core package never imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

from patent_demo.data.corpus import Corpus, CorpusError
from patent_demo.drawing.imageio import DrawingError
from patent_demo.labels.sessions import add_list, label_from_session, new_session
from patent_demo.labels.store import (
    Label,
    LabelError,
    LabelStore,
    combined_query_id,
    image_query_id,
    text_query_id,
)
from patent_demo.query import check_abstract, parse_query_codes
from patent_demo.text.explain import explain_markdown
from patent_demo.workbench import Workbench

TRACK_TQDM = gr.Progress(track_tqdm=True)  # progress bars of tqdm loops (index builds) in the UI
QUEUE_HEADERS = ["query id", "query", "candidate", "title"]


class BadInput(Exception):
    """Raised inside handlers for messages the user should see (the server carries on)."""


ERRORS = (DrawingError, CorpusError, LabelError, ValueError, KeyError, FileNotFoundError, BadInput)
"""What a handler turns into a ⚠️ message (and a toast) instead of a stack trace."""


def _warn(err: BaseException) -> str:
    msg = str(err).strip("'\"") or type(err).__name__
    gr.Warning(msg)
    return f"⚠️ {msg}"


def _fmt(x: Any, nd: int = 3) -> str:
    return "–" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _movement(bm25_rank: int, rank: int) -> str:
    d = bm25_rank - rank
    return f"↑ {d}" if d > 0 else (f"↓ {-d}" if d < 0 else "=")


def _row(corpus: Corpus, patent_id: str, score: float) -> list:
    """The patent columns of a result table row: id, Locarno code, title, score."""
    p = corpus[patent_id]
    return [p.id, p.locarno, p.title, round(float(score), 4)]


def _query_ref(lab: Label, width: int = 60) -> str:
    """How a labelled query reads in the disagreement queue: its text (shortened), its drawing file, or both."""
    text = " ".join(lab.query_text.split())
    text = text if len(text) <= width else text[: width - 1] + "…"
    drawing = ""
    if lab.query_image_file:
        drawing = f"drawing {lab.query_image_file}" + (
            f" ({lab.query_patent_id})" if lab.query_patent_id else ""
        )
    return " + ".join(x for x in (drawing, f"“{text}”" if text else "") if x) or lab.query_id


def _progress_md(store: LabelStore, session: dict | None, annotator: str) -> str:
    if not session or not session.get("lists"):
        return "No query yet: run a search, then label its hits."
    shown = {row["id"] for rows in session["lists"].values() for row in rows}
    judged = store.judged(session["query_id"], (annotator or "").strip()) if annotator else {}
    done = len(shown & set(judged))
    return (
        f"**{done} of {len(shown)}** candidates of this query labelled by {annotator or '(enter your name)'}"
    )


def _cursor_md(wb: Workbench, session: dict | None, list_name: str, rank: int) -> str:
    if not session or not session.get("lists", {}).get(list_name):
        return "Select a hit (click it) or choose a list and rank."
    rows = session["lists"][list_name]
    rank = max(1, min(int(rank or 1), len(rows)))
    row = rows[rank - 1]
    p = wb.corpus[row["id"]]
    return f"**{list_name} #{rank}** · `{p.id}` · {p.title} · Locarno {p.locarno or '–'} · score {row['score']:.3f}"


class Handlers:
    """The event handlers of the workbench UI over one workbench and one label store."""

    def __init__(self, workbench: Workbench, store: LabelStore) -> None:
        self.wb = workbench
        self.store = store

    def query_preview(self, file, crop):
        """The query drawing as the encoder reads it (cropped to its ink when ``crop``), or nothing."""
        from patent_demo.drawing.imageio import DrawingError, load_drawing

        if not file:
            return None
        try:
            return load_drawing(file, crop=bool(crop), square=False, size=512)
        except DrawingError:
            return None

    def search_drawing(self, file, model, k, group, crop, locarno, annotator, progress=TRACK_TQDM):
        """Search the corpus drawings with an uploaded drawing; returns gallery, spread line, hit table."""
        try:
            if not file:
                raise BadInput("upload a drawing (PNG, JPEG or TIFF) or pick an example first")
            data = Path(file).read_bytes()
            res = self.wb.search_drawing(file, model, int(k), bool(group), bool(crop), locarno or "")
            sha, rel = self.store.save_query_image(data, Path(file).suffix.lower() or ".png")
            spec = self.wb.model(model, "drawing")
            session = new_session("image", image_query_id(sha), image_sha=sha, image_file=rel,
                                  patent_id=res.query_patent_id)  # fmt: skip
            add_list(session, "hmcl", res.hits, spec.checkpoint_id)
            session["embedding"] = res.query_embedding.tolist()
            session["model"] = spec.key
            gallery = [
                (h.image_path, f"#{h.rank} {h.patent_id} · {h.view} · {h.locarno} · {h.score:.3f}")
                for h in res.hits
            ]
            table = [
                [h.rank, h.patent_id, h.view, h.locarno, h.locarno_title, h.title, round(h.score, 4)]
                for h in res.hits
            ]
            status = f"{len(res.hits)} results with {spec.label} · {res.spread}"
            return (gallery, status, table, session, "hmcl", 1,
                    _cursor_md(self.wb, session, "hmcl", 1), _progress_md(self.store, session, annotator))  # fmt: skip
        except ERRORS as err:
            return (gr.update(), _warn(err), gr.update(), gr.update(), gr.update(), gr.update(),
                    gr.update(), gr.update())  # fmt: skip

    def _text_tables(self, bm25, dss):
        corpus = self.wb.corpus
        bm = [[r, "", *_row(corpus, pid, s)] for r, (pid, s) in enumerate(bm25, 1)]
        ds = [
            [r, _movement(e["bm25_rank"], r), *_row(corpus, pid, s)]
            for r, ((pid, s), e) in enumerate(zip(dss, dss.extras or [], strict=True), 1)
        ]
        return bm, ds

    def search_text(self, abstract, codes, model, k, annotator):
        """BM25 and DSSDNet lists for a pasted abstract (optional classification codes)."""
        try:
            text = check_abstract(abstract)
            qcodes = parse_query_codes(codes or "")
            lists = self.wb.search_text_lists(text, qcodes, int(k), model)
            bm25, dss = lists["bm25"], lists["dssdnet"]
            spec = self.wb.model(model, "text")
            session = new_session("text", text_query_id(text), text=text, codes=qcodes)
            add_list(session, "bm25", self.wb.text_hits(bm25), "bm25")
            add_list(session, "dssdnet", self.wb.text_hits(dss), spec.checkpoint_id)
            add_list(session, "fused", self.wb.text_hits(lists["fused"]), f"{spec.checkpoint_id}+bm25")
            bm, ds = self._text_tables(bm25, dss)
            untrained = " — untrained head: its scores are not yet meaningful" if not spec.trained else ""
            status = f"BM25 found {len(bm25)}; {spec.label} re-ranked the top {self.wb.config.bm25_candidates}{untrained}."
            if not len(bm25):
                status = "⚠️ no corpus text shares a word with this abstract"
            return (bm, ds, status, session, "dssdnet", 1,
                    _cursor_md(self.wb, session, "dssdnet", 1), _progress_md(self.store, session, annotator))  # fmt: skip
        except ERRORS as err:
            return (gr.update(), gr.update(), _warn(err), gr.update(), gr.update(), gr.update(),
                    gr.update(), gr.update())  # fmt: skip

    def fused_table(self, session):
        """The fused list (BM25 + DSSDNet scores) of the current text query, as table rows."""
        rows = (session or {}).get("lists", {}).get("fused") or []
        corpus = self.wb.corpus
        return [
            [
                r,
                _movement((row["extras"] or {}).get("bm25_rank", r), r),
                *_row(corpus, row["id"], row["score"]),
            ]
            for r, row in enumerate(rows, 1)
        ]

    def explain(self, session, rank):
        """The DSSDNet explanation of hit ``rank`` of the current text query: gate plot and figures."""
        from patent_demo.plots import gate_plot

        rows = (session or {}).get("lists", {}).get("dssdnet")
        if not rows:
            return None, "Run a text search, then select a DSSDNet candidate."
        rank = max(1, min(int(rank or 1), len(rows)))
        row = rows[rank - 1]
        e = row["extras"]
        p = self.wb.corpus[row["id"]]
        fig = gate_plot(e["gate"]) if e.get("gate") else None
        md = (
            f"### {p.id} · {p.title}\n"
            f"DSSDNet rank {rank} (BM25 rank {e.get('bm25_rank')}, {_movement(e.get('bm25_rank', rank), rank)})  \n"
            f"**score** {_fmt(row['score'])} · **with t flipped** {_fmt(e.get('score_t_flipped'))}  \n"
            f"**domain-sensitive share** (gate mean) {_fmt(e.get('gate_mean'))}  \n"
            f"**t** = {_fmt(e.get('t'))} ({e.get('t_source') or '–'}) · **t̂** = {_fmt(e.get('t_hat'))}  \n"
            f"**components**: ds {_fmt(e.get('ds'))} · di {_fmt(e.get('di'))} · fusion {_fmt(e.get('fusion'))}\n\n"
            f"{explain_markdown(e)}\n\n"
            f"**Query**: {session.get('text', '')}\n\n**Candidate** ({p.locarno or 'no code'}): {self.wb.candidate_text(p)}"
        )
        return fig, md

    def select_text(self, session, evt: gr.SelectData):
        rank = int(evt.index[0]) + 1
        fig, md = self.explain(session, rank)
        return fig, md, "dssdnet", rank, _cursor_md(self.wb, session, "dssdnet", rank)

    def select_bm25(self, session, evt: gr.SelectData):
        rank = int(evt.index[0]) + 1
        return "bm25", rank, _cursor_md(self.wb, session, "bm25", rank)

    def select_gallery(self, session, evt: gr.SelectData):
        rank = int(evt.index) + 1
        return "hmcl", rank, _cursor_md(self.wb, session, "hmcl", rank)

    def search_combined(self, file, abstract, codes, dmodel, tmodel, k, annotator, progress=TRACK_TQDM):
        """A drawing and an abstract together: HMCL, DSSDNet and their reciprocal rank fusion."""
        try:
            if not file:
                raise BadInput("upload a drawing as well as the abstract")
            data = Path(file).read_bytes()
            text = check_abstract(abstract)
            qcodes = parse_query_codes(codes or "")
            k = int(k)
            dres = self.wb.search_drawing(file, dmodel, k, True, True, "")
            _, dss = self.wb.search_text(text, qcodes, k, tmodel)
            hm = self.wb.index(dmodel).search_patents(dres.query_embedding, min(k, len(self.wb.corpus)))
            fused = self.wb.fuse({"hmcl": hm, "dssdnet": dss}, top=k)
            sha, rel = self.store.save_query_image(data, Path(file).suffix.lower() or ".png")
            session = new_session("combined", combined_query_id(sha, text), text=text, codes=qcodes,
                                  image_sha=sha, image_file=rel, patent_id=dres.query_patent_id)  # fmt: skip
            add_list(session, "hmcl", dres.hits, self.wb.model(dmodel, "drawing").checkpoint_id)
            add_list(session, "dssdnet", self.wb.text_hits(dss), self.wb.model(tmodel, "text").checkpoint_id)
            add_list(session, "fused", self.wb.text_hits(fused), "rrf60")
            tables = [
                [[r, *_row(self.wb.corpus, pid, s)] for r, (pid, s) in enumerate(res, 1)]
                for res in (hm, dss, fused)
            ]
            return (*tables, "Fused with reciprocal rank fusion (k = 60).", session, "fused", 1,
                    _cursor_md(self.wb, session, "fused", 1), _progress_md(self.store, session, annotator))  # fmt: skip
        except ERRORS as err:
            return (gr.update(), gr.update(), gr.update(), _warn(err), gr.update(), gr.update(), gr.update(),
                    gr.update(), gr.update())  # fmt: skip

    def embedding_maps(self, model_a, model_b, dims, session, progress=TRACK_TQDM):
        """PCA maps of two drawing models side by side (query and its top-k highlighted when present)."""
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
                        self.wb.embedding_map(model, query=q, highlight=hl, dims=3 if dims == "3-D" else 2)
                    )
                )
            return *figs, ""
        except ERRORS as err:
            return gr.update(), gr.update(), _warn(err)

    def evaluate(self, model, progress=TRACK_TQDM):
        """Drawing metrics on the test split and the worst queries first."""
        try:
            summary, rows = self.wb.evaluate(model, k=10)
            keys = ["patent_map", "subclass_map", "main_map", "hier_ndcg@10"]
            md = " · ".join(f"**{k}** {_fmt(summary[k])}" for k in keys if k in summary)
            md += f" · {summary['num_queries']} queries"
            table = [[r.query_patent, r.query_figure, r.locarno, round(r.subclass_ap, 3), round(r.patent_ap, 3),
                      r.first_relevant_rank, " ".join(r.expected[:5]), " ".join(r.returned[:5])] for r in rows]  # fmt: skip
            figures = [r.query_figure for r in rows]
            return md, table, gr.update(choices=figures, value=figures[0] if figures else None)
        except ERRORS as err:
            return _warn(err), gr.update(), gr.update()

    def compare(self, figure, model_a, model_b):
        """One test figure searched with two models."""
        try:
            if not figure:
                raise BadInput("evaluate a model first, then pick a query figure")
            a, b = self.wb.compare(figure, model_a, model_b, k=8)
            gal_a, gal_b = (
                [(h.image_path, f"#{h.rank} {h.patent_id} {h.locarno} {h.score:.3f}") for h in res.hits]
                for res in (a, b)
            )
            return gal_a, gal_b, f"A: {a.spread}  \nB: {b.spread}"
        except ERRORS as err:
            return gr.update(), gr.update(), _warn(err)

    def do_label(self, label, list_name, rank, category, note, annotator, session):
        """Store one judgement of hit ``rank`` of ``list_name`` for the current query; moves to the next hit."""
        try:
            lab = self.store.add(
                label_from_session(session, list_name, int(rank), label, annotator, category, note)
            )
            n = len(session["lists"][list_name])
            nxt = min(int(rank) + 1, n)
            msg = f"✓ {lab.label} · {lab.candidate_id} ({list_name} #{lab.rank}) · label #{lab.id}"
            return (
                msg,
                _progress_md(self.store, session, annotator),
                nxt,
                _cursor_md(self.wb, session, list_name, nxt),
                "",
            )
        except ERRORS as err:
            return _warn(err), gr.update(), gr.update(), gr.update(), gr.update()

    def undo(self, annotator, session):
        """Undo the annotator's last label for the current query."""
        try:
            if not (annotator or "").strip():
                raise BadInput("enter your name first: undo removes your own last label")
            lab = self.store.undo_last(annotator.strip(), (session or {}).get("query_id"))
            msg = (
                "nothing to undo"
                if lab is None
                else f"↶ undid {lab.label} · {lab.candidate_id} ({lab.list_name} #{lab.rank})"
            )
            return msg, _progress_md(self.store, session, annotator)
        except ERRORS as err:
            return _warn(err), gr.update()

    def move(self, list_name, rank, step, session):
        rows = (session or {}).get("lists", {}).get(list_name) or []
        r = max(1, min(int(rank or 1) + step, max(1, len(rows))))
        return r, _cursor_md(self.wb, session, list_name, r)

    def export_labels(self):
        """Write TREC qrels and the HMCL / DSSDNet training rows; returns the three files."""
        out = self.store.path.parent / "exports"
        n_q = self.store.export_qrels(out / "qrels.txt")
        n_h = self.store.export_hmcl(out / "hmcl.jsonl")
        n_d = self.store.export_dssdnet(out / "dssdnet.jsonl", corpus=self.wb.corpus)
        md = f"{self.store.count()} labels → {n_q} qrels lines, {n_h} HMCL rows, {n_d} DSSDNet rows (in `{out}`)"
        return [str(out / "qrels.txt"), str(out / "hmcl.jsonl"), str(out / "dssdnet.jsonl")], md

    def _queue(self) -> dict:
        """The open disagreements as a table: query id, query, candidate, title, one column per annotator."""
        first = {}
        for lab in self.store.labels():
            first.setdefault((lab.query_id, lab.candidate_id), lab)
        open_pairs = self.store.disagreements()
        names = sorted({a for _, by in open_pairs for a in by})
        rows = [
            [
                q,
                _query_ref(first[(q, c)]),
                c,
                self.wb.corpus[c].title if c in self.wb.corpus else "(not in this corpus)",
            ]
            + [by.get(a, "–") for a in names]
            for (q, c), by in open_pairs
        ]
        return {"headers": QUEUE_HEADERS + names, "data": rows}

    def agreement(self):
        """The agreement report (kappa per annotator pair, Krippendorff's alpha) and the disagreement queue."""
        from patent_demo.labels.agreement import agreement_markdown, agreement_report

        return agreement_markdown(agreement_report(self.store)), self._queue()

    def select_disagreement(self, evt: gr.SelectData):
        """Fill the adjudication form from a queue row: query id, candidate, and each annotator's label and note."""
        row = evt.row_value or ["", "", ""]
        query_id, cand = str(row[0]), str(row[2])
        labs = [
            x for x in self.store.labels(query_id=query_id) if x.candidate_id == cand and not x.adjudicated
        ]
        if not labs:
            return "", "", "Select a row of the queue."
        latest = {x.annotator: x for x in labs}
        who = "  \n".join(
            f"**{a}**: {x.label}"
            + (f" ({x.category})" if x.category else "")
            + (f" — {x.note}" if x.note else "")
            for a, x in sorted(latest.items())
        )
        title = self.wb.corpus[cand].title if cand in self.wb.corpus else "(not in this corpus)"
        return (
            query_id,
            cand,
            f"**Query**: {_query_ref(labs[-1], 300)}  \n**Candidate** `{cand}` · {title}  \n{who}",
        )

    def adjudicate(self, query_id, candidate_id, label, note, annotator):
        """Store the adjudicated label of one (query, candidate); it wins over the annotators' labels in exports."""
        try:
            previous = [x for x in self.store.labels(query_id=(query_id or "").strip())
                        if x.candidate_id == (candidate_id or "").strip()]  # fmt: skip
            lab = self.store.adjudicate(
                query_id or "", candidate_id or "", label, annotator or "", note or ""
            )
            by_annotator = {x.annotator: x.label for x in previous if not x.adjudicated}
            votes = ", ".join(f"{a}: {v}" for a, v in sorted(by_annotator.items()))
            again = " (replaces the earlier adjudication)" if any(x.adjudicated for x in previous) else ""
            msg = f"✓ adjudicated {lab.candidate_id} for {lab.query_id} as **{lab.label}**{again} · was {votes} · label #{lab.id}"
            return (msg, *self.agreement(), "", "", "", "Select a row of the queue.")
        except ERRORS as err:
            return _warn(err), gr.update(), gr.update(), gr.update(), gr.update(), gr.update(), gr.update()

    def refresh_models(self):
        """Rescan the checkpoint folders on every page load, so a model retrained while the app runs
        appears in the lists after a reload."""
        drawing = gr.update(choices=[(m.label, m.key) for m in self.wb.models("drawing")])
        text = gr.update(choices=[(m.label, m.key) for m in self.wb.models("text")])
        return drawing, text, drawing, drawing, drawing, drawing, drawing


def annotator_from_profile(profile: gr.OAuthProfile | None):
    """Fill the annotator box with the signed-in Hugging Face username (left as typed when signed out)."""
    return profile.username if profile is not None else gr.update()
