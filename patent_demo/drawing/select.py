"""Which drawing model a corpus gets when none is named: a head trained on one classification scheme is
the default only on a corpus of that scheme.

A drawing checkpoint records the scheme of the classes it was trained on (``config.json`` -> ``scheme``:
``uspc`` for the USPC 2007 drawings, ``locarno`` for Red Book pages). The shipped default was chosen on
USPC validation; on Red Book (Locarno) validation pages every USPC-trained head scores below the
untouched trunk (``docs/results_hmcl_uspc.md``), and so does every such head beside the trunk at every trunk
weight below 1 (``docs/results.md``, the Red Book sweep), so a Locarno corpus gets ``zero-shot``, the best there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from patent_demo.checkpoint import config_or_none

SCHEMES = ("locarno", "uspc")


def checkpoint_class_scheme(path: str | os.PathLike | None) -> str | None:
    """The class scheme a drawing checkpoint was trained on, or None (built-in model, not recorded)."""
    scheme = (config_or_none(path) or {}).get("scheme")
    return str(scheme) if scheme in SCHEMES else None


def corpus_class_scheme(patents: Sequence[Any]) -> str | None:
    """``locarno`` or ``uspc`` when most patents carry codes of that scheme (Locarno first), else None."""
    patents = list(patents)
    half = max(1, len(patents)) / 2
    for scheme in SCHEMES:
        if sum(1 for p in patents if p.codes.get(scheme)) >= half:
            return scheme
    return None


def drawing_model_for_corpus(
    specs: Sequence[Any], patents: Sequence[Any], fallback: str = "zero-shot"
) -> Any:
    """The first of ``specs`` (the registry's order: the declared default leads), unless it was trained on
    another class scheme than the corpus's drawings (its patents with figures; all of them when none has
    any): then the ``fallback`` model (the untouched trunk)."""
    first = specs[0]
    drawn = [p for p in patents if getattr(p, "figures", None)] or list(patents)
    trained_on, corpus = checkpoint_class_scheme(getattr(first, "path", None)), corpus_class_scheme(drawn)
    if trained_on and corpus and trained_on != corpus:
        return next((s for s in specs if s.key == fallback), first)
    return first
