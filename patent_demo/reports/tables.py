"""Seed tables: mean ± sample std over seeds, cells of three decimals and bootstrap intervals, Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for one value); NaN for no values (None and NaN skipped)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return float("nan"), float("nan")
    m = math.fsum(vals) / len(vals)
    if len(vals) == 1:
        return m, 0.0
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in vals) / (len(vals) - 1))


def cell(m: float, s: float | None = None) -> str:
    """``m ± s`` at three decimals (``m`` alone without ``s``); ``n/a`` for NaN."""
    if m is None or math.isnan(m):
        return "n/a"
    return f"{m:.3f}" if s is None else f"{m:.3f} ± {s:.3f}"


def interval_cell(b: dict | None) -> str:
    """A bootstrap result as ``+d [+low, +high]`` (``—`` when there is none)."""
    return "—" if not b else f"{b['diff']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}]"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """A markdown table (with ``caption`` and a blank line above it when given)."""
    lines = [caption, ""] if caption else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
