"""Large collections: which index kind to build for N figures, and embeddings written in shards.

Shards (``embed_shards``) let a collection of a million figures be embedded in pieces that survive a
kill: figure rows ``[i * shard_size, (i + 1) * shard_size)`` go to ``shard-{i:05d}.npy`` (written to a
temporary name, then moved into place), a shard already on disk is skipped, and with ``rank`` /
``world_size`` (``torchrun`` sets ``RANK`` and ``WORLD_SIZE``) each process takes the shards ``i`` with
``i % world_size == rank``. ``merge_shards`` memory-maps the shards in order and builds one
``DenseIndex`` of the kind :func:`choose_kind` picks for their size.
"""

from __future__ import annotations

# Which kind the app builds for a corpus of N figures (measured by bench/bench_scale.py; see README).
FLAT_MAX = 200_000


def choose_kind(n: int) -> str:
    """``flat`` (exact) up to ``FLAT_MAX`` figures, where one query still takes a few milliseconds on one
    core; ``ivfpq`` above, which builds in minutes and holds 1M figures in tens of MB."""
    return "flat" if n <= FLAT_MAX else "ivfpq"
