"""What the HMCL trainer feeds its encoder, and the cached-trunk run that makes a CPU run take minutes.

* End to end on images (``train.hmcl`` on a corpus): :class:`TrainFigures` + ``StepBatches``
  (``patent_demo.drawing.sampler``): figures of the training patents, augmented with per-step seeds so a
  run is reproducible and resumes exactly.
* Cached trunk outputs (``--sources uspc deeppatent2 generated``): ``SplitTower``
  (``patent_demo.drawing.finetune``), the vision tower cut before its first trainable block; ``prefix``
  (frozen) runs once per cached view (:func:`view_cache`, :func:`eval_cache`), ``suffix`` (trainable)
  every step. ``suffix(prefix(x)) == model.encode_image(x)``.
  :func:`run` trains on them: training drawings from ``train.hmcl.data`` (``uspc``: 1,000 real 2007
  drawings, USPC classes as the hierarchy; ``deeppatent2``: 13 real figures, patent only; ``generated``:
  the training split of the generated corpus, Locarno), validated on every page of the Red Book samples
  (``--redbook``) against all other pages (``protocol="all"``), never trained on. A batch holds ``P``
  patents x 2 items: two figures of a patent when it has several, else two augmented views (x, x~) of its
  one drawing. Every step (``train.hmcl.loop.fit``) runs only the last ``--train-blocks`` blocks and the
  projections. ``--scan`` adds scan-like augmentations to the generated drawings. It writes
  ``<out>/<name>/`` with ``metrics.json`` (``real_validation``: the Red Book figures, per patent (macro)
  means and per-query values for paired bootstraps; ``zero_shot`` with ``--eval-before``),
  ``config.json``, ``model.safetensors`` (only changed parameters), ``command.txt`` and ``train.log``;
  ``--steps 0`` evaluates the pretrained encoder (zero-shot) and writes no weights.
* The image-text term's text side: :func:`text_cache`, ``patent_demo.drawing.finetune.text_tower_features``
  (frozen text tower, once per patent) stored on disk.

The pooled trunk features of the linear heads are ``patent_demo.drawing.trunk``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from patent_demo.checkpoint import delta, save_checkpoint, write_json
from patent_demo.data.corpus import Corpus, Figure
from patent_demo.drawing.finetune import KIND, SplitTower, set_trainable, text_tower_features
from patent_demo.drawing.protocol import drawing_protocol, score_embeddings, validation_summary
from patent_demo.drawing.sampler import HierarchicalBatchSampler
from patent_demo.drawing.transforms import SCAN_CHOICES, ScanConfig, scan_like
from patent_demo.drawing.trunk import save_tensors
from patent_demo.imageio import load_drawing
from train.hmcl.data import SOURCES, Item, RedBookSource, shuffle_hierarchy, training_items
from train.hmcl.loop import Step, TrainModule, cosine_schedule, fit, make_optimizer

log = logging.getLogger("train.hmcl")


class TrainFigures(Dataset):
    """Figures of the training patents; item ``(index, seed)`` -> ``([V, 3, S, S], index)``, the ``V``
    views augmented with a generator seeded by ``seed`` (so a run is reproducible and resumable).
    Drawings are read once and kept in memory, downscaled to ``cache_side`` pixels."""

    def __init__(self, corpus: Corpus, figures: list[Figure], transform, views: int, cache_side: int) -> None:
        self.corpus, self.figures, self.transform, self.views = corpus, figures, transform, views
        self.cache_side = cache_side
        self._cache: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.figures)

    def image(self, index: int):
        img = self._cache.get(index)
        if img is None:
            from PIL import Image

            img = self.corpus.open_image(self.figures[index])
            if max(img.size) > self.cache_side:
                img.thumbnail((self.cache_side, self.cache_side), Image.Resampling.BICUBIC)
            self._cache[index] = img
        return img

    def __getitem__(self, key: tuple[int, int]) -> tuple[torch.Tensor, int]:
        index, seed = key
        g = torch.Generator().manual_seed(seed)
        img = self.image(index)
        return torch.stack([self.transform(img, generator=g) for _ in range(self.views)]), index


def collate(items: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.stack([x for x, _ in items]), torch.tensor([i for _, i in items], dtype=torch.int64)


# ----------------------------------------------------------------------------------------------
# caches of the frozen part


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _load_image(path: str, side: int):
    from PIL import Image

    img = load_drawing(path)
    if max(img.size) > side:
        img.thumbnail((side, side), Image.Resampling.BICUBIC)
    return img


@torch.no_grad()
def _prefix_batches(tower: SplitTower, tensors: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    out = [tower.prefix(torch.stack(tensors[i : i + 64])).to(dtype) for i in range(0, len(tensors), 64)]
    return torch.cat(out)


def view_cache(
    tower: SplitTower,
    items: list[Item],
    train_tf,
    views: int,
    scan: ScanConfig,
    cache_dir: str | os.PathLike,
    tag: dict,
) -> torch.Tensor:
    """``[N, V, C, h, w]`` float16 prefix outputs of ``V`` augmented views of each item, in item order.

    Each source is cached on its own under ``cache_dir`` (so a change of the scan-like augmentations,
    which apply to generated drawings only, recomputes only those)."""
    order: list[int] = []
    chunks = []
    for source in dict.fromkeys(it.source for it in items):
        idx = [i for i, it in enumerate(items) if it.source == source]
        src_scan = scan if source == "generated" else ScanConfig()
        chunks.append(
            _source_views(tower, [items[i] for i in idx], train_tf, views, src_scan, cache_dir, tag)
        )
        order += idx
    out = torch.cat(chunks)
    inverse = torch.empty(len(order), dtype=torch.int64)
    inverse[torch.tensor(order)] = torch.arange(len(order))
    return out[inverse]


def _source_views(tower, items, train_tf, views, scan, cache_dir, tag) -> torch.Tensor:
    parts = {
        "items": [it.path for it in items],
        "views": views,
        "size": train_tf.size,
        "augment": repr(train_tf.augment),
        "scan": repr(scan),
        "cut": tower.cut_key,
        **tag,
    }
    path = Path(cache_dir) / f"views-{items[0].source}-{_key(parts)}.pt"
    if path.is_file():
        return torch.load(path)
    for earlier in range(tower.cut, -1, -1):  # the same views cut earlier: run the frozen blocks between
        base = Path(cache_dir) / f"views-{items[0].source}-{_key({**parts, 'cut': earlier})}.pt"
        if base.is_file() and (earlier, tower.pooled) != (tower.cut, False):
            log.info("deriving %s from %s", path, base)
            f = torch.load(base)
            flat = f.flatten(0, 1)
            out = torch.cat(
                [
                    tower.advance(flat[i : i + 256].float(), earlier).to(torch.float16)
                    for i in range(0, flat.shape[0], 256)
                ]
            )
            out = out.view(f.shape[0], f.shape[1], *out.shape[1:])
            save_tensors(out, path)
            return out
    log.info(
        "caching %d views of %d %s drawings at %d px -> %s",
        views,
        len(items),
        items[0].source,
        train_tf.size,
        path,
    )
    chunks = []
    for start in range(0, len(items), 64):
        tensors = []
        for i in range(start, min(start + 64, len(items))):
            g = torch.Generator().manual_seed(1_000_003 * i + 17)
            img = _load_image(items[i].path, 3 * train_tf.size)
            for _ in range(views):
                view = scan_like(img, scan, g) if scan.active else img
                tensors.append(train_tf(view, generator=g))
        f = _prefix_batches(tower, tensors, torch.float16)
        chunks.append(f.view(-1, views, *f.shape[1:]))
        if start // 64 % 5 == 4:
            log.info("  %d / %d drawings", min(start + 64, len(items)), len(items))
    out = torch.cat(chunks)
    save_tensors(out, path)
    return out


def eval_cache(
    tower: SplitTower, items: list[Item], eval_tf, cache_dir: str | os.PathLike, tag: dict
) -> torch.Tensor:
    """``[N, C, h, w]`` float32 prefix outputs of the validation pages (eval transform)."""
    parts = {"items": [it.path for it in items], "size": eval_tf.size, "cut": tower.cut_key, **tag}
    path = Path(cache_dir) / f"eval-{_key(parts)}.pt"
    if path.is_file():
        return torch.load(path)
    log.info("caching %d validation pages at %d px -> %s", len(items), eval_tf.size, path)
    tensors = [eval_tf(load_drawing(it.path)) for it in items]
    out = _prefix_batches(tower, tensors, torch.float32)
    save_tensors(out, path)
    return out


def text_cache(model: nn.Module, tokenizer, texts: list[str], cache_dir: str | os.PathLike, tag: dict):
    """``(features [N, H], projection)`` of :func:`text_tower_features`; the frozen features
    are stored under ``cache_dir``."""
    path = Path(cache_dir) / f"text-{_key({'texts': texts, **tag})}.pt"
    if path.is_file():
        proj = model.text.proj if hasattr(getattr(model, "text", None), "proj") else nn.Identity()
        return torch.load(path), proj
    log.info("encoding %d patent texts with the frozen text tower -> %s", len(texts), path)
    features, proj = text_tower_features(model, tokenizer, texts)
    save_tensors(features, path)
    return features, proj


# ----------------------------------------------------------------------------------------------
# the cached-trunk run
REDBOOK_NAME = "impact_design_patent_samples (Red Book pages, every page against all others)"
CACHE = "hmcl-real"  # the cache sub-folder (kept from the earlier command, so existing caches are reused)


def add_cached_arguments(p: argparse.ArgumentParser) -> None:
    """The ``train.hmcl`` options of the cached feed: cached views, scan-like augmentations, validation sizes."""
    a = p.add_argument
    a("--views", type=int, default=4, help="cached feed: augmented views cached per training drawing")
    a(
        "--scan",
        nargs="*",
        default=[],
        choices=[*SCAN_CHOICES, "all"],
        help="cached feed: scan-like augmentations of the generated drawings",
    )
    a("--scan-prob", type=float, default=0.5, help="probability of each --scan augmentation")
    a(
        "--init-projection",
        choices=("package", "whiten"),
        default="package",
        help="cached feed: the image projection's start: as created (package), or the whitening of the training "
        "drawings' pooled features (needs --train-blocks 0)",
    )
    a(
        "--eval-before",
        action="store_true",
        help="cached feed: also validate the pretrained encoder (zero_shot)",
    )
    a(
        "--eval-sizes",
        type=int,
        nargs="*",
        default=[160, 224],
        help="cached feed: also validate at these input sizes (weights trained at one size apply at any)",
    )
    a(
        "--serve-size",
        type=int,
        default=0,
        help="cached feed: input size the checkpoint is used at (one of --eval-sizes; 0: --image-size)",
    )
    a(
        "--default",
        action="store_true",
        help='mark the checkpoint as the app\'s default drawing model ("default": true in config.json)',
    )


def check_cached_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject options of the end-to-end feed and too few cached views (``parser.error``)."""
    given = [
        f
        for f, v in (
            ("--corpus", args.corpus),
            ("--labels", args.labels),
            ("--init-from", args.init_from),
            ("--resume", args.resume),
            ("--epochs", args.epochs),
        )
        if v
    ]
    if given:
        parser.error(f"{', '.join(given)}: only with --sources corpus (the end-to-end feed)")
    if args.views < 2:
        parser.error("--views must be at least 2 (a single-figure patent needs two views)")


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
    """The cached feed's run name, e.g. ``hmcl-tw0.2-tau0.1-w1_0.35_0.2-128px-300st-s0``."""
    parts = [args.loss, f"tw{args.text_weight:g}", f"tau{args.tau:g}"]
    if args.loss == "hmcl":
        parts.append("w" + "_".join(f"{w:g}" for w in args.weights))
    parts += [f"{args.image_size}px", f"{args.steps}st", f"s{args.seed}"]
    if args.scan:
        parts.append("scan-" + "+".join(args.scan))
    if args.shuffle_labels:
        parts.append("shuffled")
    return "-".join(parts)


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


