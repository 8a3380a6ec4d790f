"""Fine-tuned drawing encoders: which parameters train, delta checkpoints, corpus embedding, evaluation.

What the app and the training scripts both need about an HMCL (or CL) fine-tuned encoder lives here:

* :func:`vision_blocks` / :func:`set_trainable`: the vision tower as an ordered list of blocks; the last
  ``N`` blocks plus the projections train, the rest stays frozen (so CPU training is fast and the
  checkpoint small).
* :func:`load_hmcl_checkpoint`: rebuild the encoder from its package weights and apply a checkpoint that
  stores only the parameters training changed (``patent_demo.checkpoint.delta``).
* :func:`embed_corpus_figures`: figure embeddings ``[N, D]`` (L2-normalised) in batches.
* :func:`evaluate_drawings`: the drawing-retrieval protocol of a corpus split scored at patent, subclass
  and main-class level (``patent_demo.metrics.drawing_metrics``), per-class breakdown and silhouette.

Protocols (``evaluate_drawings(protocol=...)``):

``queries``  the demo corpus protocol (``patent_demo.democorpus.retrieval_protocol``): one query figure
             per patent of the split, the gallery is every other figure of the split.
``all``      every figure of the split is a query against all other figures of the split (the query
             itself is skipped); used for real drawing pages, where no query view is marked.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from patent_demo.checkpoint import CheckpointError, apply_weights, load_config, load_weights
from patent_demo.corpus import Corpus, Figure, Patent

KIND = "hmcl"
PROTOCOLS = ("queries", "all")
DEFAULT_KS = (10,)


# ----------------------------------------------------------------------------------------------
# which parameters train


def vision_blocks(model: torch.nn.Module) -> list[list[str]]:
    """The vision tower's parameters as ordered blocks (input side first), names as in ``model``.

    A timm trunk is grouped with timm's own ``group_matcher`` (stem, then one group per block, the
    head convolution last); an open_clip ViT by its residual blocks. The stem is group 0; the
    projection head is not part of any block (see :func:`projection_parameters`).
    """
    visual = model.visual
    trunk = getattr(visual, "trunk", None)
    if trunk is not None and hasattr(trunk, "group_matcher"):
        from timm.models import group_parameters

        groups = group_parameters(trunk, trunk.group_matcher(coarse=False))
        return [[f"visual.trunk.{n}" for n in groups[i]] for i in sorted(groups)]
    resblocks = getattr(getattr(visual, "transformer", None), "resblocks", None)
    if resblocks is None:
        raise ValueError(f"cannot split the vision tower {type(visual).__name__} into blocks")
    in_blocks = {
        f"visual.transformer.resblocks.{i}.{n}"
        for i, b in enumerate(resblocks)
        for n, _ in b.named_parameters()
    }
    stem = [
        n
        for n, _ in model.named_parameters()
        if n.startswith("visual.")
        and n not in in_blocks
        and not n.startswith(("visual.ln_post", "visual.proj"))
    ]
    blocks = [
        [f"visual.transformer.resblocks.{i}.{n}" for n, _ in b.named_parameters()]
        for i, b in enumerate(resblocks)
    ]
    post = [n for n, _ in model.named_parameters() if n.startswith("visual.ln_post")]
    return [stem, *blocks, *([post] if post else [])]


def projection_parameters(model: torch.nn.Module, text: bool = True) -> list[str]:
    """Names of the projection parameters: the vision head (every vision parameter outside
    :func:`vision_blocks`) and, with ``text``, the text projection (``text.proj`` or ``text_projection``)."""
    in_blocks = {n for block in vision_blocks(model) for n in block}
    names = [n for n, _ in model.named_parameters() if n.startswith("visual.") and n not in in_blocks]
    if text:
        names += [
            n for n, _ in model.named_parameters() if n.startswith("text.proj") or n == "text_projection"
        ]
    return names


def set_trainable(model: torch.nn.Module, train_blocks: int, text_projection: bool = True) -> list[str]:
    """Freeze ``model`` except the last ``train_blocks`` vision blocks and the projections.

    ``train_blocks = 0`` trains only the projections; a value above the number of blocks trains the whole
    vision tower. The text tower (other than its projection) and ``logit_scale`` stay frozen. Returns the
    names of the trainable parameters, in ``named_parameters`` order.
    """
    if train_blocks < 0:
        raise ValueError(f"train_blocks must be >= 0, got {train_blocks}")
    blocks = vision_blocks(model)
    chosen = {n for block in blocks[len(blocks) - min(train_blocks, len(blocks)) :] for n in block}
    chosen |= set(projection_parameters(model, text=text_projection))
    names = []
    for name, p in model.named_parameters():
        p.requires_grad_(name in chosen)
        if name in chosen:
            names.append(name)
    return names


# ----------------------------------------------------------------------------------------------
# checkpoints


def load_encoder(
    name_or_checkpoint: str | os.PathLike, device: str | torch.device = "cpu", image_size: int | None = None
) -> tuple[torch.nn.Module, Any, dict]:
    """A checkpoint directory (see :func:`load_hmcl_checkpoint`) or an encoder name with its pretrained
    weights (zero-shot): ``(model, eval_transform, config)`` with the model in eval mode."""
    path = Path(name_or_checkpoint)
    if path.is_dir():
        return load_hmcl_checkpoint(path, device=device)
    from patent_demo.encoders import create_encoder

    name = os.fspath(name_or_checkpoint)
    model, _, eval_tf = create_encoder(name, device=device, image_size=image_size)
    config = {"kind": "zero-shot", "model": {"name": name, "image_size": eval_tf.size}, "base": "default"}
    return model, eval_tf, config


def load_hmcl_checkpoint(
    directory: str | os.PathLike, device: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, Any, dict]:
    """Rebuild a fine-tuned drawing encoder: ``(model, eval_transform, config)``.

    The encoder named in ``config["model"]["name"]`` is created with its base weights
    (``config["base"]``, normally the package or hub default) at the training image size, then the
    checkpoint's parameters (only those training changed) are applied with
    ``apply_weights(..., partial=True)``. Unknown or mis-shaped parameters raise ``CheckpointError``.
    """
    from patent_demo.encoders import create_encoder

    directory = Path(directory)
    config = load_config(directory)
    if config.get("kind") != KIND:
        raise CheckpointError(
            f"{directory} is a {config.get('kind')!r} checkpoint, not a drawing encoder ({KIND!r})"
        )
    model_cfg = config.get("model") or {}
    if "name" not in model_cfg:
        raise CheckpointError(f"{directory}/config.json names no encoder (model.name)")
    weights = load_weights(directory)
    model, _, eval_tf = create_encoder(
        model_cfg["name"], pretrained=config.get("base", "default"), image_size=model_cfg.get("image_size")
    )
    apply_weights(model, weights, partial=bool(config.get("delta", True)))
    model.to(device).eval()
    return model, eval_tf, config


# ----------------------------------------------------------------------------------------------
# embedding


def embed_corpus_figures(
    model: torch.nn.Module,
    transform: Any,
    corpus: Corpus,
    figures: Sequence[Figure | tuple[Patent, Figure]],
    batch_size: int = 64,
    progress: bool = False,
) -> np.ndarray:
    """Embeddings ``[N, D]`` (float32, L2-normalised) of ``figures`` of ``corpus``, in order.

    Each figure is read with ``corpus.open_image`` (``load_drawing``: cropped to ink, padded square),
    transformed with ``transform`` (``[3, S, S]``) and encoded in batches without gradients; on CUDA
    under bf16 autocast.
    """
    from patent_demo.dense import embed_figures
    from patent_demo.encoders import encode_images

    figs = [f[1] if isinstance(f, tuple) else f for f in figures]
    device = next(model.parameters()).device

    def encode(images: list) -> torch.Tensor:
        x = torch.stack([transform(im) for im in images])
        with (
            torch.no_grad(),
            torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"),
        ):
            z = encode_images(model, x)
        return torch.nn.functional.normalize(z.float(), dim=1)

    images = (corpus.open_image(f) for f in figs)
    return embed_figures(encode, images, batch_size=batch_size, progress=progress, total=len(figs))


# ----------------------------------------------------------------------------------------------
# evaluation


def drawing_protocol(
    corpus: Corpus, split: str | None = "test", protocol: str = "queries"
) -> tuple[list[tuple[Patent, Figure]], list[tuple[Patent, Figure]], np.ndarray]:
    """``(queries, gallery, self_index)`` of a split (``None``: every patent of the corpus).

    ``queries`` (the demo protocol): one query figure per patent (``extra["query_figure"]``, else its
    first), the gallery every other figure; ``self_index`` is all -1. ``all``: every figure is a query
    and the gallery is the same list; ``self_index[q] = q`` so a query never retrieves itself.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    patents = corpus.patents if split is None else corpus.split(split)
    if protocol == "all":
        items = [(p, f) for p in patents for f in p.figures]
        return items, items, np.arange(len(items), dtype=np.int64)
    queries, gallery = [], []
    for p in patents:
        q = int(p.extra.get("query_figure", 0))
        for i, f in enumerate(p.figures):
            (queries if i == q else gallery).append((p, f))
    return queries, gallery, np.full(len(queries), -1, dtype=np.int64)


