"""USPTO grant XML (DTD v4.x, 2005 onward): Red Book grant folders and weekly ``ipgYYMMDD.xml`` files.

A Red Book folder holds one patent: ``USD0907292-20210105.XML`` plus its drawing pages
``USD0907292-20210105-D00001.TIF`` … (``-D00000.TIF`` is the gazette figure, a copy of one view).
A weekly grant file glues many ``<?xml …?><!DOCTYPE …><us-patent-grant>`` documents together; it
carries no images.

Patent ids take the form ``US`` + the 8-character Red Book document number: letters (``D``, ``RE``,
``PP``, ``H``, ``T``) then the zero-padded number, e.g. ``USD0907292`` (design D907,292) and
``US06836899`` (utility 6,836,899). Cited US patents are normalised the same way, so a citation can
be matched to a corpus id; US application publications become ``US`` + 11 digits
(``US20030123456``); other countries keep their number with separators removed (``EP1234567``).
Kind codes are dropped from ids and kept in ``Patent.kind_code``.
"""

from __future__ import annotations

import html.entities
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.data.loaders.load_report import LoadReport, codes_dict, log

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_DOCTYPE = re.compile(r"<!DOCTYPE[^\[>]*(\[[^\]]*\])?\s*>", re.S)
_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}
_REDBOOK_XML = re.compile(r"^(?P<stem>[A-Z]{2}[A-Z]*\d+-\d{8})\.xml$", re.I)
_PAGE = re.compile(r"-D(\d{5})\.tiff?$", re.I)
_FIG_NUM = re.compile(r"\bFIG(?:URE)?S?\.?\s*(\d+[A-Z]?)\b", re.I)

# -- identifiers --------------------------------------------------------------------------------------


def normalize_patent_id(number: str, country: str = "US") -> str:
    """One id form for a patent number (see the module docstring).

    >>> normalize_patent_id("D428532"), normalize_patent_id("06836899"), normalize_patent_id("RE41234")
    ('USD0428532', 'US06836899', 'USRE041234')
    >>> normalize_patent_id("2003/0123456"), normalize_patent_id("0 123 456", "EP")
    ('US20030123456', 'EP0123456')
    """
    country = (country or "US").strip().upper()
    num = re.sub(r"[\s/,.\-]", "", (number or "").strip().upper())
    if num.startswith(country) and len(num) > len(country) and country.isalpha():
        num = num[len(country) :]
    if country != "US":
        return country + num
    m = re.fullmatch(r"(D|RE|PP|H|T)?(\d+)", num)
    if m is None:
        return "US" + num
    prefix, digits = m.group(1) or "", m.group(2)
    if not prefix and len(digits) == 11:  # application publication YYYY + 7 digits
        return "US" + digits
    digits = digits.lstrip("0") or "0"
    return "US" + prefix + digits.zfill(8 - len(prefix))


# -- view labels from figure descriptions --------------------------------------------------------------

_VIEW_WORDS = {
    "front": "front",
    "rear": "rear",
    "back": "rear",
    "left": "left",
    "right": "right",
    "top": "top",
    "upper": "top",
    "bottom": "bottom",
    "lower": "bottom",
    "underside": "bottom",
    "side": "side",
    "end": "end",
    "perspective": "perspective",
    "isometric": "perspective",
    "exploded": "exploded",
    "sectional": "section",
    "section": "section",
    "cross": "section",
    "enlarged": "enlarged",
    "detail": "enlarged",
    "partial": "partial",
}
_VIEW_ORDER = [
    "exploded",
    "partial",
    "enlarged",
    "front",
    "rear",
    "left",
    "right",
    "top",
    "bottom",
    "side",
    "end",
    "perspective",
    "section",
]
_VIEW_PHRASE = re.compile(
    r"\b(?:is|are|shows|illustrates|depicts)\s+(?:an?\s+|the\s+)?(?P<phrase>[^;.]*?)\bviews?\b"
    r"(?:\s+(?P<more>[a-z]+(?:\s+[a-z]+)?)\s+views?\b)?",  # "a top view perspective view": both words
    re.I,
)
_VIEW_BARE = re.compile(r"\b(?:is|are)\s+(?:an?\s+|the\s+)?(?P<phrase>[a-z ,]+?)\s+(?:thereof|of)\b", re.I)
_HAGUE = re.compile(r"^\s*(?P<number>\d+\.\d+)\s*:?\s*(?P<text>.*)$")  # "1.1 : Perspective" (Hague designs)
_THE_FIGURE = re.compile(r"^\s*The\s+FIGURE\b", re.I)  # a design with a single figure


