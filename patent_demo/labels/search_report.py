"""The search report of one query: the documents the examiners labelled, as CSV and as a printable page.

For a query, every candidate with a live label is a row: its decided label (``LabelStore.resolved``:
adjudicated, else the annotators' majority; ``disputed`` when they are tied), its search-report
category (X: relevant alone, Y: relevant in combination, A: background; the decided label's, else
the latest one an annotator gave), its date category (E: an earlier patent document, filed before the
query patent's date and published on or after it; P: an intermediate document, published between the
query patent's priority and filing dates; ``patent_demo.prior_art.report_category``, from the corpus
dates), every annotator's note, and what matched: the corpus figure for a drawing query, for a text query a
short passage of the candidate around the BM25-matched words. The page shows both categories as an EPO
search report does ("E,X"). Rows go X, Y, A, then uncategorised, each by decided grade and the best rank it
was shown at.
Candidates judged ``not`` relevant are left out unless asked for.

The HTML page is self-contained, every value HTML-escaped, with print styles so the browser's
"print to PDF" gives the deliverable. CSV cells that a spreadsheet would read as a formula
(starting with ``=``, ``+``, ``-``, ``@``) are prefixed with ``'``.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from patent_demo.labels.store import GRADES, Label, LabelStore, write_private
from patent_demo.prior_art import REPORT_CATEGORIES, report_category
from patent_demo.wording import counted

CATEGORY_ORDER = {"X": 0, "Y": 1, "A": 2, "": 3}
CATEGORY_MEANING = {
    "X": "relevant on its own",
    "Y": "relevant in combination with another document",
    "A": "background, general state of the art",
    **REPORT_CATEGORIES,
    "": "not categorised",
}
COLUMNS = (
    "category",
    "date_category",
    "document",
    "title",
    "published",
    "codes",
    "decision",
    "annotators",
    "best_rank",
    "lists",
    "matched",
    "notes",
)


@dataclass
class ReportRow:
    category: str
    document: str
    title: str
    published: str
    codes: str
    decision: str  # relevant / partly / not / disputed
    annotators: str  # "ann: relevant; bob: partly"
    best_rank: int
    lists: str
    matched: str  # figure path or passage
    notes: str
    figure_path: str = ""  # absolute path of the matched figure, for the HTML page
    date_category: str = ""  # E / P from the dates (patent_demo.prior_art.report_category)


@dataclass
class SearchReport:
    query_id: str
    query_kind: str
    query_text: str
    query_patent: str
    query_codes: dict
    rows: list[ReportRow]
    created_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    corpus: str = ""
    cutoff: str = ""
    history: list[dict] = field(default_factory=list)  # the searches of the session (sessions.record_search)


def _readable(store: LabelStore, annotator: str | None, query_id: str | None = None) -> list[Label]:
    """The live labels a reader sees: all (``annotator`` None), else that annotator's own (no adjudications)."""
    labs = store.labels(query_id=query_id)
    return labs if annotator is None else [x for x in labs if x.annotator == annotator and not x.adjudicated]


def queries(store: LabelStore, annotator: str | None = None) -> list[tuple[str, str, str, int]]:
    """``(query_id, kind, description, live labels)`` of every labelled query, most recent first
    (``annotator``: only the queries and labels of that annotator)."""
    seen: dict[str, list[Label]] = {}
    for lab in _readable(store, annotator):
        seen.setdefault(lab.query_id, []).append(lab)
    out = []
    for qid, labs in sorted(seen.items(), key=lambda kv: -max(x.id or 0 for x in kv[1])):
        first = labs[0]
        what = first.query_patent_id or " ".join(first.query_text.split())[:60] or first.query_image_file
        out.append((qid, first.query_kind, what, len(labs)))
    return out


