"""Raw collections as streams of patents, for ``patent_demo.data.build``.

Each source is opened with :func:`open_source`, which returns a :class:`Source`: the folder figure paths
are relative to (``image_root``), a stream of :class:`Item` (one patent, or one thing that could not be
used and why), an estimate of the item count for the progress bar, and collection-level extras (qrels,
family pairs). Sources never write into the folder they read; a weekly archive is unpacked under the
output folder, because the drawings inside its ZIPs cannot be read in place.

Kinds:

``redbook``      USPTO Red Book: per-patent folders (``USD0907292-20210105/…XML + …TIF``), weekly archives
                 (a ``.tar`` of per-patent ``.ZIP``s, as published), or concatenated weekly grant XML
                 (``ipgYYMMDD.xml``) with the drawing pages in a folder (``images=``, default: beside it)
``images``       a folder of drawings and a CSV/TSV of id, classification code(s) and title
``deeppatent2``  DeepPatent2 figure images named ``USD…-YYYYMMDD-Dsheet_figure.png``, with or without JSON
                 records
``text``         a JSONL of patents (title, abstract, IPC/CPC), with citation and family pair TSVs
"""

from __future__ import annotations

import csv
import io
import os
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from patent_demo import taxonomy
from patent_demo.data.corpus import Figure, Patent
from patent_demo.data.loaders import LoadReport, uspto

KINDS = ("redbook", "images", "deeppatent2", "text")
LABELS = {
    "redbook": "USPTO Red Book",
    "images": "drawings with a classification table",
    "deeppatent2": "DeepPatent2",
    "text": "patent text collection",
}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".gif", ".bmp", ".webp")


class SourceError(ValueError):
    """A source folder that cannot be read as the kind asked for; the message says what was expected."""


@dataclass
class Item:
    """One unit of a source: ``key`` identifies it across runs (resume), ``patent`` is what it yields,
    or ``None`` with ``skip`` the reason it was left out."""

    key: str
    patent: Patent | None = None
    skip: str = ""


@dataclass
class Source:
    kind: str
    label: str
    image_root: Path
    items: Callable[[], Iterator[Item]]
    total: int | None = None
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    family_pairs: list[tuple[str, str]] = field(default_factory=list)
    layout: str = ""


def open_source(
    kind: str,
    src: str | os.PathLike,
    out: Path,
    images: str | os.PathLike | None = None,
    metadata: str | os.PathLike | None = None,
    scheme: str | None = None,
) -> Source:
    """The :class:`Source` of ``kind`` at ``src`` (``out``: where an archive may be unpacked)."""
    src = Path(src).resolve()
    if not src.exists():
        raise SourceError(f"{src} does not exist")
    if kind == "redbook":
        return _redbook(src, out, images)
    if kind == "images":
        return _images(src, metadata, scheme)
    if kind == "deeppatent2":
        return _deeppatent2(src)
    if kind == "text":
        return _text(src)
    raise SourceError(f"unknown source {kind!r}; use one of {KINDS}")


def _report_skips(report: LoadReport, key: str) -> Iterator[Item]:
    """Items for the skips a loader counted since the last call (they carry no patent)."""
    for reason, n in list(report.skipped.items()):
        for _ in range(n):
            yield Item(key, None, reason)
    report.skipped.clear()


# -- Red Book --------------------------------------------------------------------------------------------
def _redbook(src: Path, out: Path, images: str | os.PathLike | None) -> Source:
    files = [src] if src.is_file() else []
    if src.is_dir():
        top = sorted(p for p in src.iterdir() if p.is_file())
        files = [p for p in top if p.suffix.lower() in (".tar", ".zip")] or [
            p for p in top if p.suffix.lower() == ".xml" and not uspto._REDBOOK_XML.match(p.name)
        ]
    archives = [f for f in files if f.suffix.lower() in (".tar", ".zip")]
    weekly = [f for f in files if f.suffix.lower() == ".xml"]
    if archives:
        return _redbook_archives(archives, out)
    if weekly:
        return _redbook_weekly(weekly, Path(images).resolve() if images else weekly[0].parent)
    if not src.is_dir():
        raise SourceError(
            f"{src}: a Red Book source is a folder, a weekly .tar archive or a weekly grant .xml"
        )
    xml_files = list(uspto.iter_redbook_xml(src))
    if not xml_files:
        raise SourceError(
            f"{src} holds no Red Book grant folders (US…-YYYYMMDD/…XML), weekly archives (.tar) or weekly "
            "grant XML (ipgYYMMDD.xml)"
        )

    def items() -> Iterator[Item]:
        report = LoadReport()
        for xml in xml_files:
            key = xml.relative_to(src).as_posix()
            yield from _read_grant(lambda x=xml: uspto.read_redbook_xml(x, src, report), key, report)

    return Source("redbook", LABELS["redbook"], src, items, len(xml_files), layout="grant folders")


