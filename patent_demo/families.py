"""Patent families in result lists: one hit per family, the other members listed under it.

A family is what the bibliographic data joins (``patent_demo.data.families.families`` without its
identical-text link): listed members (``extra["family_members"]``), a shared family id or application
number, and the related-application data of continuations and divisions. Identical boilerplate never
makes a family: design patents of one applicant often share a title and figure descriptions word for word
and are still separate designs. ``family_sets`` is the one definition the lists, the exclusion of a
query's own patent and the record page read. ``collapse`` keeps the best-ranked member of each family and
puts the ids of the members it absorbed into that hit's extras (``family_also``), so a list of k shows k
families instead of spending slots on the same invention filed twice.

``same_text_sets`` is a signal only: utility patents with the same normalised title and abstract (a
continuation not listed as family, say) are marked "same text" in the lists and on the record page; they
are neither collapsed nor left out.
"""

from __future__ import annotations

from patent_demo.data.corpus import Corpus
from patent_demo.data.families import families, text_key
from patent_demo.results import Results


def family_sets(corpus: Corpus) -> dict[str, frozenset[str]]:
    """Per corpus id, its family in the corpus (itself included) from bibliographic data only (listed
    members, shared family ids and application numbers, related-application data); cached on the corpus."""
    return corpus.derived("family_sets", lambda: _family_sets(corpus))


def _family_sets(corpus: Corpus) -> dict[str, frozenset[str]]:
    key = families(corpus.patents, same_text=False)
    groups: dict[str, set[str]] = {}
    for pid, root in key.items():
        groups.setdefault(root, set()).add(pid)
    return {pid: frozenset(groups[root]) for pid, root in key.items()}


def own_and_family(corpus, patent_id: str) -> set[str]:
    """The ids a search for ``patent_id``'s own drawing or text leaves out: the patent and its family, the
    same bibliographic family that collapses hits and that its record lists (``families.family_sets``)."""
    if patent_id not in corpus:
        return set()
    return {patent_id, *family_sets(corpus).get(patent_id, ())}


def same_text_sets(corpus: Corpus) -> dict[str, list[str]]:
    """Per utility patent that has them, the other utility patents of the corpus with the same normalised
    title and abstract and outside its family (a signal for the examiner; design patents never: their
    text is boilerplate); cached on the corpus."""
    return corpus.derived("same_text", lambda: _same_text_sets(corpus))


def _same_text_sets(corpus: Corpus) -> dict[str, list[str]]:
    fam = family_sets(corpus)
    by_text: dict[str, list[str]] = {}
    for p in corpus.patents:
        key = text_key(p) if p.kind != "design" else ""
        if key:
            by_text.setdefault(key, []).append(p.id)
    return {
        pid: others
        for ids in by_text.values()
        for pid in ids
        if (others := [q for q in ids if q not in fam.get(pid, {pid})])
    }


def collapse(results: Results, corpus: Corpus, k: int | None = None) -> Results:
    """``results`` with one hit per family (its best-ranked member), the others in its
    ``extras["family_also"]`` (rank order), cut to ``k``."""
    families = family_sets(corpus)
    extras = list(results.extras) if results.extras is not None else [{} for _ in results.ids]
    kept: list[int] = []
    head: dict[frozenset[str], int] = {}
    also: dict[int, list[str]] = {}
    for i, pid in enumerate(results.ids):
        fam = families.get(pid, frozenset({pid}))
        if fam in head:
            also.setdefault(head[fam], []).append(pid)
            continue
        head[fam] = i
        kept.append(i)
    kept = kept[:k] if k is not None else kept
    new_extras = [{**(extras[i] or {}), **({"family_also": also[i]} if i in also else {})} for i in kept]
    own = results.rerank_scores[kept] if results.rerank_scores is not None else None
    return Results([results.ids[i] for i in kept], results.scores[kept], new_extras, own)
