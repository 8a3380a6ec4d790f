"""The paired bootstrap of two systems scored on the same queries: the one implementation every report,
trainer and CLI uses (drawing and text alike)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    groups: Sequence[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, float]:
    """Paired bootstrap of ``mean(a) - mean(b)`` over queries scored by two systems (NaN pairs dropped).

    With ``groups`` (e.g. each query's patent) whole groups are resampled (a cluster bootstrap: the pages
    of one patent are not independent queries); groups are indexed in sorted order, so one group per query
    with the query ids sorted resamples the queries in their given order. Without ``groups`` each query is
    its own group (named by its position as a string). Returns ``{"diff", "low", "high", "p_le_0"}``: the
    observed difference, the percentile interval at ``level`` (``numpy.percentile``, linear) and the share
    of resamples with a difference <= 0.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired_bootstrap: {a.shape} and {b.shape} differ")
    keep = ~(np.isnan(a) | np.isnan(b))
    d = (a - b)[keep]
    if not d.size:
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "p_le_0": float("nan")}
    g = np.asarray([str(x) for x in groups])[keep] if groups is not None else np.arange(d.size).astype(str)
    names, inverse = np.unique(g, return_inverse=True)
    sums = np.bincount(inverse, weights=d, minlength=len(names))
    counts = np.bincount(inverse, minlength=len(names)).astype(np.float64)
    rng = np.random.default_rng(seed)
    draw = rng.integers(0, len(names), size=(n_boot, len(names)))
    boot = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    tail = round(100.0 * (1.0 - level) / 2.0, 10)  # 2.5 for 95 %, exactly
    low, high = np.percentile(boot, [tail, 100.0 - tail])
    return {
        "diff": float(d.mean()),
        "low": float(low),
        "high": float(high),
        "p_le_0": float((boot <= 0).mean()),
    }


def interval(result: dict[str, float]) -> dict:
    """The ``{"mean", "ci95", "p_le_0"}`` form of a :func:`paired_bootstrap` result (the text reports')."""
    return {"mean": result["diff"], "ci95": [result["low"], result["high"]], "p_le_0": result["p_le_0"]}
