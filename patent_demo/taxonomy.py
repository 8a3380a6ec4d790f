"""Patent classification codes: parsing and normalising every printed form, and their levels.

Three schemes are handled:

* **Locarno** (industrial designs): main class ``"06"`` → subclass ``"06-01"``. Patents print the code
  as ``0601``, ``06-01``, ``06.01``, ``6-1``, ``LOC (13) Cl. 06-01``; USPTO grant XML holds it in
  ``<classification-locarno>`` as ``<edition>13</edition><main-classification>0601</main-classification>``.
* **IPC / CPC** (utility patents): section ``"A"`` → class ``"A47"`` → subclass ``"A47C"`` → group
  ``"A47C 7/02"``. Printed as ``A47C 7/02``, ``A47C7/02``, ``B01D-053/04``; fixed width as
  ``A47C0007020000`` (4 + 4 + 6 characters) or, in IPC-7 XML, ``A47C  702`` (4 + 3 + rest).
* **USPC** (US national): ``D6/369``, ``297/217.1``; XML fixed width ``D 6369``.

Every parser raises ``ValueError`` naming the string and the accepted forms. The titles of codes are in
:mod:`patent_demo.titles`.

The relevance between two items (HMCL's h(i, j), DSSDNet's domain label t) is in
:mod:`patent_demo.hierarchy`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

SCHEMES = ("locarno", "ipc", "cpc", "uspc")

LOCARNO_FORMS = "'0601', '06-01', '06.01', '6-1', '06' (main class only), 'LOC (13) Cl. 06-01'"
IPC_FORMS = (
    "'A47C 7/02', 'A47C7/02', 'B01D-053/04', 'A47C0007020000' (fixed width), "
    "'A47C  702' (IPC-7 fixed width), 'A47C' (subclass only)"
)
USPC_FORMS = "'D6/369', 'D 6/369', '297/217.1', '68/181 R', 'D 6369' (XML fixed width)"

MAX_CODE_CHARS = 100  # longer than any printed form ("Int. Cl. 7: A47C 7/02 (2006.01)" has 31)


def _capped(code: str, what: str, forms: str) -> str:
    """``code`` when it is at most ``MAX_CODE_CHARS`` long, else ``ValueError``: checked before any regex
    or cache sees the string, so no input length can make parsing slow or fill the parse caches."""
    if len(code) > MAX_CODE_CHARS:
        head = " ".join(code[:24].split())
        raise ValueError(
            f"not {what}: {head!r}… has {len(code):,} characters, a code at most {MAX_CODE_CHARS}; "
            f"accepted forms: {forms}"
        )
    return code


def _collapse(code: str) -> str:
    """Any run of whitespace (NBSP and other Unicode spaces included) as one space, stripped: linear."""
    return " ".join(code.split())


# ----------------------------------------------------------------------------------------------
# Locarno
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Locarno:
    """A Locarno code. ``main`` is ``"06"``, ``subclass`` is ``"06-01"`` (``""`` for a main class
    alone), ``edition`` the Locarno edition when the source states it. The edition is provenance,
    not identity: it takes no part in equality or hashing."""

    main: str
    subclass: str = ""
    edition: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d\d", self.main) or not 1 <= int(self.main) <= 32:
            raise ValueError(f"Locarno main class must be two digits 01-32, got {self.main!r}")
        if self.subclass and not re.fullmatch(re.escape(self.main) + r"-\d\d", self.subclass):
            raise ValueError(f"Locarno subclass {self.subclass!r} must read '{self.main}-NN'")

    def __str__(self) -> str:
        return self.subclass or self.main

    def key(self, level: str) -> str:
        """The code at ``level``: ``"subclass"`` → ``"06-01"`` (``""`` if unknown); ``"main"`` or
        ``"class"`` → ``"06"``."""
        if level == "subclass":
            return self.subclass
        if level in ("main", "class"):
            return self.main
        raise ValueError(f"unknown Locarno level {level!r}; expected 'subclass', 'main' or 'class'")


# The highest subclass number of each Locarno main class (edition 9 numbering; 99 "miscellaneous" exists
# in classes 01-30, classes 31 and 32 have the single subclass 00). Numbers left vacant by later
# editions (01-05, 03-02, 15-08, 19-05) are accepted: older grants print them.
_LOCARNO_LAST_SUBCLASS = {
    1: 6,
    2: 7,
    3: 4,
    4: 4,
    5: 6,
    6: 13,
    7: 8,
    8: 10,
    9: 9,
    10: 7,
    11: 5,
    12: 16,
    13: 3,
    14: 4,
    15: 9,
    16: 6,
    17: 5,
    18: 4,
    19: 8,
    20: 3,
    21: 4,
    22: 6,
    23: 5,
    24: 4,
    25: 4,
    26: 6,
    27: 6,
    28: 4,
    29: 2,
    30: 9,
    31: 0,
    32: 0,
}


def locarno_subclass_exists(main: int, sub: int) -> bool:
    """Whether ``main-sub`` is a subclass of the Locarno table (``_LOCARNO_LAST_SUBCLASS``)."""
    last = _LOCARNO_LAST_SUBCLASS.get(main)
    if last is None:
        return False
    if last == 0:
        return sub == 0
    return 1 <= sub <= last or sub == 99


_LOC_PREFIX = re.compile(r"(?:LOC\s*(?:\(\s*(\d{1,2})\s*\))?\s*)?(?:CL\s*\.?\s*)?(.*)", re.S)
_LOC_FOUR = re.compile(r"(\d\d)(\d\d)")
_LOC_SPLIT = re.compile(r"(\d{1,2})(?:(?:\s*[-./]\s*|\s+)(\d{1,2}))?")


def _locarno_error(code: object, reason: str = "") -> ValueError:
    return ValueError(f"not a Locarno code: {code!r}{reason}; accepted forms: {LOCARNO_FORMS}")


@lru_cache(maxsize=65536)
def _parse_locarno_str(code: str, edition: int | None) -> Locarno:
    m = _LOC_PREFIX.fullmatch(_collapse(code).upper())
    printed_edition, rest = m.group(1), m.group(2).strip()
    found = _LOC_FOUR.fullmatch(rest) or _LOC_SPLIT.fullmatch(rest)
    if not rest or not found:
        raise _locarno_error(code)
    main_no, sub_no = found.group(1), found.group(2)
    if not 1 <= int(main_no) <= 32:
        raise _locarno_error(code, f" (main class {int(main_no):02d} is outside 01-32)")
    main = f"{int(main_no):02d}"
    if sub_no is not None and not locarno_subclass_exists(int(main_no), int(sub_no)):
        raise _locarno_error(code, f" (class {main} has no subclass {int(sub_no):02d})")
    subclass = f"{main}-{int(sub_no):02d}" if sub_no is not None else ""
    if printed_edition is not None:
        edition = int(printed_edition)
    return Locarno(main, subclass, edition)


def parse_locarno(code: Any, edition: int | None = None) -> Locarno:
    """Parse a Locarno code in any printed form, an XML ``<classification-locarno>`` element, a dict of
    its fields, or a ``Locarno`` (returned unchanged). ``edition`` applies when the code states none."""
    if isinstance(code, Locarno):
        return code
    if isinstance(code, Mapping) or hasattr(code, "findtext"):
        return locarno_from_xml(code)
    if not isinstance(code, str):
        raise _locarno_error(code)
    return _parse_locarno_str(_capped(code, "a Locarno code", LOCARNO_FORMS), edition)


def _xml_fields(element_or_dict: Any, container: str, names: Sequence[str]) -> dict[str, str]:
    """Read child fields from an ElementTree/lxml element (or a dict of them); ``-`` and ``_`` in keys
    are interchangeable. A parent element is searched for its first ``container`` descendant."""
    if isinstance(element_or_dict, Mapping):
        flat = {str(k).replace("_", "-"): v for k, v in element_or_dict.items()}
        return {n: "" if flat.get(n) is None else str(flat[n]).strip() for n in names}
    element = element_or_dict
    tag = str(getattr(element, "tag", ""))
    if tag.rsplit("}", 1)[-1] != container:
        inner = element.find(f".//{container}")
        if inner is None:
            raise ValueError(f"no <{container}> in element <{tag}>")
        element = inner
    return {n: (element.findtext(n) or "").strip() for n in names}


def locarno_from_xml(element_or_dict: Any) -> Locarno:
    """Read ``<classification-locarno>`` (``<edition>``, ``<main-classification>``, e.g. ``13`` and
    ``0601``) from an element, a parent element, or a dict ``{"edition": ..., "main-classification": ...}``."""
    fields = _xml_fields(element_or_dict, "classification-locarno", ("edition", "main-classification"))
    edition = int(fields["edition"]) if fields["edition"].isdigit() else None
    return parse_locarno(fields["main-classification"], edition)


# ----------------------------------------------------------------------------------------------
# IPC / CPC
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IPC:
    """An IPC or CPC symbol: ``section`` ``"A"``, ``cls`` ``"A47"``, ``subclass`` ``"A47C"``,
    ``main_group`` ``"7"`` and ``subgroup`` ``"02"`` (both ``""`` for a subclass alone)."""

    section: str
    cls: str
    subclass: str
    main_group: str = ""
    subgroup: str = ""

    def __str__(self) -> str:
        return f"{self.subclass} {self.main_group}/{self.subgroup}" if self.main_group else self.subclass

    @property
    def group(self) -> str:
        """The main group symbol (``"A47C 7/00"``), or ``""`` for a subclass alone."""
        return f"{self.subclass} {self.main_group}/00" if self.main_group else ""

    def key(self, level: str) -> str:
        """The code at ``level``: ``"section"``, ``"class"``, ``"subclass"``, ``"group"`` (main group)
        or ``"symbol"`` (the full code)."""
        keys = {
            "section": self.section,
            "class": self.cls,
            "subclass": self.subclass,
            "group": self.group,
            "symbol": str(self),
        }
        if level not in keys:
            raise ValueError(f"unknown IPC level {level!r}; expected one of {', '.join(keys)}")
        return keys[level]


_IPC_LABEL = re.compile(r"^(?:INT\s*\.?\s*CL\s*\.?\s*\d*\s*:?|IPC\s*:?|CPC\s*:?)\s*")
_IPC_VERSION = re.compile(r"\s*\(\s*\d{4}\.?\d{2}(?:\.?\d{2})?\s*\)\s*$")
_IPC_PRINTED = re.compile(r"([A-HY])(\d\d)([A-Z])(?:\s*-?\s*(\d{1,4})\s*/\s*(\d{2,6}))?")
_IPC_FIXED14 = re.compile(r"([A-HY])(\d\d)([A-Z])(\d{4})(\d{6})")
_IPC_FIXED7 = re.compile(r"([A-H])(\d\d)([A-Z])(\d{3}| \d\d|  \d)(\d{2,4})")


def _ipc_error(code: object, scheme: str, reason: str = "") -> ValueError:
    name = "a CPC" if scheme == "cpc" else "an IPC"
    return ValueError(f"not {name} code: {code!r}{reason}; accepted forms: {IPC_FORMS}")


def _ipc_build(code: object, scheme: str, sec: str, cls: str, sub: str, main: str, subgroup: str) -> IPC:
    if sec == "Y" and scheme != "cpc":
        raise _ipc_error(code, scheme, " (section Y exists only in CPC)")
    if main:
        if int(main) == 0:
            raise _ipc_error(code, scheme, " (main group 0)")
        main = str(int(main))
        subgroup = subgroup.rstrip("0").ljust(2, "0")
    return IPC(sec, sec + cls, sec + cls + sub, main, subgroup)


@lru_cache(maxsize=65536)
def _parse_ipc_str(code: str, scheme: str) -> IPC:
    raw = code.replace("\u00a0", " ").strip().upper()
    text = _IPC_VERSION.sub("", _IPC_LABEL.sub("", raw)).strip()
    m = _IPC_FIXED14.fullmatch(text) or _IPC_FIXED7.fullmatch(text)  # fixed width: its spaces count
    if m is None:
        m = _IPC_PRINTED.fullmatch(_collapse(text))
        if m is None:
            raise _ipc_error(code, scheme)
    sec, cls, sub, main, subgroup = (g or "" for g in m.groups())
    return _ipc_build(code, scheme, sec, cls, sub, main.strip(), subgroup)


def parse_ipc(code: Any, scheme: str = "ipc") -> IPC:
    """Parse an IPC symbol (``scheme="cpc"`` also admits section Y) in any printed or fixed-width form,
    an XML ``<classification-ipcr>`` element, a dict of its fields, or an ``IPC`` (returned unchanged)."""
    if isinstance(code, IPC):
        return code
    if isinstance(code, Mapping) or hasattr(code, "findtext"):
        return ipc_from_xml(code, scheme)
    if not isinstance(code, str):
        raise _ipc_error(code, scheme)
    return _parse_ipc_str(
        _capped(code, "a CPC code" if scheme == "cpc" else "an IPC code", IPC_FORMS), scheme
    )


def ipc_from_xml(element_or_dict: Any, scheme: str = "ipc") -> IPC:
    """Read an IPC symbol from ``<classification-ipcr>`` fields (``section`` ``A``, ``class`` ``47``,
    ``subclass`` ``C``, ``main-group`` ``7``, ``subgroup`` ``02``), given as an element, a parent element or
    a dict; a dict holding ``main-classification`` (the IPC-7 ``<classification-ipc>`` form) is parsed
    as text."""
    if isinstance(element_or_dict, Mapping) and any(
        str(k).replace("_", "-") == "main-classification" for k in element_or_dict
    ):
        text = _xml_fields(element_or_dict, "classification-ipc", ("main-classification",))
        return parse_ipc(text["main-classification"], scheme)
    names = ("section", "class", "subclass", "main-group", "subgroup")
    f = _xml_fields(element_or_dict, "classification-ipcr", names)
    sec, cls, sub = f["section"].upper(), f["class"], f["subclass"].upper()
    if not (re.fullmatch(r"[A-HY]", sec) and re.fullmatch(r"\d\d", cls) and re.fullmatch(r"[A-Z]", sub)):
        raise _ipc_error(f, scheme, " (XML fields)")
    main, subgroup = f["main-group"], f["subgroup"]
    if main or subgroup:
        if not (re.fullmatch(r"\d{1,4}", main) and re.fullmatch(r"\d{1,6}", subgroup)):
            raise _ipc_error(f, scheme, " (XML fields)")
        subgroup = subgroup.zfill(2)
    return _ipc_build(f, scheme, sec, cls, sub, main, subgroup)


# ----------------------------------------------------------------------------------------------
# USPC
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class USPC:
    """A US classification: ``cls`` ``"D6"`` (design), ``"297"`` or ``"PLT"``; ``subclass`` ``"369"``,
    ``"217.1"``, ``"181R"`` or ``"DIG.70"``. ``str()`` gives ``"D6/369"``."""

    cls: str
    subclass: str

    def __str__(self) -> str:
        return f"{self.cls}/{self.subclass}"

    @property
    def design(self) -> bool:
        return self.cls.startswith("D")


_USPC_CLASS = r"(D\s*\d{1,2}|PLT|G9B|\d{1,3})"
_USPC_PRINTED = re.compile(
    _USPC_CLASS
    + r"\s*/\s*(?:(DIG|FOR)\s*\.?\s*(\d{1,3})|(E\d\d\.\d{1,3})|(\d{1,3})(\.\d{1,3})?\s*([A-Z]{0,3}))"
)
_USPC_FIXED_CLASS = re.compile(r" {0,2}\d{1,3}|D ?\d{1,2}| D\d|PLT|G9B")
_USPC_FIXED_SUB = re.compile(r" {0,2}\d{1,3}|DIG|FOR|E\d\d")


def _uspc_error(code: object, reason: str = "") -> ValueError:
    return ValueError(f"not a USPC code: {code!r}{reason}; accepted forms: {USPC_FORMS}")


def uspc_class(text: str) -> str:
    """The USPC class of a printed class field: ``"D 6"`` → ``"D6"``, ``"297"`` → ``"297"``."""
    text = text.replace(" ", "")
    if text.startswith("D"):
        return f"D{int(text[1:])}"
    return text if text in ("PLT", "G9B") else str(int(text))


@lru_cache(maxsize=65536)
def _parse_uspc_str(code: str) -> USPC:
    upper = code.replace("\u00a0", " ").upper()
    text = upper.strip()
    if "-" in text:
        raise _uspc_error(code, " (a range of subclasses names several codes)")
    m = _USPC_PRINTED.fullmatch(_collapse(text))
    if m is not None:
        cls, art, art_no, e_code, number, decimals, suffix = m.groups()
        sub = f"{art}.{int(art_no)}" if art else e_code or f"{int(number)}{decimals or ''}{suffix}"
        return USPC(uspc_class(cls), sub)
    # fixed width: 3 characters of class, 3 of subclass, then decimals and/or a letter suffix
    fixed = upper.rstrip()
    cls, sub, rest = fixed[:3], fixed[3:6], fixed[6:]
    if not (_USPC_FIXED_CLASS.fullmatch(cls) and _USPC_FIXED_SUB.fullmatch(sub)):
        raise _uspc_error(code)
    if sub in ("DIG", "FOR"):
        m = re.fullmatch(r"\s*(\d{1,3})", rest)
        if m is None:
            raise _uspc_error(code)
        return USPC(uspc_class(cls), f"{sub}.{int(m.group(1))}")
    if sub.startswith("E"):  # cross-reference art collection: 257E21166 = 257/E21.166
        if not rest.isdigit():
            raise _uspc_error(code)
        return USPC(uspc_class(cls), f"{sub}.{rest}")
    m = re.fullmatch(r"(\d{0,3})\s*([A-Z]{0,3})", rest)
    if m is None:
        raise _uspc_error(code)
    decimals, suffix = m.groups()
    return USPC(uspc_class(cls), str(int(sub)) + (f".{decimals}" if decimals else "") + suffix)


def parse_uspc(code: Any) -> USPC:
    """Parse a USPC code leniently: ``D6/369``, ``D 6/369``, ``D06/369``, ``297/217.1``, ``68/181 R``,
    ``261/DIG. 70``, ``257/E21.166``, or the USPTO XML fixed width (``D 6369``, ``D28 47``,
    `` 24 305 R`` = 24/30.5R, ``257E21166``). A range (``D 2916-919``) raises: it names several codes."""
    if isinstance(code, USPC):
        return code
    if not isinstance(code, str):
        raise _uspc_error(code)
    return _parse_uspc_str(_capped(code, "a USPC code", USPC_FORMS))


# ----------------------------------------------------------------------------------------------
# Any scheme
# ----------------------------------------------------------------------------------------------
def parse(scheme: str, code: Any) -> Locarno | IPC | USPC:
    """Parse ``code`` under ``scheme`` (``locarno``, ``ipc``, ``cpc`` or ``uspc``)."""
    s = str(scheme).lower()
    if s == "locarno":
        return parse_locarno(code)
    if s in ("ipc", "cpc"):
        return parse_ipc(code, s)
    if s == "uspc":
        return parse_uspc(code)
    raise ValueError(f"unknown classification scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")


def normalize(scheme: str, code: Any) -> str:
    """The canonical string of ``code``: ``"06-01"``, ``"A47C 7/02"``, ``"D6/369"``."""
    return str(parse(scheme, code))


def iter_codes(scheme: str, codes: Iterable[Any]) -> list[str]:
    """Normalise several codes of one scheme, dropping duplicates and keeping order."""
    seen: dict[str, None] = {}
    for code in codes:
        seen.setdefault(normalize(scheme, code), None)
    return list(seen)