def _view_of(words: list[str]) -> str:
    found = {_VIEW_WORDS[w] for w in words if w in _VIEW_WORDS}
    if found & {"left", "right"}:
        found.discard("side")
    if not found & set(_VIEW_ORDER[3:]):
        if {"plan", "planar"} & set(words):
            found.add("top")
        elif {"elevation", "elevational"} & set(words):
            found.add("front")
    return " ".join(v for v in _VIEW_ORDER if v in found)


def view_label(description: str) -> str:
    """A short view label from a figure description, e.g. ``"FIG. 1 is a front perspective view …"``
    gives ``"front perspective"``; ``"top plan view"`` gives ``"top"``; ``"left side elevational view"``
    gives ``"left"``; ``"elevation view"`` gives ``"front"``; ``"a top view perspective view"`` gives
    ``"top perspective"``; ``"FIG. 3 is a bottom thereof"`` (no word "view") gives ``"bottom"``. Returns
    ``""`` when no view is named."""
    m = _VIEW_PHRASE.search(description)
    if m is not None:
        return _view_of(re.findall(r"[a-z]+", f"{m.group('phrase')} {m.group('more') or ''}".lower()))
    m = _VIEW_BARE.search(description)
    words = re.findall(r"[a-z]+", m.group("phrase").lower()) if m else []
    return _view_of(words) if words and all(w in _VIEW_WORDS or w == "and" for w in words) else ""


def figure_descriptions(paragraphs: Iterable[str]) -> tuple[list[dict], list[str]]:
    """Split ``description-of-drawings`` paragraphs into per-figure records
    ``{"label": "FIG. 1", "number": "1", "view": "front perspective", "text": ...}`` and the other
    paragraphs (broken-line notes and the like). A Hague design's reproductions (``"1.1 : Perspective"``)
    are figures labelled ``"1.1"``; a single-figure design's ``"The FIGURE is a front view …"`` is ``"FIG. 1"``."""
    figures, notes = [], []
    for text in paragraphs:
        hague = _HAGUE.match(text)
        if hague is not None and len(hague.group("text")) < 80:
            number, words = hague.group("number"), re.findall(r"[a-z]+", hague.group("text").lower())
            figures.append({"label": number, "number": number, "view": _view_of(words), "text": text})
            continue
        if _THE_FIGURE.match(text):
            figures.append({"label": "FIG. 1", "number": "1", "view": view_label(text), "text": text})
            continue
        m = _FIG_NUM.match(text.strip())
        if m is None or re.match(r"\s*FIG(?:URE)?S\b", text, re.I):
            notes.append(text)
            continue
        number = m.group(1).upper()
        figures.append({"label": f"FIG. {number}", "number": number, "view": view_label(text), "text": text})
    return figures, notes


# -- XML ------------------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    """Drop the XML declaration and DOCTYPE and turn HTML named entities into characters, so a
    document parses without its DTD."""
    text = _XML_DECL.sub("", text, count=1)
    text = _DOCTYPE.sub("", text, count=1)

    def entity(m: re.Match) -> str:
        name = m.group(1)
        if name in _XML_ENTITIES:
            return m.group(0)
        char = html.entities.html5.get(name + ";")
        return char if char is not None else f"&amp;{name};"

    return _ENTITY.sub(entity, text)


def _parse_xml(text: str, where: str) -> ET.Element:
    try:
        return ET.fromstring(_clean(text))
    except ET.ParseError as err:
        raise ValueError(f"{where}: malformed XML ({err})") from None


def iter_grant_documents(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` of each XML document in a weekly grant file, reading line by
    line so memory holds one document at a time."""
    buf: list[str] = []
    start = 1
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.lstrip().startswith("<?xml") and buf:
                yield start, "".join(buf)
                buf, start = [], lineno
            buf.append(line)
    if "".join(buf).strip():
        yield start, "".join(buf)


def _text(el: ET.Element | None) -> str:
    return " ".join("".join(el.itertext()).split()) if el is not None else ""


def _iso(date: str) -> str:
    date = (date or "").strip()
    return f"{date[:4]}-{date[4:6]}-{date[6:8]}" if re.fullmatch(r"\d{8}", date) else ""


def _locarno(raw: str) -> str:
    raw = raw.strip()
    return f"{raw[:2]}-{raw[2:4]}" if re.fullmatch(r"\d{4}", raw) else raw


