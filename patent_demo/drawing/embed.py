"""Batched embedding of drawings: any encode function over a stream of images, with a progress bar; the
corpus figures through a fine-tuned (or zero-shot) open_clip encoder; and a large collection embedded in
shards (``embed_shards``) that survive a kill: a shard is written to a temporary name, then moved into
place, a shard already on disk is skipped, and with ``rank`` / ``world_size`` (``torchrun`` sets ``RANK``
and ``WORLD_SIZE``) each process takes the shards ``i`` with ``i % world_size == rank``.
``patent_demo.index.scale.merge_shards`` builds the index from them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from patent_demo.builds import Builds, progress_of
from patent_demo.data.corpus import Corpus, Figure, Patent
from patent_demo.index.scale import shard_path, shard_ranges


def _to_numpy(out: Any) -> np.ndarray:
    if hasattr(out, "detach"):  # a torch tensor; torch itself is not imported here
        out = out.detach().float().cpu().numpy()
    return np.asarray(out, dtype=np.float32)


def embed_figures(
    encode_fn: Callable[[list[Any]], Any],
    images: Iterable[Any],
    batch_size: int = 32,
    progress: bool | Builds = True,
    total: int | None = None,
    desc: str = "embedding figures",
) -> np.ndarray:
    """Encode ``images`` in batches of ``batch_size`` and stack the results: ``[N, D]`` float32.

    ``encode_fn`` maps a list of B inputs (PIL images, tensors, whatever the encoder takes) to
    ``[B, D]`` (numpy array or torch tensor). ``images`` may be any iterable, a generator included;
    ``total`` (or ``len(images)`` when it has one) sizes the progress bar: tqdm on the console, or a build
    of a ``patent_demo.builds.Builds`` (the page's status line and the console).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if total is None and hasattr(images, "__len__"):
        total = len(images)  # type: ignore[arg-type]
    bar = progress_of(progress, total, desc, "drawings")
    chunks: list[np.ndarray] = []
    dim: int | None = None

    def flush(batch: list[Any]) -> None:
        nonlocal dim
        out = _to_numpy(encode_fn(batch))
        if out.ndim != 2 or out.shape[0] != len(batch):
            raise ValueError(
                f"encode_fn must return [B, D] for a batch of B={len(batch)} inputs, got shape {out.shape}"
            )
        if dim is not None and out.shape[1] != dim:
            raise ValueError(f"encode_fn returned dimension {out.shape[1]} after returning {dim}")
        dim = out.shape[1]
        chunks.append(out)
        if bar is not None:
            bar.update(len(batch))

    batch: list[Any] = []
    try:
        for item in images:
            batch.append(item)
            if len(batch) == batch_size:
                flush(batch)
                batch = []
        if batch:
            flush(batch)
    finally:
        if bar is not None:
            bar.close()
    if not chunks:
        raise ValueError("embed_figures got no images to embed")
    return np.concatenate(chunks, axis=0)


# ----------------------------------------------------------------------------------------------
# validation helpers


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
    from patent_demo.drawing.encoders import encode_images

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


def dist_rank() -> tuple[int, int]:
    """``(rank, world_size)`` from ``torchrun``'s environment (``RANK``, ``WORLD_SIZE``), else ``(0, 1)``."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def embed_shards(
    encode: Callable[[list[Any]], Any],
    load: Callable[[Any], Any],
    items: Sequence[Any],
    directory: str | os.PathLike,
    shard_size: int = 10_000,
    rank: int | None = None,
    world_size: int | None = None,
    batch_size: int = 32,
    progress: bool = False,
) -> list[int]:
    """Embed ``items`` (``load(item)`` gives the image ``encode`` takes) into shards under ``directory``;
    returns the shard numbers this process wrote (shards already on disk are kept: a rerun resumes)."""
    if rank is None or world_size is None:
        rank, world_size = dist_rank()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    plan = {
        "figures": len(items),
        "shard_size": shard_size,
        "shards": len(shard_ranges(len(items), shard_size)),
    }
    _write_json(directory / "shards.json", plan)
    written = []
    for i, (a, b) in enumerate(shard_ranges(len(items), shard_size)):
        path = shard_path(directory, i)
        if i % world_size != rank or path.is_file():
            continue
        emb = embed_figures(
            encode,
            (load(x) for x in items[a:b]),
            batch_size=batch_size,
            progress=progress,
            total=b - a,
            desc=f"shard {i} (rows {a}-{b - 1})",
        )
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, emb.astype(np.float32))
        os.replace(tmp, path)
        written.append(i)
    return written


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
