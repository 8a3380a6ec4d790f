"""Patent families for honest splits: patents that must never sit on both sides of a split.

Union-find over three links:

1. listed family members (``Patent.extra["family_members"]``) that are in the corpus, and patents that
   share a family id (``Patent.extra["family"]``);
2. given family pairs (``in_corpus_family_pairs.tsv`` and the like);
3. identical normalised texts: title + abstract lower-cased, every run of non-word characters made one
   space (:func:`text_key`). Continuations and divisions of one application repeat the parent's title
   and abstract word for word but are not listed as its family; this link joins them.

A family is keyed by its smallest patent id. ``train/text_split.py`` draws the committed text split
from these families, ``tests/test_text_split.py`` checks that no test query has a twin in training, and
the result lists collapse to one hit per family with the same links (``patent_demo.families``).
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


def families(
    patents: Iterable[Patent], pairs: Iterable[tuple[str, str]] = (), same_text: bool = True
) -> dict[str, str]:
    """``{patent id: family key}`` over ``patents`` (links 1-3 of the module docstring; ``same_text``
    False leaves out the identical-text link). Pairs naming a patent outside ``patents`` are ignored."""
    patents = list(patents)
    ids = {p.id for p in patents}
    uf = UnionFind(sorted(ids))
    by_text: dict[str, str] = {}
    by_family: dict[str, str] = {}
    for p in patents:
        for m in (p.extra or {}).get("family_members") or []:
            if m in ids:
                uf.union(p.id, m)
        fam = (p.extra or {}).get("family")
        if fam:
            uf.union(p.id, by_family.setdefault(str(fam), p.id))
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