def revalidate(run_dir: Path, args: argparse.Namespace, sizes: Sequence[int]) -> dict:
    """Add ``real_validation_at`` (``sizes``) to a finished run's ``metrics.json`` and ``config.json`` (for
    runs made before the option existed); returns it. ``args``: ``train.hmcl.parse_args`` of the run's data
    options (its training settings are read from the run's ``config.json``)."""
    from patent_demo.checkpoint import apply_weights, load_config, load_weights
    from patent_demo.drawing.encoders import create_encoder

    config = load_config(run_dir)
    args = argparse.Namespace(**vars(args))
    args.eval_sizes = list(sizes)
    train = config["train"]
    args.encoder = train.get("encoder", train.get("model"))  # runs of the earlier command recorded "model"
    for key in ("train_blocks", "redbook", "cache_dir", "eval_k"):
        setattr(args, key, train[key])
    model, _, eval_tf = create_encoder(args.encoder, image_size=config["model"]["image_size"])
    apply_weights(model, load_weights(run_dir), partial=True)
    model.eval()
    tower = SplitTower(model, args.train_blocks)
    corpus, items = RedBookSource(args.redbook).load()
    cache_dir = Path(args.cache_dir) / CACHE
    at = validate_sizes(tower, eval_tf, corpus, items, args, cache_dir, {"model": args.encoder})
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


