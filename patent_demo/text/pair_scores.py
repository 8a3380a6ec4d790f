"""Score a model on a labelled-pair file: the function behind ``patent-demo evaluate text --pairs``.

:func:`evaluate_pairs` ranks each query's own labelled candidates (a DSSDNet labelled-pair TSV or
label-export JSONL rows, see :mod:`patent_demo.text.pairs`) with ``bm25`` (an index over that
query's candidates) or a DSSDNet re-ranker, and measures the ranking against the graded qrels
``round(4 y)`` with ``patent_demo.metrics.evaluate_run`` (Recall, MAP, MAP of the retrieved, PRES,
nDCG at each cut-off). The domain label ``t`` comes from the file wherever it has one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patent_demo.data.corpus import Corpus
from patent_demo.results import Results
from patent_demo.text.pairs import Pair, bm25_pair_run, group_pairs, pair_qrels, read_pair_file

MAP_DEFINITIONS = {
    "map": "trec_eval AP@k: precision at each retrieved relevant document, summed, divided by the number of relevant documents",
    "map_retrieved": "the DSSDNet author's code: the same sum divided by the number of relevant documents retrieved in the top k",
}
DEFAULT_KS = (1, 5, 10, 20)


def pair_run(pairs: Sequence[Pair], model: Any | None, batch_size: int = 64) -> dict[str, Results]:
    """``{qid: Results}`` over each query's own candidates: BM25 when ``model`` is None, else the
    re-ranker's ``rank`` with each pair's ``t`` from the data (NaN: the model's prediction)."""
    if model is None:
        return bm25_pair_run(pairs)
    run = {}
    for qid, group in group_pairs(pairs).items():
        known = [None if p.t != p.t else int(p.t >= 0.5) for p in group]
        cands = [(p.doc_id, p.doc, None) for p in group]
        run[qid] = model.rank(group[0].query, cands, batch_size=batch_size, known_t=known)
    return run


def load_model(name_or_model: Any):
    """``"bm25"`` -> None; a checkpoint directory -> ``Reranker.load``; a re-ranker is returned as is."""
    if name_or_model is None or (isinstance(name_or_model, str) and name_or_model.lower() == "bm25"):
        return None
    if isinstance(name_or_model, (str, os.PathLike)):
        from patent_demo.text.reranker import Reranker

        path = Path(name_or_model)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model {str(name_or_model)!r} is neither 'bm25' nor a DSSDNet checkpoint directory"
            )
        return Reranker.load(path)
    return name_or_model


def evaluate_pairs(
    pairs: Sequence[Pair] | str | os.PathLike,
    model: Any = "bm25",
    ks: Sequence[int] = DEFAULT_KS,
    batch_size: int = 64,
    library: Corpus | None = None,
) -> dict:
    """Metrics of ``model`` (``"bm25"``, a checkpoint directory or a loaded re-ranker) on ``pairs`` (a
    list of :class:`Pair` or a ``.tsv``/``.jsonl`` file; ``library`` supplies texts and codes the rows
    of a label export leave out). Returns ``{"model", "queries", "pairs", "metrics": {...},
    "map_definitions"}``."""
    from patent_demo.metrics import evaluate_run

    if isinstance(pairs, (str, os.PathLike)):
        pairs = read_pair_file(pairs, library=library)
    pairs = list(pairs)
    if not pairs:
        raise ValueError("no labelled pairs to evaluate")
    reranker = load_model(model)
    run = pair_run(pairs, reranker, batch_size=batch_size)
    metrics = evaluate_run(run, pair_qrels(pairs), sorted(set(ks)))
    name = (
        "bm25"
        if reranker is None
        else str(model if isinstance(model, (str, os.PathLike)) else type(model).__name__)
    )
    return {
        "model": name,
        "queries": len(run),
        "pairs": len(pairs),
        "metrics": metrics,
        "map_definitions": MAP_DEFINITIONS,
    }
