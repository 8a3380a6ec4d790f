"""The one home of the input limits: how long each free-text field of a request may be and how many items
a list field may hold, checked before any work is done on it (no parsing, no normalising, no search).

A request's cost must not grow with what a client chooses to send: a 200 kB classification filter once
cost 68 CPU-seconds, a 49-megapixel RGBA drawing 794 MB of memory. Every endpoint reads its fields
through :func:`check_text` and :func:`check_items` (the search filter in :mod:`patent_demo.filters`, the
query's codes and abstract in :mod:`patent_demo.query`, the label fields in
:mod:`patent_demo.labels.fields`, the drawing decoder's byte budget in :mod:`patent_demo.imageio`),
so the limits below are the whole story. Each check raises ``ValueError`` with a message naming the
field and the limit, never echoing more than a few characters of the value.

The work budgets (``bench/bench_request_budget.py`` measures them): a request may cost about one CPU-second
and 200 MB beyond one search. A drawing sheet searches at most ``MAX_SHEET_FIGURES`` of its figures (the
largest boxes, chosen before any is cut out or embedded), an application at most ``MAX_APPLICATION_VIEWS``
views holding ``MAX_APPLICATION_BYTES`` decoded in all (counted from the file headers before any view is
decoded), and an abstract at most ``MAX_ABSTRACT_TOKENS`` tokens (:func:`count_tokens`: the cost of a
text search grows with the tokens the tokenizers make of it, and 20,000 characters of Chinese are five
times the tokens of 20,000 characters of English).
"""

from __future__ import annotations

import re
from typing import Any

MAX_K = 50  # results per list
MAX_ABSTRACT_CHARS = 20_000  # the abstract or the first claims, checked before its tokens are counted
MAX_ABSTRACT_TOKENS = 3_000  # ... and its tokens (count_tokens): about 14,000 characters of English
MAX_CODES_CHARS = 2_000  # the query's codes field: fifty codes and their separators fit easily
MAX_QUERY_CODES = 50  # classification codes of one query, over all schemes (the label store's limit too)
MAX_FILTER_CHARS = 500  # one filter field: classification prefixes, offices, kind codes
MAX_FILTER_ITEMS = 20  # items of one filter list
MAX_DATE_CHARS = 40  # a date field ("2019-06-30")
MAX_RANK_CHARS = 20  # a rank as typed ("12")
MAX_ID_CHARS = 200  # a patent id, query id, figure path or model name (the label store's limit too)
MAX_DECODED_BYTES = 40_000_000  # a decoded drawing, in grayscale bytes (7000 x 7000 RGBA needs 196 MB)
MAX_JPEG_SCANS = 20  # scans of one JPEG (a progressive one has about ten), counted before it is decoded
MAX_SHEET_FIGURES = 6  # figures of one drawing sheet searched (the largest), each one more drawing search
MAX_APPLICATION_VIEWS = 8  # views of one application query (a design application has seven at most)
MAX_APPLICATION_BYTES = MAX_DECODED_BYTES  # all views of an application query together, decoded

_SPLIT = re.compile(r"[,;]")
# one character each (a BERT tokenizer splits CJK ideographs apart and cuts kana and Hangul runs into
# pieces of a character or two): CJK ideographs and their compatibility forms, kana, Hangul
_ONE_EACH = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
)
_TOKEN = re.compile(rf"[{_ONE_EACH}]|[^\W{_ONE_EACH}]+|[^\w\s]")


def count_tokens(text: str) -> int:
    """The tokens of ``text`` as the text searches cost them: each word (a run of letters and digits), each
    punctuation mark, and each CJK, kana or Hangul character on its own, the way the re-ranker's and the
    dense encoder's BERT tokenizers split text before their word pieces (a lower bound on the pieces).
    Counting 20,000 characters takes a few milliseconds."""
    return sum(1 for _ in _TOKEN.finditer(text))


def first_tokens(text: str, n: int) -> str:
    """``text`` up to the end of its ``n``-th token (``count_tokens``'s tokens, each at least one word piece
    of a BERT tokenizer): a tokenizer that truncates it splits ``n`` tokens instead of all of them."""
    for i, m in enumerate(_TOKEN.finditer(text), 1):
        if i == n:
            return text[: m.end()]
    return text


def check_text(value: Any, what: str, max_chars: int) -> str:
    """``value`` as text ("" for None), refused when it is not a string or longer than ``max_chars``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, got {type(value).__name__}")
    if len(value) > max_chars:
        raise ValueError(f"{what} has {len(value):,} characters; at most {max_chars:,} are allowed")
    return value


def check_items(
    value: Any, what: str, max_chars: int = MAX_FILTER_CHARS, max_items: int = MAX_FILTER_ITEMS
) -> Any:
    """A list field (comma- or semicolon-separated text, or a list of strings), refused when its text is
    longer than ``max_chars`` or it holds more than ``max_items`` items; returned as given."""
    if value is None:
        return None
    if isinstance(value, str):
        check_text(value, what, max_chars)
        n = sum(1 for s in _SPLIT.split(value) if s.strip())
    elif isinstance(value, list | tuple):
        if len(value) > max_items:
            raise ValueError(f"{what} has {len(value):,} items; at most {max_items} are allowed")
        for item in value:
            check_text(item, what, max_chars)
        n = len(value)
    else:
        raise ValueError(f"{what} must be text, got {type(value).__name__}")
    if n > max_items:
        raise ValueError(f"{what} has {n:,} items; at most {max_items} are allowed")
    return value