def _read_grant(read: Callable[[], Patent | None], key: str, report: LoadReport) -> Iterator[Item]:
    try:
        patent = read()
    except (ValueError, OSError, UnicodeDecodeError) as err:
        yield Item(key, None, f"unreadable grant XML ({err})")
        return
    if patent is None:
        yield from _report_skips(report, key)
        yield Item(key, None, "")  # done, nothing to add
    elif not patent.figures and patent.kind == "design":
        yield Item(key, None, "design grant without drawing pages")
    else:
        yield Item(key, patent)


def _redbook_archives(archives: list[Path], out: Path) -> Source:
    """Weekly ``.tar`` archives of per-patent ZIPs (or single per-patent ZIPs), unpacked under
    ``out/originals/<patent folder>/`` one ZIP at a time."""
    root = out / "originals"

    def zips() -> Iterator[tuple[str, Callable[[], bytes]]]:
        for arc in archives:
            if arc.suffix.lower() == ".zip":
                yield arc.name, arc.read_bytes
                continue
            try:
                tar = tarfile.open(arc)
            except (tarfile.TarError, OSError) as err:
                raise SourceError(f"{arc}: not a readable tar archive ({err})") from None
            with tar:
                for m in tar:
                    if m.isfile() and m.name.lower().endswith(".zip"):
                        yield f"{arc.name}:{m.name}", lambda m=m, tar=tar: tar.extractfile(m).read()

    def items() -> Iterator[Item]:
        report = LoadReport()
        for key, read in zips():
            try:
                folder = _unpack_zip(read(), root)
            except (zipfile.BadZipFile, OSError, SourceError) as err:
                yield Item(key, None, f"unreadable ZIP ({err})")
                continue
            xml = next(uspto.iter_redbook_xml(folder), None)
            if xml is None:
                yield Item(key, None, "ZIP without grant XML")
                continue
            yield from _read_grant(lambda x=xml: uspto.read_redbook_xml(x, root, report), key, report)

    total = None
    if all(a.suffix.lower() == ".tar" for a in archives):
        try:
            total = sum(
                1
                for a in archives
                for m in tarfile.open(a).getmembers()
                if m.isfile() and m.name.lower().endswith(".zip")
            )
        except (tarfile.TarError, OSError) as err:
            raise SourceError(f"not a readable tar archive ({err})") from None
    return Source("redbook", LABELS["redbook"], root, items, total, layout="weekly archive")


