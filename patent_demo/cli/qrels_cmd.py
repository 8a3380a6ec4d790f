"""``patent-demo qrels convert``: judgement files to TREC qrels.

Inputs, by file type:

* one id per line (``.txt``; the cs3245 ``q1-qrels+ve.txt`` / ``q1-qrels-ve.txt`` files): the query id is
  ``--qid`` or the file name up to its first ``-`` (``q1``); the grade is ``--rel``, else 0 for a name
  containing ``-ve`` and 1 otherwise;
* the app's label store (``.sqlite`` / ``.db``): one row per (query, candidate) with the resolved grade
  (relevant 2, partly 1, not 0), as the Labels tab exports it;
* TREC qrels (4 fields a line): copied, so several files merge into one.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from patent_demo.atomic import atomic_text
from patent_demo.data.corpus import CorpusError, format_qrels, read_qrels


def add_parser(sub) -> None:
    p = sub.add_parser("qrels", help="convert judgement files to TREC qrels")
    qs = p.add_subparsers(dest="qrels_command", required=True, metavar="SUBCOMMAND")
    c = qs.add_parser(
        "convert",
        help="one-id-per-line files, label stores or qrels → one TREC qrels file",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("files", nargs="+", help="judgement files (see above)")
    c.add_argument("--out", required=True, help="the TREC qrels file to write")
    c.add_argument("--qid", default=None, help="query id for one-id-per-line files (default: from the name)")
    c.add_argument(
        "--rel", type=int, default=None, help="grade for one-id-per-line files (default: 0 for -ve, else 1)"
    )
    c.set_defaults(handler=run)


def _lines(path: Path, qid: str | None, rel: int | None) -> dict[str, dict[str, int]]:
    q = qid or path.stem.split("-", 1)[0]
    grade = rel if rel is not None else (0 if re.search(r"-ve\b", path.stem) else 1)
    ids = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [i for i in ids if len(i.split()) != 1]
    if bad:
        raise CorpusError(f"{path}: expected one document id per line, got {bad[0]!r}")
    return {q: {d: grade for d in ids}}


def read_judgements(path: Path, qid: str | None = None, rel: int | None = None) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` of one judgement file (see the module docstring)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    if path.suffix.lower() in (".sqlite", ".db", ".sqlite3"):
        import tempfile

        from patent_demo.labels.store import LabelStore

        store = LabelStore(path)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                store.export_qrels(Path(tmp) / "q.txt")
                return read_qrels(Path(tmp) / "q.txt")
        finally:
            store.close()
    first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), "")
    if len(first.split()) == 4:
        return read_qrels(path)
    return _lines(path, qid, rel)


def run(args: argparse.Namespace) -> int:
    merged: dict[str, dict[str, int]] = {}
    for f in args.files:
        for q, docs in read_judgements(Path(f), args.qid, args.rel).items():
            for d, r in docs.items():
                if d in merged.get(q, {}) and merged[q][d] != r:
                    raise CorpusError(
                        f"{f}: {q} {d} has grade {r} here and {merged[q][d]} in an earlier file"
                    )
                merged.setdefault(q, {})[d] = r
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_text(out, format_qrels(merged))
    n = sum(len(d) for d in merged.values())
    rel = sum(1 for d in merged.values() for r in d.values() if r > 0)
    print(f"wrote {out}: {len(merged)} queries, {n} judgements ({rel} relevant)")
    return 0
