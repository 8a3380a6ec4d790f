"""The workbench UI's search handlers: ``Handlers(workbench, store)``, one method per search event of the page
(``blocks``), those of the review tabs it takes from ``review.ReviewHandlers`` and the drawing refine from
``refine.RefineHandlers``; the label panel, export and agreement handlers are ``labelling.LabelHandlers``,
the examiner's (sheets, the whole record, side by side, the search report) ``examiner.ExaminerHandlers``.

Gradio calls the bound methods; each takes the values of its event's input components and returns the
values of its outputs. Every failure comes back as a ⚠️ message and a toast (no server path, user text
escaped) and the server carries on. A failed search clears the results it replaces, so no label can go
to a stale list. A search with a drawing model whose index is still being built waits for it (the page's
status line shows the build's progress and the time left) and answers once it is built. Every search takes the filter panel as one value (``patent_demo.filters.Filters``).
"""

from __future__ import annotations

import html
import threading
from dataclasses import replace
from pathlib import Path

import gradio as gr

from patent_demo.hits import mark_views
from patent_demo.index.scale import describe_index
from patent_demo.labels.sessions import add_list, history_of, new_session, owner_of, record_search
from patent_demo.labels.store import (
    LabelStore,
    application_query_id,
    combined_query_id,
    image_query_id,
    text_query_id,
)
from patent_demo.request import DrawingRequest, TextRequest
from patent_demo.search.refine import Basis, UsedLabels
from patent_demo.search.text import BM25_ONLY
from patent_demo.text.hybrid import default_text_list
from patent_demo.text.lists import LISTS as TEXT_LISTS
from patent_demo.ui.access import Identity
from patent_demo.ui.inputs import NO_DRAWINGS, TRACK_TQDM, BadInput, drawing_request, model_key, top_k, upload
from patent_demo.ui.refine import RefineHandlers
from patent_demo.ui.review import ReviewHandlers
from patent_demo.ui.views import cursor_md, gallery_items, progress_md, table_value, warn
from patent_demo.workbench import Workbench

LATER_TABLES = ("dense", "hybrid", "fused")  # /search_text's tables after its status


def _with_notes(status: str, notes: list[str]) -> str:
    """The status line with the search's notes (``patent_demo.search``): a ⚠️ warning (no good
    match) first, the others (filter, cut-off) after."""
    warn_ = [n for n in notes if n.startswith("⚠️")]
    rest = [n for n in notes if not n.startswith("⚠️")]
    return " · ".join(dict.fromkeys([*warn_, status, *rest]))


def judged_by(store: LabelStore, session: dict | None, who: str) -> dict[str, str]:
    """The annotator's labels of the session's query, by candidate (none without a name or a query)."""
    if not session or not session.get("query_id") or not who:
        return {}
    return store.judged(session["query_id"], who)


def emptied(store: LabelStore, previous: dict | None) -> dict:
    """An empty session (same owner and history) whose staged query drawing is released: no label goes to
    the hits it replaces."""
    if previous and previous.get("image_file"):
        store.release_query_image(previous["image_file"])
    return {"owner": owner_of(previous), "lists": {}, "checkpoints": {}, "history": history_of(previous)}


def cursor_tail(
    wb: Workbench, store: LabelStore, session: dict, list_name: str, who: str, judged: dict
) -> tuple:
    """What every search returns last: the session, the cursor on the first hit of ``list_name`` (list, rank,
    its line) and the annotator's progress."""
    return (
        session,
        list_name,
        1,
        cursor_md(wb, session, list_name, 1, judged),
        progress_md(store, session, who),
    )


def failed_tail(session: dict) -> tuple:
    """What a failed search returns last: the emptied session, the list and the progress unchanged, rank 1 and
    the cursor line saying the search failed."""
    return session, gr.update(), 1, "No results: the search failed.", gr.update()


def drawing_session(
    store: LabelStore,
    kind: str,
    image: bytes,
    suffix: str,
    hits,
    spec,
    previous: dict | None,
    *,
    query_id: str = "",
    sha: str = "",
    patent_id: str = "",
) -> dict:
    """A new labelling session of a drawing query (``kind`` image or application): the query image staged in
    the store (``sha`` when the request has it), the hits as the ``hmcl`` list of model ``spec``."""
    sha, rel = store.stage_query_image(image, suffix, sha=sha)
    session = new_session(
        kind, query_id or image_query_id(sha), previous, image_sha=sha, image_file=rel, patent_id=patent_id
    )
    add_list(session, "hmcl", hits, spec.checkpoint_id)
    session["model"] = spec.key
    return session


