"""Training data and the train-step module of ``train.hmcl``.

* ``load_corpus``: ``--corpus`` or the generated demo corpus.
* ``shuffle_labels``: the label-permutation control (class sizes kept).
* ``TrainFigures`` + ``StepBatches``: figures of the training patents, augmented with per-step seeds so a
  run is reproducible and resumes exactly; batches come from ``HierarchicalBatchSampler``.
* ``text_tower_features``: the frozen text tower's outputs, cached once per patent (Eq. 5's text side).
* ``TrainModule``: encoder + losses in one module so DDP synchronises every trainable parameter.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.drawing.sampler import HierarchicalBatchSampler
from patent_demo.losses import ContrastiveLoss, HMCLLoss, ImageTextLoss


def load_corpus(args: argparse.Namespace) -> Corpus:
    """``--corpus`` when given, else the generated demo corpus (built once under ``--cache-dir``)."""
    if args.corpus:
        return Corpus.load(args.corpus, validate=False).ensure_splits(seed=args.seed)
    from patent_demo.data.democorpus import build_corpus, ensure_demo_corpus

    if args.demo_types is None:
        return ensure_demo_corpus(
            args.cache_dir, patents=args.demo_patents, seed=args.demo_seed, size=args.demo_size
        )
    root = (
        Path(args.cache_dir)
        / f"democorpus-n{args.demo_patents}-t{args.demo_types}-s{args.demo_seed}-{args.demo_size}px"
    )
    if not (root / "democorpus.json").is_file():
        build_corpus(root, patents=args.demo_patents, seed=args.demo_seed, size=args.demo_size, workers=1,
                     n_types=args.demo_types)  # fmt: skip
    return Corpus.load(root, validate=False, name="democorpus")


def shuffle_labels(subclasses: Sequence, seed: int) -> list:
    """A random permutation of the labels over the patents (subclass strings, or ``(subclass, main)``
    pairs that then move together): every class keeps its size and the hierarchy stays consistent."""
    perm = np.random.default_rng([seed, 7]).permutation(len(subclasses))
    return [subclasses[i] for i in perm]


def _seed_of(*parts: int) -> int:
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
                yield [(f, _seed_of(self.seed, step, self.rank, j)) for j, f in enumerate(batch)]
                step += 1


def collate(items: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.stack([x for x, _ in items]), torch.tensor([i for _, i in items], dtype=torch.int64)


def patent_text(patent: Patent) -> str:
    """The text of the image-text term: title and description."""
    return ". ".join(t for t in (patent.title.strip(), patent.text.strip()) if t)


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


class TrainModule(nn.Module):
    """Encoder + losses in one module so DDP synchronises every trainable parameter (the text term's
    logit scale included). ``forward`` returns the dict of ``*_loss`` terms."""

    def __init__(self, model: nn.Module, loss: str, tau: float, weights: Sequence[float], text_weight: float,
                 text_proj: nn.Module | None) -> None:  # fmt: skip
        super().__init__()
        self.model = model
        self.loss = loss
        self.cl = ContrastiveLoss(tau=tau)
        s_p, s_s, s_m = weights
        self.hmcl = HMCLLoss(
            tau=tau, s_p=s_p, s_s=s_s, s_m=s_m, text_weight=0.0, learn_text_logit_scale=False
        )
        self.text_proj = text_proj
        self.text = ImageTextLoss(weight=text_weight) if text_weight > 0 else None

    def forward(self, images: torch.Tensor, patent_ids: torch.Tensor, subclass_ids: torch.Tensor,
                main_ids: torch.Tensor, text_features: torch.Tensor | None = None, h: torch.Tensor | None = None,
                negative_mask: torch.Tensor | None = None,
                text_mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
        """``images [B, 3, S, S]``, ids ``[B]``; an explicit ``h [B, B]`` (Eq. 2 weights with label overrides)
        and ``negative_mask [B, B]`` replace the ids' weights; ``text_mask [B]`` selects the items that
        have a text for the image-text term (Eq. 5)."""
        z = self.model.encode_image(images).float()  # [B, D]
        if h is not None:
            out = self.hmcl(z, h=h, negative_mask=negative_mask)
        elif self.loss == "cl":
            out = self.cl(z, patent_ids)
        else:
            out = self.hmcl(z, patent_ids, subclass_ids, main_ids)
        if self.text is not None and text_features is not None:
            t = self.text_proj(text_features).float()  # [B, D]
            if text_mask is not None:
                z, t, patent_ids = z[text_mask], t[text_mask], patent_ids[text_mask]
            out.update(self.text(z, t, patent_ids))
        return out
