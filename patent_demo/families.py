"""Patent families in result lists: one hit per family, the other members listed under it.

A family is what the corpus itself records (``document.family_members``: ``extra["family_members"]``
lists or a shared ``extra["family"]`` id). ``collapse`` keeps the best-ranked member of each family and
puts the ids of the members it absorbed into that hit's extras (``family_also``), so a list of k shows k
families instead of spending slots on the same invention filed twice.
"""

from __future__ import annotations

from patent_demo.data.corpus import Corpus
from patent_demo.results import Results


def family_sets(corpus: Corpus) -> dict[str, frozenset[str]]:
    """Per corpus id, its family in the corpus (itself included), from the corpus's own family fields;
    cached on the corpus."""
    cached = corpus.__dict__.get("_family_sets")
    if cached is not None:
        return cached
    by_family: dict[str, set[str]] = {}
    parent: dict[str, str] = {p.id: p.id for p in corpus}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: str, b: str) -> None:
        parent[root(a)] = root(b)

    for p in corpus:
        for other in p.extra.get("family_members") or []:
            if other in parent and other != p.id:
                join(p.id, other)
        fam = p.extra.get("family")
        if fam:
            by_family.setdefault(str(fam), set()).add(p.id)
    for members in by_family.values():
        first, *rest = sorted(members)
        for m in rest:
            join(first, m)
    groups: dict[str, set[str]] = {}
    for pid in parent:
        groups.setdefault(root(pid), set()).add(pid)
    out = {pid: frozenset(groups[root(pid)]) for pid in parent}
    corpus.__dict__["_family_sets"] = out
    return out


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
    return Results([results.ids[i] for i in kept], results.scores[kept], new_extras)
