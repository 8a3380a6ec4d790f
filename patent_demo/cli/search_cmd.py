"""``patent-demo search drawings|text``: batch search of a built corpus, as a table or a TREC run.

Drawing queries are image files (PNG, JPEG, TIFF pages); ``--queries`` is a folder of them or a text file
with one path per line. Results are patents ranked by their best figure, from the same dense index the
app builds (cached under ``--cache-dir``).

Text queries (``--query FILE``) are a PatSnap ``<doc><str name=…>`` record, a USPTO grant XML, or plain
text; ``--queries FILE`` is a TSV of id and text. ``--model`` names the list (``patent_demo.text.lists``):
bm25, dense, hybrid, dssdnet (the hybrid top ``--candidates`` re-ranked), fused, or the default.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from patent_demo.cli.common import (
    add_backend,
    add_checkpoints,
    add_corpus,
    load_corpus,
    project_path,
    resolve_model,
)
from patent_demo.data.sources import IMAGE_SUFFIXES


def add_parser(sub) -> None:
    p = sub.add_parser("search", help="search a corpus with drawings or texts")
    ss = p.add_subparsers(dest="task", required=True, metavar="TASK")
    for task in ("drawings", "text"):
        s = ss.add_parser(
            task,
            help=f"search with {task}",
            description=__doc__.split("\n\n", 1)[1],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_corpus(s)
        s.add_argument(
            "--model",
            default="default",
            help="default, zero-shot (drawings), or a name from `patent-demo models`; text: bm25, dense, hybrid, "
            "dssdnet, fused, default (the shipped default list) or a DSSDNet checkpoint",
        )
        q = s.add_mutually_exclusive_group(required=True)
        q.add_argument("--query", nargs="+", default=None, help="query file(s)")
        q.add_argument(
            "--queries",
            default=None,
            help="a folder of images / a list of image paths"
            if task == "drawings"
            else "a TSV of id<TAB>text",
        )
        s.add_argument("--k", type=int, default=10, help="results per query (default 10)")
        s.add_argument("--run", default=None, help="write a TREC run here instead of printing a table")
        s.add_argument("--tag", default=None, help="run tag of the TREC run (default: the model name)")
        s.add_argument(
            "--cache-dir",
            default=project_path("cache"),
            help="index cache, shared with the app (default: the project's cache/)",
        )
        add_checkpoints(s)
        add_filters(s)
        add_backend(s)
        if task == "drawings":
            s.add_argument(
                "--image-size", type=int, default=None, help="input size in pixels (overrides the model's)"
            )
            s.add_argument("--no-crop", action="store_true", help="do not crop query drawings to their ink")
            s.add_argument(
                "--feedback",
                default=None,
                metavar="QRELS",
                help="relevance feedback: TREC qrels 'qid 0 patent rel' (qid as the run prints it, rel >= 1 "
                "relevant, 0 not); each query with lines ranks with its refined query "
                "(patent_demo.search.feedback, weights from configs/feedback.json), the others as before",
            )
            s.add_argument(
                "--application",
                choices=("mean", "max"),
                default=None,
                help="treat all query drawings as the views of one application: rank patents by the "
                "mean (or max) over views of each view's best-figure similarity",
            )
            s.set_defaults(handler=run_drawings)
        else:
            s.add_argument(
                "--candidates", type=int, default=100, help="hybrid candidates re-ranked (default 100)"
            )
            s.add_argument(
                "--reranker",
                default=None,
                help="the DSSDNet checkpoint of --model dssdnet/fused (default: the app's)",
            )
            s.add_argument(
                "--feedback",
                default=None,
                metavar="QRELS",
                help="TREC qrels 'qid 0 docid rel' of labelled hits (rel >= 1 relevant, 0 not): each query "
                "with lines ranks with its refined dense query (Rocchio; the hybrid fuses it), the others "
                "as before (patent_demo.cli.text_feedback)",
            )
            s.set_defaults(handler=run_text)


def add_filters(s) -> None:
    """The search filters (``patent_demo.filters``), applied inside retrieval."""
    s.add_argument(
        "--before",
        default="",
        metavar="YYYY-MM-DD|own",
        help="prior-art cut-off: only documents published before it; 'own' = each query patent's "
        "filing date, published from its earliest priority marked P (queries that are corpus patents)",
    )
    s.add_argument(
        "--classification",
        default="",
        metavar="PREFIX",
        help="classification prefixes, comma-separated, any scheme (06-01, A47C 7/, D6, ipc:A47C)",
    )
    s.add_argument("--country", default="", metavar="CC", help="offices, comma-separated (US, EP)")
    s.add_argument("--kind", default="", metavar="CODE", help="kind-code prefixes, comma-separated (S, B2)")
    s.add_argument("--published-from", default="", metavar="YYYY-MM-DD", help="publication date range start")
    s.add_argument("--published-to", default="", metavar="YYYY-MM-DD", help="publication date range end")


def search_filter(args: argparse.Namespace):
    """(``SearchFilter`` of the flags, whether ``--before own``)."""
    from patent_demo.filters import SearchFilter

    own = args.before.strip().lower() == "own"
    f = SearchFilter.parse(
        before="" if own else args.before,
        classification=args.classification,
        country=args.country,
        kind_code=args.kind,
        date_from=args.published_from,
        date_to=args.published_to,
    )
    return f, own


# -- queries ----------------------------------------------------------------------------------------------------
def image_queries(query: list[str] | None, queries: str | None) -> list[tuple[str, Path]]:
    """``[(qid, path)]``: the qid is the file name without suffix."""
    if query:
        paths = [Path(q) for q in query]
    else:
        src = Path(queries)
        if src.is_dir():
            paths = sorted(p for p in src.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        else:
            lines = src.read_text(encoding="utf-8").splitlines()
            paths = [
                (src.parent / line.strip()) if not Path(line.strip()).is_absolute() else Path(line.strip())
                for line in lines
                if line.strip()
            ]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"query image {missing[0]} not found")
    if not paths:
        raise ValueError(f"no query images in {queries}")
    return [(p.stem, p) for p in paths]


def _xml_text(root: ET.Element) -> str:
    """Title and abstract of a PatSnap ``<doc><str name=…>`` record, a course query file
    (``<query><title>…</title><description>…</description></query>``) or a USPTO grant document."""
    fields = {
        (e.get("name") or "").lower(): " ".join("".join(e.itertext()).split()) for e in root.iter("str")
    }
    if fields:
        parts = [fields.get(k, "") for k in ("title", "description", "abstract")]
        return ". ".join(p for p in parts if p)
    title = root.find(".//invention-title")
    abstract = root.find(".//abstract")
    if title is None and abstract is None:  # not a grant: a course query file's title and description
        title, abstract = root.find(".//title"), root.find(".//description")
    parts = [" ".join("".join(e.itertext()).split()) for e in (title, abstract) if e is not None]
    return ". ".join(p for p in parts if p)


def text_query(path: Path) -> str:
    """The query text of one file: XML (PatSnap or USPTO grant) or plain text."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if raw.lstrip().startswith("<"):
        from patent_demo.data.loaders.uspto import parse_xml

        text = _xml_text(parse_xml(raw, str(path)))
        if not text:
            raise ValueError(f"{path}: no title, description or abstract found in the XML")
        return text
    return " ".join(raw.split())


