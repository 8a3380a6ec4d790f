"""The text lists both ``search text`` and ``evaluate text`` run: which list ``--model`` names
(``resolve_text_list``), its label in a run file or a report (``list_label``), and its run over a set of
queries made as the app makes it (``text_run``)."""

from __future__ import annotations

import sys
from pathlib import Path

from patent_demo.cli.common import resolve_model
from patent_demo.data.corpus import Corpus


def resolve_text_list(name: str, reranker: str | None, dirs: list[str], corpus: Corpus | None = None):
    """``(list name, DSSDNet spec or None)`` for ``--model``: ``bm25``, ``dense``, ``hybrid`` (first
    stages), ``dssdnet`` / ``fused`` (re-ranked by ``--reranker``, default: the app's default
    checkpoint; for ``corpus``, the one trained for its scheme), ``default`` (the shipped default list, ``patent_demo/configs/hybrid.json``
    ``default_list``), or a DSSDNet checkpoint name or directory (its re-ranked list)."""
    from patent_demo.text.hybrid import default_text_list
    from patent_demo.text.lists import FIRST_STAGES

    if name == "default":
        name = default_text_list()
    if name in FIRST_STAGES:
        return name, None
    if name in ("dssdnet", "fused"):
        return name, resolve_model(reranker or "default", "text", dirs, corpus)
    return "dssdnet", resolve_model(name, "text", dirs, corpus)


def list_label(name: str, spec) -> str:
    return name if spec is None else f"{name}:{spec.key}"


def text_run(
    corpus: Corpus,
    spec,
    queries,
    ks: list[int],
    candidates: int,
    cache_dir: str,
    dirs: list[str],
    allowed=None,
    list_name: str | None = None,
    where=None,
    backend: dict | None = None,
    labels=None,
    feedback=None,
) -> dict:
    """The run of one text list over ``queries`` (``patent_demo.text.lists.text_runs``, as the app makes
    it): ``list_name`` (default: ``bm25`` when ``spec`` is None, else ``dssdnet``), ``spec`` the
    re-ranker of ``dssdnet`` and ``fused``; ``allowed`` maps a qid to the ids its search may return
    (``patent_demo.filters.allowed_per_query``); ``where`` the same filters as values per qid
    (``patent_demo.backends.Where``), which the dense list searches with through ``backend`` (the
    ``WorkbenchConfig`` backend fields; default FAISS). ``labels`` (qid -> {patent id: label}) refine the
    labelled queries with ``feedback`` (``patent_demo.text.feedback.TextFeedback``, default: the config's)."""
    from patent_demo.text.lists import FirstStage, text_runs
    from patent_demo.workbench import Workbench, WorkbenchConfig

    list_name = list_name or ("bm25" if spec is None else "dssdnet")
    wb = Workbench(
        WorkbenchConfig(
            cache_dir=Path(cache_dir),
            corpus=corpus.root,
            checkpoint_dirs=tuple(dirs),
            bm25_candidates=candidates,
            **(backend or {}),
        ),
        corpus=corpus,
        progress=False,
    )
    reranker = wb.reranker(spec) if spec is not None else None
    weight = None
    if list_name == "fused":
        weight, note = wb.fusion_weight(spec)
        if note:
            print(f"note: {note}", file=sys.stderr)
    k = max(candidates, max(ks))
    stage = FirstStage(wb.bm25()) if list_name == "bm25" else wb.text_stage()  # BM25 alone needs no encoder
    refined = {}
    if labels:
        from patent_demo.text.feedback import TextFeedback, feedback_inputs

        inputs = feedback_inputs(stage, queries, labels, feedback or TextFeedback.load(), corpus)
        refined = {"query_vectors": inputs.query_vectors, "term_weights": inputs.term_weights or None}
        print(f"feedback: {inputs.note()}", file=sys.stderr)
    return text_runs(
        stage,
        queries,
        corpus,
        k,
        [list_name],
        reranker,
        min(candidates, k),
        weight,
        allowed=allowed,
        where=where,
        **refined,
    )[list_name]
