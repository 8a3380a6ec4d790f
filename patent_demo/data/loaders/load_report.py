"""What a loader read and what it left out (``LoadReport``), and the classification codes every loader
normalises through ``patent_demo.taxonomy`` (``normalize_codes``, ``codes_dict``)."""

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