def drawing_answer(wb: Workbench, store: LabelStore, session: dict, status: str, who: str, *extra) -> tuple:
    """A drawing search's outputs: grid, status line, hit table with the cursor row, ``extra`` (the sheet's
    figures), then ``cursor_tail``."""
    judged = judged_by(store, session, who)
    return (
        gallery_items(session, judged),
        status,
        table_value(wb, session, "hmcl", judged, 1),
        *extra,
        *cursor_tail(wb, store, session, "hmcl", who, judged),
    )


def drawing_failed(message: str, session: dict, *extra) -> tuple:
    """A failed drawing search's outputs: no grid, the ⚠️ line, no table, ``extra``, then ``failed_tail``."""
    return [], message, None, *extra, *failed_tail(session)


class Handlers(RefineHandlers, ReviewHandlers):
    """The search handlers of the workbench UI over one workbench and one label store."""

    def __init__(self, workbench: Workbench, store: LabelStore, identity=None) -> None:
        self.wb = workbench
        self.store = store
        self.identity = identity or Identity()
        self._evaluated: dict[tuple, tuple] = {}  # (corpus, model, weights, split) -> (summary, rows, when)
        self._evaluating = threading.Lock()
        self.used = UsedLabels()  # the labels refines used in this server run (the Training tab)
        self._failure_csvs: dict[str, str] = {}  # the error analysis's served CSVs, by the sha of the table

    def _who(self, annotator, request, profile) -> str:
        try:
            return self.identity.who(annotator, request, profile)
        except Exception:  # noqa: BLE001 - searching needs no name; labelling will ask for one
            return ""

    def query_preview(self, file, crop):
        """The query drawing as the encoder reads it (cropped to its ink when ``crop``), or nothing."""
        from patent_demo.imageio import DrawingError, load_drawing

        if not file or not isinstance(file, str):
            return None
        try:
            return load_drawing(file, crop=bool(crop), square=False, size=512, name=Path(file).name)
        except (DrawingError, MemoryError):
            return None

    def _ready(self, model: str) -> None:
        """Have ``model``'s index: at once when it is ready, else waited for while the warm-up builds it (the
        page's status line shows its progress and the time left), or built now when nothing builds it."""
        if not self.wb.has_drawings():
            raise BadInput(NO_DRAWINGS)
        self.wb.index(self.wb.model(model, "drawing"))

    def _replace(self, previous: dict | None) -> None:
        if previous and previous.get("image_file"):
            self.store.release_query_image(previous["image_file"])

    def _failed(self, previous: dict | None, err: BaseException) -> tuple[str, dict]:
        """A search failed: the message, and an empty session so no label goes to old hits."""
        return warn(err), emptied(self.store, previous)

    def _searched_in(self, model: str) -> str:
        """The status note on the drawing index that ran: its kind and measured recall, or the backend."""
        index = f"index {describe_index(self.wb.index(model))}"
        if self.wb.config.backend != "faiss":
            index = f"searched in {self.wb.config.backend} ({self.wb.config.backend_url or 'embedded'})"
        return index

    def search_drawing(
        self,
        file,
        model,
        k,
        group,
        crop,
        locarno,
        annotator,
        filters=None,
        previous=None,
        crop_image=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
        progress=TRACK_TQDM,
    ):
        """Search the corpus drawings with an uploaded drawing (or the examiner's crop of it,
        ``crop_image``), restricted by the filter panel (``filters``, one ``Filters`` value); with its
        ``exclude_own`` a corpus drawing's own patent and family are left out. Returns gallery, status line,
        hit table."""
        try:
            file, data, suffix = upload(file)
            self._ready(model_key(model, "drawing"))
            req = drawing_request(
                self.wb,
                data,
                crop_image,
                model,
                k=top_k(k),
                per_patent=bool(group),
                crop=bool(crop),
                locarno=locarno or "",
                filters=filters,
                name=Path(file).name,
            )
            res = self.wb.search_drawing(req)
            spec, cropped, notes = self.wb.model(req.model, "drawing"), req.image is not data, res.notes
            suffix = ".png" if cropped else suffix
            session = drawing_session(
                self.store,
                "image",
                req.image,
                suffix,
                res.hits,
                spec,
                previous,
                sha=req.sha,
                patent_id=res.query_patent_id,
            )
            session["embedding"] = res.query_embedding.tolist()
            session["basis"] = Basis.of("drawing", req, res.query_embedding)  # what a refine searches again
            self._replace(previous)
            who = self._who(annotator, request, profile)
            what = Path(file).name + (" (a crop of it)" if cropped else "")
            record_search(
                session,
                "drawing",
                what,
                spec.label,
                req.filters.describe(),
                who,
                [n for n in notes if "⚠️" not in n],
            )
            status = _with_notes(
                f"{len(res.hits)} results with {spec.label} · {res.spread}",
                [*notes, self._searched_in(req.model)],
            )
            return drawing_answer(self.wb, self.store, session, status, who)
        except Exception as err:  # noqa: BLE001 - every failure is a message, the server carries on
            return drawing_failed(*self._failed(previous, err))

    def search_application(
        self,
        files,
        model,
        k,
        crop,
        annotator="",
        filters=None,
        previous=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
        progress=TRACK_TQDM,
    ):
        """A whole application: several uploaded views at once, patents ranked by the mean over views of
        each view's best-figure similarity (``search.search_application``), restricted by the filter panel
        with the single drawing's exclusions (views that are corpus drawings leave out their patent and
        family). A new labelling session of its own (kind ``application``, its views kept as one sheet)
        replaces grid, table and cursor. Returns what ``search_drawing`` returns."""
        from patent_demo.drawing.application import views_sheet

        try:
            from patent_demo.drawing.application import check_views

            files = [f for f in ([files] if isinstance(files, str) else files or []) if f]
            if not files:
                raise BadInput("upload the views of the application (several drawings) first")
            check_views(files)  # the count, then the headers' decoded sizes: before any view is read
            uploads = [upload(f) for f in files]
            self._ready(model_key(model, "drawing"))
            views = [data for _, data, _ in uploads]
            req = DrawingRequest.application(
                self.wb, views, model, top_k(k), crop=bool(crop), filters=filters
            )
            res = self.wb.search_application(req)
            notes, f = res.notes, req.filters
            spec = self.wb.model(req.model, "drawing")
            mark_views(res.hits, "application")  # a hit is the whole patent: its tile the closest figure
            session = drawing_session(
                self.store,
                "application",
                views_sheet(res.views, cropped=req.crop) if res.views else views_sheet(views),
                ".png",
                res.hits,
                spec,
                previous,
                query_id=application_query_id(list(req.shas)),
                patent_id=res.query_patent_id,
            )
            session["basis"] = Basis.of("application", req, res.query_embedding)
            self._replace(previous)
            who = self._who(annotator, request, profile)
            names = ", ".join(Path(name).name for name, _, _ in uploads)
            record_search(
                session, "application", f"{len(views)} views: {names}", spec.label, f.describe(), who, notes
            )
            status = _with_notes(
                f"{len(res.hits)} patents for an application of {len(views)} views with "
                f"{spec.label} · {res.spread}",
                notes,
            )
            return drawing_answer(self.wb, self.store, session, status, who)
        except Exception as err:  # noqa: BLE001 - every failure is a message, the server carries on
            return drawing_failed(*self._failed(previous, err))

    def _snipped(self, res, text: str) -> list:
        """The hits of a text list, each with a snippet (escaped HTML) of the words BM25 matched."""
        from patent_demo.families import same_text_sets
        from patent_demo.text.highlight import snippet_html

        hits = self.wb.text_hits(res)
        bm25 = self.wb.bm25()
        twins = same_text_sets(self.wb.corpus)
        for h in hits:
            h.extras["snippet"] = snippet_html(bm25, self.wb.corpus[h.patent_id].text, text, width=140)
            # listed under the hit: the family members it stands for, and utility patents with its very
            # text (a signal only: they keep their own rows)
            notes = (("same family", h.extras.get("family_also")), ("same text", twins.get(h.patent_id)))
            for what, ids in notes:
                if ids:
                    h.extras["snippet"] += f"<br><small>{what}: {html.escape(', '.join(ids))}</small>"
        return hits

    def search_bm25(self, abstract, codes, model, k, filters=None, previous=None):
        """The BM25 list at once, before the re-ranker runs (the text button's first step): the BM25 table,
        the DSSDNet and fused tables emptied, a status saying the re-ranking follows, and the session
        emptied (the tables now show the new query, so no label may go to the last one's hits)."""
        previous = emptied(self.store, previous)
        try:
            req = TextRequest.build(
                abstract, codes, model_key(model, "text"), top_k(k), filters=filters, rerank=False, wb=self.wb
            )
            (lists, notes), text, spec = self.wb.search_text(req), req.text, self.wb.model(req.model, "text")
            session = new_session("text", text_query_id(text), None, text=text, codes=req.codes)
            add_list(session, "bm25", self._snipped(lists["bm25"], text), "bm25")
            status = f"BM25 found {len(lists['bm25'])}; dense and hybrid follow, then {spec.label} re-ranks the hybrid top {self.wb.rerank_depth(spec)}…"
            return (
                table_value(self.wb, session, "bm25", {}, None),
                None,
                None,
                _with_notes(status, notes),
                previous,
            )
        except Exception as err:  # noqa: BLE001 - the full search that follows reports the failure
            return None, None, None, warn(err), previous

    def search_dense(self, abstract, codes, model, k, filters=None):
        """The dense and hybrid lists (the text button's second step, before the re-ranker)."""
        try:
            req = TextRequest.build(abstract, codes, "", top_k(k), filters=filters, lists=("dense", "hybrid"))
            (lists, notes), text = self.wb.search_text(req), req.text
            session = new_session("text", text_query_id(text), None, text=text, codes=req.codes)
            for name in ("dense", "hybrid"):
                add_list(session, name, self._snipped(lists[name], text), name)
            enc = self.wb.dense()[0]
            status = f"dense ({enc.name}, {enc.precision}) and hybrid found {len(lists['hybrid'])}; re-ranking follows…"
            return (
                table_value(self.wb, session, "dense", {}, None),
                table_value(self.wb, session, "hybrid", {}, None),
                _with_notes(status, notes),
            )
        except Exception as err:  # noqa: BLE001 - the full search that follows reports the failure
            return None, None, warn(err)

    def search_text(
        self,
        abstract,
        codes,
        model,
        k,
        annotator,
        filters=None,
        previous=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """Every text list (``patent_demo.text.lists``) for a pasted abstract (optional classification
        codes), restricted by the filter panel, from one search (BM25, dense and hybrid once, one re-ranking);
        the cursor starts on the default list's first hit. Returns the BM25 and DSSDNet tables, the status,
        then the other tables (``LATER_TABLES``), the session and the cursor (the status stays where API
        clients read it, third)."""
        try:
            req = TextRequest.build(
                abstract, codes, model_key(model, "text"), top_k(k), filters=filters, wb=self.wb
            )
            (lists, notes), text, f = self.wb.search_text(req), req.text, req.filters
            spec = self.wb.model(req.model, "text")
            session = new_session("text", text_query_id(text), previous, text=text, codes=req.codes)
            session["text_model"] = spec.key
            ranked_by = {"dssdnet": spec.checkpoint_id, "fused": f"{spec.checkpoint_id}+hybrid"}
            for name in TEXT_LISTS:
                add_list(session, name, self._snipped(lists[name], text), ranked_by.get(name, name))
            self._replace(previous)
            who = self._who(annotator, request, profile)
            record_search(
                session, "text", text, spec.label, f.describe(), who, [n for n in notes if "⚠️" not in n]
            )
            bm25_only = any(n.startswith(BM25_ONLY) for n in notes)  # a cold start: the dense index builds
            if bm25_only:
                status = f"BM25 found {len(lists['bm25'])}"
            else:
                untrained = " — untrained head: its scores are not yet meaningful" if not spec.trained else ""
                precision = getattr(self.wb.reranker(spec), "precision", "fp32")
                status = (
                    f"BM25 found {len(lists['bm25'])}; {spec.key} ({precision}) re-ranked the hybrid top "
                    f"{self.wb.rerank_depth(spec)}{untrained}"
                )
            status = _with_notes(status, notes)
            if not len(lists["bm25"]):  # the dense and hybrid lists still rank: say what they rank by
                found = len(lists.get("hybrid") or [])
                rest = (
                    "the dense and hybrid lists rank by meaning alone" if found else "no list found anything"
                )
                status = _with_notes(
                    f"⚠️ no corpus text shares a word with this abstract (BM25 found none): {rest}", notes
                )
            first, judged = (
                "bm25" if bm25_only else default_text_list(),
                judged_by(self.store, session, who),
            )  # the cursor: the default list (BM25's while it answers alone)
            tables = {
                n: table_value(self.wb, session, n, judged, 1 if n == first else None) for n in TEXT_LISTS
            }
            return (
                *(tables[n] for n in ("bm25", "dssdnet")),
                status,
                *(tables[n] for n in LATER_TABLES),
                *cursor_tail(self.wb, self.store, session, first, who, judged),
            )
        except Exception as err:  # noqa: BLE001
            msg, session = self._failed(previous, err)
            return None, None, msg, *(None for _ in LATER_TABLES), *failed_tail(session)

    def fused_table(
        self, session, annotator="", request: gr.Request = None, profile: gr.OAuthProfile | None = None
    ):
        """``/fused_text``: the fused list (BM25 + DSSDNet scores) of the current text query as a table."""
        if not session or session.get("kind") != "text" or "fused" not in session.get("lists", {}):
            return None
        judged = judged_by(self.store, session, self._who(annotator, request, profile))
        return table_value(self.wb, session, "fused", judged, None)

    def search_combined(
        self,
        file,
        abstract,
        codes,
        dmodel,
        tmodel,
        k,
        annotator,
        filters=None,
        previous=None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
        progress=TRACK_TQDM,
    ):
        """A drawing and an abstract together: HMCL, the default text list and their reciprocal rank
        fusion (``rrf``), each list restricted by the filter panel inside its search."""
        from patent_demo.results import Results

        try:
            file, data, suffix = upload(file, "a drawing as well as the abstract")
            name, k = default_text_list(), top_k(k)
            treq = TextRequest.build(
                abstract, codes, model_key(tmodel, "text"), k, filters=filters, lists=(name,), wb=self.wb
            )
            self._ready(model_key(dmodel, "drawing"))
            dreq = DrawingRequest.build(self.wb, data, dmodel, k, filters=treq.filters, name=Path(file).name)
            dres = self.wb.search_drawing(dreq)  # the drawing's patent: out of the text list too
            lists, tnotes = self.wb.search_text(replace(treq, own_patent=dreq.own_patent))
            default = "the default"
            if any(n.startswith(BM25_ONLY) for n in tnotes):  # a cold start: BM25's list until dense is built
                name, default = "bm25", "BM25's alone for now"
            notes, text, qcodes, f, dmodel, tmodel = (
                dres.notes,
                treq.text,
                treq.codes,
                treq.filters,
                dreq.model,
                treq.model,
            )
            hm = Results([h.patent_id for h in dres.hits], [h.score for h in dres.hits])
            fused = self.wb.fuse({"hmcl": hm, name: lists[name]}, top=k)
            sha, rel = self.store.stage_query_image(data, suffix, sha=dreq.sha)
            session = new_session(
                "combined",
                combined_query_id(sha, text),
                previous,
                text=text,
                codes=qcodes,
                image_sha=sha,
                image_file=rel,
                patent_id=dres.query_patent_id,
            )
            session["text_list"], tspec = name, self.wb.model(tmodel, "text")
            add_list(session, "hmcl", self.wb.text_hits(hm), self.wb.model(dmodel, "drawing").checkpoint_id)
            add_list(
                session,
                name,
                self.wb.text_hits(lists[name]),
                tspec.checkpoint_id if name in ("dssdnet", "fused") else name,
            )
            add_list(session, "rrf", self.wb.text_hits(fused), "rrf60")
            self._replace(previous)
            who = self._who(annotator, request, profile)
            judged = judged_by(self.store, session, who)
            record_search(
                session,
                "combined",
                f"{Path(file).name} + {text}",
                f"{dmodel} + {tmodel}",
                f.describe(),
                who,
                [n for n in notes + tnotes if "⚠️" not in n],
            )
            tables = [
                table_value(self.wb, session, n, judged, 1 if n == "rrf" else None)
                for n in ("hmcl", name, "rrf")
            ]
            status = _with_notes(
                f"HMCL and the {name} text list ({default}) fused with reciprocal rank fusion (k = 60). "
                "Combined labels judge whole patents (qrels only).",
                notes + tnotes,
            )
            return *tables, status, *cursor_tail(self.wb, self.store, session, "rrf", who, judged)
        except Exception as err:  # noqa: BLE001
            msg, session = self._failed(previous, err)
            return None, None, None, msg, *failed_tail(session)

    def refresh_models(self):
        """Rescan the checkpoint folders on every page load, so a model retrained while the app runs
        appears in the lists after a reload."""
        drawing = gr.update(choices=[(m.label, m.key) for m in self.wb.models("drawing")])
        text = gr.update(choices=[(m.label, m.key) for m in self.wb.models("text")])
        return drawing, text, drawing, drawing, drawing, drawing, drawing
