"""Search filters: a prior-art cut-off date, classification prefixes, country, kind code, date range.

A :class:`Filters` is the examiner's filter panel as one value (a ``SearchFilter`` and how the query's
own patent is treated): the UI builds it once from its fields and the API takes it as one JSON object.

A :class:`SearchFilter` decides, for each patent of a corpus, whether it may be returned. Retrieval
takes the allowed ids (``allowed_ids``) and restricts itself to them *inside* the search (FAISS id
selector in ``DenseIndex``, score mask in ``BM25Index``), so k hits come back whenever k allowed
documents exist.

Dates are ISO ``YYYY-MM-DD``. The publication date of a document is ``Patent.date``. The cut-off is
the examiner's "prior-art date" (the filing date of the application under search); what it
admits is the one rule of :mod:`patent_demo.prior_art`: published before it, or a patent document filed
before it (an earlier application, marked "E"). Documents without any date cannot be shown to be prior
art; they are excluded by the cut-off (and those without a publication date by a date range) unless
``keep_undated``.

Classification prefixes work in every scheme with one rule: the prefix matches a code when the code,
both with spaces removed and upper-cased, starts with it, and a prefix ending in a digit before any
``/`` is not followed by another digit (so ``D6`` matches ``D6/369`` but not ``D64/1``, ``A47C 7``
matches ``A47C 7/02`` but not ``A47C 70/00``; ``A47C 7/0`` matches ``A47C 7/02``). ``scheme:prefix``
(``locarno:06``, ``ipc:A47C``) limits a prefix to one scheme; a Locarno prefix like ``6`` or ``6-1``
is read as ``06`` / ``06-01``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from patent_demo import limits, prior_art
from patent_demo.data.corpus import SCHEMES, Corpus, Patent, country_of, kind_code_of
from patent_demo.prior_art import prior_art_date
from patent_demo.results import Results

_DATE_FORMS = (
    (re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"), 3),
    (re.compile(r"^(\d{4})(\d{2})(\d{2})$"), 3),
    (re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})$"), 3),
)


NO_FILTER = "no filter"
EXCLUDED = "the query's own patent"  # how the note of an applied exclusion starts (``exclusion_note``)


def exclusion_note(own: Sequence[str], family: Sequence[str] = ()) -> str:
    """The status line's and search history's note that the query's own patent(s) and family were left out."""
    many = len(own) > 1
    line = f"{EXCLUDED}{'s' if many else ''} {', '.join(own)} {'are' if many else 'is'} left out"
    return line + (f" with {'their' if many else 'its'} family ({', '.join(family)})" if family else "")


def filters_line(described: str, notes: Sequence[str] = ()) -> str:
    """The filters of a search as its history states them: the filter's line (``Filters.describe``) and the
    exclusion of the query's own patent and family when a note says it was applied; ``"no filter"`` when
    neither."""
    parts = [described] if described and described not in (NO_FILTER, "none") else []
    parts += [n for n in notes if n.startswith(EXCLUDED)]
    return " · ".join(parts) or NO_FILTER


def parse_date(text: str, what: str = "date") -> str:
    """An ISO ``YYYY-MM-DD`` from ``2020-01-07``, ``20200107`` or ``2020/1/7``; ``""`` for blank input.

    Raises ``ValueError`` naming ``what`` and the accepted forms for anything else (also for a
    calendar date that does not exist, such as ``2021-02-30``)."""
    text = (text or "").strip()
    if not text:
        return ""
    for pattern, _ in _DATE_FORMS:
        m = pattern.match(text)
        if m:
            y, mo, d = (int(g) for g in m.groups())
            try:
                return dt.date(y, mo, d).isoformat()
            except ValueError as err:
                raise ValueError(f"{what} {text!r} is not a calendar date ({err})") from None
    raise ValueError(f"{what} {text!r} is not a date; write YYYY-MM-DD (e.g. 2019-06-30) or YYYYMMDD")