def _labels(items: Sequence[tuple[Patent, Figure]]):
    from patent_demo.metrics import ItemLabels

    return ItemLabels(
        [p.id for p, _ in items], [p.locarno for p, _ in items], [p.locarno_main for p, _ in items]
    )


def _finite(x: float) -> float | None:
    return float(x) if isinstance(x, float | int) and math.isfinite(x) else None


def score_embeddings(
    queries: Sequence[tuple[Patent, Figure]],
    gallery: Sequence[tuple[Patent, Figure]],
    query_emb: np.ndarray,
    gallery_emb: np.ndarray,
    self_index: np.ndarray,
    ks: Sequence[int] = DEFAULT_KS,
    silhouette: bool = True,
) -> dict:
    """Metrics of given embeddings (``[Q, D]``, ``[G, D]``, L2-normalised; cosine scores).

    Returns ``{"metrics": {patent_map, patent_ndcg@k, subclass_*, main_*, hier_ndcg@k, num_queries},
    "per_class": {subclass: {...}}, "silhouette": float | None, "silhouette_per_class": {...},
    "num_gallery": G}``. The silhouette is over the distinct figures of queries and gallery, grouped by
    Locarno subclass (``None`` when fewer than two subclasses are present).
    """
    from patent_demo.metrics import drawing_metrics, silhouette_by_subclass

    scores = query_emb.astype(np.float64) @ gallery_emb.astype(np.float64).T
    ev = drawing_metrics(_labels(queries), _labels(gallery), scores=scores, self_index=self_index, ks=ks)
    out: dict[str, Any] = {
        "metrics": {k: (_finite(v) if k != "num_queries" else v) for k, v in ev.summary().items()},
        "per_class": {
            c: {k: (_finite(v) if k != "num_queries" else v) for k, v in row.items()}
            for c, row in ev.by_class([p.locarno for p, _ in queries]).items()
        },
        "num_gallery": len(gallery),
        "silhouette": None,
        "silhouette_per_class": {},
    }
    if silhouette:
        same = bool((self_index >= 0).all()) and len(queries) == len(gallery)
        emb = gallery_emb if same else np.concatenate([query_emb, gallery_emb])
        labels = [p.locarno for p, _ in (gallery if same else [*queries, *gallery])]
        try:
            mean, per_class = silhouette_by_subclass(emb, labels)
            out["silhouette"], out["silhouette_per_class"] = mean, per_class
        except ValueError:
            pass
    return out


