"""What an examiner types, checked: the abstract to search with and the classification codes beside it.

Both raise ``ValueError`` with a message the app shows as it is.
"""

from __future__ import annotations

from patent_demo import taxonomy
from patent_demo.labels.fields import printable_text
from patent_demo.limits import (
    MAX_ABSTRACT_CHARS,
    MAX_ABSTRACT_TOKENS,
    MAX_CODES_CHARS,
    MAX_QUERY_CODES,
    count_tokens,
)


def parse_query_codes(text: str) -> dict[str, list[str]]:
    """Codes typed by the examiner ("06-01; A47C 7/02") -> {"locarno": [...], "ipc": [...]}.

    A code is tried as Locarno first, then as IPC; one that is neither raises ``ValueError`` naming it.
    """
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ValueError(f"classification codes must be text, got {type(text).__name__}")
    if len(text) > MAX_CODES_CHARS:
        raise ValueError(
            f"the codes field has {len(text):,} characters; give at most {MAX_CODES_CHARS:,} "
            f"(codes such as 06-01; A47C 7/02)"
        )
    out: dict[str, list[str]] = {}
    for raw in [c.strip() for c in text.replace("\n", ";").replace(",", ";").split(";")]:
        if not raw:
            continue
        for scheme in ("locarno", "ipc"):
            try:
                code = taxonomy.normalize(scheme, raw)
            except ValueError:
                continue
            if code not in out.get(scheme, []):
                out.setdefault(scheme, []).append(code)
                if sum(map(len, out.values())) > MAX_QUERY_CODES:  # the label store keeps at most that many
                    raise ValueError(
                        f"the codes field holds more than {MAX_QUERY_CODES} codes; give at most {MAX_QUERY_CODES}"
                    )
            break
        else:
            raise ValueError(
                f"unknown classification code {raw if len(raw) <= 40 else raw[:40] + '…'!r}: give a Locarno code such as 06-01 or an IPC/CPC "
                f"symbol such as A47C 7/02, separated by ';'"
            )
    return out


def check_abstract(text: str) -> str:
    """The abstract as it is searched and stored with its labels: control characters, bidi controls and line
    separators replaced (``labels.fields.printable_text``: NUL, U+202E, U+2028 ...), NFC, stripped.
    ``ValueError`` when it is empty, longer than ``MAX_ABSTRACT_CHARS`` (checked first, before any other
    work) or holds more than ``MAX_ABSTRACT_TOKENS`` tokens (``limits.count_tokens``)."""
    if text is not None and not isinstance(text, str):
        raise ValueError(f"the abstract must be text, got {type(text).__name__}")
    text = text or ""
    if len(text) > MAX_ABSTRACT_CHARS:
        raise ValueError(
            f"the abstract has {len(text):,} characters; paste at most {MAX_ABSTRACT_CHARS:,} "
            f"(the abstract or the first claims, not the whole document)"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "the abstract holds a character that is not valid Unicode (a lone surrogate)"
        ) from None
    text = printable_text(text).strip()
    if not text:
        raise ValueError("the abstract is empty: paste the text of the application to search with")
    tokens = count_tokens(text)
    if tokens > MAX_ABSTRACT_TOKENS:
        raise ValueError(
            f"the abstract has {tokens:,} tokens (words, punctuation marks, CJK characters); paste at most "
            f"{MAX_ABSTRACT_TOKENS:,} (the abstract or the first claims, not the whole document)"
        )
    return text
