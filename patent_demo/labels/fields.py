"""Cleaning the free text a label carries (annotator names, notes, ids, query codes) before it is stored.

Every value is Unicode-normalised (NFC), refused when it cannot be stored as UTF-8 (a lone surrogate) or
holds control characters where none belong, and capped in length, so the label store only ever holds
short, printable, single-line names and bounded notes. Each function raises ``LabelError`` (a
``ValueError``) whose message names the field and the limit, never echoing more than a few characters
of a long value.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from patent_demo.limits import MAX_ABSTRACT_CHARS, MAX_QUERY_CODES

MAX_NAME_CHARS = 100  # annotator names
MAX_NOTE_CHARS = 2_000  # notes on a label or an adjudication
MAX_ID_CHARS = 200  # query ids, candidate ids, figure paths, checkpoint ids, idempotency keys
MAX_TEXT_CHARS = MAX_ABSTRACT_CHARS  # a query abstract (the app refuses longer ones before searching)
MAX_CODES = MAX_QUERY_CODES  # classification codes of one query, over all schemes (the search's limit too)
MAX_CODE_CHARS = 100


class LabelError(ValueError):
    """A label that cannot be stored; the message says which field is wrong."""


_LINK_MARKS = {":": "&#58;", "@": "&#64;"}


def unlink(markdown: str) -> str:
    """Markdown text (already escaped) that no renderer turns into a link: the ``:`` of a scheme
    (``https://``, ``mailto:``), the ``@`` of an address and the dot of ``www.`` become character
    references, which show as themselves. Gradio's Markdown and Dataframe link bare addresses otherwise."""
    out = "".join(_LINK_MARKS.get(ch, ch) for ch in markdown)
    lower = out.lower()
    at = lower.find("www.")
    while at >= 0:
        out = out[: at + 3] + "&#46;" + out[at + 4 :]
        lower = out.lower()
        at = lower.find("www.", at + 8)
    return out


def preview(value: str, n: int = 40) -> str:
    return repr(value if len(value) <= n else value[:n] + "…")


def _text(value: Any, field: str, max_chars: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LabelError(f"{field} must be text, got {type(value).__name__}")
    if len(value) > 4 * max_chars:  # refuse before normalising a huge value
        raise LabelError(f"{field} has {len(value):,} characters; at most {max_chars:,} are allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise LabelError(f"{field} holds a character that is not valid Unicode (a lone surrogate)") from err
    return unicodedata.normalize("NFC", value)


BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # embeddings, overrides, isolates


def unprintable(ch: str) -> bool:
    """A character no stored text may hold: a control character (NUL, newline, ...), a line or paragraph
    separator (U+2028, U+2029) or a bidi control (U+202E ...); notes and abstracts allow newline and tab."""
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in BIDI_CONTROLS


def _bad_char(text: str, allowed: str = "") -> str | None:
    return next((ch for ch in text if ch not in allowed and unprintable(ch)), None)


def printable_text(text: str) -> str:
    """``text`` as a label stores it, with what ``clean_note`` refuses replaced instead: NFC, line ends
    (CR, CR LF, U+2028, U+2029) as ``\\n``, every other unprintable character a space."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n")
    return "".join(
        ch if ch in "\n\t" or not unprintable(ch) else "\n" if ch in "\r\u2028\u2029" else " " for ch in text
    )


def _cap(text: str, field: str, max_chars: int) -> str:
    if len(text) > max_chars:
        raise LabelError(f"{field} has {len(text):,} characters; at most {max_chars:,} are allowed")
    return text


def clean_line(value: Any, field: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """A single-line value (annotator name, id): NFC, no control characters (NUL, newline, tab, bidi
    overrides), inner whitespace runs collapsed to one space, stripped, at most ``max_chars``."""
    text = _text(value, field, max_chars)
    bad = _bad_char(text, allowed=" ")
    if bad is not None:
        raise LabelError(
            f"{field} {preview(text)} holds the control character U+{ord(bad):04X}; use one line of text"
        )
    return _cap(" ".join(text.split()), field, max_chars)


def clean_id(value: Any, field: str) -> str:
    """An identifier: ``clean_line`` with no inner spaces collapsed away (ids are compared exactly)."""
    text = _text(value, field, MAX_ID_CHARS).strip()
    bad = _bad_char(text, allowed=" ")
    if bad is not None:
        raise LabelError(f"{field} {preview(text)} holds the control character U+{ord(bad):04X}")
    return _cap(text, field, MAX_ID_CHARS)


def clean_note(value: Any, field: str = "note", max_chars: int = MAX_NOTE_CHARS) -> str:
    """Free text over several lines: NFC, line ends as ``\\n``, no other control characters, stripped."""
    text = _text(value, field, max_chars).replace("\r\n", "\n").replace("\r", "\n")
    bad = _bad_char(text, allowed="\n\t")
    if bad is not None:
        raise LabelError(f"{field} holds the control character U+{ord(bad):04X}")
    return _cap(text.strip(), field, max_chars)


def clean_text(value: Any, field: str = "query text") -> str:
    """A query abstract as stored with a label (see ``clean_note``), at most ``MAX_TEXT_CHARS``."""
    return clean_note(value, field, MAX_TEXT_CHARS)


def clean_codes(value: Any) -> dict[str, list[str]]:
    """Query codes ``{scheme: [code, ...]}``: at most ``MAX_CODES`` codes of ``MAX_CODE_CHARS`` each."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LabelError(f"query codes must be a mapping of scheme to codes, got {type(value).__name__}")
    out: dict[str, list[str]] = {}
    n = 0
    for scheme, codes in value.items():
        scheme = clean_line(scheme, "code scheme", 20)
        if isinstance(codes, str) or not isinstance(codes, list | tuple):
            raise LabelError(f"query codes of {scheme!r} must be a list of codes")
        out[scheme] = [clean_line(c, f"{scheme} code", MAX_CODE_CHARS) for c in codes]
        n += len(out[scheme])
    if n > MAX_CODES:
        raise LabelError(f"a query carries {n} classification codes; at most {MAX_CODES} are allowed")
    return out


def clean_figure(value: Any) -> dict:
    """The figure of a sheet that was a query (``{"name": "FIG. 2", "box": [left, top, right, bottom]}``, the
    box in pixels of the stored query drawing), or ``{}`` when the whole drawing was the query."""
    if not value:
        return {}
    if not isinstance(value, dict) or set(value) - {"name", "box"}:
        raise LabelError("the query figure is a mapping with a name and a box")
    box = value.get("box") or []
    if not isinstance(box, list | tuple) or len(box) not in (0, 4):
        raise LabelError("the box of the query figure is four whole numbers: left, top, right, bottom")
    if any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 1_000_000 for x in box):
        raise LabelError("the box of the query figure is four whole numbers: left, top, right, bottom")
    return {"name": clean_line(value.get("name", ""), "query figure"), "box": list(box)}
