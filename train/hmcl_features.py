"""What the HMCL trainer feeds its encoder, and the caches that make a CPU run take minutes.

* End to end on images (``train.hmcl`` on a corpus): :class:`TrainFigures` + :class:`StepBatches`: figures
  of the training patents, augmented with per-step seeds so a run is reproducible and resumes exactly.
* Cached trunk outputs (``train.hmcl_cached``): :class:`SplitTower`, the vision tower cut before its first
  trainable block; ``prefix`` (frozen) runs once per cached view (:func:`view_cache`, :func:`eval_cache`),
  ``suffix`` (trainable) every step. ``suffix(prefix(x)) == model.encode_image(x)``.
* Pooled trunk features (``train.hmcl_heads``): :func:`trunk_features`, the packaged EfficientNet-Lite0
  trunk once per drawing (clean, mirrored and augmented views).
* The image-text term's text side: :func:`text_tower_features` (frozen text tower, once per patent) and
  :func:`text_cache` (the same stored on disk).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from patent_demo.data.corpus import Corpus, Figure
from patent_demo.drawing.sampler import HierarchicalBatchSampler
from patent_demo.drawing.transforms import AugmentConfig, ScanConfig, scan_like
from patent_demo.imageio import load_drawing
from train.hmcl_sources import Item

log = logging.getLogger("train.hmcl")
TRUNK = "lite-trunk"


def step_seed(*parts: int) -> int:
    """One augmentation seed from ``(seed, step, rank, j)``: runs reproduce and resume exactly."""
    return int(np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1, dtype=np.uint64)[0])


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


class StepBatches:
    """Batches of steps ``start .. total - 1`` from ``sampler``: lists of ``(figure index, seed)``.

    Step ``s`` is batch ``s mod len(sampler)`` of epoch ``s // len(sampler)``, so resuming at any step
    yields exactly the batches the uninterrupted run would have seen."""

    def __init__(
        self, sampler: HierarchicalBatchSampler, total: int, start: int, seed: int, rank: int
    ) -> None:
        self.sampler, self.total, self.start, self.seed, self.rank = sampler, total, start, seed, rank

    def __len__(self) -> int:
        return max(0, self.total - self.start)

    def __iter__(self):
        n = len(self.sampler)
        step = self.start
        while step < self.total:
            epoch, offset = divmod(step, n)
            self.sampler.set_epoch(epoch)
            for batch in list(self.sampler)[offset:]:
                if step >= self.total:
                    return
                yield [(f, step_seed(self.seed, step, self.rank, j)) for j, f in enumerate(batch)]
                step += 1


def collate(items: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.stack([x for x, _ in items]), torch.tensor([i for _, i in items], dtype=torch.int64)


@torch.no_grad()
def text_tower_features(model: nn.Module, tokenizer, texts: list[str], batch_size: int = 64):
    """Frozen text-tower outputs ``[N, H]`` and the trainable projection to apply to them.

    For a Hugging Face text tower the pooled transformer output is cached and ``model.text.proj`` (which
    trains) maps it to ``[N, D]``; for other towers the whole text embedding is cached and the projection
    is the identity (the tower is frozen). ``proj(features)`` equals ``model.encode_text`` before
    normalisation.
    """
    text = getattr(model, "text", None)
    device = next(model.parameters()).device
    hf = text is not None and all(hasattr(text, a) for a in ("transformer", "pooler", "proj", "config"))
    # texts in length order, each batch cut after its longest text: padding is masked anyway, so short
    # titles cost a few tokens instead of the full context length
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    chunks = []
    for i in range(0, len(texts), batch_size):
        tokens = tokenizer([texts[j] for j in order[i : i + batch_size]]).to(device)
        if hf:
            mask = (tokens != text.config.pad_token_id).long()
            keep = max(1, int(mask.sum(dim=1).max()))
            tokens, mask = tokens[:, :keep], mask[:, :keep]
            out = text.transformer(input_ids=tokens, attention_mask=mask)
            chunks.append(text.pooler(out, mask).float())
        else:
            chunks.append(model.encode_text(tokens).float())
    features = torch.cat(chunks)
    inverse = torch.empty(len(order), dtype=torch.int64)
    inverse[torch.tensor(order, dtype=torch.int64)] = torch.arange(len(order))
    return features[inverse], (text.proj if hf else nn.Identity())


# ----------------------------------------------------------------------------------------------
# the split vision tower


class SplitTower(nn.Module):
    """A timm EfficientNet/MobileNet-style vision tower (``model.visual.trunk``) cut before its last
    ``train_blocks`` blocks (``patent_demo.drawing.finetune.vision_blocks`` order): ``prefix(x)`` is the
    frozen part, ``suffix(f)`` the trainable part and the projection head. With ``train_blocks = 0`` only the
    projection trains and the cut falls after the pooling (``prefix`` gives the pooled trunk features).
    ``encode_image(f)`` runs the suffix, so the module stands in for the encoder in
    ``train.hmcl_loop.TrainModule``; ``suffix(prefix(x)) == model.encode_image(x)``."""

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
    """``(features [N, H], projection)`` of :func:`text_tower_features`; the frozen features
    are stored under ``cache_dir``."""
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


# ----------------------------------------------------------------------------------------------
# pooled trunk features (linear heads)


@torch.no_grad()
def redbook_features(corpus: Corpus, items: list, size: int, cache_dir: str | Path = "cache") -> tuple:
    """Pooled trunk features ``(clean, mirrored)`` of the ``(patent, figure)`` items of a Red Book corpus at
    ``size`` px (the validation pages of a Locarno choice), cached under ``cache_dir``."""
    from patent_demo.drawing.encoders import create_encoder

    ids = [f"{p.id}/{f.path}" for p, f in items]
    key = hashlib.sha1(json.dumps([str(corpus.root), size, TRUNK, ids]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"redbook-trunk-{size}-{key}.pt"
    if path.is_file():
        out = torch.load(path, weights_only=True)
        return out["clean"], out["flip"]
    model, _, eval_tf = create_encoder(TRUNK, image_size=size)
    trunk = model.visual.eval()
    clean, flip = [], []
    for start in range(0, len(items), 16):
        x = torch.stack([eval_tf(corpus.open_image(f)) for _, f in items[start : start + 16]])
        clean.append(trunk(x))
        flip.append(trunk(torch.flip(x, dims=[3])))
    out = {"clean": torch.cat(clean), "flip": torch.cat(flip)}
    _save(out, path)
    return out["clean"], out["flip"]


def _trunk_key(corpus: Corpus, size: int, views: int, seed: int, ids: list[str]) -> str:
    h = hashlib.sha1(json.dumps([str(corpus.root), size, views, seed, TRUNK, ids]).encode()).hexdigest()
    return h[:16]


@torch.no_grad()
def trunk_features(
    corpus: Corpus, size: int, views: int, train_ids: set[str], cache_dir: str | Path = "cache", seed: int = 0,
    batch_size: int = 32,
) -> dict:  # fmt: skip
    """Pooled trunk features of every first figure of ``corpus`` at ``size`` px: clean, mirrored, and
    ``views`` augmented views (``DrawingTrainTransform``, seeded) of the patents in ``train_ids``."""
    from patent_demo.drawing.encoders import create_encoder

    ids = [p.id for p in corpus.patents]
    path = Path(cache_dir) / f"uspc-trunk-{size}-{views}-{_trunk_key(corpus, size, views, seed, ids)}.pt"
    if path.is_file():
        return torch.load(path, weights_only=True) | {"ids": ids}
    model, train_tf, eval_tf = create_encoder(TRUNK, image_size=size, augment=AugmentConfig())
    trunk = model.visual.eval()
    gen = torch.Generator().manual_seed(seed)
    clean, flip, aug = [], [], []
    patents = corpus.patents
    for start in range(0, len(patents), batch_size):
        chunk = patents[start : start + batch_size]
        images = [corpus.open_image(p.figures[0]) for p in chunk]
        x = torch.stack([eval_tf(im) for im in images])
        clean.append(trunk(x))
        flip.append(trunk(torch.flip(x, dims=[3])))
        v = torch.full((len(chunk), views, clean[-1].shape[1]), float("nan"))
        rows = [i for i, p in enumerate(chunk) if p.id in train_ids]
        if rows and views:
            xs = torch.stack([train_tf(images[i], generator=gen) for i in rows for _ in range(views)])
            v[rows] = trunk(xs).reshape(len(rows), views, -1)
        aug.append(v)
        log.info("trunk features %d px: %d / %d", size, start + len(chunk), len(patents))
    out = {"clean": torch.cat(clean), "flip": torch.cat(flip), "views": torch.cat(aug)}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    return out | {"ids": ids}
