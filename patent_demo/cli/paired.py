"""What every ``patent-demo evaluate`` prints and writes: per-metric means over queries and over patents, the
paired bootstrap of a model against a baseline (queries resampled, and whole patents resampled), the table
and the JSON file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from patent_demo.metrics import macro_means, paired_bootstrap


def arrays(per_query: dict, keys: list[str]) -> dict[str, np.ndarray]:
    return {k: np.array([np.nan if v is None else v for v in per_query[k]], dtype=np.float64) for k in keys}


def finite_or_none(x: float) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def summaries(per_query: dict, groups: list[str], keys: list[str]) -> dict:
    """Per metric: the mean over queries and the mean over patents of each patent's query mean."""
    values = arrays(per_query, keys)
    macro = macro_means(values, groups) if groups else {}
    return {
        k: {
            "per_query": finite_or_none(np.nanmean(v)) if np.isfinite(v).any() else None,
            "per_patent": finite_or_none(macro.get(k, np.nan)),
        }
        for k, v in values.items()
    }


def compare(a: dict, b: dict, groups: list[str], keys: list[str], resamples: int, seed: int) -> dict:
    """Paired bootstrap of model - baseline: queries resampled independently, and whole patents resampled
    (the pages of one patent are not independent queries)."""
    xa, xb = arrays(a, keys), arrays(b, keys)
    return {
        k: {
            "per_query": paired_bootstrap(xa[k], xb[k], n_boot=resamples, seed=seed),
            "per_patent": paired_bootstrap(xa[k], xb[k], groups=groups, n_boot=resamples, seed=seed),
        }
        for k in keys
    }


def table(result: dict, keys: list[str]) -> str:
    lines = [f"{result['task']} · corpus {result['corpus']} ({result['source']}) · {result['evaluated']}"]
    lines.append(f"model {result['model']}" + (f" vs {result['against']}" if result.get("against") else ""))
    lines.append(
        f"queries {result['num_queries']} from {result['num_patents']} patents"
        + (f", gallery {result['num_gallery']}" if result.get("num_gallery") else "")
    )
    head = f"{'metric':18s} {'per query':>10s} {'per patent':>11s}"
    if result.get("against"):
        head += f"  {'baseline':>9s} {'diff [95% CI, patents resampled]':>34s} {'P(<=0)':>6s}"
    lines += ["", head, "-" * len(head)]
    for k in keys:
        s = result["summary"][k]
        fmt = lambda v: f"{v:.4f}" if v is not None else "n/a"  # noqa: E731
        row = f"{k:18s} {fmt(s['per_query']):>10s} {fmt(s['per_patent']):>11s}"
        if result.get("against"):
            c = result["comparison"][k]["per_patent"]
            ci = f"{c['diff']:+.4f} [{c['low']:+.4f}, {c['high']:+.4f}]"
            row += f"  {fmt(result['baseline_summary'][k]['per_query']):>9s} {ci:>34s} {c['p_le_0']:6.3f}"
        lines.append(row)
    return "\n".join(lines)


def write_json(result: dict, path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# -- drawings -------------------------------------------------------------------------------------------------
