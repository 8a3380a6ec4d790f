"""Fine-tune a drawing encoder with HMCL or CL on real design drawings plus the generated corpus, validated
on real USPTO Red Book pages; the frozen part of the vision tower is cached, so a run takes minutes on CPU.

    python -m train.hmcl_real --config train/configs/hmcl-real.json --model lite-clip --seed 0 \\
        --out runs/real --name hmcl-text-s0

Training drawings (``--sources``): ``uspc`` (1,000 real 2007 drawings, USPC classes as the hierarchy),
``deeppatent2`` (13 real figures, patent only) and ``generated`` (the training split of the generated
corpus, Locarno). Validation: every page of the Red Book samples (``--redbook``) against all other pages
(``protocol="all"``), never trained on. A batch holds ``P`` patents x 2 items: two figures of a patent
when it has several, else two augmented views (x, x~) of its one drawing. Each drawing's ``--views``
augmented views are embedded once by the frozen part of the tower (``SplitTower.prefix``) and cached under
``--cache-dir``; every step runs only the last ``--train-blocks`` blocks and the projections.
``--scan`` adds scan-like augmentations to the generated drawings (``transforms.SCAN_CHOICES``).

Writes ``<out>/<name>/`` with ``metrics.json`` (``real_validation``: the Red Book figures, per patent
(macro) means and per-query values for paired bootstraps; ``zero_shot`` with ``--eval-before``),
``config.json``, ``model.safetensors`` (only changed parameters), ``command.txt`` and ``train.log``.
``steps 0`` evaluates the pretrained encoder (zero-shot) and writes no weights.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from patent_demo.checkpoint import delta, save_checkpoint, write_json
from patent_demo.drawing.evaluate import drawing_protocol, score_embeddings, validation_summary
from patent_demo.drawing.finetune import KIND, set_trainable
from patent_demo.drawing.sampler import HierarchicalBatchSampler
from patent_demo.drawing.transforms import SCAN_CHOICES, ScanConfig
from patent_demo.hierarchy import HMCLWeights
from train.config_file import apply_config
from train.hmcl import lr_factor, make_optimizer
from train.hmcl_data import TrainModule
from train.hmcl_real_data import (
    SplitTower,
    deeppatent2_items,
    eval_cache,
    generated_items,
    shuffle_hierarchy,
    text_cache,
    uspc_items,
    validation_items,
    view_cache,
)

log = logging.getLogger("train.hmcl_real")
DATA = "../shared/data"
SOURCES = ("uspc", "deeppatent2", "generated")
REDBOOK_NAME = "impact_design_patent_samples (Red Book pages, every page against all others)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m train.hmcl_real", description=__doc__.split("\n\n")[0])
    a = p.add_argument
    a("--config", default=None, help="JSON file of hyperparameter defaults (keys: flag names with '_')")
    a("--model", "--encoder", dest="model", default="lite-clip",
      help="encoder config name (--encoder is a deprecated alias)")  # fmt: skip
    a("--image-size", type=int, default=128, help="input size S (drawings become S x S)")
    a("--train-blocks", type=int, default=3, help="train the last N vision blocks plus the projections")
    a("--sources", nargs="+", choices=SOURCES, default=list(SOURCES), help="training drawings")
    a("--uspc", default=f"{DATA}/design_patents_2007_uspc_macaulay", help="USPC 2007 drawings folder")
    a("--deeppatent2", default=f"{DATA}/deeppatent2_techdrawfinder_samples", help="DeepPatent2 folder")
    a("--redbook", default=f"{DATA}/impact_design_patent_samples", help="Red Book validation folder")
    a("--demo-patents", type=int, default=400, help="patents of the generated corpus")
    a("--demo-seed", type=int, default=0, help="seed of the generated corpus")
    a("--demo-size", type=int, default=256, help="drawing size of the generated corpus")
    a("--demo-figures", type=int, default=3, help="figures per generated patent (0: all)")
    a("--cache-dir", default="cache", help="generated corpus and cached tower outputs")
    a(
        "--max-per-source",
        type=int,
        default=0,
        help="use at most N drawings of each source (0: all; for tests)",
    )
    a("--views", type=int, default=4, help="augmented views cached per training drawing")
    a("--scan", nargs="*", default=[], choices=[*SCAN_CHOICES, "all"],
      help="scan-like augmentations of the generated drawings")  # fmt: skip
    a("--scan-prob", type=float, default=0.5, help="probability of each --scan augmentation")
    a("--init-projection", choices=("package", "whiten"), default="package",
      help="the image projection's start: as created (package), or the whitening of the training drawings' "
           "pooled features (needs --train-blocks 0)")  # fmt: skip
    a("--loss", choices=("hmcl", "cl"), default="hmcl", help="HMCL (Eqs. 2-4) or plain contrastive (Eq. 1)")
    a("--text-weight", type=float, default=0.2, help="lambda of the image-text term (Eq. 5); 0: off")
    a("--tau", type=float, default=0.1, help="temperature")
    a("--weights", type=float, nargs=3, default=list(HMCLWeights().as_tuple()), metavar=("S_P", "S_S", "S_M"),
      help="HMCL relevance of same patent, subclass, main class (Eq. 2)")  # fmt: skip
    a("--shuffle-labels", action="store_true", help="control: permute subclasses across training patents")
    a("--subclass-fraction", type=float, default=0.5, help="share of a batch from one subclass")
    a("--main-fraction", type=float, default=0.25, help="further share from that main class")
    a("--seed", type=int, default=0, help="seed of sampling and label shuffling")
    a("--steps", type=int, default=300, help="optimiser steps (0: evaluate the pretrained encoder only)")
    a("--batch-patents", type=int, default=32, help="P patents per batch (2P embeddings)")
    a("--lr", type=float, default=3e-4, help="peak AdamW learning rate")
    a("--weight-decay", type=float, default=0.05, help="AdamW weight decay")
    a("--warmup-steps", type=int, default=20, help="linear warm-up steps")
    a("--min-lr-ratio", type=float, default=0.05, help="final learning rate as a fraction of --lr")
    a("--grad-clip", type=float, default=1.0, help="gradient-norm clip (0: off)")
    a("--eval-before", action="store_true", help="also evaluate the pretrained encoder (zero_shot)")
    a("--eval-sizes", type=int, nargs="*", default=[160, 224],
      help="also validate at these input sizes (the tower is convolutional: weights trained at one size apply at any)")  # fmt: skip
    a("--serve-size", type=int, default=0,
      help="input size the checkpoint is used at (config model.image_size; one of --eval-sizes; 0: --image-size)")  # fmt: skip
    a(
        "--default",
        action="store_true",
        help='mark the checkpoint as the app\'s default drawing model ("default": true in config.json)',
    )
    a("--eval-k", type=int, nargs="+", default=[10], help="nDCG cut-offs")
    a("--threads", type=int, default=1, help="torch CPU threads")
    a("--out", default="runs/real", help="parent of the run directory")
    a("--name", default=None, help="run name (default: from the key settings)")
    a("--log-every", type=int, default=25, help="log the loss every N steps")
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Defaults < ``--config`` < command line; unknown config keys (or an architecture key) are errors."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    apply_config(parser, argv)
    args = parser.parse_args(argv)
    if args.loss == "cl":
        args.weights = [args.weights[0], 0.0, 0.0]
    HMCLWeights.coerce(args.weights)
    if args.views < 2:
        parser.error("--views must be at least 2 (a single-figure patent needs two views)")
    return args


@torch.no_grad()
def whiten_projection(tower: SplitTower, feats: torch.Tensor) -> None:
    """Set the image projection ``W [D, C]`` to the whitening of the training drawings' pooled features
    ``f [C]`` (every cached view): the top-``D`` eigenvectors of the second-moment matrix ``E[f f^T]``, each
    divided by the square root of its eigenvalue (no bias: the head has none), scaled so outputs keep the
    norm of the package projection's. Unsupervised: no label and no validation drawing takes part."""
    if not tower.pooled:
        raise SystemExit("--init-projection whiten needs --train-blocks 0 (the cut after the pooling)")
    proj = tower.model.visual.head.proj
    x = feats.flatten(0, -2).double()  # [N * V, C]
    second = x.T @ x / x.shape[0]
    values, vectors = torch.linalg.eigh(second)
    top = torch.argsort(values, descending=True)[: proj.weight.shape[0]]
    w = (vectors[:, top] / values[top].clamp_min(1e-12).sqrt()).T  # [D, C]
    before = (x[:256] @ proj.weight.double().T).norm(dim=1).mean()
    after = (x[:256] @ w.T).norm(dim=1).mean()
    proj.weight.copy_((w * before / after).to(proj.weight.dtype))


