"""DeepPatent2: per-figure JSON records, and its figure file-naming scheme.

File names encode patent, grant date, drawing sheet and figure::

    USD0796233-20170905-D00002_3.png    patent USD0796233, 2017-09-05, sheet 2, figure 3 (segmented)
    USD0871717-20200107-D00002.png      patent USD0871717, 2020-01-07, sheet 2 (a whole sheet)

Records are JSON objects, one per figure, with fields such as ``patentID``, ``pid``,
``subfigure_file`` / ``figure_file``, ``object`` (the object name, used as title), ``aspect``
(the viewpoint), ``classification_locarno``, ``caption`` and ``figid``. Field names vary between
releases, so each is looked up under a few aliases; a record without a patent id or a figure file is
skipped and counted, never fatal.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.data.loaders.load_report import LoadReport, codes_dict, log
from patent_demo.data.loaders.uspto import normalize_patent_id

_NAME = re.compile(
    r"^(?P<pid>US[A-Z]*\d+)-(?P<date>\d{8})-D(?P<sheet>\d+)(?:_(?P<figure>\d+))?\.(?:png|jpe?g|tiff?)$", re.I
)
_ID_FIELDS = ("patentID", "patent_id", "pid", "patent", "id")
_FILE_FIELDS = ("subfigure_file", "figure_file", "file", "file_name", "filename", "image", "path")
_TITLE_FIELDS = ("object", "object_title", "title")
_VIEW_FIELDS = ("aspect", "viewpoint", "view")
_LOCARNO_FIELDS = ("classification_locarno", "locarno")
_CAPTION_FIELDS = ("caption", "description")
_LABEL_FIELDS = ("figid", "figure_id", "fig_id", "label")
_DATE_FIELDS = ("date", "issue_date", "grant_date", "publication_date")


@dataclass(frozen=True)
class DeepPatent2Name:
    """What a DeepPatent2 file name says: ``patent_id`` (``"USD0796233"``), ``date`` (ISO), ``sheet``
    (drawing-sheet number) and ``figure`` (figure number; ``None`` for an unsegmented sheet)."""

    patent_id: str
    date: str
    sheet: int
    figure: int | None
    name: str


def parse_deeppatent2_name(name: str) -> DeepPatent2Name:
    """Parse a DeepPatent2 file name or path (folders are ignored); ``ValueError`` if it does not fit."""
    base = re.split(r"[\\/]", name.strip())[-1]
    m = _NAME.match(base)
    if m is None:
        raise ValueError(
            f"{base!r} is not a DeepPatent2 file name (USD<number>-<YYYYMMDD>-D<sheet>[_<figure>].png)"
        )
    d = m.group("date")
    figure = m.group("figure")
    return DeepPatent2Name(
        patent_id=normalize_patent_id(m.group("pid")),
        date=f"{d[:4]}-{d[4:6]}-{d[6:]}",
        sheet=int(m.group("sheet")),
        figure=int(figure) if figure is not None else None,
        name=base,
    )


def _figure_label(parsed: DeepPatent2Name) -> str:
    return f"FIG. {parsed.figure}" if parsed.figure is not None else f"sheet {parsed.sheet}"


def load_deeppatent2_names(
    names: str | os.PathLike | Iterable[str],
    root: str | os.PathLike = ".",
    report: LoadReport | None = None,
    name: str = "",
) -> Corpus:
    """Group DeepPatent2 file names into patents (figure paths are the names as given, taken relative
    to ``root``).

    ``names`` is an iterable of names or a text/CSV file with one name per line; a header line, blank
    lines and any text after the first whitespace (e.g. the label column of DeepPatent split files)
    are ignored. Names that do not parse are counted as ``"bad file name"``.
    """
    if isinstance(names, (str, os.PathLike)):
        with open(names, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    else:
        lines = list(names)
    report = report if report is not None else LoadReport()
    patents: dict[str, Patent] = {}
    for lineno, line in enumerate(lines, 1):
        token = line.strip().split()[0].strip("\"',") if line.strip() else ""
        if not token:
            continue
        try:
            parsed = parse_deeppatent2_name(token)
        except ValueError:
            if lineno > 1 or re.search(r"\.(png|jpe?g|tiff?)$", token, re.I):
                report.skip("bad file name")
            continue
        rel = os.path.normpath(token).replace(os.sep, "/")
        p = patents.setdefault(parsed.patent_id, Patent(id=parsed.patent_id, kind="design", date=parsed.date))
        p.figures.append(Figure(path=rel, label=_figure_label(parsed)))
    report.loaded = len(patents)
    return Corpus(root=Path(root), patents=list(patents.values()), name=name or "deeppatent2")


# -- JSON records ------------------------------------------------------------------------------------------


def _first(record: dict, fields: tuple[str, ...]) -> str:
    for f in fields:
        value = record.get(f)
        if value not in (None, "", []):
            return str(value).strip()
    return ""


def _read_records(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".jsonl":
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{lineno}: not JSON ({err.msg})") from None
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else [data]
    return data


def _date(record: dict, parsed: DeepPatent2Name | None) -> str:
    raw = _first(record, _DATE_FIELDS).replace("/", "-")
    if re.fullmatch(r"\d{8}", raw):
        return f"{raw[:4]}-{raw[4:6]}-{raw[6:]}"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        return raw
    return parsed.date if parsed is not None else ""


def load_deeppatent2(
    records: str | os.PathLike | Iterable[str | os.PathLike],
    root: str | os.PathLike,
    check_images: bool = True,
    report: LoadReport | None = None,
    name: str = "",
) -> Corpus:
    """DeepPatent2 figure records → ``Corpus`` with one patent per id and its figures in file order.

    ``records`` is a JSON file (a list of records, or an object holding one list), a JSONL file, a
    folder of them, or a list of files. ``root`` is the image folder: a record's file is taken
    relative to it, or found by name anywhere below it. With ``check_images`` a record whose image is
    not on disk is skipped (``"image not found"``). Patent-level fields (title, Locarno code) come from
    the patent's first record that has them.
    """
    root = Path(root)
    if isinstance(records, (str, os.PathLike)):
        p = Path(records)
        files = (
            sorted(f for f in p.iterdir() if f.suffix.lower() in (".json", ".jsonl")) if p.is_dir() else [p]
        )
    else:
        files = [Path(f) for f in records]
    report = report if report is not None else LoadReport()
    by_name: dict[str, Path] | None = None
    patents: dict[str, Patent] = {}
    raw_locarno: dict[str, list[str]] = {}
    for path in files:
        for record in _read_records(path):
            if not isinstance(record, dict):
                report.skip("not a JSON object")
                continue
            file = _first(record, _FILE_FIELDS)
            if not file:
                report.skip("no figure file")
                continue
            try:
                parsed = parse_deeppatent2_name(file)
            except ValueError:
                parsed = None
            raw_id = _first(record, _ID_FIELDS)
            if not raw_id and parsed is None:
                report.skip("no patent id")
                continue
            pid = (
                parsed.patent_id
                if parsed is not None and not raw_id
                else normalize_patent_id(raw_id.split("-")[0])
            )
            rel = Path(file)
            if not (root / rel).is_file():
                if by_name is None:
                    by_name = {f.name: f for f in root.rglob("*") if f.is_file()}
                found = by_name.get(rel.name)
                if found is not None:
                    rel = found.relative_to(root)
                elif check_images:
                    report.skip("image not found")
                    continue
            label = _first(record, _LABEL_FIELDS)
            if label.isdigit():
                label = f"FIG. {int(label)}"
            if not label and parsed is not None:
                label = _figure_label(parsed)
            patent = patents.get(pid)
            if patent is None:
                patent = patents[pid] = Patent(id=pid, kind="design", date=_date(record, parsed))
                raw_locarno[pid] = []
            if not patent.title:
                patent.title = _first(record, _TITLE_FIELDS)
            loc = _first(record, _LOCARNO_FIELDS)
            if loc and not raw_locarno[pid]:
                raw_locarno[pid].append(loc)
            patent.figures.append(
                Figure(
                    path=rel.as_posix(),
                    view=_first(record, _VIEW_FIELDS),
                    label=label,
                    description=_first(record, _CAPTION_FIELDS),
                )
            )
    for pid, patent in patents.items():
        patent.codes = codes_dict(report, locarno=[_locarno4(c) for c in raw_locarno[pid]])
    report.loaded = len(patents)
    log.info("DeepPatent2 %s: %s", root, report.summary())
    return Corpus(root=root, patents=list(patents.values()), name=name or root.name)


def _locarno4(raw: str) -> str:
    """DeepPatent2 writes Locarno codes as ``"0601"`` (or ``"06-01"``)."""
    raw = raw.strip()
    return f"{raw[:2]}-{raw[2:]}" if re.fullmatch(r"\d{4}", raw) else raw
