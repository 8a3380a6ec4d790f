"""Which re-ranker checkpoint suits a corpus: the one trained for the corpus's classification scheme.

A DSSDNet checkpoint records the scheme its domain label ``t`` comes from (``config.json`` ->
``model.domain_scheme``: ``ipc`` for utility-patent corpora, ``locarno`` for design ones). A model
trained on Locarno subclasses, used on an IPC corpus, ignores the codes and guesses ``t``; so the
workbench prefers a checkpoint whose scheme matches the corpus's (``Workbench.text_domain_scheme``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from patent_demo.checkpoint import config_or_none


def checkpoint_scheme(path: str | os.PathLike | None) -> str | None:
    """The domain scheme of a DSSDNet checkpoint directory, or None (no checkpoint, unreadable)."""
    config = config_or_none(path) or {}
    if config.get("kind") != "dssdnet":
        return None
    scheme = (config.get("model") or {}).get("domain_scheme")
    return str(scheme) if scheme else None


def corpus_scheme(patents: Sequence[Any]) -> str:
    """The domain scheme of a corpus: IPC when most of its patents carry IPC codes, else Locarno."""
    patents = list(patents)
    with_ipc = sum(1 for p in patents if p.codes.get("ipc"))
    return "ipc" if with_ipc * 2 >= max(1, len(patents)) else "locarno"


def text_model_for_scheme(specs: Sequence[Any], scheme: str) -> Any | None:
    """The first trained DSSDNet model spec (``registry.ModelSpec``: ``kind``, ``path``, ``trained``)
    whose checkpoint was trained for ``scheme``; None when there is none (the caller keeps its default)."""
    for spec in specs:
        if getattr(spec, "kind", "") != "dssdnet" or not getattr(spec, "trained", False):
            continue
        if checkpoint_scheme(getattr(spec, "path", None)) == scheme:
            return spec
    return None