def run_name(args: argparse.Namespace) -> str:
    parts = [args.loss, f"tw{args.text_weight:g}", f"tau{args.tau:g}"]
    if args.loss == "hmcl":
        parts.append("w" + "_".join(f"{w:g}" for w in args.weights))
    parts += [f"{args.image_size}px", f"{args.steps}st", f"s{args.seed}"]
    if args.scan:
        parts.append("scan-" + "+".join(args.scan))
    if args.shuffle_labels:
        parts.append("shuffled")
    return "-".join(parts)


def _setup_logging(run_dir: Path) -> list[logging.Handler]:
    log.setLevel(logging.INFO)
    log.propagate = False
    run_dir.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    handlers = [
        logging.StreamHandler(sys.stdout),
        logging.FileHandler(run_dir / "train.log", encoding="utf-8"),
    ]
    for h in handlers:
        h.setFormatter(fmt)
        log.addHandler(h)
    return handlers


@torch.no_grad()
def embed_cached(tower: SplitTower, feats: torch.Tensor, batch: int = 128) -> np.ndarray:
    """L2-normalised suffix embeddings ``[N, D]`` of cached prefix outputs."""
    out = [tower.suffix(feats[i : i + batch].float()) for i in range(0, feats.shape[0], batch)]
    return torch.nn.functional.normalize(torch.cat(out).float(), dim=1).numpy()


