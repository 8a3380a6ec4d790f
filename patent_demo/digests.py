"""File digests: the SHA-256 of a file's bytes, and a per-process cache of it for weights files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks: how an uploaded drawing is matched to the
    corpus figure it came from (the app) and to test-split figures (the leak guard)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_DIGESTS: dict[tuple[str, int, int], str] = {}


def weights_digest(path: str | os.PathLike) -> str:
    """:func:`file_sha256` of a weights or config file, read once per process while its size and mtime stay:
    what cache keys of model outputs hash, so a copied checkpoint (a Space clone) keeps its cached indexes."""
    path = Path(path).resolve()
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_sha256(path)
    return _DIGESTS[key]