def _unpack_zip(data: bytes, root: Path) -> Path:
    """Write the XML and TIFF pages of one per-patent ZIP to ``root/<stem>/`` (kept when already there,
    so a resumed build does not unpack again); returns that folder."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        xml = [n for n in names if uspto._REDBOOK_XML.match(n.rsplit("/", 1)[-1])]
        if not xml:
            raise SourceError("no grant XML inside")
        stem = xml[0].rsplit("/", 1)[-1].rsplit(".", 1)[0]
        folder = root / stem
        done = folder / ".unpacked"
        if done.is_file():
            return folder
        folder.mkdir(parents=True, exist_ok=True)
        for n in names:
            base = n.rsplit("/", 1)[-1]
            if base.startswith(stem) and (base == xml[0].rsplit("/", 1)[-1] or uspto.page_stem(base)):
                tmp = folder / f".{base}.tmp"
                tmp.write_bytes(zf.read(n))
                os.replace(tmp, folder / base)
        done.write_text("")
    return folder


def _redbook_weekly(files: list[Path], images: Path) -> Source:
    """Concatenated weekly grant XML; pages are found by file name anywhere under ``images``."""
    if not images.is_dir():
        raise SourceError(f"image folder {images} not found (give it with --images)")
    pages: dict[str, list[Path]] = {}
    for folder, _, names in os.walk(images):
        for n in names:
            stem = uspto.page_stem(n)
            if stem:
                pages.setdefault(stem, []).append(Path(folder) / n)
    by_name = {p.name: p for ps in pages.values() for p in ps}

    def read(doc: str, where: str, report: LoadReport) -> Patent | None:
        root_el = uspto.parse_xml(doc, where)
        patent = uspto.parse_grant(root_el, where=where, report=report)
        if patent is not None:
            named = [by_name[n] for n in uspto.page_names(root_el) if n in by_name]
            stem = root_el.get("file", "").rsplit(".", 1)[0]
            uspto.attach_pages(patent, named or pages.get(stem, []), images)
        return patent

    def items() -> Iterator[Item]:
        report = LoadReport()
        for f in files:
            for lineno, doc in uspto.iter_grant_documents(f):
                key = f"{f.name}:{lineno}"
                yield from _read_grant(lambda d=doc, k=key: read(d, k, report), key, report)

    return Source("redbook", LABELS["redbook"], images, items, None, layout="weekly grant XML")


# -- drawings + classification table ------------------------------------------------------------------------
_ID_COLS = ("patent_id", "id", "doc_number", "patent", "number")
_TITLE_COLS = ("title", "name", "object")
_IMAGE_COLS = ("image", "file", "path", "filename")
_CODE_COLS = {
    "locarno": ("locarno",),
    "uspc": ("uspc", "us_class", "class"),
    "ipc": ("ipc",),
    "cpc": ("cpc",),
}


def guess_scheme(code: str) -> str:
    """The scheme a code's shape suggests: ``"06-01"`` Locarno, ``"D2-969"``/``"D6/369"`` USPC,
    ``"A47C 7/02"`` IPC."""
    code = code.strip()
    if re.fullmatch(r"\d{2}-?\d{2}", code):
        return "locarno"
    if re.fullmatch(r"[A-H]\d\d[A-Z].*", code):
        return "ipc"
    return "uspc"


def _norm_code(scheme: str, code: str) -> str:
    """A code in normal form; USPC ``D2-969`` (class-subclass with a dash) is read as ``D2/969``."""
    try:
        return taxonomy.normalize(scheme, code)
    except ValueError:
        if scheme == "uspc" and re.fullmatch(r"D?\d+-\S+", code.strip()):
            return taxonomy.normalize(scheme, code.strip().replace("-", "/", 1))
        raise


def _table(src: Path, metadata: str | os.PathLike | None) -> Path:
    if metadata:
        return Path(metadata).resolve()
    if src.is_file():
        return src
    found = sorted(p for p in src.iterdir() if p.is_file() and p.suffix.lower() in (".csv", ".tsv", ".txt"))
    found = [p for p in found if p.name.lower() not in ("readme.txt",)]
    if len(found) != 1:
        raise SourceError(
            f"{src}: expected one CSV/TSV table of id, code(s), title beside the drawings, found "
            f"{[p.name for p in found] or 'none'}; name it with --metadata"
        )
    return found[0]


def _images(src: Path, metadata: str | os.PathLike | None, scheme: str | None) -> Source:
    table = _table(src, metadata)
    root = src if src.is_dir() else table.parent
    text = table.read_text(encoding="utf-8-sig")
    delim = "\t" if "\t" in text.split("\n", 1)[0] else ","
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delim) if any(c.strip() for c in r)]
    if not rows:
        raise SourceError(f"{table}: empty table")
    head = [c.strip().lower() for c in rows[0]]
    if any(c in head for c in _ID_COLS):
        col = {c: i for i, c in enumerate(head)}
        id_col = next(col[c] for c in _ID_COLS if c in col)
        title_col = next((col[c] for c in _TITLE_COLS if c in col), None)
        image_col = next((col[c] for c in _IMAGE_COLS if c in col), None)
        code_cols = [(s, col[c]) for s, names in _CODE_COLS.items() for c in names if c in col]
        body, first_line = rows[1:], 2
    else:  # no header: id, code(s), title
        id_col, title_col, image_col, body, first_line = 0, 2, None, rows, 1
        code_cols = [(scheme or guess_scheme(rows[0][1] if len(rows[0]) > 1 else ""), 1)]
    if scheme:
        code_cols = [(scheme, i) for _, i in code_cols]
    files: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            if n.lower().endswith(IMAGE_SUFFIXES):
                files.setdefault(n.rsplit(".", 1)[0], Path(folder) / n)

    def items() -> Iterator[Item]:
        seen: set[str] = set()
        for lineno, row in enumerate(body, first_line):
            key = f"{table.name}:{lineno}"
            cell = lambda i, row=row: row[i].strip() if i is not None and i < len(row) else ""  # noqa: E731
            pid = cell(id_col)
            if not pid:
                yield Item(key, None, "row without an id")
                continue
            pid = uspto.normalize_patent_id(pid[2:] if pid.upper().startswith("US") else pid)
            if pid in seen:
                yield Item(key, None, f"duplicate id {pid}")
                continue
            image = cell(image_col)
            path = (root / image) if image else files.get(cell(id_col)) or files.get(pid)
            if path is None or not path.is_file():
                yield Item(key, None, f"no drawing for {pid}")
                continue
            codes: dict[str, list[str]] = {}
            bad = []
            for s, i in code_cols:
                for code in re.split(r"[;|]", cell(i)):
                    if not code.strip():
                        continue
                    try:
                        norm = _norm_code(s, code)
                    except ValueError:
                        bad.append(code.strip())
                        continue
                    if norm not in codes.setdefault(s, []):
                        codes[s].append(norm)
            if bad and not any(codes.values()):
                yield Item(key, None, f"unparsable code(s) {bad} for {pid}")
                continue
            seen.add(pid)
            rel = path.relative_to(root).as_posix()
            patent = Patent(
                id=pid,
                kind="design",
                title=cell(title_col),
                codes={k: v for k, v in codes.items() if v},
                figures=[Figure(path=rel, view="", label="")],
            )
            yield Item(key, patent)

    return Source("images", LABELS["images"], root, items, len(body), layout=table.name)


# -- DeepPatent2 ------------------------------------------------------------------------------------------------
def _deeppatent2(src: Path) -> Source:
    from patent_demo.data.loaders import deeppatent2

    if not src.is_dir():
        raise SourceError(f"{src}: a DeepPatent2 source is a folder of figure images (and JSON records)")
    records = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix.lower() in (".json", ".jsonl"))
    report = LoadReport()
    if records:
        corpus = deeppatent2.load_deeppatent2(records, src, report=report)
    else:
        names = sorted(
            p.relative_to(src).as_posix() for p in src.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES
        )
        if not names:
            raise SourceError(f"{src} holds no DeepPatent2 figures (USD…-YYYYMMDD-D…_n.png) or JSON records")
        corpus = deeppatent2.load_deeppatent2_names(names, root=src, report=report)

    def items() -> Iterator[Item]:
        yield from _report_skips(report, "deeppatent2")
        for p in corpus.patents:
            yield Item(p.id, p)

    layout = "JSON records" if records else "file names"
    return Source("deeppatent2", LABELS["deeppatent2"], src, items, len(corpus.patents), layout=layout)


# -- text ----------------------------------------------------------------------------------------------------------
def _text(src: Path) -> Source:
    from patent_demo.data.loaders import textcorpus

    folder = src if src.is_dir() else src.parent
    jsonl = [src] if src.is_file() else sorted(folder.glob("*.jsonl"))
    if len(jsonl) != 1:
        raise SourceError(f"{src}: expected one JSONL of patents, found {[p.name for p in jsonl] or 'none'}")
    tsvs = sorted(folder.glob("*.tsv"))
    cites = [p for p in tsvs if "citation" in p.name.lower() or "cite" in p.name.lower()]
    fams = [p for p in tsvs if "famil" in p.name.lower()]
    report = LoadReport()
    corpus = textcorpus.load_text_corpus(jsonl[0], report=report)
    for sub in sorted(d for d in folder.iterdir() if d.is_dir()):
        # flat XML records beside the JSONL (cs3245's patsnap-corpus/) carry the priority dates it lacks
        textcorpus.fill_dates(corpus, textcorpus.read_flat_xml_dates(sub))
    pairs = [pair for f in cites for pair in textcorpus.read_pairs(f)]
    family_pairs = [pair for f in fams for pair in textcorpus.read_pairs(f)]
    known = {p.id for p in corpus.patents}
    qrels = textcorpus.qrels_from_pairs((a, b) for a, b in pairs if a in known and b in known)
    for p in corpus.patents:
        for d in qrels.get(p.id, {}):
            if d not in p.citations:
                p.citations.append(d)

    def items() -> Iterator[Item]:
        yield from _report_skips(report, "text")
        for p in corpus.patents:
            yield Item(p.id, p)

    layout = ", ".join(x.name for x in [*jsonl, *cites, *fams])
    src_label = LABELS["text"]
    return Source("text", src_label, folder, items, len(corpus.patents), qrels, family_pairs, layout)