def publication_date(patent: Patent) -> str:
    """The date a document became public: ``Patent.date`` (ISO) or ``""``."""
    return patent.date or ""


def patent_country(patent: Patent) -> str:
    """The office of a patent (``Patent.country``, which defaults to the letters its id starts with)."""
    return (patent.country or country_of(patent.id)).upper()


def patent_kind_code(patent: Patent) -> str:
    """The kind code (``S1``, ``B2``, ``A1``): ``Patent.kind_code``, else the one its id ends with."""
    return (patent.kind_code or kind_code_of(patent.id)).upper()


# -- classification prefixes ------------------------------------------------------------------------
def _squash(code: str) -> str:
    return re.sub(r"\s+", "", code).upper()


def _locarno_prefix(prefix: str) -> str:
    """``6`` → ``06``, ``6-1`` → ``06-01``, ``0601`` → ``06-01``; other forms unchanged."""
    m = re.fullmatch(r"(\d{1,2})(?:[-.](\d{1,2}))?", prefix)
    if m:
        main, sub = m.groups()
        return f"{int(main):02d}" + (f"-{int(sub):02d}" if sub is not None else "")
    m = re.fullmatch(r"(\d{2})(\d{2})", prefix)
    return f"{m.group(1)}-{m.group(2)}" if m else prefix


def prefix_matches(prefix: str, code: str) -> bool:
    """Whether classification ``prefix`` matches ``code`` (the rule of the module docstring)."""
    p, c = _squash(prefix), _squash(code)
    if not p or not c.startswith(p):
        return False
    if "/" not in p and p[-1].isdigit() and len(c) > len(p) and c[len(p)].isdigit():
        return False
    return True


@dataclass(frozen=True)
class ClassPrefix:
    """One classification prefix, optionally limited to a scheme."""

    prefix: str
    scheme: str = ""  # "" = any scheme

    @classmethod
    def parse(cls, text: str) -> ClassPrefix:
        text = text.strip()
        scheme = ""
        if ":" in text:
            head, _, rest = text.partition(":")
            if head.strip().lower() not in SCHEMES:
                raise ValueError(
                    f"classification {text!r}: unknown scheme {head.strip()!r}; use one of {SCHEMES}"
                )
            scheme, text = head.strip().lower(), rest.strip()
        if not text:
            raise ValueError("a classification prefix is empty")
        if not re.fullmatch(r"[A-Za-z0-9 ./\-]+", text):
            raise ValueError(
                f"classification prefix {text!r} holds characters codes never have; "
                "examples: 06, 06-01, A47C, A47C 7/, D6"
            )
        return cls(text, scheme)

    def matches(self, codes: Mapping[str, Sequence[str]]) -> bool:
        for scheme, values in codes.items():
            if self.scheme and scheme != self.scheme:
                continue
            prefix = _locarno_prefix(self.prefix.strip()) if scheme == "locarno" else self.prefix
            if any(prefix_matches(prefix, v) for v in values):
                return True
        return False

    def __str__(self) -> str:
        return f"{self.scheme}:{self.prefix}" if self.scheme else self.prefix


