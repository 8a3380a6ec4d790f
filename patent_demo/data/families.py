"""Patent families for honest splits: patents that must never sit on both sides of a split.

Union-find over these links:

1. bibliographic data (:func:`family_refs`): listed family members (``Patent.extra["family_members"]``)
   that are in the corpus, a shared family id (``extra["family"]``), a shared application number
   (``extra["application_number"]``) and the related-application data of continuations and divisions
   (``extra["related"]``: ``application:N`` / ``grant:ID`` of the parents);
2. given family pairs (``in_corpus_family_pairs.tsv`` and the like);
3. with ``same_text`` only, identical normalised texts: title + abstract lower-cased, every run of
   non-word characters made one space (:func:`text_key`).

A family is keyed by its smallest patent id. The result lists, the exclusion of a query's own patent and
the record page read the bibliographic families (links 1 and 2: ``patent_demo.families``): two design
patents whose title and figure descriptions are the same boilerplate are separate designs.
``train/text/split.py`` draws the committed text split with link 3 as well, so that no test query has a
word-for-word twin in training (``tests/test_text_split.py``); identical abstracts of utility patents are
shown in the lists as "same text" (``patent_demo.families.same_text_sets``), never hidden.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from patent_demo.data.corpus import Patent


def text_key(patent: Patent) -> str:
    """Title + abstract, lower case, non-word runs collapsed to one space ("" when both are empty)."""
    return re.sub(r"\W+", " ", f"{patent.title} {patent.text}".lower()).strip()


class UnionFind:
    """Union-find whose root is the smallest member (so family keys do not depend on input order)."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self.parent: dict[str, str] = {x: x for x in items}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def family_refs(patent: Patent) -> list[str]:
    """The bibliographic references that join ``patent`` to its family: ``family:F`` (a shared family
    id), ``application:N`` (its own application number and those of its parents), ``grant:ID`` (its
    parents' grants and its own number, so a continuation reaches the grant it names)."""
    extra = patent.extra or {}
    refs = [f"grant:{patent.id}", *(str(r) for r in extra.get("related") or [])]
    if extra.get("application_number"):
        refs.append(f"application:{extra['application_number']}")
    if extra.get("family"):
        refs.append(f"family:{extra['family']}")
    return refs


def families(
    patents: Iterable[Patent], pairs: Iterable[tuple[str, str]] = (), same_text: bool = True
) -> dict[str, str]:
    """``{patent id: family key}`` over ``patents`` (links 1-3 of the module docstring; ``same_text``
    False leaves out the identical-text link). Pairs naming a patent outside ``patents`` are ignored."""
    patents = list(patents)
    ids = {p.id for p in patents}
    uf = UnionFind(sorted(ids))
    by_text: dict[str, str] = {}
    by_ref: dict[str, str] = {}
    for p in patents:
        for m in (p.extra or {}).get("family_members") or []:
            if m in ids:
                uf.union(p.id, m)
        for ref in family_refs(p):
            uf.union(p.id, by_ref.setdefault(ref, p.id))
        key = text_key(p)
        if same_text and key:
            if key in by_text:
                uf.union(p.id, by_text[key])
            else:
                by_text[key] = p.id
    for a, b in pairs:
        if a in ids and b in ids:
            uf.union(a, b)
    return {pid: uf.find(pid) for pid in sorted(ids)}