def _legacy_ipc(raw: str) -> str:
    """IPC-7 ``classification-ipc`` strings: 4-character subclass, 3-character main group, then the
    subgroup, e.g. ``"A45F  504"`` is ``A45F 5/04`` and ``"C07C24900"`` is ``C07C 249/00``."""
    m = re.fullmatch(r"([A-H]\d\d[A-Z])([ \d]{3})(\d{2,})", raw.rstrip())
    if m is None or not m.group(2).strip():
        return raw.strip()
    return f"{m.group(1)} {int(m.group(2))}/{m.group(3)}"


def _structured(el: ET.Element) -> str:
    parts = [el.findtext(t, "").strip() for t in ("section", "class", "subclass", "main-group", "subgroup")]
    return f"{''.join(parts[:3])} {parts[3]}/{parts[4]}" if all(parts) else ""


def _name(book: ET.Element | None) -> str:
    """An ``addressbook``'s name: the organisation's, else ``"First Last"``."""
    if book is None:
        return ""
    org = _text(book.find("orgname"))
    person = " ".join(x for x in (_text(book.find("first-name")), _text(book.find("last-name"))) if x)
    return org or person


def parties(bib: ET.Element) -> tuple[list[str], list[str], list[str]]:
    """``(inventors, applicants, assignees)`` of a grant's bibliographic data, names in the grant's order.

    Grants from 2013 on list ``us-parties/inventors``; earlier ones (``parties/applicants``) name the
    inventors as applicants of type ``applicant-inventor``, who are then the inventors and not listed as
    applicants."""
    inventors, applicants = [], []
    for el in bib.iterfind("us-parties/inventors/inventor"):
        inventors.append(_name(el.find("addressbook")))
    for el in [
        *bib.iterfind("us-parties/us-applicants/us-applicant"),
        *bib.iterfind("parties/applicants/applicant"),
    ]:
        name = _name(el.find("addressbook"))
        (inventors if el.get("app-type") == "applicant-inventor" else applicants).append(name)
    for el in bib.iterfind("parties/inventors/inventor"):
        inventors.append(_name(el.find("addressbook")))
    assignees = [_name(el.find("addressbook")) or _name(el) for el in bib.iterfind("assignees/assignee")]

    def unique(names: list[str]) -> list[str]:
        return list(dict.fromkeys(n for n in names if n))

    return unique(inventors), unique(applicants), unique(assignees)


