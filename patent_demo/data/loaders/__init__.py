"""Loaders that read real patent data formats into a ``patent_demo.data.corpus.Corpus``.

Every loader normalises classification codes through ``patent_demo.taxonomy`` and stores figure
paths relative to the corpus root. Records a loader cannot use are skipped, never fatal, and counted
in an optional ``LoadReport`` passed by the caller::

    report = LoadReport()
    corpus = load_redbook("data/redbook", report=report)
    print(report.summary())

Formats:

- ``uspto``        USPTO Red Book grant folders and weekly ``ipgYYMMDD.xml`` grant files
- ``deeppatent2``  DeepPatent2 per-figure JSON records and its figure file names
- ``manifest``     a user's own CSV/JSONL manifest (one row per figure)
- ``textcorpus``   a JSONL text corpus with TREC qrels, and DSSDNet labelled-pair TSVs
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from patent_demo import taxonomy

log = logging.getLogger("patent_demo.data.loaders")
_SUBCLASS = re.compile(r"\s*([A-H]\d\d[A-Z])(?![A-Z0-9])")


@dataclass
class LoadReport:
    """What a loader read and what it had to leave out.

    ``skipped`` counts skipped records by reason; ``dropped_codes`` counts classification codes
    (``"scheme:code"``) that could not be parsed and were left out of ``Patent.codes``;
    ``coarsened_codes`` counts malformed IPC/CPC codes kept at their subclass (``"H01M/"`` → ``"H01M"``).
    """

    loaded: int = 0
    skipped: Counter = field(default_factory=Counter)
    dropped_codes: Counter = field(default_factory=Counter)
    coarsened_codes: Counter = field(default_factory=Counter)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        parts = [f"loaded {self.loaded}"]
        parts += [f"skipped {n} ({reason})" for reason, n in sorted(self.skipped.items())]
        if self.coarsened_codes:
            parts.append(f"kept {sum(self.coarsened_codes.values())} malformed code(s) at subclass level")
        if self.dropped_codes:
            parts.append(f"dropped {sum(self.dropped_codes.values())} unparsable code(s)")
        return ", ".join(parts)


def normalize_codes(scheme: str, raw: list[str], report: LoadReport | None = None) -> list[str]:
    """Normalise ``raw`` codes of one scheme with ``taxonomy.normalize``; drop blanks and duplicates
    (keeping first-seen order). A malformed IPC/CPC code that starts with a valid subclass is kept as
    that subclass (counted in ``report.coarsened_codes``); other unparsable codes are left out (counted
    in ``report.dropped_codes``)."""
    out: list[str] = []
    for code in raw:
        code = code or ""
        if not code.strip():
            continue
        try:
            norm = taxonomy.normalize(scheme, code)
        except ValueError:
            m = _SUBCLASS.match(code) if scheme in ("ipc", "cpc") else None
            if m is None:
                if report is not None:
                    report.dropped_codes[f"{scheme}:{code.strip()}"] += 1
                log.debug("dropping unparsable %s code %r", scheme, code)
                continue
            norm = taxonomy.normalize(scheme, m.group(1))
            if report is not None:
                report.coarsened_codes[f"{scheme}:{code.strip()}"] += 1
        if norm not in out:
            out.append(norm)
    return out


def codes_dict(report: LoadReport | None = None, **schemes: list[str]) -> dict[str, list[str]]:
    """``{scheme: normalised codes}`` for the schemes that keep at least one code."""
    codes = {scheme: normalize_codes(scheme, raw, report) for scheme, raw in schemes.items()}
    return {scheme: c for scheme, c in codes.items() if c}


from patent_demo.data.loaders.deeppatent2 import (  # noqa: E402
    DeepPatent2Name,
    load_deeppatent2,
    load_deeppatent2_names,
    parse_deeppatent2_name,
)
from patent_demo.data.loaders.manifest import load_manifest  # noqa: E402
from patent_demo.data.loaders.textcorpus import (  # noqa: E402
    LabelledPair,
    load_labelled_pairs,
    load_text_corpus,
    qrels_from_pairs,
    read_pairs,
)
from patent_demo.data.loaders.uspto import (  # noqa: E402
    iter_grant_documents,
    load_grant_xml,
    load_redbook,
    normalize_patent_id,
    parse_grant,
)

__all__ = [
    "DeepPatent2Name",
    "LabelledPair",
    "LoadReport",
    "codes_dict",
    "iter_grant_documents",
    "load_deeppatent2",
    "load_deeppatent2_names",
    "load_grant_xml",
    "load_labelled_pairs",
    "load_manifest",
    "load_redbook",
    "load_text_corpus",
    "normalize_codes",
    "normalize_patent_id",
    "parse_deeppatent2_name",
    "parse_grant",
    "qrels_from_pairs",
    "read_pairs",
]
