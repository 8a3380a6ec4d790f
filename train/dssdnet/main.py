"""Train a DSSDNet re-ranker (or one of its ablation variants) and evaluate BM25 + re-ranking.

Examples::

    # the default checkpoint: MiniLM on the built-in corpus's text task
    python -m train.dssdnet --demo-patents 400 --variant dssdnet --out checkpoints/dssdnet-minilm
    # the real cs3245 corpus: citing patent (title + abstract) -> its in-corpus cited patents
    python -m train.dssdnet --text-corpus ../shared/data/cs3245_patsnap_corpus_qrels/patsnap_docs.jsonl \\
        --pairs ../shared/data/cs3245_patsnap_corpus_qrels/in_corpus_citation_pairs.tsv --out runs/cs3245
    # the public DSSDNet pair TSV, or labels exported by the app
    python -m train.dssdnet --tsv train_t.tsv --out runs/tsv
    python -m train.dssdnet --labels labels.jsonl --demo-patents 400 --out runs/labels
    # several GPUs
    torchrun --nproc_per_node 4 -m train.dssdnet --model reranker-bert-base --base-path DIR ...

Training follows the article (AdamW, lr 2e-5, weight decay 5e-4, dropout 0.1, batch 64, early
stopping on the validation loss). Only the heads and the top ``--train-layers`` encoder layers
train; the checkpoint stores those parameters only (a delta on the base weights). The data sources (the
public pair TSV, the app's exported labels, a text corpus with citations or qrels) and, on one process,
the cache of the frozen layers' outputs are ``train/dssdnet/data.py``; the epochs and their steps are
``train/dssdnet/loop.py`` (``fit``). Evaluation runs before and after training: BM25 top ``--k-first`` for the queries of each ``--eval-split``, the first ``--k-rerank``
re-ranked, Recall/MAP/PRES/nDCG at ``--ks`` (``patent_demo.metrics.evaluate_run``); for a pair
source, BM25 over each query's own candidates against the re-ranked candidates.

``--model NAME`` names the architecture (a packaged reranker config, e.g. ``reranker-minilm``);
``--config FILE`` is a JSON file of hyper-parameter defaults (``train/dssdnet/args.py``).
"""

from __future__ import annotations

import datetime
import logging
import math
import os
import shlex
import sys
import time
from pathlib import Path

import torch

from patent_demo import checkpoint
from patent_demo.losses.dssdnet import DEFAULT_ALPHA, VARIANTS, DSSDNetLoss, domain_alpha
from patent_demo.text.pair_scores import MAP_DEFINITIONS
from patent_demo.text.reranker import Reranker, create_reranker, load_config
from train.dssdnet import data
from train.dssdnet.args import VARIANT_CHOICES, build_parser, parse_args
from train.dssdnet.data import CachedReranker, FeatureCache, encoder_layers
from train.dssdnet.loop import Progress, Training, fit, lr_schedule

log = logging.getLogger("train.dssdnet")

VARIANT_FLAGS = {"bert_c": "BERT(C)", "ds_sd": "DS_SD", "ds_sd_mr": "DS_SD_MR", "dssdnet": "DSSDNet"}
assert set(VARIANT_FLAGS.values()) == set(VARIANTS) and set(VARIANT_FLAGS) == set(VARIANT_CHOICES)
__all__ = ["build_parser", "main"]


# -- setup -----------------------------------------------------------------------------------------
def _ddp() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend=backend, timeout=datetime.timedelta(hours=2))
    rank = int(os.environ.get("RANK", "0")) if world > 1 else 0
    return rank, world, int(os.environ.get("LOCAL_RANK", "0"))


