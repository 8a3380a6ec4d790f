"""Patent numbers as examiners type them, matched to a corpus id: one home for number normalisation.

``number_key("USD0929297")``, ``number_key("D929,297")``, ``number_key("USD929297S1")`` and
``number_key("us d0929297")`` are the same key: office (``US`` when none is typed and the rest looks
like a US number), series (``D``, ``RE``, ``PP``, ``H``, ``T``), the digits without leading zeros; the
kind code (``S1``, ``B2``, ``A1``) and separators (spaces, commas, dots, slashes, dashes) are dropped.
``resolve_patent_id`` returns the corpus id of a typed number: the exact id first, then the one
corpus id with the same key (with the kind code, when several share a key and one matches it). A Red Book
file stem (``USD0929297-20210831``: the number and its publication date) is its number; bare digits
(``929297``) match whichever series has them; an application number (``29/750,842``, ``29750842``) the
patent filed under it (``Patent.extra["application_number"]``).
"""

from __future__ import annotations

import re

_SEP = re.compile(r"[\s,./\-]")
_DATED = re.compile(r"^(?P<number>.+?)-(?:19|20)\d{6}$")  # a Red Book stem: number-YYYYMMDD
_APPLICATION = re.compile(r"^\d{2}/\d{3},?\d{3}$|^\d{8}$")  # 29/750,842 or 29750842
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


def application_number(number: str) -> str:
    """A US application number as the office prints it: ``"29750842"`` → ``"29/750,842"`` (series code, then
    six digits); anything else unchanged."""
    digits = re.sub(r"\D", "", str(number or ""))
    return f"{digits[:2]}/{digits[2:5]},{digits[5:]}" if len(digits) == 8 else str(number or "")


def _index(corpus, name: str, key_of) -> dict[str, list[str]]:
    """``{key: [corpus ids]}`` of ``key_of(patent)``, built once per corpus (``Corpus.derived``)."""

    def build() -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for p in corpus:
            key = key_of(p)
            if key:
                index.setdefault(key, []).append(p.id)
        return index

    return corpus.derived(name, build)


def _one(text: str, found: list[str], kind: str = "") -> str:
    if len(found) > 1:
        same_kind = [i for i in found if kind and (_parts(i) or ("", "", "", ""))[3] == kind]
        if len(same_kind) == 1:
            return same_kind[0]
        raise KeyError(
            f"{text[:40]} matches {len(found)} documents: {', '.join(found[:6])}; type one of them"
        )
    if not found:
        raise KeyError(f"no document {text[:40]} in this corpus")
    return found[0]


def resolve_patent_id(corpus, typed: str) -> str:
    """The corpus id of a typed patent number (see the module docstring); ``KeyError`` with a plain
    message when none (or several that the kind code does not tell apart) match."""
    text = str(typed or "").strip()
    if text in corpus:
        return text
    if text.upper() in corpus:
        return text.upper()
    dated = _DATED.match(text)
    if dated and number_key(dated.group("number")):
        text = dated.group("number")  # USD0929297-20210831: the number, without its publication date
        if text.upper() in corpus:
            return text.upper()
    compact, digits = re.sub(r"\s", "", text), re.sub(r"\D", "", text)
    if _APPLICATION.match(
        compact
    ):  # an application number; 8 bare digits only when no patent number has them
        by_application = _index(
            corpus,
            "_application_numbers",
            lambda p: re.sub(r"\D", "", str(p.extra.get("application_number", ""))),
        )
        if digits in by_application and (
            "/" in compact or digits not in _index(corpus, "number_digits", _digits_of)
        ):
            return _one(text, by_application[digits])
        if "/" in compact:
            raise KeyError(f"no application {text[:40]} in this corpus")
    key = number_key(text)
    if not key:
        raise KeyError(
            f"{text[:40]!r} is not a patent number (try e.g. USD929297, D929,297, 929297, "
            "USD0929297-20210831 or 29/750,842)"
        )
    parts = _parts(text)
    if not parts[0] and not parts[1]:  # bare digits: whichever series (design, utility, …) has them
        found = _index(corpus, "number_digits", _digits_of).get(parts[2], [])
    else:
        found = _index(corpus, "number_keys", lambda p: number_key(p.id)).get(key, [])
    return _one(text, found, parts[3])


def _digits_of(patent) -> str:
    """The digits of a patent id without leading zeros (``USD0929297`` → ``929297``)."""
    parts = _parts(patent.id)
    return parts[2] if parts else ""