def read_text_queries(path: str | Path) -> list[tuple[str, str]]:
    """``[(qid, text)]`` from a TSV of id and text (a header line ``id<TAB>text`` is skipped)."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 2:
                raise ValueError(f"{path}:{lineno}: expected id<TAB>text")
            if lineno == 1 and row[0].strip().lower() in ("id", "qid", "query_id"):
                continue
            rows.append((row[0].strip(), " ".join(" ".join(row[1:]).split())))
    if not rows:
        raise ValueError(f"{path}: no queries")
    return rows


# -- output -----------------------------------------------------------------------------------------------------
def write_run(path: str, rows: list[tuple[str, str, float]], tag: str) -> None:
    """TREC run ``qid Q0 docid rank score tag`` (ranks restart at 1 for each query)."""
    from patent_demo.atomic import atomic_text

    rank: dict[str, int] = {}
    lines = []
    for qid, doc, score in rows:
        rank[qid] = rank.get(qid, 0) + 1
        lines.append(f"{qid} Q0 {doc} {rank[qid]} {score:.6f} {tag}\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_text(Path(path), "".join(lines))
    print(f"wrote {path}: {len(rank)} queries, {len(lines)} lines", file=sys.stderr)


def _print_table(rows: list[tuple[str, int, str, float, str, str, str]]) -> None:
    w = min(40, max([5, *(len(r[0]) for r in rows)]))
    print(f"{'query':{w}s} {'rank':>4s}  {'patent':14s} {'score':>7s}  {'codes':18s} title / figure")
    last = None
    for qid, rank, pid, score, codes, title, fig in rows:
        if last is not None and qid != last:
            print()
        last = qid
        figure = f"  [{fig}]" if fig else ""
        print(f"{qid[:w]:{w}s} {rank:4d}  {pid:14s} {score:7.4f}  {codes[:18]:18s} {title}{figure}")


def _codes(patent) -> str:
    for scheme in ("locarno", "uspc", "ipc", "cpc"):
        if patent.codes.get(scheme):
            return patent.codes[scheme][0]
    return ""


# -- drawings ---------------------------------------------------------------------------------------------------
def drawing_workbench(args: argparse.Namespace, corpus, spec):
    """A ``Workbench`` over ``corpus`` whose index for ``spec`` is the app's (or, with ``--image-size``,
    one of its own size, cached apart)."""
    from patent_demo.workbench import Workbench, WorkbenchConfig

    dirs = [*args.checkpoints, *([str(spec.path.parent)] if spec.path is not None else [])]
    cache = Path(args.cache_dir) / (f"px{args.image_size}" if args.image_size else "")
    factory = None
    if args.image_size:
        from patent_demo.cli.common import SizedEncoder

        def factory(s):
            return SizedEncoder(s, args.image_size)

    config = WorkbenchConfig(
        cache_dir=cache,
        corpus=corpus.root,
        checkpoint_dirs=tuple(Path(d) for d in dirs),
        **backend_config(args),
    )
    return Workbench(config, corpus=corpus, drawing_encoder_factory=factory, progress=sys.stderr.isatty())


def backend_config(args: argparse.Namespace) -> dict:
    """The ``WorkbenchConfig`` fields of ``--backend``, ``--url``, ``--timeout``."""
    return {"backend": args.backend, "backend_url": args.url, "backend_timeout": args.timeout}


def feedback_labels(path: str | None, corpus) -> dict[str, dict[str, int]]:
    """The qrels of ``--feedback`` (``{}`` without it); a malformed file or a judged id that is no corpus
    patent is a ``ValueError`` naming it."""
    if not path:
        return {}
    from patent_demo.search.feedback import read_qrels

    if not Path(path).is_file():
        raise FileNotFoundError(f"--feedback: qrels file {path} not found")
    qrels = read_qrels(path)
    unknown = sorted({d for docs in qrels.values() for d in docs if d not in corpus})
    if unknown:
        raise ValueError(
            f"--feedback {path}: {len(unknown)} judged ids are not patents of the corpus, e.g. {unknown[0]!r}"
        )
    return qrels


def _refined(wb, spec, res, labels: dict[str, int] | None, qid: str) -> np.ndarray | None:
    """The refined query of one search from its qrels lines (``None`` without any); says what it used."""
    if not labels:
        return None
    from patent_demo.search.feedback import Feedback, refine_from_labels

    r = refine_from_labels(res.query_embedding, wb.index(spec), labels, Feedback.load())
    print(
        f"{qid}: refined with {r.relevant} relevant and {r.not_relevant} not relevant "
        f"(cosine to the query {r.cosine:.3f})",
        file=sys.stderr,
    )
    return r.vector


def run_drawings(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    spec = resolve_model(args.model, "drawing", args.checkpoints, corpus)
    queries = image_queries(args.query, args.queries)
    qrels = feedback_labels(args.feedback, corpus)
    wb = drawing_workbench(args, corpus, spec)
    f, own = search_filter(args)
    out, table = [], []
    from patent_demo.filters import Filters
    from patent_demo.request import DrawingRequest

    filters = Filters(f, own_date=own)
    if args.application:
        req = DrawingRequest.application(
            wb,
            [p for _, p in queries],
            spec.key,
            args.k,
            crop=not args.no_crop,
            filters=Filters(f),
            how=args.application,
        )
        res = wb.search_application(req)
        vector = _refined(wb, spec, res, qrels.get("application"), "application")
        res = res if vector is None else wb.search_application(req, vector)
        for h in res.hits:
            out.append(("application", h.patent_id, h.score))
            table.append(
                (
                    "application",
                    h.rank,
                    h.patent_id,
                    h.score,
                    _codes(corpus[h.patent_id]),
                    corpus[h.patent_id].title,
                    "",
                )
            )
        queries = []
    for qid, path in queries:
        req = DrawingRequest.build(wb, path, spec.key, args.k, crop=not args.no_crop, filters=filters)
        res = wb.search_drawing(req)
        vector = _refined(wb, spec, res, qrels.get(qid), qid)
        res = res if vector is None else wb.search_drawing(req, vector)
        notes = res.notes
        for note in notes:
            print(f"{qid}: {note}", file=sys.stderr)
        for h in res.hits:
            out.append((qid, h.patent_id, h.score))
            table.append(
                (
                    qid,
                    h.rank,
                    h.patent_id,
                    h.score,
                    _codes(corpus[h.patent_id]),
                    corpus[h.patent_id].title,
                    h.figure,
                )
            )
    if args.run:
        write_run(args.run, out, args.tag or spec.key)
    else:
        _print_table(table)
    return 0


# -- text -------------------------------------------------------------------------------------------------------
def run_text(args: argparse.Namespace) -> int:
    from patent_demo.cli.text_lists import text_run
    from patent_demo.text.search import TextQuery

    corpus = load_corpus(args.corpus)
    if args.query:
        pairs = [(Path(q).stem, text_query(Path(q))) for q in args.query]
    else:
        pairs = read_text_queries(args.queries)
    queries = [
        TextQuery(re.sub(r"\s+", "_", qid), text, exclude=frozenset({qid}) if qid in corpus else frozenset())
        for qid, text in pairs
    ]
    from patent_demo.cli.text_lists import list_label, resolve_text_list
    from patent_demo.filters import allowed_per_query, cutoff_of_queries

    list_name, spec = resolve_text_list(args.model, args.reranker, args.checkpoints, corpus)
    labels, settings = None, None
    if args.feedback:
        from patent_demo.cli.text_feedback import feedback_labels
        from patent_demo.text.feedback import TextFeedback

        settings = TextFeedback.load()
        labels = feedback_labels(args.feedback, [q.qid for q in queries], list_name, settings, corpus)

    f, own = search_filter(args)
    qids = [q.qid for q in queries]
    cutoffs = cutoff_of_queries(qids, corpus) if own else dict.fromkeys(qids, f.before)
    allowed = allowed_per_query(qids, corpus, cutoffs, f)
    from patent_demo.backends import Where

    where = {q: Where(f.with_before(cutoffs.get(q, "") or f.before), own_family=False) for q in qids}
    run = text_run(
        corpus,
        spec,
        queries,
        [args.k],
        args.candidates,
        args.cache_dir,
        args.checkpoints,
        allowed,
        list_name,
        where=where,
        backend=backend_config(args),
        labels=labels,
        feedback=settings,
    )
    out, table = [], []
    for q in queries:
        res = run[q.qid].top(args.k)
        for rank, (pid, score) in enumerate(res, 1):
            out.append((q.qid, pid, float(score)))
            table.append((q.qid, rank, pid, float(score), _codes(corpus[pid]), corpus[pid].title, ""))
    if args.run:
        write_run(args.run, out, args.tag or list_label(list_name, spec))
    else:
        _print_table(table)
    return 0