def build_report(
    store: LabelStore,
    query_id: str,
    corpus=None,
    passage: Callable[[str, str], str] | None = None,
    include_not: bool = False,
    cutoff: str = "",
    annotator: str | None = None,
) -> SearchReport:
    """The report of ``query_id``. ``corpus`` (a ``Corpus``) adds titles, dates, codes and figure
    paths; ``passage(query_text, candidate_id)`` gives the matched passage of a text hit (the app
    passes a BM25 snippet). ``annotator`` (not None): a report of that annotator's own labels only, their
    own grade as the decision (what a non-admin may read). Raises ``ValueError`` when the query has no
    live label."""
    labs = _readable(store, annotator, query_id)
    if not labs:
        raise ValueError(f"no labels for query {query_id!r}; label some hits first")
    own = annotator is not None
    resolved = {} if own else {c: lab for (q, c), lab in store.resolved().items() if q == query_id}
    disputed = set() if own else {c for (q, c), _ in store.disputed() if q == query_id}
    by_cand: dict[str, list[Label]] = {}
    for lab in labs:
        by_cand.setdefault(lab.candidate_id, []).append(lab)
    first = labs[0]
    query = corpus[first.query_patent_id] if corpus is not None and first.query_patent_id in corpus else None
    rows = []
    for cand, cl in by_cand.items():
        latest = {}
        for lab in cl:  # ordered by id: the last one per annotator wins
            latest[lab.annotator] = lab
        decided = resolved.get(cand)
        decision = decided.label if decided else ("disputed" if cand in disputed else cl[-1].label)
        if decision == "not" and not include_not:
            continue
        category = (decided.category if decided and decided.category else "") or next(
            (lab.category for lab in reversed(cl) if lab.category), ""
        )
        patent = corpus[cand] if corpus is not None and cand in corpus else None
        figure = next((lab.candidate_figure for lab in reversed(cl) if lab.candidate_figure), "")
        figure_path = ""
        if figure and corpus is not None:
            figure_path = str(corpus.image_root / figure)  # figure paths are under the image root
        matched = figure
        if not matched and passage is not None and first.query_text:
            matched = passage(first.query_text, cand)
        notes = "; ".join(f"{a}: {lab.note}" for a, lab in latest.items() if lab.note)
        rows.append(
            ReportRow(
                category=category,
                document=cand,
                title=patent.title if patent else "",
                published=patent.date if patent else "",
                codes="; ".join(c for codes in (patent.codes.values() if patent else []) for c in codes),
                decision=decision,
                annotators="; ".join(f"{a}: {lab.label}" for a, lab in latest.items()),
                best_rank=min(lab.rank for lab in cl),
                lists=", ".join(sorted({lab.list_name for lab in cl})),
                matched=matched,
                notes=notes,
                figure_path=figure_path,
                date_category=report_category(patent, query, cutoff) if patent is not None else "",
            )
        )
    rows.sort(
        key=lambda r: (CATEGORY_ORDER.get(r.category, 3), -GRADES.get(r.decision, 0), r.best_rank, r.document)
    )
    return SearchReport(
        query_id=query_id,
        query_kind=first.query_kind,
        query_text=first.query_text,
        query_patent=first.query_patent_id,
        query_codes=dict(first.query_codes),
        rows=rows,
        corpus=getattr(corpus, "name", "") if corpus is not None else "",
        cutoff=cutoff,
    )


def _cell(value: object) -> str:
    s = str(value)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def to_csv(report: SearchReport) -> str:
    """The rows as CSV (header first), formula-like cells neutralised."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in report.rows:
        d = asdict(r)
        w.writerow([_cell(d[c]) for c in COLUMNS])
    return buf.getvalue()


_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #111; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
table { border-collapse: collapse; width: 100%; margin-top: 1em; }
th, td { border: 1px solid #999; padding: 4px 6px; vertical-align: top; text-align: left; }
th { background: #eee; }
td.cat { font-weight: bold; font-size: 1.2em; text-align: center; }
img.fig { max-width: 140px; max-height: 140px; }
.meta td { border: none; padding: 1px 8px 1px 0; }
.legend { color: #444; font-size: .9em; }
@media print { body { margin: 1cm; } tr { page-break-inside: avoid; } .noprint { display: none; } }
@media screen and (max-width: 640px) {
  body { margin: .5em; font-size: 13px; }
  table:not(.meta) { display: block; overflow-x: auto; }
  td { overflow-wrap: anywhere; }
  img.fig { max-width: 90px; max-height: 90px; }
}
"""