def _split_list(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = re.split(r"[,;]", value) if isinstance(value, str) else list(value)
    return tuple(s.strip() for s in items if s and s.strip())


# -- the filter ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchFilter:
    """What a search may return. Every part is optional; an empty filter admits every document.

    ``before``: prior-art cut-off (the rule of :mod:`patent_demo.prior_art`: published before it, or a
    patent document filed before it);
    ``date_from`` / ``date_to``: publication-date range, both ends inclusive;
    ``classification``: prefixes, a document passes when any of its codes matches any prefix;
    ``country``: offices (``US``, ``EP``); ``kind_code``: kind codes, each a prefix (``S`` admits the
    ``S1`` of USPTO XML, ``B`` admits ``B1`` and ``B2``);
    ``keep_undated``: admit documents without a date despite a cut-off or a range;
    ``intermediate_from``: the earliest priority date of the application under search when ``before`` is its
    filing date (a patent's own search): the hits published from it up to ``before`` are marked ``"P"``. It
    admits nothing more or less.
    """

    before: str = ""
    date_from: str = ""
    date_to: str = ""
    classification: tuple[ClassPrefix, ...] = ()
    country: tuple[str, ...] = ()
    kind_code: tuple[str, ...] = ()
    keep_undated: bool = False
    intermediate_from: str = ""

    @classmethod
    def parse(
        cls,
        before: str = "",
        classification: str | Iterable[str] | None = None,
        country: str | Iterable[str] | None = None,
        kind_code: str | Iterable[str] | None = None,
        date_from: str = "",
        date_to: str = "",
        keep_undated: bool = False,
    ) -> SearchFilter:
        """A filter from user text (comma-separated lists allowed); ``ValueError`` names a bad part.
        Each field's length and item count is checked first (:mod:`patent_demo.limits`)."""
        for value, what in (
            (before, "the cut-off date"),
            (date_from, "the start date"),
            (date_to, "the end date"),
        ):
            limits.check_text(value, what, limits.MAX_DATE_CHARS)
        for value, what in (
            (classification, "the classification filter"),
            (country, "the office filter"),
            (kind_code, "the kind-code filter"),
        ):
            limits.check_items(value, what)
        f = cls(
            before=parse_date(before, "cut-off date"),
            date_from=parse_date(date_from, "start date"),
            date_to=parse_date(date_to, "end date"),
            classification=tuple(ClassPrefix.parse(c) for c in _split_list(classification)),
            country=tuple(c.upper() for c in _split_list(country)),
            kind_code=tuple(c.upper() for c in _split_list(kind_code)),
            keep_undated=bool(keep_undated),
        )
        if f.date_from and f.date_to and f.date_from > f.date_to:
            raise ValueError(f"the date range is empty: start {f.date_from} is after end {f.date_to}")
        for c in f.country:
            if not re.fullmatch(r"[A-Z]{2}", c):
                raise ValueError(f"country {c!r} is not a two-letter office code such as US, EP, WO")
        return f

    def with_before(self, before: str, intermediate_from: str = "") -> SearchFilter:
        """The same filter with another cut-off (ISO or any form ``parse_date`` reads) and intermediate
        window (``""``: none)."""
        return replace(self, before=parse_date(before, "cut-off date"), intermediate_from=intermediate_from)

    @property
    def active(self) -> bool:
        return bool(
            self.before
            or self.date_from
            or self.date_to
            or self.classification
            or self.country
            or self.kind_code
        )

    def reason(self, patent: Patent) -> str:
        """Why ``patent`` is excluded (``""`` when it is admitted). A cut-off reason starts with
        ``"not prior art"`` so a caller can show those apart."""
        date = publication_date(patent)
        if self.before:
            why = prior_art.reason(patent, self.before, self.keep_undated)
            if why:
                return why
        if (self.date_from or self.date_to) and not date and not self.keep_undated:
            return "no publication date"
        if self.date_from and date and date < self.date_from:
            return f"published {date}, before {self.date_from}"
        if self.date_to and date and date > self.date_to:
            return f"published {date}, after {self.date_to}"
        if self.classification and not any(c.matches(patent.codes) for c in self.classification):
            return f"no code under {', '.join(map(str, self.classification))}"
        if self.country and patent_country(patent) not in self.country:
            return f"office {patent_country(patent) or 'unknown'} not in {', '.join(self.country)}"
        if self.kind_code and not any(patent_kind_code(patent).startswith(c) for c in self.kind_code):
            return f"kind code {patent_kind_code(patent) or 'unknown'} not in {', '.join(self.kind_code)}"
        return ""

    def admits(self, patent: Patent) -> bool:
        return not self.reason(patent)

    def allowed_ids(self, patents: Corpus | Iterable[Patent]) -> set[str] | None:
        """The ids of the admitted patents; ``None`` when the filter is not active (everything goes)."""
        if not self.active:
            return None
        return {p.id for p in patents if self.admits(p)}

    def mask(self, patents: Corpus | Iterable[Patent]) -> list[bool]:
        """One bool per patent, in order: admitted or not."""
        return [self.admits(p) for p in patents]

    def describe(self) -> str:
        """A short line for a status bar: ``"before 2019-06-30 · class 06-01 · US"``."""
        parts = []
        if self.before:
            parts.append(f"prior art before {self.before}")
        if self.date_from or self.date_to:
            parts.append(f"published {self.date_from or '…'} to {self.date_to or '…'}")
        if self.classification:
            parts.append("class " + ", ".join(map(str, self.classification)))
        if self.country:
            parts.append("office " + ", ".join(self.country))
        if self.kind_code:
            parts.append("kind " + ", ".join(self.kind_code))
        return " · ".join(parts) if parts else NO_FILTER


# -- the filter panel as one value ----------------------------------------------------------------------
FILTER_TEXT_FIELDS = ("before", "classification", "country", "kind_code", "date_from", "date_to")
FILTER_FLAGS = ("own_date", "exclude_own", "per_family")
FILTER_KEYS = (
    "before",
    "own_date",
    "classification",
    "country",
    "kind_code",
    "date_from",
    "date_to",
    "exclude_own",
    "per_family",
)
FILTER_EXAMPLE = '{"before": "2019-06-30", "classification": "06-01", "exclude_own": true}'


@dataclass(frozen=True)
class Filters:
    """Everything the examiner's filter panel says about a search, as one value: what it may return
    (``search``) and how the query's own patent is treated.

    ``own_date``: without a typed cut-off, use the query patent's own filing date (else its earliest priority);
    ``exclude_own``: leave out the query's own patent and family (a corpus drawing or text);
    ``per_family``: one hit per family in the text lists.

    The UI and the API send it as one JSON object whose keys are ``FILTER_KEYS`` (each optional; ``{}`` or
    ``null`` is no filter): text fields a string (the lists also a list of strings), flags ``true`` /
    ``false``. ``from_value`` turns anything else into a ``ValueError`` that says what is wrong.
    """

    search: SearchFilter = SearchFilter()
    own_date: bool = False
    exclude_own: bool = False
    per_family: bool = False

    @classmethod
    def from_value(cls, value: object) -> Filters:
        """The filters of a request: a mapping (or its JSON text) with keys from ``FILTER_KEYS``."""
        import json

        if isinstance(value, Filters):
            return value
        if value is None or value == "":
            return cls()
        if isinstance(value, str):
            limits.check_text(value, "the filters", 8 * limits.MAX_FILTER_CHARS)
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError(f"the filters must be a JSON object such as {FILTER_EXAMPLE}") from None
        if not isinstance(value, Mapping):
            raise ValueError(
                f"the filters must be a JSON object such as {FILTER_EXAMPLE}, not {type(value).__name__}"
            )
        unknown = sorted(str(k)[:40] for k in value if k not in FILTER_KEYS)
        if unknown:
            known = ", ".join(FILTER_KEYS)
            raise ValueError(f"unknown filter {', '.join(map(repr, unknown[:5]))}; the filters are {known}")
        for key in FILTER_FLAGS:
            if not isinstance(value.get(key, False), bool | None):
                raise ValueError(f"the filter {key} must be true or false")
        text = {}
        for key in FILTER_TEXT_FIELDS:
            v = "" if value.get(key) is None else value[key]
            listed = key in ("classification", "country", "kind_code") and isinstance(v, list)
            if not isinstance(v, str) and not (listed and all(isinstance(x, str) for x in v)):
                raise ValueError(f"the filter {key} must be text, not {type(v).__name__}")
            text[key] = v
        return cls(SearchFilter.parse(**text), *(bool(value.get(k)) for k in FILTER_FLAGS))

    @classmethod
    def from_fields(
        cls,
        before="",
        own_date=False,
        classification="",
        country="",
        kind_code="",
        date_from="",
        date_to="",
        exclude_own=False,
        per_family=False,
    ) -> Filters:
        """The filters from the panel's fields, in the order of ``FILTER_KEYS``."""
        return cls.from_value(
            dict(
                zip(
                    FILTER_KEYS,
                    (
                        before,
                        bool(own_date),
                        classification,
                        country,
                        kind_code,
                        date_from,
                        date_to,
                        bool(exclude_own),
                        bool(per_family),
                    ),
                    strict=True,
                )
            )
        )

    def describe(self) -> str:
        """The status-bar line of the filters (``SearchFilter.describe``)."""
        return self.search.describe()


def split_prior_art(
    ids: Sequence[str], corpus: Corpus | Mapping[str, Patent], before: str
) -> tuple[list[int], list[int]]:
    """Positions in ``ids`` of the prior art of cut-off ``before`` (``patent_demo.prior_art``: published
    before it, or filed before it) and of the others (later or undated): the two groups a result list
    shows apart. With no cut-off every position is prior art."""
    before = parse_date(before, "cut-off date")
    if not before:
        return list(range(len(ids))), []
    keep, apart = [], []
    for i, d in enumerate(ids):
        (keep if prior_art.admits(corpus[d], before) else apart).append(i)
    return keep, apart


# -- evaluation under a cut-off -------------------------------------------------------------------------
def cutoff_of_queries(
    qids: Iterable[str], corpus: Corpus | Mapping[str, Patent], fixed: str = ""
) -> dict[str, str]:
    """The cut-off of each query: ``fixed`` for all when given, else the query patent's
    ``prior_art_date`` (``""`` for a query that is not a corpus patent or has no date)."""
    fixed = parse_date(fixed, "cut-off date")
    out = {}
    for q in qids:
        if fixed:
            out[q] = fixed
        elif q in corpus:
            out[q] = prior_art_date(corpus[q])
        else:
            out[q] = ""
    return out


def hidden_relevant(
    qrels: Mapping[str, Mapping[str, int]],
    corpus: Corpus | Mapping[str, Patent],
    cutoffs: Mapping[str, str],
    keep_undated: bool = False,
) -> dict[str, list[str]]:
    """``{qid: relevant ids the cut-off hides}``: each query's relevant documents that the rule of
    ``patent_demo.prior_art`` does not admit for its cut-off (or that are not in the corpus); queries
    with none hidden are absent."""
    out = {}
    for qid, qrel in qrels.items():
        before = cutoffs.get(qid, "")
        if not before:
            continue
        hidden = sorted(
            d
            for d, r in qrel.items()
            if r > 0 and not (d in corpus and prior_art.admits(corpus[d], before, keep_undated))
        )
        if hidden:
            out[qid] = hidden
    return out


def apply_cutoff(
    run: Mapping[str, object],
    qrels: Mapping[str, Mapping[str, int]],
    corpus: Corpus | Mapping[str, Patent],
    cutoffs: Mapping[str, str],
    restrict: Callable[[object, set[str]], object] | None = None,
) -> tuple[dict[str, object], dict[str, dict[str, int]]]:
    """A run and qrels evaluated with a per-query cut-off (``{qid: ISO date}``; ``""`` = none).

    Each query's ranking keeps only what the rule of ``patent_demo.prior_art`` admits for its cut-off
    (``restrict(entry, banned ids)``; default: ``Results`` or a list of ids or a {doc: score} mapping,
    filtered in order). The qrels are **not** changed: every query is scored against all its relevant
    documents, and a relevant document the cut-off hides counts as missed (``hidden_relevant`` says
    which). Returns the restricted run and a copy of the qrels.
    """

    def default_restrict(entry: object, banned: set[str]) -> object:
        if isinstance(entry, Results):
            keep = [i for i, d in enumerate(entry.ids) if d not in banned]
            extras = [entry.extras[i] for i in keep] if entry.extras is not None else None
            return Results([entry.ids[i] for i in keep], entry.scores[keep], extras)
        if isinstance(entry, Mapping):
            return {d: s for d, s in entry.items() if d not in banned}
        return [d for d in entry if d not in banned]  # type: ignore[union-attr]

    restrict = restrict or default_restrict
    out_run: dict[str, object] = {}
    for qid, entry in run.items():
        before = cutoffs.get(qid, "")
        if before:
            ids = entry.ids if isinstance(entry, Results) else list(entry)  # type: ignore[union-attr]
            banned = {d for d in ids if not (d in corpus and prior_art.admits(corpus[d], before))}
            entry = restrict(entry, banned)
        out_run[qid] = entry
    return out_run, {q: dict(d) for q, d in qrels.items()}


def allowed_per_query(
    qids: Iterable[str],
    corpus: Corpus,
    cutoffs: Mapping[str, str],
    base: SearchFilter | None = None,
) -> dict[str, set[str]] | None:
    """``{qid: allowed ids}`` for searches that each use their own cut-off on top of ``base``
    (``None`` when no query has a cut-off and ``base`` is inactive). Queries sharing a cut-off
    share one set."""
    base = base or SearchFilter()
    qids = list(qids)
    if not base.active and not any(cutoffs.get(q) for q in qids):
        return None
    every = {p.id for p in corpus}
    cache: dict[str, set[str]] = {}
    out = {}
    for q in qids:
        before = cutoffs.get(q, "") or base.before
        if before not in cache:
            f = base.with_before(before)
            cache[before] = f.allowed_ids(corpus) if f.active else every
        out[q] = cache[before]
    return out


def evaluate_text_with_cutoff(
    bm25,
    reranker,
    queries: Sequence,
    corpus: Corpus,
    qrels: Mapping[str, Mapping[str, int]],
    cutoff: str = "own",
    ks: Sequence[int] = (10, 100),
    k_first: int = 1000,
    k_rerank: int | None = None,
    base: SearchFilter | None = None,
) -> dict:
    """Text metrics (``patent_demo.metrics.text.evaluate_run``) with a prior-art cut-off applied to
    retrieval *and* to the qrels.

    ``cutoff`` is ``"own"`` (each query patent's filing / priority / publication date, see
    ``prior_art_date``), an ISO date for every query, or ``""`` for none. Retrieval is restricted
    inside BM25 to the prior art of the query's cut-off (``patent_demo.prior_art``, plus ``base``), then
    re-ranked as ``rerank_run`` does; every query is scored against all its relevant documents (one the
    cut-off hides counts as missed). ``hidden`` in the result counts the relevant documents hidden.
    """
    from patent_demo.metrics.text import evaluate_run
    from patent_demo.text.search import rerank_run

    qids = [q.qid for q in queries]
    if cutoff == "own":
        cutoffs = cutoff_of_queries(qids, corpus)
    else:
        cutoffs = dict.fromkeys(qids, parse_date(cutoff, "cut-off date"))
    allowed = allowed_per_query(qids, corpus, cutoffs, base)
    run = rerank_run(bm25, reranker, queries, corpus, k_first=k_first, k_rerank=k_rerank, allowed=allowed)
    qrels = {q: qrels[q] for q in qids if q in qrels}
    run, kept = apply_cutoff(run, qrels, corpus, cutoffs)
    hidden = hidden_relevant(kept, corpus, cutoffs, base.keep_undated if base else False)
    return evaluate_run(run, kept, ks) | {"hidden": sum(map(len, hidden.values()))}
