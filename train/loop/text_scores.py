"""The figures of ``train.loop.text``: the test queries' per-query metrics (:class:`Scorer`: the app's hybrid
list and a checkpoint's re-ranked lists), their means and paired bootstrap comparisons (:func:`summarise`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

METRICS = ("map@10", "recall@100")
LISTS = ("dssdnet", "fused")  # the re-ranked list ("test" in the JSON) and its fusion with the hybrid
PerQuery = Mapping[str, Sequence[float]]  # metric -> values in the test queries' order


def compare(
    a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], n_boot: int, seed: int = 0
) -> dict:
    """``{metric: {"diff", "low", "high", "p_le_0"}}``: paired bootstrap of mean(a) - mean(b) per metric, the
    per-query values in the same query order."""
    from patent_demo.metrics import paired_bootstrap

    return {m: paired_bootstrap(a[m], b[m], n_boot=n_boot, seed=seed) for m in METRICS}


def means(per_query: Mapping[str, Sequence[float]]) -> dict[str, float]:
    return {
        m: float(sum(per_query[m]) / len(per_query[m])) if per_query[m] else float("nan") for m in METRICS
    }


def pick(per_query: Mapping[str, Sequence[float]], index: Sequence[int]) -> dict[str, list[float]]:
    return {m: [per_query[m][i] for i in index] for m in METRICS}


class Scorer:
    """The test queries' hybrid list and the re-ranked lists of a checkpoint, per query (``METRICS``)."""

    def __init__(
        self,
        corpus,
        qids: Sequence[str],
        cache_dir: str,
        checkpoint_dirs: Sequence[str],
        depth: int,
        fusion_weight: float,
        batch_size: int,
    ) -> None:
        from patent_demo.text.bm25 import BM25Index
        from patent_demo.text.dense import cached_dense_index, default_text_encoder
        from patent_demo.text.lists import FirstStage
        from patent_demo.text.search import patent_query
        from patent_demo.workbench import corpus_fingerprint

        self.corpus, self.qids, self.depth = corpus, list(qids), depth
        self.weight, self.batch_size = fusion_weight, batch_size
        enc, hybrid = default_text_encoder(checkpoint_dirs)  # the app's dense first stage and hybrid settings
        dense = cached_dense_index(
            enc, corpus.patents, Path(cache_dir) / "dense" / corpus_fingerprint(corpus)
        )
        self.stage = FirstStage(BM25Index.build(corpus.patents), dense, enc, hybrid)
        self.queries = [patent_query(corpus[q]) for q in self.qids]
        self.vectors = enc.encode([q.text for q in self.queries])
        self.qrels = {q: dict(corpus.qrels[q]) for q in self.qids}
        self.encoder = f"{enc.checkpoint or 'minilm-l6 (packaged)'}, {enc.precision}"

    def per_query(self, run) -> dict[str, list[float]]:
        from patent_demo.metrics import per_query_metrics

        pq = per_query_metrics(run, self.qrels, (10, 100))
        return {m: [float(pq[q][m]) for q in self.qids] for m in METRICS}

    def hybrid(self) -> dict[str, list[float]]:
        from patent_demo.text.lists import first_stage_runs

        runs = first_stage_runs(self.stage, self.queries, 100, ("hybrid",), query_vectors=self.vectors)
        return self.per_query(runs["hybrid"])

    def reranked(self, checkpoint: str | Path) -> tuple[dict[str, dict[str, list[float]]], str]:
        """``({list: per-query metrics}, precision)`` of ``checkpoint`` re-ranking the hybrid top ``depth``."""
        from patent_demo.registry import default_reranker, read_checkpoint_spec
        from patent_demo.text.lists import text_runs

        spec = read_checkpoint_spec(Path(checkpoint))
        if spec is None or spec.kind != "dssdnet":
            raise SystemExit(f"{checkpoint} is not a DSSDNet checkpoint")
        rr = default_reranker(spec)
        runs = text_runs(
            self.stage,
            self.queries,
            self.corpus,
            100,
            LISTS,
            rr,
            self.depth,
            self.weight,
            batch_size=self.batch_size,
            query_vectors=self.vectors,
        )
        return {n: self.per_query(runs[n]) for n in LISTS}, str(getattr(rr, "precision", "fp32"))


def summarise(
    point_per: Mapping[str, PerQuery],
    zero: Mapping[str, PerQuery],
    hybrid: PerQuery,
    n_boot: int,
    index: Sequence[int] | None = None,
) -> dict:
    """The figures of one point (or of B = 0 itself): means of the re-ranked (``test``) and fused lists, and
    each against B = 0 and the hybrid; ``index`` restricts to those test queries."""

    def sub(x):
        return x if index is None else pick(x, index)

    re, fu, z, h = sub(point_per["dssdnet"]), sub(point_per["fused"]), sub(zero["dssdnet"]), sub(hybrid)
    zf = sub(zero["fused"])
    return {
        "test": means(re),
        "fused": means(fu),
        "vs_zero": compare(re, z, n_boot),
        "vs_hybrid": compare(re, h, n_boot),
        "fused_vs_zero": compare(fu, zf, n_boot),
        "fused_vs_hybrid": compare(fu, h, n_boot),
    }
