"""Text corpora for the re-ranking task: a JSONL patent corpus with TREC qrels, citation/family pair
lists, and the labelled-pair TSV of the public DSSDNet data.

JSONL corpus, one patent per line (aliases in brackets)::

    {"id": "US4382867", "title": "...", "abstract": "...", "ipc": ["C02F3/20"], "cpc": [...]}
    id [doc_id, patent_id]; abstract [text]; ipc [all_ipc, ipc_primary]; date [publication_date];
    filing_date [application_date]; priority_date; kind_code (default: the letters the id ends with,
    "EP0049154B2" → "B2"); country (default: the id's two leading letters); claims; citations [cites]

DSSDNet pair TSV (tab-separated, header line, no quoting)::

    Quality  #1 ID  #2 ID  #1 String  #2 String  ipc_1  ipc_2  ipc_3  index

``Quality`` is the 0/1 relevance label and ``ipc_3`` the domain flag ``t`` (1 when the two patents
share an IPC subclass). A variant writes each side as ``#1 title`` + ``#1 abstract``; the text is then
``title + " " + abstract``.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patent_demo.data.corpus import Corpus, CorpusError, Patent, iter_jsonl, kind_code_of, read_qrels
from patent_demo.data.loaders.load_report import LoadReport, codes_dict, log

_ID = ("id", "doc_id", "patent_id")
_TEXT = ("abstract", "text")
_IPC = ("ipc", "all_ipc", "ipc_primary")
_DATE = ("date", "publication_date")
_CITES = ("citations", "cites")
_FILED = ("filing_date", "application_date")


@dataclass(frozen=True)
class LabelledPair:
    """One query–candidate pair: ``label`` the relevance in [0, 1] (1 relevant, 0 not, or a graded
    score such as 0.25/0.5/0.75); ``t`` the domain flag (1.0 when the two
    share an IPC subclass); ``ipc`` all IPC-overlap flags of the row (section, class, subclass);
    ``index`` the row's sample index (used for per-sample weights)."""

    label: float
    id_a: str
    id_b: str
    text_a: str
    text_b: str
    t: float
    ipc: tuple[float, ...] = ()
    index: int = -1


def _first(row: dict, keys: tuple[str, ...]):
    for k in keys:
        if row.get(k) not in (None, "", []):
            return row[k]
    return None


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in value.replace("|", ";").split(";") if v.strip()]
    return [str(v) for v in value]


def load_text_corpus(
    path: str | os.PathLike,
    qrels: str | os.PathLike | dict[str, dict[str, int]] | None = None,
    report: LoadReport | None = None,
    name: str = "",
) -> Corpus:
    """Read a JSONL text corpus (utility patents, no figures) and optional TREC qrels (a path or a
    ``{qid: {docid: rel}}`` dict). Rows without an id are skipped (``"no id"``), repeated ids kept
    once (``"duplicate"``); unparsable codes are dropped and counted in ``report.dropped_codes``.
    Qrels naming ids that are not in the corpus raise ``CorpusError``."""
    path = Path(path)
    report = report if report is not None else LoadReport()
    patents: dict[str, Patent] = {}
    used = {*_ID, *_TEXT, *_IPC, *_DATE, *_CITES, *_FILED, "title", "cpc", "kind"}
    used |= {"priority_date", "country", "kind_code", "claims"}
    for _, row in iter_jsonl(path, "corpus record"):
        pid = str(_first(row, _ID) or "").strip()
        if not pid:
            report.skip("no id")
            continue
        if pid in patents:
            report.skip("duplicate")
            continue
        patents[pid] = Patent(
            id=pid,
            kind=str(row.get("kind") or "utility"),
            title=str(row.get("title") or "").strip(),
            text=str(_first(row, _TEXT) or "").strip(),
            codes=codes_dict(report, ipc=_as_list(_first(row, _IPC)), cpc=_as_list(row.get("cpc"))),
            date=str(_first(row, _DATE) or ""),
            citations=_as_list(_first(row, _CITES)),
            extra={k: v for k, v in row.items() if k not in used and v not in (None, "", [])},
            filing_date=str(_first(row, _FILED) or ""),
            priority_date=str(row.get("priority_date") or ""),
            country=str(row.get("country") or ""),
            kind_code=str(row.get("kind_code") or kind_code_of(pid)),
            claims=str(row.get("claims") or ""),
        )
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_qrels(qrels)
    qrels = qrels or {}
    for qid, docs in qrels.items():
        unknown = [d for d in [qid, *docs] if d not in patents]
        if unknown:
            raise CorpusError(
                f"qrels for query {qid!r} name {len(unknown)} id(s) not in {path.name}, e.g. {unknown[0]!r}"
            )
    report.loaded = len(patents)
    log.info("text corpus %s: %s", path, report.summary())
    return Corpus(root=path.parent, patents=list(patents.values()), qrels=qrels, name=name or path.stem)


