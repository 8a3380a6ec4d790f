"""Data of ``train.hmcl_real``: real and generated training drawings, the real validation pages, and the
frozen part of the vision tower cached over both.

* ``training_items``: the 1,000 USPC drawings (``metadata_2007.txt``: patent, ``D2-969``, title), the
  DeepPatent2 figures (patent only, no class) and the training split of the generated corpus (Locarno),
  each item with scheme-qualified hierarchy keys (``hierarchy.hierarchy_keys``), so USPC and Locarno items
  relate only through the patent.
* ``validation_items``: every drawing page of the Red Book samples (Locarno), kept apart from training.
* ``SplitTower``: the vision tower cut before its first trainable block; ``prefix`` (frozen) runs once per
  cached view, ``suffix`` (trainable) runs every step. ``suffix(prefix(x)) == model.encode_image(x)``.
* ``view_cache`` / ``eval_cache``: prefix outputs of ``V`` augmented views per training drawing and of
  the validation pages, stored under ``--cache-dir``; keyed by everything they depend on.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from patent_demo import hierarchy
from patent_demo.data.corpus import Corpus, Patent
from patent_demo.drawing.imageio import load_drawing
from patent_demo.drawing.transforms import ScanConfig, scan_like

log = logging.getLogger("train.hmcl_real")


@dataclass(frozen=True)
class Item:
    """One training or validation drawing: patent id, image file, qualified subclass and main-class keys
    (``""`` when unknown), the patent's text, its source (``uspc``, ``deeppatent2``, ``generated``,
    ``redbook``) and the Locarno/USPC code shown in tables."""

    patent: str
    path: str
    subclass: str
    main: str
    text: str
    source: str
    code: str = ""


def uspc_items(folder: str | os.PathLike) -> list[Item]:
    """The USPC 2007 drawings: ``metadata_2007.txt`` (TSV, no header: patent id, class-subclass such as
    ``D2-969``, title) beside ``images/<patent id>.png``."""
    folder = Path(folder)
    items = []
    with open(folder / "metadata_2007.txt", encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or not row[0].strip():
                continue
            if len(row) < 3:
                raise ValueError(f"{folder / 'metadata_2007.txt'}:{lineno}: expected 3 columns, got {row}")
            pid, code, title = (c.strip() for c in row[:3])
            image = folder / "images" / f"{pid}.png"
            if not image.is_file():
                raise FileNotFoundError(f"{folder / 'metadata_2007.txt'}:{lineno}: no image {image}")
            sub, main = hierarchy.hierarchy_keys("uspc", code)
            items.append(Item(pid, str(image), sub, main, title, "uspc", sub.partition(":")[2]))
    return items


def deeppatent2_items(folder: str | os.PathLike) -> list[Item]:
    """Segmented DeepPatent2 figures (``USD<number>-<date>-D<sheet>_<figure>.png``): patent only."""
    from patent_demo.data.loaders.deeppatent2 import parse_deeppatent2_name

    items = []
    for image in sorted((Path(folder) / "images").glob("*.png")):
        name = parse_deeppatent2_name(image.name)
        items.append(Item(name.patent_id, str(image), "", "", "", "deeppatent2"))
    return items


def corpus_items(corpus: Corpus, patents: list[Patent], source: str, max_figures: int = 0) -> list[Item]:
    """The figures of ``patents`` (the first ``max_figures`` of each when > 0) with the patent's hierarchy
    keys (``hierarchy.patent_hierarchy``)."""
    items = []
    for p in patents:
        sub, main = hierarchy.patent_hierarchy(p.codes)
        text = ". ".join(t for t in (p.title.strip(), p.text.strip()) if t)
        for f in p.figures[: max_figures or None]:
            items.append(Item(p.id, str(corpus.image_path(f)), sub, main, text, source, p.locarno))
    return items


def generated_items(cache_dir: str, patents: int, seed: int, size: int, max_figures: int = 0) -> list[Item]:
    """The training split of the generated corpus (built once under ``cache_dir``)."""
    from patent_demo.data.democorpus.build import ensure_demo_corpus

    corpus = ensure_demo_corpus(cache_dir, patents=patents, seed=seed, size=size, workers=1).ensure_splits()
    return corpus_items(corpus, corpus.split("train"), "generated", max_figures)


def validation_items(redbook: str | os.PathLike) -> tuple[Corpus, list[Item]]:
    """Every drawing page of the Red Book grants under ``redbook``, in ``drawing_protocol(..., "all")``
    order (patent by patent, page by page)."""
    from patent_demo.data.loaders.uspto import load_redbook

    corpus = load_redbook(redbook)
    return corpus, corpus_items(corpus, corpus.patents, "redbook")


def shuffle_hierarchy(items: list[Item], seed: int) -> list[Item]:
    """The label-permutation control: within each scheme, the patents' subclasses are permuted (class
    sizes kept) and the main class follows the new subclass."""
    import numpy as np

    rng = np.random.default_rng([seed, 7])
    by_scheme: dict[str, list[str]] = {}
    for it in items:
        if it.subclass:
            by_scheme.setdefault(it.subclass.partition(":")[0], [])
    new_of: dict[str, str] = {}
    for scheme in by_scheme:
        pats = sorted({it.patent for it in items if it.subclass.startswith(scheme + ":")})
        subs = {it.patent: it.subclass for it in items if it.subclass.startswith(scheme + ":")}
        perm = rng.permutation(len(pats))
        new_of.update({p: subs[pats[j]] for p, j in zip(pats, perm, strict=True)})
    out = []
    for it in items:
        if it.patent in new_of:
            sub = new_of[it.patent]
            it = Item(it.patent, it.path, sub, hierarchy.main_of(sub), it.text, it.source, it.code)
        out.append(it)
    return out


# ----------------------------------------------------------------------------------------------
# the split vision tower


class SplitTower(nn.Module):
    """A timm EfficientNet/MobileNet-style vision tower (``model.visual.trunk``) cut before its last
    ``train_blocks`` blocks (``patent_demo.drawing.finetune.vision_blocks`` order): ``prefix(x)`` is the
    frozen part, ``suffix(f)`` the trainable part and the projection head. With ``train_blocks = 0`` only the
    projection trains and the cut falls after the pooling (``prefix`` gives the pooled trunk features).
    ``encode_image(f)`` runs the suffix, so the module stands in for the encoder in
    ``train.hmcl_data.TrainModule``; ``suffix(prefix(x)) == model.encode_image(x)``."""

    def __init__(self, model: nn.Module, train_blocks: int) -> None:
        super().__init__()
        self.model = model
        trunk = model.visual.trunk
        if not hasattr(trunk, "blocks") or not hasattr(trunk, "conv_stem"):
            raise ValueError("feature caching needs a timm EfficientNet-style trunk (conv_stem, blocks)")
        self.blocks = [b for stage in trunk.blocks for b in stage]
        # vision_blocks: group 0 is the stem, then one group per block (the last also holds conv_head)
        self.cut = max(0, len(self.blocks) - train_blocks)
        self.pooled = train_blocks == 0
        self.cut_key: int | str = "pooled" if self.pooled else self.cut

    def _pool(self, x: torch.Tensor) -> torch.Tensor:
        t = self.model.visual.trunk
        return t.forward_head(t.bn2(t.conv_head(x)))

    @torch.no_grad()
    def prefix(self, x: torch.Tensor) -> torch.Tensor:
        t = self.model.visual.trunk
        x = t.bn1(t.conv_stem(x))
        return self.advance(x, 0)

    @torch.no_grad()
    def advance(self, f: torch.Tensor, from_cut: int) -> torch.Tensor:
        """Prefix outputs at this tower's cut from features cut earlier (before block ``from_cut``)."""
        for b in self.blocks[from_cut : self.cut]:
            f = b(f)
        return self._pool(f) if self.pooled else f

    def suffix(self, f: torch.Tensor) -> torch.Tensor:
        if not self.pooled:
            for b in self.blocks[self.cut :]:
                f = b(f)
            f = self._pool(f)
        return self.model.visual.head(f)

    def encode_image(self, f: torch.Tensor) -> torch.Tensor:
        return self.suffix(f)


