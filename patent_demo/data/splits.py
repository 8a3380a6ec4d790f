"""Split files: train/val/test lists of patent ids, drawn once by a stated rule and committed, so every tool
(``corpus build --splits``, the training scripts, ``evaluate``) scores the same test set.

A split file is JSON: ``{"train": [ids], "val": [ids], "test": [ids], "rule": "...", "command": "..."}``.
:func:`class_stratified_splits` is the rule of ``splits/uspc2007.json`` (the 1,000 USPC 2007 drawings). A
*query* split file (``splits/cs3245_text.json``, written by ``train/text/split.py``) lists only the query
patents; a corpus built with it keeps each query, and the family holding it, in the query's split and draws
the other families as usual (:func:`with_query_splits`), so the corpus's saved test queries are the file's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

SPLIT_NAMES = ("train", "val", "test")
# period-10 deal: 6 train, 2 val, 2 test; neighbours in the sorted order (same subclass) share a split
DEAL = ("train",) * 6 + ("val",) * 2 + ("test",) * 2
RULE = (
    "by patent, stratified by class: patents sorted by (main class, subclass, sha1('{seed}:' + patent id)); "
    "the i-th goes to train if i mod 10 < 6, val if i mod 10 is 6 or 7, test if 8 or 9 (60/20/20; every "
    "main class spread over the three splits, and consecutive members of a subclass share a split so "
    "val and test hold subclass pairs)"
)


def class_stratified_splits(classes: Mapping[str, tuple[str, str]], seed: int = 0) -> dict[str, list[str]]:
    """Train/val/test ids by :data:`RULE`: ``classes`` maps each patent id to ``(main key, subclass key)``.

    >>> s = class_stratified_splits({f"p{i}": ("D1", "D1/1") for i in range(10)})
    >>> [len(s[k]) for k in SPLIT_NAMES]
    [6, 2, 2]
    """
    order = sorted(
        classes,
        key=lambda p: (classes[p][0], classes[p][1], hashlib.sha1(f"{seed}:{p}".encode()).hexdigest()),
    )
    out: dict[str, list[str]] = {k: [] for k in SPLIT_NAMES}
    for i, pid in enumerate(order):
        out[DEAL[i % len(DEAL)]].append(pid)
    return {k: sorted(v) for k, v in out.items()}


def read_splits_file(path: str | os.PathLike, ids: set[str] | None = None) -> dict[str, list[str]]:
    """The splits of a split file; with ``ids`` (the corpus's patents), every id must lie in exactly one
    split and every split id must be a corpus patent, else ``ValueError`` naming a few offenders."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    splits = {k: sorted(raw.get(k) or []) for k in SPLIT_NAMES}
    seen: dict[str, str] = {}
    for name, members in splits.items():
        for pid in members:
            if pid in seen:
                raise ValueError(f"{path}: patent {pid} is in both {seen[pid]} and {name}")
            seen[pid] = name
    if ids is not None:
        missing, extra = sorted(ids - set(seen)), sorted(set(seen) - ids)
        if missing or extra:
            raise ValueError(
                f"{path} does not match the corpus: {len(missing)} corpus patents in no split "
                f"({', '.join(missing[:3])}), {len(extra)} split ids not in the corpus ({', '.join(extra[:3])})"
            )
    return splits


def is_query_split(raw: Mapping) -> bool:
    """A split file of query patents only (``train/text/split.py`` writes ``split_of_family`` beside them)."""
    return "split_of_family" in raw


def with_query_splits(
    queries: Mapping[str, list[str]], family_of: Mapping[str, str], drawn: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    """Corpus splits from ``drawn`` (every patent, by family) with the committed query split on top: every
    patent of a family holding a query goes to that query's split. Queries not in the corpus are ignored;
    one family holding queries of two splits raises ``ValueError`` (the file and the corpus disagree on
    what a family is)."""
    split_of = {pid: name for name, ids in drawn.items() for pid in ids}
    fixed: dict[str, str] = {}
    for name in SPLIT_NAMES:
        for q in queries.get(name) or []:
            if q not in family_of:
                continue
            fam = family_of[q]
            if fixed.setdefault(fam, name) != name:
                raise ValueError(f"family {fam} holds queries of the {fixed[fam]} and {name} splits")
    for pid, fam in family_of.items():
        if fam in fixed:
            split_of[pid] = fixed[fam]
    out: dict[str, list[str]] = {k: [] for k in SPLIT_NAMES}
    for pid, name in split_of.items():
        out[name].append(pid)
    return {k: sorted(v) for k, v in out.items()}