def _tiny_base(out: Path) -> str:
    """A tiny random BERT with MiniLM's tokenizer, saved as a Hugging Face directory under ``out``
    (by rank 0 under DDP; ``config.json`` is written last, so its presence means complete)."""
    from transformers import AutoTokenizer, BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    from patent_demo.text.reranker import RerankerConfig, resolve_base_path

    path = out / "tiny-base"
    distributed = torch.distributed.is_initialized()
    if not (path / "config.json").is_file() and (not distributed or torch.distributed.get_rank() == 0):
        tok = AutoTokenizer.from_pretrained(resolve_base_path(RerankerConfig()), local_files_only=True)
        tok.save_pretrained(str(path))
        torch.manual_seed(1234)
        cfg = BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
        hf_logging.disable_progress_bar()
        BertModel(cfg, add_pooling_layer=False).save_pretrained(str(path))
        hf_logging.enable_progress_bar()
    if distributed:
        torch.distributed.barrier()
    return str(path.resolve())


LOSS_OFF = {
    "inf": ("ds", "di"),
    "orth": ("orth",),
    "rec": ("rec",),
    "t": ("t",),
    "mr": ("mr",),
    "pr": ("pr",),
}


def build_model(args, scheme: str, alpha: float | None) -> Reranker:
    loss = {
        k: v
        for k, v in {"gamma": args.gamma, "top_k": args.top_k, "margin": args.margin, "alpha": alpha}.items()
        if v is not None
    }
    loss.update({f"{term}_weight": 0.0 for name in args.loss_off for term in LOSS_OFF[name]})
    overrides = {
        "variant": VARIANT_FLAGS[args.variant],
        "gate": not args.no_gate,
        **({"pooling": args.pooling} if args.pooling else {}),
        "dropout": args.dropout,
        "domain_scheme": scheme,
        "domain_level": args.domain_level,
        "loss": loss,
    }
    if args.max_length:
        overrides["max_length"] = args.max_length
    if args.tiny:
        overrides.update(
            base="tiny-random",
            base_path=_tiny_base(Path(args.out)),
            proj_dim=16,
            t_hidden=4,
            t_dim=8,
            max_length=args.max_length or 48,
        )
    elif args.base_path:
        overrides["base_path"] = args.base_path
    return create_reranker(load_config(args.model, **overrides))


def freeze(model: Reranker, train_layers: int) -> None:
    """Train the heads and the top ``train_layers`` encoder layers (-1: the whole encoder)."""
    if train_layers < 0:
        return
    model.encoder.requires_grad_(False)
    layers = encoder_layers(model)
    for layer in list(layers)[len(layers) - min(train_layers, len(layers)) :]:
        layer.requires_grad_(True)


def _init_from(directory: str) -> tuple[Reranker, dict | None, str]:
    """A saved re-ranker to fine-tune: (model, the base encoder's weights for the delta or None for a
    full checkpoint, its variant)."""
    from patent_demo.text.reranker import load_base

    model = Reranker.load(directory)
    base = load_base(model.config)[0].state_dict() if checkpoint.load_config(directory).get("delta") else None
    return model, base, model.config.variant


