"""Seed tables: mean ± sample std over seeds, paired bootstraps against a reference, cells of three decimals and
bootstrap intervals, Markdown tables and their JSON beside them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from patent_demo.metrics import paired_bootstrap


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


def write_table(prefix: str | Path, markdown: str, payload) -> Path:
    """``<prefix>.md`` and ``<prefix>.json`` (sorted keys, one space indent); returns the prefix path."""
    table = Path(prefix)
    table.parent.mkdir(parents=True, exist_ok=True)
    table.with_suffix(".md").write_text(markdown, encoding="utf-8")
    table.with_suffix(".json").write_text(
        json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return table


def seed_stats(rows: Sequence[dict], columns: Sequence[str]) -> dict:
    """``{"n", "mean": {col}, "std": {col}}`` of the rows (one dict of column values per seed)."""
    stats = {col: mean_std([row.get(col) for row in rows]) for col in columns}
    return {
        "n": len(rows),
        "mean": {c: s[0] for c, s in stats.items()},
        "std": {c: s[1] for c, s in stats.items()},
    }


def seed_mean(runs: dict[str, dict], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query scores (``per_query``) averaged over a variant's seeds (NaN where undefined)."""
    out = {}
    for col in columns:
        stack = np.asarray(
            [[np.nan if v is None else v for v in r["per_query"][col]] for r in runs.values()], dtype=float
        )
        out[col] = np.nanmean(stack, axis=0) if stack.size else stack
    return out


def summarise_against(
    results: dict[str, dict[str, dict]], reference: str, columns: Sequence[str], n_boot: int
) -> dict:
    """``{variant: {"runs", "n", "mean", "std", "macro_mean", "macro_std", "bootstrap"}}`` of evaluations
    with ``metrics``, ``macro``, ``per_query`` and ``query_patents``: mean ± std over seeds of the micro and
    macro means, and a paired cluster bootstrap (patents resampled) of each variant's seed-averaged
    per-query scores against ``reference``'s."""
    ref = results.get(reference, {})
    ref_pq = seed_mean(ref, columns) if ref else None
    out = {}
    for variant, runs in results.items():
        if not runs:
            continue
        rows = list(runs.values())
        micro = seed_stats([r["metrics"] for r in rows], columns)
        macro = seed_stats([r["macro"] for r in rows], columns)
        entry: dict = {
            "runs": sorted(runs),
            "n": len(rows),
            "mean": micro["mean"],
            "std": micro["std"],
            "macro_mean": macro["mean"],
            "macro_std": macro["std"],
            "bootstrap": {},
        }
        if ref_pq is not None and variant != reference:
            pq, groups = seed_mean(runs, columns), rows[0]["query_patents"]
            entry["bootstrap"] = {
                c: paired_bootstrap(pq[c], ref_pq[c], groups, n_boot, seed=0) for c in columns
            }
        out[variant] = entry
    return out
