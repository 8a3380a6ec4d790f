"""What an examiner types, checked: the abstract to search with and the classification codes beside it.

Both raise ``ValueError`` with a message the app shows as it is.
"""

from __future__ import annotations

from patent_demo import taxonomy

MAX_ABSTRACT_CHARS = 20_000


def parse_query_codes(text: str) -> dict[str, list[str]]:
    """Codes typed by the examiner ("06-01; A47C 7/02") -> {"locarno": [...], "ipc": [...]}.

    A code is tried as Locarno first, then as IPC; one that is neither raises ``ValueError`` naming it.
    """
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
            break
        else:
            raise ValueError(
                f"unknown classification code {raw!r}: give a Locarno code such as 06-01 or an IPC/CPC "
                f"symbol such as A47C 7/02, separated by ';'"
            )
    return out


def check_abstract(text: str) -> str:
    """The stripped abstract, or ``ValueError`` when it is empty or longer than ``MAX_ABSTRACT_CHARS``."""
    text = (text or "").strip()
    if not text:
        raise ValueError("the abstract is empty: paste the text of the application to search with")
    if len(text) > MAX_ABSTRACT_CHARS:
        raise ValueError(
            f"the abstract has {len(text):,} characters; paste at most {MAX_ABSTRACT_CHARS:,} "
            f"(the abstract or the first claims, not the whole document)"
        )
    return text