def validate(tower: SplitTower, feats: torch.Tensor, corpus, ks: Sequence[int]) -> dict:
    """Red Book figures of the current weights: the one protocol (every page against all others)."""
    queries, gallery, self_index = drawing_protocol(corpus, None, "all")
    emb = embed_cached(tower, feats)
    return score_embeddings(queries, gallery, emb, emb, self_index, ks, silhouette=False, per_query=True)


def validate_sizes(tower, eval_tf, corpus, items, args, cache_dir, tag) -> dict:
    """``{size: result}`` (as :func:`validate`) of the current weights on the validation pages at each of ``--eval-sizes``."""
    from patent_demo.drawing.transforms import DrawingEvalTransform

    out = {}
    for size in args.eval_sizes:
        tf = DrawingEvalTransform(size, eval_tf.mean, eval_tf.std)
        out[str(size)] = validate(tower, eval_cache(tower, items, tf, cache_dir, tag), corpus, args.eval_k)
        log.info("  at %d px: %s", size, brief(out[str(size)]))
    return out


def summaries_at(results_at: dict) -> dict:
    return {size: validation_summary(r, REDBOOK_NAME, int(size)) for size, r in results_at.items()}


def revalidate(run_dir: Path, sizes: Sequence[int], argv: Sequence[str] = ()) -> dict:
    """Add ``real_validation_at`` (``--eval-sizes``) to a finished run's ``metrics.json`` and
    ``config.json`` (for runs made before the option existed); returns it."""
    from patent_demo.checkpoint import apply_weights, load_config, load_weights
    from patent_demo.drawing.encoders import create_encoder

    config = load_config(run_dir)
    args = parse_args([*argv, "--eval-sizes", *map(str, sizes)])
    for key in ("train_blocks", "model", "redbook", "cache_dir", "eval_k"):
        setattr(args, key, config["train"][key])
    model, _, eval_tf = create_encoder(args.model, image_size=config["model"]["image_size"])
    apply_weights(model, load_weights(run_dir), partial=True)
    model.eval()
    tower = SplitTower(model, args.train_blocks)
    corpus, items = validation_items(args.redbook)
    cache_dir = Path(args.cache_dir) / "hmcl-real"
    at = validate_sizes(tower, eval_tf, corpus, items, args, cache_dir, {"model": args.model})
    for name, value in (("metrics.json", at), ("config.json", summaries_at(at))):
        data = json.loads((run_dir / name).read_text(encoding="utf-8"))
        data["real_validation_at"] = value
        write_json(run_dir / name, data)
    return at