# -- main ------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    started, cpu_started = time.perf_counter(), time.process_time()
    if args.tiny:
        args.batch_size = min(args.batch_size, 8)
        args.eval_batch_size = min(args.eval_batch_size, 32)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world, local_rank = _ddp()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and world > 1:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if rank != 0:
        log.setLevel(logging.WARNING)
    elif not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")

    # data
    td = data.training_data(args)
    train_task, eval_task, scheme = td.train_task, td.eval_task, td.scheme
    val_pairs, epoch_pairs = td.val_pairs, td.epoch_pairs
    first_pairs = epoch_pairs(0)
    if not first_pairs:
        raise SystemExit("no training pairs: the train split holds no query with a relevant document")
    variant = VARIANT_FLAGS[args.variant]
    alpha = args.alpha
    if alpha is None and variant != "BERT(C)" and not args.init_from:  # a fine-tune keeps its parent's
        alpha = domain_alpha([p.t for p in first_pairs], constant="default")
        ts = [p.t for p in first_pairs if p.t == p.t]
        if alpha == DEFAULT_ALPHA and (not ts or min(ts) == max(ts)):
            log.warning(
                "every training pair has the same domain label (%s of %d pairs known, t = %s): the domain "
                "loss has nothing to balance and t carries no signal; alpha set to %s (pass --alpha to change)",
                len(ts),
                len(first_pairs),
                ts[0] if ts else "unknown",
                DEFAULT_ALPHA,
            )

    # model
    torch.manual_seed(args.seed)
    if args.init_from:
        model, base_state, variant = _init_from(args.init_from)
        if model.config.domain_scheme != scheme and variant != "BERT(C)":
            # a new task (e.g. scored phrase pairs -> citations): t means the new task's domain overlap,
            # so the scheme is the task's and alpha is balanced over its training pairs
            alpha = (
                args.alpha
                if args.alpha is not None
                else domain_alpha([p.t for p in first_pairs], constant="default")
            )
            log.info(
                "fine-tuning a %s checkpoint on a %s task: domain scheme %s, alpha %.4f",
                model.config.domain_scheme,
                scheme,
                scheme,
                alpha,
            )
            model.config.domain_scheme = scheme
            model.config.loss.alpha = alpha
        if args.max_length:  # a new task may need another token budget (phrases -> abstracts)
            model.config.max_length = args.max_length
    else:
        model = build_model(args, scheme, alpha)
        base_state = {k: v.detach().clone() for k, v in model.encoder.state_dict().items()}
    freeze(model, args.train_layers)
    model.to(device)
    # one process, part of the encoder frozen: compute each pair's frozen-layer outputs once
    cache = (
        FeatureCache(model, args.feature_cache, args.eval_batch_size, args.train_layers)
        if 0 <= args.train_layers < len(encoder_layers(model)) and world == 1
        else None
    )
    scorer = CachedReranker(model, cache) if cache is not None else model
    loss_fn = DSSDNetLoss(model.config.loss, variant)
    heads = [p for n, p in model.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
    enc = [p for n, p in model.named_parameters() if n.startswith("encoder.") and p.requires_grad]
    groups = [{"params": heads, "lr": args.head_lr or args.lr}] + (
        [{"params": enc, "lr": args.lr}] if enc else []
    )
    optimizer = torch.optim.AdamW(groups, lr=args.lr, weight_decay=args.weight_decay)
    scheduler = lr_schedule(optimizer, args, len(first_pairs), world)
    n_trainable = sum(p.numel() for p in heads + enc)
    run_name = f"{args.variant}-{Path(model.config.base).name}-L{args.train_layers}-lr{args.lr:g}-b{args.batch_size}-s{args.seed}"
    log.info(
        "[%s] %d train pairs/epoch, %d val pairs, scheme %s, alpha %s, %s trainable parameters, device %s, "
        "world %d, cache %s",
        run_name,
        len(first_pairs),
        len(val_pairs),
        scheme,
        alpha,
        f"{n_trainable:,}",
        device,
        world,
        "off" if cache is None else f"after {cache.boundary} frozen layers",
    )

    start = Progress(history=[])
    metrics: dict = {}
    state = checkpoint.load_train_state(out) if args.resume else None
    if args.resume and state is None:
        raise SystemExit(f"--resume: {out / checkpoint.STATE} not found")
    if state is not None:
        checkpoint.apply_weights(model, state["model"], partial=True)
        optimizer.load_state_dict(state["optimizer"])
        if state.get("scheduler") is not None:
            scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        start = Progress(
            epoch=state["epoch"],
            step=state["step"],
            best_val=state["best_val"],
            bad_epochs=state["bad_epochs"],
            history=list(checkpoint.load_metrics(out).get("history", [])),
            best_weights=dict(state["best"]) if "best" in state else None,
        )
        metrics = {k: v for k, v in checkpoint.load_metrics(out).items() if k in ("before", "bm25", "splits")}
        log.info(
            "resumed from epoch %d, step %d, best val loss %.4f", start.epoch, start.step, start.best_val
        )
    train_model = model
    if world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None, find_unused_parameters=True
        )

    # evaluation before
    splits = list(dict.fromkeys(args.eval_splits))
    headline = "test" if "test" in splits else splits[0]  # the top-level bm25/before/after figures
    if rank == 0 and eval_task is not None and state is None:
        metrics["splits"] = {s: {} for s in splits}
        baseline = "biencoder" if isinstance(eval_task, data.ScoreTask) else "bm25"
        for s in splits:
            metrics["splits"][s][baseline], bm25_run = data.evaluate(None, eval_task, args, s)
            log.info("%-5s %-6s %s", s, baseline, data.fmt(metrics["splits"][s][baseline]))
            if args.write_run:
                data.write_run(out / f"{baseline}.{s}.txt", bm25_run, baseline)
            if not args.no_eval_before:
                metrics["splits"][s]["before"], _ = data.evaluate(scorer, eval_task, args, s)
                log.info("%-5s before %s", s, data.fmt(metrics["splits"][s]["before"]))
        metrics.update({k: v for k, v in metrics["splits"][headline].items()})

    # the epochs
    training = Training(
        model=model,
        train_model=train_model,
        loss_fn=loss_fn,
        optimizer=optimizer,
        scheduler=scheduler,
        params=heads + enc,
        cache=cache,
        scorer=scorer,
        eval_task=eval_task,
        epoch_pairs=epoch_pairs,
        val_pairs=val_pairs,
        out=out,
        device=device,
        rank=rank,
        world=world,
    )
    fitted = fit(training, args, start, metrics, started)
    step, best_val, history, stop_reason = fitted.step, fitted.best_val, fitted.history, fitted.stop_reason

    # the best weights, evaluated and written
    checkpoint.apply_weights(model, fitted.best_weights, partial=True)
    model.eval()
    if rank == 0:
        if eval_task is not None:
            metrics.setdefault("splits", {s: {} for s in splits})
            for s in splits:
                after, run = data.evaluate(scorer, eval_task, args, s)
                metrics["splits"].setdefault(s, {})["after"] = after
                log.info("%-5s after  %s", s, data.fmt(after))
                if args.write_run:
                    data.write_run(out / f"run.{s}.txt", run, run_name)
            metrics["after"] = metrics["splits"][headline]["after"]
            if cache is not None:
                cache.save()
        metrics.update(
            history=history,
            best_val_loss=best_val,
            stop_reason=stop_reason,
            epochs_run=len(history),
            steps=step,
            train_seconds=round(fitted.train_seconds, 1),
            train_cpu_seconds=round(fitted.train_cpu_seconds, 1),
            total_seconds=round(time.perf_counter() - started, 1),
            cpu_seconds=round(time.process_time() - cpu_started, 1),
            map_definitions=MAP_DEFINITIONS,
            evaluation=data.eval_description(args, eval_task, headline),
        )
        train_info = {
            "run_name": run_name,
            "args": vars(args),
            "variant": variant,
            "alpha": alpha,
            "domain_scheme": scheme,
            "train_pairs_per_epoch": len(first_pairs),
            "val_pairs": len(val_pairs),
            "trainable_parameters": n_trainable,
            "world_size": world,
            "device": str(device),
            "torch_threads": torch.get_num_threads(),
        }
        if train_task is not None and args.labels:
            train_info["num_labels"] = sum(len(v) for v in train_task.pairs.values())
            train_info["labels"] = td.guard
        if args.init_from:
            parent_version = checkpoint.load_config(args.init_from).get("train", {}).get("version") or 1
            train_info.update(parent=str(args.init_from), version=int(parent_version) + 1)
        model.save(out, base_state=base_state, metrics=_round_nested(metrics), train=train_info)
        checkpoint.write_text(
            out / checkpoint.COMMAND, shlex.join(["python", "-m", "train.dssdnet", *argv]) + "\n"
        )
        if not args.keep_state and (out / checkpoint.STATE).exists():
            (out / checkpoint.STATE).unlink()
        log.info(
            "wrote %s (%.1f MB) in %.0f s; stopped by %s",
            out,
            checkpoint.size_bytes(out) / 1e6,
            time.perf_counter() - started,
            stop_reason,
        )
    if world > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return 0


def _round_nested(obj):
    if isinstance(obj, dict):
        return {k: _round_nested(v) for k, v in obj.items()}
    if isinstance(obj, float):
        return round(obj, 6) if math.isfinite(obj) else None
    return obj


if __name__ == "__main__":
    sys.exit(main())
