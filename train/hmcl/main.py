"""Fine-tune a drawing encoder with HMCL (Eqs. 2-5) or the plain contrastive loss (Eq. 1): the one HMCL trainer.

One command, CPU or CUDA (bf16 autocast), single process or ``torchrun`` DDP::

    python -m train.hmcl --config train/configs/hmcl-lite.json --model lite-clip --out runs
    torchrun --nproc_per_node 8 -m train.hmcl --config train/configs/hmcl-lite.json --model vit-base \\
        --train-blocks 99 --image-size 224 --batch-patents 64 --workers 8 --out runs
    python -m train.hmcl --config train/configs/hmcl-real.json --seed 0 --out runs/real --name hmcl-text-s0

The drawings come from data sources (``train.hmcl.data``, ``--sources``):

* ``corpus`` (the default): a corpus directory (``--corpus``) or the generated demo corpus, trained end to
  end on images, evaluated (mAP and nDCG@k at patent, subclass and main-class level) before and after
  training on ``--eval-splits``; ``--labels`` adds the app's exported examiner labels (judged positives
  and hard negatives); DDP, ``--resume`` and ``--init-from`` apply here.
* ``uspc``, ``deeppatent2``, ``generated`` (real and generated drawings, any mix): the frozen part of the
  vision tower is cached per augmented view (``--views``) and every step runs only the last
  ``--train-blocks`` blocks and the projections, so a run takes minutes on CPU; validated on every Red Book
  page (``--redbook``) against all other pages, never trained on (``train.hmcl.features``).

Both feeds run the same step loop (``train.hmcl.loop.fit``) on the same loss module. The architecture is
``--model`` (an encoder config name; ``--encoder`` is a deprecated alias); the config file holds
hyperparameter defaults only. Settings come from the config file, then the command line (``--tiny`` sits
between them). A batch holds ``P`` patents (``--batch-patents``) drawn by ``HierarchicalBatchSampler``
(several patents of one subclass and of one main class) and ``2P`` embeddings: two augmented views of one
figure (``--pairs views``) or two figures of the patent (``--pairs figures``; a cached single-figure patent
gets two views of its drawing). The checkpoint stores only the parameters training changed.

A run directory ``<out>/<run name>/`` holds ``model.safetensors``, ``config.json``, ``metrics.json``,
``command.txt`` and ``train.log`` (end to end also ``state.pt``: optimiser, scheduler, step).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader

from patent_demo.checkpoint import (
    apply_weights,
    delta,
    load_metrics,
    load_train_state,
    load_weights,
    save_checkpoint,
    write_json,
)
from patent_demo.drawing.finetune import KIND, set_trainable, text_tower_features
from patent_demo.drawing.protocol import brief_maps, evaluate_splits
from patent_demo.drawing.sampler import HierarchicalBatchSampler, StepBatches
from patent_demo.hierarchy import HMCLWeights, patent_hierarchy
from patent_demo.losses.hmcl import hierarchical_weights
from train.config_file import apply_config
from train.hmcl import features
from train.hmcl.data import (
    SOURCES,
    CorpusSource,
    add_source_arguments,
    load_corpus,
    patent_text,
    shuffle_labels,
)
from train.hmcl.features import TrainFigures, collate
from train.hmcl.loop import (
    Step,
    TrainModule,
    add_loss_arguments,
    add_optimiser_arguments,
    close_logging,
    cosine_schedule,
    distributed,
    fit,
    lr_factor,
    make_optimizer,
    setup_logging,
)
from train.labels.data import LabelBatches, add_label_arguments, label_training, lineage

__all__ = ["build_parser", "lr_factor", "main", "make_optimizer", "parse_args", "run_name"]
log = logging.getLogger("train.hmcl")

# Settings of --tiny: a few steps on a tiny generated corpus with small images (tests call this).
TINY = {
    "demo_patents": 24,
    "demo_types": 4,
    "demo_size": 96,
    "image_size": 64,
    "steps": 3,
    "batch_patents": 4,
    "train_blocks": 1,
    "warmup_steps": 1,
    "eval_splits": ["test"],
    "eval_batch_size": 32,
    "log_every": 1,
}


# ----------------------------------------------------------------------------------------------
# arguments


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m train.hmcl",
        description="Fine-tune a drawing encoder with HMCL or plain contrastive learning (the one HMCL trainer).",
    )
    a = p.add_argument
    a(
        "--config",
        default=None,
        help="JSON file of settings (keys are the flags' names with '_'); flags override it",
    )
    a("--tiny", action="store_true", help="a tiny run for tests: tiny corpus, small images, few steps")
    # model
    a(
        "--model",
        "--encoder",
        dest="encoder",
        default="lite-clip",
        help="the architecture: an encoder name from patent_demo/configs/encoders.json (--encoder: deprecated alias)",
    )
    a(
        "--pretrained",
        default="default",
        help="base weights: 'default' (registry source), a file, or a hub tag",
    )
    a("--image-size", type=int, default=128, help="input size S of the vision tower (drawings become S x S)")
    a("--train-blocks", type=int, default=3, help="train the last N vision blocks plus the projections")
    a(
        "--init-from",
        default=None,
        help="fine-tune from this HMCL checkpoint (its encoder, base weights and image size); the new one gets version + 1",
    )
    # data
    add_source_arguments(p)
    a("--eval-splits", nargs="*", default=["val", "test"], help="splits evaluated before and after training")
    a(
        "--skip-eval-before",
        action="store_true",
        help="do not evaluate before training (e.g. when zero-shot is known)",
    )
    features.add_cached_arguments(p)
    a("--eval-k", type=int, nargs="+", default=[10], help="nDCG cut-offs of the evaluation")
    a("--eval-batch-size", type=int, default=64, help="figures per batch when embedding for evaluation")
    a("--workers", type=int, default=0, help="DataLoader worker processes (0: load in the training process)")
    # loss
    add_loss_arguments(p)
    a(
        "--pairs",
        choices=("views", "figures"),
        default="figures",
        help="a positive pair: two augmented views of one figure, or two figures of one patent",
    )
    a(
        "--shuffle-labels",
        action="store_true",
        help="control: permute Locarno subclasses across training patents (class sizes kept); evaluate on true labels",
    )
    a("--subclass-fraction", type=float, default=0.5, help="share of a batch drawn from one subclass")
    add_label_arguments(p)
    a("--main-fraction", type=float, default=0.25, help="further share of a batch drawn from that main class")
    # optimisation
    a("--seed", type=int, default=0, help="seed of sampling, augmentation and label shuffling")
    a("--steps", type=int, default=300, help="optimiser steps (ignored when --epochs is given)")
    a("--epochs", type=int, default=None, help="train for this many passes of the sampler instead of --steps")
    a(
        "--batch-patents",
        type=int,
        default=None,
        help="P patents per batch (2P embeddings), per process (default 24; cached feed 32)",
    )
    add_optimiser_arguments(p)
    a("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    a("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice; cached feed 1)")
    # output
    a(
        "--out",
        default=None,
        help="parent directory of the run directory (default runs; cached feed runs/real)",
    )
    a("--name", default=None, help="run name (default: built from the key hyperparameters)")
    a("--resume", action="store_true", help="continue the run in <out>/<name> from its state.pt")
    a(
        "--stop-after-steps",
        type=int,
        default=0,
        help="end this invocation after N steps, saving checkpoint and state (for time-limited jobs; --resume continues)",
    )
    a(
        "--save-every",
        type=int,
        default=0,
        help="also write the checkpoint every N steps (0: only at the end)",
    )
    a("--log-every", type=int, default=None, help="log the loss every N steps (default 10; cached feed 25)")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Defaults < config file < ``--tiny`` < command line. Unknown config keys are errors."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    apply_config(parser, argv, architecture=("encoder", "model"))
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--tiny", action="store_true")
    known, _ = pre.parse_known_args(argv)
    if known.tiny:
        parser.set_defaults(**TINY)
    args = parser.parse_args(argv)
    if args.init_from:
        from patent_demo.checkpoint import load_config

        parent = load_config(args.init_from)
        if parent.get("kind") != KIND:
            parser.error(f"--init-from {args.init_from}: a {parent.get('kind')!r} checkpoint, not {KIND!r}")
        args.encoder = parent["model"]["name"]
        args.image_size = int(parent["model"].get("image_size") or args.image_size)
        args.pretrained = parent.get("base", args.pretrained)
    args.cached = args.sources != ["corpus"]
    if args.cached and "corpus" in args.sources:
        parser.error(
            "--sources: corpus trains end to end; it does not mix with the cached sources "
            + " ".join(SOURCES)
        )
    for key, images, cached in (
        ("batch_patents", 24, 32),
        ("warmup_steps", 30, 20),
        ("threads", None, 1),
        ("out", "runs", "runs/real"),
        ("log_every", 10, 25),
    ):
        if getattr(args, key) is None:
            setattr(args, key, cached if args.cached else images)
    if args.cached:
        features.check_cached_arguments(parser, args)
    if args.loss == "cl" and (args.weights[1] or args.weights[2]):
        args.weights = [args.weights[0], 0.0, 0.0]
    if args.cached:
        HMCLWeights.coerce(args.weights)
    if args.batch_patents < 2:
        parser.error("--batch-patents must be at least 2 (a contrastive batch needs negatives)")
    if args.image_size < 32:
        parser.error("--image-size must be at least 32")
    return args


def run_name(args: argparse.Namespace) -> str:
    """A name built from the key hyperparameters, e.g. ``hmcl-lite-clip-figures-tw0.2-tau0.1-w1_0.35_0.2-b3-128px-300st-s0``
    (cached feed: ``hmcl-tw0.2-tau0.1-w1_0.35_0.2-128px-300st-s0``)."""
    if args.cached:
        return features.run_name(args)
    w = "_".join(f"{x:g}" for x in args.weights)
    parts = [args.loss, args.encoder, args.pairs, f"tw{args.text_weight:g}", f"tau{args.tau:g}"]
    if args.loss == "hmcl":
        parts.append(f"w{w}")
    parts += [f"b{args.train_blocks}", f"{args.image_size}px", f"{args.steps}st", f"s{args.seed}"]
    if args.shuffle_labels:
        parts.append("shuffled")
    return "-".join(parts)


# ----------------------------------------------------------------------------------------------
# the run (end to end on images)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.cached:  # real and generated drawings through the cached frozen trunk, on the CPU
        torch.set_num_threads(args.threads)
        name = args.name or run_name(args)
        run_dir = Path(args.out) / name
        handlers = setup_logging(run_dir)
        try:
            return features.run(args, argv, name, run_dir)
        finally:
            close_logging(handlers)
    with distributed(args.device) as (device, rank, world):
        if args.threads:
            torch.set_num_threads(args.threads)
        name = args.name or run_name(args)
        run_dir = Path(args.out) / name
        handlers = setup_logging(run_dir if rank == 0 else None)
        if rank != 0:  # one process reports progress; the others only warnings
            log.setLevel(logging.WARNING)
        try:
            return _train(args, argv, name, run_dir, device, rank, world)
        finally:
            close_logging(handlers)


def _train(args, argv, name, run_dir: Path, device: torch.device, rank: int, world: int) -> int:
    from patent_demo.drawing.encoders import create_encoder, get_tokenizer

    t_start = time.time()
    torch.manual_seed(args.seed)
    log.info("run %s on %s (world size %d)", name, device, world)
    source = CorpusSource(load_corpus(args), args.train_split)
    corpus = source.corpus
    train_patents = [p for p in corpus.split(args.train_split) if p.figures]
    log.info(
        "corpus %s: %d patents, %d in split %r",
        corpus.root,
        len(corpus),
        len(train_patents),
        args.train_split,
    )

    model, train_tf, eval_tf = create_encoder(
        args.encoder, pretrained=args.pretrained, image_size=args.image_size
    )
    model.to(device).eval()  # eval mode throughout: BatchNorm statistics and dropout stay as pretrained
    trainable = set_trainable(model, args.train_blocks, text_projection=args.text_weight > 0)
    parent = load_weights(args.init_from) if args.init_from else {}
    # the delta is taken against the base weights, so it also holds what the parent had changed
    base = {n: p.detach().clone() for n, p in model.named_parameters() if n in set(trainable) | set(parent)}
    if parent:
        apply_weights(model, parent, partial=True)
        log.info("fine-tuning from %s (%d tensors)", args.init_from, len(parent))
    n_train = sum(base[n].numel() for n in trainable)
    log.info("training %d parameter tensors (%d values) of %s", len(trainable), n_train, args.encoder)

    state = None
    if args.resume:
        state = load_train_state(run_dir)
        if state is None:
            raise SystemExit(f"--resume: no state.pt in {run_dir}")
        apply_weights(model, load_weights(run_dir), partial=True)
        log.info("resuming %s at step %d", run_dir, state["step"])

    # labels of the training patents (shuffled for the control run)
    # classes through the hierarchy (Locarno, else USPC; scheme-qualified keys), never Locarno only
    keys = [patent_hierarchy(p.codes) for p in train_patents]
    if args.shuffle_labels:
        keys = shuffle_labels(keys, args.seed)  # (subclass, main) pairs move together
    subclasses, mains = [k[0] for k in keys], [k[1] for k in keys]
    sub_vocab = {s: i for i, s in enumerate(sorted(set(subclasses) - {""}))}
    main_vocab = {m: i for i, m in enumerate(sorted(set(mains) - {""}))}
    sub_of = torch.tensor([sub_vocab.get(s, -1) for s in subclasses])
    main_of = torch.tensor([main_vocab.get(m, -1) for m in mains])

    figures, fig_patent, per_patent = [], [], []
    for i, p in enumerate(train_patents):
        per_patent.append(list(range(len(figures), len(figures) + len(p.figures))))
        figures += p.figures
        fig_patent += [i] * len(p.figures)
    labels, label_stats = None, None
    if args.labels:
        labels, label_stats = label_training(args, corpus, train_patents, figures, fig_patent)
        extra_sub, extra_main = [], []
        for p in labels.patents[len(train_patents) :]:  # classes of the patents the labels bring in
            sub, main = patent_hierarchy(p.codes) if p is not None else ("", "")
            extra_sub.append(sub_vocab.setdefault(sub, len(sub_vocab)) if sub else -1)
            extra_main.append(main_vocab.setdefault(main, len(main_vocab)) if main else -1)
        sub_of = torch.cat([sub_of, torch.tensor(extra_sub, dtype=torch.int64)])
        main_of = torch.cat([main_of, torch.tensor(extra_main, dtype=torch.int64)])
    fig_patent_t = torch.tensor(fig_patent)
    k = 2 if args.pairs == "figures" else 1
    views = 1 if args.pairs == "figures" else 2
    sampler = HierarchicalBatchSampler(
        [p.id for p in train_patents],
        subclasses,
        mains,
        per_patent,
        args.batch_patents,
        k,
        args.subclass_fraction,
        args.main_fraction,
        seed=args.seed,
        rank=rank,
        world_size=world,
    )
    total = args.epochs * len(sampler) if args.epochs else args.steps
    start = int(state["step"]) if state else 0
    dataset = TrainFigures(corpus, figures, train_tf, views, cache_side=max(args.image_size * 3 // 2, 64))
    batches = StepBatches(sampler, total, start, args.seed, rank)
    if labels is not None:
        batches = LabelBatches(
            batches,
            labels.groups,
            args.label_groups,
            args.label_positives,
            args.label_negatives,
            args.seed,
            rank,
        )
    loader = DataLoader(
        dataset,
        batch_sampler=batches,
        collate_fn=collate,
        num_workers=args.workers,
        pin_memory=device.type == "cuda",
        persistent_workers=False,
    )

    text_features, text_proj, has_text = None, None, None
    if args.text_weight > 0:
        tokenizer = get_tokenizer(args.encoder)
        known = labels.patents if labels is not None else train_patents
        text_features, text_proj = text_tower_features(
            model, tokenizer, [patent_text(p) if p is not None else "" for p in known]
        )
        has_text = torch.tensor([p is not None for p in known])
        log.info("text features %s cached for %d patents", tuple(text_features.shape), len(known))
    module = TrainModule(model, args.loss, args.tau, args.weights, args.text_weight, text_proj).to(device)
    wrapped: nn.Module = module
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(
            module, device_ids=[device.index] if device.type == "cuda" else None
        )
    optimizer = make_optimizer(module, args.lr, args.weight_decay)
    scheduler = cosine_schedule(optimizer, total, args)
    if state:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        module.load_state_dict(state["loss_state"], strict=False)

    metrics = load_metrics(run_dir) if args.resume else {}
    if rank == 0 and "before" not in metrics and not args.skip_eval_before:
        metrics["before"] = evaluate_splits(
            model, eval_tf, corpus, args.eval_splits, args.eval_k, args.eval_batch_size
        )
        log.info("before: %s", brief_maps(metrics["before"]))
        write_json(run_dir / "metrics.json", metrics)

    def save(step: int, final: bool) -> None:
        if rank != 0:
            return
        current = {n: p.detach() for n, p in model.named_parameters() if n in base}
        changed = delta(current, base)
        config = {
            **lineage(args.init_from, label_stats),
            "kind": KIND,
            "model": {"name": args.encoder, "image_size": args.image_size},
            "base": args.pretrained,
            "delta": True,
            "trained_parameters": trainable,
            "run_name": name,
            "train": {
                **vars(args),
                "s_p": args.weights[0],
                "s_s": args.weights[1],
                "s_m": args.weights[2],
                "world_size": world,
                "steps_total": total,
                "step": step,
            },
            "corpus": {
                "root": str(corpus.root),
                "name": corpus.name,
                "patents": len(corpus),
                "train_patents": len(train_patents),
                "train_figures": len(figures),
            },
        }
        train_state = {
            "step": step,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "loss_state": {k: v for k, v in module.state_dict().items() if not k.startswith("model.")},
            "torch_rng": torch.get_rng_state(),
        }
        save_checkpoint(run_dir, changed, config, metrics, ["python", "-m", "train.hmcl", *argv], train_state)
        if final:
            log.info("saved %s (%d changed tensors)", run_dir, len(changed))

    log.info(
        "training steps %d..%d: %d patents x %d per batch, %d embeddings%s",
        start,
        total,
        args.batch_patents,
        2,
        2 * args.batch_patents,
        f" + {min(args.label_groups, len(labels.groups))} labelled queries" if labels is not None else "",
    )
    text_dev = text_features.to(device) if text_features is not None else None

    def steps():
        for images, fig_idx in loader:
            b = images.shape[0]
            pat = fig_patent_t[fig_idx]  # [B]
            if views == 2:  # [P, 2, 3, S, S]: both views of figure i belong to patent i
                images = images.transpose(0, 1).reshape(2 * b, *images.shape[2:])
                pat = pat.repeat(2)
            else:
                images = images[:, 0]
            images = images.to(device, non_blocking=True)
            pat_d = pat.to(device)
            tf = text_dev[pat_d] if text_dev is not None else None
            extra = {}
            if labels is not None:  # Eq. 2 weights with the examiners' judgements applied
                s_p, s_s, s_m = args.weights
                h = hierarchical_weights(pat, sub_of[pat], main_of[pat], s_p, s_s, s_m)
                h, mask = labels.apply(h, pat)
                extra = {"h": h.to(device), "negative_mask": mask.to(device)}
                if has_text is not None:
                    extra["text_mask"] = has_text[pat].to(device)
            inputs = (images, pat_d, sub_of[pat].to(device), main_of[pat].to(device), tf)
            yield Step(inputs, extra, images.shape[0])

    def after_step(step: int) -> bool:
        if args.save_every and step % args.save_every == 0 and step < total:
            save(step, final=False)
        return bool(args.stop_after_steps and step - start >= args.stop_after_steps and step < total)

    done = fit(
        module,
        steps(),
        optimizer,
        scheduler,
        total=total,
        start=start,
        grad_clip=args.grad_clip,
        log_every=args.log_every,
        forward=wrapped,
        autocast="cuda" if device.type == "cuda" else None,
        after_step=after_step,
    )
    step, seen, last, train_seconds = done.step, done.seen, done.last, done.seconds

    if rank == 0:
        if step >= total:
            metrics["after"] = evaluate_splits(
                model, eval_tf, corpus, args.eval_splits, args.eval_k, args.eval_batch_size
            )
            log.info("after: %s", brief_maps(metrics["after"]))
        else:
            log.info("stopped at step %d of %d; continue with --resume", step, total)
        runs = metrics.get("train", {}).get("segments", [])
        runs.append(
            {
                "from_step": start,
                "to_step": step,
                "seconds": round(train_seconds, 2),
                "images": seen,
                "final_losses": last,
                "device": str(device),
                "world_size": world,
            }
        )
        metrics["train"] = {
            "steps": step,
            "segments": runs,
            "train_seconds": round(sum(r["seconds"] for r in runs), 2),
            "wall_seconds_last": round(time.time() - t_start, 2),
        }
        save(step, final=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
