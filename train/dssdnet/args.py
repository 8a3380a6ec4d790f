"""Command line of ``train/dssdnet/main.py``: ``--model NAME`` is the architecture (a packaged reranker
config), ``--config FILE`` a JSON file of hyper-parameter defaults that the command line overrides."""

from __future__ import annotations

import argparse

from train.config_file import apply_config

DESCRIPTION = "Train a DSSDNet re-ranker (or one of its ablation variants) and evaluate BM25 + re-ranking."
VARIANT_CHOICES = ("bert_c", "ds_sd", "ds_sd_mr", "dssdnet")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.dssdnet", description=DESCRIPTION)
    p.add_argument(
        "--config",
        default=None,
        help='JSON file of hyper-parameter defaults ({"lr": 2e-5, "epochs": 10, ...}; keys are this command\'s option names with _); the command line overrides it',
    )
    src = p.add_argument_group("data")
    src.add_argument(
        "--tsv", help="DSSDNet labelled-pair TSV (Quality, #1 ID, #2 ID, #1 String, #2 String, ipc_1..3)"
    )
    src.add_argument(
        "--labels",
        "--jsonl",
        dest="labels",
        help='label JSONL rows {"query", "query_codes", "pos", "neg"} (the app\'s export)',
    )
    src.add_argument(
        "--corpus",
        help="library corpus directory (Corpus.load); with qrels/citations it is also a data source",
    )
    src.add_argument(
        "--demo-patents",
        type=int,
        default=0,
        help="use the built-in corpus with this many patents as the library",
    )
    src.add_argument(
        "--demo-size",
        type=int,
        default=160,
        help="drawing size of the built-in corpus (part of its cache key)",
    )
    src.add_argument("--demo-seed", type=int, default=0, help="seed of the built-in corpus")
    src.add_argument("--cache-dir", default="cache", help="where the built-in corpus is built and cached")
    src.add_argument(
        "--text-corpus", help="JSONL text corpus (loaders.textcorpus.load_text_corpus) as the library"
    )
    src.add_argument("--pairs", help="citing->cited id pair TSV giving the qrels of --text-corpus")
    src.add_argument("--qrels", help="TREC qrels file overriding the library's qrels")
    src.add_argument(
        "--domain-scheme",
        default="auto",
        choices=["auto", "ipc", "cpc", "locarno"],
        help="codes the domain label t comes from (auto: IPC, else CPC, else Locarno)",
    )
    src.add_argument(
        "--scored-pairs",
        help="human-scored phrase pairs, the USPPM CSV (id, anchor, target, context, title, label); needs --scored-split",
    )
    src.add_argument(
        "--scored-split", help="the committed anchor split of --scored-pairs (splits/usppm.json)"
    )
    src.add_argument(
        "--no-context",
        action="store_true",
        help="--scored-pairs: leave the CPC context's title out of the input (the context-off ablation)",
    )
    src.add_argument(
        "--split-file",
        help="a corpus's committed query split (splits/cs3245_text.json): train, val and test queries from it",
    )
    src.add_argument(
        "--hybrid-negatives",
        type=int,
        default=0,
        help="also train on each training query's N best-ranked non-relevant candidates of the untrained hybrid list",
    )
    src.add_argument(
        "--domain-level", default="subclass", help="level at which code sets must overlap for t = 1"
    )
    src.add_argument(
        "--negative-seed",
        type=int,
        default=None,
        help="seed of the random negatives (default: --seed); fix it to share negatives across seeds",
    )
    src.add_argument(
        "--fixed-negatives",
        action="store_true",
        help="draw the random negatives once and reuse them every epoch",
    )
    src.add_argument(
        "--bm25-negatives",
        type=int,
        default=0,
        help="also train on each query's N best-ranked non-relevant BM25 candidates",
    )
    src.add_argument(
        "--family-positives",
        action="store_true",
        help="also train on same-family pairs (library family_members) of the train split, one random negative each",
    )
    src.add_argument(
        "--allow-test-labels",
        action="store_true",
        help="--labels: keep rows on test-split queries and test-split candidates (off: the leak guard drops them)",
    )
    src.add_argument(
        "--val-fraction",
        type=float,
        default=0.15,
        help="share of query ids held out for validation (hash split)",
    )
    src.add_argument(
        "--test-fraction",
        type=float,
        default=None,
        help="share of query ids held out for testing (hash split; default 0.3 for a corpus, 0.15 for pairs)",
    )
    src.add_argument(
        "--max-queries", type=int, default=None, help="keep at most this many queries per split (quick runs)"
    )
    m = p.add_argument_group("model")
    m.add_argument(
        "--model",
        default="reranker-minilm",
        help="architecture: a packaged reranker config, reranker-<name> (patent_demo/configs/reranker-<name>.json)",
    )
    m.add_argument(
        "--base-path", default=None, help="local directory holding the base encoder (overrides the config)"
    )
    m.add_argument(
        "--variant",
        default="dssdnet",
        choices=sorted(VARIANT_CHOICES),
        help="ablation variant: bert_c, ds_sd, ds_sd_mr, dssdnet",
    )
    m.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="token limit of a query-candidate pair (config default 128)",
    )
    m.add_argument("--dropout", type=float, default=0.1, help="dropout of the heads")
    m.add_argument(
        "--pooling",
        default=None,
        choices=["cls", "mean"],
        help="e read off the encoder: H_CLS (Eq. 3; config default) or the mean of the last hidden states",
    )
    m.add_argument(
        "--no-gate",
        action="store_true",
        help="the gate-off ablation: g fixed at 0.5, e_s split evenly between the two parts (Eq. 5 without W_g)",
    )
    m.add_argument(
        "--loss-off",
        nargs="+",
        default=[],
        choices=["inf", "orth", "rec", "t", "mr", "pr"],
        help="ablation: weigh these loss terms 0 (inf: the informative BCE of both parts, Eq. 7)",
    )
    m.add_argument(
        "--train-layers",
        type=int,
        default=1,
        help="top encoder layers trained (the rest frozen); -1 trains the whole encoder",
    )
    m.add_argument(
        "--feature-cache",
        default=None,
        help="with --train-layers 0: keep the frozen encoder's H_CLS of every pair in this folder, shared by later runs",
    )
    m.add_argument(
        "--gamma", type=float, default=None, help="focal factor of L_t (Eq. 10); config default 2.0"
    )
    m.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="balance factor of L_t (Eq. 10); default n(t=0)/n over the training pairs",
    )
    m.add_argument(
        "--top-k", type=int, default=None, help="hard negatives per batch in L_PR (Eq. 13); config default 4"
    )
    m.add_argument("--margin", type=float, default=None, help="margin m of L_PR (Eq. 14); config default 0.3")
    o = p.add_argument_group("optimisation")
    o.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate of the encoder layers")
    o.add_argument("--head-lr", type=float, default=None, help="learning rate of the heads (default: --lr)")
    o.add_argument(
        "--schedule",
        default="constant",
        choices=["constant", "linear"],
        help="learning rate: constant, or linear warm-up over --warmup of the steps then linear decay to 0",
    )
    o.add_argument(
        "--warmup", type=float, default=0.1, help="--schedule linear: share of the steps warming up"
    )
    o.add_argument(
        "--select-on",
        default="loss",
        choices=["loss", "pearson"],
        help="the epoch kept: lowest validation loss, or highest validation Pearson (--scored-pairs)",
    )
    o.add_argument("--weight-decay", type=float, default=5e-4, help="AdamW weight decay")
    o.add_argument("--batch-size", type=int, default=64, help="pairs per step (per process under DDP)")
    o.add_argument("--epochs", type=int, default=10, help="maximum epochs")
    o.add_argument("--max-steps", type=int, default=None, help="stop after this many optimiser steps")
    o.add_argument(
        "--time-budget-min",
        type=float,
        default=None,
        help="stop training after the epoch that passes this many minutes",
    )
    o.add_argument(
        "--patience", type=int, default=2, help="early stopping: epochs without a lower validation loss"
    )
    o.add_argument("--grad-clip", type=float, default=0.0, help="clip the gradient norm (0: off)")
    o.add_argument("--seed", type=int, default=0, help="seed of initialisation, negatives and order")
    o.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32", "bf16"],
        help="autocast dtype (auto: bf16 on CUDA, fp32 on CPU)",
    )
    o.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    o.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    e = p.add_argument_group("evaluation")
    e.add_argument("--k-first", type=int, default=1000, help="BM25 candidates per test query")
    e.add_argument(
        "--k-rerank", type=int, default=None, help="re-rank only the first N BM25 candidates (default: all)"
    )
    e.add_argument("--ks", type=int, nargs="+", default=[100, 200, 400], help="metric cut-offs")
    e.add_argument(
        "--eval-split",
        "--eval-splits",
        dest="eval_splits",
        nargs="+",
        default=["test"],
        choices=["val", "test"],
        help="splits evaluated before/after training (test, when among them, is the headline of metrics.json)",
    )
    e.add_argument("--eval-batch-size", type=int, default=128, help="pairs per forward pass at evaluation")
    e.add_argument("--no-eval-before", action="store_true", help="skip the evaluation of the untrained model")
    e.add_argument(
        "--write-run",
        action="store_true",
        help="write the re-ranked TREC run of each evaluated split to OUT/run.<split>.txt (and BM25's to OUT/bm25.<split>.txt)",
    )
    w = p.add_argument_group("output")
    w.add_argument(
        "--out", required=True, help="checkpoint directory (best weights, config, metrics, command)"
    )
    w.add_argument("--resume", action="store_true", help="continue from OUT/state.pt")
    w.add_argument(
        "--init-from",
        default=None,
        help="fine-tune this DSSDNet checkpoint (its architecture, variant and weights); the new one gets version + 1",
    )
    w.add_argument(
        "--keep-state",
        action="store_true",
        help="keep OUT/state.pt (optimiser state for --resume) after training",
    )
    w.add_argument(
        "--tiny",
        action="store_true",
        help="test mode: a tiny random BERT on MiniLM's tokenizer, short sequences, small batches",
    )
    w.add_argument("--log-every", type=int, default=10, help="log the losses every N steps")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; a ``--config FILE`` sets the defaults first (unknown keys are refused)."""
    parser = build_parser()
    apply_config(parser, argv, architecture=("model", "variant"))
    args = parser.parse_args(argv)
    args.model = args.model.removeprefix("reranker-")
    return args
