"""A DSSDNet checkpoint re-ranking the hybrid pool, on the queries of the committed split that were not
its training (or model-selection) queries: ``python -m train.text.rerank_eval``.

A checkpoint trained with ``--split-file`` (the committed split) saw that split's training queries (and
chose its epoch on the validation queries); those are left out. An older checkpoint trained on its own hash split (``patent_demo.text.tasks.hash_split`` of
each query's family, val 0.15 / test 0.3): its train and val queries are left out here, so every query
scored is new to it. On the remaining validation queries of ``--split-file`` the fusion weight (the
hybrid's share, ``patent_demo.text.fusion.tune_fusion_weight``) is tuned at the depth the app re-ranks
(``--k-rerank``, 100); the test queries are scored once. ``--write-fusion`` records that weight in the
checkpoint's ``metrics.json`` (``fusion_pools["hybrid@100"]``, read by ``tuned_fusion_weight``).

    python -m train.text.rerank_eval --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --checkpoint checkpoints/dssdnet-minilm-ipc --out runs/text/rerank/ipc.json --write-fusion
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SUMMARY = ("recall@10", "map@10", "ndcg@10", "recall@100")


def checkpoint_seen_queries(
    text_corpus: str, val_fraction: float = 0.15, test_fraction: float = 0.3
) -> set[str]:
    """The queries the cs3245 DSSDNet runs trained or selected on: their hash split's train and val."""
    from patent_demo.data.loaders.textcorpus import load_text_corpus
    from patent_demo.text.tasks import families, hash_split

    library = load_text_corpus(text_corpus)
    fam = families(library)
    return {p.id for p in library if hash_split(fam.get(p.id, p.id), val_fraction, test_fraction) != "test"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="the built cs3245 corpus")
    p.add_argument("--split-file", required=True, help="the committed split")
    p.add_argument("--checkpoint", required=True, help="a DSSDNet checkpoint")
    p.add_argument(
        "--text-corpus",
        default="../shared/data/cs3245_patsnap_corpus_qrels/patsnap_docs.jsonl",
        help="the JSONL the checkpoint was trained from (to find its training queries)",
    )
    p.add_argument("--k-rerank", type=int, default=100, help="hybrid candidates re-ranked (the app's depth)")
    p.add_argument(
        "--depths",
        type=int,
        nargs="*",
        default=[],
        help="shallower re-rank depths scored from the same (pointwise) re-ranker scores, each with its "
        "own fusion weight tuned on validation",
    )
    p.add_argument("--cache-dir", default="cache", help="the dense index cache")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--write-fusion", action="store_true", help="record the tuned weight in the checkpoint")
    p.add_argument(
        "--write-depth",
        action="store_true",
        help="record in the checkpoint the shallowest of --depths that loses nothing on validation "
        "(the app re-ranks to it) with its tuned fusion weight",
    )
    p.add_argument("--out", required=True, help="the JSON to write")
    args = p.parse_args(argv)
    import torch

    from patent_demo.data.corpus import Corpus
    from patent_demo.metrics import evaluate_run, per_query_metrics
    from patent_demo.registry import default_reranker, read_checkpoint_spec
    from patent_demo.text.bm25 import BM25Index
    from patent_demo.text.dense import TextEncoder, cached_dense_index
    from patent_demo.text.fusion import fuse_run, tune_fusion_weight
    from patent_demo.text.hybrid import load_hybrid_settings
    from patent_demo.text.lists import FirstStage, text_runs
    from patent_demo.text.search import merge_head, patent_query
    from patent_demo.workbench import corpus_fingerprint

    torch.set_num_threads(args.threads)
    start = time.time()
    corpus = Corpus.load(args.corpus, validate=False)
    split = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
    trained = json.loads((Path(args.checkpoint) / "config.json").read_text(encoding="utf-8")).get("train", {})
    if (trained.get("args") or {}).get("split_file"):  # trained on a committed split: its train queries
        own = json.loads(Path(trained["args"]["split_file"]).read_text(encoding="utf-8"))
        seen = set(own["train"])
        seen_note = f"the training queries of {trained['args']['split_file']}, its epoch chosen on the validation queries"
    else:
        seen = checkpoint_seen_queries(args.text_corpus)
        seen_note = "its own hash split"
    enc = TextEncoder()
    dense = cached_dense_index(
        enc, corpus.patents, Path(args.cache_dir) / "dense" / corpus_fingerprint(corpus)
    )
    stage = FirstStage(BM25Index.build(corpus.patents), dense, enc, load_hybrid_settings())
    rr = default_reranker(read_checkpoint_spec(Path(args.checkpoint)))
    out = {
        "checkpoint": args.checkpoint,
        "precision": rr.precision,
        "k_rerank": args.k_rerank,
        "splits": {},
        "seen": seen_note,
    }
    runs = {}
    for s in ("val", "test"):
        qids = [q for q in split[s] if q not in seen]
        queries = [patent_query(corpus[q]) for q in qids]
        r = text_runs(stage, queries, corpus, args.k_rerank, ("hybrid", "dssdnet"), rr, args.k_rerank)
        runs[s] = (r, {q: dict(corpus.qrels[q]) for q in qids})
        print(
            f"{s}: {len(qids)} of {len(split[s])} queries unseen by the checkpoint ({time.time() - start:.0f} s)",
            flush=True,
        )
    # the re-ranker's own scores of the head, for the fusion
    from patent_demo.results import Results

    def head(run):
        return {
            q: Results.from_unsorted(r.ids, [e["rerank_score"] for e in r.extras]) for q, r in run.items()
        }

    val_runs, val_qrels = runs["val"]
    weight, grid = tune_fusion_weight(val_runs["hybrid"], head(val_runs["dssdnet"]), val_qrels)
    out["fusion"] = {
        "weight": weight,
        "pool": "hybrid",
        "k_rerank": args.k_rerank,
        "grid": grid,
        "tuned_on": f"{len(val_qrels)} validation queries of {args.split_file} unseen by the checkpoint",
    }
    for s, (r, qrels) in runs.items():
        lists = {**r, "fused": fuse_run(r["hybrid"], head(r["dssdnet"]), weight, rank_key="pool_rank")}
        out["splits"][s] = {
            "queries": sorted(qrels),
            "summary": {
                n: {m: evaluate_run(x, qrels, (10, 100))[m] for m in SUMMARY} for n, x in lists.items()
            },
            "per_query": {
                n: {m: [per_query_metrics(x, qrels, (10, 100))[q][m] for q in sorted(qrels)] for m in SUMMARY}
                for n, x in lists.items()
            },
        }
        for n, m in out["splits"][s]["summary"].items():
            print(s, n.ljust(8), "  ".join(f"{k} {v:.3f}" for k, v in m.items()))
    out["depths"] = {}
    for d in sorted({d for d in args.depths if 0 < d < args.k_rerank}):
        cut = {
            s: {q: _head_at(res, r["hybrid"][q], d) for q, res in head(r["dssdnet"]).items()}
            for s, (r, _) in runs.items()
        }
        w, _ = tune_fusion_weight(val_runs["hybrid"], cut["val"], val_qrels)
        entry = {"fusion_weight": w, "splits": {}}
        for s, (r, qrels) in runs.items():
            lists = {
                "dssdnet": {q: merge_head(r["hybrid"][q], h, "pool_rank") for q, h in cut[s].items()},
                "fused": fuse_run(r["hybrid"], cut[s], w, rank_key="pool_rank"),
            }
            entry["splits"][s] = {
                n: {m: evaluate_run(x, qrels, (10, 100))[m] for m in SUMMARY} for n, x in lists.items()
            }
        out["depths"][str(d)] = entry
        print(
            f"depth {d}: fusion weight {w};",
            "; ".join(
                f"{s} {n} map@10 {v['map@10']:.3f}" for s, e in entry["splits"].items() for n, v in e.items()
            ),
        )
    out["command"] = "python -m train.text.rerank_eval " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    out["seconds"] = round(time.time() - start, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    if args.write_fusion:
        record(Path(args.checkpoint), out, args.k_rerank)
    if args.write_depth:
        depth = shallowest_lossless(out)
        record(Path(args.checkpoint), out, depth, rerank_depth=True)
        print(f"re-rank depth chosen on validation: {depth}")
    print("fusion weight (hybrid share) tuned on validation:", weight)
    return 0


def shallowest_lossless(out: dict) -> int:
    """The re-rank depth the app uses: the shallowest scored depth whose validation MAP@10, of the re-ranked
    and of the fused list, is at least the full depth's (``k_rerank``): fewer candidates that lose nothing."""
    full = out["splits"]["val"]["summary"]
    for d in sorted(int(x) for x in out["depths"]):
        val = out["depths"][str(d)]["splits"]["val"]
        if all(val[n]["map@10"] >= full[n]["map@10"] for n in ("dssdnet", "fused")):
            return d
    return out["k_rerank"]


def record(checkpoint: Path, out: dict, depth: int, rerank_depth: bool = False) -> None:
    """Into the checkpoint's ``metrics.json``: the fusion weight tuned on validation at ``depth`` under
    ``fusion_pools["hybrid@<depth>"]`` (read by ``tuned_fusion_weight``), and with ``rerank_depth`` that depth
    as the one the app re-ranks to (``rerank_depth``: the depth, the rule, the queries it was chosen on)."""
    path = checkpoint / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    weight = (
        out["fusion"]["weight"] if depth == out["k_rerank"] else out["depths"][str(depth)]["fusion_weight"]
    )
    tuned_on, command = out["fusion"]["tuned_on"], out["command"]
    metrics.setdefault("fusion_pools", {})[f"hybrid@{depth}"] = {
        "weight": weight,
        "pool": "hybrid",
        "k_rerank": depth,
        "tuned_on": tuned_on,
        "command": command,
    }
    if rerank_depth:
        metrics["rerank_depth"] = {
            "depth": depth,
            "full_depth": out["k_rerank"],
            "chosen_on": tuned_on,
            "command": command,
            "rule": "the shallowest depth whose validation MAP@10 of the re-ranked and the fused lists is at least "
            "the full depth's",
        }
    path.write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")


def _head_at(reranked, first, depth: int):
    """The re-ranker's scores of ``first``'s top ``depth`` only (a pointwise re-ranker scores each pair alone,
    so a shallower re-ranking is the deeper one's scores cut to the shallower pool)."""
    from patent_demo.results import Results

    keep = set(first.ids[:depth])
    idx = [i for i, d in enumerate(reranked.ids) if d in keep]
    return Results.from_unsorted([reranked.ids[i] for i in idx], [float(reranked.scores[i]) for i in idx])


if __name__ == "__main__":
    raise SystemExit(main())