def brief(result: dict) -> str:
    m, macro = result["metrics"], result["macro"]
    return " ".join(
        f"{k}={m[k]:.4f}(macro {macro[k]:.4f})" for k in ("patent_map", "subclass_map", "main_map")
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    name = args.name or run_name(args)
    run_dir = Path(args.out) / name
    handlers = _setup_logging(run_dir)
    try:
        return _run(args, argv, name, run_dir)
    finally:
        for h in handlers:
            log.removeHandler(h)
            h.close()


def _load_items(args: argparse.Namespace):
    items = []
    if "uspc" in args.sources:
        items += uspc_items(args.uspc)
    if "deeppatent2" in args.sources:
        items += deeppatent2_items(args.deeppatent2)
    if "generated" in args.sources:
        items += generated_items(
            args.cache_dir, args.demo_patents, args.demo_seed, args.demo_size, args.demo_figures
        )
    if args.max_per_source:
        seen: Counter[str] = Counter()
        kept = []
        for it in items:
            seen[it.source] += 1
            if seen[it.source] <= args.max_per_source:
                kept.append(it)
        items = kept
    return items


def _run(args: argparse.Namespace, argv: list[str], name: str, run_dir: Path) -> int:
    from patent_demo.drawing.encoders import create_encoder, get_tokenizer

    t_start = time.time()
    torch.manual_seed(args.seed)
    model, train_tf, eval_tf = create_encoder(args.model, image_size=args.image_size)
    model.eval()  # BatchNorm statistics and dropout stay as pretrained
    trainable = set_trainable(model, args.train_blocks, text_projection=args.text_weight > 0)
    tower = SplitTower(model, args.train_blocks)
    base = {n: p.detach().clone() for n, p in model.named_parameters() if n in set(trainable)}
    cache_dir = Path(args.cache_dir) / "hmcl-real"
    tag = {"model": args.model}

    val_corpus, val_items = validation_items(args.redbook)
    val_feats = eval_cache(tower, val_items, eval_tf, cache_dir, tag)
    metrics: dict = {"validation": {"corpus": str(args.redbook), "protocol": "all", "pages": len(val_items),
                                    "patents": len(val_corpus)}}  # fmt: skip
    if args.eval_before or args.steps == 0:
        metrics["zero_shot"] = validate(tower, val_feats, val_corpus, args.eval_k)
        log.info("zero-shot %d px: %s", args.image_size, brief(metrics["zero_shot"]))
    if args.steps == 0 and args.init_projection == "package":
        metrics["real_validation"] = metrics["zero_shot"]
        write_json(run_dir / "metrics.json", metrics)
        return 0

    items = _load_items(args)
    overlap = {it.patent for it in items} & {it.patent for it in val_items}
    if overlap:
        raise SystemExit(f"training and validation share patents {sorted(overlap)[:5]}")
    feats = view_cache(tower, items, train_tf, args.views, ScanConfig.of(args.scan, args.scan_prob),
                       cache_dir, tag)  # fmt: skip
    if args.init_projection == "whiten":
        whiten_projection(tower, feats)
        log.info("projection initialised by whitening the training drawings' pooled features")
    if args.shuffle_labels:
        items = shuffle_hierarchy(items, args.seed)
    patents = sorted({it.patent for it in items})
    pindex = {p: i for i, p in enumerate(patents)}
    per_patent: list[list[int]] = [[] for _ in patents]
    for i, it in enumerate(items):
        per_patent[pindex[it.patent]].append(i)
    first = [items[idx[0]] for idx in per_patent]
    sub_vocab = {s: i for i, s in enumerate(sorted({it.subclass for it in first} - {""}))}
    main_vocab = {m: i for i, m in enumerate(sorted({it.main for it in first} - {""}))}
    sub_of = torch.tensor([sub_vocab.get(it.subclass, -1) for it in first])
    main_of = torch.tensor([main_vocab.get(it.main, -1) for it in first])
    item_patent = torch.tensor([pindex[it.patent] for it in items])
    by_source = {s: sum(it.source == s for it in items) for s in SOURCES}
    log.info("training drawings %s, %d patents, %d subclasses, %d main classes; validation %d pages of %d "
             "patents", by_source, len(patents), len(sub_vocab), len(main_vocab), len(val_items),
             len(val_corpus))  # fmt: skip

    sampler = HierarchicalBatchSampler(
        patents, [it.subclass for it in first], [it.main for it in first], per_patent, args.batch_patents, 2,
        args.subclass_fraction, args.main_fraction, seed=args.seed,
    )  # fmt: skip
    text_feats, text_proj = None, None
    if args.text_weight > 0:
        texts = [it.text for it in first]
        text_feats, text_proj = text_cache(model, get_tokenizer(args.model), texts, cache_dir, tag)
    has_text = torch.tensor([bool(it.text) for it in first])
    module = TrainModule(tower, args.loss, args.tau, args.weights, args.text_weight, text_proj)
    optimizer = make_optimizer(module, args.lr, args.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, args.steps, args.warmup_steps, args.min_lr_ratio)
    )
    rng = np.random.default_rng([args.seed, 11])
    step, t0, last = 0, time.time(), {}
    epoch = 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for batch in sampler:
            if step >= args.steps:
                break
            batch = np.asarray(batch)
            views = rng.integers(0, args.views, size=batch.shape[0])
            # the two items of a single-figure patent are one drawing: give them two different views
            dup = batch[0::2] == batch[1::2]
            second = (views[0::2] + 1 + rng.integers(0, args.views - 1, size=dup.shape[0])) % args.views
            views[1::2] = np.where(dup, second, views[1::2])
            f = feats[torch.from_numpy(batch), torch.from_numpy(views)].float()
            pat = item_patent[torch.from_numpy(batch)]
            tf = text_feats[pat] if text_feats is not None else None
            losses = module(
                f, pat, sub_of[pat], main_of[pat], tf, text_mask=has_text[pat] if tf is not None else None
            )
            loss = sum(losses.values())
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss is {loss.item()} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if args.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(
                    [p for p in module.parameters() if p.requires_grad], args.grad_clip
                )
            optimizer.step()
            scheduler.step()
            step += 1
            last = {k: float(v.detach()) for k, v in losses.items()} | {"loss": float(loss.detach())}
            if step % args.log_every == 0 or step == args.steps:
                terms = " ".join(f"{k}={v:.4f}" for k, v in last.items())
                log.info("step %d/%d %s lr=%.2e %.1f s", step, args.steps, terms, scheduler.get_last_lr()[0],
                         time.time() - t0)  # fmt: skip
        epoch += 1
    train_seconds = time.time() - t0
    metrics["real_validation"] = validate(tower, val_feats, val_corpus, args.eval_k)
    metrics["real_validation_at"] = validate_sizes(
        tower, eval_tf, val_corpus, val_items, args, cache_dir, tag
    )
    log.info("after %d steps (%.0f s): %s", step, train_seconds, brief(metrics["real_validation"]))
    metrics["train"] = {"steps": step, "train_seconds": round(train_seconds, 1), "final_losses": last,
                        "wall_seconds": round(time.time() - t_start, 1), "epochs": epoch}  # fmt: skip
    served = metrics["real_validation"]
    if args.serve_size and args.serve_size != args.image_size:
        if str(args.serve_size) not in metrics["real_validation_at"]:
            raise SystemExit(f"--serve-size {args.serve_size} must be one of --eval-sizes {args.eval_sizes}")
        served = metrics["real_validation_at"][str(args.serve_size)]
    current = {n: p.detach() for n, p in model.named_parameters() if n in base}
    config = {
        "kind": KIND,
        "model": {
            "name": args.model,
            "image_size": args.serve_size or args.image_size,
            "train_image_size": args.image_size,
        },
        "base": "default",
        "delta": True,
        "trained_parameters": trainable,
        "run_name": name,
        "train": {**vars(args), "s_p": args.weights[0], "s_s": args.weights[1], "s_m": args.weights[2]},
        "corpus": {
            "sources": by_source,
            "patents": len(patents),
            "train_figures": len(items),
            "validation": metrics["validation"],
        },  # fmt: skip
        "real_validation": validation_summary(served, REDBOOK_NAME, args.serve_size or args.image_size),
        "real_validation_at": summaries_at(metrics["real_validation_at"]),
        **({"default": True} if args.default else {}),
    }
    save_checkpoint(
        run_dir, delta(current, base), config, metrics, ["python", "-m", "train.hmcl_real", *argv]
    )
    log.info("saved %s", run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
