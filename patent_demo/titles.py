"""Titles of classification codes: the English names of Locarno classes and subclasses and of IPC/CPC
sections, classes, subclasses and groups.

A built-in table covers the 32 Locarno main classes with their subclasses (``data/locarno_classes.tsv``),
the IPC sections and the IPC subclasses the demo uses; ``load_titles`` reads a fuller table (TSV or
JSON, Locarno and IPC codes together) that ``locarno_title`` / ``ipc_title`` take instead. A corpus may
carry its own table (``titles.tsv`` beside its manifest, which ``patent_demo.data.real`` writes from the
IPC scheme in the data folder): ``corpus_titles`` is the built-in table with it on top. For USPC the
built-in table holds the titles of the design classes (D1 … D34, D99; ``uspc_title``); other USPC classes
and every subclass have no title here (``USPC_NO_TITLE``). Codes are parsed with :mod:`patent_demo.taxonomy`.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from patent_demo.taxonomy import IPC, Locarno, normalize, parse_ipc, parse_locarno, parse_uspc

_DATA = Path(__file__).resolve().parent / "data"
CORPUS_TITLES = "titles.tsv"  # a corpus's own title table, beside its manifest
USPC_NO_TITLE = "title not available offline (no USPC title table in the data)"

# The US design classes as the USPTO's Manual of Classification names them (D31 and D33 are not in use).
USPC_DESIGN_CLASSES = {
    "D1": "Edible products",
    "D2": "Apparel and haberdashery",
    "D3": "Travel goods, personal belongings, and storage or carrying articles",
    "D4": "Brushware",
    "D5": "Textile or paper yard goods; sheet material",
    "D6": "Furnishings",
    "D7": "Equipment for preparing or serving food or drink not elsewhere specified",
    "D8": "Tools and hardware",
    "D9": "Packages and containers for goods",
    "D10": "Measuring, testing, or signalling instruments",
    "D11": "Jewelry, symbolic insignia, and ornaments",
    "D12": "Transportation",
    "D13": "Equipment for production, distribution, or transformation of energy",
    "D14": "Recording, communication, or information retrieval equipment",
    "D15": "Machines not elsewhere specified",
    "D16": "Photography and optical equipment",
    "D17": "Musical instruments",
    "D18": "Printing and office machinery",
    "D19": "Office supplies; artists' and teachers' materials",
    "D20": "Sales and advertising equipment",
    "D21": "Games, toys, and sports goods",
    "D22": "Arms, pyrotechnics, hunting and fishing equipment",
    "D23": "Environmental heating and cooling; fluid handling and sanitary equipment",
    "D24": "Medical and laboratory equipment",
    "D25": "Building units and construction elements",
    "D26": "Lighting",
    "D27": "Tobacco and smokers' supplies",
    "D28": "Cosmetic products and toilet articles",
    "D29": "Equipment for safety, protection, and rescue",
    "D30": "Animal husbandry",
    "D32": "Washing, cleaning, or drying machines",
    "D34": "Material or article handling equipment",
    "D99": "Miscellaneous",
}

_IPC_SECTION_TITLES = {
    "A": "Human necessities",
    "B": "Performing operations; transporting",
    "C": "Chemistry; metallurgy",
    "D": "Textiles; paper",
    "E": "Fixed constructions",
    "F": "Mechanical engineering; lighting; heating; weapons; blasting",
    "G": "Physics",
    "H": "Electricity",
    "Y": "New technology developments across sections (CPC only)",
}
_IPC_SUBCLASS_TITLES = {
    "A43B": "Footwear and its parts",
    "A45C": "Purses, luggage, hand-carried bags",
    "A47B": "Tables, desks, office furniture, cabinets, drawers",
    "A47C": "Chairs, sofas, beds",
    "A47G": "Household and table equipment",
    "A47J": "Kitchen equipment; coffee mills; spice mills; beverage makers",
    "A47L": "Domestic washing or cleaning; suction cleaners",
    "A61B": "Diagnosis; surgery; identification",
    "A61F": "Implantable filters, prostheses, bandages, orthopaedic and other body aids",
    "A61K": "Preparations for medical, dental or toilet purposes",
    "A63B": "Apparatus for physical training, gymnastics, ball games",
    "A63H": "Toys",
    "B25G": "Handles for hand implements",
    "B26B": "Hand-held cutting tools",
    "B60R": "Vehicle fittings or parts not otherwise provided for",
    "B62J": "Cycle saddles and cycle accessories",
    "B62K": "Cycles; cycle frames, steering and rider-operated controls",
    "B65D": "Containers for storage or transport; packaging elements",
    "E03C": "Domestic plumbing installations; sinks",
    "E03D": "Water-closets or urinals with flushing devices",
    "E05B": "Locks and their accessories",
    "F21S": "Non-portable lighting devices",
    "F21V": "Functional features or details of lighting devices",
    "F24F": "Air conditioning; air humidification; ventilation",
    "G06F": "Electric digital data processing",
    "G06K": "Recognition, presentation and record carriers of data",
    "G06Q": "Data processing for administrative, commercial or financial purposes",
    "H01L": "Semiconductor devices; other electric solid-state devices",
    "H01M": "Batteries and other direct conversion of chemical into electrical energy",
    "H02J": "Circuits or systems for supplying or distributing electric power",
    "H04L": "Transmission of digital information",
    "H04N": "Pictorial communication, e.g. television",
    "H04W": "Wireless communication networks",
}


def _title_key(code: Any) -> str:
    """The lookup key of a title: Locarno ``"06"``/``"06-01"``; IPC ``"A"``, ``"A47"``, ``"A47C"``,
    ``"A47C 7/02"``; ``""`` when ``code`` is none of these."""
    if isinstance(code, int) and not isinstance(code, bool):
        code = f"{code:02d}"
    if isinstance(code, Locarno | IPC):
        return str(code)
    if not isinstance(code, str):
        return ""
    text = code.strip().upper()
    if re.fullmatch(r"[A-HY](\d\d)?", text):
        return text
    for scheme in ("locarno", "cpc"):
        try:
            return normalize(scheme, text)
        except ValueError:
            continue
    return ""


@lru_cache(maxsize=1)
def _builtin_titles() -> dict[str, str]:
    titles = load_titles(_DATA / "locarno_classes.tsv")
    titles.update(_IPC_SECTION_TITLES)
    titles.update(_IPC_SUBCLASS_TITLES)
    return titles


def locarno_title(code: Any, titles: Mapping[str, str] | None = None) -> str:
    """The English title of a Locarno main class (``"06"``) or subclass (``"06-01"``) from ``titles``
    (see ``load_titles``) or the built-in table; ``""`` when the table lacks it. Malformed codes raise."""
    key = str(parse_locarno(code))
    return (titles if titles is not None else _builtin_titles()).get(key, "")


def ipc_title(code: Any, titles: Mapping[str, str] | None = None) -> str:
    """The title of an IPC/CPC section, class, subclass or symbol from ``titles`` or the built-in table
    (sections and the subclasses the demo uses). A group symbol falls back to its main group, then its
    subclass; ``""`` when unknown or malformed."""
    table = titles if titles is not None else _builtin_titles()
    key = _title_key(code)
    if not key or key[0].isdigit():
        return ""
    candidates = [key]
    if " " in key:
        parsed = parse_ipc(key, "cpc")
        candidates += [parsed.group, parsed.subclass]
    return next((table[c] for c in candidates if c in table), "")


def uspc_title(code: Any) -> str:
    """The title of a US design class for a USPC code (``"D28/47"`` → ``"Cosmetic products and toilet
    articles"``, the class's: subclass titles are not held here); ``""`` for a utility class or a code that
    does not parse."""
    try:
        return USPC_DESIGN_CLASSES.get(parse_uspc(code).cls, "")
    except ValueError:
        return ""


_CODE_COLUMNS = ("code", "symbol", "subclass", "class", "main_class", "section")
_TITLE_COLUMNS = ("title", "title_en", "en", "text", "label", "name")


def _record_title(record: Mapping[str, Any]) -> str:
    for name in _TITLE_COLUMNS:
        value = record.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _walk_json(node: Any, out: dict[str, str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk_json(item, out)
        return
    if not isinstance(node, Mapping):
        return
    code = next((node[c] for c in (*_CODE_COLUMNS, "number") if c in node), None)
    title = _record_title(node)
    if code is not None and title and _title_key(code):
        out[_title_key(code)] = title
    for key, value in node.items():
        if isinstance(value, str) and _title_key(key) and key not in _TITLE_COLUMNS:
            out[_title_key(key)] = value.strip()
        elif isinstance(value, Mapping) and _title_key(key) and _record_title(value):
            out[_title_key(key)] = _record_title(value)
        if isinstance(value, Mapping | list):
            _walk_json(value, out)


def load_titles(path: str | Path) -> dict[str, str]:
    """Read a title table into ``{normalised code: title}`` (Locarno and IPC codes can share one table).

    A TSV needs a header with a code column (``code``, ``symbol``, ``subclass``, ``class``,
    ``main_class`` or ``section``, the first present wins) and a title column (``title``, ``title_en``,
    ``en``, ``text``, ``label`` or ``name``). A JSON file may be ``{code: title}``, ``{code: {"en": title}}``,
    a list of records, or a tree of records with ``children``; it is searched throughout.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no title table at {path}")
    out: dict[str, str] = {}
    if path.suffix.lower() == ".json":
        with path.open(encoding="utf-8") as f:
            _walk_json(json.load(f), out)
        return out
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        header = reader.fieldnames or []
        code_col = next((c for c in _CODE_COLUMNS if c in header), None)
        title_col = next((c for c in _TITLE_COLUMNS if c in header), None)
        if code_col is None or title_col is None:
            raise ValueError(
                f"{path}: a title table needs a code column ({', '.join(_CODE_COLUMNS)}) and a title "
                f"column ({', '.join(_TITLE_COLUMNS)}); its header is {header}"
            )
        for line, row in enumerate(reader, start=2):
            key = _title_key(row.get(code_col) or "")
            if not key:
                raise ValueError(f"{path}:{line}: {row.get(code_col)!r} is not a Locarno or IPC code")
            out[key] = (row.get(title_col) or "").strip()
    return out


def corpus_titles(corpus) -> dict[str, str]:
    """The built-in titles and the corpus's own table (``CORPUS_TITLES`` in its folder) for the codes the
    built-in one lacks; read once per corpus."""
    path = Path(corpus.root) / CORPUS_TITLES
    return corpus.derived(
        "titles", lambda: {**(load_titles(path) if path.is_file() else {}), **_builtin_titles()}
    )


def write_titles(tables: list[str | Path], path: str | Path) -> int:
    """Join title tables (``load_titles`` forms) into one TSV ``code<TAB>title`` at ``path`` (a later
    table wins a code); returns the number of codes. Nothing is written when no table exists."""
    out: dict[str, str] = {}
    for table in tables:
        if Path(table).is_file():
            out.update(load_titles(table))
    if out:
        rows = "".join(f"{code}\t{' '.join(title.split())}\n" for code, title in sorted(out.items()))
        Path(path).write_text("code\ttitle\n" + rows, encoding="utf-8")
    return len(out)
