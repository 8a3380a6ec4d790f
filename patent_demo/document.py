"""The whole record of one patent as the examiner opens it, and the links to it on public registers.

``document_view`` gathers what the corpus knows, what an examiner cites: number, title, inventors,
applicants and assignees, application number and date, publication date, every code with its title,
abstract (or, for a design, the figure descriptions with the view each names), claims, every figure, the
family members, every cited reference (those in the corpus open their record) and the citing documents
in the corpus. ``document_html`` renders it as escaped HTML, with the query's BM25-matched words marked
when a query and an index are given; an in-corpus reference is a button with ``data-open-record`` (the
page's script opens that record). ``register_links`` builds the address of the patent on
Espacenet and Google Patents from its number; nothing is fetched.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from patent_demo.data.corpus import Corpus, Patent

_NUMBER = re.compile(r"^(?P<cc>[A-Z]{2})(?P<series>D|RE|PP|H|T)?(?P<digits>\d+)(?P<kind>[A-Z]\d?)?$")


def publication_number(patent: Patent) -> str:
    """The number as registers write it: ``USD0871717`` + kind ``S1`` → ``USD871717S``,
    ``US06836899`` + ``B1`` → ``US6836899B1``, ``EP0049154B2`` unchanged; ``""`` when the id is not
    a publication number (a generated corpus, office ``XX``)."""
    m = _NUMBER.match(patent.id.upper())
    if not m or m.group("cc") == "XX" or (patent.country or "").upper() == "XX":
        return ""
    digits = m.group("digits")
    if m.group("cc") == "US":
        digits = digits.lstrip("0") or "0"
    kind = m.group("kind") or (patent.kind_code or "")
    if m.group("cc") == "US" and m.group("series") == "D" and (kind.startswith("S") or not kind):
        kind = "S"  # US design patents print kind S (S1 in the grant XML), a table without kinds included
    return f"{m.group('cc')}{m.group('series') or ''}{digits}{kind}"


def scheme_code(patent: Patent) -> str:
    """``Locarno 06-01`` / ``IPC D06F 39/08``: the first code of whichever scheme the patent has
    (Locarno, IPC, CPC, USPC in that order), ``"no code"`` without one."""
    scheme = next((s for s in ("locarno", "ipc", "cpc", "uspc") if patent.codes.get(s)), "")
    if not scheme:
        return "no code"
    return f"{'Locarno' if scheme == 'locarno' else scheme.upper()} {patent.codes[scheme][0]}"


def register_links(patent: Patent) -> list[tuple[str, str]]:
    """``[(name, url)]`` of the patent on public registers (empty when it has no public number)."""
    number = publication_number(patent)
    if not number:
        return []
    return [
        ("Espacenet", f"https://worldwide.espacenet.com/patent/search?q=pn%3D{quote(number)}"),
        ("Google Patents", f"https://patents.google.com/patent/{quote(number)}/en"),
    ]


def code_title(scheme: str, code: str, table=None) -> str:
    """The English title of a code (Locarno, IPC/CPC) from ``table`` (``titles.corpus_titles``) or the
    built-in tables; ``""`` when unknown; for USPC the design class's title (``titles.uspc_title``), else
    ``titles.USPC_NO_TITLE``."""
    from patent_demo import titles

    try:
        if scheme == "locarno":
            return titles.locarno_title(code, table) or titles.locarno_title(code[:2], table)
        if scheme in ("ipc", "cpc"):
            return titles.ipc_title(code, table)
        if scheme == "uspc":
            return titles.uspc_title(code) or titles.USPC_NO_TITLE
    except (KeyError, ValueError):
        return ""
    return ""


@dataclass
class FigureView:
    path: str  # absolute image path
    label: str
    view: str
    description: str


@dataclass
class DocumentView:
    id: str
    kind: str
    title: str
    abstract: str
    claims: str
    dates: list[tuple[str, str]]  # (what, ISO date)
    office: str
    kind_code: str
    codes: list[tuple[str, str, str]]  # (scheme, code, title)
    figures: list[FigureView]
    inventors: list[str] = field(default_factory=list)
    applicants: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    application: str = ""  # the application number as printed ("29/750,842")
    described: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (label, view, description) per figure
    drawing_notes: list[str] = field(default_factory=list)  # broken-line notes and the like
    references: list[tuple[str, str, bool, bool]] = field(
        default_factory=list
    )  # (id, title, in corpus, by examiner)
    family: list[tuple[str, str]] = field(default_factory=list)  # (id, title) in the corpus
    same_text: list[tuple[str, str]] = field(
        default_factory=list
    )  # utility patents with this text, not family
    cites: list[tuple[str, str]] = field(default_factory=list)  # the cited references in the corpus
    cited_by: list[tuple[str, str]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    number: str = ""  # the publication number as registers write it (``publication_number``)
    npl: list[tuple[str, bool]] = field(
        default_factory=list
    )  # non-patent literature cited: (text, by examiner)


def family_members(patent: Patent, corpus: Corpus) -> list[str]:
    """Corpus ids of the patent's family, the patent itself left out: the bibliographic family the
    searches use (``patent_demo.families.family_sets``: listed members, shared family ids and application
    numbers, related-application data), in corpus order."""
    from patent_demo.families import family_sets

    family = family_sets(corpus).get(patent.id, frozenset())
    return [p.id for p in corpus if p.id != patent.id and p.id in family]


def document_view(corpus: Corpus, patent_id: str) -> DocumentView:
    """Everything the corpus holds about ``patent_id`` (``KeyError`` naming it when absent)."""
    from patent_demo.families import same_text_sets
    from patent_demo.numbers import application_number
    from patent_demo.titles import corpus_titles

    p = corpus[patent_id]
    table = corpus_titles(corpus)

    def titled(ids) -> list[tuple[str, str]]:
        return [(i, corpus[i].title) for i in ids if i in corpus]

    dates = [
        (what, value)
        for what, value in (("priority", p.priority_date), ("filed", p.filing_date), ("published", p.date))
        if value
    ]
    if not p.date and p.extra.get("issued_month"):  # a collection granted in one month, no day per record
        dates.append(
            ("published", f"{p.extra['issued_month']} (the month of grant; the day is not in the data)")
        )
    codes = [(s, c, code_title(s, c, table)) for s, cs in p.codes.items() for c in cs]
    by_examiner = set(p.extra.get("cited_by_examiner", []))
    references = [
        (i, corpus[i].title if i in corpus else "", i in corpus, i in by_examiner) for i in p.citations
    ]
    described = [
        (d.get("label", ""), d.get("view", ""), d.get("text", ""))
        for d in p.extra.get("figure_descriptions", [])
    ]
    figures = [FigureView(str(corpus.image_path(f)), f.label, f.view, f.description) for f in p.figures]
    cited_by = [q.id for q in corpus if p.id in q.citations]
    return DocumentView(
        id=p.id,
        kind=p.kind,
        title=p.title,
        abstract=p.text,
        claims=p.claims,
        dates=dates,
        office=p.country,
        kind_code=p.kind_code,
        codes=codes,
        figures=figures,
        inventors=list(p.inventors),
        applicants=list(p.applicants),
        assignees=list(p.assignees),
        application=application_number(p.extra.get("application_number", "")),
        described=described,
        drawing_notes=list(p.extra.get("drawing_notes", [])),
        references=references,
        family=titled(family_members(p, corpus)),
        same_text=titled(same_text_sets(corpus).get(p.id, [])),
        cites=titled(p.citations),
        cited_by=titled(cited_by),
        links=register_links(p),
        number=publication_number(p),
        npl=[(c.get("text", ""), bool(c.get("examiner"))) for c in p.extra.get("npl_citations", [])],
    )


def _year(view: DocumentView) -> str:
    """ " (2007)": the year of publication a citation carries, when the record has one."""
    published = dict(view.dates).get("published", "")
    return f" ({published[:4]})" if published[:4].isdigit() else ""


def document_html(view: DocumentView, query: str = "", bm25=None) -> str:
    """The record as escaped HTML (figures are left to an image gallery). With ``query`` and a
    ``BM25Index`` the words BM25 matched are marked in the title, abstract and claims."""
    from patent_demo.text.highlight import highlight_html, matched_spans, query_tokens

    e = html.escape
    tokens = query_tokens(bm25, query) if (query and bm25 is not None) else set()

    def text(t: str) -> str:
        return highlight_html(t, matched_spans(bm25, t, tokens)) if tokens else e(t).replace("\n", "<br>")

    def ids(rows: list[tuple[str, str]]) -> str:
        return ", ".join(f"<b>{e(i)}</b> {e(t)}" for i, t in rows) or "none in this corpus"

    parts = [f"<h3>{e(view.id)} · {text(view.title)}</h3>"]
    meta = [
        *([f"cite as <b>{e(view.number)}</b>{_year(view)}"] if view.number else []),
        f"{e(view.kind)} patent",
        *([f"office {e(view.office)}"] if view.office else []),
        *([f"kind {e(view.kind_code)}"] if view.kind_code else []),
        f"{len(view.figures)} figure(s)",
    ]
    parts.append(f"<p>{' · '.join(meta)}</p>")
    dates = dict(view.dates)

    def names(what: str, people: list[str]) -> str:
        return what + ("s" if len(people) > 1 else "")

    # (heading, value, shown when empty): what an examiner cites, each on its row
    who = [
        (names("Inventor", view.inventors), "; ".join(view.inventors), True),
        (names("Applicant", view.applicants), "; ".join(view.applicants), False),
        (names("Assignee", view.assignees), "; ".join(view.assignees), False),
        ("Application number", view.application, True),
        ("Application (filing) date", dates.get("filed", ""), True),
        ("Earliest priority", dates.get("priority", ""), True),
        ("Publication date", dates.get("published", ""), True),
    ]
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v) or '–'}</td></tr>" for k, v, always in who if v or always)
    parts.append(f"<table class='record-biblio'>{rows}</table>")
    if view.links:
        parts.append(
            "<p>On public registers: "
            + " · ".join(
                f'<a href="{e(u, quote=True)}" target="_blank" rel="noopener">{e(n)}</a>'
                for n, u in view.links
            )
            + "</p>"
        )
    if view.codes:
        rows = "".join(
            f"<tr><td>{e(s)}</td><td>{e(c)}</td><td>{e(t) or '–'}</td></tr>" for s, c, t in view.codes
        )
        parts.append(f"<table><tr><th>scheme</th><th>code</th><th>title</th></tr>{rows}</table>")
    if view.described:  # a design: the text is its figure descriptions, shown as such
        rows = "".join(
            f"<tr><td>{e(label)}</td><td>{e(v) or '–'}</td><td>{text(d)}</td></tr>"
            for label, v, d in view.described
        )
        parts.append(
            "<h4>Figures (description of the drawings)</h4><table class='record-figures'>"
            f"<tr><th>figure</th><th>view</th><th>description</th></tr>{rows}</table>"
        )
        parts += [f"<p><small>{e(n)}</small></p>" for n in view.drawing_notes]
    else:
        parts.append(
            f"<h4>{'Abstract' if view.kind == 'utility' else 'Description'}</h4><p>{text(view.abstract) or '–'}</p>"
        )
    if view.claims:
        parts.append(f"<h4>Claims</h4><p>{text(view.claims)}</p>")
    parts.append(f"<p><b>Family in the corpus:</b> {ids(view.family)}</p>")
    if view.same_text:
        parts.append(f"<p><b>Same text (not family):</b> {ids(view.same_text)}</p>")
    parts.append(references_html(view.references))
    if view.npl:
        items = "".join(f"<li>{e(t)}{'*' if ex else ''}</li>" for t, ex in view.npl)
        parts.append(
            f"<div class='record-npl'><p><b>Non-patent literature cited:</b> {len(view.npl)}</p><ul>{items}</ul></div>"
        )
    parts.append(f"<p><b>Cited by (in the corpus):</b> {ids(view.cited_by)}</p>")
    return "\n".join(parts)


def references_html(references: list[tuple[str, str, bool, bool]]) -> str:
    """The cited references: those in the corpus as buttons that open their record (``data-open-record``),
    the others as numbers; ``*`` marks a reference the examiner cited, as the printed patent does."""
    e = html.escape
    if not references:
        return "<p><b>References cited:</b> none listed</p>"
    inside = [r for r in references if r[2]]
    items = []
    for pid, title, in_corpus, by_examiner in references:
        star = "*" if by_examiner else ""
        if in_corpus:
            items.append(
                f'<button type="button" class="record-link" data-open-record="{e(pid, quote=True)}" '
                f'title="open {e(pid, quote=True)}">{e(pid)}{star}</button> {e(title)}'
            )
        else:
            items.append(f"<span class='record-ref'>{e(pid)}{star}</span>")
    head = (
        f"<b>References cited:</b> {len(references)}, {len(inside)} in this corpus (a button opens its record)"
        + (" · * cited by the examiner" if any(r[3] for r in references) else "")
    )
    return f"<div class='record-refs'><p>{head}</p><p>{' · '.join(items)}</p></div>"
