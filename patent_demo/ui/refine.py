"""The Drawing search tab's **Refine with my labels** (key ``r``, ``/refine_drawing``): ``RefineHandlers``,
which ``handlers.Handlers`` takes in.

A refine ranks the current drawing query (one drawing or a crop of one, a sheet's figures, a whole
application) again with the query moved by the labels of this query by this annotator
(``patent_demo.search.refine``): the annotator's latest live labels in the store, so an undone label no longer
counts and a label made in an earlier search of the same query does. The labelled hits stay on top with
their badges, the others re-rank below them, and the status line says how many labels were used and what
moved. The refined list replaces the session's ``hmcl`` list under the same query id: a label made on it
files against the original query, with the rank shown.
"""

from __future__ import annotations

import gradio as gr

from patent_demo.labels.sessions import record_search, rows_of
from patent_demo.search.refine import NEEDS_A_LABEL, UsedLabels, moved, refine_search
from patent_demo.ui.inputs import BadInput
from patent_demo.ui.views import cursor_md, gallery_items, plain, progress_md, table_value, warn
from patent_demo.wording import counted

NO_DRAWING_QUERY = (
    "Refine ranks a drawing search again with your labels: run a drawing search (one drawing, a sheet or a "
    "whole application), label at least one of its hits, then refine"
)


def _refined_line(out, who: str, model: str) -> str:
    """The status line of a refined list: the labels used, how far the query moved, what moved."""
    r = out.refined
    kinds = ", ".join(
        x
        for x in (
            f"{r.relevant} relevant" if r.relevant else "",
            f"{r.not_relevant} not" if r.not_relevant else "",
        )
        if x
    )
    left = (
        f" ({counted(len(out.left_out), 'label')} left out: its drawing is not in this model's index)"
        if out.left_out
        else ""
    )
    return (
        f"↻ Refined with {counted(r.used, 'label')} of {plain(who)} on this query ({kinds}){left}; "
        f"query moved to cosine {r.cosine:.3f} of the original · the {len(out.labelled)} labelled on top, "
        f"{len(out.hits) - _top_rows(out)} others ranked again below them with {model}"
    )


def _top_rows(out) -> int:
    labelled = set(out.labelled)
    return sum(1 for h in out.hits if h.patent_id in labelled)


class RefineHandlers:
    """The refine handler; the class that takes it in holds ``wb``, ``store``, ``identity`` and
    ``used`` (a ``patent_demo.search.refine.UsedLabels``)."""

    used: UsedLabels

    def refine_drawing(
        self,
        session,
        annotator="",
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """``/refine_drawing``: the current drawing query ranked again with the annotator's labels of it.
        Returns what a drawing search returns (grid, status line, hit table, then the session and the
        cursor on the first unlabelled hit). Without a drawing query, a name or a label: a message, and
        nothing changes."""
        try:
            basis = (session or {}).get("basis")
            if basis is None:
                kind = (session or {}).get("kind")
                raise BadInput(
                    NO_DRAWING_QUERY
                    if kind not in ("text", "combined")
                    else f"Refine is for drawing searches; the current query is a {kind} search "
                    "(relevance feedback is not offered for text)"
                )
            who = self.identity.who(annotator, request, profile)
            if not who:
                raise BadInput(
                    "enter your name (or sign in) first: refine uses your own labels of this query"
                )
            labels = self.store.latest(session["query_id"], who)
            if not labels:
                raise BadInput(NEEDS_A_LABEL)
            shown = [row["id"] for row in session["lists"].get("hmcl") or []]
            out = refine_search(self.wb, basis, labels, shown)
            self.used.add([labels[c].id for c in labels if c not in out.left_out])
            refined = {
                **session,
                "lists": {**session["lists"], "hmcl": rows_of(out.hits)},
                "history": list(session.get("history") or []),
                "refined": {"labels": out.refined.used, "cosine": round(out.refined.cosine, 4)},
            }
            spec = self.wb.model(basis.request.model, "drawing")
            on_top = set(out.labelled)
            before = [p for p in shown if p not in on_top]
            after = [h.patent_id for h in out.hits if h.patent_id not in on_top]
            what = moved(before, after, top=min(10, basis.request.k))
            line = (
                f"{_refined_line(out, who, spec.key)} · among the unlabelled, ranked among themselves: {what}"
            )
            record_search(
                refined,
                f"{basis.kind} refined",
                f"{counted(out.refined.used, 'label')} ({out.refined.relevant} relevant, "
                f"{out.refined.not_relevant} not) of {who}",
                spec.label,
                basis.request.filters.describe(),
                who,
                [n for n in out.notes if "⚠️" not in n],
            )
            status = " · ".join(dict.fromkeys([line, *out.notes]))
            return self._refined_answer(refined, status, who, _top_rows(out) + 1)
        except Exception as err:  # noqa: BLE001 - every failure is a message; the list stays as it was
            return gr.update(), warn(err), *(gr.update() for _ in range(6))

    def _refined_answer(self, session: dict, status: str, who: str, first_new: int) -> tuple:
        """Grid, status, table with the cursor row, then the session and the cursor on ``first_new`` (the
        first unlabelled hit; the last hit when all are labelled) with its line and the progress."""
        judged = self.store.judged(session["query_id"], who)
        rank = min(first_new, len(session["lists"]["hmcl"]))
        return (
            gallery_items(session, judged),
            status,
            table_value(self.wb, session, "hmcl", judged, rank),
            session,
            "hmcl",
            rank,
            cursor_md(self.wb, session, "hmcl", rank, judged),
            progress_md(self.store, session, who),
        )


def labels_used_md(used: UsedLabels, store, lineage: list[list]) -> str:
    """The Training tab's two counts side by side. *Labels used now*: the labels that refines used in this
    server run (each label once, however many refines used it) and the drawing labels in the store that a
    refine of their query would use (live labels of drawing, sheet and application queries). *Labels used for
    retraining*: the judged pairs each retrained model was trained on (its ``num_labels``)."""
    drawing = sum(
        1 for lab in store.labels() if lab.query_kind in ("image", "application") and not lab.adjudicated
    )
    retrained = [f"{row[2]} judged pairs ({plain(row[0])})" for row in lineage if row[2] is not None]
    return (
        f"**Labels used now** (Refine with my labels): {counted(used.labels, 'label')} by "
        f"{counted(used.refines, 'refine')} in this server run; {counted(drawing, 'drawing label')} in the "
        "store that a refine of their query uses · **Labels used for retraining**: "
        + (", ".join(retrained) or "none yet (no retrained model)")
    )