def parse_grant(
    xml: str | ET.Element, where: str = "<xml>", report: LoadReport | None = None
) -> Patent | None:
    """One ``us-patent-grant`` document → ``Patent`` (no figures), or ``None`` for a document that is
    not a design or utility grant (plant, SIR, reissue, sequence listing; counted in ``report``).

    Design: Locarno code, USPC, title, figure descriptions (``extra["figure_descriptions"]``),
    description text. Utility: title, abstract, IPC (``classifications-ipcr`` or legacy
    ``classification-ipc``), CPC (``classifications-cpc``). Both: publication, filing and earliest
    priority date, country, kind code, claims, cited patent ids (``extra["cited_by_examiner"]`` those the
    examiner cited), application number (``extra["application_number"]``), inventors, applicants and
    assignees (``parties``).
    """
    root = _parse_xml(xml, where) if isinstance(xml, str) else xml
    if root.tag != "us-patent-grant":
        if report is not None:
            report.skip(f"<{root.tag}> document")
        return None
    bib = root.find("us-bibliographic-data-grant")
    pub = bib.find("publication-reference/document-id") if bib is not None else None
    if pub is None or not pub.findtext("doc-number"):
        raise ValueError(f"{where}: us-patent-grant without publication-reference/doc-number")
    appl = bib.find("application-reference")
    appl_type = appl.get("appl-type", "") if appl is not None else ""
    number = pub.findtext("doc-number", "").strip()
    if appl_type not in ("design", "utility"):
        if report is not None:
            report.skip(f"appl-type {appl_type or '?'}")
        return None
    pid = normalize_patent_id(number, pub.findtext("country", "US"))

    locarno = [_locarno(_text(e)) for e in bib.findall("classification-locarno/main-classification")]
    uspc_el = bib.find("classification-national")
    uspc = []
    if uspc_el is not None:
        uspc = [e.text or "" for e in uspc_el.findall("main-classification")]  # fixed width: keep spaces
    ipc = [_structured(e) for e in bib.findall("classifications-ipcr/classification-ipcr")]
    for legacy in bib.findall("classification-ipc"):
        ipc += [
            _legacy_ipc(e.text or "")
            for e in legacy
            if e.tag in ("main-classification", "further-classification")
        ]
    cpc = [_structured(e) for e in bib.iterfind("classifications-cpc//classification-cpc")]
    codes = codes_dict(report, locarno=locarno, ipc=ipc, cpc=cpc, uspc=uspc)

    citations, by_examiner, npl = [], [], []
    for cit in bib.findall("us-references-cited/us-citation") + bib.findall("references-cited/citation"):
        doc = cit.find("patcit/document-id")
        other = _text(cit.find("nplcit/othercit"))
        if other:  # non-patent literature: kept as printed, with who cited it
            npl.append({"text": other[:1000], "examiner": "examiner" in cit.findtext("category", "")})
        if doc is None or not doc.findtext("doc-number"):
            continue
        cid = normalize_patent_id(doc.findtext("doc-number", ""), doc.findtext("country", "US"))
        if cid not in citations:
            citations.append(cid)
            if "examiner" in cit.findtext("category", ""):
                by_examiner.append(cid)

    paragraphs = [_text(p) for p in root.iterfind("description/description-of-drawings/p")]
    figs, notes = figure_descriptions(p for p in paragraphs if p)
    extra: dict = {}
    edition = bib.findtext("classification-locarno/edition", "").strip()
    if edition.isdigit():
        extra["locarno_edition"] = int(edition)
    if figs:
        extra["figure_descriptions"] = figs
    if notes:
        extra["drawing_notes"] = notes
    if by_examiner:
        extra["cited_by_examiner"] = by_examiner
    if npl:
        extra["npl_citations"] = npl
    appl_no = appl.findtext("document-id/doc-number", "").strip() if appl is not None else ""
    if appl_no:
        extra["application_number"] = appl_no
    related = []
    for doc in bib.iterfind("us-related-documents//parent-doc"):
        app = doc.findtext("document-id/doc-number", "").strip()
        grant = doc.find("parent-grant-document/document-id")
        refs = [f"application:{app}" if app else ""]
        if grant is not None and grant.findtext("doc-number", "").strip():
            number = grant.findtext("doc-number", "").strip()
            refs.append("grant:" + normalize_patent_id(number, grant.findtext("country", "US")))
        related += [r for r in refs if r and r not in related]
    if related:  # parent applications and grants (continuations, divisions): the patent's family
        extra["related"] = related
    n_sheets = bib.findtext("figures/number-of-drawing-sheets", "").strip()
    if n_sheets.isdigit():
        extra["n_sheets"] = int(n_sheets)

    priorities = [_iso(d.text or "") for d in bib.iterfind("priority-claims/priority-claim/date")]
    priorities = [d for d in priorities if d]
    abstract = _text(root.find("abstract"))
    inventors, applicants, assignees = parties(bib)
    text = abstract if appl_type == "utility" else "\n".join(p for p in paragraphs if p)
    return Patent(
        id=pid,
        kind=appl_type,
        title=_text(bib.find("invention-title")),
        text=text,
        codes=codes,
        date=_iso(pub.findtext("date", "")),
        citations=citations,
        extra=extra,
        filing_date=_iso(appl.findtext("document-id/date", "") if appl is not None else ""),
        priority_date=min(priorities) if priorities else "",
        country=pub.findtext("country", "").strip() or pid[:2],
        kind_code=pub.findtext("kind", "").strip(),
        claims="\n".join(c for c in (_text(e) for e in root.iterfind("claims/claim")) if c),
        inventors=inventors,
        applicants=applicants,
        assignees=assignees,
    )


def load_grant_xml(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    root: str | os.PathLike | None = None,
    report: LoadReport | None = None,
    name: str = "",
) -> Corpus:
    """Weekly grant files (a file, a folder of ``*.xml``, or a list of files) → text-only ``Corpus``.

    A patent that appears in several files is kept once (first seen; counted as ``"duplicate"``).
    ``root`` defaults to the folder of the first file.
    """
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        files = sorted(p.glob("*.xml")) + sorted(p.glob("*.XML")) if p.is_dir() else [p]
    else:
        files = [Path(p) for p in paths]
    if not files:
        raise FileNotFoundError(f"no grant XML files in {paths}")
    report = report if report is not None else LoadReport()
    patents: dict[str, Patent] = {}
    for f in files:
        for lineno, doc in iter_grant_documents(f):
            patent = parse_grant(doc, where=f"{f}:{lineno}", report=report)
            if patent is None:
                continue
            if patent.id in patents:
                report.skip("duplicate")
                continue
            patent.extra["source"] = f.name
            patents[patent.id] = patent
    report.loaded = len(patents)
    log.info("grant XML %s: %s", name or files[0].parent, report.summary())
    return Corpus(
        root=Path(root) if root is not None else files[0].parent,
        patents=list(patents.values()),
        name=name or files[0].parent.name,
    )