def run(args: argparse.Namespace, argv: list[str], name: str, run_dir: Path) -> int:
    """One cached-feed run into ``run_dir`` (``train.hmcl.main`` sets up threads and logging)."""
    from patent_demo.drawing.encoders import create_encoder, get_tokenizer

    t_start = time.time()
    torch.manual_seed(args.seed)
    model, train_tf, eval_tf = create_encoder(args.encoder, image_size=args.image_size)
    model.eval()  # BatchNorm statistics and dropout stay as pretrained
    trainable = set_trainable(model, args.train_blocks, text_projection=args.text_weight > 0)
    tower = SplitTower(model, args.train_blocks)
    base = {n: p.detach().clone() for n, p in model.named_parameters() if n in set(trainable)}
    cache_dir = Path(args.cache_dir) / CACHE
    tag = {"model": args.encoder}

    val_corpus, val_items = RedBookSource(args.redbook).load()
    val_feats = eval_cache(tower, val_items, eval_tf, cache_dir, tag)
    metrics: dict = {
        "validation": {
            "corpus": str(args.redbook),
            "protocol": "all",
            "pages": len(val_items),
            "patents": len(val_corpus),
        }
    }
    if args.eval_before or args.steps == 0:
        metrics["zero_shot"] = validate(tower, val_feats, val_corpus, args.eval_k)
        log.info("zero-shot %d px: %s", args.image_size, brief(metrics["zero_shot"]))
    if args.steps == 0 and args.init_projection == "package":
        metrics["real_validation"] = metrics["zero_shot"]
        write_json(run_dir / "metrics.json", metrics)
        return 0

    items = training_items(args)
    overlap = {it.patent for it in items} & {it.patent for it in val_items}
    if overlap:
        raise SystemExit(f"training and validation share patents {sorted(overlap)[:5]}")
    feats = view_cache(
        tower, items, train_tf, args.views, ScanConfig.of(args.scan, args.scan_prob), cache_dir, tag
    )
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
    log.info(
        "training drawings %s, %d patents, %d subclasses, %d main classes; validation %d pages of %d patents",
        by_source,
        len(patents),
        len(sub_vocab),
        len(main_vocab),
        len(val_items),
        len(val_corpus),
    )

    sampler = HierarchicalBatchSampler(
        patents,
        [it.subclass for it in first],
        [it.main for it in first],
        per_patent,
        args.batch_patents,
        2,
        args.subclass_fraction,
        args.main_fraction,
        seed=args.seed,
    )
    text_feats, text_proj = None, None
    if args.text_weight > 0:
        texts = [it.text for it in first]
        text_feats, text_proj = text_cache(model, get_tokenizer(args.encoder), texts, cache_dir, tag)
    has_text = torch.tensor([bool(it.text) for it in first])
    module = TrainModule(tower, args.loss, args.tau, args.weights, args.text_weight, text_proj)
    optimizer = make_optimizer(module, args.lr, args.weight_decay)
    scheduler = cosine_schedule(optimizer, args.steps, args)
    rng = np.random.default_rng([args.seed, 11])
    epochs = [0]  # epochs begun

    def steps():
        step = 0
        while step < args.steps:
            sampler.set_epoch(epochs[0])
            epochs[0] += 1
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
                mask = has_text[pat] if tf is not None else None
                yield Step((f, pat, sub_of[pat], main_of[pat], tf), {"text_mask": mask}, f.shape[0])
                step += 1

    done = fit(
        module,
        steps(),
        optimizer,
        scheduler,
        total=args.steps,
        grad_clip=args.grad_clip,
        log_every=args.log_every,
    )
    step, last, epoch, train_seconds = done.step, done.last, epochs[0], done.seconds
    metrics["real_validation"] = validate(tower, val_feats, val_corpus, args.eval_k)
    metrics["real_validation_at"] = validate_sizes(
        tower, eval_tf, val_corpus, val_items, args, cache_dir, tag
    )
    log.info("after %d steps (%.0f s): %s", step, train_seconds, brief(metrics["real_validation"]))
    metrics["train"] = {
        "steps": step,
        "train_seconds": round(train_seconds, 1),
        "final_losses": last,
        "wall_seconds": round(time.time() - t_start, 1),
        "epochs": epoch,
    }
    served = metrics["real_validation"]
    if args.serve_size and args.serve_size != args.image_size:
        if str(args.serve_size) not in metrics["real_validation_at"]:
            raise SystemExit(f"--serve-size {args.serve_size} must be one of --eval-sizes {args.eval_sizes}")
        served = metrics["real_validation_at"][str(args.serve_size)]
    current = {n: p.detach() for n, p in model.named_parameters() if n in base}
    config = {
        "kind": KIND,
        "model": {
            "name": args.encoder,
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
        },
        "real_validation": validation_summary(served, REDBOOK_NAME, args.serve_size or args.image_size),
        "real_validation_at": summaries_at(metrics["real_validation_at"]),
        **({"default": True} if args.default else {}),
    }
    save_checkpoint(run_dir, delta(current, base), config, metrics, ["python", "-m", "train.hmcl", *argv])
    log.info("saved %s", run_dir)
    return 0