def read_pairs(path: str | os.PathLike, columns: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """Id pairs from a TSV with a header line (default: its first two columns), e.g. the
    ``citing_doc  cited_doc`` citation pairs or ``doc_a  doc_b`` family pairs."""
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None:
            raise CorpusError(f"{path}: empty file, expected a header line")
        if columns is None:
            ia, ib = 0, 1
        else:
            missing = [c for c in columns if c not in header]
            if missing:
                raise CorpusError(f"{path}:1: missing column(s) {missing}; the header has {header}")
            ia, ib = header.index(columns[0]), header.index(columns[1])
        pairs = []
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            if len(row) <= max(ia, ib):
                raise CorpusError(
                    f"{path}:{lineno}: expected at least {max(ia, ib) + 1} tab-separated fields"
                )
            pairs.append((row[ia].strip(), row[ib].strip()))
    return pairs


def qrels_from_pairs(pairs: Iterable[tuple[str, str]], rel: int = 1) -> dict[str, dict[str, int]]:
    """``{query: {relevant: rel}}`` from (query, relevant) pairs, e.g. citing → cited patents.
    A self-pair is ignored."""
    qrels: dict[str, dict[str, int]] = {}
    for q, d in pairs:
        if q != d:
            qrels.setdefault(q, {})[d] = rel
    return qrels


_FLAT_FIELD = re.compile(
    r'<str name="(Patent Number|Priority Date|Application Date|Publication Date)">(.*?)</str>', re.S
)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def read_flat_xml_dates(folder: str | os.PathLike) -> dict[str, dict[str, str]]:
    """The dates of flat ``<doc><str name="...">`` patent records (the PatSnap export of cs3245):
    ``{patent number: {"priority_date", "filing_date", "date"}}`` from *Priority Date* (the earliest
    of the ``|``-separated dates), *Application Date* and *Publication Date*; a missing or malformed
    date is left out. Files without a *Patent Number* are skipped."""
    out: dict[str, dict[str, str]] = {}
    names = {"Priority Date": "priority_date", "Application Date": "filing_date", "Publication Date": "date"}
    for path in sorted(Path(folder).glob("*.xml")):
        fields = {
            k: v.strip() for k, v in _FLAT_FIELD.findall(path.read_text(encoding="utf-8", errors="replace"))
        }
        pid = fields.pop("Patent Number", "")
        if not pid:
            continue
        dates = {}
        for name, attr in names.items():
            found = sorted(d for d in _ISO_DATE.findall(fields.get(name, "")))
            if found:
                dates[attr] = found[0]
        out[pid] = dates
    return out


def fill_dates(corpus: Corpus, dates: dict[str, dict[str, str]]) -> int:
    """Fill each patent's empty ``date`` / ``filing_date`` / ``priority_date`` from ``dates`` (as
    ``read_flat_xml_dates`` returns them); a date the corpus already has is kept. Returns how many
    patents gained at least one date."""
    gained = 0
    for p in corpus.patents:
        new = False
        for attr, value in dates.get(p.id, {}).items():
            if not getattr(p, attr):
                setattr(p, attr, value)
                new = True
        gained += new
    return gained


def _number(value: str, what: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise CorpusError(f"{where}: {what} {value!r} is not a number") from None


def load_labelled_pairs(path: str | os.PathLike, t_column: str = "ipc_3") -> list[LabelledPair]:
    """Read a DSSDNet labelled-pair TSV into ``LabelledPair`` records (file order).

    ``t`` is read from ``t_column`` (default ``ipc_3``, the IPC-subclass overlap flag); ``ipc`` holds
    every ``ipc_*`` column in header order; ``index`` is the ``index`` column or the 0-based row
    number. Raises ``CorpusError`` with the line number for a missing column or a bad number.
    """
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None:
            raise CorpusError(f"{path}: empty file, expected a header line")
        header = [h.strip() for h in header]
        col = {h: i for i, h in enumerate(header)}
        lower = {h.lower(): i for i, h in enumerate(header)}
        if "#1 String" in col:
            text_cols = (("#1 String",), ("#2 String",))
        else:
            text_cols = (("#1 title", "#1 abstract"), ("#2 title", "#2 abstract"))
        required = ["Quality", "#1 ID", "#2 ID", *text_cols[0], *text_cols[1], t_column]
        missing = [c for c in required if c not in col]
        if missing:
            raise CorpusError(f"{path}:1: missing column(s) {missing}; the header has {header}")
        ipc_cols = [i for i, h in enumerate(header) if h.lower().startswith("ipc_")]
        index_col = lower.get("index")
        pairs = []
        for lineno, row in enumerate(reader, 2):
            if not row or not "".join(row).strip():
                continue
            where = f"{path}:{lineno}"
            if len(row) < len(header):
                raise CorpusError(f"{where}: {len(row)} tab-separated fields, the header has {len(header)}")
            label = _number(row[col["Quality"]], "Quality", where)
            if not 0.0 <= label <= 1.0:
                raise CorpusError(f"{where}: Quality {row[col['Quality']]!r} is not in [0, 1]")
            text_a, text_b = (" ".join(row[col[c]].strip() for c in cols).strip() for cols in text_cols)
            index = int(_number(row[index_col], "index", where)) if index_col is not None else len(pairs)
            pairs.append(
                LabelledPair(
                    label=label,
                    id_a=row[col["#1 ID"]].strip(),
                    id_b=row[col["#2 ID"]].strip(),
                    text_a=text_a,
                    text_b=text_b,
                    t=_number(row[col[t_column]], t_column, where),
                    ipc=tuple(_number(row[i], header[i], where) for i in ipc_cols),
                    index=index,
                )
            )
    return pairs
