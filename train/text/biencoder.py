"""Fine-tune the MiniLM bi-encoder of the dense first stage on training citations: ``python -m train.text.biencoder``.

Data (``--split-file``, ``train/text/split.py``): each training query (a citing patent's title +
abstract) with each of its in-corpus cited patents is a positive pair; with ``--family-positives`` the
same-family pairs whose family holds no validation or test query are positives too. Each pair gets one
hard negative per epoch, drawn from the untrained hybrid's top ``--hard-k`` for that query (relevant
documents and the query's own family left out); family pairs get a random negative.

Loss: in-batch negatives with the hard negatives appended (multiple-negatives ranking, Henderson et
al. 2017; sentence-transformers' ``MultipleNegativesRankingLoss``)::

    L = - mean_i log softmax_j( s * cos(q_i, d_j) )[i]      d = [positives; hard negatives]   [B, 2B]

``s`` = ``--scale`` (20). A column that is another relevant document of query i is masked out.

After training the checkpoint (``TextEncoder.save``: fp16 weights, config, metrics) is evaluated by
``train.text.first_stages`` (validation chooses the hybrid weight; the test split is scored once).
``--tiny`` runs two steps over a handful of pairs (the tests call it through this entry point).

    python -m train.text.biencoder --corpus cache/corpora/cs3245 --split-file splits/cs3245_text.json \
        --seed 0 --out runs/text/biencoder/seed0
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np


def training_pairs(
    corpus, split: dict, family_positives: bool, pairs_tsv: list
) -> list[tuple[str, str, str]]:
    """``[(kind, query id, positive id)]``: citations of the training queries (kind ``cite``) and, with
    ``family_positives``, same-family pairs (kind ``family``) whose family holds no val/test query."""
    from patent_demo.data.families import families

    out = [("cite", q, d) for q in split["train"] for d, r in sorted(corpus.qrels[q].items()) if r > 0]
    if family_positives:
        fam = families(corpus.patents, pairs_tsv)
        held = {fam[q] for s in ("val", "test") for q in split[s]}
        members: dict[str, list[str]] = {}
        for pid, f in fam.items():
            members.setdefault(f, []).append(pid)
        for f, ms in sorted(members.items()):
            if f in held or len(ms) < 2:
                continue
            out += [("family", a, b) for a in ms for b in ms if a != b]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="a text corpus directory with qrels (citations)")
    p.add_argument("--split-file", required=True, help="the committed split (train/text/split.py)")
    p.add_argument("--family-pairs", nargs="*", default=[], help="same-family pair TSVs (for the families)")
    p.add_argument(
        "--family-positives",
        action="store_true",
        help="same-family pairs outside val/test families as positives",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffles, the negatives and dropout")
    p.add_argument("--epochs", type=int, default=2, help="passes over the training pairs")
    p.add_argument("--batch-size", type=int, default=16, help="pairs per step (in-batch negatives)")
    p.add_argument(
        "--lr", type=float, default=2e-5, help="AdamW learning rate (linear warm-up 10 %%, then decay)"
    )
    p.add_argument("--scale", type=float, default=20.0, help="the cosine scale s of the loss")
    p.add_argument(
        "--hard-k", type=int, default=50, help="hard negatives come from the untrained hybrid's top k"
    )
    p.add_argument(
        "--max-length", type=int, default=128, help="word pieces per text in training (inference: 256)"
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument(
        "--cache-dir", default="cache", help="the dense index cache (the untrained index for the negatives)"
    )
    p.add_argument("--tiny", action="store_true", help="two steps over eight pairs, no evaluation (tests)")
    p.add_argument("--no-eval", action="store_true", help="skip the evaluation after training")
    p.add_argument("--out", required=True, help="the checkpoint directory to write")
    args = p.parse_args(argv)

    import torch

    from patent_demo.data.corpus import Corpus
    from patent_demo.data.loaders.textcorpus import read_pairs
    from patent_demo.text.bm25 import BM25Index
    from patent_demo.text.dense import MAX_LENGTH, TextEncoder, cached_dense_index, dense_text
    from patent_demo.text.hybrid import load_hybrid_settings
    from patent_demo.text.lists import FirstStage, first_stage_runs
    from patent_demo.text.search import patent_query
    from patent_demo.workbench import corpus_fingerprint

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    start = time.time()
    corpus = Corpus.load(args.corpus, validate=False)
    split = json.loads(Path(args.split_file).read_text(encoding="utf-8"))
    fam_pairs = [pair for f in args.family_pairs for pair in read_pairs(f)]
    pairs = training_pairs(corpus, split, args.family_positives, fam_pairs)
    if args.tiny:
        pairs = pairs[:8]
    enc = TextEncoder()
    # hard negatives: the untrained hybrid's top hard_k of each training query
    train_q = sorted({q for kind, q, _ in pairs if kind == "cite"})
    hard: dict[str, list[str]] = {}
    if train_q:
        dense = cached_dense_index(  # the untrained index (max_length 256), cached by train.text.first_stages
            enc, corpus.patents, Path(args.cache_dir) / "dense" / corpus_fingerprint(corpus)
        )
        stage = FirstStage(BM25Index.build(corpus.patents), dense, enc, load_hybrid_settings())
        run = first_stage_runs(
            stage, [patent_query(corpus[q]) for q in train_q], args.hard_k, names=("hybrid",)
        )["hybrid"]
        hard = {q: [d for d in run[q].ids if corpus.qrels[q].get(d, 0) <= 0] for q in train_q}
    ids = [p.id for p in corpus.patents]
    text = {p.id: dense_text(p) for p in corpus.patents}
    relevant = {q: {d for d, r in corpus.qrels.get(q, {}).items() if r > 0} for _, q, _ in pairs}
    for kind, q, d in pairs:
        if kind == "family":
            relevant.setdefault(q, set()).add(d)
    enc.max_length = args.max_length
    steps_per_epoch = max(1, len(pairs) // args.batch_size) if not args.tiny else 2
    total = steps_per_epoch * (1 if args.tiny else args.epochs)
    model = enc.model
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, int(0.1 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    rng = random.Random(args.seed)
    log, step = [], 0
    for epoch in range(1 if args.tiny else args.epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        bs = 4 if args.tiny else args.batch_size
        for b in range(steps_per_epoch):
            batch = [pairs[i] for i in order[b * bs : (b + 1) * bs]]
            if len(batch) < 2:
                continue
            negs = []
            for kind, q, _ in batch:
                pool = [d for d in hard.get(q, []) if d not in relevant[q]] if kind == "cite" else []
                negs.append(
                    rng.choice(pool)
                    if pool
                    else rng.choice([d for d in ids if d != q and d not in relevant[q]])
                )
            docs = [d for _, _, d in batch] + negs
            qv = enc.forward([text[q] for _, q, _ in batch])
            dv = enc.forward([text[d] for d in docs])
            logits = args.scale * qv @ dv.T
            mask = torch.tensor(
                [
                    [j != i and docs[j] in relevant[q] for j in range(len(docs))]
                    for i, (_, q, _) in enumerate(batch)
                ]
            )
            logits = logits.masked_fill(mask, -1e4)
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            log.append({"epoch": epoch, "step": step, "loss": round(loss.item(), 4)})
            print(
                f"epoch {epoch} step {step}/{total} loss {loss.item():.4f} ({time.time() - start:.0f} s)",
                flush=True,
            )
    model.eval()
    enc.max_length = MAX_LENGTH  # the index and the queries are encoded as the packaged model's are
    config = {
        "train": {k: v for k, v in vars(args).items()},
        "pairs": len(pairs),
        "pairs_by_kind": {k: sum(1 for p in pairs if p[0] == k) for k in ("cite", "family")},
    }
    out = Path(args.out)
    enc.save(out, config=config, metrics={"train_log": log, "train_seconds": round(time.time() - start, 1)})
    (out / "command.txt").write_text(
        "python -m train.text.biencoder " + " ".join(argv if argv is not None else sys.argv[1:]) + "\n"
    )
    if not (args.tiny or args.no_eval):
        from train.text.first_stages import main as eval_main

        eval_main(
            [
                "--corpus",
                args.corpus,
                "--split-file",
                args.split_file,
                "--encoder",
                str(out),
                "--cache-dir",
                args.cache_dir,
                "--threads",
                str(args.threads),
                "--out",
                str(out / "eval.json"),
            ]
        )
        ev = json.loads((out / "eval.json").read_text())
        metrics = json.loads((out / "metrics.json").read_text())
        metrics.update(
            hybrid=ev["hybrid"], val=ev["splits"]["val"]["summary"], test=ev["splits"]["test"]["summary"]
        )
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
        cfg = json.loads((out / "config.json").read_text())
        cfg["hybrid"] = ev["hybrid"]
        (out / "config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
