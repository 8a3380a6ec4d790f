"""Patent numbers as examiners type them, matched to a corpus id: one home for number normalisation.

``number_key("USD0929297")``, ``number_key("D929,297")``, ``number_key("USD929297S1")`` and
``number_key("us d0929297")`` are the same key: office (``US`` when none is typed and the rest looks
like a US number), series (``D``, ``RE``, ``PP``, ``H``, ``T``), the digits without leading zeros; the
kind code (``S1``, ``B2``, ``A1``) and separators (spaces, commas, dots, slashes, dashes) are dropped.
``resolve_patent_id`` returns the corpus id of a typed number: the exact id first, then the one
corpus id with the same key (with the kind code, when several share a key and one matches it).
"""

from __future__ import annotations

import re

_SEP = re.compile(r"[\s,./\-]")
_NUMBER = re.compile(r"^(?P<cc>[A-Z]{2})?(?P<series>D|RE|PP|H|T)?(?P<digits>\d+)(?P<kind>[A-Z]\d?)?$")


def _parts(number: str) -> tuple[str, str, str, str] | None:
    m = _NUMBER.match(_SEP.sub("", str(number or "")).upper())
    if m is None:
        return None
    return (
        m.group("cc") or "",
        m.group("series") or "",
        m.group("digits").lstrip("0") or "0",
        m.group("kind") or "",
    )


def number_key(number: str) -> str:
    """The office + series + digits of a patent number (``""`` when it is not one); a number typed
    without an office counts as a US number."""
    parts = _parts(number)
    if parts is None:
        return ""
    cc, series, digits, _ = parts
    return f"{cc or 'US'}{series}{digits}"


def resolve_patent_id(corpus, typed: str) -> str:
    """The corpus id of a typed patent number; ``KeyError`` with a plain message when none (or several
    that the kind code does not tell apart) match."""
    text = str(typed or "").strip()
    if text in corpus:
        return text
    if text.upper() in corpus:
        return text.upper()
    key = number_key(text)
    if not key:
        raise KeyError(f"{text[:40]!r} is not a patent number (try e.g. USD929297, D929,297 or EP1870505A2)")
    index = corpus.__dict__.get("_number_keys")
    if index is None:
        index = {}
        for p in corpus:
            index.setdefault(number_key(p.id), []).append(p.id)
        corpus.__dict__["_number_keys"] = index
    found = index.get(key, [])
    if len(found) > 1:
        kind = _parts(text)[3]
        same_kind = [i for i in found if kind and (_parts(i) or ("", "", "", ""))[3] == kind]
        if len(same_kind) == 1:
            return same_kind[0]
        raise KeyError(
            f"{text[:40]} matches {len(found)} documents: {', '.join(found[:6])}; type one of them"
        )
    if not found:
        raise KeyError(f"no document {text[:40]} in this corpus")
    return found[0]
