"""Per-unit means and the paired bootstrap of two systems scored on the same queries.

``macro_mean`` averages per-query values within each group (a patent) and then over groups, so a
patent with many drawing pages weighs as much as one with few. ``paired_bootstrap`` resamples the
units (queries, or patents for a macro mean) with replacement and reports the mean difference with a
percentile interval and a two-sided p-value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def group_means(values: Sequence[float | None], groups: Sequence[str]) -> dict[str, float]:
    """{group: mean of its defined values} (groups whose values are all undefined are left out)."""
    x = _array(values)
    if len(x) != len(groups):
        raise ValueError(f"{len(x)} values for {len(groups)} groups")
    out: dict[str, list[float]] = {}
    for v, g in zip(x, groups, strict=True):
        if not np.isnan(v):
            out.setdefault(str(g), []).append(float(v))
    return {g: float(np.mean(v)) for g, v in out.items()}


def mean_defined(values: Sequence[float | None]) -> float | None:
    x = _array(values)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else None


def macro_mean(values: Sequence[float | None], groups: Sequence[str]) -> float | None:
    """The mean over groups of each group's mean (``None`` when no value is defined)."""
    means = list(group_means(values, groups).values())
    return float(np.mean(means)) if means else None


@dataclass(frozen=True)
class PairedDifference:
    """``mean_a - mean_b`` over ``n`` paired units, its bootstrap interval and two-sided p-value."""

    n: int
    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    p_value: float
    level: float
    resamples: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def paired_bootstrap(
    a: Sequence[float | None],
    b: Sequence[float | None],
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Paired bootstrap of ``mean(a) - mean(b)`` over the units where both are defined."""
    xa, xb = _array(a), _array(b)
    if xa.shape != xb.shape:
        raise ValueError(f"paired values must have one entry per unit: {xa.shape} vs {xb.shape}")
    keep = ~(np.isnan(xa) | np.isnan(xb))
    xa, xb = xa[keep], xb[keep]
    n = int(xa.size)
    if n == 0:
        raise ValueError("no unit has a value for both systems")
    d = xa - xb
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    boot = d[idx].mean(axis=1)
    alpha = (1.0 - level) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    p = min(1.0, 2 * min(float((boot <= 0).mean()), float((boot >= 0).mean())))
    return PairedDifference(n, float(xa.mean()), float(xb.mean()), float(d.mean()), float(low), float(high),
                            p, level, resamples)  # fmt: skip


def group_pairs(
    a: Sequence[float | None], b: Sequence[float | None], groups: Sequence[str]
) -> tuple[list[float | None], list[float | None]]:
    """Per-group means of two systems on the same units, aligned by group (for a macro bootstrap)."""
    ma, mb = group_means(a, groups), group_means(b, groups)
    keys = sorted(set(ma) | set(mb))
    return [ma.get(k) for k in keys], [mb.get(k) for k in keys]
