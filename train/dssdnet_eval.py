"""Evaluation helpers of ``train/dssdnet.py``: BM25 + re-ranking metrics of a split, and the
feature cache that lets a heads-only run (``--train-layers 0``) encode every pair once."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

from patent_demo.metrics import evaluate_run
from patent_demo.results import Results
from patent_demo.text.reranker import Reranker
from patent_demo.text.search import rerank_run
from train import dssdnet_data as data

MAP_DEFINITIONS = {
    "map": "trec_eval AP@k: precision at each retrieved relevant document, summed, divided by the number of relevant documents",
    "map_retrieved": "the DSSDNet author's code: the same sum divided by the number of relevant documents retrieved in the top k",
}


class FeatureCache:
    """``e = H_CLS`` [H] of a frozen encoder per (query, candidate) text pair, computed once.

    With ``--train-layers 0`` only the heads train, so every pair's encoder output is fixed: it is
    computed on first use (encoder in eval mode) and, given a folder, kept on disk for later runs
    with the same base and ``max_length``.
    """

    def __init__(self, model: Reranker, folder: str | None, batch_size: int) -> None:
        self.model, self.batch_size = model, batch_size
        cfg = model.config
        tag = hashlib.sha1(f"{cfg.base}|{cfg.base_path}|{cfg.max_length}".encode()).hexdigest()[:12]
        self.path = Path(folder) / f"features-{tag}.pt" if folder else None
        self.index: dict[str, int] = {}
        self.rows: list[torch.Tensor] = []
        self.new = 0
        if self.path is not None and self.path.is_file():
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            self.index = {k: i for i, k in enumerate(saved["keys"])}
            self.rows = list(saved["features"])

    @staticmethod
    def key(query: str, doc: str) -> str:
        return hashlib.sha1(f"{query}\x00{doc}".encode()).hexdigest()

    @torch.no_grad()
    def get(self, pairs: list[tuple[str, str]]) -> torch.Tensor:
        """``[N, H]`` features of ``pairs`` (computing the missing ones in batches)."""
        keys = [self.key(q, d) for q, d in pairs]
        missing = list({k: i for i, k in enumerate(keys) if k not in self.index}.values())
        was = self.model.encoder.training
        self.model.encoder.eval()
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i : i + self.batch_size]
            batch = self.model.tokenize([pairs[j][0] for j in chunk], [pairs[j][1] for j in chunk])
            e = self.model.encode(**batch).float().cpu()
            for j, row in zip(chunk, e, strict=True):
                self.index[keys[j]] = len(self.rows)
                self.rows.append(row.clone())
            self.new += len(chunk)
        self.model.encoder.train(was)
        device = next(self.model.parameters()).device
        return torch.stack([self.rows[self.index[k]] for k in keys]).to(device)

    def save(self) -> None:
        if self.path is None or not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        torch.save({"keys": list(self.index), "features": torch.stack(self.rows)}, tmp)
        os.replace(tmp, self.path)
        self.new = 0


class CachedScorer:
    """``Reranker.rank`` over cached encoder features: the same scores and extras, no re-encoding."""

    def __init__(self, model: Reranker, cache: FeatureCache) -> None:
        self.model, self.cache = model, cache

    @torch.no_grad()
    def rank(self, query_text, candidates, query_codes=None, batch_size: int = 32) -> Results:
        if not candidates:
            return Results.empty()
        was = self.model.training
        self.model.eval()
        e = self.cache.get([(query_text, c[1]) for c in candidates])
        known_t = self.model.domain_labels(query_codes, [c[2] if len(c) > 2 else None for c in candidates])
        out = self.model.score_cls(e, known_t)
        self.model.train(was)
        return Results.from_unsorted([str(c[0]) for c in candidates], out["score"])


def evaluate(model: Reranker | CachedScorer | None, task, args, split: str) -> tuple[dict, dict]:
    """Metrics of ``split`` (BM25 + re-ranking over a library, or the held-out labelled candidates)
    and the run itself."""
    ks = sorted(set(args.ks))
    if isinstance(task, data.CorpusTask):
        queries = task.queries[split]
        k_first = min(args.k_first, len(task.library))
        run = rerank_run(
            task.bm25,
            model,
            queries,
            task.library,
            k_first=k_first,
            k_rerank=None if args.k_rerank is None else min(args.k_rerank, k_first),
            batch_size=args.eval_batch_size,
        )
        return evaluate_run(run, task.qrels[split], ks), run
    groups: dict[str, list[data.Pair]] = {}
    for p in task.pairs[split]:
        groups.setdefault(p.qid, []).append(p)
    run = {}
    for qid, ps in groups.items():
        if model is None:
            run[qid] = Results([p.doc_id for p in ps], np.zeros(len(ps)))
        else:
            run[qid] = model.rank(
                ps[0].query, [(p.doc_id, p.doc, None) for p in ps], batch_size=args.eval_batch_size
            )
    return evaluate_run(run, task.qrels(split), ks), run


def eval_description(args, task) -> dict:
    if isinstance(task, data.CorpusTask):
        k_first = min(args.k_first, len(task.library))
        return {
            "protocol": "BM25 (title + abstract, k1 1.2, b 0.75) top k_first per query, the query patent excluded; the first k_rerank re-ranked, the rest in BM25 order",
            "split": args.eval_split, "queries": len(task.queries[args.eval_split]), "library": len(task.library),
            "k_first": k_first, "k_rerank": k_first if args.k_rerank is None else min(args.k_rerank, k_first),
        }  # fmt: skip
    if task is None:
        return {}
    return {
        "protocol": "held-out queries' labelled candidates re-ranked",
        "split": args.eval_split,
        "queries": len(task.qrels(args.eval_split)),
    }


def fmt(m: dict) -> str:
    keys = [k for k in m if k.split("@")[0] in ("recall", "map", "map_retrieved", "pres")]
    return " ".join(f"{k}={m[k]:.4f}" for k in keys) + f" (n={m.get('num_queries')})"
