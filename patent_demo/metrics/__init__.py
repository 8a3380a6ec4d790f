"""Retrieval metrics shared by training, benchmarks and the app.

* ``patent_demo.metrics.text``: Recall@k, MAP@k, MAP over retrieved, PRES@k and nDCG@k of ranked id
  lists against TREC qrels (DSSDNet evaluation), and the TREC run reader;
* ``patent_demo.metrics.drawing``: mAP and nDCG@k at patent, subclass and main-class level over a
  query x gallery score matrix (HMCL evaluation), and the silhouette by subclass;
* ``patent_demo.metrics.bootstrap``: the paired (cluster) bootstrap of two systems on the same queries;
* ``python -m patent_demo.metrics RUN QRELS --k 100 200 400`` scores a TREC run file (``cli``).
"""

from patent_demo.metrics.bootstrap import paired_bootstrap
from patent_demo.metrics.drawing import (
    LEVELS,
    DrawingEval,
    ItemLabels,
    breakdown_by_class,
    drawing_metrics,
    macro_means,
    silhouette_by_subclass,
)
from patent_demo.metrics.text import (
    DEFAULT_KS,
    TEXT_METRICS,
    RunFormatError,
    average_precision_at_k,
    average_precision_retrieved_at_k,
    evaluate_run,
    ndcg_at_k,
    per_query_metrics,
    pres_at_k,
    rank_by_score,
    read_run,
    recall_at_k,
)

__all__ = [
    "DEFAULT_KS",
    "LEVELS",
    "TEXT_METRICS",
    "DrawingEval",
    "ItemLabels",
    "RunFormatError",
    "average_precision_at_k",
    "average_precision_retrieved_at_k",
    "breakdown_by_class",
    "drawing_metrics",
    "evaluate_run",
    "macro_means",
    "ndcg_at_k",
    "paired_bootstrap",
    "per_query_metrics",
    "pres_at_k",
    "rank_by_score",
    "read_run",
    "recall_at_k",
    "silhouette_by_subclass",
]
