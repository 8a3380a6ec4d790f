"""Which words of a candidate text BM25 matched, marked in escaped HTML, and short snippets around them.

A word of the candidate matches when its BM25 token (``BM25Index.tokenize``: lower case, stopwords
removed, the index's stemmer) is one of the query's tokens, so what is marked is exactly what the
BM25 score counted. Every piece of text is HTML-escaped before the ``<mark>`` tags are added; no
input can inject markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

# bm25s's default token pattern: words of two or more word characters
_WORD = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` is a word whose token is ``token``."""

    start: int
    end: int
    token: str


def query_tokens(bm25, query: str) -> set[str]:
    """The query's BM25 tokens (``bm25`` a ``BM25Index``)."""
    return set(bm25.tokenize([query])[0]) if query.strip() else set()


def matched_spans(bm25, text: str, tokens: Iterable[str]) -> list[Span]:
    """The words of ``text`` whose BM25 token is in ``tokens``, in text order."""
    tokens = set(tokens)
    if not tokens or not text:
        return []
    words = list(_WORD.finditer(text))
    if not words:
        return []
    per_word = bm25.tokenize([m.group(0) for m in words])
    return [
        Span(m.start(), m.end(), toks[0])
        for m, toks in zip(words, per_word, strict=True)
        if toks and toks[0] in tokens
    ]


def highlight_html(text: str, spans: Iterable[Span], tag: str = "mark") -> str:
    """``text`` HTML-escaped, each span wrapped in ``<mark>`` (newlines kept as ``<br>``)."""
    out, pos = [], 0
    for s in sorted(spans, key=lambda s: s.start):
        if s.start < pos:
            continue
        out.append(html.escape(text[pos : s.start]))
        out.append(f"<{tag}>{html.escape(text[s.start : s.end])}</{tag}>")
        pos = s.end
    out.append(html.escape(text[pos:]))
    return "".join(out).replace("\n", "<br>")


def best_window(text: str, spans: list[Span], width: int = 160) -> tuple[int, int]:
    """The ``[start, end)`` of a window of about ``width`` characters holding the most distinct
    matched tokens (the first such window; the text's start when nothing matched), widened to word
    boundaries."""
    if len(text) <= width:
        return 0, len(text)
    best, best_key = 0, (-1, -1)
    for i, s in enumerate(spans):
        inside = [t for t in spans[i:] if t.end <= s.start + width]
        key = (len({t.token for t in inside}), len(inside))
        if key > best_key:
            best, best_key = s.start, key
    start = max(0, best - width // 4) if spans else 0
    end = min(len(text), start + width)
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def snippet_html(bm25, text: str, query: str, width: int = 160) -> str:
    """A short escaped snippet of ``text`` around the words BM25 matched for ``query``, marked;
    ``…`` where the text was cut."""
    spans = matched_spans(bm25, text, query_tokens(bm25, query))
    start, end = best_window(text, spans, width)
    inside = [
        Span(s.start - start, s.end - start, s.token) for s in spans if s.start >= start and s.end <= end
    ]
    body = highlight_html(text[start:end], inside).replace("<br>", " ")
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


def snippet_text(bm25, text: str, query: str, width: int = 160) -> str:
    """The same snippet as plain text, matched words in ``[brackets]`` (for CSV files)."""
    spans = matched_spans(bm25, text, query_tokens(bm25, query))
    start, end = best_window(text, spans, width)
    out, pos = [], start
    for s in spans:
        if s.start < start or s.end > end:
            continue
        out.append(text[pos : s.start])
        out.append(f"[{text[s.start : s.end]}]")
        pos = s.end
    out.append(text[pos:end])
    body = " ".join("".join(out).split())
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")
