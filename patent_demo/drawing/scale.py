"""Large collections: which index kind to build for N figures, and embeddings written in shards.

Shards (``embed_shards``) let a collection of a million figures be embedded in pieces that survive a
kill: figure rows ``[i * shard_size, (i + 1) * shard_size)`` go to ``shard-{i:05d}.npy`` (written to a
temporary name, then moved into place), a shard already on disk is skipped, and with ``rank`` /
``world_size`` (``torchrun`` sets ``RANK`` and ``WORLD_SIZE``) each process takes the shards ``i`` with
``i % world_size == rank``. ``merge_shards`` memory-maps the shards in order and builds one
``DenseIndex`` of the kind :func:`choose_kind` picks for their size.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Which kind the app builds for a corpus of N figures (measured by bench/bench_scale.py; see README).
FLAT_MAX = 200_000


IVFPQ_REFINE = 4  # re-score 4 k candidates exactly: recall@100 0.49 -> 0.83 at 100k for 0.2 ms more


def choose_kind(n: int) -> str:
    """``flat`` (exact) up to ``FLAT_MAX`` figures, where one query takes tens of milliseconds on one
    loaded core; ``ivfpq`` above: exact search of 1M figures takes about a second per query there, and
    HNSW takes hours to build at that size on such a machine (see README, Large collections)."""
    return "flat" if n <= FLAT_MAX else "ivfpq"


def index_settings(n: int) -> dict[str, Any]:
    """``DenseIndex.build`` keyword arguments for ``n`` figures: the kind and, for IVF-PQ, the exact
    re-scoring of its candidates."""
    kind = choose_kind(n)
    return {"kind": kind, **({"refine": IVFPQ_REFINE} if kind == "ivfpq" else {})}


def shard_ranges(n: int, shard_size: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` row ranges of ``n`` figures in shards of ``shard_size``."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, got {shard_size}")
    return [(a, min(n, a + shard_size)) for a in range(0, n, shard_size)]


def shard_path(directory: str | os.PathLike, i: int) -> Path:
    return Path(directory) / f"shard-{i:05d}.npy"


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
    from patent_demo.drawing.embed import embed_figures

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
        emb = embed_figures(encode, (load(x) for x in items[a:b]), batch_size=batch_size, progress=progress,
                            total=b - a, desc=f"shard {i} (rows {a}-{b - 1})")  # fmt: skip
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, emb.astype(np.float32))
        os.replace(tmp, path)
        written.append(i)
    return written


def merge_shards(directory: str | os.PathLike, ids: Sequence[str], patent_ids: Sequence[str],
                 kind: str | None = None, **build: Any):  # fmt: skip
    """One ``DenseIndex`` over every shard of ``directory`` in row order (``kind``: ``choose_kind(N)``)."""
    from patent_demo.drawing.index import DenseIndex

    directory = Path(directory)
    ranges = shard_ranges(len(ids), json.loads((directory / "shards.json").read_text())["shard_size"])
    missing = [i for i in range(len(ranges)) if not shard_path(directory, i).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} of {len(ranges)} shards are not embedded yet (e.g. {shard_path(directory, missing[0])}); "
            "run the embedding again: it resumes"
        )
    parts = [np.load(shard_path(directory, i), mmap_mode="r") for i in range(len(ranges))]
    sizes = [len(p) for p in parts]
    if sizes != [b - a for a, b in ranges]:
        raise ValueError(
            f"shard sizes {sizes} do not match the {len(ids)} figures; embed again into a new folder"
        )
    x = np.concatenate(parts, axis=0)
    settings = {"kind": kind} if kind else index_settings(len(ids))
    return DenseIndex.build(x, ids, patent_ids, **settings, **build)


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
