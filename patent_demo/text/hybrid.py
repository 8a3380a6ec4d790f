"""The hybrid first stage: BM25 and the dense bi-encoder fused into one list.

Two fusions, each with BM25's weight ``w`` in [0, 1] chosen on validation queries
(:func:`tune_hybrid`; never the test split):

* ``minmax`` (score fusion): over the union of both lists, ``w * mm(bm25) + (1 - w) * mm(dense)``,
  ``mm`` the min-max normalisation of one list's scores over that list, and a document missing from a
  list scoring 0 there (it lies below that list's depth);
* ``rrf`` (weighted reciprocal rank fusion): ``w / (60 + r_bm25) + (1 - w) / (60 + r_dense)``, ranks
  from 1, a missing document contributing 0.

Ties keep the order of the dense list, then BM25's. Every item's extras carry ``bm25_rank`` and
``dense_rank`` (None when that stage did not return it): the explanation panel shows them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from patent_demo.results import Results
from patent_demo.text.fusion import RRF_K, minmax

METHODS = ("minmax", "rrf")
HYBRID_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "hybrid.json"


@dataclass(frozen=True)
class HybridSettings:
    """How the hybrid list is made: ``method`` (minmax or rrf), BM25's ``weight``, the ``depth`` each
    first stage contributes, and where the weight was chosen (``tuned_on``; "" when it was not)."""

    method: str = "minmax"
    weight: float = 0.5
    depth: int = 1000
    tuned_on: str = ""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown hybrid method {self.method!r}; choose one of {METHODS}")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"hybrid weight must lie in [0, 1]; got {self.weight}")
        if self.depth < 1:
            raise ValueError(f"hybrid depth must be >= 1; got {self.depth}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> HybridSettings:
        return cls(**{k: d[k] for k in ("method", "weight", "depth", "tuned_on") if k in d})


def load_hybrid_settings(path: str | Path | None = None) -> HybridSettings:
    """The settings in ``path`` (a JSON object, or a checkpoint's ``config.json`` with a ``hybrid``
    entry); default: ``patent_demo/configs/hybrid.json``, the untrained hybrid's validation choice."""
    path = Path(path) if path is not None else HYBRID_CONFIG
    data = json.loads(path.read_text(encoding="utf-8"))
    return HybridSettings.from_dict(data.get("hybrid", data))


def default_text_list() -> str:
    """The list the workbench ships as its default (``hybrid.json`` ``default_list``: the best list on
    validation, see ``docs/results_text.md``); ``hybrid`` when the file names none."""
    data = json.loads(HYBRID_CONFIG.read_text(encoding="utf-8"))
    return str(data.get("default_list", "hybrid"))


def hybrid_fusion(bm25: Results, dense: Results, weight: float, method: str = "minmax") -> Results:
    """One query's hybrid list (see the module docstring), every document of either list, best first."""
    if method not in METHODS:
        raise ValueError(f"unknown hybrid method {method!r}; choose one of {METHODS}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"hybrid weight must lie in [0, 1]; got {weight}")
    b_rank = {d: r for r, d in enumerate(bm25.ids, 1)}
    d_rank = {d: r for r, d in enumerate(dense.ids, 1)}
    ids = list(dict.fromkeys([*dense.ids, *bm25.ids]))  # dense order first: it breaks ties
    if method == "minmax":
        b = dict(zip(bm25.ids, minmax(bm25.scores).tolist(), strict=True))
        s = dict(zip(dense.ids, minmax(dense.scores).tolist(), strict=True))
        score = [weight * b.get(d, 0.0) + (1.0 - weight) * s.get(d, 0.0) for d in ids]
    else:
        score = [
            (weight / (RRF_K + b_rank[d]) if d in b_rank else 0.0)
            + ((1.0 - weight) / (RRF_K + d_rank[d]) if d in d_rank else 0.0)
            for d in ids
        ]
    order = sorted(range(len(ids)), key=lambda i: -score[i])  # stable: ties keep dense, then BM25 order
    return Results(
        [ids[i] for i in order],
        np.asarray([score[i] for i in order], dtype=np.float64),
        [{"bm25_rank": b_rank.get(ids[i]), "dense_rank": d_rank.get(ids[i])} for i in order],
    )


def hybrid_run(
    bm25_run: Mapping[str, Results],
    dense_run: Mapping[str, Results],
    settings: HybridSettings,
    k: int | None = None,
) -> dict[str, Results]:
    """:func:`hybrid_fusion` of every query of ``dense_run`` (top ``k`` kept when given)."""
    out = {}
    for q, dres in dense_run.items():
        res = hybrid_fusion(bm25_run.get(q, Results.empty()), dres, settings.weight, settings.method)
        out[q] = res if k is None else res.top(k)
    return out


def tune_hybrid(
    bm25_run: Mapping[str, Results],
    dense_run: Mapping[str, Results],
    qrels: Mapping[str, Mapping[str, int]],
    methods: Sequence[str] = METHODS,
    weights: Sequence[float] | None = None,
    metric: str = "map@10",
    depth: int = 1000,
    tuned_on: str = "validation",
) -> tuple[HybridSettings, list[dict]]:
    """The (method, weight) whose hybrid run has the best mean ``metric`` on ``qrels`` (validation
    queries), ties to the method listed first and then the weight nearer 0.5. Returns the settings and
    a row per pair tried (``{"method", "weight", metric, "recall@100"}``)."""
    from patent_demo.metrics import evaluate_run

    weights = [round(float(w), 4) for w in (np.linspace(0.0, 1.0, 21) if weights is None else weights)]
    ks = sorted({int(metric.split("@")[1]), 100})
    rows = []
    for mi, method in enumerate(methods):
        for w in weights:
            m = evaluate_run(hybrid_run(bm25_run, dense_run, HybridSettings(method, w, depth)), qrels, ks)
            rows.append(
                {
                    "method": method,
                    "weight": w,
                    metric: m[metric],
                    "recall@100": m["recall@100"],
                    "_key": (round(m[metric], 12), -mi, -abs(w - 0.5)),
                }
            )
    best = max(rows, key=lambda r: r["_key"])
    for r in rows:
        r.pop("_key")
    return HybridSettings(best["method"], best["weight"], depth, tuned_on), rows