def _pages_in_folder(xml_path: Path, root_el: ET.Element) -> list[Path]:
    """The drawing-page files of a Red Book folder: those the XML names, else those named after it."""
    folder = xml_path.parent
    names = [img.get("file", "") for img in root_el.iterfind("drawings/figure/img")]
    files = [folder / n for n in names if n and (folder / n).is_file()]
    if not files:
        files = [
            f for f in folder.iterdir() if f.name.startswith(xml_path.stem + "-D") and _PAGE.search(f.name)
        ]
    return files


def page_stem(name: str) -> str:
    """The document stem of a drawing-page file name (``USD0907292-20210105-D00001.TIF`` →
    ``USD0907292-20210105``), or ``""`` when the name is not a page."""
    m = _PAGE.search(name)
    return name[: m.start()] if m else ""


def attach_pages(patent: Patent, files: Iterable[Path], root: Path) -> None:
    """Give ``patent`` its drawing pages as figures (paths relative to ``root``; see ``load_redbook``)."""
    pages = sorted((int(_PAGE.search(f.name).group(1)), f) for f in files if _PAGE.search(f.name))
    og = [f for n, f in pages if n == 0]
    if og:
        patent.extra["og_figure"] = og[0].relative_to(root).as_posix()
    pages = [(n, f) for n, f in pages if n > 0]
    descs = patent.extra.get("figure_descriptions", [])
    one_per_page = len(descs) == len(pages) and patent.extra.get("n_sheets", len(pages)) == len(pages)
    figures = []
    for i, (n, f) in enumerate(pages):
        rel = f.relative_to(root).as_posix()
        if one_per_page:
            d = descs[i]
            figures.append(
                Figure(path=rel, view=d["view"] or "page", label=d["label"], description=d["text"])
            )
        else:
            figures.append(Figure(path=rel, view="page", label=f"sheet {n}"))
    patent.figures = figures


def page_names(root_el: ET.Element) -> list[str]:
    """The drawing-page file names a grant document lists (``drawings/figure/img/@file``)."""
    return [n for n in (img.get("file", "") for img in root_el.iterfind("drawings/figure/img")) if n]


def parse_xml(text: str, where: str) -> ET.Element:
    """Parse one grant document without its DTD (``ValueError`` naming ``where`` when malformed)."""
    return _parse_xml(text, where)


def read_redbook_xml(xml_path: Path, root: Path, report: LoadReport | None = None) -> Patent | None:
    """One Red Book grant folder's XML → ``Patent`` with its pages as figures (relative to ``root``),
    or ``None`` for a document that is not a design or utility grant (counted in ``report``)."""
    root_el = _parse_xml(xml_path.read_text(encoding="utf-8", errors="replace"), str(xml_path))
    patent = parse_grant(root_el, where=str(xml_path), report=report)
    if patent is not None:
        attach_pages(patent, _pages_in_folder(xml_path, root_el), root)
    return patent


def iter_redbook_xml(root: Path) -> Iterator[Path]:
    """Red Book grant XML files under ``root`` (recursively, sorted within each folder)."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if _REDBOOK_XML.match(name):
                yield Path(folder) / name


def load_redbook(root: str | os.PathLike, report: LoadReport | None = None, name: str = "") -> Corpus:
    """Red Book grant folders under ``root`` (searched recursively) → ``Corpus`` read in place.

    Each drawing page becomes a figure (paths relative to ``root``). When the patent has exactly one
    figure per page, a page takes its figure's label (``"FIG. 3"``), view (``"top"``) and description;
    otherwise it is ``view="page"``, ``label="sheet n"``. The gazette figure ``-D00000`` is not a
    figure (it repeats one view); its path is kept in ``extra["og_figure"]``.
    """
    root = Path(root)
    report = report if report is not None else LoadReport()
    xml_files = sorted(iter_redbook_xml(root))
    if not xml_files:
        raise FileNotFoundError(f"no Red Book grant XML (US…-YYYYMMDD.XML) under {root}")
    patents: dict[str, Patent] = {}
    for xml_path in xml_files:
        patent = read_redbook_xml(xml_path, root, report)
        if patent is None:
            continue
        if patent.id in patents:
            report.skip("duplicate")
            continue
        patents[patent.id] = patent
    report.loaded = len(patents)
    log.info("Red Book %s: %s", root, report.summary())
    return Corpus(root=root, patents=list(patents.values()), name=name or root.name)