# ----------------------------------------------------------------------------------------------
# caches


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
    parts = {"items": [it.path for it in items], "views": views, "size": train_tf.size,
             "augment": repr(train_tf.augment), "scan": repr(scan), "cut": tower.cut_key, **tag}  # fmt: skip
    path = Path(cache_dir) / f"views-{items[0].source}-{_key(parts)}.pt"
    if path.is_file():
        return torch.load(path)
    for earlier in range(tower.cut, -1, -1):  # the same views cut earlier: run the frozen blocks between
        base = Path(cache_dir) / f"views-{items[0].source}-{_key({**parts, 'cut': earlier})}.pt"
        if base.is_file() and (earlier, tower.pooled) != (tower.cut, False):
            log.info("deriving %s from %s", path, base)
            f = torch.load(base)
            flat = f.flatten(0, 1)
            out = torch.cat([tower.advance(flat[i : i + 256].float(), earlier).to(torch.float16)
                             for i in range(0, flat.shape[0], 256)])  # fmt: skip
            out = out.view(f.shape[0], f.shape[1], *out.shape[1:])
            _save(out, path)
            return out
    log.info("caching %d views of %d %s drawings at %d px -> %s", views, len(items), items[0].source,
             train_tf.size, path)  # fmt: skip
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
    _save(out, path)
    return out


def _save(tensor: torch.Tensor, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(tensor, tmp)
    os.replace(tmp, path)


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
    _save(out, path)
    return out


def text_cache(model: nn.Module, tokenizer, texts: list[str], cache_dir: str | os.PathLike, tag: dict):
    """``(features [N, H], projection)`` of ``train.hmcl_data.text_tower_features``; the frozen features
    are stored under ``cache_dir``."""
    from train.hmcl_data import text_tower_features

    path = Path(cache_dir) / f"text-{_key({'texts': texts, **tag})}.pt"
    if path.is_file():
        proj = model.text.proj if hasattr(getattr(model, "text", None), "proj") else nn.Identity()
        return torch.load(path), proj
    log.info("encoding %d patent texts with the frozen text tower -> %s", len(texts), path)
    features, proj = text_tower_features(model, tokenizer, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(features, tmp)
    os.replace(tmp, path)
    return features, proj