def evaluate_drawings(
    model: torch.nn.Module,
    transform: Any,
    corpus: Corpus,
    split: str | None = "test",
    ks: Sequence[int] = DEFAULT_KS,
    protocol: str = "queries",
    batch_size: int = 64,
    silhouette: bool = True,
    progress: bool = False,
) -> dict:
    """Drawing retrieval of one split at patent, subclass and main-class level.

    Embeds the figures of the split once (:func:`embed_corpus_figures`), ranks the gallery for each query
    by cosine similarity and scores it with ``patent_demo.metrics.drawing_metrics`` (mAP over all
    relevant gallery items, nDCG@k per level, graded ``hier_ndcg@k``); see :func:`score_embeddings` for
    the keys. ``split`` and ``protocol`` are also recorded in the result.
    """
    queries, gallery, self_index = drawing_protocol(corpus, split, protocol)
    if not queries or not gallery:
        raise ValueError(
            f"split {split!r} of {corpus.name or corpus.root} has no queries or no gallery figures"
        )
    if protocol == "all":
        emb = embed_corpus_figures(model, transform, corpus, gallery, batch_size, progress)
        q_emb, g_emb = emb, emb
    else:
        emb = embed_corpus_figures(model, transform, corpus, [*queries, *gallery], batch_size, progress)
        q_emb, g_emb = emb[: len(queries)], emb[len(queries) :]
    out = score_embeddings(queries, gallery, q_emb, g_emb, self_index, ks, silhouette)
    return {"split": split, "protocol": protocol, "ks": list(ks), **out}