def to_html(report: SearchReport, images: Mapping[str, str] | None = None) -> str:
    """A printable page. ``images`` maps a figure path to an image URL (``data:`` or a served
    file) to show the matched figure; without it the figure's path is printed."""
    e = html.escape
    images = images or {}
    meta = [
        ("Query", report.query_patent or report.query_id),
        ("Kind", report.query_kind),
        ("Codes", "; ".join(c for v in report.query_codes.values() for c in v)),
        ("Corpus", report.corpus),
        ("Prior-art cut-off", report.cutoff),
        ("Created", report.created_at),
    ]
    head = "".join(f"<tr><td><b>{e(k)}</b></td><td>{e(str(v))}</td></tr>" for k, v in meta if v)
    query_text = f"<p><b>Query text:</b> {e(report.query_text)}</p>" if report.query_text else ""
    body = []
    for r in report.rows:
        if r.figure_path and r.figure_path in images:
            matched = f'<img class="fig" src="{e(images[r.figure_path], quote=True)}" alt="{e(r.matched)}"><br>{e(r.matched)}'
        else:
            matched = e(r.matched)
        body.append(
            "<tr>"
            f'<td class="cat">{e(",".join(c for c in (r.date_category, r.category) if c) or "–")}</td>'
            f"<td><b>{e(r.document)}</b><br>{e(r.title)}</td>"
            f"<td>{e(r.published)}</td><td>{e(r.codes)}</td>"
            f"<td>{e(r.decision)}<br><small>{e(r.annotators)}</small></td>"
            f"<td>{e(str(r.best_rank))} <small>({e(r.lists)})</small></td>"
            f"<td>{matched}</td><td>{e(r.notes)}</td>"
            "</tr>"
        )
    legend = " · ".join(f"<b>{k}</b> {e(v)}" for k, v in CATEGORY_MEANING.items() if k)
    rows = "".join(body) or '<tr><td colspan="8">No document judged relevant.</td></tr>'
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>Search report {e(report.query_patent or report.query_id)}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>Search report</h1><table class='meta'>{head}</table>{query_text}"
        f"<p class='legend'>{legend}</p>"
        "<table><thead><tr><th>Cat.</th><th>Document</th><th>Published</th><th>Codes</th>"
        "<th>Decision</th><th>Best rank</th><th>Matched figure / passage</th><th>Notes</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        f"{_history_html(report.history)}"
        "<p class='noprint legend'>Print this page (Ctrl+P) to save it as PDF.</p>"
        "</body></html>\n"
    )


def _history_html(history: Sequence[Mapping]) -> str:
    """The search history as a table (each query, its filters, model, date and examiner)."""
    if not history:
        return ""
    e = html.escape
    keys = ("when", "examiner", "kind", "query", "model", "filters", "notes", "hits")
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(str(h.get(k, '')))}</td>" for k in keys) + "</tr>" for h in history
    )
    head = "".join(f"<th>{k}</th>" for k in keys)
    return f"<h2>Search history</h2><table id='history'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def write_report(
    report: SearchReport, out_dir: str | Path, images: Mapping[str, str] | None = None
) -> tuple[Path, Path]:
    """Write ``search_report_<query>.csv`` and ``.html`` under ``out_dir`` (the folder 0700, the files
    0600: they hold annotators' names and notes); returns both paths."""
    out = Path(out_dir)
    stem = "search_report_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in report.query_id)
    csv_path, html_path = out / f"{stem}.csv", out / f"{stem}.html"
    write_private(csv_path, to_csv(report).encode("utf-8"))
    write_private(html_path, to_html(report, images).encode("utf-8"))
    os.chmod(out, 0o700)  # a folder an older version made 0755
    return csv_path, html_path


def main(argv: Sequence[str] | None = None) -> int:
    """``labels report``: write the search report of one query (or list the labelled queries)."""
    ap = argparse.ArgumentParser(
        prog="patent-demo labels report",
        description="Write the search report (CSV + printable HTML) of a labelled query.",
    )
    ap.add_argument("--labels", required=True, help="the label store (labels.sqlite)")
    ap.add_argument("--query", default="", help="query id (img-…, txt-…, mix-…); omit to list the queries")
    ap.add_argument("--corpus", default="", help="corpus directory, for titles, dates, codes and passages")
    ap.add_argument("--out", default=".", help="output folder (default: here)")
    ap.add_argument("--include-not", action="store_true", help="also list documents judged not relevant")
    args = ap.parse_args(argv)
    if not Path(args.labels).is_file():
        print(f"error: no label store at {args.labels}", file=sys.stderr)
        return 2
    store = LabelStore(args.labels)
    try:
        if not args.query:
            for qid, kind, what, n in queries(store):
                print(f"{qid}\t{kind}\t{counted(n, 'label')}\t{what}")
            return 0
        corpus, passage = None, None
        if args.corpus:
            from patent_demo.data.corpus import Corpus
            from patent_demo.text.bm25 import BM25Index
            from patent_demo.text.highlight import snippet_text

            corpus = Corpus.load(args.corpus, validate=False)
            bm25 = BM25Index.build(corpus.patents)
            passage = lambda q, d: snippet_text(bm25, corpus[d].text, q)  # noqa: E731
        report = build_report(store, args.query, corpus, passage, include_not=args.include_not)
        paths = write_report(report, args.out)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(f"{counted(len(report.rows), 'document')} → {paths[0]} and {paths[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
