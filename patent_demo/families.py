"""Patent families in result lists: one hit per family, the other members listed under it.

A family is what ``patent_demo.data.families`` joins: the corpus's own family fields
(``extra["family_members"]`` lists, a shared ``extra["family"]`` id) and identical normalised texts
(continuations repeat their parent's title and abstract). ``collapse`` keeps the best-ranked member of each family and
puts the ids of the members it absorbed into that hit's extras (``family_also``), so a list of k shows k
families instead of spending slots on the same invention filed twice.
"""

from __future__ import annotations

from patent_demo.data.corpus import Corpus
from patent_demo.data.families import families
from patent_demo.results import Results


def family_sets(corpus: Corpus) -> dict[str, frozenset[str]]:
    """Per corpus id, its family in the corpus (itself included): the links of
    ``patent_demo.data.families.families`` (listed members, shared family ids, identical texts), the same
    families the text split is drawn from; cached on the corpus."""
    cached = corpus.__dict__.get("_family_sets")
    if cached is not None:
        return cached
    key = families(corpus.patents)
    groups: dict[str, set[str]] = {}
    for pid, root in key.items():
        groups.setdefault(root, set()).add(pid)
    out = {pid: frozenset(groups[root]) for pid, root in key.items()}
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
